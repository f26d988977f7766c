# Real Ruby workers with the hook (memdiag/hook/auto) register with the
# plugin; their RSS reaches the csv plugin and matches /proc; an operator's
# ping and thread_dump go through the plugin to one of them while the other
# keeps reporting; a worker that exits is forgotten.
require_relative "helper"

class RubyWorkersTest < PluginTest::Case
  # A Ruby process holding ~40 MB.
  HOLD = 'keep = Array.new(40) { "x" * 1_000_000 }; $stdout.sync = true; puts "up"; sleep'

  def listed?(pid) = site.control("list").out.include?("pid=#{pid} ")

  def test_ruby_workers
    start
    r1 = site.start_worker("rb-one", code: HOLD)
    r2 = site.start_worker("rb-two", code: HOLD)
    [r1, r2].each { |w| wait("#{w.name} registers:\n#{w.output}") { listed?(w.pid) } }
    site.wait_csv("memdiag-rb-one", "memory-rss")
    site.wait_csv("memdiag-rb-two", "memory-rss")

    # rss close to VmRSS
    sleep 2
    got = site.csv_last("memdiag-rb-one", "memory-rss")
    want = vm_rss_bytes(r1.pid)
    puts "csv rss=#{got} VmRSS=#{want}"
    assert_operator got, :>, 40 * 1_000_000
    assert_operator (got - want).abs, :<=, want * 0.10, "rss #{got} not within 10% of VmRSS #{want}"

    # operations through the plugin
    id1 = site.control("list").out[/^worker id=(\d+) pid=#{r1.pid} /, 1]
    refute_nil id1, "no connection ID for rb-one"
    ping = site.control("ping", id1)
    assert ping.ok?, "ping failed: #{ping}"
    assert_includes ping.out, "reply status=ok"
    td = site.control("thread_dump", id1)
    assert td.ok?, "thread_dump failed: #{td}"
    assert_match(/reply status=ok data=./, td.out)
    wait_more_rows("memdiag-rb-two", "memory-rss")

    # an exited worker is forgotten
    Process.kill("TERM", r2.pid)
    wait("rb-two is no longer listed") { !listed?(r2.pid) }
    assert site.log_has?("gone"), "departure not logged"
    assert_collectd_alive
  end
end
