# Replays a family of generated traces (tests/data/traces/families.rb)
# through `memdiagctl replay --summary MemoryLimit=1G` and sums up what it
# fired on. Used by families_test.rb; also a tool, to see the rates:
#
#   MEMDIAG_CTL=build/plugin/memdiagctl ruby family_replay.rb \
#       warmup|fast-leak [--seed N] [--count N] [--ranges held-out]
require "etc"
require "json"
require "open3"
require "tmpdir"

module FamilyReplay
  GENERATOR = File.expand_path("../../data/traces/generate.rb", __dir__)
  LIMIT = 1 << 30
  # The issue's acceptance for a fast leak: captured at least 50 minutes
  # before the limit, or with 75 % of its time to the limit left when that
  # is shorter (counted from when the leak starts: after a warm-up, that is
  # some minutes into the trace).
  def self.lead_needed(params)
    [50 * 60, 0.75 * (params["limit_s"] - (params["start_s"] || 0))].min
  end

  # Whether a fast leak counts in the acceptance: the three variants the
  # issue names (plain, under a sawtooth, after a warm-up), not the leak
  # under a warm-up from start (docs/detector.md).
  def self.counted?(params)
    params["kind"] == "fast-leak" && params["variant"] != "with-warmup"
  end

  Outcome = Struct.new(:name, :params, :captures, :first_s, :reason, :lead_s, :limit_s, :ok,
                       keyword_init: true)

  def self.generate(dir, family, extra)
    out, status = Open3.capture2e(RbConfig.ruby, GENERATOR, "--family", family, *extra, dir)
    raise "generate.rb #{family} #{extra.join(' ')}: #{out}" unless status.success?

    JSON.parse(File.read(File.join(dir, "#{family}.json")))
  end

  # The memdiagctl the tools run: $MEMDIAG_CTL, which must name an
  # executable; else the usage line and exit status 2.
  def self.ctl_from_env(usage)
    ctl = ENV["MEMDIAG_CTL"]
    return ctl if ctl && File.file?(ctl) && File.executable?(ctl)

    warn "usage: #{usage}"
    warn(ctl ? "MEMDIAG_CTL=#{ctl}: not an executable file" : "MEMDIAG_CTL is not set")
    exit 2
  end

  # `memdiagctl replay --summary MemoryLimit=1G ARGS PATH`: its first
  # capture (nil if none) and its summary line, parsed; raises if it fails.
  def self.replay(ctl, path, args = [])
    out, err, status = Open3.capture3(ctl, "replay", "--summary", "MemoryLimit=1G", *args, path)
    raise "memdiagctl replay #{path}: exit #{status.exitstatus}: #{err}" unless status.success?

    lines = out.lines.map { |l| JSON.parse(l) }
    [(lines.first unless lines.first["summary"]), lines.last]
  end

  # The block's result for every job, run on as many threads as there are
  # processors, in no order.
  def self.parallel(jobs)
    queue = Queue.new
    jobs.each { |j| queue << j }
    results = Queue.new
    Array.new(Etc.nprocessors) do
      Thread.new do
        while (job = (queue.pop(true) rescue nil))
          results << yield(job)
        end
      end
    end.each(&:join)
    Array.new(results.size) { results.pop }
  end

  # Runs every trace of the family (or only those named in `only`); returns
  # their outcomes, oldest first.
  def self.run(ctl, family, extra = [], args = [], only: nil)
    Dir.mktmpdir do |dir|
      index = generate(dir, family, extra)
      index = index.select { |name, _| only.include?(name) } if only
      index.map do |name, p|
        first, summary = replay(ctl, File.join(dir, "#{name}.csv"), args)
        start = 1_790_000_000
        o = Outcome.new(name: name, params: p, captures: summary["captures"],
                        first_s: first && first["time"] - start, reason: first && first["reason"],
                        lead_s: summary["lead_time_s"], limit_s: p["limit_s"])
        o.ok = if family == "warmup"
                 o.captures.zero?
               else
                 !o.lead_s.nil? && o.lead_s >= lead_needed(p)
               end
        o
      end
    end
  end

  def self.median(v)
    s = v.sort
    s.empty? ? nil : (s[(s.size - 1) / 2] + s[s.size / 2]) / 2.0
  end

  def self.share_left(o)
    100.0 * o.lead_s / (o.limit_s - (o.params["start_s"] || 0))
  end

  def self.describe(family, outcomes)
    n = outcomes.size
    fired = outcomes.count { |o| o.captures.positive? }
    line = format("%s: %d traces, %d fire (%.1f %%), %d meet the acceptance", family, n, fired,
                  100.0 * fired / n, outcomes.count(&:ok))
    leads = outcomes.map(&:lead_s).compact
    unless leads.empty?
      margin = outcomes.select(&:lead_s).map { |o| o.lead_s - lead_needed(o.params) }
      line += format("; lead min %.0f / median %.0f / max %.0f s; at the first capture, " \
                     "%.0f-%.0f %% of the time to the limit (from the leak's start) left; worst margin over the " \
                     "acceptance %.0f s", leads.min, median(leads), leads.max,
                     outcomes.select(&:lead_s).map { |o| share_left(o) }.min,
                     outcomes.select(&:lead_s).map { |o| share_left(o) }.max,
                     margin.min)
    end
    line
  end
end

if $PROGRAM_NAME == __FILE__
  family = ARGV.shift
  ctl = FamilyReplay.ctl_from_env("MEMDIAG_CTL=memdiagctl ruby family_replay.rb warmup|fast-leak " \
                                  "[--seed N] [--count N] [--ranges held-out]")
  outcomes = FamilyReplay.run(ctl, family, ARGV)
  outcomes.each do |o|
    next if o.ok && !ENV["ALL"]

    puts format("%s %s captures=%d first=%s reason=%s lead=%s limit=%s %s", o.ok ? "ok  " : "FAIL",
                o.name, o.captures, o.first_s.inspect, o.reason.inspect, o.lead_s.inspect,
                o.limit_s.inspect, o.params.reject { |k, _| %w[kind limit_s].include?(k) }.to_json)
  end
  puts FamilyReplay.describe(family, outcomes)
end
