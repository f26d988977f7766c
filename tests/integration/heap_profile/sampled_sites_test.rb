# A default capture (no TraceAllocations) of a worker that leaks from a known
# line names that line: the plan takes a heap profile after each heap dump
# (heap_profile-N.pb.gz, streamed or written as dumps are), the analysis
# joins the sampled sites to the retained groups (site_source "sampled",
# with the samples it rests on), and the OKAY notification names the site.
# `go tool pprof -top` lists that line first in the capture's profile, and
# `memdiagctl heap_profile` without a path stores one under manual/.
require_relative "../capture/helper"

class HeapProfileSampledSitesTest < Capture::Test
  LEAKER = File.join(__dir__, "leaker.rb")
  LEAK_LINE = File.readlines(LEAKER).index { |l| l.include?("SESSIONS << SampledLeak.new(") } + 1
  GO = ENV.fetch("MEMDIAG_GO", "go")

  def setup
    @bench = Capture::Bench.new("heap-profile-sites", <<~KEYS)
      CaptureSize "80M"
      CaptureInterval 1
      AnalyzeMaxMemory "256M"
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
    g = full["retained"].first(3).find { |x| site?(x) }
    refute_nil g, "analysis.json's top groups miss leaker.rb:#{LEAK_LINE}: #{full['retained'].first(3)}"
    assert_equal "sampled", g["site_source"]
    assert_operator g["site_samples"], :>, 0
    assert_equal "SampledLeak", g["class"]

    done = @bench.wait_note("OKAY", /capture of worker leaky-sampled .*capture complete/)
    assert_match(/leak suspect: .*from \S*leaker\.rb:#{LEAK_LINE}\b/, done.message)
    assert_operator done.message.bytesize, :<, 256

    top = pprof_top(File.join(dir, "heap_profile-3.pb.gz"))
    assert_match(/leaker\.rb:#{LEAK_LINE}\z/, top.first.to_s, top.join("\n"))

    # By hand: no path, so the profile is streamed to CaptureDirectory/manual/.
    id = @bench.site.workers_json.find { |x| x["name"] == "leaky-sampled" }&.fetch("connection_id")
    refute_nil id
    r = @bench.site.ctl("heap_profile", "connection_id=#{id}")
    assert r.ok?, r.to_s
    stored = Dir.glob(File.join(@bench.captures, "manual", "*", "heap_profile.pb.gz"))
    assert_equal 1, stored.size, r.to_s
    assert_match(/leaker\.rb:#{LEAK_LINE}\z/, pprof_top(stored.first).first.to_s)
  end
end
