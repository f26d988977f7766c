# frozen_string_literal: true

module Memdiag
  module Hook
    # One running hook: the native I/O core plus the Ruby thread
    # "memdiag-hook" that takes requests from it, runs them and replies.
    # Everything an operation raises becomes an error reply.
    class Runner
      TUNING = %i[backoff_min_ms backoff_max_ms handshake_timeout_ms queue_capacity].freeze
      # Wait without a timeout: stop and Thread#kill interrupt the wait, so
      # an idle hook never wakes the GVL.
      WAIT_MS = -1
      OPERATION_KEYS = %i[id op path shapes mode timeout_ms payload keep connection_id stream_target].freeze

      def initialize(config)
        @operations, ops_problem = load_operations(config[:dump_directory])
        @ops_problem = ops_problem
        capabilities = ["ping"]
        capabilities |= Operations::CAPABILITIES.map(&:to_s) if @operations
        @native = Native.new(
          socket: config[:socket], certificate: config[:certificate], key: config[:key],
          ca: config[:ca], name: config[:name], dump_directory: config[:dump_directory],
          runtime_version: RUBY_VERSION, hook_version: VERSION, capabilities: capabilities,
          **config.slice(*TUNING)
        )
        @stopping = false
        @thread = Thread.new { run }
        @thread.name = "memdiag-hook"
        @thread.report_on_exception = false
      end

      def connection_id
        @native.connection_id
      end

      def connections
        @native.connections
      end

      # True in a child for a runner inherited from the parent through a
      # fork that did not go through Process._fork.
      def forked_away?
        @native.forked_away?
      end

      def stop
        @stopping = true
        @native.shutdown
        begin
          @thread.join(5) unless Thread.current.equal?(@thread)
        rescue ThreadError
          nil # called from a trap handler: the thread ends on its own
        end
        @native.close
      end

      # In a forked child: the parent's thread does not exist here and the
      # native hook is already dropped; release what is ours.
      def abandon
        @stopping = true
        @native.close
      end

      private

      def load_operations(dump_directory)
        require "memdiag/hook/operations"
        [Operations.new(dump_directory: dump_directory), nil]
      rescue LoadError => e
        [nil, "the operations are not installed (#{e.message})"]
      rescue Exception => e # rubocop:disable Lint/RescueException
        Log.warn("operations unavailable: #{e.class}: #{e.message}")
        [nil, "the operations could not start: #{e.class}: #{e.message}"]
      end

      def run
        until @stopping
          begin
            request = @native.next_request(WAIT_MS)
            break if request == false
            next unless request

            if request[:op] == "connection_closed"
              connection_closed(request[:connection_id])
            elsif request[:op] == "settings"
              apply_settings(request)
            else
              deliver(request, handle(request))
            end
          rescue Exception => e # rubocop:disable Lint/RescueException
            break if @stopping

            Log.warn("request loop: #{e.class}: #{e.message}")
            sleep 0.1
          end
        end
      end

      def handle(request)
        reply = if request[:op] == "ping"
                  ping(request)
                elsif @operations
                  @operations.call(with_stream(request).slice(*OPERATION_KEYS))
                else
                  { status: :unsupported, error: "#{request[:op]}: #{@ops_problem}" }
                end
        return reply if reply.is_a?(Hash)

        { status: :error, error: "#{request[:op]} returned #{reply.class}, not a reply" }
      rescue Exception => e # rubocop:disable Lint/RescueException
        { status: :error, error: "#{request[:op]} failed in the worker: #{e.class}: #{e.message}" }
      end

      # Queued by the native core when a connection ends; nothing to reply.
      def connection_closed(connection_id)
        return unless @operations

        @operations.connection_closed(connection_id).each do |what|
          Log.warn("connection #{connection_id} ended: stopped #{what} that it had started " \
                   "(start it with keep to make it outlive its connection)")
        end
      rescue StandardError => e
        Log.warn("connection #{connection_id} ended: cleaning up failed: #{e.class}: #{e.message}")
      end

      # Queued by the native core after a welcome that carries settings (the
      # plugin's AllocationSampling); nothing to reply.
      def apply_settings(request)
        rate = request[:allocation_sampling]
        return if rate.nil? || Sampler.stats[:rate] == rate

        Memdiag::Hook.allocation_sampling = rate
        Log.warn(if rate.zero?
                   "the plugin turned allocation sampling off (AllocationSampling 0)"
                 else
                   "the plugin set allocation sampling to #{rate} a second (AllocationSampling)"
                 end)
      rescue StandardError => e
        Log.warn("allocation sampling setting from the plugin not applied: #{e.class}: #{e.message}")
      end

      # A request that asks for a stream gets a target that writes into this
      # hook's connection (the plugin stores the file on its side).
      def with_stream(request)
        return request unless request[:stream]

        request.merge(stream_target: Ops::StreamTarget.new(@native, request[:connection_id], request[:id],
                                                           request[:stream_window]))
      end

      def ping(request)
        payload = request[:payload] || "".b
        { status: :ok, data: payload, bytes: payload.bytesize, note: "pid #{Process.pid}" }
      end

      def deliver(request, reply)
        @native.reply(request[:connection_id], request[:id], reply)
      rescue Exception => e # rubocop:disable Lint/RescueException
        @native.reply(request[:connection_id], request[:id],
                      { status: :error, error: "the worker could not send its reply: #{e.class}: #{e.message}" })
      end
    end
  end
end
