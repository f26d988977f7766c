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

  def test_a_full_queue_refuses_at_once_and_the_rest_run_later
    server = start_server
    _worker, conn = start_core(server)
    20.times { |i| server.command("request #{conn} ping payload=p#{i}") }
    refused = Array.new(4) { |i| server.wait_for("reply", after: i) { |e| e["status"] == "refused" } }
    refused.each { |r| assert_equal "16 requests are already waiting in this worker", r["error"] }
    assert_equal 0, server.count("reply") - 4, "nothing ran yet: the runtime thread is held"

    @release.puts("go")
    @release.flush
    16.times { |i| server.wait_for("reply") { |e| e["data"] == "p#{i}" && e["status"] == "ok" } }
  end

  def test_requests_waiting_when_the_connection_closes_are_dropped
    server = start_server
    worker, conn = start_core(server)
    3.times { server.command("request #{conn} ping payload=old") }
    server.wait_for("sent", after: 2) { true }
    server.command("close #{conn}")
    again = server.wait_for("hello") { |e| e["conn"] != conn }
    assert_equal worker.pid, again["pid"]

    @release.puts("go")
    @release.flush
    fresh = server.request(again["conn"], "ping", payload: "new")
    assert_equal "new", fresh["data"]
    assert_empty server.all("reply").select { |e| e["data"] == "old" }, "no reply to a request of the closed connection reaches the new one"
  end
end
