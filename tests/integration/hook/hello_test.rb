# frozen_string_literal: true

# A worker hooked through RUBYOPT says hello over mutual TLS, learns its
# connection ID, sends heartbeats and answers ping; a request naming no
# operation is answered as a bad request.
require_relative "helper"

class HookHelloTest < Minitest::Test
  include HookTest::Fixture

  WORKER = <<~RUBY
    $stdout.sync = true
    sleep 0.05 until Memdiag::Hook.connection_id
    puts "connection_id=\#{Memdiag::Hook.connection_id}"
    sleep
  RUBY

  def test_hello_welcome_heartbeat_ping
    server = start_server(heartbeat_ms: 100)
    worker = start_worker(WORKER, name: "billing-api")

    hello = server.wait_for("hello") { true }
    assert_equal "billing-api", hello["name"]
    assert_equal worker.pid, hello["pid"]
    assert_equal worker.pid, hello["peer_pid"], "SO_PEERCRED sees the pid the hello names"
    assert_equal Process.pid, hello["ppid"]
    assert_equal "ruby", hello["runtime"]
    assert_equal RUBY_VERSION, hello["runtime_version"]
    assert_equal @dumps, hello["dump_directory"]
    assert_equal "memdiag worker", hello["peer"], "the server checked the worker's certificate"
    %w[ping memory_dump allocation_trace_start allocation_trace_stop garbage_profile_start
       garbage_profile_stop scheduler_dump thread_dump].each do |op|
      assert_includes hello["capabilities"], op
    end

    assert_equal "connection_id=#{hello["conn"]}", worker.wait_out(/connection_id=\d+/)[0]

    first = server.wait_for("heartbeat") { |e| e["conn"] == hello["conn"] }
    third = server.wait_for("heartbeat") { |e| e["conn"] == hello["conn"] && e["sequence"] >= first["sequence"] + 2 }
    assert_operator third["sequence"], :>, first["sequence"]

    reply = server.request(hello["conn"], "ping", payload: "are-you-there")
    assert_equal "ok", reply["status"]
    assert_equal "are-you-there", reply["data"]
    assert_equal "pid #{worker.pid}", reply["note"]

    bad = server.request(hello["conn"], "empty")
    assert_equal "bad_request", bad["status"]
    assert_match(/names no operation/, bad["error"])

    assert worker.alive?
    assert_match(/memdiag hook\[#{worker.pid}\] billing-api: connected to .* as connection #{hello["conn"]}/, worker.err)
  end

  def test_default_name_is_the_program_name
    server = start_server
    start_worker(WORKER, name: "nightly-report", env: hook_env)
    hello = server.wait_for("hello") { true }
    assert_equal "nightly-report.rb", hello["name"]
  end
end
