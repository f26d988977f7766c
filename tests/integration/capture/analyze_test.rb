# Analyze (default true): after a capture with TraceAllocations completes,
# the plugin analyses its three heap dumps off the server thread and names
# the leak's allocation site (leaker.rb's `$leak << CaptureLeak.new` line) in
# analysis.json, in capture.json's "analysis", in the OKAY notification and in
# `memdiagctl status`; `memdiagctl analyze` on the folder agrees.
require_relative "helper"

class CaptureAnalyzeTest < Capture::Test
  LEAKER = File.join(Capture::HERE, "leaker.rb")
  LEAK_LINE = File.readlines(LEAKER).index { |l| l.include?("$leak << CaptureLeak.new(") } + 1

  def setup
    @bench = Capture::Bench.new("capture-analyze", <<~KEYS)
      CaptureSize "80M"
      CaptureInterval 1
      TraceAllocations true
      AnalyzeMaxMemory "256M"
    KEYS
  end

  def site?(g) = g["file"].to_s.end_with?("/leaker.rb") && g["line"] == LEAK_LINE

  def test_capture_names_the_leak_site
    w = @bench.start_leaker("leaky-analyze")
    dir, m = @bench.wait_manifest(w, "the analysis", timeout: 3 * E2E::WAIT) { |x| x["analysis"] }

    assert_equal true, m["complete"], JSON.pretty_generate(m)
    a = m["analysis"]
    assert_equal "done", a["status"], JSON.pretty_generate(a)
    assert_equal "retained", a["mode"]
    assert_operator a["top"].size, :<=, 3
    assert a["top"].any? { |g| site?(g) }, "capture.json's top groups miss leaker.rb:#{LEAK_LINE}: #{a['top']}"
    assert_match(/\Aleak suspect/, a["summary"])

    path = File.join(dir, "analysis.json")
    assert_equal 0o600, File.stat(path).mode & 0o777
    full = JSON.parse(File.read(path))
    assert full["retained"].first(3).any? { |g| site?(g) }, "analysis.json: #{full['retained'].first(3)}"
    assert_equal 3, full["dumps"].size
    assert_operator full["count"], :>, 0

    # The operator's own run on the folder finds the same site in its top three.
    r = @bench.site.ctl("analyze", "--json", "--top", "3", dir)
    assert r.ok?, r.to_s
    cli = JSON.parse(r.out)
    assert cli["retained"].any? { |g| site?(g) }, r.out
    human = @bench.site.ctl("analyze", dir)
    assert human.ok?, human.to_s
    assert_match(/leaker\.rb:#{LEAK_LINE}/, human.out)

    # The OKAY notification names the suspect, within collectd's 256 bytes.
    done = @bench.wait_note("OKAY", /capture of worker leaky-analyze .*capture complete/)
    assert_match(/leak suspect: [\d,]+ × CaptureLeak owning [\d.]+ [KMG]?i?B, mostly Array, from \S*leaker\.rb:#{LEAK_LINE}\b/, done.message)
    assert_operator done.message.bytesize, :<, 256

    # memdiagctl status lists the capture with its analysis.
    st = @bench.site.ctl("status", "--json")
    assert st.ok?, st.to_s
    recent = JSON.parse(st.out)["recent_captures"]
    mine = recent.find { |c| c["directory"] == dir }
    refute_nil mine, st.out
    assert_match(/leaker\.rb:#{LEAK_LINE}/, mine["analysis"])
    assert_match(/analysis: leak suspect/, @bench.site.ctl("status").out)
  end
end
