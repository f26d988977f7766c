# frozen_string_literal: true

# Shared by the operations tests: real Ruby, real files, no mocks.
require "minitest/autorun"
require "json"
require "tmpdir"
require "fileutils"
require "memdiag/hook/operations"

module OpsTestHelper
  def setup
    super
    # A heap dump includes garbage not yet collected; without this, each test
    # would dump the parsed records of the one before it.
    GC.start
    @dir = Dir.mktmpdir("memdiag-ops-")
    @ops = Memdiag::Hook::Operations.new(dump_directory: @dir)
  end

  def teardown
    FileUtils.rm_rf(@dir) if @dir
    super
  end

  def call(op, **fields)
    @ops.call({ id: 1, op: op }.merge(fields))
  end

  def assert_ok(reply)
    assert_equal :ok, reply[:status], "expected ok, got #{reply.inspect}"
    reply
  end

  def assert_status(status, reply, message_pattern = nil)
    assert_equal status, reply[:status], "expected #{status}, got #{reply.inspect}"
    assert_match message_pattern, reply[:error] if message_pattern
    reply
  end

  # Every line of a Ruby heap dump is a JSON document of its own. Every line
  # is parsed; only the records the block selects are kept (all when no block).
  def heap_records(path)
    kept = []
    File.foreach(path).with_index(1) do |line, n|
      record = begin
        JSON.parse(line)
      rescue JSON::ParserError => e
        flunk "line #{n} of #{path} is not JSON: #{e.message}"
      end
      kept << record if !block_given? || yield(record)
    end
    kept
  end

  # Records of objects whose class is the named class.
  def instances_of(path, class_name)
    records = heap_records(path) { |r| %w[CLASS OBJECT].include?(r["type"]) }
    addresses = records.select { |r| r["type"] == "CLASS" && r["name"] == class_name }.map { |r| r["address"] }
    refute_empty addresses, "#{path} has no CLASS record named #{class_name}"
    records.select { |r| r["type"] == "OBJECT" && addresses.include?(r["class"]) }
  end

  # Files in the dump directory, including hidden temporary ones.
  def files_in(dir = @dir)
    Dir.children(dir).sort
  end

  # Children of this process, found through /proc (the dump child of a fork).
  def child_pids
    Dir.glob("/proc/[0-9]*/stat").filter_map do |stat|
      fields = File.read(stat).split(") ").last.split
      stat[%r{/proc/(\d+)/}, 1].to_i if fields[1].to_i == Process.pid
    rescue SystemCallError
      nil
    end
  end

  # Runs the block on another thread once a child process of this one exists.
  def when_child_appears
    Thread.new do
      pid = nil
      until pid
        pid = child_pids.first
        sleep 0.001 unless pid
      end
      yield pid
    end
  end

  # Enough live objects that dumping them takes a while.
  def big_heap(count = 400_000)
    Array.new(count) { |i| "memdiag-test-string-#{i}" }
  end
end
