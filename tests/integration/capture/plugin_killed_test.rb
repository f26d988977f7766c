# collectd SIGKILLed in the middle of a capture, after the plan started the
# GC profiler and allocation tracing in the worker, then started again: the
# worker stops what the dead plugin's connection started, so the next
# capture runs every step (before, gc_start and trace_start were refused:
# "garbage profiling is already running: memdiag started it at ...").
require_relative "helper"

class CapturePluginKilledTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("capture-pkilled", keys(30))
  end

  def keys(interval)
    <<~KEYS
      CaptureInterval #{interval}
      TraceAllocations true
      DumpShapes false
    KEYS
  end

  def test_next_capture_completes_after_a_killed_plugin
    site = @bench.site
    w = @bench.start_leaker("leaky-pkilled", rate: 1024 * 1024, max: 20 * Capture::MiB)
    first_id = @bench.connection_id(w)
    assert site.ctl("capture", "connection_id=#{first_id}").ok?
    old_dir, = @bench.wait_manifest(w, "gc_start done and the plan waits") do |m|
      m["steps"].find { |s| s["step"] == "gc_start" }&.fetch("status") == "ok" &&
        m["steps"].find { |s| s["step"] == "wait" }&.fetch("status") == "running"
    end

    Process.kill("KILL", site.collectd_pid)
    site.wait_until("collectd is gone") { !site.collectd_alive? }
    site.start_collectd("CaptureDirectory \"#{@bench.captures}\"\n#{keys(1)}")
    second_id = @bench.connection_id(w) # IDs count from 1 again in the new plugin

    assert site.ctl("capture", "connection_id=#{second_id}").ok?
    dir, m = @bench.wait_manifest(w, "the second capture ended", timeout: 3 * E2E::WAIT) do |x|
      x["end"] && x["trigger"]["manual"]
    end
    refute_equal old_dir, dir
    assert_equal true, m["complete"], JSON.pretty_generate(m)
    assert_equal %w[ok] * m["steps"].size, m["steps"].map { |s| s["status"] }, JSON.pretty_generate(m)
    assert_match(/connection #{first_id} ended: stopped the GC profiler/, w.output)
    assert_match(/connection #{first_id} ended: stopped allocation tracing/, w.output)
    assert w.alive?
  end
end
