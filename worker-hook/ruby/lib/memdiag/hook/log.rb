# frozen_string_literal: true

module Memdiag
  module Hook
    # Lines the Ruby side of the hook writes to stderr, in the C core's format.
    module Log
      def self.warn(message)
        $stderr.write("memdiag hook[#{Process.pid}]: #{message}\n")
      rescue StandardError
        nil # a closed stderr must not break the host
      end
    end
  end
end
