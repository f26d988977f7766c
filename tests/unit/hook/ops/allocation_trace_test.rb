# frozen_string_literal: true

require_relative "helper"
require "objspace"

class AllocationTraceTest < Minitest::Test
  include OpsTestHelper

  class TracedThing; end

  def teardown
    # Tracing is process-global: leave none behind for the next test.
    ObjectSpace.trace_object_allocations_stop
    ObjectSpace.trace_object_allocations_clear
    call("allocation_trace_stop", path: "teardown.json", mode: "inline")
    super
  end

  def allocate_things
    @things = Array.new(4) { TracedThing.new }
    __LINE__ - 1
  end

  def test_traced_dump_carries_file_and_line_of_test_allocations
    assert_ok(call("allocation_trace_start"))
    line = allocate_things
    reply = assert_ok(call("allocation_trace_stop", path: "traced.json", mode: "inline"))
    things = instances_of(reply[:path], "AllocationTraceTest::TracedThing")
    assert_operator things.size, :>=, 4
    things.each do |t|
      assert_equal __FILE__, t["file"]
      assert_equal line, t["line"]
    end
  end

  def test_fork_mode_traced_dump_carries_file_and_line
    assert_ok(call("allocation_trace_start"))
    line = allocate_things
    reply = assert_ok(call("allocation_trace_stop", path: "traced-fork.json", mode: "fork"))
    assert_equal "fork", reply[:mode]
    things = instances_of(reply[:path], "AllocationTraceTest::TracedThing")
    refute_empty things
    assert(things.all? { |t| t["file"] == __FILE__ && t["line"] == line })
  end

  class Churned; end

  # The application runs on while the plugin asks for the trace's dump
  # (other threads between the request and the heap's snapshot: a fork, or
  # dump_all's writes, which release the GVL): objects are freed and their
  # slots taken by new ones. Once Ruby's tracing is stopped it no longer
  # drops a freed object's record, so a new object at its address would show
  # the freed one's generation and site: the analysis took such objects for
  # ones that moved (analysis_struct_cache's "compacted" caveat) or credited
  # them to the wrong line. The dump is taken while tracing still runs.
  def test_objects_allocated_just_before_the_dump_carry_their_own_site
    assert_ok(call("allocation_trace_start"))
    @garbage = Array.new(20_000) { TracedThing.new }
    heap = @ops.instance_variable_get(:@heap)
    churn_line = nil
    generation = nil
    heap.define_singleton_method(:write) do |*args, **kw|
      # what other threads do between the request and the snapshot
      $churned = nil
      @garbage = nil
      GC.start
      generation = GC.count
      $churned = Array.new(20_000) { Churned.new }
      churn_line = __LINE__ - 1
      super(*args, **kw)
    end
    @garbage = nil
    reply = assert_ok(call("allocation_trace_stop", path: "churn.json", mode: "inline"))
    churned = instances_of(reply[:path], "AllocationTraceTest::Churned")
    assert_operator churned.size, :>=, 20_000
    stale = churned.reject { |c| c["file"] == __FILE__ && c["line"] == churn_line && c["generation"].to_i >= generation }
    assert_equal [], stale.first(3), "#{stale.size} of #{churned.size} churned objects lack their own record " \
                                     "(#{stale.count { |c| c["file"] }} show another object's)"
  ensure
    $churned = nil
  end

  def test_stop_disables_tracing_and_clears_the_metadata
    assert_ok(call("allocation_trace_start"))
    allocate_things
    assert_equal __FILE__, ObjectSpace.allocation_sourcefile(@things.first)
    assert_ok(call("allocation_trace_stop", path: "t.json", mode: "inline"))
    assert_nil ObjectSpace.allocation_sourcefile(@things.first), "metadata must be cleared after the dump"
    assert_nil ObjectSpace.allocation_sourcefile(Object.new), "tracing must be off"
    # and it can be started again
    assert_ok(call("allocation_trace_start"))
  end

  def test_start_twice_is_refused
    assert_ok(call("allocation_trace_start"))
    assert_status(:refused, call("allocation_trace_start"), /already active: memdiag started it/)
  end

  def test_start_is_refused_when_another_tool_traces
    ObjectSpace.trace_object_allocations_start
    assert_status(:refused, call("allocation_trace_start"), /already active, started by another tool/)
    ObjectSpace.trace_object_allocations_stop
    ObjectSpace.trace_object_allocations_clear
    assert_ok(call("allocation_trace_start"))
  end

  def test_stale_metadata_of_a_stopped_tracer_is_not_mistaken_for_tracing
    ObjectSpace.trace_object_allocations_start
    Array.new(10_000) { Object.new }
    ObjectSpace.trace_object_allocations_stop # stopped without clearing
    GC.start
    assert_ok(call("allocation_trace_start"))
  end

  def test_stop_without_start_is_an_error
    reply = assert_status(:error, call("allocation_trace_stop", path: "x.json", mode: "inline"),
                          /not started by memdiag/)
    assert_nil reply[:path]
    assert_empty files_in
  end

  def test_stop_when_someone_else_started_is_an_error_and_leaves_their_tracing_on
    ObjectSpace.trace_object_allocations_start
    assert_status(:error, call("allocation_trace_stop", path: "x.json", mode: "inline"), /not started by memdiag/)
    refute_nil ObjectSpace.allocation_sourcefile(Object.new)
  end

  def test_a_refused_path_keeps_tracing_running
    assert_ok(call("allocation_trace_start"))
    assert_status(:refused, call("allocation_trace_stop", path: "../escape.json", mode: "inline"), /'\.\.'/)
    refute_nil ObjectSpace.allocation_sourcefile(Object.new), "tracing must still be on"
    assert_ok(call("allocation_trace_stop", path: "ok.json", mode: "inline"))
  end

  def test_the_end_of_its_connection_stops_tracing
    assert_ok(call("allocation_trace_start", connection_id: 3))
    assert Memdiag::Hook::Ops::AllocationTrace.active?
    assert_empty @ops.connection_closed(4)
    assert_equal 1, @ops.connection_closed(3).grep(/allocation tracing/).size
    refute Memdiag::Hook::Ops::AllocationTrace.active?, "tracing must be off"
    assert_equal :idle, Memdiag::Hook::Ops::AllocationTrace.state
    assert_ok(call("allocation_trace_start", connection_id: 5))
  end

  def test_keep_survives_the_end_of_its_connection
    assert_ok(call("allocation_trace_start", connection_id: 3, keep: true))
    assert_empty @ops.connection_closed(3)
    assert Memdiag::Hook::Ops::AllocationTrace.active?
  end
end
