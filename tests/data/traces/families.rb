# Families of synthetic traces for the detector (issue 23): many traces
# drawn over ranges of parameters from a seeded generator, so that a test
# checks a class of shapes, not a handful of curves. Made at test time by
#
#   ruby tests/data/traces/generate.rb --family warmup|fast-leak \
#        [--seed N] [--count N] [--ranges standard|held-out]
#        [--noise uniform|normal] [--step S] OUTDIR
#
# which writes OUTDIR/<family>-NNN.csv (collectd csv, one sample every 10 s,
# or every S seconds with --step, from epoch 1790000000, bytes) and
# OUTDIR/<family>.json: one object per trace with its parameters and, for
# leaks, when the series reaches 1 GiB.
#
# warmup: an exponential approach y = base + rise * (1 - exp(-t / tau)) to a
#   plateau (base + rise) at 30-80 % of the limit, tau 5-60 min, with noise,
#   often a GC sawtooth above it, sometimes spikes, and in some traces the
#   approach arrives in steps (a quantised curve) or with a few extra steps
#   of 10-40 MiB (loaded caches). 6 hours each. None may fire.
# fast-leak: 8-15 MiB/min from start, reaching 1 GiB within about 1-2 hours;
#   plain, under a GC sawtooth, under a warm-up that runs with the leak from
#   start, or after a warm-up (the leak starting 5-20 min in). Stops at the
#   first sample at or above 1 GiB.
#
# The noise is uniform within +-noise_mib, or with --noise normal of a
# normal's shape and the same variance (NormalNoise).
#
# The held-out ranges draw from the same classes differently (log-uniform
# time constants, wider bases, sawtooth periods and noise) for a check on
# traces nobody tuned against; the standard family uses its own seeds.
require "fileutils"
require "json"
require_relative "noise"

