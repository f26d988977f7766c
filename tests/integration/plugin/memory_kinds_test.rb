# Memory rss pss private swap: every figure reaches the csv plugin, read
# from smaps_rollup, and they are consistent with each other.
require_relative "helper"

class MemoryKindsTest < PluginTest::Case
  def test_memory_kinds
    start("  Memory rss pss\n  Memory private swap\n  Interval 1")
    w = site.test_worker("kinds", "--allocate-mb", 32)
    site.wait_welcomed(w)
    %w[rss pss private swap].each { |k| site.wait_csv("memdiag-kinds", "memory-#{k}") }
    sleep 2
    rss, pss, priv, swap = %w[rss pss private swap].map { |k| site.csv_last("memdiag-kinds", "memory-#{k}") }
    puts "rss=#{rss} pss=#{pss} private=#{priv} swap=#{swap}"
    assert_operator rss, :>=, 32 * PluginTest::MiB
    assert_operator pss, :>, 0
    assert_operator pss, :<=, rss
    assert_operator priv, :>=, 32 * PluginTest::MiB
    assert_operator priv, :<=, rss
    assert site.log_has?("started (Memory rss pss private swap)"), "Memory setting not logged"
    # Sampled every second, the early path has samples enough: no notice.
    refute site.log_has?("gives the leak detector's early path"), "a notice of the interval at 1 s"
  end
end
