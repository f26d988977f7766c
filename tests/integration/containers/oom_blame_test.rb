# An OOM kill is a worker's only when the evidence ties it to the worker:
# an unrelated kill is never blamed on a worker that ends at the same moment.
# In a real memory cgroup, beside a hooked worker, a process the plugin
# does not know (a hog) grows into the cgroup's limit and the kernel's OOM
# killer ends it (the cgroup's oom_kill count rises). Within a few
# milliseconds of that kill, well inside one read interval, the worker ends
# on its own:
# - it exits with status 0 (SIGTERM: exit!(0)): a clean exit is never an
#   OOM kill, whatever its cgroup counted;
# - it is SIGKILLed by someone else (a supervisor's kill -9): the kernel's
#   log names the hog's PID, not the worker's.
# Either way no FAILURE notification names it, `memdiagctl status` counts
# no OOM kill, and the log says why the counted kill is not the worker's.
# (Before, both were reported as "killed by the kernel's OOM killer": the
# cgroup's count had risen and the worker was gone.) containers_oom checks
# that a worker the kernel does kill is still reported.
require_relative "helper"

class ContainersOomBlameTest < Minitest::Test
  include Containers::Test

  # A hog: grows 8 MiB every 20 ms (pages written, charged) until killed.
  HOG = 'a = []; loop { a << Array.new(1 << 20, 1); sleep 0.02 }'

  def setup
    start_bench("containers-oom-blame", "HeartbeatInterval 1\n")
  end

  def test_a_clean_exit_beside_another_process_oom_kill_is_not_an_oom_kill
    pid = run_beside_a_hog("blame-clean") { |p| Process.kill("TERM", p) }
    assert_not_blamed("blame-clean", pid, "it exited with status 0")
    assert_equal 0, @status.exitstatus, @status.inspect
  end

  def test_a_sigkill_beside_another_process_oom_kill_is_not_an_oom_kill
    pid = run_beside_a_hog("blame-kill9") { |p| Process.kill("KILL", p) }
    assert_not_blamed("blame-kill9", pid, "the kernel's log names no OOM kill of pid #{pid}")
    assert_equal 9, @status.termsig, @status.inspect
  end

  private

  # Starts the worker and the hog in one cgroup; the moment the kernel has
  # killed the hog, ends the worker with the block. Returns the worker's PID
  # (not reaped yet: the plugin reads a zombie's exit code on any kernel, a
  # reaped process's only from Linux 6.15).
  def run_beside_a_hog(name)
    cg = cgroup(limit: Containers.rand_mib(120..160))
    @cg = cg
    w = @bench.start_worker(name, cgroup: cg)
    site = @bench.site
    site.wait_until("#{name}'s cgroup is sampled") do
      site.workers_json.find { |x| x["pid"] == w.pid }&.dig("memory_limit_source") == "cgroup"
    end
    assert_equal 0, cg.oom_kills
    hog = Process.spawn(*cg.join_command(E2E::RUBY, "-e", HOG), out: File::NULL, err: File::NULL)
    hog_status = nil
    deadline = Time.now + E2E::WAIT
    until (hog_status = Process.waitpid2(hog, Process::WNOHANG)&.last)
      raise "the hog was not killed within #{E2E::WAIT} s" if Time.now > deadline

      sleep 0.005
    end
    yield w.pid
    assert_equal 9, hog_status.termsig, "the kernel's OOM killer ended the hog: #{hog_status.inspect}"
    assert_equal 1, cg.oom_kills, "one OOM kill in #{cg.path}"
    @bench.site.workers.delete(w)
    w.pid
  end

  def assert_not_blamed(name, pid, why)
    site = @bench.site
    # what the plugin concluded, either way
    line = site.wait_until("the plugin says whether #{name} was OOM-killed") do
      site.plugin_log.lines.find do |l|
        l.include?("('#{name}' pid #{pid}) gone: not an OOM kill") ||
          l.include?("('#{name}' pid #{pid}) killed by the kernel's OOM killer")
      end
    end
    puts "# #{line.strip}"
    assert_equal [], @bench.oom_notes.map(&:message), "no FAILURE notification of an OOM kill"
    assert_includes line, "(#{why}); the OOM kill counted in cgroup #{@cg.path} was another process's"
    refute_match(/killed by the kernel's OOM killer/, site.plugin_log)
    st = site.ctl("status")
    assert st.ok?, st.to_s
    assert_match(/^oom kills: 0$/, st.out)
  ensure
    # reaped once the plugin has read how it ended
    @status = Process.waitpid2(pid)&.last
  end
end
