# frozen_string_literal: true

# The GC profiler and allocation tracing are process-wide and cost the worker
# while they run. One that a connection started ends with that connection:
# a plugin killed mid-capture, restarted, or gone silent leaves nothing
# running, so the next plugin's start is not refused. An operator who asked
# for keep=true gets a profiler that outlives the connection, stoppable from
# the next one.
require_relative "helper"

class HookConnectionStateTest < Minitest::Test
  include HookTest::Fixture

  WORKER = HookTest.counting_worker(every: 20)
  REFUSED_GC = /garbage profiling is already running: memdiag started it/

  def kill(server)
    Process.kill(:KILL, server.pid)
    server.stop
  end

  def started(server, conn, op, **params)
    reply = server.request(conn, op, **params)
    assert_equal "ok", reply["status"], reply["error"]
    reply
  end

  def test_a_killed_plugin_leaves_no_profiler_or_tracing_running
    first = start_server(first_id: 1)
    worker = start_worker(WORKER, name: "orphaned")
    first.wait_for("hello") { true }
    gc = started(first, 1, "garbage_profile_start")
    assert_match(/stopped if connection 1 ends first/, gc["note"])
    started(first, 1, "allocation_trace_start")
    # while the connection lives, a second start is refused as before
    assert_match REFUSED_GC, first.request(1, "garbage_profile_start")["error"]

    kill(first)
    worker.wait_err(/connection 1 ended: stopped the GC profiler \(running since [^)]+\) that it had started/)
    worker.wait_err(/connection 1 ended: stopped allocation tracing \(running since [^)]+\)/)

    second = start_server(first_id: 100)
    second.wait_for("hello") { true }
    started(second, 100, "garbage_profile_start")
    started(second, 100, "allocation_trace_start")
    # the new profiler belongs to the new connection and reports only its own time
    reply = started(second, 100, "garbage_profile_stop")
    assert_match(/^collections\s+\d+/, reply["data"])
    started(second, 100, "allocation_trace_stop", path: "after-restart.json")
    assert worker.alive?
  end

  def test_a_silent_plugin_counts_as_an_ended_connection
    server = start_server(first_id: 1)
    worker = start_worker(WORKER, name: "unheard")
    server.wait_for("hello") { true }
    started(server, 1, "garbage_profile_start")
    server.command("silence 1")
    worker.wait_err(/plugin silent for \d+ ms on connection 1; reconnecting/)
    worker.wait_err(/connection 1 ended: stopped the GC profiler/)
    again = server.wait_for("hello") { |e| e["conn"] != 1 }
    started(server, again["conn"], "garbage_profile_start")
  end

  def test_keep_outlives_the_connection
    first = start_server(first_id: 1)
    worker = start_worker(WORKER, name: "kept")
    first.wait_for("hello") { true }
    gc = started(first, 1, "garbage_profile_start", keep: true)
    assert_match(/kept when this connection ends \(keep\)/, gc["note"])
    started(first, 1, "allocation_trace_start", keep: true)

    kill(first)
    worker.wait_err(/connection 1 lost/)
    second = start_server(first_id: 100)
    second.wait_for("hello") { true }
    # still running: a new start is refused, and the next connection stops it
    assert_match REFUSED_GC, second.request(100, "garbage_profile_start")["error"]
    reply = started(second, 100, "garbage_profile_stop")
    assert_match(/^collections\s+\d+/, reply["data"])
    started(second, 100, "allocation_trace_stop", path: "kept.json")
    refute_match(/ended: stopped/, worker.err)
  end
end
