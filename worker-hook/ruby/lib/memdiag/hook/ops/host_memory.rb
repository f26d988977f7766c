# frozen_string_literal: true

module Memdiag
  module Hook
    module Ops
      # Memory figures of this process and its host, read from /proc and the
      # cgroup v2 filesystem. Every reader returns nil when the figure is not
      # available (another OS, a restricted container) so callers can say so.
      module HostMemory
        module_function

        def rss_bytes
          kib_field("/proc/self/status", "VmRSS")
        end

        def mem_available_bytes
          kib_field("/proc/meminfo", "MemAvailable")
        end

        # Bytes this process's memory cgroup may still use before its limit, or
        # nil when it has none or no cgroup filesystem is readable. Handles the
        # unified hierarchy (v2) and the v1 memory controller.
        def cgroup_headroom_bytes
          lines = File.readlines("/proc/self/cgroup", chomp: true)
          v2 = lines.find { |l| l.start_with?("0::") }
          v1 = lines.find { |l| l.split(":", 3)[1].to_s.split(",").include?("memory") }
          if v1
            headroom_in(cgroup_dir("/sys/fs/cgroup/memory", v1.split(":", 3)[2]),
                        "memory.limit_in_bytes", "memory.usage_in_bytes")
          elsif v2
            headroom_in(cgroup_dir("/sys/fs/cgroup", v2.delete_prefix("0::")), "memory.max", "memory.current")
          end
        rescue SystemCallError
          nil
        end

        # v1 reports "no limit" as a huge page-aligned number rather than "max".
        UNLIMITED = 1 << 62

        def headroom_in(dir, limit_file, usage_file)
          return nil unless dir

          limit = File.read(File.join(dir, limit_file)).strip
          return nil if limit == "max" || Integer(limit) >= UNLIMITED

          usage = Integer(File.read(File.join(dir, usage_file)).strip)
          [Integer(limit) - usage, 0].max
        rescue SystemCallError, ArgumentError
          nil
        end

        # Inside a cgroup namespace the listed path may not exist under the
        # mount; the mount's root is then this process's own cgroup.
        def cgroup_dir(mount, path)
          [File.join(mount, path), mount].find { |d| File.directory?(d) }
        end

        # What a fork could use for copy-on-write pages: the smaller of the
        # host's available memory and the cgroup's remaining allowance.
        def headroom_bytes
          [mem_available_bytes, cgroup_headroom_bytes].compact.min
        end

        def kib_field(file, name)
          File.foreach(file) do |line|
            next unless line.start_with?("#{name}:")

            return Integer(line.split[1]) * 1024
          end
          nil
        rescue SystemCallError, ArgumentError
          nil
        end

        def mib(bytes)
          format("%.1f MB", bytes / 1_048_576.0)
        end
      end
    end
  end
end
