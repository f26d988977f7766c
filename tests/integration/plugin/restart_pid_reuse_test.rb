# RestartAfterCapture signals only the process that registered (issue 11).
# A worker at MemoryLimit is asked for its dump; it forks, leaves the
# connection to the child and exits; a victim (`sleep 600`) is given the
# worker's PID through ns_last_pid; then the child answers the dump. The
# plugin must not signal the victim (before pidfds it did: kill(pid)
# reached whoever held the PID), and says why in the log.
require_relative "helper"

class RestartPidReuseTest < PluginTest::Case
  NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"

  def running?(pid) = Process.waitpid(pid, Process::WNOHANG).nil?

  def test_restart_pid_reuse
    skip "#{NS_LAST_PID} is not writable (needs root)" unless File.writable?(NS_LAST_PID)

    start(<<~KEYS)
      MemoryLimit "32M"
      RestartAfterCapture true
      Plan "dump"
      CaptureDirectory "#{site.dir}/captures"
    KEYS
    go = File.join(site.dir, "go")
    handoff = site.test_worker("handoff", "--allocate-mb", 64, "--handoff-on-dump", go)
    pid = handoff.pid
    wait("the worker is asked to dump") { handoff.output.match?(/^handed off/) }
    handoff.wait # reaped: its PID is free

    victim = nil
    500.times do
      File.write(NS_LAST_PID, (pid - 1).to_s)
      v = Process.spawn("sleep", "600")
      if v == pid
        victim = v
        break
      end
      Process.kill("TERM", v)
      Process.waitpid(v)
    end
    refute_nil victim, "could not give pid #{pid} to a victim (other processes kept taking it)"
    site.adopt(victim)
    puts "victim sleep 600 holds pid #{pid}"

    FileUtils.touch(go) # the child answers the dump request now
    wait("the plugin signals or says why not") { site.log_has?(/not sending SIGTERM|sent SIGTERM/) }
    assert running?(victim), "the victim holding pid #{pid} was signalled"
    assert site.log_has?("not sending SIGTERM to worker handoff (pid #{pid}): the process that registered has exited"),
           "no log line says why the worker was not signalled"
    refute site.log_has?("sent SIGTERM"), "a signal was reported sent"
    assert_collectd_alive
  end
end
