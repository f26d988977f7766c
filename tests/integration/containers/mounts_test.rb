# collectd in a mount namespace with many mounts, as on a Kubernetes node:
# every pod's volumes (secrets, config maps, service-account tokens) and
# every container's overlay root are a line of /proc/self/mountinfo, and an
# overlay line lists its layers (kilobytes each). The plugin read the whole
# file into 256 KiB to find the memory hierarchy's mount; past that it
# refused every worker's cgroup (E2BIG): no cgroup limit, no charge, no
# cgroup values, and the log said nothing. Here the mounts are tmpfs ones at
# long paths, made in collectd's own mount namespace only (private
# propagation: the host's table is untouched, and they go with collectd).
require_relative "helper"

class ContainersMountsTest < Minitest::Test
  include Containers::Test

  MOUNTS = 100
  # one path component of 250 bytes, 14 deep: a line of about 3.6 KB each
  DEEP = Array.new(14) { |i| format("%02d", i) + ("m" * 248) }.join("/")

  # Words before collectd's command: unshare a mount namespace, make the
  # mounts below dir/mnt (a tmpfs of its own, so the deep folders go too).
  def self.crowded(dir)
    base = File.join(dir, "mnt")
    FileUtils.mkdir_p(base)
    script = <<~SH
      set -e
      mount -t tmpfs -o size=16m memdiag-mounts "$0"
      i=0
      while [ $i -lt #{MOUNTS} ]; do
        mkdir -p "$0/$i/#{DEEP}"
        mount -t tmpfs -o size=4k memdiag-m$i "$0/$i/#{DEEP}"
        i=$((i + 1))
      done
      exec "$@"
    SH
    ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, base]
  end

  def setup
    start_bench("containers-mounts", "HeartbeatInterval 1\n", prefix: method(:crowded_prefix))
  end

  def crowded_prefix(dir) = self.class.crowded(dir)

  def test_a_worker_cgroup_is_found_past_a_quarter_megabyte_of_mounts
    site = @bench.site
    size = File.read("/proc/#{site.collectd_pid}/mountinfo").bytesize
    assert_operator size, :>, 256 * 1024, "collectd's mount table is past 256 KiB"
    assert_operator File.read("/proc/self/mountinfo").bytesize, :<, size, "the mounts are collectd's own"
    limit = Containers.rand_mib(200..400)
    cg = cgroup(limit: limit)
    w = @bench.start_worker("crowded", cgroup: cg, ballast: Containers.rand_mib(8..16))
    e = site.wait_until("workers --json gives #{w.name}'s limit from #{cg.path}") do
      x = site.workers_json.find { |y| y["pid"] == w.pid }
      x if x && x["limit_cgroup"] == cg.path && x["memory_limit"] == limit
    end
    assert_equal "cgroup", e["memory_limit_source"], e.inspect
    pi = "memdiag-#{cg.csv_instance}"
    site.wait_csv(pi, "memory-limit")
    assert_equal limit.to_f, site.csv_last(pi, "memory-limit")
    refute_match(/no memory cgroup can be read/, site.plugin_log)
    puts format("# collectd's mountinfo: %d KiB (%d lines); limit %d MiB from %s", size / 1024,
                File.read("/proc/#{site.collectd_pid}/mountinfo").lines.size, limit / Containers::MiB, cg.path)
  end
end
