# collectd stopping in the middle of a plan: the manifest is closed with
# "end": "plugin shutdown" and "complete": false, the steps that did not run
# say so, and the worker is left alone.
require_relative "helper"

class CaptureShutdownTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("capture-shutdown", <<~KEYS)
      CaptureSize "80M"
      CaptureInterval 60
    KEYS
  end

  def test_manifest_closed_at_shutdown
    w = @bench.start_leaker("leaky-shutdown")
    dir, = @bench.wait_manifest(w, "the plan waits", timeout: 3 * E2E::WAIT) do |x|
      x["steps"][3]["status"] == "running"
    end
    @bench.site.stop_collectd
    m = @bench.manifest(dir)

    assert_equal "plugin shutdown", m["end"], JSON.pretty_generate(m)
    assert_equal false, m["complete"]
    assert_equal %w[ok ok ok], m["steps"].first(3).map { |s| s["status"] }
    m["steps"].drop(3).each do |s|
      assert_equal "not_run", s["status"]
      assert_equal "plugin shutdown", s["error"]
    end
    assert w.alive?
    refute File.exist?(w.tick_file), "the worker was signalled"
  end
end
