# The synthetic traces committed in tests/data/traces are what generate.rb
# writes: regenerate them into a temporary folder and compare, value by
# value (within 1 KiB, so a libm that rounds exp() differently in the last
# bit does not matter).
require "minitest/autorun"
require "tmpdir"

class TracesGeneratedTest < Minitest::Test
  DIR = File.expand_path("../../data/traces", __dir__)

  def test_committed_traces_match_the_generator
    Dir.mktmpdir do |tmp|
      assert system(RbConfig.ruby, File.join(DIR, "generate.rb"), tmp), "generate.rb failed"
      made = Dir[File.join(tmp, "*.csv")].sort
      assert_operator made.size, :>=, 6
      made.each do |path|
        name = File.basename(path)
        committed = File.join(DIR, name)
        assert File.exist?(committed), "#{name} is generated but not committed"
        want = File.readlines(path)
        got = File.readlines(committed)
        assert_equal want.size, got.size, "#{name}: line count"
        assert_equal want.first, got.first, "#{name}: header"
        want.drop(1).zip(got.drop(1)).each_with_index do |(w, g), i|
          wt, wv = w.split(",")
          gt, gv = g.split(",")
          assert_equal wt, gt, "#{name}:#{i + 2}: time"
          assert_in_delta wv.to_i, gv.to_i, 1024, "#{name}:#{i + 2}: value"
        end
      end
    end
  end
end
