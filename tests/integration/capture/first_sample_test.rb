# A worker's first sample is taken when it registers, not at the next read
# interval: with sampling once an hour, `memdiagctl workers` shows its
# memory at once, and a capture started right away says how large it is
# (it said "RSS 0 bytes" before; now "RSS 0.0 MiB").
require_relative "helper"

class CaptureFirstSampleTest < Capture::Test
  def setup
    # collectd reads once at start, then not again for an hour: every
    # figure below comes from the sample taken at registration.
    @bench = Capture::Bench.new("capture-first-sample", <<~KEYS)
      Interval 3600
      CaptureInterval 1
    KEYS
  end

  def test_memory_is_known_from_registration
    w = @bench.start_leaker("fresh-first-sample", rate: 1024 * 1024, max: 10 * Capture::MiB)
    entry = @bench.site.workers_json.find { |x| x["pid"] == w.pid }
    refute_nil entry
    assert_operator entry["rss"].to_i, :>, 1024 * 1024, entry.inspect

    r = @bench.site.ctl("capture", "connection_id=#{entry['connection_id']}")
    assert r.ok?, r.to_s
    note = @bench.wait_note("WARNING", /fresh-first-sample .*capture started: operator request; RSS [\d.]+ MiB/)
    rss = Float(note.message[/RSS ([\d.]+) MiB/, 1])
    assert_operator rss, :>, 1.0, note.message
    # Sampled once an hour, the leak detector's early path has a sample
    # for one one-minute bucket in 60; the operator is told at start.
    assert @bench.site.log_has?("Interval 3600 s gives the leak detector's early path 0.017 " \
                                "samples a bucket where it was tuned on 6"), "no notice of the interval"
  end
end
