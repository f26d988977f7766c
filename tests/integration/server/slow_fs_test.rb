# A capture directory on a slow disk does not stop the server (issue 12
# item 2): with every manifest write, prune scan and statvfs of a capture
# delayed 2 s (a test-only hook linked into a copy of the plugin,
# slow_fs.c), a capture runs to its end while another worker's heartbeats
# are each answered before its next one is sent and memdiagctl answers.
# Before the capture's file-system work moved to its own thread, each
# delay stopped the server loop for its whole length.
require_relative "../harness/harness"

class SlowFsTest < Minitest::Test
  DELAY_MS = 2000

  def setup
    @delays = File.join(Dir.tmpdir, "memdiag-slowfs-#{Process.pid}.log")
    ENV["MEMDIAG_TEST_FS_DELAY_MS"] = DELAY_MS.to_s
    ENV["MEMDIAG_TEST_FS_DELAY_LOG"] = @delays
    @site = E2E::Site.new("slowfs")
    @captures = File.join(@site.dir, "captures")
    @site.start_collectd(<<~KEYS)
      HeartbeatInterval "1s"
      CaptureDirectory "#{@captures}"
      Plan "threads wait dump wait threads"
      CaptureInterval "1s"
      MaxUse "1G"
      Analyze false
    KEYS
  end

  def teardown
    @site&.cleanup
    File.delete(@delays) if File.exist?(@delays)
  end

  def answers(w) = w.heartbeats.map { |l| l.scan(/sequence=(\d+) sent=(\d+)/).first.map(&:to_i) }

  def test_a_slow_capture_directory_leaves_the_server_responsive
    beater = @site.test_worker("beater", "--show-heartbeats")
    @site.wait_until("beater's first two heartbeats are answered") { answers(beater).size >= 2 }
    ruby = @site.start_worker("captured")
    id = @site.wait_registered(ruby)["connection_id"]

    before = answers(beater).size
    r = @site.ctl("capture", "connection_id=#{id}")
    assert r.ok?, "memdiagctl capture: #{r}"
    manifest = nil
    @site.wait_until("the capture ends", timeout: 3 * E2E::WAIT) do
      f = Dir.glob(File.join(@captures, "*", "capture.json")).first
      manifest = f && JSON.parse(File.read(f))
      manifest && manifest["end"]
    rescue JSON::ParserError
      nil
    end
    r = @site.ctl("workers")
    assert r.ok?, "memdiagctl workers: #{r}"

    delayed = File.exist?(@delays) ? File.readlines(@delays, chomp: true) : []
    assert_operator delayed.count("manifest"), :>=, 3, "the delay hook did not run: #{delayed}"
    assert_equal "finished", manifest["end"], JSON.pretty_generate(manifest)
    during = answers(beater).drop(before)
    assert_operator during.size, :>=, 3, "too few answers during the capture: #{beater.output}"
    late = during.reject { |seq, sent| seq == sent }
    assert_empty late, "answers that came after the next heartbeat was sent ([sequence, sent])"
  end
end
