# Two workers register; their memory reaches collectd's csv plugin as
# memdiag-NAME/memory-rss; the values match /proc/PID/status; the workers
# count is dispatched; a second worker with the same name is told apart.
require_relative "helper"

class ValuesTest < PluginTest::Case
  def test_values
    start
    a = site.test_worker("alpha", "--allocate-mb", 64)
    b = site.test_worker("beta")
    b2 = site.test_worker("beta", label: "beta-2")
    [a, b, b2].each { |w| site.wait_welcomed(w) }

    # values in csv
    site.wait_csv("memdiag-alpha", "memory-rss")
    site.wait_csv("memdiag-beta", "memory-rss")
    wait("the second 'beta' worker has a series of its own") do
      [b2, b].any? { |w| site.csv_file("memdiag-beta-#{w.pid}", "memory-rss") }
    end
    site.wait_csv("memdiag", "count-workers")
    wait("the workers count is 3") { site.csv_last("memdiag", "count-workers") == 3 }

    # rss close to /proc/PID/status VmRSS
    sleep 2
    got = site.csv_last("memdiag-alpha", "memory-rss")
    want = vm_rss_bytes(a.pid)
    puts "csv rss=#{got} VmRSS=#{want}"
    assert_operator got, :>, 64 * PluginTest::MiB
    assert_operator (got - want).abs, :<=, want * 0.10, "rss #{got} not within 10% of VmRSS #{want}"

    # operators see every worker with its pid
    list = site.control("list")
    assert list.ok?, list.to_s
    assert_includes list.out, "pid=#{a.pid} name=alpha instance=alpha "
    assert_includes list.out, "pid=#{b.pid} name=beta "
    assert_includes list.out, "pid=#{b2.pid} name=beta "
    assert site.log_has?("memdiag plugin: worker 1 registered"), "registration not logged"
    assert_collectd_alive
  end
end
