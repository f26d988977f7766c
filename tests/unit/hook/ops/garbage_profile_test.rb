# frozen_string_literal: true

require_relative "helper"

class GarbageProfileTest < Minitest::Test
  include OpsTestHelper

  def teardown
    call("garbage_profile_stop")
    GC::Profiler.disable
    GC::Profiler.clear
    super
  end

  def churn
    GC.start
    200_000.times { "garbage #{rand}" }
  end

  def collections_in(report)
    Integer(report[/^collections\s+(\d+)/, 1])
  end

  def test_inline_report_counts_the_collections
    assert_ok(call("garbage_profile_start"))
    assert GC::Profiler.enabled?
    churn
    reply = assert_ok(call("garbage_profile_stop"))
    report = reply[:data]
    assert_nil reply[:path]
    assert_equal report.bytesize, reply[:bytes]
    assert_operator collections_in(report), :>=, 1
    assert_match(/^profiler records\s+[1-9]/, report)
    assert_match(/^gc time ms\s+total [\d.]+/, report)
    assert_match(/== GC.stat \(before, after, delta\)/, report)
    assert_match(/^count\s+\d+\s+\d+\s+[1-9]\d*$/, report)
    assert_match(/== GC::Profiler.result\nGC \d+ invokes\./, report)
    # GitLab's fragmentation ratio from GC.stat, before and after
    assert_match(/^after\s+0\.\d{3}  \(\d+ live slots, [1-9]\d* eden pages of [1-9]\d* slots\)$/, report)
    assert_match(/^== malloc_info/, report)
    refute GC::Profiler.enabled?, "stop must disable the profiler"
  end

  def test_report_to_a_path
    assert_ok(call("garbage_profile_start"))
    churn
    reply = assert_ok(call("garbage_profile_stop", path: "gc.txt"))
    assert_nil reply[:data]
    text = File.read(reply[:path])
    assert_equal text.bytesize, reply[:bytes]
    assert_operator collections_in(text), :>=, 1
    assert_equal 0o600, File.stat(reply[:path]).mode & 0o777
  end

  def test_stop_without_start_is_an_error
    assert_status(:error, call("garbage_profile_stop"), /not started by memdiag/)
  end

  def test_start_twice_is_refused
    assert_ok(call("garbage_profile_start"))
    assert_status(:refused, call("garbage_profile_start"), /already running: memdiag started it/)
  end

  def test_start_is_refused_when_another_tool_profiles
    GC::Profiler.enable
    assert_status(:refused, call("garbage_profile_start"), /enabled by another tool/)
    assert GC::Profiler.enabled?, "the other tool's profiler must stay on"
  end

  def test_a_refused_path_keeps_profiling_running
    assert_ok(call("garbage_profile_start"))
    assert_status(:refused, call("garbage_profile_stop", path: "/etc/gc.txt"), /outside the dump directory/)
    assert GC::Profiler.enabled?
    assert_ok(call("garbage_profile_stop", path: "gc.txt"))
  end

  def test_without_a_dump_directory_a_path_is_refused_and_inline_still_works
    ops = Memdiag::Hook::Operations.new(dump_directory: nil)
    assert_equal :ok, ops.call(id: 1, op: "garbage_profile_start")[:status]
    churn
    assert_status(:refused, ops.call(id: 2, op: "garbage_profile_stop", path: "gc.txt"), /no dump directory/)
    assert GC::Profiler.enabled?, "a refused path must not end the profile"
    reply = assert_ok(ops.call(id: 3, op: "garbage_profile_stop"))
    assert_operator collections_in(reply[:data]), :>=, 1
  end

  def test_the_end_of_its_connection_stops_the_profiler
    assert_ok(call("garbage_profile_start", connection_id: 7))
    assert_empty @ops.connection_closed(8), "another connection's end changes nothing"
    assert GC::Profiler.enabled?
    assert_equal 1, @ops.connection_closed(7).grep(/GC profiler/).size
    refute GC::Profiler.enabled?
    assert_status(:error, call("garbage_profile_stop"), /not started by memdiag/)
    assert_ok(call("garbage_profile_start", connection_id: 9))
  end

  def test_keep_survives_the_end_of_its_connection
    assert_ok(call("garbage_profile_start", connection_id: 7, keep: true))
    assert_empty @ops.connection_closed(7)
    assert GC::Profiler.enabled?
    assert_ok(call("garbage_profile_stop", connection_id: 8))
  end
end
