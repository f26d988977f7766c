# frozen_string_literal: true

require "time"

module Memdiag
  module Hook
    module Ops
      # Every live thread of the worker: name, status, ids and backtrace.
      module ThreadDump
        module_function

        def text
          threads = Thread.list
          out = +""
          out << "memdiag thread dump: pid #{Process.pid}, #{threads.size} threads, " \
                 "#{Time.now.utc.iso8601(3)}, ruby #{RUBY_VERSION}\n"
          threads.each { |t| out << describe(t) }
          out
        end

        def describe(thread)
          out = +"\n"
          out << "Thread #{(thread.name || '(unnamed)').inspect}"
          out << " object_id=#{thread.object_id}"
          out << " native_id=#{thread.native_thread_id}" if thread.respond_to?(:native_thread_id)
          out << " status=#{status(thread)} priority=#{thread.priority}"
          tags = []
          tags << "main" if thread == Thread.main
          tags << "this dump's thread" if thread == Thread.current
          out << " [#{tags.join(', ')}]" unless tags.empty?
          out << "\n"
          Backtrace.lines(thread.backtrace).each { |l| out << "    #{l}\n" }
          out
        end

        def status(thread)
          case (s = thread.status)
          when false then "finished"
          when nil then "died with an exception"
          else s
          end
        end
      end

      module Backtrace
        module_function

        def lines(backtrace)
          return ["(no backtrace available)"] if backtrace.nil?
          return ["(empty backtrace)"] if backtrace.empty?

          backtrace
        end
      end
    end
  end
end
