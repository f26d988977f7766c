# CaptureDirectory reached through a symbolic link is refused (issue 11):
# root removes folders in CaptureDirectory, so whoever can change where the
# path leads could steer those removals. The capture fails with a FAILURE
# notification naming the link, and nothing is written in the link's target.
require_relative "helper"

class CaptureSymlinkTest < Minitest::Test
  def setup
    @bench = Capture::Bench.new("capture-symlink", <<~KEYS, link: true)
      CaptureInterval 1
      Plan "dump"
    KEYS
  end

  def teardown
    @bench&.cleanup
  end

  def test_a_linked_directory_is_refused_and_nothing_is_written
    w = @bench.start_leaker("linked-capture", rate: 1024 * 1024, max: 10 * Capture::MiB)
    site = @bench.site
    id = site.workers_json.find { |x| x["pid"] == w.pid }["connection_id"]
    r = site.ctl("capture", "connection_id=#{id}")
    refute r.ok?, r.to_s
    assert_match(/CaptureDirectory \S*captures-link is a symbolic link/, r.out + r.err)
    @bench.wait_note("FAILURE", /linked-capture .*failed.*captures-link/)
    assert_empty Dir.children(@bench.captures), "something was written through the link"
  end
end
