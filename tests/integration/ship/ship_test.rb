# frozen_string_literal: true

# CaptureCommand shipping captures off the host (docs/fleet.md): the
# example program conf/memdiag-ship-rclone runs as CaptureCommand, as user
# nobody (CaptureCommandUser) for a worker running as nobody, and copies the
# capture folder with rclone to a local `rclone serve webdav` on 127.0.0.1.
# What arrived (after the analysis, so analysis.json too) must equal the
# folder byte for byte. With the server stopped,
# the next upload fails and a FAILURE notification names the worker.
require_relative "../capture/helper"

class ShipRcloneTest < Minitest::Test
  NOBODY = 65_534
  TOP = File.expand_path("../../..", __dir__)
  SHIP = File.join(TOP, "conf", "memdiag-ship-rclone")
  RCLONE = ENV.fetch("MEMDIAG_RCLONE", "rclone")

  def setup
    probe = File.join(E2E::HOOK_LIB, "memdiag", "hook.rb")
    unless system("setpriv", "--reuid=#{NOBODY}", "--regid=#{NOBODY}", "--clear-groups", "test", "-r", probe) &&
           system("setpriv", "--reuid=#{NOBODY}", "--regid=#{NOBODY}", "--clear-groups", "test", "-x", SHIP)
      skip "user nobody cannot read this checkout; its directories are not world-readable"
    end
    # The settings file and a wrapper that points the example at them; both
    # readable by nobody, as /etc/memdiag/ship.env would be by www-data.
    @dir = Dir.mktmpdir("memdiag-ship-")
    File.chmod(0o755, @dir)
    @remote = File.join(@dir, "remote")
    FileUtils.mkdir_p(@remote)
    @port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
    start_webdav
    File.write(File.join(@dir, "ship.env"), <<~ENV)
      MEMDIAG_SHIP_REMOTE=dav:captures
      RCLONE_CONFIG=/dev/null
      RCLONE_CONFIG_DAV_TYPE=webdav
      RCLONE_CONFIG_DAV_URL=http://127.0.0.1:#{@port}/
      RCLONE_CONFIG_DAV_VENDOR=other
      RCLONE_CACHE_DIR=#{@dir}/cache
      RCLONE_RETRIES=1
      RCLONE_LOW_LEVEL_RETRIES=1
      RCLONE_CONTIMEOUT=5s
    ENV
    File.chmod(0o644, File.join(@dir, "ship.env"))
    @wrapper = File.join(@dir, "ship")
    File.write(@wrapper, <<~SH)
      #!/bin/sh
      echo "running as uid $(id -u) for $MEMDIAG_WORKER pid $MEMDIAG_PID: $MEMDIAG_REASON ($MEMDIAG_STATUS)"
      MEMDIAG_SHIP_ENV=#{@dir}/ship.env exec sh #{SHIP} "$@"
    SH
    File.chmod(0o755, @wrapper)
    @bench = Capture::Bench.new("ship", <<~KEYS)
      SocketMode "0666"
      Plan "dump threads dump"
      DumpMode "fork"
      CaptureCooldown 0
      CaptureCommand "#{@wrapper}"
      CaptureCommandUser "nobody"
      CaptureCommandTimeout "2min"
    KEYS
  end

  def teardown
    @bench&.cleanup
    stop_webdav
    FileUtils.rm_rf(@dir) if @dir && !ENV["MEMDIAG_E2E_KEEP"]
  end

  def test_a_capture_is_shipped_and_a_failed_upload_is_reported
    site = @bench.site
    w = @bench.start_leaker("shipper", rate: 1024 * 1024, max: 16 * Capture::MiB, uid: NOBODY)

    assert @bench.capture(w).ok?
    folder, m = @bench.wait_manifest(w, "the plan ended") { |x| x["end"] }
    assert_equal true, m["complete"], JSON.pretty_generate(m)
    site.wait_until("the plugin logs CaptureCommand's exit") do
      site.log.match?(/CaptureCommand for worker shipper \(pid #{w.pid}\): exited with status 0 after/)
    end
    log = site.log
    assert_match(/CaptureCommand for worker shipper \(pid #{w.pid}\): running as uid #{NOBODY} for shipper pid #{w.pid}: operator request \(complete\)/, log)
    assert_match(/CaptureCommand for worker shipper \(pid #{w.pid}\): shipped #{Regexp.escape(folder)} \(complete\) to dav:captures\//, log)

    arrived = Dir[File.join(@remote, "captures", "*", File.basename(folder))]
    assert_equal 1, arrived.size, "one copy under captures/<host>/: #{Dir[File.join(@remote, '**', '*')]}"
    local = Capture.tree(folder)
    assert_includes local.keys, "capture.json"
    assert_includes local.keys, "analysis.json", "shipped after the analysis: #{local.keys}"
    assert_operator local.size, :>=, 5, "capture.json, analysis.json, two heap dumps, a thread dump: #{local.keys}"
    assert_equal local, Capture.tree(arrived.first), "what arrived differs from the capture folder"

    # The remote is gone: the next capture's upload fails and is reported.
    stop_webdav
    assert @bench.capture(w).ok?
    note = @bench.wait_note("FAILURE", /CaptureCommand for the capture of worker shipper \(pid #{w.pid}\): exited with status [1-9]/)
    assert_match(/; folder #{Regexp.escape(@captures = @bench.captures)}\/shipper-#{w.pid}-/, note.message)
  end

  private

  def start_webdav
    log = File.join(@dir, "webdav.log")
    @webdav = Process.spawn(RCLONE, "serve", "webdav", @remote, "--addr", "127.0.0.1:#{@port}",
                            "--config", "/dev/null", out: [log, "w"], err: %i[child out])
    deadline = Time.now + E2E::WAIT
    until listening?
      raise "rclone serve webdav did not listen:\n#{File.read(log)}" if Time.now > deadline

      sleep 0.1
    end
  end

  def listening?
    TCPSocket.new("127.0.0.1", @port).close
    true
  rescue SystemCallError
    false
  end

  def stop_webdav
    return unless @webdav

    Process.kill("TERM", @webdav)
    Process.waitpid(@webdav)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  ensure
    @webdav = nil
  end
end