module Families
  MIB = 1024.0 * 1024.0
  LIMIT = 1024 * MIB
  STEP = 10
  T0 = 1_790_000_000

  RANGES = {
    "standard" => {
      tau_min: [5.0, 60.0], tau_log: false, plateau: [0.30, 0.80], base: [80.0, 300.0],
      noise: [1.0, 6.0], saw_p: 0.5, saw_period: [60.0, 420.0], saw_amp: [5.0, 60.0],
      rate: [8.0, 15.0], leak_base: [150.0, 300.0], warm_height: [50.0, 250.0],
      warm_tau: [2.0, 10.0], leak_start: [5.0, 20.0]
    },
    "held-out" => {
      tau_min: [5.0, 60.0], tau_log: true, plateau: [0.30, 0.80], base: [50.0, 350.0],
      noise: [0.5, 10.0], saw_p: 0.7, saw_period: [30.0, 600.0], saw_amp: [5.0, 80.0],
      rate: [8.0, 15.0], leak_base: [100.0, 330.0], warm_height: [30.0, 300.0],
      warm_tau: [2.0, 15.0], leak_start: [3.0, 25.0]
    }
  }.freeze

  def self.uniform(rng, (lo, hi))
    lo + (hi - lo) * rng.rand
  end

  def self.log_uniform(rng, (lo, hi))
    Math.exp(uniform(rng, [Math.log(lo), Math.log(hi)]))
  end

  def self.sawtooth(p, t)
    return 0.0 unless p[:saw_period]

    p[:saw_amp] * MIB * ((t + p[:saw_phase]) % p[:saw_period]) / p[:saw_period]
  end

  def self.draw_sawtooth(rng, r, p)
    return unless rng.rand < r[:saw_p]

    p[:saw_period] = uniform(rng, r[:saw_period]).round
    p[:saw_amp] = uniform(rng, r[:saw_amp]).round(1)
    p[:saw_phase] = (rng.rand * p[:saw_period]).round
  end

  def self.warmup_params(rng, r, i)
    tau = r[:tau_log] ? log_uniform(rng, r[:tau_min]) : uniform(rng, r[:tau_min])
    plateau = uniform(rng, r[:plateau]) * 1024
    base = [uniform(rng, r[:base]), plateau - 60].min
    p = { kind: "warmup", tau_s: (tau * 60).round, plateau_mib: plateau.round(1),
          base_mib: base.round(1), noise_mib: uniform(rng, r[:noise]).round(2) }
    draw_sawtooth(rng, r, p)
    # One trace in four arrives in steps (the curve held for 1-5 min at a
    # time); one in six has a few extra steps that come out of the rise.
    case i % 12
    when 1, 5, 9 then p[:quantum_s] = (uniform(rng, [1.0, 5.0]) * 60).round
    when 3, 10
      k = 1 + (rng.rand * 3).floor
      p[:steps] = Array.new(k) { [(rng.rand * 3 * tau * 60).round, uniform(rng, [10.0, 40.0]).round(1)] }
    end
    p[:spikes_s] = (uniform(rng, [600.0, 1800.0])).round if rng.rand < 0.2
    p
  end

  def self.warmup_value(p, t, noise)
    rise = p[:plateau_mib] - p[:base_mib]
    rise -= p[:steps].sum { |_, h| h } if p[:steps]
    tq = p[:quantum_s] ? (t / p[:quantum_s]).floor * p[:quantum_s] : t
    v = p[:base_mib] + rise * (1 - Math.exp(-tq / p[:tau_s]))
    (p[:steps] || []).each { |at, h| v += h if t >= at }
    v = v * MIB + sawtooth(p, t) + p[:noise_mib] * MIB * noise.next
    v += 150 * MIB if p[:spikes_s] && (t % p[:spikes_s]).zero? && t.positive?
    v
  end

  VARIANTS = %w[plain sawtooth with-warmup after-warmup].freeze

  def self.leak_params(rng, r, i)
    variant = VARIANTS[i % VARIANTS.size]
    p = { kind: "fast-leak", variant: variant, rate_mib_min: uniform(rng, r[:rate]).round(2),
          base_mib: uniform(rng, r[:leak_base]).round(1), noise_mib: uniform(rng, r[:noise]).round(2) }
    if variant == "sawtooth"
      p[:saw_period] = uniform(rng, [r[:saw_period][0], [r[:saw_period][1], 300].min]).round
      p[:saw_amp] = uniform(rng, [10.0, [r[:saw_amp][1], 50].max]).round(1)
      p[:saw_phase] = (rng.rand * p[:saw_period]).round
    end
    if variant.end_with?("warmup")
      p[:warm_mib] = uniform(rng, r[:warm_height]).round(1)
      p[:warm_tau_s] = (uniform(rng, r[:warm_tau]) * 60).round
      p[:start_s] = (uniform(rng, r[:leak_start]) * 60).round if variant == "after-warmup"
      draw_sawtooth(rng, r.merge(saw_p: 0.5, saw_period: [60.0, 300.0]), p)
    end
    p
  end

  def self.leak_value(p, t, noise)
    v = p[:base_mib]
    v += p[:warm_mib] * (1 - Math.exp(-t / p[:warm_tau_s])) if p[:warm_mib]
    leak_t = [t - (p[:start_s] || 0), 0].max
    v += p[:rate_mib_min] * leak_t / 60
    v * MIB + sawtooth(p, t) + p[:noise_mib] * MIB * noise.next
  end

  # The noise seed of trace i of a draw.
  def self.noise_seed(seed, i)
    seed * 7919 + i * 104_729 + 1
  end

  # Writes one trace of `family` (params p) to path, a sample every STEP
  # seconds for `seconds`; returns the last time it was at or above 1 GiB
  # (s, nil if never): the first, as it stops there, if stop_at_limit.
  def self.write_trace(path, family, p, noise, seconds:, stop_at_limit:, step: STEP)
    limit_t = nil
    File.open(path, "w") do |f|
      f.puts "epoch,value"
      (0...seconds / step).each do |k|
        t = k * step
        x = family == "warmup" ? warmup_value(p, t.to_f, noise) : leak_value(p, t.to_f, noise)
        v = [x, 0].max.round
        f.puts format("%.3f,%d", T0 + t, v)
        next unless v >= LIMIT

        limit_t = t
        break if stop_at_limit
      end
    end
    limit_t
  end

  NOISES = { "uniform" => Noise, "normal" => NormalNoise }.freeze

  def self.write(outdir, family, seed, count, ranges, noise_kind = "uniform", step = STEP)
    r = RANGES.fetch(ranges)
    rng = Random.new(seed)
    index = {}
    count.times do |i|
      name = format("%s-%03d", family, i)
      p = family == "warmup" ? warmup_params(rng, r, i) : leak_params(rng, r, i)
      noise = NOISES.fetch(noise_kind).new(noise_seed(seed, i))
      p[:limit_s] = write_trace(File.join(outdir, "#{name}.csv"), family, p, noise,
                                seconds: 6 * 3600, stop_at_limit: family == "fast-leak", step: step)
      index[name] = p
    end
    File.write(File.join(outdir, "#{family}.json"), JSON.pretty_generate(index) + "\n")
  end

  DEFAULT_SEED = { "warmup" => 0x23a0001, "fast-leak" => 0x23b0001 }.freeze
  DEFAULT_COUNT = { "warmup" => 120, "fast-leak" => 60 }.freeze

  USAGE = "usage: generate.rb [OUTDIR]\n" \
          "       generate.rb --family warmup|fast-leak [--seed N] [--count N] " \
          "[--ranges standard|held-out] [--noise uniform|normal] [--step S] OUTDIR"

  # Exits 2 with the usage line and what was wrong (no backtrace).
  def self.refuse(why)
    warn "generate.rb: #{why}"
    warn USAGE
    exit 2
  end

  def self.number(opt, text, min: nil)
    refuse("#{opt} wants a whole number") unless text
    n = Integer(text, exception: false)
    refuse("#{opt} wants a whole number, not #{text.inspect}") unless n
    refuse("#{opt} wants a number of at least #{min}, not #{n}") if min && n < min
    n
  end

  # The folder traces are written to: made if missing, refused if it is
  # something else (a file, or a parent that is not a folder).
  def self.outdir(path)
    refuse("#{path} is not a folder") if File.exist?(path) && !File.directory?(path)
    FileUtils.mkdir_p(path)
    path
  rescue SystemCallError => e
    refuse("cannot make the folder #{path}: #{e.message}")
  end

  def self.main(argv)
    opts = { ranges: "standard", noise: "uniform" }
    args = argv.dup
    while (a = args.shift)
      case a
      when "--family" then opts[:family] = args.shift || refuse("--family wants a name")
      when "--seed" then opts[:seed] = number(a, args.shift)
      when "--count" then opts[:count] = number(a, args.shift, min: 1)
      when "--ranges" then opts[:ranges] = args.shift || refuse("--ranges wants a name")
      when "--noise" then opts[:noise] = args.shift || refuse("--noise wants a name")
      when "--step" then opts[:step] = number(a, args.shift, min: 1)
      when /\A-/ then refuse("unknown option #{a}")
      else
        refuse("one OUTDIR, not #{opts[:outdir]} and #{a}") if opts[:outdir]
        opts[:outdir] = a
      end
    end
    family = opts[:family]
    refuse("--family must be warmup or fast-leak, not #{family.inspect}") unless DEFAULT_SEED.key?(family)
    refuse("--ranges must be standard or held-out, not #{opts[:ranges].inspect}") unless RANGES.key?(opts[:ranges])
    refuse("--noise must be uniform or normal, not #{opts[:noise].inspect}") unless NOISES.key?(opts[:noise])
    refuse("no OUTDIR") unless opts[:outdir]
    write(outdir(opts[:outdir]), family, opts[:seed] || DEFAULT_SEED[family],
          opts[:count] || DEFAULT_COUNT[family], opts[:ranges], opts[:noise], opts[:step] || STEP)
  end
end
