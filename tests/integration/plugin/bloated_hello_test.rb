# A hello is bounded (issue 11): until a peer has registered it may send at
# most 64 KiB in one frame, and a hello may list at most 64 capabilities of
# at most 64 bytes. Three hellos of 2,000,000 empty capabilities (4 MB on
# the wire; unpacked and kept by the registry they took collectd from 8 to
# 149 MiB each) leave collectd's RSS within a few MiB of where it was, and
# the workers list still answers.
require_relative "helper"

class BloatedHelloTest < PluginTest::Case
  def test_bloated_hellos
    start
    steady = site.test_worker("steady")
    site.wait_welcomed(steady)
    assert site.control("list").ok?, "list failed"
    before = vm_rss_bytes(site.collectd_pid)

    3.times do |i|
      bloat = site.test_worker("bloat#{i}", "--bloated-hello", 2_000_000, "--exit-after", 5)
      bloat.wait
      refute bloat.welcomed?, "a hello of 2,000,000 capabilities was welcomed " \
                              "(collectd VmRSS #{vm_rss_bytes(site.collectd_pid) / 1024} KiB, " \
                              "was #{before / 1024} KiB)"
    end
    wait("the three oversized hellos are refused") do
      site.log.lines.grep(/larger than the size limit/).size >= 3
    end
    after = vm_rss_bytes(site.collectd_pid)
    puts "collectd VmRSS before #{before / 1024} KiB, after three bloated hellos #{after / 1024} KiB"
    assert_operator after - before, :<, 8 * PluginTest::MiB, "collectd grew by #{(after - before) / PluginTest::MiB} MiB"

    # Small enough for the frame limit, but more capabilities than allowed.
    many = site.test_worker("many", "--bloated-hello", 65, "--exit-after", 5)
    many.wait
    assert_includes many.output,
                    "goodbye status=bad_request reason=hello lists 65 capabilities; at most 64 are accepted"
    list = site.control("list")
    assert list.ok?, list.to_s
    assert_includes list.out, "name=steady"
    refute_match(/name=(bloat|many)/, list.out, "a bloated hello was registered")
    assert_collectd_alive
  end
end
