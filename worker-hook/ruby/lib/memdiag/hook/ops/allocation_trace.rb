# frozen_string_literal: true

require "objspace"
require "time"
require_relative "failure"

module Memdiag
  module Hook
    module Ops
      # Allocation tracing is process-global, so its state here is too: one
      # record per process, shared by every Operations instance.
      module AllocationTrace
        # :idle, :tracing (memdiag started it), :undumped (memdiag stopped it
        # but the dump failed, so the metadata is kept for a retry).
        @state = :idle
        @started_at = nil
        # Connection whose end stops the tracing (see .release); nil when an
        # operator asked to keep it or no connection started it.
        @owner = nil
        @lock = Mutex.new

        class << self
          attr_reader :state, :started_at

          def start(owner: nil)
            @lock.synchronize do
              if @state == :tracing
                raise Failure.refused("allocation tracing is already active: memdiag started it at " \
                                      "#{@started_at.utc.iso8601}; stop it with allocation_trace_stop first")
              end
              if active?
                raise Failure.refused("allocation tracing is already active, started by another tool in this " \
                                      "process; memdiag will not interfere with it")
              end

              ObjectSpace.trace_object_allocations_clear if @state == :undumped
              ObjectSpace.trace_object_allocations_start
              @state = :tracing
              @started_at = Time.now
              @owner = owner
            end
          end

          # The connection `owner` has ended: tracing it started (and did not
          # ask to keep) would cost the worker until someone stopped it, and
          # would refuse the next start. Stops it and drops the metadata.
          # Returns what was undone, or nil.
          def release(owner)
            @lock.synchronize do
              next nil if owner.nil? || @owner != owner || @state == :idle

              what = if @state == :tracing
                       "allocation tracing (running since #{@started_at.utc.iso8601})"
                     else
                       "allocation data kept from a failed allocation_trace_stop"
                     end
              ObjectSpace.trace_object_allocations_stop if @state == :tracing
              ObjectSpace.trace_object_allocations_clear
              @state = :idle
              @started_at = nil
              @owner = nil
              what
            end
          end

          # Yields to dump the heap while tracing still runs, then stops it (when
          # memdiag started it) and clears the metadata. Stopped first, Ruby no
          # longer drops a freed object's record, and an object that the
          # application allocates at its address before the heap's snapshot (a
          # fork, or dump_all's writes, let other threads run) would show the
          # freed object's generation and site. When the block fails tracing is
          # stopped, the metadata is kept and a later stop can dump it again.
          def stop
            @lock.synchronize do
              if @state == :idle
                raise Failure.error("allocation tracing was not started by memdiag in this process; " \
                                    "nothing to stop (run allocation_trace_start first)")
              end

              result = begin
                yield
              ensure
                if @state == :tracing
                  ObjectSpace.trace_object_allocations_stop
                  @state = :undumped
                end
              end
              ObjectSpace.trace_object_allocations_clear
              @state = :idle
              @started_at = nil
              @owner = nil
              result
            end
          rescue Failure => e
            raise e unless @state == :undumped

            raise Failure.new(e.status, "#{e.message}; tracing is stopped and the allocation data is kept: " \
                                        "run allocation_trace_stop again with another path")
          end

          # Whether anyone in this process is tracing allocations. Ruby 3.1 has
          # no query for it, so a fresh object is allocated and checked for
          # allocation data. The generation check rejects data left over from an
          # earlier object at the same address: such an object was freed by a
          # GC that ran before this probe, so its generation is older.
          def active?
            generation = GC.count
            probe = Object.new
            !ObjectSpace.allocation_sourcefile(probe).nil? &&
              ObjectSpace.allocation_generation(probe).to_i >= generation
          end
        end
      end
    end
  end
end
