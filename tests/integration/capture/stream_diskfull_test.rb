# The capture file system fills while a heap dump streams into the plugin
# (CaptureDirectory on a small tmpfs): the plugin's writer removes its
# temporary file at the first failed write, so nothing is left under a final
# name and no debris; the dump step fails naming the cause, the capture ends
# incomplete with FAILURE notifications, and collectd, the plugin and the
# worker carry on (the worker answers the next request).
require_relative "stream_helper"

class CaptureStreamDiskFullTest < Capture::Test
  # A few MiB: the first dump (about 6 MB once compressed) does not fit.
  TMPFS_SIZE = "2m"

  def setup
    skip "mounting a tmpfs needs root" unless Process.uid.zero?
    # The space check before the dump would refuse it outright: let it start.
    @bench = StreamCapture.bench("stream-diskfull", <<~KEYS)
      DumpMode "inline"
      KeepFree 0
      DumpSpaceFactor 0
    KEYS
    FileUtils.mkdir_p(@bench.captures)
    @bench.site.run!("mount", "-t", "tmpfs", "-o", "size=#{TMPFS_SIZE},mode=0711",
                     "memdiag-full", @bench.captures)
    @mounted = true
  end

  def teardown
    @bench&.site&.stop_collectd
    system("umount", @bench.captures) if @mounted
    super
  end

  def test_full_disk_leaves_no_dump_and_no_debris
    site = @bench.site
    w = StreamCapture.start_worker(@bench, "streamfull")
    id = @bench.connection_id(w)
    dir, = StreamCapture.start_and_wait_streaming(@bench, w)

    _, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }
    assert_equal false, m["complete"], JSON.pretty_generate(m)
    step = m["steps"].first
    assert_equal %w[dump error], [step["step"], step["status"]], JSON.pretty_generate(m)
    # named as the file it would have been (DumpCompression zstd)
    assert_equal "heap-1.json.zst", step["file"]
    assert_match(/could not be stored: writing heap-1\.json\.zst failed: No space left on device/,
                 step["error"])
    @bench.wait_note("FAILURE",
                     /capture of worker streamfull .*: dump \(heap-1\.json\.zst\) failed: .*No space left on device/)
    @bench.wait_note("FAILURE", /capture of worker streamfull .*capture incomplete/)
    assert_empty StreamCapture.heap_files(dir), Dir.children(dir).inspect
    assert_empty StreamCapture.debris(@bench)
    assert_equal %w[capture.json], Dir.children(dir)

    # Everyone carries on: collectd, the plugin and the worker's connection.
    assert site.collectd_alive?
    ping = site.ctl("ping", "connection_id=#{id}")
    assert ping.ok?, ping.to_s
    assert_equal [id], site.workers_json.map { |x| x["connection_id"] }
    assert w.alive?
  end
end
