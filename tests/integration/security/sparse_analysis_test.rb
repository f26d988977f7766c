# Issue 24, finding 3: a worker's dump that is a sparse file with no
# newline held the analysis thread (19 GB read in 60 s, no end in sight):
# the next analysis and its CaptureCommand waited and collectd ignored
# SIGTERM. Now the reader refuses a sparse file and any line over 1 GiB:
# the analysis ends with that error and collectd stops on SIGTERM. (On
# main fdf7d22 this 15 TiB file is refused by the memory estimate first,
# so the test fails there on the error's words, not on the stop.)
require_relative "helper"

class SecuritySparseAnalysisTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("sec-sparse-ana", Security.keys + <<~KEYS)
      Plan "dump dump"
      DumpTransfer "file"
      DumpCompression none
      KeepFree "10M"
      StepTimeout "20s"
      Analyze true
      AnalyzeMaxMemory "1000T"
    KEYS
  end

  def test_sparse_dump_holds_no_analysis
    w = Security.attacker(@bench, "sparse")
    r = @bench.capture(w)
    assert r.ok?, r.to_s
    dir, = @bench.wait_manifest(w, "the plan ended") { |x| x["end"] }
    sleep 3 # the analysis has begun on the sparse dumps
    took = Security.stop_seconds(@bench.site)
    refute_nil took, "collectd still ran 60 s after SIGTERM (the analysis reads the sparse dump)"
    puts format("collectd exited %.1f s after SIGTERM", took)
    assert_operator took, :<, 15
    m = @bench.manifest(dir)
    assert_match(/sparse file/, JSON.generate(m["analysis"]), JSON.pretty_generate(m))
  end
end
