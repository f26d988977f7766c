# frozen_string_literal: true

# Hooks any Ruby process without a code change:
#
#   RUBYOPT="-I/path/to/memdiag/hook/lib -rmemdiag/hook/auto" puma -w 2
#
# Settings come from MEMDIAG_SOCKET, MEMDIAG_CERT, MEMDIAG_KEY, MEMDIAG_CA,
# MEMDIAG_NAME and MEMDIAG_DUMP_DIRECTORY. Without them the process runs
# unhooked after one warning.
begin
  require "memdiag/hook"
  Memdiag::Hook.start_from_env
rescue LoadError => e
  $stderr.write("memdiag hook[#{Process.pid}]: cannot load: #{e.message}; running without the hook\n")
end
