# frozen_string_literal: true

require "time"
require_relative "failure"

module Memdiag
  module Hook
    module Ops
      # GC::Profiler is process-global; so is the record of who enabled it.
      module GarbageProfile
        @started_at = nil
        @stat_before = nil
        # Connection whose end stops the profiler (see .release); nil when an
        # operator asked to keep it or no connection started it.
        @owner = nil
        @lock = Mutex.new

        class << self
          def active?
            !@started_at.nil?
          end

          def start(owner: nil)
            @lock.synchronize do
              if @started_at
                raise Failure.refused("garbage profiling is already running: memdiag started it at " \
                                      "#{@started_at.utc.iso8601}; stop it with garbage_profile_stop first")
              end
              if GC::Profiler.enabled?
                raise Failure.refused("the GC profiler is already enabled by another tool in this process; " \
                                      "memdiag will not interfere with it")
              end

              GC::Profiler.clear
              @stat_before = GC.stat
              @started_at = Time.now
              @owner = owner
              GC::Profiler.enable
            end
          end

          # The connection `owner` has ended: a profiler it started (and did
          # not ask to keep) is disabled and its records dropped, so that it
          # stops costing the worker and the next start is not refused.
          # Returns what was undone, or nil.
          def release(owner)
            @lock.synchronize do
              next nil if owner.nil? || @owner != owner || @started_at.nil?

              what = "the GC profiler (running since #{@started_at.utc.iso8601})"
              reset
              what
            end
          end

          # Builds the report, then disables and clears the profiler.
          def stop
            @lock.synchronize do
              unless @started_at
                raise Failure.error("garbage profiling was not started by memdiag in this process; " \
                                    "nothing to stop (run garbage_profile_start first)")
              end

              begin
                report(GC.stat)
              ensure
                reset
              end
            end
          end

          private

          # Profiler off, records dropped, nobody owns it: the state before
          # start. Called with @lock held.
          def reset
            GC::Profiler.disable
            GC::Profiler.clear
            @started_at = nil
            @stat_before = nil
            @owner = nil
          end

          def report(stat_after)
            records = GC::Profiler.raw_data || []
            out = +""
            out << "memdiag garbage profile: pid #{Process.pid}, ruby #{RUBY_VERSION}\n"
            out << "started  #{@started_at.utc.iso8601(3)}\n"
            out << "stopped  #{Time.now.utc.iso8601(3)} (#{format('%.3f', Time.now - @started_at)} s)\n"
            out << "collections  #{stat_after[:count] - @stat_before[:count]} " \
                   "(minor #{stat_after[:minor_gc_count] - @stat_before[:minor_gc_count]}, " \
                   "major #{stat_after[:major_gc_count] - @stat_before[:major_gc_count]})\n"
            out << summary(records)
            out << "\n== GC.stat (before, after, delta)\n"
            out << stat_table(@stat_before, stat_after)
            out << "\n== heap fragmentation (1 - heap_live_slots / (slots per page x heap_eden_pages))\n"
            out << fragmentation_line("before", @stat_before)
            out << fragmentation_line("after", stat_after)
            out << "\n== GC::Profiler.result\n"
            out << GC::Profiler.result
            out << malloc_section
            out
          end

          # GitLab's measure of a Ruby heap's holes: the share of the eden
          # pages' slots that hold no live object.
          def fragmentation_line(label, stat)
            per_page = GC::INTERNAL_CONSTANTS[:HEAP_PAGE_OBJ_LIMIT]
            live = stat[:heap_live_slots]
            pages = stat[:heap_eden_pages]
            return "#{label}  unknown (this Ruby's GC.stat lacks the figures)\n" unless per_page && live && pages&.positive?

            format("%-6s  %.3f  (%d live slots, %d eden pages of %d slots)\n", label,
                   1.0 - live.to_f / (per_page * pages), live, pages, per_page)
          end

          # The allocator's own statistics, through the hook's C extension:
          # glibc's malloc_info (arenas, their free chunks and the memory
          # they took from the system, which the Ruby heap's figures miss)
          # and, when jemalloc is the process's malloc (preloaded or linked
          # into Ruby, its names plain or prefixed je_), jemalloc's merged
          # statistics, where glibc's arenas then hold next to nothing; its
          # first line names the jemalloc's version and entry point.
          def malloc_section
            native = defined?(Memdiag::Hook::Native) && Memdiag::Hook::Native.respond_to?(:malloc_info)
            return "\n== malloc_info\nunavailable (the hook's C extension is not loaded)\n" unless native

            xml = Memdiag::Hook::Native.malloc_info
            out = xml ? +"\n== malloc_info (glibc)\n#{xml}" : +"\n== malloc_info\nunavailable (not glibc)\n"
            je = Memdiag::Hook::Native.jemalloc_stats
            out << "\n== jemalloc stats\n#{je}" if je
            out
          end

          def summary(records)
            return "profiler records  0\n" if records.empty?

            times = records.map { |r| r[:GC_TIME].to_f * 1000.0 }
            causes = records.map { |r| (r[:GC_FLAGS] || {})[:gc_by] }.compact.tally
            majors = records.map { |r| (r[:GC_FLAGS] || {})[:major_by] }.compact.tally
            first = records.first
            last = records.last
            out = +""
            out << "profiler records  #{records.size}\n"
            out << format("gc time ms  total %.3f  max %.3f  mean %.3f\n",
                          times.sum, times.max, times.sum / times.size)
            out << "heap use bytes  first #{first[:HEAP_USE_SIZE]}  last #{last[:HEAP_USE_SIZE]}\n"
            out << "heap total bytes  first #{first[:HEAP_TOTAL_SIZE]}  last #{last[:HEAP_TOTAL_SIZE]}\n"
            out << "heap total objects  first #{first[:HEAP_TOTAL_OBJECTS]}  last #{last[:HEAP_TOTAL_OBJECTS]}\n"
            out << "triggered by  #{tally_text(causes)}\n" unless causes.empty?
            out << "major because  #{tally_text(majors)}\n" unless majors.empty?
            out
          end

          def tally_text(tally)
            tally.sort_by { |_, n| -n }.map { |k, n| "#{k} #{n}" }.join(", ")
          end

          def stat_table(before, after)
            keys = (before.keys | after.keys)
            width = keys.map { |k| k.to_s.size }.max
            keys.map do |k|
              b = before[k]
              a = after[k]
              delta = b.is_a?(Numeric) && a.is_a?(Numeric) ? a - b : ""
              format("%-#{width}s  %16s  %16s  %16s\n", k, b, a, delta)
            end.join
          end
        end
      end
    end
  end
end
