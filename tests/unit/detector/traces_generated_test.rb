# The synthetic traces committed in tests/data/traces are what generate.rb
# writes: regenerate them into a temporary folder and compare, value by
# value (within 1 KiB, so a libm that rounds exp() differently in the last
# bit does not matter).
require "minitest/autorun"
require "json"
require "open3"
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

  GENERATOR = File.join(DIR, "generate.rb")

  # Bad arguments: exit 2, one line saying what is wrong and the usage, no
  # backtrace, nothing written.
  def test_bad_arguments_are_refused_clearly
    Dir.mktmpdir do |tmp|
      file = File.join(tmp, "a-file")
      File.write(file, "kept\n")
      {
        %w[--family warmup --bogus 1 out] => "unknown option --bogus",
        %w[--family warmup] => "no OUTDIR",
        %w[--family nope out] => "--family must be warmup or fast-leak",
        %w[--family warmup --ranges wide out] => "--ranges must be standard or held-out",
        %w[--family warmup --noise pink out] => "--noise must be uniform or normal",
        %w[--family warmup --noise] => "--noise wants a name",
        %w[--family warmup --count many out] => "--count wants a whole number",
        %w[--family warmup --count 0 out] => "--count wants a number of at least 1",
        %w[--family warmup --seed] => "--seed wants a whole number",
        %w[--family warmup --step 0 out] => "--step wants a number of at least 1",
        %w[--family warmup --step 30s out] => "--step wants a whole number",
        %w[--family warmup out other] => "one OUTDIR",
        %w[out other] => "one OUTDIR at most",
        ["--family", "warmup", file] => "is not a folder",
        [file] => "is not a folder"
      }.each do |args, why|
        out, err, status = Open3.capture3(RbConfig.ruby, GENERATOR, *args, chdir: tmp)
        assert_equal 2, status.exitstatus, "#{args.join(' ')}: #{err}"
        assert_equal "", out
        assert_match(/\Agenerate\.rb: .*#{Regexp.escape(why)}/, err, args.join(" "))
        assert_match(/^usage: generate\.rb/, err)
        refute_match(/\.rb:\d+:in /, err, "a backtrace instead of an error line")
      end
      assert_equal ["a-file"], Dir.children(tmp), "a refused run wrote something"
      assert_equal "kept\n", File.read(file)
    end
  end

  # --noise normal: the same variance as the uniform noise (a third), with
  # lows beyond the uniform's bound.
  def test_normal_noise_has_the_uniforms_variance
    require_relative "../../data/traces/noise"
    uniform = Noise.new(12_345)
    normal = NormalNoise.new(12_345)
    u = Array.new(20_000) { uniform.next }
    n = Array.new(20_000) { normal.next }
    var = ->(v) { v.sum { |x| x * x } / v.size }
    assert_in_delta 1.0 / 3, var.call(u), 0.01
    assert_in_delta 1.0 / 3, var.call(n), 0.01
    assert_operator u.min, :>=, -1
    assert_operator n.min, :<, -1.5
  end

  # A family's OUTDIR that does not exist yet is made, as a user expects.
  def test_family_outdir_is_made
    Dir.mktmpdir do |tmp|
      dir = File.join(tmp, "new", "traces")
      _, err, status = Open3.capture3(RbConfig.ruby, GENERATOR, "--family", "fast-leak",
                                      "--count", "2", "--seed", "0x10", dir)
      assert status.success?, err
      assert_equal %w[fast-leak-000.csv fast-leak-001.csv fast-leak.json], Dir.children(dir).sort
      assert_equal "epoch,value\n", File.open(File.join(dir, "fast-leak-000.csv"), &:gets)
    end
  end

  # --step S: a sample every S seconds (10 s unless told), the same curve;
  # a leak stops at its first sample at or above 1 GiB, as at 10 s.
  def test_step_sets_the_sampling_interval
    Dir.mktmpdir do |tmp|
      [10, 30].each do |step|
        dir = File.join(tmp, step.to_s)
        extra = step == 10 ? [] : ["--step", step.to_s]
        _, err, status = Open3.capture3(RbConfig.ruby, GENERATOR, "--family", "fast-leak", "--count", "1",
                                        *extra, dir)
        assert status.success?, err
        times = File.readlines(File.join(dir, "fast-leak-000.csv")).drop(1).map { |l| l.split(",").first.to_f }
        assert_equal [step.to_f], times.each_cons(2).map { |a, b| b - a }.uniq, "every #{step} s"
        limit = JSON.parse(File.read(File.join(dir, "fast-leak.json")))["fast-leak-000"]["limit_s"]
        assert_equal times.last - times.first, limit
      end
    end
  end
end
