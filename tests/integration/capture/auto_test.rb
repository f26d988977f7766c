# A leaking worker is captured by itself: the detector's CaptureSize fires,
# the default plan runs (three heap dumps, GC profile, scheduler and thread
# dumps), the manifest says complete, collectd logs a WARNING when the capture
# starts and an OKAY when it completes, and the counters reach csv.
require_relative "helper"

class CaptureAutoTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("capture-auto", <<~KEYS)
      CaptureSize "100M"
      CaptureInterval 1
    KEYS
  end

  def test_capture_starts_by_itself_and_completes
    w = @bench.start_leaker("leaky-auto")
    dir, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }

    assert_equal true, m["complete"], JSON.pretty_generate(m)
    assert_equal "finished", m["end"]
    assert_equal "leaky-auto", m["worker"]["name"]
    assert_equal w.pid, m["worker"]["pid"]
    assert_match(/capture-size/, m["trigger"]["reason"])
    refute_empty m["trigger"]["samples"]
    assert_operator m["trigger"]["rss"], :>=, 100 * Capture::MiB
    # a heap profile (the allocation sampler's) right after each dump
    assert_equal %w[dump heap_profile gc_start wait scheduler threads gc_stop dump heap_profile wait
                    dump heap_profile],
                 m["steps"].map { |s| s["step"] }
    m["steps"].each do |s|
      assert_equal "ok", s["status"], s.inspect
      refute_nil s["started"]
      refute_nil s["finished"]
    end
    assert_equal 0o700, File.stat(dir).mode & 0o7777

    # Three heap dumps, written by the worker and compressed by the plugin
    # (DumpCompression zstd, the default), that parse line by line and hold
    # the leak's objects; the manifest names the stored files.
    plain = %w[heap-1.json heap-2.json heap-3.json].map do |f|
      path = File.join(dir, "#{f}.zst")
      assert File.file?(path), "#{f}.zst missing in #{dir}: #{Dir.children(dir)}"
      refute File.exist?(File.join(dir, f)), "#{f} stays beside its compressed copy"
      step = m["steps"].find { |s| s["file"] == "#{f}.zst" }
      refute_nil step, m["steps"].inspect
      text = Capture.dump_text(path)
      assert_equal text.bytesize, step["bytes"]
      assert_operator File.size(path) * 4, :<, text.bytesize
      lines = Capture.heap_lines(path)
      assert lines.any? { |o| o["type"] == "OBJECT" }, "#{f} has no objects"
      File.join(dir, "plain-#{f}").tap { |p| File.write(p, text) }
    end
    %w[gc.txt scheduler.txt threads.txt].each do |f|
      assert File.size?(File.join(dir, f)), "#{f} missing or empty"
    end
    # heapy's three-snapshot diff sees the leak retained across the dumps.
    heapy = ENV.fetch("PATH", "").split(":").map { |d| File.join(d, "heapy") }.find { |f| File.executable?(f) }
    if heapy
      out, st = Open3.capture2e(heapy, "diff", *plain)
      assert st.success?, out
      assert_match(/Retained ARRAY/, out)
    end
    plain.each { |p| File.unlink(p) }
    # No temporary or partial file is left behind once the capture, and the
    # analysis that follows it (OKAY waits for it), are over.
    @bench.wait_note("OKAY", /capture of worker leaky-auto .*capture complete/)
    assert_empty Dir.children(dir).grep(/partial|\.tmp/), Dir.children(dir).inspect

    started = @bench.wait_note("WARNING", /capture of worker leaky-auto .*capture started: capture-size/)
    assert_match(/RSS [\d.]+ MiB/, started.message)
    done = @bench.wait_note("OKAY", /capture of worker leaky-auto .*capture complete/)
    # The answer first, then the folder: whole when it fits, else by its
    # name, else left out when the answer fills collectd's 256 bytes.
    assert_match(/capture complete; (leak suspect|no retained|growth outside)/, done.message)
    if (named = done.message[/; folder (\S+)\z/, 1])
      assert_includes [dir, File.basename(dir)], named, done.message
    else
      assert_operator done.message.bytesize + "; folder #{File.basename(dir)}".bytesize, :>=, 256, done.message
    end

    @bench.site.wait_until("csv shows captures_completed 1") do
      @bench.csv_value("captures_completed") == 1.0
    end
    assert_equal 1.0, @bench.csv_value("captures_started")
    assert_equal 0.0, @bench.csv_value("captures_failed")

    # The worker was never signalled: RestartAfterCapture is off.
    assert w.alive?
    refute File.exist?(w.tick_file)
  end
end
