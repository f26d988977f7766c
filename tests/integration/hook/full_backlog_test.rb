# frozen_string_literal: true

# A plugin that is stopped or wedged stops accepting; once its listen backlog
# is full, a connecting hook must not block in connect(2): its I/O thread
# would never see a stop, and Memdiag::Hook.stop (and the worker's exit,
# which frees the hook) would wait for it for as long as the plugin is stuck.
require_relative "helper"
require "socket"

class HookFullBacklogTest < Minitest::Test
  include HookTest::Fixture

  WORKER = <<~RUBY
    $stdout.sync = true
    require "memdiag/hook"
    Memdiag::Hook.start(socket: ENV["MEMDIAG_SOCKET"], certificate: ENV["MEMDIAG_CERT"],
                        key: ENV["MEMDIAG_KEY"], ca: ENV["MEMDIAG_CA"], name: "backlogged",
                        backoff_min_ms: 20, backoff_max_ms: 50)
    puts "started"
    $stdin.gets
    Memdiag::Hook.stop
    puts "stopped"
  RUBY

  def teardown
    @fillers&.each(&:close)
    super
  end

  # Connections nobody accepts, until the stopped server's backlog is full.
  def fill_backlog
    @fillers = []
    loop do
      s = Socket.new(:UNIX, :STREAM)
      begin
        s.connect_nonblock(Socket.sockaddr_un(@socket))
      rescue IO::WaitWritable, Errno::EAGAIN
        s.close
        break
      end
      @fillers << s
      flunk "the backlog never filled" if @fillers.size > 10_000
    end
  end

  def test_stop_returns_while_the_plugin_accepts_nothing
    server = start_server
    Process.kill(:STOP, server.pid)
    fill_backlog

    stdin_r, stdin_w = IO.pipe
    env = hook_env(name: "backlogged").merge("RUBYOPT" => "-I#{HookTest::LIB}")
    worker = start_worker(WORKER, name: "backlogged", env: env, stdin: stdin_r)
    stdin_r.close
    worker.wait_out(/started/)
    worker.wait_err(/not accepting connections.*retrying/)
    stdin_w.puts("stop")
    stdin_w.close
    worker.wait_out(/stopped/)
    assert_equal 0, worker.wait.exitstatus
  ensure
    Process.kill(:CONT, server.pid) if server
  end
end
