# frozen_string_literal: true

# memdiag worker hook: connects this process to the memdiag collectd plugin
# and runs its diagnostic requests (heap dumps, allocation tracing, GC
# profiles, thread and scheduler dumps). See docs/hook.md.
#
#   require "memdiag/hook"
#   Memdiag::Hook.start(socket: "/run/memdiag/supervisor.ipc",
#                       certificate: "worker.pem", key: "worker.key", ca: "ca.pem",
#                       name: "billing-api", dump_directory: "/var/tmp/memdiag")
#
# A hook that cannot reach the plugin logs to stderr and keeps retrying; it
# never stops or slows the application.
require "memdiag/hook/version"
require "memdiag/hook_native"
require "memdiag/hook/log"
require "memdiag/hook/runner"
require "memdiag/hook/fork_tracking"

module Memdiag
  module Hook
    class Error < StandardError; end

    @runner = nil
    @config = nil
    @forks = 0

    class << self
      # Start the hook in this process. Returns Memdiag::Hook. Raises
      # ArgumentError for a missing setting and Memdiag::Hook::Error when the
      # hook is already running; not reaching the plugin is not an error.
      # Tuning keywords: backoff_min_ms, backoff_max_ms, handshake_timeout_ms,
      # queue_capacity. allocation_sampling: allocations sampled a second for
      # heap_profile (Sampler::DEFAULT_RATE; 0 turns sampling off).
      def start(socket:, certificate:, key:, ca:, name: nil, dump_directory: nil,
                allocation_sampling: Sampler::DEFAULT_RATE, **tuning)
        unknown = tuning.keys - Runner::TUNING
        raise ArgumentError, "unknown keyword(s): #{unknown.join(", ")}" unless unknown.empty?
        forget_inherited_runner
        raise Error, "memdiag hook already running as #{@config[:name].inspect}" if @runner

        # Files are opened again at every reconnect, possibly after the
        # application changed directory (Process.daemon, Puma's `directory`).
        @config = {
          socket: File.expand_path(socket.to_s), certificate: File.expand_path(certificate.to_s),
          key: File.expand_path(key.to_s), ca: File.expand_path(ca.to_s),
          name: (name || default_name).to_s,
          dump_directory: dump_directory && File.expand_path(dump_directory.to_s),
          **tuning
        }
        @forks = 0
        @runner = Runner.new(@config)
        start_sampler(allocation_sampling)
        self
      end

      # Start from MEMDIAG_* environment variables (what memdiag/hook/auto
      # does). Returns Memdiag::Hook, or nil when the environment does not
      # configure a hook (a warning says which variables are missing).
      def start_from_env(env = ENV)
        missing = ENV_REQUIRED.keys.reject { |k| env[k] && !env[k].empty? }
        unless missing.empty?
          Log.warn("#{missing.join(", ")} not set; this process runs without the memdiag hook")
          return nil
        end
        tuning = ENV_TUNING.each_with_object({}) do |(var, key), h|
          h[key] = Integer(env[var], 10) if env[var] && !env[var].empty?
        end
        start(**ENV_REQUIRED.to_h { |var, key| [key, env[var]] },
              name: blank_to_nil(env["MEMDIAG_NAME"]),
              dump_directory: blank_to_nil(env["MEMDIAG_DUMP_DIRECTORY"]),
              allocation_sampling: sampling_from_env(env["MEMDIAG_ALLOCATION_SAMPLING"]),
              **tuning)
      rescue Exception => e # rubocop:disable Lint/RescueException -- a hook must never stop the host
        Log.warn("not started: #{e.class}: #{e.message}")
        nil
      end

      # Stop the hook: close the connection and end the hook's thread.
      def stop
        runner = @runner
        @runner = nil
        runner&.stop
        Sampler.stop if runner
        nil
      end

      # Change the allocation sampler's rate (samples a second; 0: off) in
      # this process; what the plugin's AllocationSampling does through the
      # welcome.
      def allocation_sampling=(rate)
        start_sampler(rate)
      end

      def running?
        forget_inherited_runner
        !@runner.nil?
      end

      # The connection ID the plugin gave this process; nil while not connected.
      def connection_id
        id = @runner&.connection_id
        id && id.positive? ? id : nil
      end

      # How many times this process has been welcomed (1 + reconnections).
      def connections
        @runner ? @runner.connections : 0
      end

      def name
        @config && @config[:name]
      end

      # The name a process gets when none is configured.
      def default_name
        base = File.basename($PROGRAM_NAME.to_s)
        base.empty? || base.start_with?("-") ? "ruby" : base
      end

      # --- fork (called by ForkTracking around Process._fork) ---

      # Runs in the parent before fork; numbers the child so that its name
      # shows whose worker it is.
      def before_fork # :nodoc:
        @forks += 1 if @runner && !Thread.current[:memdiag_dump_child]
      end

      # Runs in the child right after fork. The C core has already closed the
      # parent's socket and dropped its TLS session; here the parent's runner
      # is forgotten and, unless this child only exists to write a dump, a
      # new hook registers the child as a worker of its own.
      def after_fork_child(rename: true) # :nodoc:
        runner = @runner
        return unless runner

        @runner = nil
        runner.abandon
        return if Thread.current[:memdiag_dump_child]

        @config = @config.merge(name: "#{@config[:name]}/worker-#{@forks}") if rename
        @forks = 0
        @runner = Runner.new(@config)
      rescue Exception => e # rubocop:disable Lint/RescueException
        Log.warn("could not start in the forked child: #{e.class}: #{e.message}")
      end

      private

      # The sampler must never stop the hook, let alone the worker.
      def start_sampler(rate)
        n = Integer(rate)
        raise ArgumentError, "allocation_sampling must be 0 (off) or a positive integer" if n.negative?

        Sampler.start(n)
      rescue ArgumentError, TypeError
        raise
      rescue Exception => e # rubocop:disable Lint/RescueException
        Log.warn("allocation sampling not started: #{e.class}: #{e.message}")
      end

      def sampling_from_env(value)
        return Sampler::DEFAULT_RATE if value.nil? || value.strip.empty?
        return 0 if %w[off false no].include?(value.strip.downcase)

        n = Integer(value, 10)
        raise ArgumentError if n.negative?

        n
      rescue ArgumentError
        Log.warn("MEMDIAG_ALLOCATION_SAMPLING=#{value.inspect} is not a number of samples a second (or off); " \
                 "sampling #{Sampler::DEFAULT_RATE} a second")
        Sampler::DEFAULT_RATE
      end

      # A fork that bypassed Process._fork (a C extension calling fork(2))
      # leaves the parent's runner here; the C core has already dropped it.
      def forget_inherited_runner
        return unless @runner&.forked_away?

        @runner.abandon
        @runner = nil
      end

      def blank_to_nil(value)
        value.nil? || value.empty? ? nil : value
      end
    end

    ENV_REQUIRED = {
      "MEMDIAG_SOCKET" => :socket,
      "MEMDIAG_CERT" => :certificate,
      "MEMDIAG_KEY" => :key,
      "MEMDIAG_CA" => :ca
    }.freeze

    ENV_TUNING = {
      "MEMDIAG_BACKOFF_MIN_MS" => :backoff_min_ms,
      "MEMDIAG_BACKOFF_MAX_MS" => :backoff_max_ms
    }.freeze
  end
end
