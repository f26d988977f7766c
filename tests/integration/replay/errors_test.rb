# memdiagctl replay refuses what it cannot honour, saying why: unknown key,
# bad value, missing or malformed trace. Exit 2 for usage, 1 for a bad file.
require "minitest/autorun"
require "open3"
require "fileutils"
require "tmpdir"

class ReplayErrorsTest < Minitest::Test
  CTL = ENV.fetch("MEMDIAG_CTL")

  def setup
    @dir = Dir.mktmpdir("md-replay-")
  end

  def teardown
    FileUtils.remove_entry(@dir)
  end

  def trace(text)
    path = File.join(@dir, "t.csv")
    File.write(path, text)
    path
  end

  def replay(*args)
    out, err, status = Open3.capture3(CTL, "replay", *args)
    [out, err, status.exitstatus]
  end

  def good
    trace("epoch,value\n1790000000,100\n1790000010,100\n")
  end

  # A series sampled every 30 s is replayed as any other, with a note on
  # stderr (the plugin's start-up notice): the early path gets two samples
  # a one-minute bucket where it was tuned on six. A pause does not move
  # the usual interval, and a series sampled every 10 s gets no note.
  def test_sparse_series_gets_a_note
    rows = ->(step, n) { (0...n).map { |k| "#{1_790_000_000 + k * step},#{(300 + k) << 20}\n" }.join }
    out, err, code = replay("MemoryLimit=1G", "--summary", trace("epoch,value\n" + rows.call(30, 40)))
    assert_equal 0, code, err
    assert_match(/"summary":true,"samples":40,/, out)
    assert_match(/\Amemdiagctl replay: note: the series is sampled every 30 s, which gives the leak detector's early path 2 samples a bucket where it was tuned on 6: /, err)
    paused = "epoch,value\n" + rows.call(10, 30) + "1790000600,#{400 << 20}\n1790000610,#{401 << 20}\n"
    out, err, code = replay("MemoryLimit=1G", "--summary", trace(paused))
    assert_equal 0, code, err
    assert_match(/"samples":32,/, out)
    assert_empty err
    _, err, = replay("MemoryLimit=1G", "ShortWindow=0", trace("epoch,value\n" + rows.call(30, 40)))
    assert_empty err, "a note with the urgent rule off"
  end

  def test_unknown_key
    out, err, code = replay("MemoryLimt=1G", good)
    assert_equal 2, code
    assert_empty out
    assert_match(/unknown key "MemoryLimt"/, err)
  end

  def test_bad_value
    out, err, code = replay("MemoryLimit=lots", good)
    assert_equal 2, code
    assert_empty out
    assert_match(/MemoryLimit "lots" is not a size/, err)
    _, err, code = replay("Horizon=0", good)
    assert_equal 2, code
    assert_match(/Horizon/, err)
  end

  def test_conflicting_keys
    _, err, code = replay("MemoryLimit=1G", "CaptureSize=2G", good)
    assert_equal 2, code
    assert_match(/CaptureSize .* must be below MemoryLimit/, err)
  end

  def test_missing_trace_argument
    _, err, code = replay("MemoryLimit=1G")
    assert_equal 2, code
    assert_match(/missing TRACE.csv/, err)
    assert_match(/usage: memdiagctl replay/, err)
  end

  def test_unreadable_file
    path = File.join(@dir, "absent.csv")
    out, err, code = replay(path)
    assert_equal 1, code
    assert_empty out
    assert_includes err, "#{path}: cannot open"
  end

  def test_malformed_line_is_named
    path = trace("epoch,value\n1790000000,100\n1790000010,12x\n")
    _, err, code = replay(path)
    assert_equal 1, code
    assert_includes err, "#{path}:3: invalid value \"12x\""
  end

  def test_missing_header
    path = trace("1790000000,100\n")
    _, err, code = replay(path)
    assert_equal 1, code
    assert_includes err, "#{path}:1: expected the header line"
  end

  def test_time_going_backwards
    path = trace("epoch,value\n1790000010,100\n1790000000,100\n")
    _, err, code = replay(path)
    assert_equal 1, code
    assert_includes err, "#{path}:3: time 1790000000 goes backwards"
  end

  def test_help
    out, _, code = replay("--help")
    assert_equal 0, code
    assert_match(/MemoryLimit/, out)
  end
end
