# Issue 24, "shipping does not wait behind another capture's analysis": one
# analysis thread takes captures one at a time, so a worker's slow (or held)
# analysis must not hold back CaptureCommand for another worker's capture
# that needs no analysis. The analysis thread is frozen here (a cgroup v1
# freezer holding that one thread), worker A's capture waits for it, and
# worker B's capture, which has nothing to analyse (its dumps were refused),
# is shipped meanwhile; once the thread thaws, A's is analysed and shipped.
require_relative "helper"

class SecurityShipOrderTest < Capture::Test
  FREEZER = "/sys/fs/cgroup/freezer"

  def setup
    skip "no cgroup v1 freezer at #{FREEZER}" unless File.exist?(File.join(FREEZER, "tasks"))
    @bench = Capture::Bench.new("sec-order", Security.keys + <<~KEYS)
      Plan "dump dump"
      DumpTransfer "stream"
      CaptureCooldown 0
      StepTimeout "10s"
      CaptureCommand "#{Security.command('say-done', 'echo "shipped $MEMDIAG_STATUS"')}"
    KEYS
  end

  def shipped(w) = @bench.site.log.scan(/CaptureCommand for worker #{w.name} \(pid #{w.pid}\): exited with status 0/).size

  def test_a_capture_without_analysis_ships_while_another_is_analysed
    site = @bench.site
    a = @bench.start_leaker("analysed", rate: Capture::MiB, max: 8 * Capture::MiB)
    b = Security.attacker(@bench, "refuse")
    # A's first capture starts the analysis thread (and is shipped).
    assert @bench.capture(a).ok?
    site.wait_until("A's first capture is shipped") { shipped(a) == 1 }

    freeze_analysis_thread do
      assert @bench.capture(a).ok?
      held, = @bench.wait_manifest(a, "the second capture ended complete") do |m|
        m["end"] && m["complete"] && m["analysis"].nil?
      end
      assert @bench.capture(b).ok?
      site.wait_until("B's capture, with nothing to analyse, is shipped") { shipped(b) == 1 }
      _, mb = @bench.wait_manifest(b, "ended") { |m| m["end"] }
      assert_equal false, mb["complete"], JSON.pretty_generate(mb)
      refute File.exist?(File.join(held, "analysis.json")), "A's analysis ran while its thread was frozen"
      assert_equal 1, shipped(a), "A's second capture was shipped before its analysis"
      @held = held
    end
    site.wait_until("A's second capture is analysed and shipped") { shipped(a) == 2 }
    assert File.exist?(File.join(@held, "analysis.json"))
  end

  private

  # Runs the block with collectd's "memdiag analyze" thread (alone) frozen.
  def freeze_analysis_thread
    pid = @bench.site.collectd_pid
    tid = Dir[File.join("/proc", pid.to_s, "task", "*")].find do |t|
      File.read(File.join(t, "comm")).strip == "memdiag analyze"
    end
    refute_nil tid, "no memdiag analyze thread in collectd #{pid}"
    tid = File.basename(tid)
    cg = File.join(FREEZER, "memdiag-test-#{Process.pid}")
    Dir.mkdir(cg)
    begin
      File.write(File.join(cg, "tasks"), tid)
      File.write(File.join(cg, "freezer.state"), "FROZEN")
      @bench.site.wait_until("the analysis thread is frozen") do
        File.read(File.join(cg, "freezer.state")).strip == "FROZEN"
      end
      yield
    ensure
      File.write(File.join(cg, "freezer.state"), "THAWED")
      File.write(File.join(FREEZER, "tasks"), tid) if File.exist?(File.join("/proc", pid.to_s, "task", tid))
      Dir.rmdir(cg)
    end
  end
end
