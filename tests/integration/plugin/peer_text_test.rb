# Text a worker sends (a Goodbye's reason, a Reply's error) is logged with
# its control characters replaced: a worker cannot forge lines in
# collectd's log.
require_relative "helper"

class PeerTextTest < PluginTest::Case
  def test_peer_text
    start("  CaptureDirectory \"#{site.dir}/captures\"")
    erring = site.test_worker("erring", "--error-text", "no\nFORGED error line")
    id = site.wait_welcomed(erring)
    site.control("ping", id)
    site.wait_log("FORGED error line")
    # A capture whose dump step the worker refuses: the error reaches the log
    # and a notification through the capture module.
    capture = site.control("capture", id)
    assert capture.ok?, "capture was not started: #{capture}"
    # "?" stands for the newline the worker sent.
    site.wait_log(/heap-1\.json\.zst\) failed: unsupported: no.FORGED error line/)
    site.test_worker("leaving", "--goodbye", "bye\nFORGED goodbye line")
    site.wait_log("FORGED goodbye line")
    forged = site.log.lines.grep(/^FORGED/)
    assert_empty forged, "a worker's text started a line of its own in the log"
    assert_collectd_alive
  end
end
