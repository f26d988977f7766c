# frozen_string_literal: true

require_relative "ops/failure"
require_relative "ops/dump_directory"
require_relative "ops/heap_dump"
require_relative "ops/allocation_trace"
require_relative "ops/garbage_profile"
require_relative "ops/thread_dump"
require_relative "ops/scheduler_dump"
require_relative "ops/stream_target"
require_relative "ops/heap_profile"

module Memdiag
  module Hook
    # The diagnostics a worker runs on request, with the semantics of the
    # reference workflow. The hook calls #call on its own Ruby thread while the
    # application keeps running; #call turns every outcome into a reply hash.
    class Operations
      CAPABILITIES = %w[
        memory_dump
        allocation_trace_start
        allocation_trace_stop
        garbage_profile_start
        garbage_profile_stop
        scheduler_dump
        thread_dump
        heap_profile
        ping
      ].freeze

      DEFAULT_MODE = "auto"

      # dump_directory: where files may be written (nil: nowhere; results that
      # can be returned inline still are). dump_size_factor: free space wanted
      # before a heap dump, as a multiple of RSS (0 disables the check).
      # fork_headroom_factor: memory wanted by mode "auto" before it forks, as a
      # multiple of RSS.
      def initialize(dump_directory:, dump_size_factor: Ops::HeapDump::DEFAULT_SIZE_FACTOR,
                     fork_headroom_factor: Ops::HeapDump::DEFAULT_FORK_HEADROOM_FACTOR)
        @directory = Ops::DumpDirectory.new(dump_directory)
        @heap = Ops::HeapDump.new(size_factor: dump_size_factor, fork_headroom_factor: fork_headroom_factor)
        @busy = Mutex.new
        @running = nil
      end

      # Runs one request and returns its reply. Never raises, with two
      # deliberate exceptions: SystemExit and SignalException (Interrupt) only
      # reach this thread when something asks it to terminate (Thread#raise, an
      # exit in a callback), and swallowing them would keep it alive against
      # that request. Everything else (StandardError, ScriptError, NoMemoryError,
      # SystemStackError, SecurityError, ...) becomes an error reply.
      def call(request)
        started = Ops::Clock.now_us
        reply = begin
          run(normalize(request))
        rescue Ops::Failure => e
          { status: e.status, error: e.message, data: e.data }
        rescue SystemExit, SignalException
          raise
        rescue Exception => e
          { status: :error, error: "internal error: #{e.class}: #{e.message}" }
        end
        reply[:duration_us] ||= Ops::Clock.now_us - started
        reply.compact
      end

      # The connection connection_id has ended (the plugin crashed, restarted
      # or went silent): stops the GC profiler and allocation tracing that its
      # requests started without keep, so that they neither keep costing the
      # worker nor refuse the next plugin's start. Returns one line per thing
      # stopped.
      def connection_closed(connection_id)
        [Ops::GarbageProfile.release(connection_id), Ops::AllocationTrace.release(connection_id)].compact
      end

      private

      Request = Struct.new(:id, :op, :path, :shapes, :mode, :timeout_ms, :payload, :keep, :connection_id,
                           :stream_target,
                           keyword_init: true)
      private_constant :Request

      def normalize(request)
        raise Ops::Failure.bad_request("request must be a Hash, got #{request.class}") unless request.is_a?(Hash)

        r = request.transform_keys(&:to_sym)
        op = r[:op]
        raise Ops::Failure.bad_request("request has no op") if op.nil? || op.to_s.empty?

        op = op.to_s
        unless CAPABILITIES.include?(op)
          raise Ops::Failure.new(:unsupported, "operation #{op.inspect} is not supported by this worker; " \
                                               "it supports #{CAPABILITIES.join(', ')}")
        end

        Request.new(id: r[:id], op: op, path: optional_string(r, :path), shapes: shapes(r),
                    mode: mode(r), timeout_ms: timeout(r), payload: r[:payload], keep: r[:keep] == true,
                    connection_id: r[:connection_id], stream_target: r[:stream_target])
      end

      # A string the wire may carry as empty when unset.
      def optional_string(r, key)
        v = r[key]
        return nil if v.nil? || v == ""
        raise Ops::Failure.bad_request("#{key} must be a string, got #{v.class}") unless v.is_a?(String)

        v
      end

      def shapes(r)
        v = r.fetch(:shapes, true)
        return true if v.nil?
        raise Ops::Failure.bad_request("shapes must be true or false, got #{v.inspect}") unless [true, false].include?(v)

        v
      end

      def mode(r)
        v = optional_string(r, :mode) || DEFAULT_MODE
        unless Ops::HeapDump::MODES.include?(v)
          raise Ops::Failure.bad_request("mode must be one of #{Ops::HeapDump::MODES.join(', ')}, got #{v.inspect}")
        end

        v
      end

      def timeout(r)
        v = r[:timeout_ms]
        return nil if v.nil? || v == 0
        raise Ops::Failure.bad_request("timeout_ms must be a non-negative integer") unless v.is_a?(Integer) && v >= 0

        v
      end

      def run(req)
        return { status: :ok, data: req.payload.to_s, bytes: req.payload.to_s.bytesize } if req.op == "ping"

        exclusively(req.op) { send(req.op, req) }
      end

      # Operations share process-global state (the heap, the profilers) and a
      # second one would only slow the first, so they run one at a time; a
      # request arriving meanwhile is refused rather than queued.
      def exclusively(op)
        unless @busy.try_lock
          raise Ops::Failure.refused("another operation (#{@running}) is still running in this worker; " \
                                     "retry when it has finished")
        end

        begin
          @running = op
          yield
        ensure
          @running = nil
          @busy.unlock
        end
      end

      def memory_dump(req)
        target = req.stream_target || target_for(req.path, "heap", "json")
        { status: :ok }.merge(@heap.write(target, shapes: req.shapes, mode: req.mode, timeout_ms: req.timeout_ms))
      end

      # The connection a request came on ends what the request started, unless
      # the request asked to keep it (see #connection_closed).
      def owner(req)
        req.keep ? nil : req.connection_id
      end

      def lifetime_note(req)
        return "; kept when this connection ends (keep)" if req.keep
        return "" unless req.connection_id

        "; stopped if connection #{req.connection_id} ends first"
      end

      # The allocation sampler's live objects as a gzip'd pprof profile, with
      # the GC count of the last heap dump, which the analysis joins its
      # samples to (docs/analysis.md, Sampled sites).
      def heap_profile(req)
        target = req.stream_target || target_for(req.path, "heap_profile", "pb.gz")
        Ops::HeapProfile.write(target, dump_gc_count: @heap.last_gc_count)
      end

      def allocation_trace_start(req)
        Ops::AllocationTrace.start(owner: owner(req))
        { status: :ok, note: "allocation tracing started for the whole process; it costs time and memory " \
                             "until allocation_trace_stop#{lifetime_note(req)}" }
      end

      def allocation_trace_stop(req)
        if Ops::AllocationTrace.state == :idle
          raise Ops::Failure.error("allocation tracing was not started by memdiag in this process; " \
                                   "nothing to stop (run allocation_trace_start first)")
        end

        # The path is checked while tracing still runs, so a rejected path
        # costs the operator nothing.
        target = req.stream_target || target_for(req.path, "allocations", "json")
        reply = Ops::AllocationTrace.stop do
          @heap.write(target, shapes: req.shapes, mode: req.mode, timeout_ms: req.timeout_ms)
        end
        { status: :ok }.merge(reply)
      end

      def garbage_profile_start(req)
        Ops::GarbageProfile.start(owner: owner(req))
        { status: :ok, note: "GC profiler enabled; GC.stat recorded#{lifetime_note(req)}" }
      end

      def garbage_profile_stop(req)
        unless Ops::GarbageProfile.active?
          raise Ops::Failure.error("garbage profiling was not started by memdiag in this process; " \
                                   "nothing to stop (run garbage_profile_start first)")
        end

        target = req.path && @directory.resolve(req.path)
        report = Ops::GarbageProfile.stop
        deliver(target, report)
      rescue Ops::Failure => e
        # The profiler is already stopped: a report that cannot be written is
        # returned with the error instead of being lost.
        raise Ops::Failure.new(e.status, e.message, data: report) if report

        raise
      end

      def thread_dump(req)
        target = req.path && @directory.resolve(req.path)
        deliver(target, Ops::ThreadDump.text)
      end

      def scheduler_dump(req)
        target = req.path && @directory.resolve(req.path)
        deliver(target, Ops::SchedulerDump.text)
      end

      def target_for(path, prefix, extension)
        return @directory.resolve(path) if path

        @directory.root # refuses before naming a file when no directory is configured
        @directory.resolve(@directory.default_name(prefix, extension))
      end

      # Writes text to the target, or returns it inline when there is none.
      def deliver(target, text)
        return { status: :ok, data: text, bytes: text.bytesize } unless target

        partial = target.create_temp
        begin
          partial.io.write(text)
          { status: :ok, path: target.path, bytes: partial.publish }
        rescue SystemCallError, IOError => e
          raise Ops::Failure.error("writing #{target.path} failed: #{e.message}; nothing was left behind")
        ensure
          partial.discard
        end
      end
    end
  end
end
