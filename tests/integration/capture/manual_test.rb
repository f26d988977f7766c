# `memdiagctl capture connection_id=N` runs the plan now; `memdiagctl status`
# shows it in progress; a second request for the same worker is refused
# (one plan per worker); the manifest records an operator request.
require_relative "helper"

class CaptureManualTest < Capture::Test
  def setup
    # No CaptureSize or MemoryLimit: only the operator starts a capture.
    @bench = Capture::Bench.new("capture-manual", <<~KEYS)
      CaptureInterval 3
    KEYS
  end

  def test_operator_capture_status_and_refusal
    w = @bench.start_leaker("steady-manual", rate: 1024 * 1024, max: 20 * Capture::MiB)
    site = @bench.site
    r = @bench.capture(w, "--json")
    assert r.ok?, r.to_s
    reply = JSON.parse(r.out)
    dir = reply["directory"]
    assert_match(%r{/captures/steady-manual-#{w.pid}-\d{8}T\d{6}Z$}, dir)

    again = @bench.capture(w)
    refute again.ok?, again.to_s
    assert_match(/already runs/, again.out + again.err)

    status = JSON.parse(site.ctl("status", "--json").tap { |s| assert s.ok?, s.to_s }.out)
    cap = status["captures"].find { |c| c["worker"] == "steady-manual" }
    refute_nil cap, status.inspect
    assert_equal dir, cap["directory"]
    assert_equal "operator request", cap["reason"]
    assert_operator status["captures_started"], :>=, 1
    entry = status["workers"].find { |x| x["pid"] == w.pid }
    assert_match(/^running: /, entry["plan_state"]) if entry

    _, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }
    assert_equal true, m["complete"], JSON.pretty_generate(m)
    assert_equal true, m["trigger"]["manual"]
    assert_equal "operator request", m["trigger"]["reason"]
    assert_equal dir, m["directory"]
    site.wait_until("status shows no capture in progress") do
      JSON.parse(site.ctl("status", "--json").out)["captures"].to_a.empty?
    end

    unknown = site.ctl("capture", "connection_id=999")
    refute unknown.ok?
  end

  # With DumpTransfer file the worker must write the files itself; one whose
  # dump directory does not hold CaptureDirectory is refused before anything
  # is made. (With the default, auto, the dumps are streamed instead.)
  def test_worker_that_may_not_write_there_is_refused_up_front
    @bench.cleanup
    @bench = Capture::Bench.new("capture-manual-file", <<~KEYS)
      CaptureInterval 3
      DumpTransfer file
    KEYS
    w = assert_capture_refused("fenced-manual", /outside the worker's dump directory/,
                               /fenced-manual .*skipped.*outside the worker's dump directory/,
                               dump_dir: File.join(@bench.site.dir, "elsewhere"))
    assert_empty @bench.folders(w)
  end
end
