# The figures docs/detector.md quotes for many untuned draws (seeds
# 9001-9060 since the first stop of 2026-12-06): replays the warm-up and
# fast-leak families of every seed in FIRST..LAST through `memdiagctl replay
# --summary MemoryLimit=1G` and prints how many warm-ups fire, how many fast
# leaks of the three variants the issue names are late (FamilyReplay.lead_needed),
# and how many draws meet the whole acceptance (none of their warm-ups fires,
# every one of their counted leaks in time). A tool, not a test:
#
#   MEMDIAG_CTL=build/plugin/memdiagctl ruby draws_table.rb FIRST..LAST \
#       [standard|held-out] [--noise uniform|normal] [--step S] [-v]
#
# (anything else is refused with a usage line, exit 2); -v lists every
# warm-up that fires and every counted leak caught late, with its
# parameters.
require_relative "family_table"

module DrawsTable
  USAGE = "MEMDIAG_CTL=memdiagctl ruby draws_table.rb FIRST..LAST [standard|held-out] " \
          "[--noise uniform|normal] [--step S] [-v]".freeze

  # The options from argv, or nil when they are not understood.
  def self.parse(argv)
    opts = { ranges: "standard", noise: "uniform", step: 10, verbose: false }
    args = argv.dup
    while (a = args.shift)
      case a
      when /\A(\d+)\.\.(\d+)\z/ then opts[:seeds] = (Regexp.last_match(1).to_i..Regexp.last_match(2).to_i)
      when "standard", "held-out" then opts[:ranges] = a
      when "--noise" then opts[:noise] = args.shift
      when "--step" then opts[:step] = Integer(args.shift.to_s, exception: false)
      when "-v" then opts[:verbose] = true
      else return nil
      end
    end
    return nil unless opts[:seeds]&.any? && %w[uniform normal].include?(opts[:noise]) &&
                      opts[:step]&.positive?

    opts
  end

  # [ranges, seed, family, outcome] for every trace of every draw, as
  # FamilyTable.run gives them.
  def self.run(ctl, opts)
    jobs = opts[:seeds].to_a.product(%w[warmup fast-leak])
    FamilyReplay.parallel(jobs) do |seed, family|
      extra = ["--seed", seed.to_s, "--ranges", opts[:ranges], "--noise", opts[:noise],
               "--step", opts[:step].to_s]
      FamilyReplay.run(ctl, family, extra).map { |o| [opts[:ranges], seed, family, o] }
    end.flatten(1).sort_by { |_, s, f, o| [s, f, o.name] }
  end

  def self.print(rows, opts)
    # The warm-ups and the counted leaks: a leak under a warm-up from start
    # is not in the acceptance.
    judged = rows.select { |_, _, f, o| f == "warmup" || FamilyReplay.counted?(o.params) }
    FamilyTable.print_misses(judged) if opts[:verbose]
    fires = judged.count { |_, _, f, o| f == "warmup" && !o.ok }
    leaks = judged.reject { |_, _, f, _| f == "warmup" }
    whole = judged.group_by { |x| x[1] }.count { |_, rs| rs.all? { |x| x[3].ok } }
    puts format("seeds %d..%d, %s ranges, %s noise, a sample every %d s: warm-ups firing %d of %d; counted fast leaks late " \
                "%d of %d; draws meeting the whole acceptance %d of %d",
                opts[:seeds].first, opts[:seeds].last, opts[:ranges], opts[:noise], opts[:step], fires,
                judged.size - leaks.size, leaks.count { |x| !x[3].ok }, leaks.size, whole,
                opts[:seeds].size)
  end
end

if $PROGRAM_NAME == __FILE__
  ctl = FamilyReplay.ctl_from_env(DrawsTable::USAGE)
  opts = DrawsTable.parse(ARGV)
  unless opts
    warn "usage: #{DrawsTable::USAGE}"
    exit 2
  end
  DrawsTable.print(DrawsTable.run(ctl, opts), opts)
end
