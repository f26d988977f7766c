# frozen_string_literal: true

require_relative "helper"
require "open3"

# A dump directory on a 1 MB tmpfs: dumps fail with ENOSPC and leave nothing
# that looks like a finished file.
class DiskFullTest < Minitest::Test
  include OpsTestHelper

  def setup
    super
    @mount = File.join(@dir, "tiny")
    Dir.mkdir(@mount)
    out, status = Open3.capture2e("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "memdiag-test", @mount)
    skip "cannot mount a 1 MB tmpfs here (#{out.strip}); the disk-full cases need one" unless status.success?
    @mounted = true
    # No free-space check: these tests are about what happens when the disk fills.
    @ops = Memdiag::Hook::Operations.new(dump_directory: @mount, dump_size_factor: 0)
    @checked = Memdiag::Hook::Operations.new(dump_directory: @mount)
  end

  def teardown
    ObjectSpace.trace_object_allocations_stop
    ObjectSpace.trace_object_allocations_clear
    system("umount", @mount) if @mounted
    super
  end

  def fill_the_disk
    File.open(File.join(@mount, "filler"), "wb") do |f|
      loop { f.write("x" * 65_536) }
    rescue Errno::ENOSPC
      nil
    end
  end

  def test_inline_heap_dump_fails_cleanly
    reply = assert_status(:error, call("memory_dump", path: "heap.json", mode: "inline"), /No space left on device/)
    assert_match(/nothing was left behind/, reply[:error])
    assert_nil reply[:path]
    assert_empty files_in(@mount)
  end

  def test_fork_heap_dump_fails_cleanly
    reply = assert_status(:error, call("memory_dump", path: "heap.json", mode: "fork"), /No space left on device/)
    assert_match(/dump child failed/, reply[:error])
    assert_empty files_in(@mount)
    assert_empty child_pids
  end

  def test_free_space_is_checked_before_a_heap_dump
    reply = @checked.call(id: 1, op: "memory_dump", path: "heap.json", mode: "inline")
    assert_status(:refused, reply, /not enough free space in .*: [\d.]+ MB available, a heap dump of this worker is estimated at [\d.]+ MB \(2.7 x RSS/)
    assert_empty files_in(@mount)
  end

  def test_text_dump_on_a_full_disk_fails_cleanly
    fill_the_disk
    assert_status(:error, call("thread_dump", path: "threads.txt"), /No space left on device/)
    assert_equal ["filler"], files_in(@mount)
  end

  def test_garbage_report_that_cannot_be_written_is_returned_with_the_error
    assert_ok(call("garbage_profile_start"))
    GC.start
    fill_the_disk
    reply = assert_status(:error, call("garbage_profile_stop", path: "gc.txt"), /No space left on device/)
    assert_match(/^collections\s+[1-9]/, reply[:data])
    assert_equal ["filler"], files_in(@mount)
  ensure
    GC::Profiler.disable
  end

  def test_failed_allocation_dump_keeps_the_data_for_a_retry
    assert_ok(call("allocation_trace_start"))
    @kept = Array.new(3) { Object.new }
    line = __LINE__ - 1
    reply = assert_status(:error, call("allocation_trace_stop", path: "alloc.json", mode: "inline"),
                          /tracing is stopped and the allocation data is kept/)
    assert_empty files_in(@mount)
    # The retry goes to a directory with room; the state is per process.
    roomy = Memdiag::Hook::Operations.new(dump_directory: File.join(@dir, "roomy").tap { |d| Dir.mkdir(d, 0o700) })
    reply = assert_ok(roomy.call(id: 2, op: "allocation_trace_stop", path: "alloc.json", mode: "inline"))
    objs = heap_records(reply[:path]) { |r| r["type"] == "OBJECT" && r["file"] == __FILE__ && r["line"] == line }
    assert_operator objs.size, :>=, 3
  end
end
