# RestartAfterCapture for a worker that reaches MemoryLimit before any
# capture: memdiag takes one heap dump at once and signals the worker only
# when that dump has replied. The worker carries a million small objects so
# the dump takes a while and its memory keeps climbing during it (fork
# dump: the worker runs on); the signal still waits.
require_relative "helper"
require "time"

class CaptureRestartInFlightTest < Capture::Test
  def setup
    # No CaptureSize and no NearLimit: nothing captures before the limit.
    @bench = Capture::Bench.new("capture-inflight", <<~KEYS)
      MemoryLimit "200M"
      NearLimit 0
      RestartAfterCapture true
      DumpMode fork
    KEYS
  end

  def test_one_dump_then_the_signal
    w = @bench.start_leaker("leaky-inflight", rate: 30 * Capture::MiB, max: 400 * Capture::MiB,
                                              ballast: 1_000_000)
    dir, = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }
    @bench.site.wait_until("the worker got SIGTERM") { File.exist?(w.tick_file) }
    term_at = Float(File.read(w.tick_file))
    m = @bench.manifest(dir)

    assert_equal "memory limit", m["end"], JSON.pretty_generate(m)
    assert_equal "memory limit reached before any capture", m["trigger"]["reason"]
    assert_equal true, m["complete"]
    assert_equal ["dump"], m["steps"].map { |s| s["step"] }
    dump = m["steps"][0]
    assert_equal "ok", dump["status"]
    limit = Time.iso8601(m["restart"]["limit_reached"]).to_f
    done = Time.iso8601(dump["finished"]).to_f
    sent = Time.iso8601(m["restart"]["sent"]).to_f
    assert_operator done, :>=, limit
    assert_operator sent, :>=, done
    assert_operator term_at, :>=, done
    # The dump is whole: every line parses, and the ballast is in it.
    lines = Capture.heap_lines(File.join(dir, dump["file"]))
    assert_operator lines.count { |o| o["type"] == "OBJECT" }, :>=, 1_000_000
    @bench.wait_note("WARNING", /leaky-inflight .*reached MemoryLimit: sent SIGTERM/)
  end
end
