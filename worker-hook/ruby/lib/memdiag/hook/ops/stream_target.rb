# frozen_string_literal: true

require_relative "failure"

module Memdiag
  module Hook
    module Ops
      # Where a dump goes when the plugin asked for a stream: a pipe into the
      # hook's own connection instead of a file in the worker. It answers to
      # the same calls as a file target (create_temp, then publish or discard),
      # so HeapDump writes it the same way inline or from a fork child.
      class StreamTarget
        def initialize(native, connection_id, request_id, window)
          @native = native
          @connection_id = connection_id
          @request_id = request_id
          @window = window.to_i
        end

        # No file on the worker's side: the plugin names the stored file.
        def path = nil
        def directory = nil
        def label = "the plugin (streamed over the connection)"

        def create_temp
          fd = @native.stream_open(@connection_id, @request_id, @window)
          Partial.new(@native, @request_id, IO.for_fd(fd, "wb", autoclose: true))
        rescue IOError => e
          raise Failure.error(e.message)
        end

        # The open stream: the writer's end of the pipe.
        class Partial
          attr_reader :io

          def initialize(native, request_id, io)
            @native = native
            @request_id = request_id
            @io = io
            @done = false
          end

          # Every byte was written: close this copy of the pipe and wait until
          # the hook has sent them all and the stream's end. Returns the size.
          def publish
            @io.close unless @io.closed?
            @done = true
            bytes, why = @native.stream_finish(@request_id, nil)
            raise Failure.error("streaming the dump to the plugin failed: #{why}") unless bytes

            bytes
          end

          # The dump failed: the plugin discards what it received.
          def discard
            return if @done

            @done = true
            @io.close unless @io.closed?
            @native.stream_finish(@request_id, "the dump failed in the worker")
          end
        end
      end
    end
  end
end
