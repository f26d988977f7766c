# collectd in a cgroup namespace of its own, as the DaemonSet's pod is on a
# cgroup v2 node when it is not privileged (the container runtime gives it
# a private cgroup namespace): collectd reads a worker's /proc/PID/cgroup
# as "/../<the worker's cgroup>" and its own mount of the hierarchy with
# the root "/..". The plugin must still find the worker's cgroup on the
# host: its limit, the directory named as the limit's source, its values
# under the name of its path from the hierarchy's root.
require_relative "helper"

class ContainersCgroupnsTest < Minitest::Test
  def setup
    reason = Containers.skip_reason
    skip reason if reason
    @home = Containers::Cgroup.new # collectd's own cgroup, its namespace's root
    @bench = Containers::Bench.new("containers-cgroupns", "HeartbeatInterval 1\nNearLimit 0", collectd_in: @home)
  end

  def teardown
    @cgroup&.destroy
    @bench&.cleanup
    @home&.destroy
  end

  def test_a_worker_cgroup_seen_from_collectds_own_cgroup_namespace
    pid = @bench.site.collectd_pid
    assert_equal [pid], @home.procs, "collectd runs in its own cgroup"
    refute_equal File.readlink("/proc/self/ns/cgroup"), File.readlink("/proc/#{pid}/ns/cgroup"),
                 "collectd has a cgroup namespace of its own"
    limit = Containers.rand_mib(150..400)
    @cgroup = Containers::Cgroup.new(limit: limit)
    w = @bench.start_worker("ns-#{rand(1000)}", cgroup: @cgroup, ballast: Containers.rand_mib(8..24))
    # What collectd reads (its view), and that it is not the host's.
    seen = File.read("/proc/#{w.pid}/cgroup") # the test's view: the host's
    assert_match(/^\d+:memory:#{Regexp.escape(@cgroup.relative)}$/, seen)
    view, st = Open3.capture2("nsenter", "--cgroup", "--target", pid.to_s, "cat", "/proc/#{w.pid}/cgroup")
    assert st.success?
    assert_match(%r{^\d+:memory:/\.\./#{Regexp.escape(@cgroup.relative.delete_prefix('/'))}$}, view,
                 "collectd's namespace shows the worker's cgroup relative to its own")

    site = @bench.site
    entry = site.wait_until("#{w.name}'s limit from its cgroup") do
      e = site.workers_json.find { |x| x["pid"] == w.pid }
      e if e&.dig("memory_limit")
    end
    assert_equal limit, entry["memory_limit"]
    assert_equal "cgroup", entry["memory_limit_source"]
    assert_equal @cgroup.path, entry["limit_cgroup"]
    pi = "memdiag-#{@cgroup.csv_instance}"
    site.wait_csv(pi, "memory-limit")
    assert_equal limit.to_f, site.csv_last(pi, "memory-limit")
    puts "# collectd's view: #{view[/^\d+:memory:.*$/]}; plugin: #{entry['limit_cgroup']}, csv #{pi}"
  end
end
