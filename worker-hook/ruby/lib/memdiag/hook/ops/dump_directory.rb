# frozen_string_literal: true

require "securerandom"
require_relative "failure"

module Memdiag
  module Hook
    module Ops
      # The one directory a worker may write diagnostics into, and the rules for
      # naming a file inside it. Dumps hold application data, so a request can
      # never make the worker write elsewhere: no "..", no symbolic link on the
      # way or at the end, no overwriting.
      class DumpDirectory
        DIRECTORY_MODE = 0o700

        attr_reader :configured

        # configured: String or nil. nil means the worker writes no files at all.
        def initialize(configured)
          @configured = configured && File.expand_path(configured.to_s)
        end

        def configured?
          !@configured.nil?
        end

        # The directory with every symbolic link resolved. It must exist: the
        # hook creates no directory, because the dump directory is often the
        # collectd plugin's CaptureDirectory, which root must own (a copy made
        # here would belong to the worker's user, and the plugin refuses it).
        def root
          raise Failure.refused("no dump directory is configured for this worker; " \
                                "only results returned inline are available") unless configured?

          File.realpath(@configured)
        rescue Errno::ENOENT
          raise Failure.refused("dump directory #{@configured} does not exist; the hook creates none " \
                                "(the memdiag plugin makes its CaptureDirectory; create any other " \
                                "dump directory before starting the worker)")
        rescue SystemCallError => e
          raise Failure.error("dump directory #{@configured} is not usable: #{e.message}")
        end

        # Resolves a requested path (relative to the dump directory, or absolute and
        # inside it) to a Target. Raises Failure when the path is not acceptable.
        def resolve(path)
          raise Failure.bad_request("path must be a string") unless path.is_a?(String)
          raise Failure.bad_request("path is empty") if path.empty?
          raise Failure.bad_request("path contains a NUL byte") if path.include?("\0")

          base_dir = root
          parts = relative_parts(path, base_dir)
          raise Failure.bad_request("path #{path.inspect} names the dump directory itself, not a file") if parts.empty?
          if parts.include?("..")
            raise Failure.refused("path #{path.inspect} contains '..'; name a file inside the dump directory #{@configured}")
          end

          parent = File.join(base_dir, *parts[0..-2])
          check_parent(path, parent)
          final = File.join(parent, parts[-1])
          check_final(path, final)
          Target.new(final, parent, parts[-1])
        end

        # A file name for a dump the request did not name.
        def default_name(prefix, extension)
          stamp = Time.now.utc.strftime("%Y%m%dT%H%M%S")
          "#{prefix}-#{Process.pid}-#{stamp}-#{SecureRandom.hex(3)}.#{extension}"
        end

        private

        def relative_parts(path, base_dir)
          rel = path
          if path.start_with?("/")
            prefix = [base_dir, @configured].uniq.find { |p| inside?(path, p) }
            unless prefix
              raise Failure.refused("path #{path} is outside the dump directory #{@configured}; " \
                                    "memdiag writes only inside it")
            end
            rel = path[prefix.chomp("/").length..]
          end
          rel.split("/").reject { |c| c.empty? || c == "." }
        end

        def inside?(path, dir)
          d = dir.chomp("/")
          path == d || path.start_with?("#{d}/")
        end

        def check_parent(path, parent)
          real = begin
            File.realpath(parent)
          rescue Errno::ENOENT
            raise Failure.refused("directory #{parent} for #{path.inspect} does not exist " \
                                  "(memdiag does not create subdirectories)")
          rescue SystemCallError => e
            raise Failure.refused("directory #{parent} for #{path.inspect} is not usable: #{e.message}")
          end
          if real != parent
            raise Failure.refused("path #{path.inspect} goes through a symbolic link (#{parent} is really #{real}); " \
                                  "memdiag follows no links inside the dump directory")
          end
          raise Failure.refused("#{parent} is not a directory") unless File.directory?(real)
        end

        def check_final(path, final)
          st = File.lstat(final)
          if st.symlink?
            raise Failure.refused("path #{path.inspect} is a symbolic link; memdiag writes no file through a link")
          end
          raise Failure.refused("#{final} already exists; memdiag never overwrites a file, choose a new path")
        rescue Errno::ENOENT
          nil
        end
      end

      # A resolved destination. Writing goes to a hidden temporary file beside it,
      # published under the final name only when complete.
      class Target
        attr_reader :path, :directory, :name

        def initialize(path, directory, name)
          @path = path
          @directory = directory
          @name = name
        end

        # Creates the temporary file (0600, O_EXCL, O_NOFOLLOW). The caller owns it.
        def create_temp
          PartialFile.create(self)
        end
      end

      # A dump being written. Until #publish it lives under a name that cannot be
      # mistaken for a finished dump; #discard removes it.
      class PartialFile
        SUFFIX = ".memdiag-partial"
        FLAGS = File::WRONLY | File::CREAT | File::EXCL | File::NOFOLLOW | File::BINARY

        attr_reader :io, :temp_path, :target

        def self.create(target)
          # Long final names must still leave room for the temporary decoration.
          stem = target.name.byteslice(0, 150).scrub("_")
          temp_name = ".#{stem}.#{Process.pid}.#{SecureRandom.hex(4)}#{SUFFIX}"
          dir, base = open_directory(target.directory)
          begin
            io = File.open(File.join(base, temp_name), FLAGS, 0o600)
            io.chmod(0o600)
          rescue SystemCallError
            dir&.close
            raise
          end
          new(target, temp_name, io, dir, base)
        rescue SystemCallError => e
          raise Failure.error("cannot create a file in #{target.directory}: #{e.message}")
        end

        # The directory was checked by path when the request was resolved; a
        # component swapped for a link since would carry the file elsewhere.
        # So the directory is opened once, checked to still be that path,
        # and every later step goes through the open handle (/proc/self/fd).
        # Without /proc only the path remains.
        def self.open_directory(path)
          dir = File.open(path, File::RDONLY | File::NOFOLLOW)
          base = "/proc/self/fd/#{dir.fileno}"
          unless File.directory?(base)
            dir.close
            return [nil, path]
          end
          real = File.realpath(base)
          unless real == path && dir.stat.directory?
            dir.close
            raise Failure.refused("directory #{path} was replaced (it is now #{real}, through a symbolic link " \
                                  "or moved) after it was checked; nothing was written")
          end
          [dir, base]
        rescue Errno::ELOOP
          raise Failure.refused("directory #{path} became a symbolic link after it was checked; nothing was written")
        end

        def initialize(target, temp_name, io, dir = nil, base = target.directory)
          @target = target
          @temp_path = File.join(target.directory, temp_name)
          @temp_name = temp_name
          @io = io
          @dir = dir
          @base = base
          @published = false
        end

        # Makes the finished file visible under its final name without ever
        # replacing an existing one. Returns its size in bytes.
        def publish
          @io.flush
          @io.fsync
          bytes = @io.stat.size
          @io.close
          link_into_place
          @published = true
          sync_directory
          bytes
        rescue Failure
          discard
          raise
        rescue SystemCallError, IOError => e
          discard
          raise Failure.error("writing #{@target.path} failed: #{e.message}; nothing was left behind")
        end

        def discard
          return if @published

          @io.close unless @io.closed?
        rescue SystemCallError, IOError
          nil
        ensure
          begin
            File.unlink(in_directory(@temp_name)) unless @published
          rescue Errno::ENOENT
            nil
          end
          close_directory
        end

        private

        def in_directory(name)
          File.join(@base, name)
        end

        def close_directory
          @dir.close if @dir && !@dir.closed?
        rescue IOError
          nil
        end

        def link_into_place
          File.link(in_directory(@temp_name), in_directory(@target.name))
          File.unlink(in_directory(@temp_name))
        rescue Errno::EEXIST
          raise Failure.refused("#{@target.path} appeared while the dump was written; memdiag never overwrites a file")
        rescue Errno::EPERM, Errno::EOPNOTSUPP, Errno::ENOTSUP
          # Filesystems without hard links: the lstat just before a rename is the
          # best remaining guard against replacing a file.
          final = in_directory(@target.name)
          raise Failure.refused("#{@target.path} appeared while the dump was written") if exists?(final)

          File.rename(in_directory(@temp_name), final)
        end

        def exists?(path)
          File.lstat(path)
          true
        rescue Errno::ENOENT
          false
        end

        def sync_directory
          File.open(@base, File::RDONLY) { |d| d.fsync }
        rescue SystemCallError, IOError
          nil
        end
      end
    end
  end
end
