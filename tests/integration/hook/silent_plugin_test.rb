# frozen_string_literal: true

# A plugin that stops answering but keeps its socket open (collectd
# SIGSTOPped, its server thread wedged): the worker notices that no frame
# has come for three heartbeat intervals (at least 3 s), says so in one line,
# drops the connection and registers again, with a plugin that took over the
# socket path or with the same one, under a new connection ID. The worker's
# own work never waits for any of it. A request that was running is not
# answered on the new connection; the worker logs what it dropped.
require_relative "helper"

class HookSilentPluginTest < Minitest::Test
  include HookTest::Fixture

  WORKER = HookTest.counting_worker(every: 5)

  def ticks(worker)
    worker.out.scan(/ticks=(\d+)/).flatten.map(&:to_i).max || 0
  end

  def silent_line(conn)
    /plugin silent for (\d+) ms on connection #{conn}; reconnecting/
  end

  def test_a_stopped_plugin_is_left_for_the_one_that_takes_over_its_socket
    first = start_server(first_id: 1)
    worker = start_worker(WORKER, name: "patient")
    hello = first.wait_for("hello") { true }
    worker.wait_out(/connection_id=1 /)
    first.wait_for("heartbeat") { |e| e["conn"] == 1 }

    Process.kill(:STOP, first.pid)
    begin
      ticks_at_stop = ticks(worker)
      # a replacement binds the same path while the stopped one holds its
      # connection open
      second = start_server(first_id: 100)
      again = second.wait_for("hello") { true }
      assert_equal worker.pid, again["pid"], "the same process registers with the replacement"
      assert_equal 100, again["conn"]
      silent = worker.wait_err(silent_line(hello["conn"]))
      assert_operator Integer(silent[1]), :>=, 3000, "never before three intervals and 3 s"
      worker.wait_out(/connection_id=100 /)
      assert_operator ticks(worker), :>, ticks_at_stop, "the worker worked while its plugin was stopped"
      assert_equal "ok", second.request(100, "ping", payload: "new plugin")["status"]
      refute_match(/connection 1 lost/, worker.err, "one line for the silence, not two")
    ensure
      Process.kill(:CONT, first.pid)
    end
    assert worker.alive?
  end

  def test_a_wedged_connection_is_dropped_and_the_same_plugin_welcomes_the_worker_again
    server = start_server
    worker = start_worker(WORKER, name: "wedged")
    hello = server.wait_for("hello") { true }
    worker.wait_out(/connection_id=#{hello["conn"]} /)

    server.command("silence #{hello["conn"]}")
    server.wait_for("silenced") { true }
    again = server.wait_for("hello") { |e| e["conn"] != hello["conn"] }
    assert_equal worker.pid, again["pid"]
    worker.wait_err(silent_line(hello["conn"]))
    worker.wait_out(/connection_id=#{again["conn"]} /)
    assert_equal "ok", server.request(again["conn"], "ping", payload: "after")["status"]

    # the worker really let go of the old connection: once the server looks
    # at it again, it finds it closed
    server.command("resume #{hello["conn"]}")
    closed = server.wait_for("closed") { |e| e["conn"] == hello["conn"] }
    assert_match(/peer closed/, closed["reason"])
    assert_equal 1, worker.err.scan(/plugin silent/).size
    assert worker.alive?
  end

  def test_a_live_plugin_is_never_left
    server = start_server(heartbeat_ms: 50)
    worker = start_worker(WORKER, name: "steady")
    hello = server.wait_for("hello") { true }
    # 80 heartbeats answered: over four times the 3 s a silent plugin gets
    server.wait_for("heartbeat") { |e| e["sequence"] >= 80 }
    assert_equal [hello["conn"]], server.all("hello").map { |e| e["conn"] }
    refute_match(/plugin silent|lost/, worker.err)
  end

  # A plugin from before heartbeat answers (its Welcome does not say it
  # answers them) is never taken for a silent one: upgrading the workers
  # first must not make them leave their plugin every few seconds.
  def test_an_older_plugin_that_never_answers_is_not_left
    server = start_server(heartbeat_ms: 50, legacy: true)
    worker = start_worker(WORKER, name: "upgraded-first")
    hello = server.wait_for("hello") { true }
    # 80 unanswered heartbeats: four seconds, past the 3 s a silent plugin gets
    server.wait_for("heartbeat") { |e| e["sequence"] >= 80 }
    assert_equal [hello["conn"]], server.all("hello").map { |e| e["conn"] }
    refute_match(/plugin silent|lost/, worker.err)
    assert_equal "ok", server.request(hello["conn"], "ping", payload: "still here")["status"]
  end

  # Holds thread_dump in the worker until the test creates a file, so the
  # request is running when the plugin falls silent.
  HOLDING_WORKER = <<~RUBY
    $stdout.sync = true
    Memdiag::Hook::Operations.prepend(Module.new do
      def call(request)
        if request[:op] == "thread_dump"
          puts "holding \#{request[:id]}"
          sleep 0.05 until File.exist?(ENV.fetch("RELEASE"))
          puts "released \#{request[:id]}"
        end
        super
      end
    end)
    loop { sleep 0.05 }
  RUBY

  def test_a_running_request_is_dropped_with_a_log_line_not_answered_on_the_next_connection
    release = File.join(@dir, "release")
    server = start_server
    worker = start_worker(HOLDING_WORKER, name: "holder",
                                          env: hook_env(name: "holder", extra: { "RELEASE" => release }))
    conn = server.wait_for("hello") { true }["conn"]
    server.command("request #{conn} thread_dump")
    held = server.wait_for("sent") { true }
    worker.wait_out(/holding #{held["request_id"]}/)
    2.times { |i| server.command("request #{conn} ping payload=old#{i}") }
    server.wait_for("sent", after: 2) { true }
    server.wait_for("heartbeat") { |e| e["busy_request_id"] == held["request_id"] }

    server.command("silence #{conn}")
    again = server.wait_for("hello") { |e| e["conn"] != conn }
    worker.wait_err(silent_line(conn))
    worker.wait_err(/connection #{conn} closed with 2 requests not started and 0 replies not sent; they are dropped/)

    File.write(release, "")
    worker.wait_out(/released #{held["request_id"]}/)
    worker.wait_err(/reply to request #{held["request_id"]} dropped: connection #{conn} closed while it ran/)
    fresh = server.request(again["conn"], "ping", payload: "fresh")
    assert_equal "fresh", fresh["data"]
    assert_empty server.all("reply").select { |e| e["conn"] == again["conn"] && e["data"].to_s.start_with?("old") }
    assert_empty server.all("reply").select { |e| e["request_id"] == held["request_id"] }
  end
end
