# While a large heap dump (hundreds of MB) streams into the plugin, the
# plugin keeps serving everyone else: a second worker's heartbeats are all
# answered (the test prints the slowest answer), neither worker is dropped,
# and `memdiagctl workers` answers during the stream. The dump itself lands
# complete.
require_relative "stream_helper"

class CaptureStreamBusyTest < Capture::Test
  HEARTBEAT_MS = 1000
  # The plugin forgets a worker silent for three intervals, and a worker
  # that hears nothing back for three reconnects.
  DROPPED_AFTER_MS = 3 * HEARTBEAT_MS

  def setup
    @bench = StreamCapture.bench("stream-busy", <<~KEYS)
      DumpMode "fork"
      HeartbeatInterval "#{HEARTBEAT_MS}ms"
    KEYS
  end

  # The second worker: md-test-worker, printing each heartbeat's answer.
  def start_beater(site)
    @beater = site.test_worker("beater", "--show-heartbeats")
    site.wait_until("the second worker has two heartbeats answered") { answers.size >= 2 }
    @beater.conn_id
  end

  def beater_output = @beater.output

  # [sequence, heartbeats sent when the answer came, answer delay in ms]
  def answers
    beater_output.scan(/^heartbeat back sequence=(\d+) sent=(\d+) rtt_us=(\d+)$/)
                 .map { |s, n, us| [Integer(s), Integer(n), Integer(us) / 1000.0] }
  end

  def test_heartbeats_and_operators_are_served_during_a_large_stream
    site = @bench.site
    w = StreamCapture.start_worker(@bench, "streambig")
    worker_id = @bench.connection_id(w)
    beater_id = start_beater(site)
    before = answers.size

    dir, partial = StreamCapture.start_and_wait_streaming(@bench, w)
    # Operators are answered while the bytes flow: memdiagctl runs until the
    # stream is over, and answers that came back while it still ran count.
    during = 0
    while File.exist?(partial)
      r = site.ctl("workers", "--json")
      assert r.ok?, r.to_s
      ids = JSON.parse(r.out).map { |x| x["connection_id"] }
      assert_equal [worker_id, beater_id].sort, ids.sort
      during += 1 if File.exist?(partial)
      sleep 0.1
    end
    assert_operator during, :>=, 1, "memdiagctl workers never answered while the dump streamed"

    _, m = @bench.wait_manifest(w, "the plan ended") { |x| x["end"] }
    assert_equal true, m["complete"], JSON.pretty_generate(m)
    step = m["steps"].first
    assert_equal "heap-1.json.zst", step["file"]
    heap = File.join(dir, "heap-1.json.zst")
    raw = 0
    IO.popen(["zstd", "-dc", heap], "rb") { |io| raw += io.read(1 << 20).bytesize until io.eof? }
    assert $?.success?, "zstd -dc #{heap} failed"
    assert_equal raw, step["bytes"]
    assert_operator raw, :>, 100 * Capture::MiB, "the dump is not large (#{raw} bytes)"
    assert_empty StreamCapture.debris(@bench)

    # Nobody was dropped: both workers kept their connections.
    ids = site.workers_json.map { |x| x["connection_id"] }
    assert_equal [worker_id, beater_id].sort, ids.sort
    assert_equal 1, beater_output.scan(/^welcome /).size, beater_output
    refute_match(/closed by the plugin/, beater_output)
    assert_match(/connected .* as connection #{worker_id}$/, w.output)
    refute_match(/reconnect|disconnected/, w.output)

    # Every heartbeat sent was answered, in order, well inside the time
    # after which the plugin or the worker gives up on the other.
    site.wait_until("the heartbeat after the stream is answered") { answers.size > before + 1 }
    seen = answers
    assert_equal (1..seen.size).to_a, seen.map(&:first), beater_output
    slowest = seen.map(&:last).max
    puts format("\nlargest heartbeat answer delay while %.0f MB streamed (%.1f s, %d answers): %.1f ms; " \
                "memdiagctl workers answered %d times during the stream",
                raw / 1e6, step["duration_ms"] / 1000.0, seen.size - before, slowest, during)
    assert_operator slowest, :<, DROPPED_AFTER_MS, beater_output
  end
end
