# frozen_string_literal: true

# The plugin goes away and comes back: the worker keeps working meanwhile,
# then registers again under the new connection ID the plugin gives it.
# A worker whose plugin was never there keeps running and keeps retrying.
require_relative "helper"

class HookReconnectTest < Minitest::Test
  include HookTest::Fixture

  WORKER = HookTest.counting_worker(every: 20)

  def test_reconnects_with_a_new_connection_id_after_a_plugin_restart
    first = start_server(first_id: 1)
    worker = start_worker(WORKER, name: "restart-worker")
    hello = first.wait_for("hello") { true }
    worker.wait_out(/connection_id=#{hello["conn"]} /)

    first.stop
    worker.wait_out(/connection_id= ticks/) # connection gone, worker still counting
    worker.wait_err(/connection #{hello["conn"]} lost/)

    second = start_server(first_id: 100)
    again = second.wait_for("hello") { true }
    assert_equal 100, again["conn"]
    assert_equal worker.pid, again["pid"], "the same process registers again"
    worker.wait_out(/connection_id=100 /)
    assert_equal "ok", second.request(100, "ping", payload: "back")["status"]
    assert worker.alive?
  end

  def test_a_missing_plugin_never_stops_the_worker
    worker = start_worker(WORKER, name: "lonely-worker")
    ticks_before = Integer(worker.wait_out(/ticks=(\d+)\n/)[1])
    worker.wait_err(/cannot connect to #{Regexp.escape(@socket)}: No such file or directory; retrying/)
    worker.wait_out(/ticks=#{ticks_before + 40}\n/) # it goes on with its own work
    # repeated failures are folded into one line, not printed per attempt
    assert_equal 1, worker.err.scan(/cannot connect/).size

    # the retries reach a plugin that turns up later
    server = start_server
    hello = server.wait_for("hello") { true }
    assert_equal worker.pid, hello["pid"]
    worker.wait_out(/connection_id=#{hello["conn"]} /)
  end

  def test_missing_environment_leaves_the_process_unhooked
    env = { "RUBYOPT" => "-I#{HookTest::LIB} -rmemdiag/hook/auto" }
    worker = start_worker(<<~RUBY, name: "plain", env: env)
      $stdout.sync = true
      puts "hooked=\#{Memdiag::Hook.running?}"
      puts "done"
    RUBY
    assert worker.wait.success?
    assert_equal "hooked=false\ndone\n", worker.out
    assert_match(/MEMDIAG_SOCKET, MEMDIAG_CERT, MEMDIAG_KEY, MEMDIAG_CA not set; this process runs without the memdiag hook/,
                 worker.err)
  end

  def test_a_refusing_plugin_is_logged_and_retried
    server = start_server
    worker = start_worker(WORKER, name: "refused-worker")
    hello = server.wait_for("hello") { true }
    server.command("goodbye #{hello["conn"]} maintenance window")
    worker.wait_err(/the plugin said goodbye \(refused\): maintenance window/)
    again = server.wait_for("hello") { |e| e["conn"] != hello["conn"] }
    assert_equal worker.pid, again["pid"]
  end

  def test_relative_paths_survive_a_chdir_between_connections
    env = hook_env(name: "wanderer").merge(
      "MEMDIAG_SOCKET" => "plugin.sock", "MEMDIAG_CERT" => "certs/worker.pem",
      "MEMDIAG_KEY" => "certs/worker.key", "MEMDIAG_CA" => "certs/ca.pem", "MEMDIAG_DUMP_DIRECTORY" => "dumps"
    )
    first = start_server
    worker = HookTest::Worker.new(@dir, <<~RUBY, env: env, name: "wanderer", chdir: @dir)
      $stdout.sync = true
      sleep 0.05 until Memdiag::Hook.connection_id
      Dir.chdir("/")
      puts "moved"
      sleep
    RUBY
    @workers << worker
    hello = first.wait_for("hello") { true }
    assert_equal @dumps, hello["dump_directory"]
    worker.wait_out(/moved/)

    first.stop
    second = start_server(first_id: 7)
    assert_equal worker.pid, second.wait_for("hello") { true }["pid"]
  end
end
