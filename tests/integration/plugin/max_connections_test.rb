# MaxConnections: connections beyond the limit are closed at once and
# logged; the workers already registered keep being served.
require_relative "helper"

class MaxConnectionsTest < PluginTest::Case
  def test_max_connections
    start("  MaxConnections 2", wait: :socket)
    first = site.test_worker("first")
    second = site.test_worker("second")
    site.wait_welcomed(first)
    site.wait_welcomed(second)
    third = site.test_worker("third", "--exit-after", 5)
    site.wait_log("MaxConnections (2) reached")
    refute third.welcomed?, "a third connection was welcomed"
    wait("the workers count is 2") { site.csv_last("memdiag", "count-workers") == 2 }
    assert first.alive?, "first worker dropped"
    assert_collectd_alive
  end
end
