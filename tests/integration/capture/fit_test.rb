# A worker that leaks fast enough to reach MemoryLimit within a couple of
# minutes is caught by the detector's urgent rule (sustained-growth over a
# short window), and the plan's waits shrink so that the whole plan ends
# within half the projected time left: capture.json says what each wait was
# and why. ShortWindow and GrowthWindow are scaled down (60 s, 10 min) so the
# test runs in about two minutes at collectd's 1 s interval.
require_relative "helper"
require "time"

class CaptureFitTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("capture-fit", <<~KEYS)
      MemoryLimit "400M"
      NearLimit 0
      GrowthWindow "10min"
      ShortWindow "60s"
      CaptureInterval "60s"
    KEYS
  end

  def test_waits_fit_the_time_left
    w = @bench.start_leaker("leaky-fit", rate: 3 * Capture::MiB, max: 380 * Capture::MiB)
    _dir, m = @bench.wait_manifest(w, "the plan ended", timeout: 5 * E2E::WAIT) { |x| x["end"] }

    assert_equal true, m["complete"], JSON.pretty_generate(m)
    assert_match(/sustained-growth/, m["trigger"]["reason"])
    waits = m["steps"].select { |s| s["step"] == "wait" }
    assert_equal 2, waits.size
    waits.each do |s|
      assert_match(/\A\d+ s instead of 60 s: limit projected \d+ (s|min) after the trigger; steps kept within 50% of that\z/,
                   s["note"], s.inspect)
      took = Time.parse(s["finished"]) - Time.parse(s["started"])
      assert_operator took, :<, 59, s.inspect
      assert_operator took, :>=, 9.5, s.inspect
      puts format("# wait: %.1f s (%s)", took, s["note"])
    end
    # All of it well before the limit: the worker never got there.
    assert_operator Time.parse(m["finished"]) - Time.parse(m["started"]), :<, 120
  end
end
