# frozen_string_literal: true

require_relative "failure"

module Memdiag
  module Hook
    module Ops
      # heap_profile: the live objects the allocation sampler
      # (Memdiag::Hook::Sampler, in the native extension) has sampled, as a
      # gzip'd pprof profile. Each sample stands for the allocations since the
      # one before it (its weight): counts and bytes are estimates, and a site
      # with k samples is known to about 1/sqrt(k) of its value.
      module HeapProfile
        class << self
          # Writes the profile to a Target (file or stream); returns the reply.
          # dump_gc_count: GC.count when the last heap dump was taken
          # (HeapDump#last_gc_count), written in the profile's comment as
          # "dump_gc_count N" beside its own "gc_count N"; nil: none.
          def write(target, dump_gc_count: nil)
            sampler = load_sampler
            stats = sampler.stats
            check_state(stats)
            data = dump_gc_count ? sampler.profile(dump_gc_count) : sampler.profile
            partial = target.create_temp
            begin
              partial.io.write(data)
              bytes = partial.publish
            rescue SystemCallError, IOError => e
              raise Failure.error("writing the heap profile to #{target.path || target.label} failed: " \
                                  "#{e.message}; nothing was left behind")
            ensure
              partial.discard
            end
            { status: :ok, path: target.path, bytes: bytes, note: note(stats) }
          end

          def note(stats)
            "#{stats[:live]} live sampled objects from #{stats[:sites]} sites; up to #{stats[:rate]} " \
              "allocations sampled a second, each standing for those since the one before, so counts and " \
              "bytes are estimates; sampler table #{stats[:table_bytes]} bytes"
          end

          private

          def load_sampler
            require "memdiag/hook_native"
            Memdiag::Hook::Sampler
          rescue LoadError => e
            raise Failure.new(:unsupported, "allocation sampling needs the hook's native extension: #{e.message}")
          end

          def check_state(stats)
            case stats[:state]
            when "failed"
              raise Failure.error("allocation sampling was turned off in this worker: #{stats[:reason]}")
            when "off"
              raise Failure.refused("allocation sampling is off in this worker (MEMDIAG_ALLOCATION_SAMPLING=0 " \
                                    "or the plugin's AllocationSampling 0); no heap profile to give")
            end
          end
        end
      end
    end
  end
end
