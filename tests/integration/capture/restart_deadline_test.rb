# RestartAfterCapture with a dump that outlives its time limit (issue 12
# item 3): an inline dump cannot be stopped, so a signal at DumpTimeout
# would reach a worker still writing it. The plugin waits past DumpTimeout,
# up to RestartDeadline, for the worker's answer, signals only then, and the
# manifest's restart.waited says so. The ballast makes the inline dump take
# seconds against a DumpTimeout of 1 s (1.5 million objects took 0.79-0.83 s
# on an idle machine, and the test failed its own precondition 4 runs in 6;
# 4 million). The hook registers only once the ballast is built: under
# TSan's preloaded allocator 4 million objects hold some 950 MB (216 MB
# without), past MemoryLimit before they were all made, and the dump taken
# then held 1.4 million of them.
require_relative "helper"
require "time"

class CaptureRestartDeadlineTest < Minitest::Test
  BALLAST = 4_000_000

  def setup
    @bench = Capture::Bench.new("capture-deadline", <<~KEYS)
      MemoryLimit "300M"
      NearLimit 0
      RestartAfterCapture true
      RestartDeadline "10min"
      DumpMode inline
      DumpTimeout "1s"
      DumpTransfer file
      DumpCompression none
      Analyze false
    KEYS
  end

  def teardown
    @bench&.cleanup
  end

  def test_the_signal_waits_for_a_dump_past_its_timeout
    w = @bench.start_leaker("leaky-deadline", rate: 30 * Capture::MiB, max: 400 * Capture::MiB,
                                              ballast: BALLAST, hook_after_ballast: true)
    dir, = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }
    @bench.site.wait_until("the worker got SIGTERM") { File.exist?(w.tick_file) }
    term_at = Float(File.read(w.tick_file))
    m = @bench.manifest(dir)

    assert_equal "memory limit", m["end"], JSON.pretty_generate(m)
    assert_equal ["dump"], m["steps"].map { |s| s["step"] }
    dump = m["steps"][0]
    assert_equal "ok", dump["status"], JSON.pretty_generate(m)
    refute_nil m["restart"]["sent"], "#{JSON.pretty_generate(m)}\n#{@bench.site.plugin_log}"
    started = Time.iso8601(dump["started"]).to_f
    done = Time.iso8601(dump["finished"]).to_f
    sent = Time.iso8601(m["restart"]["sent"]).to_f
    # The dump really outlived its timeout (else this test shows nothing).
    assert_operator done - started, :>, 1.0, JSON.pretty_generate(m)
    assert_operator sent, :>=, done
    assert_operator term_at, :>=, done
    assert_match(/\Athe dump was answered [0-9.]+ s after it was sent, past its timeout \(1 s\); RestartDeadline 600 s\z/,
                 m["restart"]["waited"].to_s)
    # The dump is whole: every line parses, and the ballast is in it.
    lines = Capture.heap_lines(File.join(dir, dump["file"]))
    assert_operator lines.count { |o| o["type"] == "OBJECT" }, :>=, BALLAST
  end
end
