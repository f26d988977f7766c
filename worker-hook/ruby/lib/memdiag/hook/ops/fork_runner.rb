# frozen_string_literal: true

require_relative "failure"

module Memdiag
  module Hook
    module Ops
      # Runs a block in a forked child of the worker and waits for it. The child
      # is a point-in-time copy of the worker: it does the work, reports one
      # status line through a pipe and leaves with exit! (no at_exit handlers,
      # no flushing of the worker's IO buffers). The worker is held only for the
      # fork call itself; waiting releases the GVL.
      class ForkRunner
        # Signals a worker commonly traps for its own control. The child must
        # not run the worker's handlers for them: a signal sent to the whole
        # process group ends an unwanted dump (the parent reports it), and the
        # job-control ones, whose default would stop the child, are ignored.
        CHILD_SIGNALS = {
          "TERM" => "SYSTEM_DEFAULT", "INT" => "SYSTEM_DEFAULT", "QUIT" => "SYSTEM_DEFAULT",
          "HUP" => "SYSTEM_DEFAULT", "USR1" => "SYSTEM_DEFAULT", "USR2" => "SYSTEM_DEFAULT",
          "WINCH" => "SYSTEM_DEFAULT", "TTIN" => "IGNORE", "TTOU" => "IGNORE"
        }.freeze

        # The dump is background work: where the child and the worker's own
        # threads compete for a core, the worker's requests come first.
        CHILD_NICE = 19

        # pause_us: CPU time the fork call took on this thread, which holds the
        # GVL throughout it, so the application is stopped for that long.
        # fork_wall_us: the same call by the clock, including any wait for the
        # GVL (the application runs meanwhile) or for a CPU.
        Result = Struct.new(:pause_us, :fork_wall_us, :child_us, :message, keyword_init: true)

        def self.supported?
          Process.respond_to?(:fork)
        end

        # The block runs in the child and returns a short status string. Raises
        # Failure when the child fails, dies or outlives timeout_ms (0/nil: no limit).
        def run(timeout_ms, &work)
          reader, writer = IO.pipe
          started = Clock.now_us
          cpu_started = Clock.thread_cpu_us
          pid = fork_child
          child(reader, writer, &work) if pid.zero?

          fork_wall_us = Clock.now_us - started
          pause_us = cpu_started ? [Clock.thread_cpu_us - cpu_started, fork_wall_us].min : fork_wall_us
          writer.close
          line = read_status(reader, timeout_ms)
          if line == :timeout
            kill_and_reap(pid)
            pid = nil
            raise Failure.error("dump child did not finish within #{timeout_ms} ms and was killed")
          end
          status = reap(pid)
          pid = nil
          interpret(line, status, pause_us, fork_wall_us, Clock.now_us - started)
        ensure
          # Reached with a live child only when this thread is interrupted
          # (Thread#kill, an exception) while waiting.
          kill_and_reap(pid) if pid&.positive?
          [reader, writer].each { |io| io.close if io && !io.closed? }
        end

        private

        # The hook registers forked processes as new workers; a dump child is
        # not one. Ruby-level _fork overrides (the hook's, an application's
        # after-fork callbacks) are bypassed by calling Process._fork's own
        # implementation: the child only dumps and exits, and must not reconnect
        # to databases or servers. The thread flag covers native handlers.
        def fork_child
          Thread.current[:memdiag_dump_child] = true
          original_fork.call
        ensure
          Thread.current[:memdiag_dump_child] = nil
        end

        def original_fork
          m = Process.method(:_fork)
          m = m.super_method while m && m.owner != Process.singleton_class
          m || Process.method(:_fork)
        end

        def child(reader, writer)
          code = 1
          # Nothing may unwind from here into the worker's code: every
          # exception becomes a status line and the child always ends in exit!.
          begin
            reader.close
            begin
              Process.setpriority(Process::PRIO_PROCESS, 0, CHILD_NICE)
            rescue SystemCallError, NotImplementedError
              nil
            end
            CHILD_SIGNALS.each do |sig, action|
              Signal.trap(sig, action)
            rescue ArgumentError
              nil
            end
            # Marking would write to every heap page and copy it; the child
            # lives only for the dump.
            GC.disable
            message = yield
            writer.write("ok #{message}\n")
            code = 0
          rescue Exception => e
            begin
              writer.write("error #{e.class}: #{e.message.tr("\n", " ")}\n")
            rescue Exception
              nil
            end
          ensure
            Process.exit!(code)
          end
        end

        def read_status(reader, timeout_ms)
          deadline = timeout_ms&.positive? ? Clock.now_us + (timeout_ms * 1000) : nil
          buf = +""
          until buf.include?("\n")
            wait = deadline && ((deadline - Clock.now_us) / 1_000_000.0)
            return :timeout if wait && wait <= 0
            next unless IO.select([reader], nil, nil, wait)

            chunk = reader.read_nonblock(4096, exception: false)
            break if chunk.nil?
            next if chunk == :wait_readable

            buf << chunk
          end
          buf.lines.first
        end

        def reap(pid)
          _, status = Process.waitpid2(pid)
          status
        rescue Errno::ECHILD
          # Someone else (a SIGCHLD handler calling wait(-1)) reaped the child;
          # its status line is then the only evidence.
          nil
        end

        def kill_and_reap(pid)
          Process.kill(:KILL, pid)
          reap(pid)
        rescue Errno::ESRCH, Errno::ECHILD
          nil
        end

        def interpret(line, status, pause_us, fork_wall_us, total_us)
          if line&.start_with?("ok ")
            return Result.new(pause_us: pause_us, fork_wall_us: fork_wall_us, child_us: total_us,
                              message: line.delete_prefix("ok ").chomp)
          end

          cause = if line&.start_with?("error ")
                    line.delete_prefix("error ").chomp
                  elsif status&.signaled?
                    "killed by signal #{Signal.signame(status.termsig) || status.termsig}"
                  elsif status
                    "exited with status #{status.exitstatus} without reporting"
                  else
                    "ended without reporting"
                  end
          raise Failure.error("dump child failed: #{cause}")
        end
      end
    end
  end
end
