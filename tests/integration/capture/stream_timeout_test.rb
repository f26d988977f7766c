# A streamed heap dump that outlives its time limit (StepTimeout shorter
# than the dump, DumpMode inline): the step fails as a timeout with a
# FAILURE notification, nothing is left under a final name and no temporary
# file; and the worker is not left stuck with a writer waiting for credit
# that will never come: it answers the next request.
require_relative "stream_helper"

class CaptureStreamTimeoutTest < Capture::Test
  def setup
    @bench = StreamCapture.bench("stream-timeout", <<~KEYS)
      DumpMode "inline"
      StepTimeout "1s"
      DumpSpaceFactor 100
    KEYS
  end

  def test_timed_out_stream_leaves_nothing_and_the_worker_answers_again
    site = @bench.site
    # Twice the usual ballast: a 750 MB dump outlives 1 s (plus the plugin's
    # grace of 1 s) on any machine. DumpSpaceFactor 100: the stream's budget
    # (RSS x factor x 2) must not stop it first, since a cancelled stream is
    # answered within seconds (security_manual_budget): at the default 3 the
    # budget (130 MB) ended it as "over its budget" before the timeout.
    w = StreamCapture.start_worker(@bench, "streamslow", ballast: 2 * StreamCapture::BALLAST)
    id = @bench.connection_id(w)
    dir, = StreamCapture.start_and_wait_streaming(@bench, w)

    _, m = @bench.wait_manifest(w, "the plan ended") { |x| x["end"] }
    assert_equal false, m["complete"], JSON.pretty_generate(m)
    step = m["steps"].first
    assert_equal %w[dump error], [step["step"], step["status"]], JSON.pretty_generate(m)
    assert_match(/timeout/, step["error"])
    @bench.wait_note("FAILURE", /capture of worker streamslow .*: dump \(heap-1\.json\.zst\) failed: timeout/)
    site.wait_until("the temporary file is removed") { StreamCapture.debris(@bench).empty? }
    assert_empty StreamCapture.heap_files(dir), Dir.children(dir).inspect

    # The worker finishes its dump (the plugin drops the rest) and serves
    # the next request; its connection stays.
    ping = site.ctl("--timeout", 300, "ping", "connection_id=#{id}")
    assert ping.ok?, ping.to_s
    assert_equal [id], site.workers_json.map { |x| x["connection_id"] }
    assert_empty StreamCapture.debris(@bench)
    assert_empty StreamCapture.heap_files(dir)
  end
end
