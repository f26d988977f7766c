# The plain shapes the families mix with steps and sawtooth, on their own
# (docs/detector.md, "What the second stop of 2026-12-04 changed"): 400
# exponential warm-ups without steps, spikes or sawtooth (time constant
# 10-60 min, log-uniform; plateau at 60-80 % of the limit from 80-300 MiB;
# noise +-1-10 MiB: the issue's false alarm, a warm-up that climbs like a
# leak for the first quarter hour) and 400 fast leaks of 8-15 MiB/min from
# 100-330 MiB under the same noise, every other one under a GC sawtooth
# (30-300 s, 10-60 MiB), per seed; 3 hours each, 10 s samples. A tool, not
# a test:
#
#   MEMDIAG_CTL=build/plugin/memdiagctl ruby plain_table.rb [SEED ...]
#
# (seeds 99, 100 and 101 when none is given; anything but a whole number is
# refused with a usage line, exit 2). Prints, per seed, the warm-ups that
# fire and the leaks that meet the lead asked (FamilyReplay.lead_needed).
require "tmpdir"
require_relative "family_replay"
require_relative "../../data/traces/families"

module PlainTable
  def self.draw(seed)
    rng = Random.new(seed)
    u = ->(lo, hi) { lo + (hi - lo) * rng.rand }
    warm = Array.new(400) do
      tau = Math.exp(u.call(Math.log(10), Math.log(60)))
      plateau = u.call(0.6, 0.8) * 1024
      { "kind" => "warmup", tau_s: (tau * 60).round, plateau_mib: plateau,
        base_mib: [u.call(80, 300), plateau - 60].min, noise_mib: u.call(1, 10) }
    end
    leaks = Array.new(400) do |i|
      p = { "kind" => "fast-leak", "variant" => "plain", rate_mib_min: u.call(8, 15),
            base_mib: u.call(100, 330), noise_mib: u.call(1, 10) }
      if i.odd?
        p["variant"] = "sawtooth"
        p[:saw_period] = u.call(30, 300).round
        p[:saw_amp] = u.call(10, 60)
        p[:saw_phase] = (rng.rand * p[:saw_period]).round
      end
      p
    end
    warm + leaks
  end

  # Replays the draw of seed (only the traces whose index is in `only`, when
  # given: warm-ups are 0-399, leaks 400-799); returns [params, limit_s,
  # summary] per trace, in no order.
  def self.run(ctl, seed, only: nil)
    Dir.mktmpdir do |dir|
      jobs = draw(seed).each_with_index.select { |_, i| only.nil? || only.include?(i) }
      FamilyReplay.parallel(jobs) do |p, i|
        path = File.join(dir, "#{i}.csv")
        limit_s = Families.write_trace(path, p["kind"], p, Noise.new(Families.noise_seed(seed, i)),
                                       seconds: 3 * 3600, stop_at_limit: true)
        [p, limit_s, FamilyReplay.replay(ctl, path).last]
      end
    end
  end

  def self.line(seed, rows)
    warm = rows.select { |p, _, _| p["kind"] == "warmup" }
    fired = warm.count { |_, _, s| s["captures"].positive? }
    met = lambda do |variant|
      set = rows.select { |p, _, _| p["variant"] == variant }
      ok = set.count do |p, limit_s, s|
        s["lead_time_s"] && s["lead_time_s"] >= FamilyReplay.lead_needed("limit_s" => limit_s)
      end
      "#{ok} of #{set.size}"
    end
    "seed #{seed}: warm-ups firing #{fired} of #{warm.size}; leaks meeting the lead: " \
      "plain #{met.call('plain')}, under a sawtooth #{met.call('sawtooth')}"
  end
end

if $PROGRAM_NAME == __FILE__
  usage = "MEMDIAG_CTL=memdiagctl ruby plain_table.rb [SEED ...]"
  seeds = ARGV.empty? ? [99, 100, 101] : ARGV.map { |a| Integer(a, exception: false) }
  if seeds.any?(&:nil?)
    warn "usage: #{usage}"
    exit 2
  end
  ctl = FamilyReplay.ctl_from_env(usage)
  seeds.each { |s| puts PlainTable.line(s, PlainTable.run(ctl, s)) }
end
