# TraceAllocations: the plan starts allocation tracing before the baseline
# dump and its second heap dump comes from allocation_trace_stop, so the
# leak's objects in heap-2.json carry the file and line that allocated them.
require_relative "helper"

class CaptureTraceTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("capture-trace", <<~KEYS)
      CaptureSize "80M"
      CaptureInterval 1
      TraceAllocations true
      DumpShapes false
    KEYS
  end

  def test_second_dump_carries_allocation_sites
    w = @bench.start_leaker("leaky-trace")
    dir, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }

    assert_equal true, m["complete"], JSON.pretty_generate(m)
    assert_equal %w[trace_start dump heap_profile gc_start wait scheduler threads gc_stop trace_stop
                    heap_profile wait dump heap_profile],
                 m["steps"].map { |s| s["step"] }
    assert_equal "heap-2.json.zst", m["steps"][8]["file"]
    traced = Capture.heap_lines(File.join(dir, "heap-2.json")).select do |o|
      o["file"].to_s.end_with?("leaker.rb")
    end
    refute_empty traced, "no object in heap-2.json names leaker.rb as its allocation site"
    assert traced.all? { |o| o["line"].is_a?(Integer) }
    # DumpShapes false: no SHAPE records for Reap (Ruby 3.1 writes none at all;
    # newer Rubies would without the setting).
    assert_empty Capture.heap_lines(File.join(dir, "heap-3.json")).select { |o| o["type"] == "SHAPE" }
  end
end
