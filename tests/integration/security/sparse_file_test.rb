# Issue 24, finding 2: with DumpTransfer file and zstd, a worker answered a
# dump with a 15 TiB sparse heap-1.json; the plugin's only writer thread
# read it at a few hundred MB/s for hours, every stream behind it waited and
# collectd ignored SIGTERM. Now a sparse file (or one over the dump's
# budget) is refused before a byte is read and stays the worker's, named in
# the step's note; the copy runs in slices a stop ends; collectd stops on
# SIGTERM within seconds.
require_relative "helper"

class SecuritySparseFileTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("sec-sparse", Security.keys + <<~KEYS)
      Plan "dump"
      DumpTransfer "file"
      DumpCompression zstd
      KeepFree "10M"
      StepTimeout "20s"
    KEYS
  end

  def test_sparse_dump_holds_nobody
    w = Security.attacker(@bench, "sparse")
    r = @bench.capture(w)
    assert r.ok?, r.to_s
    @bench.site.wait_until("the attacker planted its file") { w.output.include?("request op=") }
    dir = nil
    @bench.site.wait_until("the sparse file is there") do
      dir = @bench.folders(w).first
      dir && File.exist?(File.join(dir, "heap-1.json"))
    end
    # Whatever the plugin is doing with it now, SIGTERM ends collectd.
    sleep 2
    manifest = @bench.manifest(dir)
    took = Security.stop_seconds(@bench.site)
    refute_nil took, "collectd still ran 60 s after SIGTERM (the writer is held by the sparse file)"
    puts format("collectd exited %.1f s after SIGTERM", took)
    assert_operator took, :<, 15
    step = manifest["steps"].first
    assert_equal "ok", step["status"], JSON.pretty_generate(manifest)
    assert_match(/not compressed: .*the worker's file is sparse/, step["note"])
    refute File.exist?(File.join(dir, "heap-1.json.zst")), "a compressed copy of the sparse file"
  end
end
