# collectd stopped (SIGTERM) while a heap dump streams into the plugin: by
# the time collectd has exited the plugin has removed what it had received,
# so there is no dump under a final name and no temporary file; the
# manifest and a FAILURE notification say the capture ended with the
# plugin. The worker keeps running, reconnects when collectd starts again,
# and its next stream lands complete.
require_relative "stream_helper"

class CaptureStreamStoppedTest < Capture::Test
  KEYS = "DumpMode \"fork\"\n"

  def setup
    @bench = StreamCapture.bench("stream-stopped", KEYS)
  end

  def test_stopped_collectd_leaves_no_dump_and_the_worker_comes_back
    site = @bench.site
    w = StreamCapture.start_worker(@bench, "streamstop")
    first_id = @bench.connection_id(w)
    dir, partial = StreamCapture.start_and_wait_streaming(@bench, w)

    Process.kill("TERM", site.collectd_pid)
    site.wait_until("collectd exits on SIGTERM") { !site.collectd_alive? }
    refute File.exist?(partial), "#{partial} outlived collectd"
    assert_empty StreamCapture.heap_files(dir), Dir.children(dir).inspect
    assert_empty StreamCapture.debris(@bench)
    m = @bench.manifest(dir)
    assert_equal "plugin shutdown", m["end"], JSON.pretty_generate(m)
    assert_equal false, m["complete"]
    refute_equal "ok", m["steps"].first["status"], JSON.pretty_generate(m)
    assert(@bench.notes.find do |n|
      n.severity == "FAILURE" && n.message.match?(/streamstop .*capture incomplete \(plugin shutdown\)/)
    end, site.log)

    # The worker lives on (its dump child gave up on the broken pipe) and
    # comes back to the next collectd.
    assert w.alive?, w.output
    site.wait_until("the dump child of #{w.name} ends") do
      StreamCapture.processes_naming(w.tick_file) == [w.pid]
    end
    site.start_collectd("CaptureDirectory \"#{@bench.captures}\"\n#{StreamCapture::KEYS}#{KEYS}")
    second_id = @bench.connection_id(w) # IDs count from 1 again in the new plugin
    assert_match(/connected .* as connection #{first_id}$.*connected .* as connection #{second_id}$/m, w.output)

    # Nothing of the broken stream is left in the hook: the next one works.
    assert site.ctl("capture", "connection_id=#{second_id}").ok?
    dir2, m2 = @bench.wait_manifest(w, "the second capture ended", timeout: 3 * E2E::WAIT) do |x|
      x["end"] && x["directory"] != dir
    end
    assert_equal true, m2["complete"], JSON.pretty_generate(m2)
    assert_equal %w[capture.json heap-1.json.zst heap_profile-1.pb.gz], Dir.children(dir2).sort
    assert_empty StreamCapture.debris(@bench)
  end
end
