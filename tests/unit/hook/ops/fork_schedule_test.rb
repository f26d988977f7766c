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
    @heap = big_heap
    seen = nil
    watcher = when_child_appears do |pid|
      # the child calls setsid and setpriority just after the fork: the last
      # figures read before it ends are the ones it dumped with
      while (now = session_and_nice(pid))
        seen = now
        break if now[0] != Process.getsid && now[1] == Runner::CHILD_NICE

        sleep 0.001
      end
    end
    assert_ok(call("memory_dump", path: "sched.json", mode: "fork"))
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

  # Alive and not a zombie waiting for its new parent to reap it.
  def running?(pid)
    state = File.read("/proc/#{pid}/stat").split(") ").last.split.first
    state != "Z"
  rescue SystemCallError
    false
  end
end
