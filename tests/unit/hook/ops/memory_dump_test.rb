# frozen_string_literal: true

require_relative "helper"

class MemoryDumpTest < Minitest::Test
  include OpsTestHelper

  class LeakyWidget
    def initialize(n)
      @n = n
    end
  end

  def setup
    super
    @widgets = Array.new(3) { |i| LeakyWidget.new(i) }
  end

  def test_inline_dump_parses_and_holds_the_test_object
    reply = assert_ok(call("memory_dump", path: "inline.json", mode: "inline"))
    assert_equal File.join(File.realpath(@dir), "inline.json"), reply[:path]
    assert_equal "inline", reply[:mode]
    assert_equal File.size(reply[:path]), reply[:bytes]
    assert_operator reply[:duration_us], :>, 0
    widgets = instances_of(reply[:path], "MemoryDumpTest::LeakyWidget")
    assert_operator widgets.size, :>=, 3
    assert_equal 0o600, File.stat(reply[:path]).mode & 0o777
    assert_equal ["inline.json"], files_in, "only the finished dump may be in the directory"
  end

  def test_fork_dump_parses_and_reports_the_pause
    reply = assert_ok(call("memory_dump", path: "forked.json", mode: "fork"))
    assert_equal "fork", reply[:mode]
    assert_kind_of Integer, reply[:pause_us]
    assert_operator reply[:pause_us], :>, 0
    assert_operator reply[:duration_us], :>=, reply[:pause_us]
    widgets = instances_of(reply[:path], "MemoryDumpTest::LeakyWidget")
    assert_operator widgets.size, :>=, 3
    assert_equal 0o600, File.stat(reply[:path]).mode & 0o777
    assert_equal ["forked.json"], files_in
    assert_empty child_pids, "the dump child must have been reaped"
  end

  # The dump child collects no garbage, not even before its first line
  # runs: a collection there shows in the allocation generations of the
  # child's own objects, newer than any the worker has made, and the
  # analysis took the worker's objects allocated after the fork for objects
  # moved by compaction (analysis_registry, now and then). Under GC.stress
  # every allocation collects: the child collected 66 times between the
  # fork and the dump when it turned collection off itself (4395bb0).
  module CountAtFork
    attr_reader :child_count

    def fork_child
      pid = super
      @child_count = GC.count if pid.zero?
      pid
    end
  end

  def test_fork_dump_child_collects_nothing_even_under_gc_stress
    runner = Memdiag::Hook::Ops::ForkRunner.new
    runner.singleton_class.prepend(CountAtFork)
    GC.stress = true
    result = runner.run(60_000) { "#{runner.child_count} #{GC.count}" }
    GC.stress = false
    at_fork, at_dump = result.message.split.map(&:to_i)
    assert_equal at_fork, at_dump, "collections in the dump child before it dumped"
    refute GC.disable, "collection is back on in the worker"
  ensure
    GC.stress = false
    GC.enable
  end

  def test_fork_dump_child_runs_no_at_exit_handlers
    marker = File.join(@dir, "at_exit-ran")
    at_exit { File.write(marker, "x") unless $$ == PARENT_PID }
    assert_ok(call("memory_dump", path: "f.json", mode: "fork"))
    refute File.exist?(marker), "the dump child ran the worker's at_exit handlers"
  end
  PARENT_PID = Process.pid

  def test_auto_mode_says_which_mode_it_chose_and_why
    reply = assert_ok(call("memory_dump", path: "auto.json", mode: "auto"))
    assert_includes %w[fork inline], reply[:mode]
    assert_match(/auto chose #{reply[:mode]}: .* available for copy-on-write/, reply[:note])
    refute_empty heap_records(reply[:path]) { |r| r["type"] == "ROOT" }
  end

  def test_auto_mode_dumps_inline_without_the_memory_for_copy_on_write
    ops = Memdiag::Hook::Operations.new(dump_directory: @dir, fork_headroom_factor: 1_000_000)
    reply = assert_ok(ops.call(id: 1, op: "memory_dump", path: "tight.json", mode: "auto"))
    assert_equal "inline", reply[:mode]
    # inline, the worker is held for the whole dump, which is its pause
    assert_operator reply[:pause_us], :>, 0
    assert_operator reply[:duration_us], :>=, reply[:pause_us]
    assert_match(/auto chose inline: [\d.]+ MB available for copy-on-write, 1000000 x RSS/, reply[:note])
    refute_empty instances_of(reply[:path], "MemoryDumpTest::LeakyWidget")
  end

  def test_shapes_false_is_accepted_with_a_note_on_a_ruby_without_the_keyword
    reply = assert_ok(call("memory_dump", path: "noshapes.json", mode: "inline", shapes: false))
    assert_empty heap_records(reply[:path]) { |r| r["type"] == "SHAPE" }
    if ObjectSpace.method(:dump_all).parameters.none? { |_, n| n == :shapes }
      assert_match(/shapes=false is not supported by this Ruby/, reply[:note])
    end
  end

  def test_without_a_path_the_dump_gets_a_generated_name_in_the_directory
    reply = assert_ok(call("memory_dump", mode: "inline"))
    assert_equal File.realpath(@dir), File.dirname(reply[:path])
    assert_match(/\Aheap-#{Process.pid}-\d{8}T\d{6}-\h+\.json\z/, File.basename(reply[:path]))
    refute_empty heap_records(reply[:path]) { |r| r["type"] == "ROOT" }
  end

  def test_existing_file_is_never_overwritten
    File.write(File.join(@dir, "taken.json"), "precious")
    reply = assert_status(:refused, call("memory_dump", path: "taken.json", mode: "inline"), /already exists/)
    assert_nil reply[:path]
    assert_equal "precious", File.read(File.join(@dir, "taken.json"))
    assert_equal ["taken.json"], files_in
  end

  def test_without_a_dump_directory_dumps_are_refused
    ops = Memdiag::Hook::Operations.new(dump_directory: nil)
    reply = ops.call(id: 1, op: "memory_dump", path: "/tmp/x.json", mode: "inline")
    assert_status(:refused, reply, /no dump directory is configured/)
    reply = ops.call(id: 2, op: "memory_dump", mode: "inline")
    assert_status(:refused, reply, /no dump directory is configured/)
  end

  # The dump directory is often the plugin's CaptureDirectory, which must
  # belong to root: the hook never creates it (issue 11).
  def test_missing_dump_directory_is_refused_not_created
    dir = File.join(@dir, "new", "dumps")
    ops = Memdiag::Hook::Operations.new(dump_directory: dir)
    reply = assert_status(:refused, ops.call(id: 1, op: "memory_dump", path: "x.json", mode: "inline"),
                          /dump directory #{Regexp.escape(dir)} does not exist; the hook creates none/)
    assert_nil reply[:path]
    refute File.exist?(File.dirname(dir))
  end

  def test_a_mode_that_does_not_exist_is_a_bad_request
    assert_status(:bad_request, call("memory_dump", path: "m.json", mode: "sideways"), /mode must be one of/)
    assert_empty files_in
  end
end
