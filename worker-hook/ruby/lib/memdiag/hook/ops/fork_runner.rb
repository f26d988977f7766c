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
        # not run the worker's handlers for them: a signal sent to it ends an
        # unwanted dump (the parent reports it), and the job-control ones,
        # whose default would stop the child, are ignored.
        CHILD_SIGNALS = {
          "TERM" => "SYSTEM_DEFAULT", "INT" => "SYSTEM_DEFAULT", "QUIT" => "SYSTEM_DEFAULT",
          "HUP" => "SYSTEM_DEFAULT", "USR1" => "SYSTEM_DEFAULT", "USR2" => "SYSTEM_DEFAULT",
          "WINCH" => "SYSTEM_DEFAULT", "TTIN" => "IGNORE", "TTOU" => "IGNORE"
        }.freeze

        # Where the dump competes for a CPU. A nice value only ranks the
        # threads of one scheduling group: on Linux with autogroups (the
        # default outside cpu cgroups) that group is the session. Left in the
        # worker's session, the child competed only with the worker's own
        # threads, and at nice 19 it got 1.5 % of the CPU they left: on a
        # loaded host a busy worker's 1.3 s dump took 30 s (issue 24). So the
        # child starts a session of its own (setsid): it then shares the host
        # with the other sessions and takes nothing from the worker's. Where
        # the worker is in a cpu cgroup, the child stays in it and CHILD_NICE
        # ranks it against the worker's threads: nice 5 weighs a third of nice
        # 0, so a contended cgroup gives the dump a quarter of its CPU. At
        # nice 10 or 19 there a dump took longer than an inline one.
        CHILD_NICE = 5

        # A dump slower than this by the clock gets a note that says how long
        # its child ran and how long it waited for a CPU.
        SLOW_DUMP_US = 2_000_000

        # pause_us: CPU time the fork call took on this thread, which holds the
        # GVL throughout it, so the application is stopped for that long.
        # fork_wall_us: the same call by the clock, including any wait for the
        # GVL (the application runs meanwhile) or for a CPU.
        # child_run_us / child_wait_us: the child's time on a CPU and waiting
        # for one (/proc/PID/schedstat, read before it is reaped; nil where
        # that file is missing). gc_count: GC.count in the worker at the fork
        # (fork_child). slow_note: why a dump that took longer than
        # SLOW_DUMP_US did, or nil.
        Result = Struct.new(:pause_us, :fork_wall_us, :child_us, :child_run_us, :child_wait_us, :message,
                            :gc_count, keyword_init: true) do
          def slow_note
            return nil unless child_us > SLOW_DUMP_US && child_run_us && child_wait_us

            format("the fork dump took %.1f s: its child ran %.1f s and waited %.1f s for a CPU",
                   child_us / 1e6, child_run_us / 1e6, child_wait_us / 1e6)
          end
        end

        def self.supported?
          Process.respond_to?(:fork)
        end

        # The block runs in the child and returns a short status string. Raises
        # Failure when the child fails, dies or outlives timeout_ms (0/nil: no limit).
        def run(timeout_ms, &work)
          reader, writer = IO.pipe
          # The child's lifeline: the child reads end-of-file when the worker
          # is gone, however it went, unless a process the worker forked
          # meanwhile still holds the writing end; so the child also watches
          # for a new parent (watch_parent).
          life_r, life_w = IO.pipe
          worker_pid = Process.pid
          started = Clock.now_us
          cpu_started = Clock.thread_cpu_us
          pid = fork_child
          child(reader, writer, [life_r, life_w, worker_pid], &work) if pid.zero?

          fork_wall_us = Clock.now_us - started
          pause_us = cpu_started ? [Clock.thread_cpu_us - cpu_started, fork_wall_us].min : fork_wall_us
          [writer, life_r].each(&:close)
          line = read_status(reader, timeout_ms)
          if line == :timeout
            kill_and_reap(pid)
            pid = nil
            raise Failure.error("dump child did not finish within #{timeout_ms} ms and was killed")
          end
          run_us, wait_us = schedstat_us(pid)
          status = reap(pid)
          pid = nil
          result = interpret(line, status, Clock.now_us - started)
          result.pause_us = pause_us
          result.fork_wall_us = fork_wall_us
          result.child_run_us = run_us
          result.child_wait_us = wait_us
          result.gc_count = @gc_count
          result
        ensure
          # Reached with a live child only when this thread is interrupted
          # (Thread#kill, an exception) while waiting.
          kill_and_reap(pid) if pid&.positive?
          [reader, writer, life_r, life_w].each { |io| io.close if io && !io.closed? }
        end

        private

        # The hook registers forked processes as new workers; a dump child is
        # not one. Ruby-level _fork overrides (the hook's, an application's
        # after-fork callbacks) are bypassed by calling Process._fork's own
        # implementation: the child only dumps and exits, and must not reconnect
        # to databases or servers. The thread flag covers native handlers.
        #
        # The child starts with collection off (it lives only for the dump,
        # and marking would write to every heap page and copy it): turned off
        # in the worker across the fork call only, so that no collection runs
        # in the child before it could turn it off itself. One there would
        # show in the allocation generations of the child's own objects, newer
        # than any the worker had made: the analysis then took worker objects
        # allocated after the fork (at the worker's generation, below the
        # dump's newest) for objects moved by compaction, and called the
        # capture doubtful. Under GC.stress (a collection at every
        # allocation) the child collected 66 times between the fork and the
        # dump when it turned collection off itself (4395bb0).
        #
        # GC.count is read with collection off (GC.disable has finished any
        # lazy sweep): every object in the child's dump is live at that
        # count, and another object at one of their addresses later needs a
        # collection after it, so its allocation generation is greater. The
        # analysis tells slots reused after the dump by that count (the heap
        # profile's dump_gc_count); the count when the dump ended is too late
        # under load, when the worker collects several times while the child
        # dumps.
        def fork_child
          was_disabled = GC.disable
          @gc_count = GC.count
          Thread.current[:memdiag_dump_child] = true
          pid = original_fork.call
        ensure
          GC.enable if !was_disabled && pid != 0
          Thread.current[:memdiag_dump_child] = nil
        end

        def original_fork
          m = Process.method(:_fork)
          m = m.super_method while m && m.owner != Process.singleton_class
          m || Process.method(:_fork)
        end

        def child(reader, writer, lifeline)
          code = 1
          # Nothing may unwind from here into the worker's code: every
          # exception becomes a status line and the child always ends in exit!.
          begin
            # Already off since the fork (fork_child); off here whatever
            # forked the child.
            GC.disable
            reader.close
            lifeline[1].close
            schedule_in_background
            watch_parent(lifeline[0], lifeline[2])
            CHILD_SIGNALS.each do |sig, action|
              Signal.trap(sig, action)
            rescue ArgumentError
              nil
            end
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

        # The child's own session (and so its own autogroup), then its nice
        # value; either may be refused, and the dump runs anyway.
        def schedule_in_background
          begin
            Process.setsid
          rescue SystemCallError, NotImplementedError
            nil
          end
          Process.setpriority(Process::PRIO_PROCESS, 0, CHILD_NICE)
        rescue SystemCallError, NotImplementedError
          nil
        end

        # How often the child looks for a new parent, in seconds.
        PARENT_POLL_S = 0.2

        # Out of the worker's session and process group, the child no longer
        # gets the signals sent to them: it leaves when the worker does. The
        # lifeline's end-of-file says so at once; but a process the worker
        # forked during the dump (a fork without exec keeps every descriptor)
        # holds the writing end for as long as it lives (issue 24). The
        # worker's death also gives the child a new parent (the nearest
        # subreaper or init), and no other event does: that is checked
        # against the worker's PID taken before the fork, so a worker that
        # died before this thread started is seen too.
        def watch_parent(life_r, worker_pid)
          Thread.new do
            loop do
              break if Process.ppid != worker_pid
              next unless IO.select([life_r], nil, nil, PARENT_POLL_S)
              break if life_r.read_nonblock(64, exception: false).nil?
            end
          rescue Exception
            nil
          ensure
            Process.exit!(3)
          end
        end

        # [microseconds on a CPU, microseconds waiting for one] of the child.
        def schedstat_us(pid)
          run_ns, wait_ns = File.read("/proc/#{pid}/schedstat").split.first(2).map { |v| Integer(v) }
          [run_ns / 1000, wait_ns / 1000]
        rescue SystemCallError, ArgumentError, TypeError
          nil
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

        def interpret(line, status, total_us)
          return Result.new(child_us: total_us, message: line.delete_prefix("ok ").chomp) if line&.start_with?("ok ")

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
