# memdiagctl replay MemoryLimit=1G over whole families of generated traces
# (tests/data/traces/families.rb, made at test time in a temporary folder):
# 120 warm-ups that level off at 30-80 % of the limit, 60 fast leaks of
# 8-15 MiB/min from start. Prints the fire rates and leads per family, for
# the standard draws and for a held-out draw (other seed, other ranges).
#
# What it asserts is what holds today (docs/detector.md, "Families"):
# every fast leak is captured by sustained-growth before the limit, at most
# 0 of the 120 standard warm-ups fires (none does; 1 before the settling
# course's F test counted its time constant, 2 before the early path asked
# for three evaluations in a row, 4 before level shifts were taken out of the
# course, 30 before the urgent rule asked the course), at most 3 of the 120
# held-out ones (3 do; 4 before the early path took a GC sawtooth's ramp
# out of its points, 4, 5 and 7 before that), and at most 11 of the 720
# warm-ups of six more draws nobody tuned against (seeds 31337, 11 and 12
# with the standard ranges, 31338, 13 and 14 held-out: 11 do; 12 before the
# settling course's F test counted its time constant, 13 before the
# plateau with a step was also tried on the points before the trim, 16 before a
# plateau with one loaded cache counted as levelling off, 15 before the
# sawtooth's ramp was taken out, which fires 35 instead of 41 of the 1440 of
# deteval's tune draws; 17 before the short window's rule asked three looks
# on less than firm evidence, 30 before it waited while a plateau still fits
# and steps that stand out of the local pace were taken out of the course),
# and that at least 245 of their 360 fast leaks meet the lead asked (245 do;
# 231 before the early path's growth check stopped being one of the looks
# it repeats, warm-ups that fire unchanged at 11; 239 before the settling course's F test counted its time constant, which
# costs leaks under a warm-up from start 20 -> 13 and after a warm-up
# 77 -> 76 of them their lead, plain and sawtooth unchanged; 241 before a plateau with one loaded cache counted as levelling off, which
# costs two leaks their lead for three warm-ups fewer firing; 220 before the sawtooth's ramp was taken out, 215 before the early path
# fired on two looks when its evidence is firm, 219 before det4). It does not
# yet assert the issue's acceptance (no warm-up fires; every fast leak 50
# minutes ahead).
require "minitest/autorun"
require_relative "family_replay"

class ReplayFamiliesTest < Minitest::Test
  CTL = ENV.fetch("MEMDIAG_CTL")

  def report(family, outcomes)
    puts "# #{FamilyReplay.describe(family, outcomes)}"
  end

  def test_fast_leaks_are_all_captured_before_the_limit
    outcomes = FamilyReplay.run(CTL, "fast-leak")
    report("fast-leak", outcomes)
    assert_equal 60, outcomes.size
    outcomes.each do |o|
      assert_operator o.captures, :>=, 1, "#{o.name} #{o.params}: no capture"
      assert_equal "sustained-growth", o.reason, "#{o.name} #{o.params}"
      assert o.lead_s&.positive?, "#{o.name} #{o.params}: captured at or after the limit"
    end
  end

  def test_few_warmups_fire
    outcomes = FamilyReplay.run(CTL, "warmup")
    report("warmup", outcomes)
    assert_equal 120, outcomes.size
    fired = outcomes.select { |o| o.captures.positive? }
    assert_operator fired.size, :<=, 0,
                    "warm-ups that fire: #{fired.map(&:name).join(' ')}"
  end

  def test_held_out_draws
    %w[warmup fast-leak].each do |family|
      outcomes = FamilyReplay.run(CTL, family, %w[--seed 4242 --ranges held-out])
      report("#{family} (held-out)", outcomes)
      refute_empty outcomes
      if family == "warmup"
        fired = outcomes.select { |o| o.captures.positive? }
        assert_operator fired.size, :<=, 3, "held-out warm-ups that fire: #{fired.map(&:name).join(' ')}"
        next
      end

      outcomes.each { |o| assert o.lead_s&.positive?, "#{o.name} #{o.params}: not captured in time" }
    end
  end

  FRESH = [%w[--seed 31337], %w[--seed 11], %w[--seed 12], %w[--seed 31338 --ranges held-out],
           %w[--seed 13 --ranges held-out], %w[--seed 14 --ranges held-out]].freeze

  def test_fresh_draws
    fired = []
    in_time = 0
    FRESH.each do |extra|
      outcomes = FamilyReplay.run(CTL, "warmup", extra)
      report("warmup (#{extra.join(' ')})", outcomes)
      assert_equal 120, outcomes.size
      fired += outcomes.select { |o| o.captures.positive? }.map { |o| "#{extra[1]}:#{o.name}" }
      leaks = FamilyReplay.run(CTL, "fast-leak", extra)
      report("fast-leak (#{extra.join(' ')})", leaks)
      leaks.each { |o| assert o.lead_s&.positive?, "#{extra[1]} #{o.name} #{o.params}: not captured in time" }
      in_time += leaks.count(&:ok)
    end
    assert_operator fired.size, :<=, 11, "warm-ups of the fresh draws that fire: #{fired.join(' ')}"
    assert_operator in_time, :>=, 245, "fast leaks of the fresh draws that meet the lead asked"
  end
end
