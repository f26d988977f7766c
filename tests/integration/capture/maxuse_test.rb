# MaxUse: before a dump, the oldest capture folders go until the captures
# plus the coming dump fit. Folders that are not captures (no capture.json)
# are never touched. What counts is the disk a capture holds, not the
# apparent size of its files: a worker's sparse 10 TiB file in its own
# folder (issue 11) pushes no other capture out.
require_relative "helper"

class CaptureMaxUseTest < Capture::Test
  def setup
    @bench = Capture::Bench.new("capture-maxuse", <<~KEYS)
      CaptureSize "80M"
      CaptureInterval 1
      DumpSpaceFactor 1
      MaxUse "250M"
      Plan "dump"
    KEYS
    # The dump needs at least CaptureSize (80 MiB), so at most 170 MiB may
    # stay. An old capture holding 200 MiB, a recent small one, a newer one with
    # a sparse 10 TiB file, and a folder memdiag did not make.
    @old = capture("old-1-20200101T000000Z")
    @recent = capture("recent-2-20200102T000000Z")
    @sparse = capture("sparse-3-20200103T000000Z")
    @foreign = File.join(@bench.captures, "operator-notes")
    FileUtils.mkdir_p(@foreign, mode: 0o700)
    File.open(File.join(@old, "heap-1.json"), "wb") do |f|
      chunk = "x" * Capture::MiB
      200.times { f.write(chunk) }
    end
    File.write(File.join(@recent, "heap-1.json"), "y" * Capture::MiB)
    File.open(File.join(@sparse, "heap-1.json"), "w") { |f| f.truncate(10 * 1024**4) }
    File.open(File.join(@foreign, "big.bin"), "w") { |f| f.truncate(500 * Capture::MiB) }
    [[@old, 1_577_836_800], [@recent, 1_577_923_200], [@sparse, 1_578_009_600]].each do |d, t|
      File.utime(Time.at(t), Time.at(t), d)
    end
  end

  def capture(name)
    File.join(@bench.captures, name).tap do |d|
      FileUtils.mkdir_p(d, mode: 0o700)
      File.write(File.join(d, "capture.json"), "{}\n")
    end
  end

  def test_oldest_capture_makes_room
    w = @bench.start_leaker("leaky-maxuse")
    _, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }

    assert_equal true, m["complete"], JSON.pretty_generate(m)
    refute File.exist?(@old), "the oldest capture should have been removed"
    assert File.exist?(File.join(@recent, "heap-1.json")),
           "a sparse file's apparent size pushed another capture out"
    assert File.exist?(File.join(@foreign, "big.bin")), "a folder without capture.json was touched"
    assert_match(/MaxUse: removed the 1 oldest capture\(s\)/, @bench.site.plugin_log)
  end
end
