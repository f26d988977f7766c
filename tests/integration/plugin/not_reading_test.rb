# A peer that keeps asking but never reads the answers: what waits for it is
# bounded (MaxFrameSize), then the plugin closes that connection and keeps
# serving the others.
require_relative "helper"

class NotReadingTest < PluginTest::Case
  def test_not_reading
    start("  MaxFrameSize 4096")
    steady = site.test_worker("steady")
    id = site.wait_welcomed(steady)
    # Each refused Control costs the plugin a ControlReply several times its
    # size: far more than the socket buffers hold.
    flood = site.test_worker("flood", "--control-flood", 40_000)
    wait("the plugin closes the peer that does not read") { flood.output.include?("closed by the plugin") }
    ping = site.control("ping", id)
    assert_match(/^reply status=ok/, ping.out, "steady is not served")
    assert_collectd_alive
  end
end
