# The figures of docs/detector.md's "What the short window costs in false
# alarms": benign shapes that are, for some minutes, the same as a fast
# leak, each replayed with 20 noise seeds through `memdiagctl replay
# --summary MemoryLimit=1G` (every other key at its default), counting the
# seeds on which it fires. A tool, not a test:
#
#   MEMDIAG_CTL=build/plugin/memdiagctl [MEMDIAG_CTL_BEFORE=old/memdiagctl] \
#       ruby short_costs.rb
#
# With MEMDIAG_CTL_BEFORE the same series go through both builds and the
# table shows before -> after. Shapes (10 s samples, 6 hours, +-4 MiB of
# uniform noise from tests/data/traces/noise.rb):
#   burst, steady worker   400 MiB for 3 h, then R MiB/min for D min, then
#                          back to 400 MiB (released)
#   burst at start-up      the same from the first sample
#   fill that stops        from 300 MiB at start-up, R MiB/min for D min,
#                          then flat
#   steep stop             from 150 MiB at start-up, R MiB/min for D min,
#                          then flat (a warm-up that stops dead)
require "json"
require "open3"
require "tmpdir"
require_relative "../../data/traces/noise"

module ShortCosts
  MIB = 1024.0 * 1024.0
  STEP = 10
  T0 = 1_790_000_000
  SEEDS = 20
  NOISE_MIB = 4.0

  CASES = [
    ["burst, steady worker", 400, 3 * 3600, true, [[5, 25], [6, 29], [8, 25], [10, 20], [10, 15], [12, 12]]],
    ["burst at start-up", 400, 0, true, [[5, 25], [6, 29], [8, 25], [10, 20], [10, 15], [12, 12]]],
    ["fill that stops", 300, 0, false, [[4, 50], [4, 55], [4.5, 50], [5, 40]]],
    ["steep stop", 150, 0, false, [[15, 7], [40, 7], [15, 10], [28, 9], [40, 9], [15, 12], [15, 14]]]
  ].freeze

  def self.value(base, start, released, rate, dur, t)
    s = t - start
    return base if s <= 0
    return (released ? base : base + rate * dur) if s >= dur * 60

    base + rate * s / 60.0
  end

  def self.write(path, shape, rate, dur, seed)
    _name, base, start, released = shape
    noise = Noise.new(seed * 7919 + 17)
    File.open(path, "w") do |f|
      f.puts "epoch,value"
      (0...6 * 3600 / STEP).each do |k|
        t = k * STEP
        v = value(base, start, released, rate, dur, t) * MIB + NOISE_MIB * MIB * noise.next
        f.puts format("%.3f,%d", T0 + t, v.round)
      end
    end
  end

  def self.fires(ctl, path)
    out, err, status = Open3.capture3(ctl, "replay", "--summary", "MemoryLimit=1G", path)
    raise "memdiagctl replay #{path}: exit #{status.exitstatus}: #{err}" unless status.success?

    JSON.parse(out.lines.last)["captures"].positive? ? 1 : 0
  end

  def self.run(ctls)
    Dir.mktmpdir do |dir|
      CASES.each do |shape|
        shape[4].each do |rate, dur|
          counts = ctls.map { 0 }
          SEEDS.times do |seed|
            path = File.join(dir, "s.csv")
            write(path, shape, rate, dur, seed + 1)
            ctls.each_with_index { |c, i| counts[i] += fires(c, path) }
          end
          puts format("| %s | %s MiB/min for %d min | %s in %d |", shape[0], rate, dur,
                      counts.join(" -> "), SEEDS)
        end
      end
    end
  end
end

if $PROGRAM_NAME == __FILE__
  unless ARGV.empty?
    warn "usage: MEMDIAG_CTL=memdiagctl [MEMDIAG_CTL_BEFORE=memdiagctl] ruby short_costs.rb"
    exit 2
  end
  ctls = [ENV["MEMDIAG_CTL_BEFORE"], ENV.fetch("MEMDIAG_CTL")].compact
  puts "| shape | rate and time | fires |"
  puts "|---|---|---|"
  ShortCosts.run(ctls)
end
