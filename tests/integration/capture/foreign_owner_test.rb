# A CaptureDirectory that another user owns is refused (issue 11): its owner
# could swap it for a symbolic link while root prunes it. Nothing is
# written in it, the operator's capture fails with the reason, and a
# FAILURE notification names CaptureDirectory.
require_relative "helper"

class CaptureForeignOwnerTest < Capture::Test
  NOBODY = 65_534

  def setup
    @bench = Capture::Bench.new("capture-foreign", <<~KEYS)
      CaptureInterval 1
      Plan "dump"
    KEYS
    # Made by user nobody before collectd ever captured, as any local user
    # could in /var/tmp.
    FileUtils.mkdir_p(@bench.captures, mode: 0o755)
    File.chown(NOBODY, NOBODY, @bench.captures)
  end

  def test_directory_of_another_user_is_refused_with_nothing_written
    dir = Regexp.escape(@bench.captures)
    assert_capture_refused("foreign-owner",
                           /CaptureDirectory #{dir} is owned by nobody \(uid 65534\), mode 0755/,
                           /foreign-owner .*failed: CaptureDirectory .* is owned by nobody/)
    assert_empty Dir.children(@bench.captures), "root wrote into a directory nobody owns"
    assert_equal NOBODY, File.stat(@bench.captures).uid
  end
end
