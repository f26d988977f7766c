# RestartAfterCapture: a worker that reaches MemoryLimit gets RestartSignal
# (TERM) only after its heap dump completed. The leaker traps TERM and writes
# the time it arrived; that time is compared with the dump's finish time in
# the manifest.
require_relative "helper"
require "time"

class CaptureRestartTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("capture-restart", <<~KEYS)
      MemoryLimit "150M"
      RestartAfterCapture true
      CaptureInterval 30
    KEYS
  end

  def test_signal_only_after_the_dump
    w = @bench.start_leaker("leaky-restart")
    dir, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }
    @bench.site.wait_until("the worker got SIGTERM") { File.exist?(w.tick_file) }
    term_at = Float(File.read(w.tick_file))
    # Re-read: the manifest is rewritten once more after the signal.
    m = @bench.manifest(dir)

    assert_equal "memory limit", m["end"], JSON.pretty_generate(m)
    assert_equal "TERM", m["restart"]["signal"]
    refute_nil m["restart"]["sent"], JSON.pretty_generate(m)
    dumps = m["steps"].select { |s| s["step"] == "dump" && s["status"] == "ok" }
    refute_empty dumps, JSON.pretty_generate(m)
    last_dump_done = dumps.map { |s| Time.iso8601(s["finished"]).to_f }.max
    sent = Time.iso8601(m["restart"]["sent"]).to_f
    # Millisecond timestamps in the manifest are truncated, never rounded up.
    assert_operator sent, :>=, last_dump_done
    assert_operator term_at, :>=, last_dump_done
    # Nothing was still running when the signal went.
    m["steps"].each { |s| refute_equal "running", s["status"], s.inspect }
    dumps.each do |s|
      lines = Capture.heap_lines(File.join(dir, s["file"]))
      assert lines.any? { |o| o["type"] == "OBJECT" }
    end

    @bench.wait_note("WARNING", /leaky-restart .*reached MemoryLimit: sent SIGTERM/)
    @bench.site.wait_until("the worker exits") { !w.alive? }
    @bench.site.wait_until("csv shows restarts 1") { @bench.csv_value("restarts") == 1.0 }
  end
end
