# A capture must never be the cause of the kill. A fork's copy-on-write
# pages are charged to the worker's cgroup: a worker whose cgroup is at
# about 90 % of its limit must not fork for its heap dumps. DumpMode auto in
# a memory-limited cgroup is decided by the plugin from the cgroup's room
# (limit - charge - ForkMargin) against the fork's copy-on-write estimate,
# and capture.json says which it chose and why. Two workers with the same
# ballast (drawn each run), captured by memdiagctl: one in a cgroup at about
# 90 % of its limit (inline, the capture completes, no OOM kill), one in a
# cgroup with room for the fork (fork). The detector is kept out of it
# (NearLimit 0) so the operator's captures are the only ones.
require_relative "helper"

class ContainersTightTest < Minitest::Test
  include Containers::Test

  def setup
    start_bench("containers-tight", <<~KEYS)
      NearLimit 0
      DumpMode auto
      Plan "dump wait dump"
      CaptureInterval 2
      CaptureConcurrency 2
      HeartbeatInterval 1
    KEYS
  end

  def test_auto_does_not_fork_near_the_cgroups_limit
    ballast = Containers.rand_mib(180..240)
    tight = cgroup
    roomy = cgroup
    wt = @bench.start_worker("tight", cgroup: tight, ballast: ballast)
    wr = @bench.start_worker("roomy", cgroup: roomy, ballast: ballast)
    # The limits from what the kernel charges once the ballast is held: the
    # tight one at 90 % of it, the roomy one with room for a fork.
    tight_limit = (tight.charge / 0.9 / Containers::MiB).round * Containers::MiB
    roomy_limit = 4 * tight_limit
    tight.limit = tight_limit
    roomy.limit = roomy_limit
    fill = tight.charge.to_f / tight_limit
    puts format("# ballast %d MiB: tight cgroup at %.1f %% of %d MiB, roomy at %.1f %% of %d MiB",
                ballast / Containers::MiB, 100 * fill, tight_limit / Containers::MiB,
                100.0 * roomy.charge / roomy_limit, roomy_limit / Containers::MiB)
    @bench.site.wait_until("both limits are seen") do
      [[wt, tight_limit], [wr, roomy_limit]].all? do |w, l|
        @bench.site.workers_json.find { |x| x["pid"] == w.pid }&.dig("memory_limit") == l
      end
    end
    assert_operator fill, :>, 0.8, "the tight cgroup is near its limit"
    assert_operator fill, :<, 0.97

    [wt, wr].each do |w|
      r = @bench.capture(w)
      assert r.ok?, r.to_s
    end
    results = { wt => [tight, "inline", "<"], wr => [roomy, "fork", ">="] }.map do |w, (cg, chosen, cmp)|
      dir, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }
      assert_equal true, m["complete"], JSON.pretty_generate(m)
      mode = m["dump_mode"]
      refute_nil mode, "capture.json says how DumpMode auto chose: #{JSON.pretty_generate(m)}"
      assert_equal({ "configured" => "auto", "chosen" => chosen, "by" => "plugin" }, mode.slice("configured", "chosen", "by"))
      assert_match(/\Acgroup #{Regexp.escape(cg.path)} room -?\d+(\.\d+)? MiB \(limit [\d.]+ MiB - charge [\d.]+ MiB - margin [\d.]+ MiB\) #{cmp} copy-on-write estimate [\d.]+ MiB .*: #{chosen}\z/,
                   mode["reason"])
      dumps = m["steps"].select { |s| s["step"] == "dump" && s["status"] == "ok" }
      assert_equal 2, dumps.size, JSON.pretty_generate(m["steps"])
      dumps.each { |s| assert File.file?(File.join(dir, s["file"])), s["file"] }
      [w.name, mode["reason"]]
    end
    assert_equal 0, tight.oom_kills, "the capture did not cause a kill"
    assert wt.alive?
    assert wr.alive?
    results.each { |n, why| puts "# #{n}: #{why}" }
  end
end
