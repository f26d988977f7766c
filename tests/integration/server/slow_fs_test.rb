# A capture directory on a slow disk does not stop the server (issue 12
# item 2). A test-only hook linked into a copy of the plugin (slow_fs.c)
# stands for a hung disk: every walk to CaptureDirectory, capture folder
# made, manifest write, prune scan and statvfs first waits for a gate file
# the test creates, then takes 4 s more.
#
# While the gate is shut (the plugin's check of CaptureDirectory at startup,
# the new capture's folder and an operator's manual dump folder are held on
# the disk): another worker's heartbeats are answered, `memdiagctl workers`
# answers, `memdiagctl status` shows the capture starting, and neither
# `memdiagctl capture` nor `memdiagctl memory_dump` (no path: stored by the
# plugin under manual/) has answered (they answer once their folder
# exists). Once the gate opens both do, the dump is in its folder, and the
# capture runs to its end, each heartbeat answered before the one after the
# next is sent (with 1 s heartbeats, within 2 s: a server loop held by one
# 4 s delay leaves some heartbeat unanswered for 3 s or more, while a busy
# 2-core machine under ASan has held an answer past the next beat).
#
# Before the capture's folder was made on the capture module's file-system
# thread, the held mkdir stopped the server loop: no heartbeat answer, no
# `workers`, until the gate opened. Before manifests, prune scans and
# statvfs moved there, each delay did the same.
require_relative "../harness/harness"

class SlowFsTest < Minitest::Test
  DELAY_MS = 4000

  def setup
    @delays = File.join(Dir.tmpdir, "memdiag-slowfs-#{Process.pid}.log")
    @gate = File.join(Dir.tmpdir, "memdiag-slowfs-#{Process.pid}.gate")
    File.delete(@gate) if File.exist?(@gate)
    ENV["MEMDIAG_TEST_FS_DELAY_MS"] = DELAY_MS.to_s
    ENV["MEMDIAG_TEST_FS_DELAY_LOG"] = @delays
    ENV["MEMDIAG_TEST_FS_GATE"] = @gate
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
    File.write(@gate, "") if @gate # let a held file-system call go
    @site&.cleanup
    [@delays, @gate].each { |f| File.delete(f) if f && File.exist?(f) }
  end

  def answers(w) = w.heartbeats.map { |l| l.scan(/sequence=(\d+) sent=(\d+)/).first.map(&:to_i) }
  def delayed = File.exist?(@delays) ? File.readlines(@delays, chomp: true) : []

  def test_a_slow_capture_directory_leaves_the_server_responsive
    beater = @site.test_worker("beater", "--show-heartbeats")
    @site.wait_until("beater's first two heartbeats are answered") { answers(beater).size >= 2 }
    ruby = @site.start_worker("captured")
    id = @site.wait_registered(ruby)["connection_id"]

    # The capture's folder is held on the shut gate.
    capture = Thread.new { @site.ctl("capture", "connection_id=#{id}", "--json") }
    manual = Thread.new { @site.ctl("--json", "memory_dump", "connection_id=#{id}") }
    @site.wait_until("a walk to CaptureDirectory is held at the gate") { delayed.include?("wait open") }
    held = answers(beater).size
    @site.wait_until("beater's heartbeats are answered while the capture folder is held") do
      answers(beater).size >= held + 2
    end
    r = @site.ctl("workers")
    assert r.ok?, "memdiagctl workers while the capture folder is held: #{r}"
    status = JSON.parse(@site.ctl("status", "--json").tap { |s| assert s.ok?, s.to_s }.out)
    cap = status["captures"].to_a.find { |c| c["worker"] == "captured" }
    assert_equal "starting", cap && cap["step"], status.inspect
    assert capture.alive?, "memdiagctl capture answered before its folder could be made"
    assert manual.alive?, "memdiagctl memory_dump answered before its folder could be made"
    assert_empty Dir.glob(File.join(@captures, "captured-*")), "a folder was made through the shut gate"

    File.write(@gate, "")
    r = capture.value
    assert r.ok?, "memdiagctl capture: #{r}"
    dir = JSON.parse(r.out)["directory"]
    assert File.directory?(dir), "the folder memdiagctl capture named: #{dir}"
    r = manual.value
    assert r.ok?, "memdiagctl memory_dump: #{r}"
    path = JSON.parse(r.out)["path"]
    assert_match(%r{\A#{Regexp.escape(@captures)}/manual/captured-\d+-[0-9T.]+Z/heap\.json(\.zst)?\z}, path)
    assert File.file?(path), path

    before = answers(beater).size
    manifest = nil
    @site.wait_until("the capture ends", timeout: 3 * E2E::WAIT) do
      manifest = JSON.parse(File.read(File.join(dir, "capture.json")))
      manifest["end"]
    rescue JSON::ParserError, Errno::ENOENT
      nil
    end
    r = @site.ctl("workers")
    assert r.ok?, "memdiagctl workers: #{r}"

    %w[open mkdir].each { |w| assert_includes delayed, w, "the delay hook did not hold #{w}" }
    assert_operator delayed.count("manifest"), :>=, 3, "the delay hook did not run: #{delayed}"
    assert_equal "finished", manifest["end"], JSON.pretty_generate(manifest)
    during = answers(beater).drop(before)
    assert_operator during.size, :>=, 3, "too few answers during the capture: #{beater.output}"
    late = during.select { |seq, sent| sent - seq > 1 }
    assert_empty late, "answers that came after the heartbeat after the next was sent ([sequence, sent])"
  end
end
