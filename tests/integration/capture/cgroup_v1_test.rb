# A hooked Ruby worker in a real memory cgroup (this machine: the v1 memory
# controller; a v2 host with its memory controller runs the same through
# memory.max): `memdiagctl workers` shows the cgroup's limit and where it
# comes from, MemoryLimit wins when it is lower, the cgroup's values reach
# collectd's csv output under memdiag-cgroup-NAME, a worker that exits on its
# own is not called OOM-killed, and one the kernel's OOM killer ends is
# reported in a FAILURE notification and counted.
require_relative "helper"

class CaptureCgroupTest < Capture::Test
  V1 = "/sys/fs/cgroup/memory"
  MiB = Capture::MiB

  def setup
    skip "memory cgroups need root" unless Process.uid.zero?
    skip "the kernel offers no v1 memory controller at #{V1}" unless File.exist?(File.join(V1, "memory.limit_in_bytes"))
    @cg = File.join(V1, "memdiag-cgtest-#{$$}-#{name.hash.abs % 10_000}")
    Dir.mkdir(@cg)
    File.write(File.join(@cg, "memory.limit_in_bytes"), (256 * MiB).to_s)
  end

  def teardown
    super
    return unless @cg && File.directory?(@cg)

    File.read(File.join(@cg, "cgroup.procs")).split.each do |pid|
      Process.kill("KILL", Integer(pid))
    rescue Errno::ESRCH
      nil
    end
    10.times do
      Dir.rmdir(@cg)
      break
    rescue Errno::EBUSY
      sleep 0.2
    end
  end

  def instance = "memdiag-cgroup-#{File.basename(@cg)}"

  def test_limit_source_and_values
    @bench = Capture::Bench.new("capture-cgroup", "")
    site = @bench.site
    w = @bench.start_leaker("boxed", rate: MiB, max: 8 * MiB, cgroup: @cg)
    entry = nil
    site.wait_until("the worker shows its cgroup's charge") do
      entry = site.workers_json.find { |x| x["pid"] == w.pid }
      entry && entry["cgroup_charge"]
    end
    assert_equal 256 * MiB, entry["memory_limit"], entry.inspect
    assert_equal "cgroup", entry["memory_limit_source"]
    assert_equal @cg, entry["limit_cgroup"]
    assert_operator entry["cgroup_charge"], :>, 0
    table = site.ctl("workers")
    assert table.ok?, table.to_s
    assert_match(/LIMIT +LIMIT_SOURCE/, table.out)
    row = table.out.lines.find { |l| l.split[1] == w.pid.to_s }
    assert_includes row, "256.0 MiB", table.out
    assert_includes row, @cg, table.out

    # the cgroup's own series, once per cgroup
    site.wait_csv(instance, "memory-limit")
    assert_equal 256 * MiB, site.csv_last(instance, "memory-limit")
    site.wait_csv(instance, "memory-charge")
    assert_operator site.csv_last(instance, "memory-charge"), :>, 8 * MiB
    site.wait_csv(instance, "memory-working_set")
    site.wait_csv(instance, "memory-anon")
    site.wait_csv(instance, "count-workers")
    assert_equal 1, site.csv_last(instance, "count-workers")
    site.wait_csv(instance, "derive-oom_kill")
    assert_equal 0, site.csv_last(instance, "derive-oom_kill")

    # a limit changed in place is picked up
    File.write(File.join(@cg, "memory.limit_in_bytes"), (200 * MiB).to_s)
    site.wait_until("the new limit is shown") do
      site.workers_json.find { |x| x["pid"] == w.pid }&.dig("memory_limit") == 200 * MiB
    end

    # a worker that exits on its own is not called OOM-killed
    Process.kill("TERM", w.pid)
    site.wait_log(/worker \d+ .* gone/)
    sleep 1
    refute site.log_has?("OOM killer"), site.log
    status = site.ctl("status")
    assert_includes status.out, "oom kills: 0"
  end

  def test_memory_limit_lower_than_the_cgroup_wins
    @bench = Capture::Bench.new("capture-cgroup-config", 'MemoryLimit "100M"')
    w = @bench.start_leaker("boxed", rate: MiB, max: 4 * MiB, cgroup: @cg)
    entry = nil
    @bench.site.wait_until("the worker shows its cgroup's charge") do
      entry = @bench.site.workers_json.find { |x| x["pid"] == w.pid }
      entry && entry["cgroup_charge"]
    end
    assert_equal 100 * MiB, entry["memory_limit"], entry.inspect
    assert_equal "config", entry["memory_limit_source"]
  end

  # DumpMode auto for a worker under a cgroup limit: the plugin decides from
  # the cgroup's room, says so in the manifest, and the dump is streamed.
  def test_dump_mode_auto_decided_by_the_cgroup_room
    @bench = Capture::Bench.new("capture-cgroup-auto", <<~KEYS)
      Plan "dump"
      ForkMargin "250M"
    KEYS
    site = @bench.site
    w = @bench.start_leaker("roomy", rate: 4 * MiB, max: 24 * MiB, cgroup: @cg)
    site.wait_until("the worker shows its cgroup's charge") do
      site.workers_json.find { |x| x["pid"] == w.pid }&.dig("cgroup_charge")
    end
    r = @bench.capture(w)
    assert r.ok?, r.to_s
    _dir, m = @bench.wait_manifest(w, "complete") { |x| x["complete"] }
    mode = m["dump_mode"]
    assert_equal "auto", mode["configured"], m.inspect
    assert_equal "plugin", mode["by"], m.inspect
    # 256 MiB - charge - 250 MiB margin cannot hold 1.5 x RSS of a Ruby worker
    assert_equal "inline", mode["chosen"], m.inspect
    assert_match(%r{\Acgroup #{Regexp.escape(@cg)} room -?[\d.]+ MiB \(limit 256.0 MiB - charge [\d.]+ MiB - margin 250.0 MiB\) < copy-on-write estimate [\d.]+ MiB \(1.5 x RSS [\d.]+ MiB\): inline\z},
                 mode["reason"])
    assert_equal "inline", m["steps"].find { |s| s["step"] == "dump" }["mode"], m.inspect
    assert site.log_has?("(streamed through the plugin)"), site.log
  end

  # Four workers under one limit, one leaking: the cgroup's own detector
  # sees the shared charge near its limit before any worker's RSS is, and
  # its capture goes to the worker whose growth drives the charge.
  def test_shared_limit_captures_the_leaking_worker
    @bench = Capture::Bench.new("capture-cgroup-shared", 'Plan "dump"')
    limit_file = File.join(@cg, "memory.limit_in_bytes")
    # Roomy while the workers start; then 170 MiB above what the four hold,
    # whatever a worker weighs here (under ASan a Ruby worker is ~4x larger).
    # The leak stops at 150 MiB: past 90 % of the limit (the cgroup's
    # near-limit) whatever the four held, 20 MiB short of an OOM kill, so the
    # capture has time even when its dump is slow.
    File.write(limit_file, (4096 * MiB).to_s)
    quiet = (1..3).map { |i| @bench.start_leaker("quiet#{i}", rate: 1, max: 1, cgroup: @cg) }
    leaky = @bench.start_leaker("leaky", rate: 6 * MiB, max: 150 * MiB, cgroup: @cg)
    charge = Integer(File.read(File.join(@cg, "memory.usage_in_bytes")))
    limit = (charge / MiB + 170) * MiB
    File.write(limit_file, limit.to_s)
    _dir, m = @bench.wait_manifest(leaky, "a capture of the leaking worker") { |x| x["complete"] }
    reason = m["trigger"]["reason"]
    assert_match(/\Anear-limit of cgroup #{Regexp.escape(@cg)}: working set [\d.]+ MiB of limit #{format('%.1f', limit.to_f / MiB)} MiB \(charge [\d.]+ MiB\)(, growing [\d.]+ MiB\/min)?\z/,
                 reason, m.inspect)
    quiet.each { |q| assert_empty @bench.folders(q), "#{q.name} was captured" }
    # the leaking worker's own RSS was below the limit's 90 %: the cgroup's
    # charge, not the worker alone, was near the limit
    assert_operator m["trigger"]["rss"], :<, 0.9 * limit
  end

  def test_oom_kill_is_reported
    @bench = Capture::Bench.new("capture-cgroup-oom", "")
    site = @bench.site
    w = @bench.start_leaker("doomed", rate: 16 * MiB, max: 400 * MiB, cgroup: @cg)
    File.write(File.join(@cg, "memory.limit_in_bytes"), (96 * MiB).to_s)
    note = @bench.wait_note("FAILURE", /killed by the kernel's OOM killer/)
    assert_match(/\Aworker \d+ \('doomed' pid #{w.pid}\) killed by the kernel's OOM killer at charge \d+ MiB of limit 96 MiB; /,
                 note.message)
    assert_match(/; (no capture|capture \S+ (complete|incomplete, \d+ heap dumps?));/, note.message)
    # the whole line is in the log (a second "in full:" line when the
    # notification was cut at 256 characters)
    paths = site.log.scan(/memdiag plugin: (?:in full: )?worker .* killed by the kernel's OOM killer.*; cgroup (\S+)$/)
    assert_includes paths.flatten, @cg, site.log
    assert_equal "1", File.read(File.join(@cg, "memory.oom_control"))[/^oom_kill (\d+)/, 1]
    status = site.ctl("status", "--json")
    assert_equal 1, JSON.parse(status.out)["oom_kills"], status.to_s
    site.wait_until("the oom_kills counter is 1") { @bench.csv_value("oom_kills") == 1 }
  end
end
