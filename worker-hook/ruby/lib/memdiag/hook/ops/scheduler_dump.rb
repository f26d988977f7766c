# frozen_string_literal: true

require "stringio"
require "time"
require_relative "thread_dump"

module Memdiag
  module Hook
    module Ops
      # The fiber schedulers of the worker with their task hierarchies when
      # they can print one (Async), otherwise every live fiber and its backtrace.
      #
      # Fiber.scheduler only answers for the calling thread and this runs on the
      # hook's own thread, so schedulers are found by walking the heap for
      # objects implementing the scheduler interface.
      module SchedulerDump
        # The hooks Ruby 3.1 requires of every fiber scheduler.
        INTERFACE = %i[io_wait kernel_sleep block unblock].freeze

        # A hierarchy is printed by another thread while its reactor changes
        # it; the cap keeps a traversal that goes astray from running forever.
        MAX_LINES = 100_000

        class TooLong < StandardError; end

        # Counts lines written through it and stops the traversal at the cap.
        class CappedOutput
          def initialize(io, limit)
            @io = io
            @left = limit
          end

          def puts(*lines)
            lines = [""] if lines.empty?
            lines.flatten.each do |l|
              raise TooLong if (@left -= 1).negative?

              @io.puts(l)
            end
            nil
          end

          def write(*parts)
            parts.each { |s| @io.write(s) }
          end

          def print(*parts)
            write(*parts)
          end

          def <<(str)
            write(str)
            self
          end
        end

        module_function

        def text
          out = +""
          out << "memdiag scheduler dump: pid #{Process.pid}, #{Time.now.utc.iso8601(3)}, ruby #{RUBY_VERSION}\n"
          printed = 0
          found = schedulers
          found.each do |scheduler|
            out << "\n== fiber scheduler #{scheduler.class} (object_id=#{scheduler.object_id})\n"
            root = hierarchy_root(scheduler)
            if root
              out << hierarchy(root)
              printed += 1
            else
              out << "(#{scheduler.class} cannot print a task hierarchy)\n"
            end
          end
          if printed.zero?
            out << "\nno fiber scheduler with a task hierarchy is active; listing every live fiber\n" if found.empty?
            out << fibers
          end
          out
        end

        def schedulers
          classes = ObjectSpace.each_object(Class).select do |c|
            INTERFACE.all? { |m| c.method_defined?(m) }
          rescue StandardError
            false
          end
          classes.flat_map { |c| ObjectSpace.each_object(c).to_a }.uniq.select { |s| active?(s) }
        end

        # Async 2 schedulers are themselves the root node; Async 1 keeps its
        # reactor in @reactor.
        def hierarchy_root(scheduler)
          return scheduler if scheduler.respond_to?(:print_hierarchy)

          reactor = scheduler.instance_variable_get(:@reactor) if scheduler.instance_variable_defined?(:@reactor)
          reactor if reactor.respond_to?(:print_hierarchy)
        end

        # A closed scheduler (its reactor finished) may linger in the heap until
        # the next GC; it is not set on any thread any more.
        def active?(scheduler)
          return !scheduler.closed? if scheduler.respond_to?(:closed?)

          root = hierarchy_root(scheduler)
          return !root.closed? if root.respond_to?(:closed?)

          true
        rescue StandardError
          true
        end

        def hierarchy(root)
          io = StringIO.new
          begin
            root.print_hierarchy(CappedOutput.new(io, MAX_LINES))
          rescue TooLong
            io.puts("(hierarchy cut at #{MAX_LINES} lines)")
          rescue StandardError => e
            # The reactor's thread changed the tree under the traversal.
            io.puts("(hierarchy incomplete: #{e.class}: #{e.message})")
          end
          io.string
        end

        def fibers
          live = ObjectSpace.each_object(Fiber).select(&:alive?)
          out = +"\n== #{live.size} live fibers\n"
          live.each do |fiber|
            out << "\n#{fiber.inspect}#{fiber.blocking? ? ' blocking' : ' non-blocking'}\n"
            Backtrace.lines(fiber.backtrace).each { |l| out << "    #{l}\n" }
          rescue StandardError => e
            out << "    (backtrace unavailable: #{e.message})\n"
          end
          out
        end
      end
    end
  end
end
