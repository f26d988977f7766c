# MaxUse: before a dump, the oldest capture folders go until the captures
# plus the coming dump fit. Folders that are not captures (no capture.json)
# are never touched.
require_relative "helper"

class CaptureMaxUseTest < Minitest::Test
  def setup
    @bench = Capture::Bench.new("capture-maxuse", <<~KEYS)
      CaptureSize "80M"
      CaptureInterval 1
      DumpSpaceFactor 1
      MaxUse "400M"
      Plan "dump wait dump"
    KEYS
    # An old capture of 350 MiB (a sparse file: only its size matters) and a
    # folder memdiag did not make.
    @old = File.join(@bench.captures, "old-1-20200101T000000Z")
    @foreign = File.join(@bench.captures, "operator-notes")
    [@old, @foreign].each { |d| FileUtils.mkdir_p(d, mode: 0o700) }
    File.write(File.join(@old, "capture.json"), "{}\n")
    File.open(File.join(@old, "heap-1.json"), "w") { |f| f.truncate(350 * Capture::MiB) }
    File.open(File.join(@foreign, "big.bin"), "w") { |f| f.truncate(500 * Capture::MiB) }
    File.utime(Time.at(1_577_836_800), Time.at(1_577_836_800), @old)
  end

  def teardown
    @bench&.cleanup
  end

  def test_oldest_capture_makes_room
    w = @bench.start_leaker("leaky-maxuse")
    _, m = @bench.wait_manifest(w, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }

    assert_equal true, m["complete"], JSON.pretty_generate(m)
    refute File.exist?(@old), "the oldest capture should have been removed"
    assert File.exist?(File.join(@foreign, "big.bin")), "a folder without capture.json was touched"
    assert_match(/MaxUse: removed the 1 oldest capture\(s\)/, @bench.site.plugin_log)
  end
end
