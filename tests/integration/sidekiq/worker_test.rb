# Issue 3 names Sidekiq among the servers memdiag must diagnose. A real
# Sidekiq (Debian's ruby-sidekiq 6.4, `sidekiq -r ./app.rb -c 2`) hooked
# only through RUBYOPT, with its own redis-server on a unix socket, a private
# collectd running the memdiag plugin, and memdiagctl: the process registers
# under its MEMDIAG_NAME, collectd writes its RSS, a thread dump shows
# Sidekiq's processor threads, and a fork-mode heap dump holds the job's
# leaked objects while Sidekiq goes on processing jobs.
require_relative "helper"

unless SidekiqSite.missing.empty?
  # 77: ctest reports the test as skipped (SKIP_RETURN_CODE in sidekiq/CMakeLists.txt).
  puts "skipped: not installed: #{SidekiqSite.missing.join(', ')} (run 'make deps')"
  exit 77
end

class SidekiqWorkerTest < Minitest::Test
  def state = SidekiqSite.get
  def site = state.site
  def sidekiq = state.sidekiq

  def entry
    site.workers_json.find { |w| w["pid"] == sidekiq.pid } or
      flunk "Sidekiq (pid #{sidekiq.pid}) is not in memdiagctl workers:\n#{site.ctl('workers').out}"
  end

  def ctl!(*args)
    r = site.ctl(*args)
    assert r.ok?, "memdiagctl #{args.join(' ')}\n#{r}"
    r
  end

  def test_sidekiq_registers_under_its_name_and_pid_and_works
    state.run_jobs(10, "while hooked")
    e = entry
    assert_equal SidekiqSite::NAME, e["name"]
    assert_operator e["connection_id"], :>, 0

    table = ctl!("workers").out
    row = table.lines.find { |l| l.split.include?(sidekiq.pid.to_s) }
    refute_nil row, "no row for Sidekiq's pid #{sidekiq.pid} in:\n#{table}"
    assert_includes row, SidekiqSite::NAME

    assert_match(/^memdiag hook\[#{sidekiq.pid}\] #{SidekiqSite::NAME}: connected to .* as connection #{e['connection_id']}$/,
                 sidekiq.output, "Sidekiq's log names the connection")
  end

  def test_csv_holds_memory_rss_of_the_sidekiq_process
    instance = entry["instance"] || SidekiqSite::NAME
    files = nil
    site.wait_until("csv has memory-rss values for #{instance}") do
      files = Dir.glob(File.join(site.csv_dir, "e2e", "memdiag-#{instance}", "memory-rss-*"))
      files.any? { |f| File.readlines(f).size >= 3 }
    end
    epoch, rss = File.readlines(files.first).drop(1).last.split(",").map(&:to_f)
    assert_operator epoch, :>, 1_600_000_000
    assert_in_delta sidekiq.vm_rss_bytes, rss, sidekiq.vm_rss_bytes * 0.5,
                    "csv RSS is Sidekiq's, not some other process's"
  end

  def test_thread_dump_shows_the_processor_threads
    out = ctl!("thread_dump", "connection_id=#{entry['connection_id']}").out
    assert_match(/^memdiag thread dump: pid #{sidekiq.pid}, /, out)
    assert_equal SidekiqSite::CONCURRENCY, out.scan(/^Thread "processor" /).size,
                 "one thread per unit of -c #{SidekiqSite::CONCURRENCY}:\n#{out}"
    assert_includes out, "sidekiq/processor.rb", "the processors' backtraces are in the dump"
    assert_match(/^Thread "heartbeat" /, out)
    assert_match(/^Thread "memdiag-hook" /, out)
  end

  # The dump child is caught and stopped (SIGSTOP) while it exists, so that
  # "jobs are processed during the dump" does not depend on how fast the dump
  # is: while it is held, the reply is pending and Sidekiq must still finish
  # newly enqueued jobs.
  def test_fork_heap_dump_holds_the_leak_while_jobs_keep_running
    state.run_jobs(20, "before the dump")
    leaked_before = state.processed * SidekiqSite::PER_JOB
    id = entry["connection_id"]

    held_jobs = nil
    path, reply, attempts = dump_while_holding_the_child(id) do |child|
      held_at = state.processed
      state.run_jobs(10, "while its dump child (pid #{child}) is held")
      held_jobs = state.processed - held_at
    end

    assert_equal "ok", reply["status"], reply.to_s
    assert_equal "fork", reply["mode"]
    assert_equal path, reply["path"]
    assert_equal File.size(path), reply["bytes"]

    records = E2E.parse_ndjson(path)
    klass = records.find { |x| x["type"] == "CLASS" && x["name"] == "SidekiqLeakyPayload" }
    refute_nil klass, "no CLASS record for SidekiqLeakyPayload in #{path}"
    leaked = records.count { |x| x["type"] == "OBJECT" && x["class"] == klass["address"] }
    assert_operator leaked, :>=, leaked_before, "every payload leaked before the dump is in it"

    state.run_jobs(20, "after the dump")
    assert sidekiq.alive?
    puts format("\nsidekiq fork dump: %<bytes>d bytes, pause %<pause>.1f ms, %<all>.0f ms in all, " \
                "%<leaked>d SidekiqLeakyPayload, %<held>d jobs done while the dump child was held " \
                "(caught on attempt %<attempts>d)",
                bytes: reply["bytes"], pause: reply["pause_us"] / 1000.0, all: reply["duration_us"] / 1000.0,
                leaked: leaked, held: held_jobs, attempts: attempts)

    heapy = SidekiqSite::HEAPY or flunk "heapy is not installed (Debian ruby-heapy; run 'make deps')"
    out = IO.popen([heapy, "read", path], err: %i[child out], &:read)
    assert $?.success?, "heapy read #{path} failed:\n#{out}"
    assert_match(/Generation:/, out)
  end

  private

  # Asks for a fork-mode dump, finds the dump child while it runs, stops it,
  # yields its pid, lets it go on and returns [path, JSON reply, attempts]. A
  # dump that ends before the child is seen is asked for again with a new path.
  def dump_while_holding_the_child(id)
    (1..5).each do |attempt|
      path = File.join(state.dump_dir, "sidekiq-heap-#{attempt}-#{rand(1 << 30)}.json")
      op = Thread.new do
        site.ctl("--json", "--timeout", "120", "memory_dump", "connection_id=#{id}", "path=#{path}", "mode=fork")
      end
      child = hold_child(op)
      if child
        begin
          yield child
          assert op.alive?, "the dump replied while its child was held"
        ensure
          Process.kill("CONT", child)
        end
      end
      r = op.value
      assert r.ok?, "memdiagctl memory_dump mode=fork\n#{r}"
      return [path, JSON.parse(r.out), attempt] if child

      File.unlink(path) if File.exist?(path)
    end
    flunk "five fork-mode dumps ended before the test could see their child"
  end

  # The stopped dump child's pid, or nil when the dump finished first.
  def hold_child(op)
    while op.alive?
      SidekiqSite::State.children_of(sidekiq.pid).each do |pid|
        Process.kill("STOP", pid)
        # A child that has already exited (a zombie) does not stop.
        return pid if stopped?(pid)
      rescue Errno::ESRCH
        nil
      end
      sleep 0.001
    end
    nil
  end

  # SIGSTOP takes effect when the kernel next schedules the process: wait
  # until its state leaves running/sleeping.
  def stopped?(pid)
    deadline = Time.now + 5
    loop do
      state = File.read("/proc/#{pid}/stat").rpartition(")").last.split.first
      return state == "T" unless %w[R S D].include?(state) && Time.now < deadline

      sleep 0.001
    end
  rescue Errno::ENOENT, Errno::ESRCH
    false
  end
end
