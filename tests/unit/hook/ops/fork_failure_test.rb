# frozen_string_literal: true

require_relative "helper"

# A dump child that dies or hangs ends in an error reply and leaves nothing
# that looks like a finished dump.
class ForkFailureTest < Minitest::Test
  include OpsTestHelper

  # Every dump here goes to a held target (helper.rb): its child cannot finish
  # before the test has done what it does to it, whatever the machine's load.
  def held_dump(name, **fields)
    target = held_target(name)
    [target, call("memory_dump", stream_target: target, mode: "fork", **fields)]
  end

  def test_child_killed_by_a_signal
    killer = when_child_appears { |pid| Process.kill(:KILL, pid) }
    _, reply = held_dump("killed.json")
    assert_status(:error, reply, /dump child failed: killed by signal KILL/)
    killer.join
    assert_nil reply[:path]
    assert_empty files_in
    assert_empty child_pids
  end

  def test_child_does_not_run_the_workers_signal_handlers
    marker = File.join(@dir, "handler-ran-in-child")
    previous = Signal.trap("TERM") { File.write(marker, Process.pid.to_s) unless Process.pid == PARENT_PID }
    # TERM is sent once the child has given up the worker's handler (its
    # SigCgt mask no longer has TERM): a signal in the microseconds between
    # fork and that reset still reaches Ruby's handler in the child, a known
    # window this test does not time.
    killer = when_child_appears do |pid|
      sleep 0.001 while term_caught?(pid)
      Process.kill(:TERM, pid)
    end
    assert_status(:error, held_dump("term.json").last, /dump child failed: killed by signal TERM/)
    killer.join
    refute File.exist?(marker), "the worker's TERM handler ran in the dump child"
    assert_empty files_in
  ensure
    Signal.trap("TERM", previous || "DEFAULT")
  end
  PARENT_PID = Process.pid

  def term_caught?(pid)
    mask = File.read("/proc/#{pid}/status")[/^SigCgt:\s*(\h+)/, 1]
    mask && (mask.to_i(16) >> (Signal.list["TERM"] - 1)).odd?
  rescue Errno::ENOENT, Errno::ESRCH
    false
  end

  # A child that hangs: held, its dump never ends.
  def test_child_over_its_timeout_is_killed
    _, reply = held_dump("slow.json", timeout_ms: 200)
    assert_status(:error, reply, /did not finish within 200 ms and was killed/)
    assert_empty files_in
    assert_empty child_pids
  end

  def test_other_requests_are_refused_while_a_dump_runs_but_ping_answers
    target = held_target("held.json")
    replies = {}
    holder = Thread.new do
      target.wait_until_started
      replies[:ping] = call("ping", payload: "still here")
      replies[:threads] = call("thread_dump")
      target.release
    end
    dump = assert_ok(call("memory_dump", stream_target: target, mode: "fork"))
    holder.join
    assert_equal "still here", assert_ok(replies[:ping])[:data]
    assert_status(:refused, replies[:threads], /another operation \(memory_dump\) is still running/)
    assert_operator dump[:bytes], :>, target.capacity, "a dump the pipe holds whole was never held"
    assert_equal target.path, dump[:path]
    refute_empty heap_records(dump[:path]) { |r| r["type"] == "ROOT" }
    assert_equal ["held.json"], files_in
  end
end
