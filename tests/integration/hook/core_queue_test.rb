# frozen_string_literal: true

# The request queue of the C core, seen from the plugin's side: a worker
# whose runtime thread is busy takes 16 requests and refuses the rest at
# once; requests that were waiting when the connection closed are dropped,
# never answered on the next connection.
require_relative "helper"

class HookCoreQueueTest < Minitest::Test
  include HookTest::Fixture

  CORE_WORKER = ENV.fetch("MEMDIAG_CORE_WORKER")

  def start_core(server)
    release, @release = IO.pipe
    cmd = [CORE_WORKER, @socket, *%w[worker.pem worker.key ca.pem].map { |f| File.join(@certs, f) }, "0", "hold"]
    worker = HookTest::Worker.new(@dir, name: "core", command: cmd, stdin: release)
    release.close
    @workers << worker
    [worker, server.wait_for("hello") { true }["conn"]]
  end

  def teardown
    @release&.close
    super
  end

  def test_busy_worker_queues_16_and_refuses_the_rest_at_once
    server = start_server(heartbeat_ms: 50)
    _worker, conn = start_core(server)
    server.command("request #{conn} ping payload=first")
    first = server.wait_for("sent") { true }
    server.wait_for("heartbeat") { |e| e["busy_request_id"] == first["request_id"] }

    20.times { |i| server.command("request #{conn} ping payload=p#{i}") }
    refused = Array.new(4) { |i| server.wait_for("reply", after: i) { |e| e["status"] == "refused" } }
    refused.each { |r| assert_equal "16 requests are already waiting in this worker", r["error"] }
    assert_equal 4, server.count("reply"), "nothing else ran: the runtime thread is held"

    @release.puts("go")
    @release.flush
    assert_equal "first", server.wait_for("reply") { |e| e["request_id"] == first["request_id"] }["data"]
    16.times { |i| server.wait_for("reply") { |e| e["data"] == "p#{i}" && e["status"] == "ok" } }
    idle_after = server.count("heartbeat")
    server.wait_for("heartbeat", after: idle_after) { |e| e["busy_request_id"].zero? }
  end

  def test_requests_of_a_closed_connection_get_no_reply_on_the_next
    server = start_server
    worker, conn = start_core(server)
    3.times { server.command("request #{conn} ping payload=old") } # one held, two waiting
    server.wait_for("sent", after: 2) { true }
    server.command("close #{conn}")
    again = server.wait_for("hello") { |e| e["conn"] != conn }
    assert_equal worker.pid, again["pid"]

    @release.puts("go")
    @release.flush
    fresh = server.request(again["conn"], "ping", payload: "new")
    assert_equal "new", fresh["data"]
    assert_empty server.all("reply").select { |e| e["data"] == "old" },
                 "no reply to a request of the closed connection reaches the new one"
  end
end
