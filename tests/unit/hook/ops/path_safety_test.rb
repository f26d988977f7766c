# frozen_string_literal: true

require_relative "helper"

# Every request that would write outside the dump directory, through a link or
# over an existing file is refused with a clear error and writes nothing.
class PathSafetyTest < Minitest::Test
  include OpsTestHelper

  def setup
    super
    @outside = Dir.mktmpdir("memdiag-outside-")
  end

  def teardown
    FileUtils.rm_rf(@outside)
    super
  end

  # thread_dump is cheap and writes through the same path rules as the heap dumps.
  def write(path, op: "thread_dump")
    fields = { path: path }
    fields[:mode] = "inline" if op == "memory_dump"
    call(op, **fields)
  end

  def assert_nothing_written
    assert_empty files_in(@outside), "a file was written outside the dump directory"
    yield if block_given?
  end

  def test_absolute_path_outside_the_directory_is_refused
    %w[thread_dump memory_dump].each do |op|
      reply = assert_status(:refused, write(File.join(@outside, "x.txt"), op: op), /is outside the dump directory/)
      assert_nil reply[:path]
    end
    assert_nothing_written { assert_empty files_in }
  end

  def test_dot_dot_is_refused_relative_and_absolute
    assert_status(:refused, write("../#{File.basename(@outside)}/x.txt"), /contains '\.\.'/)
    assert_status(:refused, write(File.join(@dir, "..", File.basename(@outside), "x.txt")), /contains '\.\.'/)
    assert_status(:refused, write(File.join(@dir, "sub", "..", "x.txt")), /contains '\.\.'/)
    assert_nothing_written { assert_empty files_in }
  end

  def test_directory_name_prefix_is_not_inside
    sibling = "#{@dir}-sibling"
    Dir.mkdir(sibling)
    assert_status(:refused, write(File.join(sibling, "x.txt")), /is outside the dump directory/)
    assert_empty files_in(sibling)
  ensure
    FileUtils.rm_rf(sibling)
  end

  def test_symlinked_directory_component_is_refused
    File.symlink(@outside, File.join(@dir, "link"))
    assert_status(:refused, write("link/x.txt"), /goes through a symbolic link/)
    assert_status(:refused, write(File.join(@dir, "link", "x.txt"), op: "memory_dump"), /symbolic link/)
    assert_nothing_written
  end

  def test_symlink_pointing_inside_is_refused_too
    Dir.mkdir(File.join(@dir, "real"))
    File.symlink(File.join(@dir, "real"), File.join(@dir, "alias"))
    assert_status(:refused, write("alias/x.txt"), /goes through a symbolic link/)
    assert_empty files_in(File.join(@dir, "real"))
  end

  def test_final_symlink_is_refused_dangling_or_not
    victim = File.join(@outside, "victim.txt")
    File.write(victim, "untouched")
    File.symlink(victim, File.join(@dir, "existing-link.txt"))
    File.symlink(File.join(@outside, "nowhere.txt"), File.join(@dir, "dangling-link.txt"))
    assert_status(:refused, write("existing-link.txt"), /is a symbolic link/)
    assert_status(:refused, write("dangling-link.txt", op: "memory_dump"), /is a symbolic link/)
    assert_equal "untouched", File.read(victim)
    assert_equal ["victim.txt"], files_in(@outside)
    assert_equal %w[dangling-link.txt existing-link.txt], files_in
  end

  def test_existing_file_is_refused_and_kept
    File.write(File.join(@dir, "old.txt"), "keep me")
    assert_status(:refused, write("old.txt"), /already exists; memdiag never overwrites/)
    assert_status(:refused, write(File.join(@dir, "old.txt"), op: "memory_dump"), /already exists/)
    assert_equal "keep me", File.read(File.join(@dir, "old.txt"))
    assert_equal ["old.txt"], files_in
  end

  def test_missing_subdirectory_is_refused
    assert_status(:refused, write("no/such/dir/x.txt"), /does not exist/)
    assert_empty files_in
  end

  def test_existing_subdirectory_and_absolute_path_inside_are_accepted
    Dir.mkdir(File.join(@dir, "sub"))
    reply = assert_ok(write("sub/t.txt"))
    assert_equal File.join(File.realpath(@dir), "sub", "t.txt"), reply[:path]
    reply = assert_ok(write(File.join(@dir, "abs.txt")))
    assert File.file?(reply[:path])
  end

  def test_dump_directory_given_through_a_symlink_still_works
    link = "#{@outside}/dir-link"
    File.symlink(@dir, link)
    ops = Memdiag::Hook::Operations.new(dump_directory: link)
    reply = assert_ok(ops.call(id: 1, op: "thread_dump", path: File.join(link, "via-link.txt")))
    assert_equal File.join(File.realpath(@dir), "via-link.txt"), reply[:path]
  end

  # The checks run when the path is resolved; the file is created and
  # published later. A directory swapped for a link in between must not
  # carry the dump outside.
  def test_directory_swapped_for_a_link_after_the_check_is_not_followed
    target = resolve_in_sub("swapped-early.txt")
    swap_sub_for_link
    error = assert_raises(Memdiag::Hook::Ops::Failure) { target.create_temp }
    assert_match(/symbolic link|moved/, error.message)
    assert_nothing_written
  end

  def test_directory_swapped_for_a_link_while_writing_is_not_followed
    target = resolve_in_sub("swapped-late.txt")
    partial = target.create_temp
    begin
      partial.io.write("dump")
      swap_sub_for_link
      partial.publish
    ensure
      partial.discard
    end
    assert_nothing_written
    assert_equal ["swapped-late.txt"], files_in(checked_sub)
    assert_equal "dump", File.read(File.join(checked_sub, "swapped-late.txt"))
  end

  # A new subdirectory "sub" and the target for sub/NAME in it, checked now.
  def resolve_in_sub(name)
    Dir.mkdir(File.join(@dir, "sub"))
    Memdiag::Hook::Ops::DumpDirectory.new(@dir).resolve("sub/#{name}")
  end

  # "sub" moves to checked_sub and a link to @outside takes its name.
  def swap_sub_for_link
    sub = File.join(@dir, "sub")
    File.rename(sub, checked_sub)
    File.symlink(@outside, sub)
  end

  def checked_sub = File.join(@dir, "sub.checked")

  def test_malformed_paths_are_bad_requests
    assert_status(:bad_request, write("a\0b"), /NUL byte/)
    assert_status(:bad_request, write("."), /names the dump directory itself/)
    assert_status(:bad_request, write(@dir), /names the dump directory itself/)
    assert_status(:bad_request, call("thread_dump", path: 42), /path must be a string/)
    assert_empty files_in
  end
end
