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

  # A dump target in the dump directory whose heap dump cannot finish until
  # the test calls #release, however fast or loaded the machine is.
  def held_target(path)
    HeldTarget.new(Memdiag::Hook::Ops::DumpDirectory.new(@dir).resolve(path))
  end

  # Passed as a request's stream_target, it holds a dump in the middle. The
  # dump is written into a pipe, as a streamed dump is, and copied into the
  # real target's temporary file only after #release. A heap dump is
  # megabytes and the pipe holds 64 KB (#capacity): until then the writer, a
  # dump child or the worker itself, is blocked mid-dump. The temporary file
  # is the real one, published or discarded by the dump as usual.
  class HeldTarget
    F_GETPIPE_SZ = 1032 # Linux

    def initialize(target)
      @target = target
      @created = Queue.new
    end

    def path = @target.path
    def directory = @target.directory
    def label = @target.label

    def create_temp
      @partial = Partial.new(@target.create_temp)
      @created << true
      @partial
    end

    # Returns once the dump has begun: its operation holds the worker.
    def wait_until_started
      @created.pop
      self
    end

    # Bytes the pipe took before the dump's next write blocked.
    def capacity = @partial.capacity

    def release = @partial.release

    # The dump's side of a held target.
    class Partial
      attr_reader :io, :capacity

      def initialize(file)
        @file = file
        @reader, @io = IO.pipe
        @capacity = @io.fcntl(F_GETPIPE_SZ)
        @copier = nil
      end

      def release
        @copier ||= Thread.new { IO.copy_stream(@reader, @file.io) }
      end

      # Everything written: the copy reaches end-of-file once this copy of the
      # pipe is closed (the dump child's closed when it left).
      def publish
        @io.close
        release.join
        @reader.close
        @file.publish
      end

      def discard
        @copier&.kill&.join
        [@io, @reader].each { |io| io.close unless io.closed? }
        @file.discard
      end
    end
  end
end
