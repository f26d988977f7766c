# frozen_string_literal: true

module Memdiag
  module Hook
    module Ops
      # Free space of the filesystem holding a directory. Ruby has no statvfs in
      # core, so libc's is called through Fiddle. Only LP64 Linux is handled,
      # where every field up to f_bavail is an unsigned long; elsewhere the
      # figure is unknown (nil) and the dump relies on handling ENOSPC.
      module FreeSpace
        module_function

        # struct statvfs on LP64 glibc: f_bsize, f_frsize, f_blocks, f_bfree, f_bavail, ...
        FRSIZE_OFFSET = 8
        BAVAIL_OFFSET = 32
        STRUCT_BYTES = 256

        def available_bytes(directory)
          fn = statvfs_function
          return nil unless fn

          buf = "\0".b * STRUCT_BYTES
          return nil unless fn.call(directory, buf).zero?

          frsize = buf.byteslice(FRSIZE_OFFSET, 8).unpack1("Q")
          bavail = buf.byteslice(BAVAIL_OFFSET, 8).unpack1("Q")
          frsize * bavail
        rescue StandardError, ScriptError
          nil
        end

        def statvfs_function
          return @statvfs if defined?(@statvfs)

          @statvfs = load_statvfs
        end

        def load_statvfs
          return nil unless RUBY_PLATFORM.include?("linux")

          require "fiddle"
          return nil unless Fiddle::SIZEOF_LONG == 8

          Fiddle::Function.new(Fiddle::Handle::DEFAULT["statvfs"],
                               [Fiddle::TYPE_VOIDP, Fiddle::TYPE_VOIDP], Fiddle::TYPE_INT)
        rescue StandardError, ScriptError
          nil
        end
      end
    end
  end
end
