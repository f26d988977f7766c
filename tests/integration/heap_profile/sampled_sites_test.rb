# A default capture (no TraceAllocations) of a worker that leaks from a known
# line names that line: the plan takes a heap profile after each heap dump
# (heap_profile-N.pb.gz, streamed or written as dumps are), the analysis
# joins the samples to the retained objects by address (analysis.json's
# "sampling": each retained sampled object with its own site), a group gets
# the site most of its sampled members share (site_source "sampled", with
# that share), and the OKAY notification names the site as sampled, with
# the share. The worker also churns many short-lived objects of the leaking
# class from another line (leaker.rb's decoys): a join by class and age
# names that line; by address, never.
# `go tool pprof -top` lists that line first in the capture's profile, and
# `memdiagctl heap_profile` without a path stores one under manual/.
require_relative "../capture/helper"

class HeapProfileSampledSitesTest < Capture::Test
  LEAKER = File.join(__dir__, "leaker.rb")
  LEAK_LINE = File.readlines(LEAKER).index { |l| l.include?("SESSIONS << SampledLeak.new(") } + 1
  DECOY_LINE = File.readlines(LEAKER).index { |l| l.include?("Array.new(DECOYS) { SampledLeak.new(nil)") } + 1
  GO = ENV.fetch("MEMDIAG_GO", "go")

  def setup
    @bench = Capture::Bench.new("heap-profile-sites", <<~KEYS)
      CaptureSize "80M"
      CaptureInterval 1
      AnalyzeMaxMemory "256M"
      AllocationSampling 5000
    KEYS
  end

  def site?(g) = g["file"].to_s.end_with?("/leaker.rb") && g["line"] == LEAK_LINE

  def pprof_top(path)
    out = IO.popen([GO, "tool", "pprof", "-top", "-lines", "-sample_index=inuse_objects", path],
                   err: %i[child out], &:read)
    assert $?.success?, "go tool pprof failed:\n#{out}"
    out.lines.map(&:chomp).drop_while { |l| l !~ /\A\s*flat\s+flat%/ }.drop(1)
  end

  def test_default_capture_names_the_sampled_site
    w = @bench.start_leaker("leaky-sampled", script: LEAKER)
    dir, m = @bench.wait_manifest(w, "the analysis", timeout: 3 * E2E::WAIT) { |x| x["analysis"] }

    assert_equal true, m["complete"], JSON.pretty_generate(m)
    profiles = m["steps"].select { |s| s["step"] == "heap_profile" }
    assert_equal %w[heap_profile-1.pb.gz heap_profile-2.pb.gz heap_profile-3.pb.gz], profiles.map { |s| s["file"] }
    profiles.each do |s|
      assert_equal "ok", s["status"], s.inspect
      assert File.size?(File.join(dir, s["file"])), "#{s['file']} missing"
    end

    full = JSON.parse(File.read(File.join(dir, "analysis.json")))
    top = full["retained"].first(3)
    g = top.find { |x| x["class"] == "SampledLeak" }
    refute_nil g, "no SampledLeak among analysis.json's top groups: #{top}"
    assert site?(g), "SampledLeak's site is not leaker.rb:#{LEAK_LINE}: #{g}"
    assert_equal "sampled", g["site_source"]
    assert_operator g["site_samples"], :>, 0
    assert_operator g["sampled_members"], :>=, g["site_samples"]

    # How the sites were found: samples of the last profile at the
    # addresses of retained objects, each with its own site. Most are the
    # leak's (a decoy slot reused by another decoy between two dumps looks
    # retained to dumps without allocation data, and its sample says so).
    s = full["sampling"]
    refute_nil s, "analysis.json has no sampling block"
    assert_equal "address", s["join"]
    assert_equal "heap_profile-3.pb.gz", s["profile"]
    assert_operator s["samples"], :>=, s["retained"]
    leaked = s["objects"].select { |o| o["class"] == "SampledLeak" }
    assert_equal g["sampled_members"], leaked.size, JSON.pretty_generate(s)
    assert_equal g["site_samples"], leaked.count { |o| o["line"] == LEAK_LINE }
    assert_operator leaked.count { |o| o["line"] == LEAK_LINE }, :>, leaked.count { |o| o["line"] == DECOY_LINE }

    done = @bench.wait_note("OKAY", /capture of worker leaky-sampled .*capture complete/)
    named = full["retained"].first
    assert_match(/leak suspect: .*from \S*leaker\.rb:#{LEAK_LINE} \(sampled, #{named['site_samples']} of #{named['sampled_members']} samples\)/,
                 done.message)
    assert_operator done.message.bytesize, :<, 256

    # The decoys outnumber the leak among the live objects at times: the
    # leaking line is one of the first two (hook_heap_profile shows it first
    # for a worker that only leaks).
    top = pprof_top(File.join(dir, "heap_profile-3.pb.gz"))
    assert top.first(2).any? { |l| l =~ /leaker\.rb:#{LEAK_LINE}\z/ }, top.join("\n")

    # By hand: no path, so the profile is streamed to CaptureDirectory/manual/.
    id = @bench.site.workers_json.find { |x| x["name"] == "leaky-sampled" }&.fetch("connection_id")
    refute_nil id
    r = @bench.site.ctl("heap_profile", "connection_id=#{id}")
    assert r.ok?, r.to_s
    stored = Dir.glob(File.join(@bench.captures, "manual", "*", "heap_profile.pb.gz"))
    assert_equal 1, stored.size, r.to_s
    top = pprof_top(stored.first)
    assert top.first(2).any? { |l| l =~ /leaker\.rb:#{LEAK_LINE}\z/ }, top.join("\n")
  end
end
