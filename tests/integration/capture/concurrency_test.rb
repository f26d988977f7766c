# CaptureConcurrency 1: two workers leak at once, the second capture waits
# in the queue and starts only after the first ended. CaptureCooldown: a
# restarted worker with the same name is not captured again; the refusal is
# a FAILURE notification.
require_relative "helper"
require "time"

class CaptureConcurrencyTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("capture-concurrency", <<~KEYS)
      CaptureSize "80M"
      CaptureInterval 2
      CaptureConcurrency 1
      CaptureCooldown "1h"
    KEYS
  end

  def test_one_capture_at_a_time_and_cooldown_per_name
    a = @bench.start_leaker("leaky-a")
    b = @bench.start_leaker("leaky-b")
    _, ma = @bench.wait_manifest(a, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }
    _, mb = @bench.wait_manifest(b, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }
    assert_equal true, ma["complete"], JSON.pretty_generate(ma)
    assert_equal true, mb["complete"], JSON.pretty_generate(mb)

    first, second = [ma, mb].sort_by { |m| m["started"] }
    assert_operator Time.iso8601(second["started"]), :>=, Time.iso8601(first["finished"])
    assert_match(/capture of worker leaky-[ab] \(pid \d+\) queued: CaptureConcurrency 1 reached/,
                 @bench.site.plugin_log)

    # The same name again, as a supervisor would restart it: cooldown.
    a.stop
    a2 = @bench.start_leaker("leaky-a")
    @bench.wait_note("FAILURE", /leaky-a \(pid #{a2.pid}\) skipped \(capture-size\): CaptureCooldown/)
    assert_empty @bench.folders(a2)
    entry = @bench.site.workers_json.find { |x| x["pid"] == a2.pid }
    assert_equal "cooldown", entry["plan_state"]
    status = @bench.site.ctl("status", "--json")
    assert status.ok?, status.to_s
    assert_operator JSON.parse(status.out)["captures_skipped"], :>=, 1, status.out
    assert_match(/[1-9]\d* skipped/, @bench.site.ctl("status").out)
  end
end
