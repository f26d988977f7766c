# frozen_string_literal: true

# Native.new accepts any option that converts with to_str. The converted
# strings exist only inside the extension until the C core has copied them;
# a GC in between (forced here with GC.stress) must not hand the core freed
# memory: the hook has to use the name, socket and certificates it was given.
require_relative "helper"

class HookNativeOptionsTest < Minitest::Test
  include HookTest::Fixture

  WORKER = <<~RUBY
    require "memdiag/hook_native"
    Opt = Struct.new(:value) do
      def to_str = value.dup
    end
    hooks = 5.times.map do |i|
      GC.stress = true
      native = Memdiag::Hook::Native.new(
        socket: Opt.new(File.join(ENV["DIR"], "missing-\#{i}.sock")), certificate: Opt.new(ENV["MEMDIAG_CERT"]),
        key: Opt.new(ENV["MEMDIAG_KEY"]), ca: Opt.new(ENV["MEMDIAG_CA"]), name: Opt.new("opt-name-\#{i}"),
        capabilities: [Opt.new("ping")], backoff_min_ms: 60_000
      )
      GC.stress = false
      native
    end
    $stdin.gets
    hooks.each(&:close)
  RUBY

  def test_options_converted_with_to_str_survive_a_gc
    stdin_r, stdin_w = IO.pipe
    env = hook_env(name: "opts").merge("RUBYOPT" => "-I#{HookTest::LIB}", "DIR" => @dir)
    worker = start_worker(WORKER, name: "opts", env: env, stdin: stdin_r)
    stdin_r.close
    5.times do |i|
      worker.wait_err(/opt-name-#{i}: cannot connect to #{Regexp.escape(File.join(@dir, "missing-#{i}.sock"))}: /)
    end
    refute_match(/cannot load/, worker.err, "the certificate paths arrived intact")
    stdin_w.puts
    stdin_w.close
    assert_equal 0, worker.wait.exitstatus
  end
end
