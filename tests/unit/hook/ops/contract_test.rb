# frozen_string_literal: true

require_relative "helper"

# What the hook relies on: the capability list, and a reply for every request,
# however malformed.
class ContractTest < Minitest::Test
  include OpsTestHelper

  def test_capabilities_name_every_operation
    assert_equal %w[memory_dump allocation_trace_start allocation_trace_stop garbage_profile_start
                    garbage_profile_stop scheduler_dump thread_dump heap_profile ping].sort,
                 Memdiag::Hook::Operations::CAPABILITIES.sort
    assert Memdiag::Hook::Operations::CAPABILITIES.frozen?
  end

  def test_ping_echoes_the_payload
    reply = assert_ok(call("ping", payload: "hello worker"))
    assert_equal "hello worker", reply[:data]
    assert_kind_of Integer, reply[:duration_us]
  end

  def test_malformed_requests_get_bad_request_replies
    [
      [nil, /must be a Hash/],
      ["memory_dump", /must be a Hash/],
      [{ id: 1 }, /no op/],
      [{ id: 1, op: "thread_dump", path: ["x"] }, /path must be a string/],
      [{ id: 1, op: "memory_dump", path: "x.json", shapes: "no" }, /shapes must be true or false/],
      [{ id: 1, op: "memory_dump", path: "x.json", mode: 3 }, /mode must be a string/],
      [{ id: 1, op: "memory_dump", path: "x.json", timeout_ms: -5 }, /timeout_ms must be/],
      [{ id: 1, op: "memory_dump", path: "x.json", timeout_ms: 1.5 }, /timeout_ms must be/]
    ].each do |request, message|
      assert_status(:bad_request, @ops.call(request), message)
    end
    assert_empty files_in
  end

  def test_unknown_operation_is_unsupported
    reply = assert_status(:unsupported, call("format_disk"), /"format_disk" is not supported/)
    assert_match(/memory_dump/, reply[:error])
  end

  def test_string_keys_and_unset_wire_defaults_are_accepted
    reply = assert_ok(@ops.call("id" => 1, "op" => "memory_dump", "path" => "s.json", "mode" => "",
                                "timeout_ms" => 0, "payload" => ""))
    assert_includes %w[fork inline], reply[:mode], "an empty mode means auto"
    assert_ok(@ops.call("id" => 2, "op" => "thread_dump", "path" => ""))[:data]
  end

  def test_replies_carry_only_contract_fields
    allowed = %i[status error path data bytes duration_us pause_us note mode]
    [call("ping", payload: "x"), call("memory_dump", path: "c.json", mode: "fork"), call("nope"),
     call("thread_dump"), call("garbage_profile_stop")].each do |reply|
      assert_empty reply.keys - allowed, reply.inspect
      assert_includes %i[ok error refused unsupported bad_request], reply[:status]
    end
  end

  # Errors the library did not foresee still become replies.
  def test_unexpected_exceptions_become_error_replies
    ops = Memdiag::Hook::Operations.new(dump_directory: @dir)
    [StandardError.new("boom"), NoMemoryError.new("no room"), SystemStackError.new("deep"),
     ScriptError.new("script")].each do |exc|
      ops.define_singleton_method(:thread_dump) { |_req| raise exc }
      reply = ops.call(id: 1, op: "thread_dump")
      assert_status(:error, reply, /internal error: #{exc.class}: #{exc.message}/)
    end
  end

  def test_exit_requests_are_not_swallowed
    ops = Memdiag::Hook::Operations.new(dump_directory: @dir)
    ops.define_singleton_method(:thread_dump) { |_req| raise SystemExit }
    assert_raises(SystemExit) { ops.call(id: 1, op: "thread_dump") }
    ops.define_singleton_method(:thread_dump) { |_req| raise Interrupt }
    assert_raises(Interrupt) { ops.call(id: 1, op: "thread_dump") }
    # the lock was released: the next request runs
    ops.singleton_class.send(:remove_method, :thread_dump)
    assert_ok(ops.call(id: 2, op: "thread_dump"))
  end
end
