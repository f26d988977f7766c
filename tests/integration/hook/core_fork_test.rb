# frozen_string_literal: true

# The C core alone (no Ruby): a worker forks 200 times while its I/O thread
# heartbeats every 10 ms and the plugin keeps pinging it. Every child finds
# the inherited hook dropped; the first two register with hooks of their
# own; the parent's TLS session never breaks.
require_relative "helper"

class HookCoreForkTest < Minitest::Test
  include HookTest::Fixture

  CORE_WORKER = ENV.fetch("MEMDIAG_CORE_WORKER")
  FORKS = 200

  def test_fork_storm_keeps_the_parent_connection_and_drops_inherited_state
    server = start_server(heartbeat_ms: 10)
    cmd = [CORE_WORKER, @socket, *%w[worker.pem worker.key ca.pem].map { |f| File.join(@certs, f) }, FORKS.to_s]
    worker = HookTest::Worker.new(@dir, name: "core", command: cmd)
    @workers << worker

    parent = server.wait_for("hello") { |e| e["name"] == "core" }
    pings = Thread.new do
      n = 0
      until worker.out.include?("forks=")
        assert_equal "ok", server.request(parent["conn"], "ping", payload: "n#{n += 1}")["status"]
      end
      n
    end
    assert_match(/forks=#{FORKS} failures=0/, worker.wait_out(/forks=\d+ failures=\d+/)[0])
    assert_operator pings.value, :>=, 1

    %w[core/child-0 core/child-1].each do |name|
      child = server.wait_for("hello") { |e| e["name"] == name }
      assert_equal parent["pid"], child["ppid"]
      assert_match(/child \d connected id=#{child["conn"]}/, worker.out)
    end
    reply = server.request(parent["conn"], "ping", payload: "after-the-storm")
    assert_equal "after-the-storm", reply["data"]
    assert_equal "unsupported", server.request(parent["conn"], "thread_dump")["status"]
    refute server.all("closed").any? { |e| e["conn"] == parent["conn"] }, "the parent never lost its connection"
    assert_equal 1, server.all("hello").count { |e| e["pid"] == parent["pid"] }
  end
end
