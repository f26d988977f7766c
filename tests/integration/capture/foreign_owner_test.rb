# A CaptureDirectory that another user owns is refused (issue 11): its owner
# could swap it for a symbolic link while root prunes it. collectd's log
# says so at startup (issue 12: checked at init, not first at a capture);
# nothing is written in it, the operator's capture fails with the reason,
# and a FAILURE notification names CaptureDirectory.
require_relative "helper"

class CaptureForeignOwnerTest < Capture::Test
  NOBODY = 65_534

  def setup
    # Made by user nobody before collectd started, as any local user could
    # in /var/tmp.
    @bench = Capture::Bench.new("capture-foreign", <<~KEYS) do |captures|
      CaptureInterval 1
      Plan "dump"
    KEYS
      FileUtils.mkdir_p(captures, mode: 0o755)
      File.chown(NOBODY, NOBODY, captures)
    end
  end

  def test_directory_of_another_user_is_refused_with_nothing_written
    dir = Regexp.escape(@bench.captures)
    # Before any capture: the check at startup.
    @bench.site.wait_log(/memdiag plugin: CaptureDirectory #{dir} is owned by nobody \(uid 65534\), mode 0755.*captures fail until this is fixed/)
    assert_capture_refused("foreign-owner",
                           /CaptureDirectory #{dir} is owned by nobody \(uid 65534\), mode 0755/,
                           /foreign-owner .*failed: CaptureDirectory .* is owned by nobody/)
    assert_empty Dir.children(@bench.captures), "root wrote into a directory nobody owns"
    assert_equal NOBODY, File.stat(@bench.captures).uid
  end
end
