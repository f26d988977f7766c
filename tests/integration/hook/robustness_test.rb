# frozen_string_literal: true

# Whatever an operation does, the worker lives on and the plugin gets an
# answer: exceptions (even Exception subclasses and exit), non-Hash results,
# replies that cannot be encoded and results too big for one frame all
# become error replies.
require_relative "helper"

class HookRobustnessTest < Minitest::Test
  include HookTest::Fixture

  WORKER = <<~RUBY
    $stdout.sync = true
    # Operations misbehaving in every way the hook has to survive.
    module Misbehave
      def call(request)
        case request[:op]
        when "thread_dump" then raise "boom"
        when "scheduler_dump" then 42
        when "garbage_profile_start" then { status: :ok, data: 123 }
        when "garbage_profile_stop" then { status: :ok, note: "nul\\0byte" }
        when "allocation_trace_start" then exit 3
        when "allocation_trace_stop" then raise NoMemoryError, "pretend"
        when "memory_dump" then { status: :ok, data: "x" * (17 << 20) }
        else super
        end
      end
    end
    Memdiag::Hook::Operations.prepend(Misbehave)
    sleep 0.05 until Memdiag::Hook.connection_id
    puts "ready"
    ticks = 0
    loop { ticks += 1; puts "ticks=\#{ticks}" if (ticks % 10).zero?; sleep 0.05 }
  RUBY

  def test_misbehaving_operations_become_error_replies
    server = start_server
    worker = start_worker(WORKER, name: "fragile")
    conn = server.wait_for("hello") { true }["conn"]
    worker.wait_out(/ready/)

    expectations = {
      "thread_dump" => /thread_dump failed in the worker: RuntimeError: boom/,
      "scheduler_dump" => /scheduler_dump returned Integer, not a reply/,
      "garbage_profile_start" => /could not send its reply: TypeError/,
      "garbage_profile_stop" => /could not send its reply: ArgumentError: string contains null byte/,
      "allocation_trace_start" => /allocation_trace_start failed in the worker: SystemExit: exit/,
      "allocation_trace_stop" => /allocation_trace_stop failed in the worker: NoMemoryError: pretend/,
      "memory_dump" => /the result \(\d+ bytes\) does not fit in one frame \(16777216 bytes\); give a path/
    }
    expectations.each do |op, error|
      reply = server.request(conn, op)
      assert_equal "error", reply["status"], op
      assert_match error, reply["error"]
    end

    ticks = Integer(worker.wait_out(/ticks=(\d+)/)[1])
    worker.wait_out(/ticks=#{ticks + 10}\n/)
    assert worker.alive?, "the worker survived every one of them"
    assert_equal "ok", server.request(conn, "ping", payload: "alive")["status"]
    assert_equal 1, server.count("hello"), "and never lost its connection"
  end
end
