# A worker that does not run as root can write its evidence: the capture
# folder is made 0700 and handed to the worker's uid/gid (from the socket's
# credentials), and holds only what that worker wrote plus the manifest.
require_relative "helper"

class CaptureNonRootTest < Capture::Test
  NOBODY = 65_534

  def setup
    # The worker runs as nobody and loads the hook from the build tree: a
    # checkout under a directory nobody cannot enter makes that impossible.
    probe = File.join(E2E::HOOK_LIB, "memdiag", "hook.rb")
    unless system("setpriv", "--reuid=#{NOBODY}", "--regid=#{NOBODY}", "--clear-groups",
                  "test", "-r", probe)
      skip "user nobody cannot read #{probe}; this checkout's directories are not world-readable"
    end
    @bench = Capture::Bench.new("capture-nonroot", <<~KEYS)
      SocketMode "0666"
      CaptureSize "80M"
      CaptureInterval 1
      Plan "dump threads dump"
      DumpCompression none
    KEYS
  end

  def test_folder_belongs_to_the_worker
    w = @bench.start_leaker("leaky-nobody", uid: NOBODY)
    dir, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }

    assert_equal true, m["complete"], JSON.pretty_generate(m) + "\n" + w.output
    assert_equal NOBODY, m["worker"]["uid"]
    st = File.stat(dir)
    assert_equal 0o700, st.mode & 0o7777
    assert_equal NOBODY, st.uid
    assert_equal NOBODY, st.gid
    %w[heap-1.json threads.txt heap-2.json].each do |f|
      fst = File.stat(File.join(dir, f))
      assert_equal NOBODY, fst.uid, "#{f} not written by the worker"
      assert_equal 0o600, fst.mode & 0o7777
    end
    assert Capture.heap_lines(File.join(dir, "heap-2.json")).any?
  end
end
