# frozen_string_literal: true

# heap_profile and the allocation sampler behind it, in real hooked Ruby
# workers: the profile is a pprof file that `go tool pprof` reads and whose
# top entry is the line a worker leaks from; the sampler keeps working after
# GC.compact moves the sampled objects, gives each forked Puma worker its own
# table, follows the plugin's AllocationSampling, a failure inside it
# turns it off with a reason while the worker runs on, a start right after
# a failure is not undone by it, sampling stopped from Ruby code inside a
# prune and starts and stops while threads allocate leave the worker
# running, and a profile after a heap dump gives the GC count at that dump.
require_relative "helper"

class HookHeapProfileTest < Minitest::Test
  include HookTest::Fixture

  GO = ENV.fetch("MEMDIAG_GO", "go")

  # Leaks 1000-byte strings from line 5 of leaker.rb while churning
  # short-lived hashes and strings elsewhere, over about two seconds (the
  # sampler samples at random times); "leaked N" once done.
  LEAKER = <<~RUBY
    $stdout.sync = true
    LEAK = []
    CHURN = ->(i) { { id: i, name: "n\#{i}" * 3 } }
    def leak_a_little(n)
      n.times { LEAK << ("x" * 1000) }
    end
    40.times do |round|
      leak_a_little(2_500)
      10_000.times(&CHURN)
      sleep 0.03
    end
    puts "leaked \#{LEAK.size}"
    $stdin.each_line do |cmd|
      case cmd.strip
      when "compact"
        GC.compact
        GC.verify_compaction_references(double_heap: true, toward: :empty)
        s = Memdiag::Hook::Sampler.stats
        puts "compacted compactions=\#{s[:compactions]} moved=\#{s[:moved]} live=\#{s[:live]}"
      when "free"
        LEAK.clear
        3.times { GC.start }
        puts "freed live=\#{Memdiag::Hook::Sampler.prune}"
      when "fail"
        Memdiag::Hook::Sampler.simulate_failure("a test asked for it")
        puts "failed"
      when "alive"
        puts "alive \#{LEAK.size}"
      when /^count /
        puts "count \#{cmd.split[1]}=\#{GC.count}"
      when /^collect /
        3.times { GC.start }
        puts "collected \#{cmd.split[1]} after=\#{GC.count}"
      end
    end
  RUBY

  def test_go_tool_pprof_top_lists_the_leaking_line_first
    server = start_server
    worker = start_leaker
    hello = server.wait_for("hello") { |e| e["name"] == "leaker" }
    assert_includes hello["capabilities"], "heap_profile"
    worker.wait_out(/leaked 100000/)

    reply = server.request(hello["conn"], "heap_profile", path: "leak.pb.gz")
    assert_equal "ok", reply["status"], reply["error"]
    assert_equal File.join(@dumps, "leak.pb.gz"), reply["path"]
    assert_match(/live sampled objects from \d+ sites; up to 100 allocations sampled a second/, reply["note"])
    assert_equal File.size(reply["path"]), reply["bytes"]

    top = pprof_top(reply["path"], "-lines")
    assert_match(/leak_a_little .*leaker\.rb:5\z/, top.first, top.join("\n"))
    # an estimate from a few dozen samples of 100000 strings of 1040 bytes
    # (104 MB); samples fall at random times, which favours slow
    # allocations, so only within a factor of a few: 19 runs at load 1.7-2.9
    # gave 300-982 MB (2.9-9.4 times), and a bound of 8 failed one run in
    # four (docs/hook.md)
    value, unit = top.first.match(/\A\s*([\d.]+)(kB|MB|GB)/).captures
    mb = value.to_f * { "kB" => 1.0 / 1024, "MB" => 1, "GB" => 1024 }.fetch(unit)
    assert_operator mb, :>, 104 / 8.0, top.first
    assert_operator mb, :<, 104 * 16.0, top.first
    objects = pprof_top(reply["path"], "-lines", "-sample_index=inuse_objects")
    assert_match(/leaker\.rb:5\z/, objects.first, objects.join("\n"))
  end

  def test_the_sampler_follows_objects_moved_by_gc_compact
    server = start_server
    worker = start_leaker(sampling: 1000)
    conn = server.wait_for("hello") { |e| e["name"] == "leaker" }["conn"]
    worker.wait_out(/leaked 100000/)

    worker_command(worker, "compact")
    m = worker.wait_out(/compacted compactions=(\d+) moved=(\d+) live=(\d+)/)
    assert_operator m[1].to_i, :>=, 2, "both compactions reached the table"
    assert_operator m[2].to_i, :>, 0, "compaction moved sampled objects"

    reply = server.request(conn, "heap_profile", path: "compacted.pb.gz")
    assert_equal "ok", reply["status"], reply["error"]
    top = pprof_top(reply["path"], "-lines", "-sample_index=inuse_objects")
    assert_match(/leaker\.rb:5\z/, top.first, "after GC.compact:\n#{top.join("\n")}")

    # Freed after they moved: a table still keyed by the old addresses would
    # never hear of these frees and would go on listing the leak.
    worker_command(worker, "free")
    worker.wait_out(/freed live=/)
    reply = server.request(conn, "heap_profile", path: "freed.pb.gz")
    assert_equal "ok", reply["status"], reply["error"]
    text = pprof_top(reply["path"], "-lines", empty: true).join("\n")
    refute_match(/leaker\.rb:5\b/, text)
  end

  def test_each_forked_puma_worker_profiles_its_own_allocations
    # TSan's runtime runs no signal handler in the child of a threaded
    # process (its fork support ends there: die_after_fork=0 only lets the
    # child go on), and the sampler arms by a timer's signal: a Puma worker
    # under TSan takes no sample. The tests below run under TSan.
    skip "TSan runs no signal handler in a child forked from threads" if TestPreload.tsan?
    server = start_server(heartbeat_ms: 1000)
    rackup = File.join(@dir, "config.ru")
    File.write(rackup, <<~RUBY)
      SESSIONS = []
      run lambda { |env|
        if env["PATH_INFO"] == "/leak"
          2_000.times { SESSIONS << ("s" * 2_000) }
        end
        [200, { "content-type" => "text/plain" }, ["pid=\#{Process.pid} sessions=\#{SESSIONS.size}\\n"]]
      }
    RUBY
    http = File.join(@dir, "puma.sock")
    puma = HookTest::Worker.new(@dir, name: "puma", env: hook_env(extra: { "MEMDIAG_ALLOCATION_SAMPLING" => "1000" }),
                                      command: [PUMA, "-w", "2", "-t", "1:1", "-b", "unix://#{http}", rackup])
    @workers << puma
    master = server.wait_for("hello") { |e| e["name"] == "puma" }
    workers = %w[puma/worker-1 puma/worker-2].to_h do |n|
      hello = server.wait_for("hello") { |e| e["name"] == n }
      [hello["pid"], hello]
    end
    puma.wait_out(/Worker 1 \(PID: \d+\) booted/)

    # Requests go to whichever worker accepts; leak until one has 20000.
    leaker_pid = nil
    200.times do
      body = http_get(http, "/leak")
      pid, sessions = body.match(/pid=(\d+) sessions=(\d+)/).captures.map(&:to_i)
      if sessions >= 20_000
        leaker_pid = pid
        break
      end
    end
    refute_nil leaker_pid, "no worker reached 20000 sessions"
    leaker = workers.fetch(leaker_pid)
    other = workers.values.find { |w| w["pid"] != leaker_pid }

    reply = server.request(leaker["conn"], "heap_profile", path: "worker.pb.gz")
    assert_equal "ok", reply["status"], reply["error"]
    # by objects: one sampled large object (a server's buffers) can weigh more
    # in bytes than the sessions' few dozen samples
    top = pprof_top(reply["path"], "-lines", "-sample_index=inuse_objects")
    assert_match(/config\.ru:4\z/, top.first, top.join("\n"))

    # The master never served a request: its table has no session.
    reply = server.request(master["conn"], "heap_profile", path: "master.pb.gz")
    assert_equal "ok", reply["status"], reply["error"]
    assert_operator File.size(reply["path"]), :>, 0
    sessions_in = ->(path) { pprof_top(path, "-lines").grep(/config\.ru:4\z/).first.to_s[/\A\s*([\d.]+)(k?B|MB)/, 1].to_f }
    assert_equal 0, sessions_in.call(reply["path"]), "the master's profile lists the workers' sessions"
    reply = server.request(other["conn"], "heap_profile", path: "other.pb.gz")
    assert_equal "ok", reply["status"], reply["error"]
    assert_equal 3, server.count("hello"), "no dump child or extra process registered"
    assert_match(/sessions=/, http_get(http, "/"), "Puma still serves")
  end

  # A profile after a heap dump gives, beside its own GC count, the GC
  # count at that dump: at its fork, not once it was written. The
  # collections the worker ran while a forked dump wrote (several under CPU
  # load) let the analysis take objects allocated meanwhile into slots
  # freed since the fork for the dump's (a decoy line named with 21 of 31
  # samples, 1 run in 4 of heap_profile_sampled_sites beside 3 busy loops).
  def test_the_profile_gives_the_gc_count_at_the_last_dump
    server = start_server
    worker = start_leaker
    conn = server.wait_for("hello") { |e| e["name"] == "leaker" }["conn"]
    worker.wait_out(/leaked 100000/)
    comment = profile_comment(server, conn, "first.pb.gz")
    assert_match(/gc_count \d+/, comment)
    refute_match(/dump_gc_count/, comment, "no dump taken yet")

    %w[fork inline].each do |mode|
      before = gc_count(worker, "#{mode}-before")
      dump = server.request(conn, "memory_dump", path: "heap-#{mode}.json", mode: mode)
      assert_equal "ok", dump["status"], dump["error"]
      assert_equal mode, dump["mode"]
      after = gc_count(worker, "#{mode}-after")
      worker_command(worker, "collect #{mode}")
      collected = worker.wait_out(/collected #{mode} after=(\d+)/)[1].to_i

      comment = profile_comment(server, conn, "#{mode}.pb.gz")
      at_dump = comment[/\bdump_gc_count (\d+)/, 1]
      refute_nil at_dump, "#{mode} dump: #{comment}"
      now = comment[/\bgc_count (\d+)/, 1].to_i
      assert_includes before..after, at_dump.to_i, "#{mode} dump: #{comment}"
      assert_operator now, :>=, collected, comment
      assert_operator now, :>=, at_dump.to_i + 3, "#{mode} dump: the 3 GC.start after it are not in it: #{comment}"
    end
  end

  def test_the_plugin_turns_sampling_off_through_the_welcome
    server = start_server(allocation_sampling: 0)
    worker = start_leaker
    conn = server.wait_for("hello") { |e| e["name"] == "leaker" }["conn"]
    worker.wait_err(/the plugin turned allocation sampling off \(AllocationSampling 0\)/)
    reply = server.request(conn, "heap_profile", path: "off.pb.gz")
    assert_equal "refused", reply["status"]
    assert_match(/allocation sampling is off in this worker/, reply["error"])
    refute File.exist?(File.join(@dumps, "off.pb.gz"))
  end

  def test_a_failure_in_the_sampler_turns_it_off_and_the_worker_runs_on
    server = start_server
    worker = start_leaker
    conn = server.wait_for("hello") { |e| e["name"] == "leaker" }["conn"]
    worker.wait_out(/leaked 100000/)
    worker_command(worker, "fail")
    worker.wait_err(/memdiag hook\[\d+\]: allocation sampling turned off: a test asked for it/)
    reply = server.request(conn, "heap_profile", path: "failed.pb.gz")
    assert_equal "error", reply["status"]
    assert_match(/allocation sampling was turned off in this worker: a test asked for it/, reply["error"])
    worker_command(worker, "alive")
    worker.wait_out(/alive 100000/)
    assert_equal "ok", server.request(conn, "ping", payload: "x")["status"]
  end

  # Samples at most `rate` a second of CPU time, whatever the thread the
  # timer's signal lands on: here the main thread, which sleeps in a
  # Queue#pop while another thread allocates (as Puma's and Sidekiq's main
  # threads do). The sampler used to arm only once that sleeper woke and
  # got the GVL back: 13 samples where the CPU time allowed 80.
  SLEEPING_MAIN = <<~RUBY
    $stdout.sync = true
    S = Memdiag::Hook::Sampler
    S.start(1000)
    KEEP = []
    q = Queue.new
    t0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    Thread.new do
      40.times { 2_500.times { KEEP << ("x" * 1000) }; sleep 0.03 }
      q << :done
    end
    q.pop
    cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - t0
    puts "samples=\#{S.stats[:samples]} gated=\#{S.stats[:gated]} cpu_ms=\#{(cpu * 1000).round}"
  RUBY

  def test_a_sleeping_main_thread_does_not_hold_samples_back
    worker = start_worker(SLEEPING_MAIN, env: { "RUBYOPT" => "-I#{HookTest::LIB} -rmemdiag/hook_native" })
    m = worker.wait_out(/samples=(\d+) gated=(\d+) cpu_ms=(\d+)/)
    samples, gated, cpu_ms = m.captures.map(&:to_i)
    allowed = cpu_ms # 1000 a second of CPU time
    assert_operator samples, :>=, allowed / 3, "#{m[0]}: the sampler took a third of what the CPU time allowed"
    assert_operator gated, :>, 0, "#{m[0]}: the CPU time, not the sleeping thread, set the pace"
  end

  # The end of a worker script sampling at 1000 a second: 40 rounds of
  # 2,500 strings of 1 KB with a pause between, then in $at_rate the state,
  # the samples taken meanwhile and the CPU time they took (AT_RATE_LINE).
  AT_RATE = <<~'RUBY'
    KEEP = []
    s0 = S.stats[:samples]
    t0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    40.times { 2_500.times { KEEP << ("x" * 1000) }; sleep 0.01 }
    cpu_ms = ((Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - t0) * 1000).round
    $at_rate = "state=#{S.stats[:state]} samples=#{S.stats[:samples] - s0} cpu_ms=#{cpu_ms}"
  RUBY
  AT_RATE_LINE = /state=(\S+) samples=(\d+) cpu_ms=(\d+)/

  # Sampling is on and took at least a third of the samples the CPU time
  # allowed at 1000 a second (line: the worker's AT_RATE_LINE).
  def assert_sampling_at_rate(line)
    state, samples, cpu_ms = line.match(AT_RATE_LINE).captures
    assert_equal "on", state, line
    assert_operator samples.to_i, :>=, cpu_ms.to_i / 3, "#{line}: the sampler took a third of what the CPU time allowed"
  end

  # Sampling started on a thread that then ends (a Thread.new { start }, as
  # an initializer run on a thread of its own does). The timer was aimed at
  # the thread that started it, so once that thread ended its signal reached
  # no one: 0 samples in 200 ms of CPU while the state still said "on".
  ENDED_STARTER = <<~RUBY
    $stdout.sync = true
    S = Memdiag::Hook::Sampler
    Thread.new { S.start(1000) }.join
    #{AT_RATE}
    puts $at_rate
  RUBY

  def test_sampling_outlives_the_thread_that_started_it
    worker = start_worker(ENDED_STARTER, env: { "RUBYOPT" => "-I#{HookTest::LIB} -rmemdiag/hook_native" })
    assert_sampling_at_rate(worker.wait_out(AT_RATE_LINE)[0])
  end

  # A failure inside an event (an allocation, a GC) stops sampling in two
  # halves: at once no more arming, and in a postponed job, at the failing
  # thread's (or fiber's) next interrupt check, the timer deleted and the
  # table freed. A Sampler.start between the two (a welcome's
  # AllocationSampling on the hook's thread, which the failing thread gave
  # the GVL before that check) was undone by that job: state "on" at the
  # new rate, no timer, no sample again, and a welcome with the same rate
  # changed nothing. Here both come from a finalizer, which Ruby runs in a
  # postponed job of its own when an allocation's GC found the object, so
  # that fail()'s job runs after the start every time (the old code: 0
  # samples in 3 runs of 3).
  RESTART_BEFORE_THE_FAILURE_JOB = <<~RUBY
    $stdout.sync = true
    S = Memdiag::Hook::Sampler
    S.start(1000)
    $restarted = nil
    fin = proc { $restarted ||= (S.simulate_failure("a test asked for it"); S.start(1000)) }
    20.times { Thread.new { ObjectSpace.define_finalizer(Object.new, fin) }.join }
    1000.times { break if $restarted; 10_000.times { Object.new } }
    #{AT_RATE}
    puts "restarted=\#{$restarted.inspect} \#{$at_rate}"
  RUBY

  def test_a_start_right_after_a_failure_is_not_undone_by_it
    worker = start_worker(RESTART_BEFORE_THE_FAILURE_JOB, env: { "RUBYOPT" => "-I#{HookTest::LIB} -rmemdiag/hook_native" })
    m = worker.wait_out(/restarted=(\S+) #{AT_RATE_LINE}/)
    assert_equal "true", m[1], "#{m[0]}: no finalizer ran"
    assert_sampling_at_rate(m[0])
  end

  # A prune asks ObjectSpace._id2ref about every entry, and Ruby code can
  # run inside that call: a TracePoint on :raise (error trackers have one)
  # sees the RangeError of every freed object, and another thread can take
  # the GVL there. Sampling stopped and started from it freed the table the
  # prune was walking: the worker died of a segmentation fault in
  # mdh_stab_filter (1 run in 1 on 8ce276e). The walked table is now freed
  # when the walk ends, and sampling goes on with the new one.
  STOP_INSIDE_PRUNE = <<~RUBY
    $stdout.sync = true
    S = Memdiag::Hook::Sampler
    S.start(100_000)
    keep = []
    20.times { 5_000.times { keep << ("y" * 100) }; 20_000.times { Object.new } }
    keep = nil
    GC.start
    before = S.stats[:live]
    stopped = 0
    tp = TracePoint.new(:raise) do
      next unless stopped.zero?
      stopped += 1
      S.stop
      S.start(1000)
      200.times { Object.new }
    end
    tp.enable
    S.prune
    tp.disable
    #{AT_RATE}
    puts "stopped=\#{stopped} before=\#{before} live=\#{S.prune} \#{$at_rate}"
  RUBY

  def test_sampling_stopped_inside_a_prune_leaves_the_worker_running
    worker = start_worker(STOP_INSIDE_PRUNE, env: { "RUBYOPT" => "-I#{HookTest::LIB} -rmemdiag/hook_native" })
    m = worker.wait_out(/stopped=(\d+) before=(\d+) live=(\d+) #{AT_RATE_LINE}/)
    assert worker.wait.success?, "the worker did not survive: #{worker.out}"
    assert_equal "1", m[1], "#{m[0]}: no freed entry raised inside the prune"
    assert_operator m[2].to_i, :>=, 100, "#{m[0]}: too few entries to walk"
    assert_operator m[3].to_i, :>=, 1, "#{m[0]}: the leaked strings are not in the new table"
    assert_sampling_at_rate(m[0])
  end

  # Start, stop, pause, resume, restart after a failure and profile, 300
  # times, at rates that keep it often armed, while three threads allocate
  # and drop objects: the worker runs on, and a last start samples at its
  # rate. (What it can show is a crash or a stuck sampler; under make
  # check-asan a use of freed state too.)
  START_STOP_STRESS = <<~RUBY
    $stdout.sync = true
    S = Memdiag::Hook::Sampler
    $done = false
    threads = Array.new(3) do |t|
      Thread.new do
        keep = []
        until $done
          500.times { keep << ("t\#{t}" * 20) }
          keep.shift(450)
          Thread.pass # the main thread's turn comes within a batch, not a time slice
        end
      end
    end
    300.times do |i|
      case i % 6
      when 0 then S.start(10_000)
      when 1 then S.simulate_failure("stress"); S.start(5_000)
      when 2 then S.pause; S.resume
      when 3 then S.profile
      when 4 then S.stop
      else S.start(0); S.start(20_000)
      end
      sleep 0.002
    end
    $done = true
    threads.each(&:join)
    S.start(1000)
    #{AT_RATE}
    puts $at_rate
  RUBY

  def test_starts_and_stops_while_threads_allocate
    worker = start_worker(START_STOP_STRESS, env: { "RUBYOPT" => "-I#{HookTest::LIB} -rmemdiag/hook_native" })
    m = worker.wait_out(AT_RATE_LINE, timeout: 120)
    assert worker.wait.success?, "the worker did not survive: #{worker.out}"
    assert_sampling_at_rate(m[0])
  end

  # A child forked while the sampler's tracepoint is armed: the tracepoint
  # is the parent's memory and stays armed in the child until its next
  # allocation. The child used to forget it was armed and never disarmed
  # it: it sampled every allocation its finish jobs let through (3,119
  # samples for 67 ms of CPU, 1 fork in 5). The parent samples at the
  # highest rate, so that it is often armed when it forks; each of 60
  # children, at 1000 a second (as a welcome's AllocationSampling sets),
  # stays within its CPU time's share.
  FORKS = <<~RUBY
    $stdout.sync = true
    S = Memdiag::Hook::Sampler
    S.start(100_000)
    KEEP = []
    60.times do
      2_000.times { KEEP << ("y" * 100) }
      r, w = IO.pipe
      pid = fork do
        S.after_fork
        S.start(1000)
        t0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
        mine = []
        20_000.times { mine << ("x" * 1000) }
        cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - t0
        w.puts "\#{S.stats[:samples]} \#{(cpu * 1000).round}"
        exit!(0)
      end
      w.close
      Process.wait(pid)
      puts "child samples=\#{r.read.strip.sub(' ', ' cpu_ms=')}"
    end
    puts "done"
  RUBY

  def test_a_child_forked_while_armed_samples_at_its_rate
    worker = start_worker(FORKS, env: { "RUBYOPT" => "-I#{HookTest::LIB} -rmemdiag/hook_native" })
    worker.wait_out(/^done$/, timeout: 120)
    children = worker.out.scan(/child samples=(\d+) cpu_ms=(\d+)/).map { |a| a.map(&:to_i) }
    assert_equal 60, children.size, worker.out
    children.each do |samples, cpu_ms|
      assert_operator samples, :<=, 2 * cpu_ms + 10, "a child sampled #{samples} allocations in #{cpu_ms} ms of CPU"
    end
  end

  # A thread other than the timer's (here the main thread, asleep in a
  # join) allocates, so that the timer's signal is passed on to it, and then
  # execs: a signal passed on while it exec'd stayed pending into the new
  # program, whose default action for SIGRTMIN+6 ended it (29 execs in 30 at
  # 10000 a second with these 1.4 MB of arguments, 2 in 40 at the default
  # 100). Passed on as a timer's signal, the exec drops it.
  EXEC_FROM_THREAD = <<~RUBY
    Memdiag::Hook::Sampler.start(10_000)
    args = Array.new(12) { "a" * 120_000 }
    keep = []
    Thread.new do
      t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      keep << ("x" * 100) while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 < 0.3
      # (not a sanitizer runtime preloaded: libtsan kills sh)
      exec({ "LD_PRELOAD" => nil }, "/bin/sh", "-c", "echo exec ran", "sh", *args)
    end.join
  RUBY

  def test_an_exec_from_a_thread_the_signal_is_passed_on_to_runs_its_program
    env = { "RUBYOPT" => "-I#{HookTest::LIB} -rmemdiag/hook_native" }
    10.times do |i|
      worker = start_worker(EXEC_FROM_THREAD, name: "exec#{i}", env: env)
      status = worker.wait
      assert status.success?, "exec #{i + 1} of 10: #{status.inspect} (SIGRTMIN+6 is signal 40)"
      assert_equal "exec ran\n", worker.out
    end
  end

  private

  def start_leaker(sampling: nil)
    extra = sampling ? { "MEMDIAG_ALLOCATION_SAMPLING" => sampling.to_s } : {}
    r, w = IO.pipe
    worker = start_worker(LEAKER, name: "leaker", env: hook_env(name: "leaker", extra: extra), stdin: r)
    r.close
    @commands ||= {}
    @commands[worker] = w
    worker
  end

  def worker_command(worker, cmd)
    @commands.fetch(worker).puts(cmd)
    @commands.fetch(worker).flush
  end

  # GC.count in the worker, read by a command (tag: a name for its line).
  def gc_count(worker, tag)
    worker_command(worker, "count #{tag}")
    worker.wait_out(/count #{tag}=(\d+)/)[1].to_i
  end

  # The comment of a heap profile the worker writes now, as
  # `go tool pprof -comments` prints it.
  def profile_comment(server, conn, path)
    reply = server.request(conn, "heap_profile", path: path)
    assert_equal "ok", reply["status"], reply["error"]
    out = IO.popen([GO, "tool", "pprof", "-comments", reply["path"]], err: %i[child out], &:read)
    assert $?.success?, "go tool pprof failed:\n#{out}"
    out[/^memdiag heap profile: .*$/] || flunk("no memdiag comment:\n#{out}")
  end

  # The rows of `go tool pprof -top`, biggest first.
  def pprof_top(path, *flags, empty: false)
    out = IO.popen([GO, "tool", "pprof", "-top", *flags, path], err: %i[child out], &:read)
    assert $?.success?, "go tool pprof failed:\n#{out}"
    rows = out.lines.map(&:chomp).drop_while { |l| l !~ /\A\s*flat\s+flat%/ }.drop(1)
    refute_empty rows, "no rows:\n#{out}" unless empty
    rows
  end
end
