# A worker killed in the middle of its plan ends the plan cleanly: the
# manifest marks what completed and what never ran, says "complete": false,
# and no later dump appears.
require_relative "helper"

class CaptureKilledTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("capture-killed", <<~KEYS)
      CaptureSize "80M"
      CaptureInterval 60
    KEYS
  end

  def test_killed_worker_leaves_an_honest_manifest
    w = @bench.start_leaker("leaky-killed")
    dir, = @bench.wait_manifest(w, "the first dump is done and the plan waits",
                                timeout: 3 * E2E::WAIT) do |x|
      x["steps"][0]["status"] == "ok" && x["steps"][3]["step"] == "wait" &&
        x["steps"][3]["status"] == "running"
    end
    Process.kill("KILL", w.pid)
    _, m = @bench.wait_manifest(w, "the plan ended") { |x| x["end"] }

    assert_equal "worker gone", m["end"], JSON.pretty_generate(m)
    assert_equal false, m["complete"]
    # dump, its heap profile, gc_start; then the wait the kill cut short
    assert_equal %w[ok ok ok] + %w[not_run] * 9, m["steps"].map { |s| s["status"] }
    m["steps"].drop(3).each { |s| assert_equal "worker gone", s["error"] }
    assert Capture.heap_lines(File.join(dir, "heap-1.json")).any?
    assert_empty Dir.glob(File.join(dir, "heap-[23].json*"))
    assert_empty Dir.children(dir).grep(/partial|\.tmp/), Dir.children(dir).inspect
    @bench.wait_note("FAILURE", /leaky-killed .*capture incomplete \(worker gone\)/)
  end
end
