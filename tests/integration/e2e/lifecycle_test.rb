# Issue 4 acceptance: a worker that exits disappears from `workers`; after
# collectd restarts, a worker reconnects by itself and gets a new connection ID.
require_relative "../harness/harness"

class E2ELifecycleTest < Minitest::Test
  def site = E2E::SharedSite.get("lifecycle", workers: %w[e2e-leaver e2e-stayer])

  def test_exit_then_collectd_restart
    leaver, stayer = site.workers
    before = site.workers_json
    stayer_id = before.find { |w| w["pid"] == stayer.pid }.fetch("connection_id")
    leaver_id = before.find { |w| w["pid"] == leaver.pid }.fetch("connection_id")
    assert_operator stayer_id, :>, leaver_id, "the stayer registered second"

    leaver.stop
    site.wait_until("the exited worker disappears from workers") do
      site.workers_json.none? { |w| w["pid"] == leaver.pid }
    end
    after_exit = site.workers_json
    assert_equal [stayer_id], after_exit.map { |w| w["connection_id"] },
                 "the remaining worker keeps its connection ID"
    refute_match(/\b#{leaver.pid}\b/, site.ctl("workers").out)

    site.stop_collectd
    down = site.ctl("workers")
    assert_equal 1, down.code, down.to_s
    assert_match(/^memdiagctl: cannot connect to #{Regexp.escape(site.socket)}/, down.err)
    assert stayer.alive?, "the worker keeps running while collectd is down"

    site.start_collectd
    entry = site.wait_registered(stayer)
    refute_equal stayer_id, entry["connection_id"],
                 "a worker reconnecting after a collectd restart gets a new connection ID"
    ping = site.ctl("ping", "connection_id=#{entry['connection_id']}")
    assert ping.ok?, ping.to_s
    stale = site.ctl("ping", "connection_id=#{stayer_id}")
    assert_equal 1, stale.code, stale.to_s
    assert_includes stale.err, "not found; run 'memdiagctl workers' again"
  end
end
