# Writes the synthetic traces of the fast class (and the benign shapes that
# fool short windows) beside the recorded ones, from a seeded generator, so
# anyone can see how they were made and make them again:
#
#   ruby tests/data/traces/generate.rb [OUTDIR]     (default: this folder)
#
# It also writes whole families of traces drawn over ranges of parameters
# (families.rb says which); those are made at test time, never committed:
#
#   ruby tests/data/traces/generate.rb --family warmup|fast-leak \
#        [--seed N] [--count N] [--ranges held-out] [--noise normal] [--step S] OUTDIR
#
# Every trace: collectd csv ("epoch,value"), one sample every 10 s from
# epoch 1790000000, values in bytes. Leak traces stop at the first sample at
# or above 1 GiB (as leak-fast-15mb-min does); benign ones run 6 hours.
# The noise is an xorshift32 sequence from a fixed seed per trace, so the
# output is the same on every machine (the detector's unit test
# test_traces_generated checks the committed files against this script).

MIB = 1024.0 * 1024.0
LIMIT = 1024 * MIB
STEP = 10
T0 = 1_790_000_000

require_relative "noise"

# Ruby-like GC sawtooth: climbs `amp` over `period` seconds, then drops.
def sawtooth(t, period, amp)
  amp * (t % period) / period
end

TRACES = {
  # 11 MiB/min from start-up: 1 GiB about 70 minutes after start.
  "leak-fast-11mb-min" => [0x5eed0001, :leak, lambda { |t, n|
    254 * MIB + 11 * MIB * t / 60 + 6 * MIB * n.next
  }],
  # 10 MiB/min under a 5-minute GC sawtooth 50 MiB high.
  "leak-fast-sawtooth" => [0x5eed0002, :leak, lambda { |t, n|
    270 * MIB + 10 * MIB * t / 60 + sawtooth(t, 300, 50 * MIB) + 3 * MIB * n.next
  }],
  # 9 MiB/min from start-up, under a 150 MiB warm-up that is over within
  # 20 minutes (time constant 5 min).
  "leak-fast-after-warmup" => [0x5eed0003, :leak, lambda { |t, n|
    250 * MIB + 150 * MIB * (1 - Math.exp(-t / 300.0)) + 9 * MIB * t / 60 + 4 * MIB * n.next
  }],
  # A steep warm-up, 400 MiB of which 95% within 10 minutes, then flat,
  # under a 3-minute GC sawtooth.
  "benign-warmup-quarter-hour" => [0x5eed0004, :benign, lambda { |t, n|
    150 * MIB + 400 * MIB * (1 - Math.exp(-t / 210.0)) + sawtooth(t, 180, 20 * MIB) +
      4 * MIB * n.next
  }],
  # A 400 MiB worker that, an hour in and again at 3 h 30, grows 5 MiB/min
  # for 25 minutes and then releases it within two minutes.
  "benign-burst-released" => [0x5eed0005, :benign, lambda { |t, n|
    v = 400 * MIB + 4 * MIB * n.next
    [3600, 12_600].each do |start|
      p = t - start
      if p >= 0 && p < 1500
        v += 5 * MIB * p / 60
      elsif p >= 1500 && p < 1620
        v += 125 * MIB * (1620 - p) / 120
      end
    end
    v
  }],
  # A cache that fills at 4 MiB/min for the first 50 minutes, then stays
  # full, under a 4-minute GC sawtooth.
  "benign-fill-50min" => [0x5eed0006, :benign, lambda { |t, n|
    m = [t, 3000].min
    300 * MIB + 4 * MIB * m / 60 + sawtooth(t, 240, 30 * MIB) + 3 * MIB * n.next
  }],
}.freeze

require_relative "families"

def generate(outdir)
  TRACES.each do |name, (seed, kind, shape)|
    noise = Noise.new(seed)
    File.open(File.join(outdir, "#{name}.csv"), "w") do |f|
      f.puts "epoch,value"
      (0...6 * 3600 / STEP).each do |i|
        t = i * STEP
        v = [shape.call(t.to_f, noise), 0].max.round
        f.puts format("%.3f,%d", T0 + t, v)
        break if kind == :leak && v >= LIMIT
      end
    end
  end
end

if $PROGRAM_NAME == __FILE__
  if ARGV.any? { |a| a.start_with?("-") }
    Families.main(ARGV)
  else
    Families.refuse("one OUTDIR at most, not #{ARGV.size}") if ARGV.size > 1
    generate(Families.outdir(ARGV[0] || __dir__))
  end
end
