# The figures of docs/detector.md's "Families" table: replays many draws
# of the generated families (tests/data/traces/families.rb) through
# `memdiagctl replay --summary MemoryLimit=1G` and prints, per family and
# variant, how many fire and how many fast leaks meet the lead asked
# (FamilyReplay.lead_needed: 50 minutes, or 75 % of the time to the limit
# when that is shorter). A tool, not a test:
#
#   MEMDIAG_CTL=build/plugin/memdiagctl ruby family_table.rb tune|check [-v]
#
# (anything else is refused with a usage line, exit 2); the last line sums
# up the figures docs/detector.md quotes for each change.
#
# tune: seeds 1007, 2007 ... 6007, each with the standard and the held-out
# ranges (the draws the detector was tuned on); check: seeds 70001-70006,
# looked at only to measure a change already chosen. 1440 warm-ups and 720
# fast leaks each; -v lists every warm-up that fires and every leak caught
# later than asked.
require_relative "family_replay"

module FamilyTable
  SEEDS = { "tune" => (1..6).map { |s| s * 1000 + 7 }, "check" => (70_001..70_006).to_a }.freeze
  VARIANTS = %w[plain sawtooth after-warmup with-warmup].freeze

  def self.jobs(set)
    SEEDS.fetch(set).product(%w[standard held-out], %w[warmup fast-leak])
  end

  # Outcome of every trace of every draw, each tagged with its ranges.
  def self.run(ctl, set)
    FamilyReplay.parallel(jobs(set)) do |seed, ranges, family|
      FamilyReplay.run(ctl, family, ["--seed", seed.to_s, "--ranges", ranges]).map do |o|
        [ranges, seed, family, o]
      end
    end.flatten(1)
  end

  def self.print_table(rows)
    puts "| family | ranges | traces | fire | meet the lead asked | lead min / median / max (min) |"
    puts "|---|---|---|---|---|---|"
    %w[standard held-out].each do |r|
      s = rows.select { |x| x[0] == r && x[2] == "warmup" }.map(&:last)
      puts "| warm-up | #{r} | #{s.size} | #{s.count { |o| o.captures.positive? }} | | |"
    end
    VARIANTS.each do |v|
      %w[standard held-out].each do |r|
        s = rows.select { |x| x[0] == r && x[2] == "fast-leak" && x[3].params["variant"] == v }.map(&:last)
        leads = s.map(&:lead_s).compact.map { |l| l / 60.0 }
        puts format("| fast leak, %s | %s | %d | %d | %d | %.1f / %.1f / %.1f |", v, r, s.size,
                    s.count { |o| o.captures.positive? }, s.count(&:ok), leads.min, FamilyReplay.median(leads), leads.max)
      end
    end
  end

  # The two figures docs/detector.md quotes per change: warm-ups that fire
  # and fast leaks of the three variants the issue names that meet the lead.
  def self.print_totals(rows)
    fired = rows.count { |x| x[2] == "warmup" && x[3].captures.positive? }
    counted = rows.select { |x| FamilyReplay.counted?(x[3].params) }
    puts "warm-ups firing: #{fired} of #{rows.count { |x| x[2] == 'warmup' }}; " \
         "fast leaks (plain, sawtooth, after-warmup) meeting the lead: " \
         "#{counted.count { |x| x[3].ok }} of #{counted.size}"
  end

  def self.print_misses(rows)
    rows.each do |ranges, seed, family, o|
      next if o.ok

      what = family == "warmup" ? "FIRES" : "LATE "
      puts format("%s %s-%d %s first=%s lead=%s %s", what, ranges, seed, o.name, o.first_s.inspect,
                  o.lead_s.inspect, o.params.reject { |k, _| k == "kind" }.to_json)
    end
  end
end

if $PROGRAM_NAME == __FILE__
  usage = "MEMDIAG_CTL=memdiagctl ruby family_table.rb [tune|check] [-v]"
  unknown = ARGV.reject { |a| FamilyTable::SEEDS.key?(a) || a == "-v" }
  sets = ARGV.select { |a| FamilyTable::SEEDS.key?(a) }
  if unknown.any? || sets.size > 1
    warn "usage: #{usage}#{unknown.any? ? " (unknown: #{unknown.join(' ')})" : ''}"
    exit 2
  end
  ctl = FamilyReplay.ctl_from_env(usage)
  rows = FamilyTable.run(ctl, sets.first || "tune")
  FamilyTable.print_misses(rows) if ARGV.include?("-v")
  FamilyTable.print_table(rows)
  FamilyTable.print_totals(rows)
end
