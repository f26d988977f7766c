# A worker under a real OCI runtime: runc runs a hooked Ruby worker from a
# bundle made at test time (rootfs: the host's /usr read-only; the plugin's
# socket directory at /run/memdiag and the worker certificate at
# /etc/memdiag, nothing else of the host's; its own PID, mount, network and
# cgroup namespaces; linux.resources.memory.limit drawn each run). It
# registers through the mounted socket directory under its host PID, the
# plugin finds its limit in the cgroup runc made (as the host sees it: the
# worker's own view is "/"), it leaks into the kernel's OOM kill, and before
# that its capture is streamed into the host's capture folder (it cannot
# write there); after it, the FAILURE notification names the folder.
require_relative "helper"
require "time"

class ContainersRuncTest < Minitest::Test
  def setup
    reason = Containers.skip_reason
    skip reason if reason
    @bench = Containers::Bench.new("containers-runc", <<~KEYS)
      ShortWindow "60s"
      GrowthWindow "10min"
      HeartbeatInterval 1
    KEYS
  end

  def teardown
    @runc&.destroy
    @bench&.cleanup
  end

  def test_runc_worker_is_captured_and_its_oom_kill_reported
    rate = rand(2.0..4.0).round(2)
    seconds = rand(110..140)
    limit = 48 * Containers::MiB + (rate * seconds).round * Containers::MiB
    name = "runc-#{rand(1000..9999)}"
    @runc = Containers::Runc.new(@bench, name: name, limit: limit,
                                         env: { "LEAK_BYTES_PER_SECOND" => (rate * Containers::MiB).round,
                                                "LEAK_MAX_BYTES" => 4 * limit })
    puts format("# %s: runc memory limit %d MiB, leak %.2f MiB/s", name, limit / Containers::MiB, rate)
    started = Time.now
    host_pid = @runc.start
    site = @bench.site
    cg_path = File.join(Containers.controller.last, @runc.cgroup_relative)

    entry = site.wait_until("the runc worker registers with its limit:\n#{@runc.output}") do
      e = site.workers_json.find { |x| x["name"] == name }
      e if e&.dig("memory_limit_source") == "cgroup"
    end
    assert_equal host_pid, entry["pid"]
    assert_equal 1, entry["ns_pid"]
    assert_equal limit, entry["memory_limit"], entry.inspect
    assert_equal "cgroup", entry["memory_limit_source"]
    assert_equal cg_path, entry["limit_cgroup"]
    row = @bench.workers_table.find { |r| r["PID"] == host_pid.to_s }
    refute_nil row, site.ctl("workers").out
    assert_equal cg_path, row["LIMIT_SOURCE"]

    worker = Struct.new(:name, :pid).new(name, host_pid)
    killed_at = nil
    capture_end = nil
    site.wait_until("the kernel's OOM killer ends the runc worker", timeout: 3 * seconds + E2E::WAIT) do
      capture_end ||= Time.now if @bench.folders(worker).any? { |d| @bench.manifest(d)&.dig("end") }
      killed_at ||= Time.now if File.exist?(cg_path) && Integer(File.read(File.join(cg_path, "memory.oom_control"))[/^oom_kill (\d+)/, 1]).positive?
      killed_at && @runc.status == "stopped"
    end
    refute_nil capture_end, "no capture had ended before the kill:\n#{site.plugin_log}"
    assert_operator capture_end, :<, killed_at

    folders = @bench.folders(worker)
    assert_equal 1, folders.size
    dir = folders.first
    m = @bench.manifest(dir)
    assert_equal true, m["complete"], JSON.pretty_generate(m)
    assert_equal 0, File.stat(dir).uid, "the folder is the plugin's"
    dumps = m["steps"].select { |s| s["step"] == "dump" && s["status"] == "ok" }
    assert_operator dumps.size, :>=, 2
    dumps.each do |s|
      assert_match(/\Aheap-\d\.json\.zst\z/, s["file"])
      assert Capture.dump_text(File.join(dir, s["file"])).include?('"name":"CaptureLeak"')
    end
    # Only its own counter (leaked, and leaked.tmp when the kill came mid-write).
    assert_equal [], Dir.children(@runc.state_dir).grep_v(/\Aleaked(\.tmp)?\z/),
                 "the worker wrote nothing of the capture itself"

    note = site.wait_until("a FAILURE notification of the OOM kill") do
      @bench.oom_notes.find { |n| n.severity == "FAILURE" }
    end
    assert_match(/\Aworker \d+ \('#{Regexp.escape(name)}' pid #{host_pid}\) killed by the kernel's OOM killer at charge \d+ MiB of limit #{limit / Containers::MiB} MiB; capture #{Regexp.escape(dir)} complete/, note.message)
    full = site.log.lines.find do |l|
      l.include?("[warning]") && l.include?("killed by the kernel's OOM killer") && l.chomp.end_with?("; cgroup #{cg_path}")
    end
    refute_nil full, "the whole text at WARNING, ending in the cgroup:\n#{site.plugin_log}"
    puts format("# %s: killed %.0f s after start; capture started %.0f s after start, ended %.0f s before the kill",
                name, killed_at - started, Time.parse(m["started"]) - started, killed_at - Time.parse(m["finished"]))
  end
end
