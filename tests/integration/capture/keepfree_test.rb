# KeepFree larger than the disk: every heap dump is skipped with the reason
# in the manifest and a FAILURE notification; the small steps still run and
# no heap dump file appears.
require_relative "helper"

class CaptureKeepFreeTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("capture-keepfree", <<~KEYS)
      CaptureSize "80M"
      CaptureInterval 1
      KeepFree "1000G"
    KEYS
  end

  def test_dump_skipped_when_space_would_fall_below_keep_free
    w = @bench.start_leaker("leaky-keepfree")
    dir, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }

    assert_equal false, m["complete"], JSON.pretty_generate(m)
    dumps = m["steps"].select { |s| s["step"] == "dump" }
    assert_equal 3, dumps.size
    dumps.each do |s|
      assert_equal "skipped", s["status"]
      assert_match(/\Aheap-\d\.json\.zst\z/, s["file"]) # what the folder would hold
      assert_match(/not enough free space: dump needs .* \+ KeepFree 1000\.0G, .* available/, s["error"])
    end
    others = m["steps"].reject { |s| s["step"] == "dump" }
    others.each { |s| assert_equal "ok", s["status"], s.inspect }
    assert_empty Dir.glob(File.join(dir, "heap-*"))

    note = @bench.wait_note("FAILURE", /leaky-keepfree .*dump \(heap-1\.json\.zst\) skipped: not enough free space/)
    assert_includes note.message, "KeepFree"
    @bench.wait_note("FAILURE", /leaky-keepfree .*capture incomplete \(finished\)/)
    assert w.alive?
  end
end
