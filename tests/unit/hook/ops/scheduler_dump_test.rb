# frozen_string_literal: true

require_relative "helper"
require "async"

class SchedulerDumpTest < Minitest::Test
  include OpsTestHelper

  def waiting_inside_an_async_task(queue)
    queue.pop
  end

  def fiber_parked_here
    Fiber.yield
  end

  # Runs an Async reactor on its own thread (as a worker's server would) with
  # one annotated task blocked in a known method; returns once it is blocked.
  def with_async_task
    queue = Thread::Queue.new
    started = Thread::Queue.new
    thread = Thread.new do
      Async do |task|
        task.async do |child|
          child.annotate("memdiag-test-task")
          started << true
          waiting_inside_an_async_task(queue)
        end
      end
    end
    started.pop
    Thread.pass until queue.num_waiting.positive? || thread.status == "sleep"
    yield
  ensure
    queue << :done
    thread.join
  end

  def test_async_hierarchy_shows_the_test_task
    reply = with_async_task { assert_ok(call("scheduler_dump")) }
    text = reply[:data]
    assert_match(/== fiber scheduler Async::Scheduler/, text)
    assert_match(/^#<Async::Reactor:0x\h+ 1 children \(running\)>$/, text)
    assert_match(/^\t+#<Async::Task:0x\h+ memdiag-test-task \(running\)>$/, text)
    assert_match(/in `waiting_inside_an_async_task'/, text)
  end

  def test_async_hierarchy_to_a_path
    reply = with_async_task { assert_ok(call("scheduler_dump", path: "sched.txt")) }
    text = File.read(reply[:path])
    assert_equal text.bytesize, reply[:bytes]
    assert_match(/memdiag-test-task/, text)
  end

  def test_without_a_scheduler_every_live_fiber_is_listed
    # A reactor that has finished must not count as an active scheduler.
    with_async_task {}
    fiber = Fiber.new { fiber_parked_here }
    fiber.resume
    reply = assert_ok(call("scheduler_dump"))
    text = reply[:data]
    assert_match(/no fiber scheduler with a task hierarchy is active; listing every live fiber/, text)
    assert_match(/== \d+ live fibers/, text)
    assert_match(/in `fiber_parked_here'/, text)
    fiber.resume
  end
end
