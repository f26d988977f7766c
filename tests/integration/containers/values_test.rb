# What an operator sees of workers' cgroups. `memdiagctl workers` shows each
# worker's limit and where it comes from (LIMIT, LIMIT_SOURCE; --json
# memory_limit, memory_limit_source, limit_cgroup, cgroup_charge): the
# lower of MemoryLimit and the cgroup's limit, either way round. A cgroup's
# limit changed while its workers run (a pod resized in place) is picked up.
# Every cgroup that holds registered workers gets its values in collectd's
# csv output (plugin instance cgroup-<path>): charge, working set, anon,
# file, limit, the workers in it, max events and OOM kills, as the kernel
# has them. Limits, ballasts and cgroup names are drawn each run.
require_relative "helper"

class ContainersValuesTest < Minitest::Test
  MiB = Containers::MiB

  include Containers::Test

  def setup
    @config_limit = Containers.rand_mib(300..500)
    start_bench("containers-values", <<~KEYS)
      MemoryLimit "#{@config_limit / MiB}M"
      NearLimit 0
      HeartbeatInterval 1
    KEYS
  end

  def entry(w) = @bench.site.workers_json.find { |x| x["pid"] == w.pid }

  def wait_limit(w, bytes, source)
    @bench.site.wait_until("#{w.name}'s limit is #{bytes} from #{source}") do
      e = entry(w)
      e if e && e["memory_limit"] == bytes && e["memory_limit_source"] == source
    end
  end

  def test_limits_sources_and_cgroup_values
    low = Containers.rand_mib(120..(@config_limit / MiB - 50))
    high = @config_limit + Containers.rand_mib(100..600)
    # The cgroups' names vary too: the plugin names each cgroup's values
    # after its path.
    tight = cgroup(limit: low)
    loose = cgroup(limit: high)
    ballast = Containers.rand_mib(16..48)
    a = @bench.start_worker("va-#{rand(100)}", cgroup: tight, ballast: ballast)
    b = @bench.start_worker("vb-#{rand(100)}", cgroup: tight)
    c = @bench.start_worker("vc-#{rand(100)}", cgroup: loose)
    site = @bench.site

    # The cgroup's limit is the lower for a and b, MemoryLimit for c.
    ea = wait_limit(a, low, "cgroup")
    assert_equal tight.path, ea["limit_cgroup"]
    assert_operator ea["cgroup_charge"], :>=, ballast
    wait_limit(b, low, "cgroup")
    wait_limit(c, @config_limit, "config")

    rows = @bench.workers_table
    by_pid = ->(w) { rows.find { |r| r["PID"] == w.pid.to_s } or flunk("no row for #{w.name}:\n#{rows}") }
    assert_equal tight.path, by_pid.call(a)["LIMIT_SOURCE"]
    assert_equal "config", by_pid.call(c)["LIMIT_SOURCE"]
    assert_equal format("%.1f MiB", low.to_f / MiB), by_pid.call(a)["LIMIT"]
    assert_equal format("%.1f MiB", @config_limit.to_f / MiB), by_pid.call(c)["LIMIT"]

    # Values per cgroup in csv, named after the cgroup's path.
    pi = "memdiag-#{tight.csv_instance}"
    %w[memory-charge memory-working_set memory-anon memory-file memory-limit count-workers
       derive-max_events derive-oom_kill].each { |t| site.wait_csv(pi, t) }
    assert_equal low.to_f, site.csv_last(pi, "memory-limit")
    site.wait_until("#{pi} counts two workers") { site.csv_last(pi, "count-workers") == 2.0 }
    charge = site.csv_last(pi, "memory-charge")
    assert_operator charge, :>=, ballast, "the charge holds a's ballast"
    assert_operator charge, :<=, low
    assert_operator site.csv_last(pi, "memory-working_set"), :<=, charge
    assert_operator site.csv_last(pi, "memory-anon"), :>=, ballast
    assert_equal 0.0, site.csv_last(pi, "derive-oom_kill")
    site.wait_csv("memdiag-#{loose.csv_instance}", "memory-limit")
    assert_equal high.to_f, site.csv_last("memdiag-#{loose.csv_instance}", "memory-limit")
    site.wait_until("#{loose.csv_instance} counts one worker") do
      site.csv_last("memdiag-#{loose.csv_instance}", "count-workers") == 1.0
    end

    # A pod resized in place: lower still, then above MemoryLimit.
    lower = low - Containers.rand_mib(10..40)
    tight.limit = lower
    wait_limit(a, lower, "cgroup")
    site.wait_until("csv memory-limit of #{pi} follows") { site.csv_last(pi, "memory-limit") == lower.to_f }
    tight.limit = high
    wait_limit(a, @config_limit, "config")
    site.wait_until("csv memory-limit of #{pi} follows") { site.csv_last(pi, "memory-limit") == high.to_f }

    # A cgroup whose workers have all gone gets no more values.
    [a, b].each(&:stop)
    site.wait_until("a and b are forgotten") { site.workers_json.none? { |x| [a.pid, b.pid].include?(x["pid"]) } }
    rows_then = site.csv_rows(pi, "memory-charge").size
    sleep 3
    assert_operator site.csv_rows(pi, "memory-charge").size, :<=, rows_then + 1, "no values for an empty cgroup"
    puts format("# MemoryLimit %d MiB; %s %d -> %d -> %d MiB; %s %d MiB; csv %s charge %.1f MiB",
                @config_limit / MiB, tight.relative, low / MiB, lower / MiB, high / MiB, loose.relative, high / MiB,
                pi, charge / MiB)
  end
end
