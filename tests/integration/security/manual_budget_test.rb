# Issue 24: a manual dump the plugin stores (`memdiagctl memory_dump` without
# a path) had no budget: a worker that streams without end filled the
# capture file system until ENOSPC. Now it has a capture's budget: twice
# the worker's RSS x DumpSpaceFactor from the worker, the room beyond
# KeepFree, KeepFree checked again as the file grows; past it the stream is
# cancelled, the file removed and the operator told so. With less than
# KeepFree and the dump's estimate free, it is refused before it starts.
require_relative "helper"

class SecurityManualBudgetTest < Capture::Test
  TMPFS = 300 * Security::MiB

  include Security::Tmpfs

  def setup
    tmpfs_bench("sec-manual-budget", TMPFS, Security.keys + <<~KEYS)
      DumpCompression none
      DumpSpaceFactor 1
      KeepFree "#{name.include?("no_room") ? "1G" : "100M"}"
    KEYS
  end

  def test_endless_manual_dump_is_cut_at_its_budget
    site = @bench.site
    w = Security.attacker(@bench, "stream", "--allocate-mb", "16")
    id = @bench.connection_id(w)
    rss = nil
    site.wait_until("the attacker's RSS is sampled") do
      rss = site.workers_json.find { |x| x["connection_id"] == id }&.dig("rss").to_i
      rss.positive?
    end
    base = Security.fs_used(@bench.captures)
    most = 0
    r = nil
    t = Thread.new { r = site.ctl("memory_dump", "connection_id=#{id}", "--timeout", "60") }
    most = [most, Security.fs_used(@bench.captures) - base].max while t.join(0.05).nil?
    most = [most, Security.fs_used(@bench.captures) - base].max
    budget = 2 * rss
    puts "manual dump of a worker streaming without end (RSS #{rss}): at most #{most} bytes on the " \
         "capture file system, budget #{budget} (2 x RSS x DumpSpaceFactor 1), tmpfs #{TMPFS}, KeepFree 100M"
    refute r.ok?, r.to_s
    assert_match(/heap\.json is over its budget/, r.out + r.err)
    assert_operator most, :<=, budget + 8 * Security::MiB, "the stream took more than its budget"
    leftovers = Dir.glob(File.join(@bench.captures, "manual", "*", "*"))
    assert_empty leftovers, "a file of the cut stream was left behind"
    assert site.ctl("workers").ok?
  end
  def test_no_room_is_refused
    w = Security.attacker(@bench, "stream", "--allocate-mb", "16")
    r = @bench.site.ctl("memory_dump", "connection_id=#{@bench.connection_id(w)}", "--timeout", "60")
    refute r.ok?, r.to_s
    assert_match(/not enough free space in \S+ for a manual dump: it needs [\d.]+ MiB \(RSS [\d.]+ MiB x DumpSpaceFactor 1.0\) \+ KeepFree 1024.0 MiB, [\d.]+ MiB available/, r.out + r.err)
    refute_match(/request op=/, w.output, "the worker was asked for a dump")
  end
end
