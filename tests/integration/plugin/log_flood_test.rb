# A peer looping on bad connections cannot flood collectd's log: at most 30
# refusals are logged per minute; later peers are still served.
require_relative "helper"

class LogFloodTest < PluginTest::Case
  def test_log_flood
    start
    45.times do |i|
      r = site.garbage
      assert r.ok?, "garbage connection #{i} was not closed: #{r}"
    end
    n = site.log.scan("refused connection from").size
    puts "refusals logged: #{n} of 45"
    assert_equal 30, n, "refusals logged in the first minute"
    w = site.test_worker("after")
    site.wait_welcomed(w)
    assert_collectd_alive
  end
end
