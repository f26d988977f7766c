# CaptureDirectory given through a symbolic link: memdiag resolves it, so
# the worker (whose dump directory is the real one, and which refuses paths
# through links) writes the capture, and MaxUse never mistakes the capture in
# progress for an old one.
require_relative "helper"

class CaptureSymlinkTest < Minitest::Test
  def setup
    @bench = Capture::Bench.new("capture-symlink", <<~KEYS, link: true)
      CaptureSize "80M"
      CaptureInterval 1
      Plan "dump wait dump"
      DumpSpaceFactor 1
      MaxUse "10G"
    KEYS
  end

  def teardown
    @bench&.cleanup
  end

  def test_capture_through_a_linked_directory
    w = @bench.start_leaker("leaky-symlink")
    dir, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }
    assert_equal true, m["complete"], JSON.pretty_generate(m)
    assert_equal File.realpath(dir), m["directory"]
    %w[heap-1.json heap-2.json].each { |f| assert Capture.heap_lines(File.join(dir, f)).any? }
  end
end
