# The capture file system fills while a heap dump streams into the plugin
# (CaptureDirectory on a small tmpfs): the plugin's writer removes its
# temporary file at the first failed write, so nothing is left under a final
# name and no debris; the dump step fails naming the cause, the capture ends
# incomplete with FAILURE notifications, and collectd, the plugin and the
# worker carry on (the worker answers the next request). The plugin tells
# the worker to stop the stream (StreamCredit cancel): it is not sent the
# rest of a dump it can only drop.
require_relative "stream_helper"

class CaptureStreamDiskFullTest < Capture::Test
  # A few MiB: the first dump (about 6 MB once compressed) does not fit.
  TMPFS_SIZE = "2m"
  # A ballast object dumps to about 190 bytes of JSON; 100 is a floor.
  DUMP_AT_LEAST = StreamCapture::BALLAST * 100

  def setup
    skip "mounting a tmpfs needs root" unless Process.uid.zero?
    # The space check before the dump would refuse it outright: let it start.
    # Uncompressed, the disk fills after its first 2 MB of the dump; that
    # test dumps from a fork child.
    plain = name.include?("uncompressed")
    @bench = StreamCapture.bench(plain ? "stream-diskfull-plain" : "stream-diskfull", <<~KEYS)
      DumpMode "#{plain ? "fork" : "inline"}"
      KeepFree 0
      DumpSpaceFactor 0
      DumpCompression "#{plain ? "none" : "zstd"}"
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

  # Runs the capture of a new worker until its plan ends; returns the
  # worker, its connection, the capture folder and the failed dump step.
  def failed_dump(name, file)
    w = StreamCapture.start_worker(@bench, name)
    id = @bench.connection_id(w)
    # Not StreamCapture.start_and_wait_streaming: once the plugin stops
    # the stream, the whole dump step may take less than a second, and a
    # poll for its temporary file can miss it. The step's "No space left"
    # error below shows the bytes did arrive.
    r = @bench.capture(w)
    assert r.ok?, "memdiagctl capture failed: #{r}"
    dir, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }
    assert_equal false, m["complete"], JSON.pretty_generate(m)
    step = m["steps"].first
    # named as the file it would have been (heap-1.json.zst with zstd)
    assert_equal ["dump", "error", file], [step["step"], step["status"], step["file"]],
                 JSON.pretty_generate(m)
    assert_match(/could not be stored: writing #{Regexp.escape(file)} failed: No space left on device/,
                 step["error"])
    @bench.wait_note("FAILURE", /capture of worker #{name} .*: dump \(#{Regexp.escape(file)}\) failed: .*No space left on device/)
    assert_empty StreamCapture.debris(@bench)
    # the heap profile after the dump is small and may still fit
    assert_equal %w[capture.json], Dir.children(dir).grep_v(/\Aheap_profile-1\.pb\.gz\z/)
    [w, id, dir, step]
  end

  # Everyone carries on: collectd, the plugin and the worker's connection.
  def assert_carry_on(w, id)
    site = @bench.site
    assert site.collectd_alive?
    ping = site.ctl("ping", "connection_id=#{id}")
    assert ping.ok?, ping.to_s
    assert_equal [id], site.workers_json.map { |x| x["connection_id"] }
    assert w.alive?
  end

  def test_full_disk_leaves_no_dump_and_no_debris
    w, id, _, step = failed_dump("streamfull", "heap-1.json.zst")
    assert_match(/the plugin stopped the stream after \d+ bytes/, step["error"])
    @bench.wait_note("FAILURE", /capture of worker streamfull .*capture incomplete/)
    assert_carry_on(w, id)
  end

  # Uncompressed, the disk is full after 2 MB of the dump: the worker stops
  # within its credit window (4 MiB) and what was in flight, far below the
  # hundreds of MB it would otherwise send, and fails the request; its dump
  # child met a closed pipe and is gone (reaped before the reply).
  def test_uncompressed_full_disk_stops_the_worker_early
    w, id, _, step = failed_dump("streamstop", "heap-1.json")
    sent = step["error"][/the plugin stopped the stream after (\d+) bytes/, 1]
    refute_nil sent, step["error"]
    puts "bytes the plugin received before the worker stopped: #{sent} " \
         "(the dump is at least #{DUMP_AT_LEAST})"
    assert_operator Integer(sent), :<, DUMP_AT_LEAST / 10, step["error"]
    assert_equal [w.pid], StreamCapture.processes_naming(w.tick_file)
    assert_carry_on(w, id)
  end
end
