# The analysis names the owner, its site and what holds it, for the shapes
# applications leak in (shapes.rb), each a real hooked Ruby worker whose RSS
# crosses CaptureSize, so the plugin captures it (TraceAllocations true, the
# default plan) and analyses the dumps on its own: the top suspect in
# analysis.json is the owner class at its SITE line, the holder is named with
# its path from a GC root, and the OKAY notification says both; a worker
# leaking native memory gets "growth outside the Ruby heap" instead.
# Run one shape: shapes_test.rb -n test_<shape>.
require_relative "../capture/helper"

class AnalysisShapesTest < Capture::Test
  SCRIPT = File.join(__dir__, "shapes.rb")
  LINES = File.readlines(SCRIPT)

  def site(tag) = LINES.index { |l| l.rstrip.end_with?("# SITE:#{tag}") } + 1

  def setup
    @bench = Capture::Bench.new("analysis-shapes", <<~KEYS)
      CaptureSize "90M"
      CaptureInterval 2
      TraceAllocations true
      AnalyzeMaxMemory "256M"
    KEYS
  end

  # The worker leaks until its RSS crosses CaptureSize; returns the capture's
  # analysis.json, its manifest and the OKAY notification.
  def capture(shape, rate: 4 * Capture::MiB)
    w = @bench.start_leaker("shape-#{shape.tr('_', '-')}", rate: rate, script: SCRIPT, env: { "SHAPE" => shape })
    dir, m = @bench.wait_manifest(w, "the analysis", timeout: 3 * E2E::WAIT) { |x| x["analysis"] }
    assert_equal "done", m["analysis"]["status"], JSON.pretty_generate(m["analysis"])
    steps = m["steps"].select { |s| s["memory"] }
    assert_operator steps.size, :>=, 2, "dump steps carry the worker's memory map: #{m['steps']}"
    assert steps.all? { |s| s["memory"]["rss"].positive? && s["memory"]["anon"].positive? }, steps.to_s
    note = @bench.wait_note("OKAY", /capture of worker #{w.name} .*capture complete/)
    assert_operator note.message.bytesize, :<, 256
    [JSON.parse(File.read(File.join(dir, "analysis.json"))), m, note.message, dir]
  end

  def top_is(a, type, klass, line)
    top = a["retained"].first
    assert_equal [type, klass], [top["type"], top["class"]], a["retained"].first(3).to_s
    assert top["file"].to_s.end_with?("/shapes.rb"), top.to_s
    assert_equal line, top["line"], top.to_s
    assert_operator top["owned"], :>=, top["bytes"]
    assert_equal "ruby_heap", a["heap"]["verdict"], a["heap"].to_s
    refute a["doubtful"], a["caveats"].to_s
    top
  end

  def holder(a) = a["holders"].first || flunk("no holder: #{a['holders']}")

  def path_names(h) = h["path"].map { |s| s["name"] }

  def test_struct_cache
    a, _m, note, = capture("struct_cache")
    top = top_is(a, "STRUCT", "Quote", site("struct_cache"))
    assert_equal "Array", top["mostly"]["class"], top.to_s
    h = holder(a)
    assert_equal ["HASH", "Hash", true], [h["type"], h["class"], h["old"]], h.to_s
    assert_includes path_names(h), "PriceBook", h.to_s
    assert_match(/leak suspect: [\d,]+ × Quote owning [\d.]+ [KM]iB, mostly Array, from \S*shapes\.rb:#{site('struct_cache')}/, note)
    assert_match(/held by Hash ← PriceBook's constants/, note)
  end

  def test_registry
    a, _m, note, = capture("registry", rate: 6 * Capture::MiB)
    top = top_is(a, "OBJECT", "UserSession", site("registry"))
    assert_equal "Array", top["mostly"]["class"], top.to_s
    h = holder(a)
    assert_equal ["ARRAY", "Array"], [h["type"], h["class"]], h.to_s
    assert_equal "SessionRegistry", path_names(h)[-2], h.to_s
    assert_match(/leak suspect: [\d,]+ × UserSession owning .* from \S*shapes\.rb:#{site('registry')}; held by Array ← SessionRegistry's constants/, note)
  end

  def test_procs
    a, _m, note, = capture("procs", rate: 3 * Capture::MiB)
    top = top_is(a, "DATA", "Proc", site("procs"))
    assert_operator top["owned"], :>, 10 * top["bytes"], "each proc owns the Array it captured: #{top}"
    h = holder(a)
    assert_equal "Array", h["class"], h.to_s
    assert_includes path_names(h), "Callbacks", h.to_s
    assert_match(/× Proc owning .*; held by Array ← Callbacks's constants/, note)
  end

  def test_thread_local
    a, _m, note, = capture("thread_local")
    top = top_is(a, "OBJECT", "AuditEvent", site("thread_local"))
    assert_equal "String", top["mostly"]["class"], top.to_s
    h = holder(a)
    assert_equal ["ARRAY", "Array", true], [h["type"], h["class"], h["old"]], h.to_s
    # Thread.current[] is the fiber's: the buffer hangs off the Thread or its Fiber
    assert_match(/\A(Thread|Fiber)\z/, path_names(h)[-2].to_s, h.to_s)
    assert_match(/× AuditEvent owning .*; held by Array ← (Thread|Fiber)/, note)
  end

  def test_strings
    a, _m, note, = capture("strings", rate: 5 * Capture::MiB)
    top_is(a, "STRING", "String", site("strings"))
    h = holder(a)
    assert_equal ["ARRAY", "global_tbl"], [h["type"], h["root"]], h.to_s
    assert_match(/leak suspect: [\d,]+ × String \(\+[\d.]+ [KM]iB\) from \S*shapes\.rb:#{site('strings')}; held by Array ← global variables/, note)
  end

  def test_native
    a, m, note, = capture("native", rate: 6 * Capture::MiB)
    assert_equal "outside_ruby_heap", a["heap"]["verdict"], a["heap"].to_s
    assert_operator a["heap"]["rss_growth"], :>=, 4 * Capture::MiB
    assert_operator a["heap"]["heap_growth"], :<, a["heap"]["rss_growth"] / 4
    rss = m["steps"].filter_map { |s| s.dig("memory", "anon") }
    assert_operator rss.last, :>, rss.first, "the growth is in anonymous memory (malloc): #{m['steps']}"
    assert_match(/growth outside the Ruby heap: RSS \+[\d.]+ MiB, Ruby heap [+-][\d.]+ [KM]?i?B \(\d+%\)/, note)
    refute_match(/leak suspect/, note)
    assert_match(/\Agrowth outside the Ruby heap/, m["analysis"]["summary"])
  end
end
