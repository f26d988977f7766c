# Operator requests relayed to a worker and the answers relayed back; an
# unknown connection ID, a worker that never answers (timeout), a worker
# that exits, one that stops sending heartbeats; a reconnecting worker gets
# a new connection ID.
require_relative "helper"

class RelayTest < PluginTest::Case
  def test_relay
    start
    one = site.test_worker("one")
    two = site.test_worker("two")
    id1 = site.wait_welcomed(one)
    id2 = site.wait_welcomed(two)

    # ping and thread_dump through the plugin
    ping = site.control("ping", id1)
    assert ping.ok?, "ping failed: #{ping}"
    assert_includes ping.out, "reply status=ok data=hi"
    td = site.control("thread_dump", id2)
    assert td.ok?, "thread_dump failed: #{td}"
    assert_includes td.out, "data=test worker: main thread idle"
    assert site.log_has?("runs thread_dump on worker #{id2}"), "operator request not logged"

    # unknown connection ID
    unknown = site.control("ping", 999)
    refute unknown.ok?, "ping to 999 succeeded"
    assert_includes unknown.out, "status=unknown"
    assert_includes unknown.out, "no worker with connection ID 999"

    # an operation the worker did not announce is refused by the plugin
    unsup = site.control("memory_dump", id1)
    refute unsup.ok?, "memory_dump to the test worker succeeded"
    assert_includes unsup.out, "status=unsupported"
    assert_includes unsup.out, "does not offer memory_dump"

    # a request the worker never answers times out
    late = site.control("scheduler_dump", id1, 1000)
    refute late.ok?, "scheduler_dump did not time out"
    assert_includes late.out, "status=timeout"
    assert site.control("ping", id1).ok?, "worker one unusable after a timeout"

    # a worker that exits disappears
    Process.kill("TERM", two.pid)
    wait("the exited worker is no longer listed") { !site.control("list").out.include?("id=#{id2} ") }
    gone = site.control("ping", id2)
    refute gone.ok?, "ping to an exited worker succeeded"
    assert_includes gone.out, "status=unknown"

    # a worker that stops its heartbeats is forgotten
    Process.kill("STOP", one.pid)
    begin
      site.wait_log("forgetting worker #{id1}")
    ensure
      Process.kill("CONT", one.pid)
    end
    refute_includes site.control("list").out, "id=#{id1} ", "silent worker still listed"

    # a new connection gets a new ID
    three = site.test_worker("three")
    id3 = site.wait_welcomed(three)
    assert id3 > id2 && id3 > id1, "connection ID #{id3} reused"
    assert_collectd_alive
  end
end
