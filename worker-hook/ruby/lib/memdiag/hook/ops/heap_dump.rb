# frozen_string_literal: true

require "objspace"
require_relative "failure"
require_relative "host_memory"
require_relative "free_space"
require_relative "fork_runner"

module Memdiag
  module Hook
    module Ops
      # Writes ObjectSpace.dump_all to a Target, in the worker (inline) or in a
      # forked copy of it (fork), never leaving a file that looks complete when
      # the dump fails.
      class HeapDump
        MODES = %w[inline fork auto].freeze

        # Ruby heap dumps ran about 2.7 times the worker's RSS in the
        # reference's measurements.
        DEFAULT_SIZE_FACTOR = 2.7
        # A fork may, at worst, end up copying every page of the worker while
        # the child dumps; the margin covers the child's own allocations.
        DEFAULT_FORK_HEADROOM_FACTOR = 1.5

        SHAPES_KEYWORD = ObjectSpace.method(:dump_all).parameters.any? { |_, name| name == :shapes }
        SHAPES_NOTE = "shapes=false is not supported by this Ruby (#{RUBY_VERSION}); " \
                      "its dumps contain no SHAPE records anyway"

        def initialize(size_factor: DEFAULT_SIZE_FACTOR, fork_headroom_factor: DEFAULT_FORK_HEADROOM_FACTOR)
          @size_factor = size_factor
          @fork_headroom_factor = fork_headroom_factor
          @last_gc_count = nil
        end

        # GC.count when the last heap dump written was taken: at its fork
        # (ForkRunner#fork_child), or as an inline one started; nil before
        # the first and after one that failed. heap_profile writes it in its
        # comment as dump_gc_count: an object allocated after it is no object
        # of that dump (docs/analysis.md, Sampled sites).
        attr_reader :last_gc_count

        # Returns the reply fields: path, bytes, mode, pause_us, note. pause_us is
        # how long the application's threads were held: the fork call in fork
        # mode, the whole dump inline (dump_all holds the GVL throughout).
        def write(target, shapes:, mode:, timeout_ms:)
          @last_gc_count = nil
          notes = []
          chosen, why = choose_mode(mode)
          notes << why if why
          notes << SHAPES_NOTE if !shapes && !SHAPES_KEYWORD
          check_free_space(target)
          pause_us, fork_wall_us, bytes, slow, gc_count = dump(target, chosen, shapes, timeout_ms)
          @last_gc_count = gc_count
          notes << slow if slow
          if fork_wall_us && fork_wall_us > pause_us + 1000
            notes << format("the fork call took %.1f ms by the clock; beyond its pause this thread was " \
                            "waiting (for the GVL the application held, or for a CPU)", fork_wall_us / 1000.0)
          end
          { path: target.path, bytes: bytes, mode: chosen, pause_us: pause_us,
            note: notes.empty? ? nil : notes.join("; ") }
        end

        private

        def dump(target, chosen, shapes, timeout_ms)
          partial = target.create_temp
          begin
            pause_us = fork_wall_us = slow = gc_count = nil
            if chosen == "fork"
              result = ForkRunner.new.run(timeout_ms) do
                write_heap(partial.io, shapes)
                partial.io.flush
                partial.io.fsync if partial.io.stat.file? # a stream's pipe has nothing to sync
                "dumped"
              end
              pause_us = result.pause_us
              fork_wall_us = result.fork_wall_us
              slow = result.slow_note
              gc_count = result.gc_count
            else
              gc_count = GC.count
              started = Clock.now_us
              write_heap(partial.io, shapes)
              pause_us = Clock.now_us - started
            end
            [pause_us, fork_wall_us, partial.publish, slow, gc_count]
          rescue SystemCallError, IOError => e
            raise Failure.error("heap dump to #{where(target)} failed: #{e.message}; nothing was left behind")
          rescue Failure => e
            raise Failure.new(e.status, "heap dump to #{where(target)}: #{e.message}; nothing was left behind")
          ensure
            partial.discard
          end
        end

        def where(target)
          target.path || target.label
        end

        def write_heap(io, shapes)
          if SHAPES_KEYWORD
            ObjectSpace.dump_all(output: io, shapes: shapes)
          else
            ObjectSpace.dump_all(output: io)
          end
        end

        def choose_mode(mode)
          case mode
          when "inline"
            ["inline", nil]
          when "fork"
            raise Failure.new(:unsupported, "fork mode is not available on this platform") unless ForkRunner.supported?

            ["fork", nil]
          else
            choose_automatically
          end
        end

        def choose_automatically
          return ["inline", "auto chose inline: this platform cannot fork"] unless ForkRunner.supported?

          rss = HostMemory.rss_bytes
          headroom = HostMemory.headroom_bytes
          return ["inline", "auto chose inline: the host's memory figures are unavailable"] unless rss && headroom

          need = rss * @fork_headroom_factor
          comparison = "#{HostMemory.mib(headroom)} available for copy-on-write, " \
                       "#{@fork_headroom_factor} x RSS #{HostMemory.mib(rss)} = #{HostMemory.mib(need)} wanted"
          if headroom >= need
            ["fork", "auto chose fork: #{comparison}"]
          else
            ["inline", "auto chose inline: #{comparison}"]
          end
        end

        def check_free_space(target)
          return unless @size_factor&.positive?
          return unless target.directory # streamed: the plugin checks its own disk

          rss = HostMemory.rss_bytes
          available = FreeSpace.available_bytes(target.directory)
          return unless rss && available

          estimate = rss * @size_factor
          return if available >= estimate

          raise Failure.refused("not enough free space in #{target.directory}: #{HostMemory.mib(available)} " \
                                "available, a heap dump of this worker is estimated at #{HostMemory.mib(estimate)} " \
                                "(#{@size_factor} x RSS #{HostMemory.mib(rss)})")
        end
      end
    end
  end
end
