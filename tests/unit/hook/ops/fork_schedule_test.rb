# frozen_string_literal: true

require_relative "helper"
require "rbconfig"

# Where the dump child competes for a CPU (issue 24): in a session of its own,
# so that on a host with autogroups it shares the host with other sessions
# instead of starving behind the worker's own threads; below the worker where
# both stay in one cpu cgroup; gone when the worker is; and a slow dump says
# whether it waited for a CPU.
class ForkScheduleTest < Minitest::Test
  include OpsTestHelper

  Runner = Memdiag::Hook::Ops::ForkRunner

  # [session, nice] of a process, from /proc/PID/stat.
  def session_and_nice(pid)
    fields = File.read("/proc/#{pid}/stat").split(") ").last.split
    [fields[3].to_i, fields[16].to_i]
  rescue SystemCallError
    nil
  end

  def test_the_dump_child_has_a_session_of_its_own_below_the_workers_priority
    # held (helper.rb), the child is mid-dump until the watcher has seen it:
    # it calls setsid and setpriority just after the fork, so the figures
    # seen are the ones it dumps with
    target = held_target("sched.json")
    seen = nil
    watcher = when_child_appears do |pid|
      while (now = session_and_nice(pid))
        seen = now
        break if now[0] != Process.getsid && now[1] == Runner::CHILD_NICE

        sleep 0.001
      end
    ensure
      target.release
    end
    assert_ok(call("memory_dump", stream_target: target, mode: "fork"))
    watcher.join
    refute_nil seen, "the dump child was never seen"
    refute_equal Process.getsid, seen[0], "the dump child stayed in the worker's session"
    assert_equal 5, seen[1], "the dump child's nice value"
  end

  def test_a_slow_dump_says_how_long_its_child_ran_and_waited_for_a_cpu
    threshold = Runner::SLOW_DUMP_US
    Runner.send(:remove_const, :SLOW_DUMP_US)
    Runner.const_set(:SLOW_DUMP_US, 0) # every dump is "slow"
    reply = assert_ok(call("memory_dump", path: "slow.json", mode: "fork"))
    assert_match(/\Athe fork dump took \d+\.\d s: its child ran \d+\.\d s and waited \d+\.\d s for a CPU/,
                 reply[:note])
  ensure
    Runner.send(:remove_const, :SLOW_DUMP_US)
    Runner.const_set(:SLOW_DUMP_US, threshold)
  end

  WORKER = <<~RUBY
    require "memdiag/hook/operations"
    child_file = ARGV.fetch(0)
    Memdiag::Hook::Ops::ForkRunner.new.run(0) do
      File.write(child_file + ".tmp", Process.pid.to_s)
      File.rename(child_file + ".tmp", child_file)
      sleep 300
      "slept"
    end
  RUBY

  def test_the_dump_child_leaves_when_the_worker_is_killed
    child_file = File.join(@dir, "child.pid")
    lib = File.expand_path("../../../../worker-hook/ruby/lib", __dir__)
    worker = Process.spawn(RbConfig.ruby, "-I", lib, "-e", WORKER, child_file)
    sleep 0.01 until File.exist?(child_file) || Process.waitpid(worker, Process::WNOHANG)
    child = Integer(File.read(child_file))
    Process.kill(:KILL, worker)
    Process.waitpid(worker)
    # the child reads end-of-file on its lifeline; 10 s is only a bound on a
    # test that would otherwise wait for its 300 s sleep
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    sleep 0.01 while running?(child) && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    refute running?(child), "the dump child outlived the worker killed with SIGKILL"
  ensure
    begin
      Process.kill(:KILL, child) if child && running?(child)
    rescue Errno::ESRCH
      nil
    end
  end

  # A worker whose other threads fork while a dump runs (a server starting
  # workers, a job runner): its children inherit whatever the worker holds
  # open that is not close-on-exec, and a fork without exec keeps it all.
  # The dump child dumps the worker's heap to /dev/null over and over (a
  # real dump, holding the GVL as dump_all does), so it would run for good.
  FORKING_WORKER = <<~RUBY
    require "memdiag/hook/operations"
    child_file, kin_file = ARGV.fetch(0), ARGV.fetch(1)
    $keep = Array.new(50_000) { |i| "object \#{i}" }
    Thread.new do
      Memdiag::Hook::Ops::ForkRunner.new.run(0) do
        File.write(child_file + ".tmp", Process.pid.to_s)
        File.rename(child_file + ".tmp", child_file)
        loop { File.open(File::NULL, "w") { |io| ObjectSpace.dump_all(output: io) } }
      end
    end
    sleep 0.01 until File.exist?(child_file)
    forked = Process.fork { sleep 300 }
    spawned = Process.spawn("sleep", "300")
    File.write(kin_file + ".tmp", "\#{forked} \#{spawned}")
    File.rename(kin_file + ".tmp", kin_file)
    sleep
  RUBY

  def test_the_dump_child_leaves_when_a_worker_that_forked_during_the_dump_is_killed
    child_file = File.join(@dir, "child.pid")
    kin_file = File.join(@dir, "kin.pid")
    lib = File.expand_path("../../../../worker-hook/ruby/lib", __dir__)
    worker = Process.spawn(RbConfig.ruby, "-I", lib, "-e", FORKING_WORKER, child_file, kin_file)
    sleep 0.01 until File.exist?(kin_file) || Process.waitpid(worker, Process::WNOHANG)
    child = Integer(File.read(child_file))
    kin = File.read(kin_file).split.map { |pid| Integer(pid) }
    assert running?(child), "the dump child ended before the worker was killed"
    Process.kill(:KILL, worker)
    Process.waitpid(worker)
    # the worker's own children live on (they hold what it held); the dump
    # child must not: 10 s is only a bound on a test that would otherwise
    # wait for good
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    sleep 0.01 while running?(child) && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    assert kin.all? { |pid| running?(pid) }, "a child of the worker ended: the test proves nothing"
    refute running?(child), "the dump child outlived the worker killed with SIGKILL while the " \
                            "worker's own children lived"
  ensure
    [child, *kin].compact.each do |pid|
      Process.kill(:KILL, pid) if running?(pid)
    rescue Errno::ESRCH
      nil
    end
  end

  # Alive and not a zombie waiting for its new parent to reap it.
  def running?(pid)
    state = File.read("/proc/#{pid}/stat").split(") ").last.split.first
    state != "Z"
  rescue SystemCallError
    false
  end
end
