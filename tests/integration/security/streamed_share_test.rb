# Issue 24, finding 9: a streamed capture's folder (a container's worker,
# DumpTransfer stream) was root's, mode 0700, and so were the files in it: a
# CaptureCommandUser other than root got "Permission denied", and with the
# recommended setup no container's capture was ever shipped. Now the folder
# has the command user's group (0750) and the plugin's files in it that
# group too (0640): a real CaptureCommand running as a dedicated user (not
# the workers') copies the whole folder, while the worker's user, which is
# another, still cannot read it.
require_relative "helper"
require "etc"

class SecurityStreamedShareTest < Capture::Test
  SHIPPER = "backup" # in every Debian's base-passwd; not the workers' user

  def setup
    @shipper = Etc.getpwnam(SHIPPER)
    probe = File.join(E2E::HOOK_LIB, "memdiag", "hook.rb")
    unless system("setpriv", "--reuid=#{Security::NOBODY}", "--regid=#{Security::NOBODY}", "--clear-groups",
                  "test", "-r", probe)
      skip "user nobody cannot read this checkout; its directories are not world-readable"
    end
    @dest = Dir.mktmpdir("memdiag-sec-shipped-")
    File.chown(@shipper.uid, @shipper.gid, @dest)
    command = Security.command("copy-folder", <<~SH)
      echo "copying as $(id -un)"
      exec cp -R "$1" "#{@dest}/"
    SH
    @bench = Capture::Bench.new("sec-streamed", Security.keys + <<~KEYS)
      Plan "dump dump"
      DumpTransfer "stream"
      DumpMode "fork"
      CaptureCooldown 0
      CaptureCommand "#{command}"
      CaptureCommandUser "#{SHIPPER}"
    KEYS
  rescue ArgumentError
    skip "no user #{SHIPPER}"
  end

  def teardown
    super
    FileUtils.rm_rf(@dest) if @dest && !ENV["MEMDIAG_E2E_KEEP"]
  end

  def test_a_dedicated_user_ships_a_streamed_capture
    site = @bench.site
    w = @bench.start_leaker("streamer", rate: Capture::MiB, max: 8 * Capture::MiB, uid: Security::NOBODY)
    assert @bench.capture(w).ok?
    line = nil
    site.wait_until("CaptureCommand ends") do
      line = site.log[/CaptureCommand for (the capture of )?worker streamer \(pid #{w.pid}\): (exited with status \d+|[^\n]*killed)[^\n]*/]
    end
    folder = @bench.folders(w).first
    assert_match(/exited with status 0/, line, site.log.lines.grep(/CaptureCommand/).join)
    assert_match(/CaptureCommand for worker streamer \(pid #{w.pid}\): copying as #{SHIPPER}/, site.log)
    st = File.stat(folder)
    assert_equal [0, @shipper.gid, 0o750], [st.uid, st.gid, st.mode & 0o7777], "a streamed folder: root's, the shipper's group, 0750"

    local = Capture.tree(folder)
    assert_includes local.keys, "capture.json"
    assert_includes local.keys, "analysis.json", "shipped after its analysis: #{local.keys}"
    assert local.keys.any? { |k| k.start_with?("heap-1.json") }, local.keys.inspect
    assert_equal local, Capture.tree(File.join(@dest, File.basename(folder))), "the copy differs from the capture folder"

    # The worker's user is another: it reads none of it.
    out, status = Open3.capture2e("setpriv", "--reuid=#{Security::NOBODY}", "--regid=#{Security::NOBODY}",
                                  "--clear-groups", "ls", folder)
    refute status.success?, "the worker's user lists its streamed folder: #{out}"
    refute_match(/CaptureCommandUser #{SHIPPER} (is the user|has the group)/, site.log)
  end
end
