# frozen_string_literal: true

require_relative "helper"

class ThreadDumpTest < Minitest::Test
  include OpsTestHelper

  def parked_in_a_recognisable_method(queue)
    queue.pop
  end

  def setup
    super
    @queue = Thread::Queue.new
    @thread = Thread.new { parked_in_a_recognisable_method(@queue) }
    @thread.name = "memdiag-test-worker"
    Thread.pass until @thread.status == "sleep"
  end

  def teardown
    @queue << :done
    @thread.join
    super
  end

  def section_for(text, name)
    text.split(/\n(?=Thread )/).find { |s| s.start_with?("Thread #{name.inspect}") }
  end

  def test_inline_dump_names_the_thread_with_status_and_backtrace
    reply = assert_ok(call("thread_dump"))
    text = reply[:data]
    assert_match(/\Amemdiag thread dump: pid #{Process.pid}, \d+ threads/, text)
    section = section_for(text, "memdiag-test-worker")
    refute_nil section, "no section for the named thread in:\n#{text}"
    assert_match(/object_id=#{@thread.object_id}\b/, section)
    assert_match(/status=sleep\b/, section)
    assert_match(/in `parked_in_a_recognisable_method'/, section)
    assert_match(/\[main\b/, text)
  end

  def test_dump_to_a_path
    reply = assert_ok(call("thread_dump", path: "threads.txt"))
    text = File.read(reply[:path])
    assert_equal text.bytesize, reply[:bytes]
    refute_nil section_for(text, "memdiag-test-worker")
    assert_equal 0o600, File.stat(reply[:path]).mode & 0o777
  end

  def test_dump_from_another_thread_marks_its_own_thread
    reply = Thread.new { Thread.current.name = "memdiag-hook-like"; call("thread_dump") }.value
    section = section_for(reply[:data], "memdiag-hook-like")
    assert_match(/this dump's thread/, section)
    assert_match(/parked_in_a_recognisable_method/, section_for(reply[:data], "memdiag-test-worker"))
  end
end
