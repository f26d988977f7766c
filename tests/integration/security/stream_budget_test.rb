# Issue 24, finding 1: a worker that streams a "dump" without end, as fast
# as credit allows and ignoring the plugin's cancel, used to fill the
# capture file system to ENOSPC whatever MaxUse and KeepFree said. Now the
# stream has a budget (twice the worker's RSS x DumpSpaceFactor, and the
# room under KeepFree and MaxUse that the space check found): past it the
# stream is cancelled, its file removed, and the step fails naming the
# budget. The capture file system never holds more than MaxUse of it, the
# operator is answered, and collectd stops on SIGTERM.
require_relative "helper"

class SecurityStreamBudgetTest < Capture::Test
  TMPFS = 300 * Security::MiB
  MAX_USE = 50 * Security::MiB

  include Security::Tmpfs

  def setup
    tmpfs_bench("sec-stream-budget", TMPFS, Security.keys + <<~KEYS)
      Plan "dump"
      DumpTransfer "stream"
      DumpCompression none
      KeepFree "100M"
      MaxUse "50M"
      StepTimeout "20s"
    KEYS
  end

  def test_endless_stream_is_cut_at_its_budget
    w = Security.attacker(@bench, "stream")
    r = @bench.capture(w)
    assert r.ok?, r.to_s
    most = 0
    dir, m = @bench.wait_manifest(w, "the dump step ended", timeout: 3 * E2E::WAIT) do |x|
      most = [most, Security.fs_used(@bench.captures)].max
      x["end"]
    end
    most = [most, Security.fs_used(@bench.captures)].max
    puts "capture file system: at most #{most} bytes used during the stream (MaxUse #{MAX_USE}, " \
         "tmpfs #{TMPFS})"
    step = m["steps"].first
    assert_equal "error", step["status"], JSON.pretty_generate(m)
    assert_match(/over its budget/, step["error"])
    assert_match(/the plugin stopped the stream after \d+ bytes/, step["error"])
    assert_operator most, :<, MAX_USE, "the stream took more than MaxUse of the disk"
    assert_equal %w[capture.json], Dir.children(dir)
    assert_match(/cancel ignored after/, w.output)
    # the operator is answered, and collectd stops
    assert @bench.site.ctl("workers").ok?
    took = Security.stop_seconds(@bench.site)
    refute_nil took, "collectd still ran 60 s after SIGTERM"
    puts format("collectd exited %.1f s after SIGTERM", took)
    assert_operator took, :<, 15
  end
end
