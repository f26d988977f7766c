# Issue 24, finding 6: with DumpTransfer file and CaptureCommandUser set to
# the workers' user, a worker renamed a root-owned file of the same file
# system into its capture folder as heap-1.json. Before CaptureCommand ran,
# the plugin gave every root-owned single-link file in the folder the
# folder's group and mode 0640, and the worker's user read the secret. Now
# only what the plugin creates is shared, as it creates it, and a worker's
# file only when it is a regular file of the worker's own uid with one link:
# the secret keeps its owner, group and mode, and the command cannot read it.
require_relative "helper"

class SecuritySharedSecretTest < Capture::Test
  SECRET = "root-only secret #{Process.pid}\n".freeze

  def setup
    @command = Security.command("read-all", <<~SH)
      for f in "$1"/*; do
        if cat "$f" >/dev/null 2>&1; then echo "read ${f##*/}"; else echo "cannot read ${f##*/}"; fi
      done
    SH
    @bench = Capture::Bench.new("sec-secret", Security.keys + <<~KEYS)
      Plan "dump"
      DumpTransfer "file"
      DumpCompression "none"
      StepTimeout "5s"
      CaptureCommand "#{@command}"
      CaptureCommandUser "nobody"
    KEYS
  end

  def test_a_root_file_renamed_into_the_folder_is_not_shared
    site = @bench.site
    # A directory of the application's user holding a file of root's, on the
    # capture file system (a key root put in the app's config directory).
    app = File.join(site.dir, "app")
    FileUtils.mkdir_p(app)
    File.chown(Security::NOBODY, Security::NOBODY, app)
    File.chmod(0o700, app)
    secret = File.join(app, "secret.key")
    File.write(secret, SECRET)
    File.chmod(0o600, secret)
    File.chown(0, 0, secret)

    w = Security.attacker(@bench, "rename", "--source", secret)
    r = @bench.capture(w)
    assert r.ok?, r.to_s
    site.wait_until("CaptureCommand ran") do
      site.log.match?(/CaptureCommand for worker #{w.name} \(pid #{w.pid}\): exited with status 0/)
    end
    dir = @bench.folders(w).first
    moved = File.join(dir, "heap-1.json")
    refute File.exist?(secret), "the attacker did not move the secret"
    st = File.stat(moved)
    assert_equal [0, 0, 0o600], [st.uid, st.gid, st.mode & 0o7777],
                 format("the secret's owner, group and mode changed: uid %d gid %d mode %o",
                        st.uid, st.gid, st.mode & 0o7777)
    log = site.log
    assert_match(/CaptureCommand for worker #{w.name} \(pid #{w.pid}\): cannot read heap-1\.json/, log)
    assert_match(/CaptureCommand for worker #{w.name} \(pid #{w.pid}\): read capture\.json/, log)
    out, = Open3.capture2e("setpriv", "--reuid=#{Security::NOBODY}", "--regid=#{Security::NOBODY}",
                           "--clear-groups", "cat", moved)
    refute_includes out, SECRET.strip, "the workers' user reads root's secret"
  end
end
