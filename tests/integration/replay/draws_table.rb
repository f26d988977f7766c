# The figures docs/detector.md quotes for many untuned draws (seeds
# 9001-9060 since the first stop of 2026-12-06): replays the warm-up and
# fast-leak families of every seed in FIRST..LAST through `memdiagctl replay
# --summary MemoryLimit=1G` and prints how many warm-ups fire, how many fast
# leaks of the three variants the issue names are late (FamilyReplay.lead_needed),
# and how many draws meet the whole acceptance (none of their warm-ups fires,
# every one of their counted leaks in time). A tool, not a test:
#
#   MEMDIAG_CTL=build/plugin/memdiagctl ruby draws_table.rb FIRST..LAST \
#       [standard|held-out] [--noise uniform|normal] [-v]
#
# (anything else is refused with a usage line, exit 2); -v lists every
# warm-up that fires and every counted leak caught late, with its
# parameters.
require_relative "family_replay"

module DrawsTable
  USAGE = "MEMDIAG_CTL=memdiagctl ruby draws_table.rb FIRST..LAST [standard|held-out] " \
          "[--noise uniform|normal] [-v]".freeze

  # The options from argv, or nil when they are not understood.
  def self.parse(argv)
    opts = { ranges: "standard", noise: "uniform", verbose: false }
    args = argv.dup
    while (a = args.shift)
      case a
      when /\A(\d+)\.\.(\d+)\z/ then opts[:seeds] = (Regexp.last_match(1).to_i..Regexp.last_match(2).to_i)
      when "standard", "held-out" then opts[:ranges] = a
      when "--noise" then opts[:noise] = args.shift
      when "-v" then opts[:verbose] = true
      else return nil
      end
    end
    return nil unless opts[:seeds]&.any? && %w[uniform normal].include?(opts[:noise])

    opts
  end

  # [seed, family, outcome] for every trace of every draw.
  def self.run(ctl, opts)
    jobs = opts[:seeds].to_a.product(%w[warmup fast-leak])
    FamilyReplay.parallel(jobs) do |seed, family|
      extra = ["--seed", seed.to_s, "--ranges", opts[:ranges], "--noise", opts[:noise]]
      FamilyReplay.run(ctl, family, extra).map { |o| [seed, family, o] }
    end.flatten(1).sort_by { |s, f, o| [s, f, o.name] }
  end

  def self.counted?(family, outcome)
    family == "fast-leak" && outcome.params["variant"] != "with-warmup"
  end

  def self.print(rows, opts)
    fires = rows.select { |_, f, o| f == "warmup" && !o.ok }
    leaks = rows.select { |_, f, o| counted?(f, o) }
    late = leaks.reject { |_, _, o| o.ok }
    if opts[:verbose]
      (fires + late).each do |seed, family, o|
        puts format("%s %d %s first=%s lead=%s %s", family == "warmup" ? "FIRES" : "LATE ", seed, o.name,
                    o.first_s.inspect, o.lead_s.inspect, o.params.reject { |k, _| k == "kind" }.to_json)
      end
    end
    whole = rows.group_by(&:first).count do |_, rs|
      rs.all? { |_, f, o| o.ok || (f == "fast-leak" && !counted?(f, o)) }
    end
    puts format("seeds %d..%d, %s ranges, %s noise: warm-ups firing %d of %d; counted fast leaks late " \
                "%d of %d; draws meeting the whole acceptance %d of %d",
                opts[:seeds].first, opts[:seeds].last, opts[:ranges], opts[:noise], fires.size,
                rows.count { |_, f, _| f == "warmup" }, late.size, leaks.size, whole, opts[:seeds].size)
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
