# frozen_string_literal: true

module Memdiag
  module Hook
    module Ops
      # Raised inside an operation to end it with a specific reply status.
      # Operations#call turns it into the reply; it never leaves the library.
      class Failure < StandardError
        attr_reader :status, :data

        def initialize(status, message, data: nil)
          super(message)
          @status = status
          @data = data
        end

        def self.refused(message)
          new(:refused, message)
        end

        def self.bad_request(message)
          new(:bad_request, message)
        end

        def self.error(message, data: nil)
          new(:error, message, data: data)
        end
      end

      module Clock
        module_function

        def now_us
          Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
        end

        # CPU time of the calling thread, or nil where the clock is missing.
        def thread_cpu_us
          Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID, :microsecond)
        rescue NameError, SystemCallError
          nil
        end
      end
    end
  end
end
