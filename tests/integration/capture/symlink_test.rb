# CaptureDirectory reached through a symbolic link is refused (issue 11):
# root removes folders in CaptureDirectory, so whoever can change where the
# path leads could steer those removals. The capture fails with a FAILURE
# notification naming the link, and nothing is written in the link's target.
require_relative "helper"

class CaptureSymlinkTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("capture-symlink", <<~KEYS, link: true)
      CaptureInterval 1
      Plan "dump"
    KEYS
  end

  def test_a_linked_directory_is_refused_and_nothing_is_written
    assert_capture_refused("linked-capture", /CaptureDirectory \S*captures-link is a symbolic link/,
                           /linked-capture .*failed.*captures-link/)
    assert_empty Dir.children(@bench.captures), "something was written through the link"
  end
end
