# frozen_string_literal: true

# A Ruby thread waiting in Native#next_request can be interrupted (Thread#raise,
# Thread#kill) after the core has handed it a request but before it holds the
# GVL again. The request must not vanish: the plugin gets an error reply for
# it at once, instead of waiting out its timeout while heartbeats call the
# worker busy with a request nobody runs.
require_relative "helper"

class HookNativeInterruptTest < Minitest::Test
  include HookTest::Fixture

  # Three threads: "waiter" waits for a request; "holder" holds the GVL in a
  # read(2) of stdin (Fiddle, need_gvl) so that the waiter, once the core
  # hands it the request, queues for the GVL instead of returning to Ruby;
  # "raiser" queued for the GVL before the waiter did (its FIFO was written
  # first), so it runs next and raises in the waiter while the waiter still
  # holds the request. The GVL goes to the first thread queued for it.
  WORKER = <<~RUBY
    $stdout.sync = true
    require "fiddle"
    require "memdiag/hook_native"

    native = Memdiag::Hook::Native.new(
      socket: ENV["MEMDIAG_SOCKET"], certificate: ENV["MEMDIAG_CERT"], key: ENV["MEMDIAG_KEY"],
      ca: ENV["MEMDIAG_CA"], name: "interrupted", capabilities: ["ping"]
    )
    sleep 0.05 until native.connection_id.positive?

    class Stop < StandardError; end
    waiter = Thread.new do
      native.next_request(-1)
    rescue Stop
      :stopped
    end
    # opened here, read-write so that opening does not wait for a writer:
    # the raiser's only wait is the read
    fifo = File.open(ENV.fetch("RAISE_FIFO"), "r+")
    raiser = Thread.new do
      fifo.sysread(1)
      waiter.raise(Stop)
    end
    raiser.name = "raiser"
    Thread.pass until waiter.status == "sleep" && raiser.status == "sleep"

    read = Fiddle::Function.new(Fiddle.dlopen(nil)["read"],
                                [Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T],
                                Fiddle::TYPE_SSIZE_T, need_gvl: true)
    buf = Fiddle::Pointer.malloc(1)
    puts "holding the GVL"
    read.call(0, buf, 1)
    raiser.join
    puts "waiter: \#{waiter.value.inspect}"

    loop do
      request = native.next_request(-1)
      break if request == false
      next unless request

      native.reply(request[:connection_id], request[:id], { status: :ok, note: "served" })
    end
  RUBY

  FUTEX = 202 # x86_64

  # The thread has left its read and waits on a futex: queued for the GVL.
  def wait_until_queued_for_the_gvl(pid, name)
    skip "needs /proc/PID/task/TID/syscall on x86_64" unless RUBY_PLATFORM.start_with?("x86_64-linux")
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + HookTest::WAIT
    loop do
      task = Dir.glob("/proc/#{pid}/task/*").find { |t| (File.read("#{t}/comm").strip rescue "") == name }
      return if task && (File.read("#{task}/syscall").split.first.to_i rescue -1) == FUTEX

      flunk "thread #{name} never queued for the GVL" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.01
    end
  end

  def test_request_taken_by_an_interrupted_waiter_gets_an_error_reply
    server = start_server
    stdin_r, stdin_w = IO.pipe
    fifo = File.join(@dir, "raise.fifo")
    File.mkfifo(fifo)
    env = hook_env(name: "interrupted").merge("RUBYOPT" => "-I#{HookTest::LIB}", "RAISE_FIFO" => fifo)
    worker = start_worker(WORKER, name: "interrupted", env: env, stdin: stdin_r)
    stdin_r.close
    conn = server.wait_for("hello") { true }["conn"]
    worker.wait_out(/holding the GVL/)
    File.open(fifo, "w") { |f| f.write("x") }
    wait_until_queued_for_the_gvl(worker.pid, "raiser")

    before = server.count("sent")
    server.command("request #{conn} ping")
    sent = server.wait_for("sent", after: before) { |e| e["conn"] == conn }
    # the heartbeat says the core handed the request out
    server.wait_for("heartbeat") { |e| e["conn"] == conn && e["busy_request_id"] == sent["request_id"] }
    stdin_w.write("x")
    stdin_w.close

    reply = server.wait_for("reply") { |e| e["conn"] == conn && e["request_id"] == sent["request_id"] }
    assert_equal "error", reply["status"]
    assert_match(/interrupted/, reply["error"])
    worker.wait_out(/waiter: :stopped/)

    assert_equal "ok", server.request(conn, "ping")["status"], "the hook still serves requests"
    assert worker.alive?
  end
end
