# frozen_string_literal: true

module Memdiag
  module Hook
    # Prepended to Process.singleton_class: Ruby 3.1 routes every Ruby-level
    # fork (Kernel#fork, Process.fork, IO.popen("-")) through Process._fork,
    # which is what preforking servers (Puma, Unicorn, Sidekiq) use.
    module ForkTracking
      def _fork
        Memdiag::Hook.before_fork
        pid = super
        if pid.zero?
          Memdiag::Hook::Sampler.after_fork unless Thread.current[:memdiag_dump_child]
          Memdiag::Hook.after_fork_child
        end
        pid
      end
    end

    # Process.daemon forks below Ruby's _fork; the daemon is the same
    # application under a new pid, so it registers again under its own name.
    module DaemonTracking
      def daemon(*args)
        before = Process.pid
        result = super
        if Process.pid != before
          Memdiag::Hook::Sampler.after_fork
          Memdiag::Hook.after_fork_child(rename: false)
        end
        result
      end
    end
  end
end

if Process.respond_to?(:_fork)
  Process.singleton_class.prepend(Memdiag::Hook::ForkTracking)
  Process.singleton_class.prepend(Memdiag::Hook::DaemonTracking)
else
  Memdiag::Hook::Log.warn("this Ruby has no Process._fork: forked children stay unhooked")
end
