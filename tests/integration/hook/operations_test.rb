# frozen_string_literal: true

# Every operation, requested over the wire by the test server and run by a
# real Ruby worker hooked through RUBYOPT: what the operator gets back is a
# file or inline text with the evidence the reference workflow asks for.
require_relative "helper"

class HookOperationsTest < Minitest::Test
  include HookTest::Fixture

  WORKER = <<~RUBY
    $stdout.sync = true
    require "async"
    class LeakyWidget
      def initialize(n) = @payload = "widget-\#{n}" * 4
    end
    $retained = []
    sleeper = Thread.new { sleep }
    sleeper.name = "test-sleeper"
    async_thread = Thread.new do
      Async do |task|
        task.async(annotation: "leaky-consumer") { sleep 1_000_000 }
      end
    end
    sleep 0.05 until Memdiag::Hook.connection_id
    puts "ready"
    while (line = $stdin.gets)
      case line.strip
      when "allocate"
        100.times { |i| $retained << LeakyWidget.new(i) } # allocation site: this line
        puts "allocated line=\#{__LINE__ - 1}"
      when "gc"
        3.times { GC.start }
        puts "collected"
      end
    end
  RUBY

  def setup
    super
    @server = start_server
    worker_in, @script_input = IO.pipe
    @worker = HookTest::Worker.new(@dir, WORKER, env: hook_env(name: "ops-worker"), name: "ops-worker",
                                                 stdin: worker_in)
    worker_in.close
    @workers << @worker
    @conn = @server.wait_for("hello") { true }["conn"]
    @worker.wait_out(/^ready$/)
  end

  def teardown
    @script_input.close
    super
  end

  def test_memory_dump_inline_and_fork_modes
    allocate_in_worker # instances of a class of the test, kept alive by the worker
    reply = @server.request(@conn, "memory_dump", path: "before.json", mode: "inline")
    assert_equal "ok", reply["status"], reply["error"]
    assert_equal "inline", reply["mode"]
    assert_equal File.join(@dumps, "before.json"), reply["path"]
    assert_heap_dump_has_class(reply["path"], "LeakyWidget")
    assert_equal File.size(reply["path"]), reply["bytes"]
    assert_operator reply["pause_us"].to_i, :>, 0, "an inline dump holds the worker for its whole length"

    forked = @server.request(@conn, "memory_dump", path: "forked.json", mode: "fork")
    assert_equal "ok", forked["status"], forked["error"]
    assert_equal "fork", forked["mode"]
    assert forked.key?("pause_us"), "a fork dump reports the worker's pause"
    assert_heap_dump_has_class(forked["path"], "LeakyWidget")
    # the dump child is not a worker: still one connection only
    assert_equal 1, @server.count("hello")
    assert_equal "ok", @server.request(@conn, "ping", payload: "still-here")["status"]
  end

  def test_allocation_trace_records_file_and_line
    assert_equal "ok", @server.request(@conn, "allocation_trace_start")["status"]
    again = @server.request(@conn, "allocation_trace_start")
    assert_equal "refused", again["status"], "a second start is refused: tracing is already active"

    line = allocate_in_worker
    # The dump after tracing stops honours the mode (DumpMode) and says how
    # long the worker was held.
    reply = @server.request(@conn, "allocation_trace_stop", path: "traced.json", mode: "fork")
    assert_equal "ok", reply["status"], reply["error"]
    assert_equal "fork", reply["mode"]
    assert_operator reply["pause_us"].to_i, :>, 0
    traced = heap_records(reply["path"]).select do |r|
      r["type"] == "OBJECT" && r["file"]&.end_with?("ops-worker.rb") && r["line"] == line
    end
    assert_operator traced.size, :>=, 100, "the 100 retained widgets carry the allocating file and line"

    stray = @server.request(@conn, "allocation_trace_stop", path: "again.json")
    assert_equal "error", stray["status"]
    assert_match(/not started/, stray["error"])
  end

  def test_garbage_profile_inline_report
    assert_equal "ok", @server.request(@conn, "garbage_profile_start")["status"]
    @script_input.puts("gc")
    @worker.wait_out(/^collected$/)
    reply = @server.request(@conn, "garbage_profile_stop")
    assert_equal "ok", reply["status"], reply["error"]
    refute reply.key?("path"), "no path asked, the report comes back inline"
    # the allocator's own statistics, from the hook's C extension
    assert_match(/== malloc_info \(glibc\)\n<malloc version="\d+">/, reply["data"])
    collections = reply["data"][/^collections\s+(\d+)/, 1]
    assert collections, reply["data"][0, 400]
    assert_operator Integer(collections), :>=, 1
  end

  def test_thread_dump_inline_and_to_a_file
    reply = @server.request(@conn, "thread_dump")
    assert_equal "ok", reply["status"], reply["error"]
    assert_match(/Thread "test-sleeper"/, reply["data"])
    assert_match(/Thread "memdiag-hook"/, reply["data"])

    file = @server.request(@conn, "thread_dump", path: "threads.txt")
    assert_equal "ok", file["status"], file["error"]
    assert_match(/Thread "test-sleeper"/, File.read(file["path"]))
    assert_equal 0o600, File.stat(file["path"]).mode & 0o777
  end

  def test_scheduler_dump_shows_an_async_task
    reply = @server.request(@conn, "scheduler_dump")
    assert_equal "ok", reply["status"], reply["error"]
    assert_match(/leaky-consumer/, reply["data"])
  end

  def test_paths_outside_the_dump_directory_are_refused
    outside = File.join(@dir, "outside.json")
    reply = @server.request(@conn, "memory_dump", path: outside)
    refute_equal "ok", reply["status"]
    assert_match(/dump directory/, reply["error"])
    refute File.exist?(outside)

    dotdot = @server.request(@conn, "thread_dump", path: "../escape.txt")
    assert_equal "refused", dotdot["status"]
    refute File.exist?(File.join(@dir, "escape.txt"))
  end

  private

  def allocate_in_worker
    @script_input.puts("allocate")
    Integer(@worker.wait_out(/^allocated line=(\d+)$/)[1])
  end

  def heap_records(path)
    File.foreach(path).map { |line| JSON.parse(line) }
  end

  def assert_heap_dump_has_class(path, class_name)
    records = heap_records(path) # every line parses on its own
    klass = records.find { |r| r["type"] == "CLASS" && r["name"] == class_name }
    assert klass, "#{path} has the class #{class_name}"
    objects = records.count { |r| r["type"] == "OBJECT" && r["class"] == klass["address"] }
    assert_operator objects, :>=, 1, "#{path} has an instance of #{class_name}"
  end
end
