# Four workers under one limit, as Puma's workers share their container's:
# a pod cgroup limited to 400 MiB holds a container cgroup (no limit of its
# own) with four hooked workers. Three hold a steady ballast (55-70 MiB each,
# taken before they register, drawn each run): the four start at about
# two thirds of the limit. One leaks 1.5-2 MiB/s, so the cgroup reaches its
# limit a minute or so after the leak is seen, while the leaker's own RSS
# would take minutes more. Projected from the worker's RSS alone, the plan
# keeps its full waits and the kernel kills the worker mid-capture; the
# plugin projects on the cgroup's charge against the limit it inherits, so
# the plan fits the time the cgroup has left, and the capture of the leaking
# worker completes before the kernel kills anyone.
# Which of the four leaks is drawn each run, so the order of registration
# decides nothing.
require_relative "helper"
require "time"

class ContainersSharedTest < Minitest::Test
  LIMIT = 400 * Containers::MiB

  def setup
    reason = Containers.skip_reason
    skip reason if reason
    @bench = Containers::Bench.new("containers-shared", <<~KEYS)
      ShortWindow "60s"
      GrowthWindow "10min"
      HeartbeatInterval 1
    KEYS
    @pod = Containers::Cgroup.new(limit: LIMIT)
    @container = Containers::Cgroup.new(parent: @pod)
  end

  def teardown
    @pod&.destroy
    @bench&.cleanup
  end

  def test_the_leaking_worker_of_four_is_captured_before_the_shared_limit
    rate = rand(1.5..2.0).round(2)
    leaker = rand(4)
    names = Array.new(4) { |i| "puma-#{rand(100..999)}-#{i}" }
    workers = names.each_with_index.map do |name, i|
      if i == leaker
        @bench.start_worker(name, cgroup: @container, rate: (rate * Containers::MiB).round, max: LIMIT)
      else
        @bench.start_worker(name, cgroup: @container, ballast: Containers.rand_mib(55..70))
      end
    end
    assert_equal workers.map(&:pid).sort, @container.procs.sort
    w = workers[leaker]
    site = @bench.site
    puts format("# %s leaks %.2f MiB/s; the cgroup holds %.1f MiB at start", w.name, rate,
                @pod.charge.to_f / Containers::MiB)

    # Each worker's limit is the pod's, inherited by its container cgroup.
    site.wait_until("every worker has the pod's limit") do
      entries = site.workers_json.select { |x| workers.map(&:pid).include?(x["pid"]) }
      entries.size == 4 && entries.all? { |x| x["memory_limit"] == LIMIT && x["memory_limit_source"] == "cgroup" }
    end

    dir, m = @bench.wait_manifest(w, "the leaker's plan ended", timeout: 6 * E2E::WAIT) { |x| x["end"] }
    charge_then = @pod.charge
    assert_equal 0, @pod.oom_kills, "nobody was killed before the capture ended"
    assert workers.all?(&:alive?), "all four alive when the capture ended"
    assert_equal true, m["complete"], JSON.pretty_generate(m)
    assert_equal w.pid, m["worker"]["pid"]
    assert_operator m["steps"].count { |s| s["step"] == "dump" && s["status"] == "ok" }, :>=, 2
    workers.each_with_index do |x, i|
      next if i == leaker

      assert_empty @bench.folders(x), "#{x.name} (steady) was not captured"
    end
    leaked = File.read(w.tick_file).to_i
    m["steps"].select { |x| x["step"] == "wait" }.each { |x| puts "# wait: #{x['note']}" }
    puts format("# capture of %s ended at cgroup charge %.1f MiB of %d MiB, the leaker's RSS %.1f MiB " \
                "(%.1f MiB leaked); trigger: %s", w.name, charge_then.to_f / Containers::MiB,
                LIMIT / Containers::MiB, w.vm_rss_bytes.to_f / Containers::MiB, leaked.to_f / Containers::MiB,
                m["trigger"]["reason"])
    # The leaker alone was far from the limit: its RSS could not have fired it.
    assert_operator w.vm_rss_bytes, :<, 0.75 * LIMIT
    assert File.directory?(dir)
  end
end
