# A worker SIGKILLed while its heap dump streams into the plugin: the
# plugin removes what it had received, so the capture folder holds no dump
# under its final name and no temporary file; the capture ends "worker
# gone" with a FAILURE notification, and the forked dump child, left with
# no one reading its pipe, ends too.
require_relative "stream_helper"

class CaptureStreamKilledTest < Capture::Test
  def setup
    @bench = StreamCapture.bench("stream-killed", "DumpMode \"fork\"\n")
  end

  def test_killed_worker_leaves_no_dump_and_no_debris
    w = StreamCapture.start_worker(@bench, "streamkill")
    dir, partial = StreamCapture.start_and_wait_streaming(@bench, w)
    Process.kill("KILL", w.pid)

    _, m = @bench.wait_manifest(w, "the plan ended") { |x| x["end"] }
    assert_equal "worker gone", m["end"], JSON.pretty_generate(m)
    assert_equal false, m["complete"]
    step = m["steps"].first
    assert_equal %w[dump error], [step["step"], step["status"]], JSON.pretty_generate(m)
    assert_equal "worker gone before it replied", step["error"]
    @bench.wait_note("FAILURE", /capture of worker streamkill .*capture incomplete \(worker gone\)/)

    # The temporary file goes when the writer thread has the abort.
    @bench.site.wait_until("#{partial} is removed") { !File.exist?(partial) }
    assert_empty StreamCapture.heap_files(dir), Dir.children(dir).inspect
    assert_empty StreamCapture.debris(@bench)
    assert_equal %w[capture.json], Dir.children(dir)

    # The dump child wrote into a pipe nobody reads any more: it ends.
    @bench.site.wait_until("the dump child of #{w.name} ends") do
      StreamCapture.processes_naming(w.tick_file).empty?
    end
    assert @bench.site.collectd_alive?
    assert @bench.site.ctl("workers").ok?
  end
end
