# The restart that loses the heap in a container: the kernel's OOM killer at
# the cgroup's limit. A hooked worker in a real memory cgroup leaks
# (1.5-4 MiB/s, drawn each run) into a real OOM kill. Before the kill the
# plugin has captured it (the detector projecting onto the cgroup's limit):
# a complete capture folder with at least two heap dumps, streamed through
# the plugin. After it, a FAILURE notification says the kernel's OOM killer
# ended the worker and names the folder, the cgroup, its charge and limit;
# the same line is logged at WARNING; memdiagctl status and the plugin's
# counter-oom_kills value count it.
#
# Without MemoryLimit the cgroup's limit is the only one; with MemoryLimit
# "1G" (one value for a fleet) the cgroup's lower limit wins
# (containers_oom_memorylimit runs that case).
#
# The detector's windows are scaled down (ShortWindow 60 s, GrowthWindow
# 10 min) so that a leak reaching its limit in about two minutes is caught,
# as capture_fit does. Prints the time to the kill and the capture's lead.
require_relative "helper"
require "time"

class ContainersOomTest < Minitest::Test
  KEYS = <<~KEYS
    ShortWindow "60s"
    GrowthWindow "10min"
    HeartbeatInterval 1
  KEYS

  def setup
    reason = Containers.skip_reason
    skip reason if reason
  end

  def teardown
    @cgroup&.destroy
    @bench&.cleanup
  end

  def test_oom_kill_without_memory_limit_comes_after_a_complete_capture
    run_into_oom("oom-nolimit", "")
  end

  def test_oom_kill_with_memory_limit_1g_the_cgroups_lower_limit_wins
    run_into_oom("oom-1g", %(MemoryLimit "1G"), config_limit: 1024 * Containers::MiB)
  end

  private

  def run_into_oom(name, extra, config_limit: nil)
    rate = rand(1.5..4.0).round(2)
    seconds = rand(110..150)
    limit = 48 * Containers::MiB + (rate * seconds).round * Containers::MiB
    @bench = Containers::Bench.new("containers-#{name}", KEYS + extra)
    @cgroup = Containers::Cgroup.new(limit: limit)
    puts format("# %s: cgroup %s limit %d MiB, leak %.2f MiB/s%s", name, @cgroup.relative, limit / Containers::MiB,
                rate, config_limit ? ", MemoryLimit #{config_limit / Containers::MiB} MiB" : "")
    started = Time.now
    w = @bench.start_worker(name, cgroup: @cgroup, rate: (rate * Containers::MiB).round, max: 4 * limit)
    site = @bench.site

    # The limit that applies is the cgroup's, named by its host directory.
    # (Until the first sample reads the cgroup, MemoryLimit alone is known.)
    entry = site.wait_until("workers --json shows #{name}'s limit from its cgroup") do
      e = site.workers_json.find { |x| x["pid"] == w.pid }
      e if e&.dig("memory_limit_source") == "cgroup"
    end
    assert_equal limit, entry["memory_limit"], entry.inspect
    assert_equal "cgroup", entry["memory_limit_source"], entry.inspect
    assert_equal @cgroup.path, entry["limit_cgroup"], entry.inspect

    # Until the kill: note when the plan ended, and when the kernel killed.
    capture_end = nil
    killed_at = nil
    status = nil
    site.wait_until("the kernel's OOM killer ends #{name}", timeout: seconds * 3 + E2E::WAIT) do
      capture_end ||= Time.now if @bench.folders(w).any? { |d| @bench.manifest(d)&.dig("end") }
      killed_at ||= Time.now if @cgroup.oom_kills.positive?
      status ||= Process.waitpid2(w.pid, Process::WNOHANG)&.last
      killed_at && status
    end
    assert_equal 9, status.termsig, "SIGKILLed: #{status.inspect}"
    refute_nil capture_end, "no capture had ended when the worker was killed:\n#{site.plugin_log}"
    assert_operator capture_end, :<, killed_at, "the capture ended before the kill"

    folders = @bench.folders(w)
    assert_equal 1, folders.size, folders.inspect
    dir = folders.first
    m = @bench.manifest(dir)
    assert_equal true, m["complete"], JSON.pretty_generate(m)
    dumps = m["steps"].select { |s| s["step"] == "dump" && s["status"] == "ok" }
    assert_operator dumps.size, :>=, 2, JSON.pretty_generate(m["steps"])
    leaks = dumps.map do |s|
      assert_match(/\Aheap-\d\.json\.zst\z/, s["file"], "streamed through the plugin and compressed")
      text = Capture.dump_text(File.join(dir, s["file"]))
      klass = text.each_line.map { |l| JSON.parse(l) }.find { |o| o["type"] == "CLASS" && o["name"] == "CaptureLeak" }
      refute_nil klass, "#{s['file']} has no CaptureLeak class"
      text.each_line.count { |l| l.include?(%("class":"#{klass['address']}")) }
    end
    assert_operator leaks.last, :>, leaks.first, "the leak grows across the dumps: #{leaks}"

    # The FAILURE notification: the key words first, the folder named.
    note = site.wait_until("a FAILURE notification of the OOM kill") do
      @bench.oom_notes.find { |n| n.severity == "FAILURE" }
    end
    msg = note.message
    mib = limit / Containers::MiB
    assert_match(/\Aworker \d+ \('#{Regexp.escape(name)}' pid #{w.pid}\) killed by the kernel's OOM killer at charge \d+ MiB of limit #{mib} MiB; /, msg)
    assert_includes msg, "; capture #{dir} complete"
    # What collectd cuts at 256 characters is logged in full at WARNING.
    full = site.log.lines.find do |l|
      l.include?("[warning]") && l.include?("killed by the kernel's OOM killer") && l.chomp.end_with?("; cgroup #{@cgroup.path}")
    end
    refute_nil full, "the whole text at WARNING, ending in the cgroup:\n#{site.plugin_log}"
    assert_includes full, "capture #{dir} complete; cgroup #{@cgroup.path}"
    assert_equal 1, @bench.oom_notes.count { |n| n.severity == "FAILURE" }, "reported once"

    st = site.ctl("status")
    assert st.ok?, st.to_s
    assert_match(/^oom kills: 1$/, st.out)
    site.wait_until("counter-oom_kills reaches 1") { @bench.csv_value("oom_kills") == 1.0 }

    started_plan = Time.parse(m["started"])
    finished_plan = Time.parse(m["finished"])
    puts format("# %s: killed %.0f s after start; capture started %.0f s after start, ended %.0f s " \
                "before the kill (%d dumps); %s", name, killed_at - started, started_plan - started,
                killed_at - finished_plan, dumps.size, status.inspect)
  end
end
