# frozen_string_literal: true

# Builds memdiag/hook_native from the gem alone: the binding (hook_native.c)
# and the allocation sampler (sampler.c, sample_table.c, pprof_out.c),
# the hook's C core and the memdiag wire library, vendored into vendor/ by
# `make gem` (worker-hook/ruby/build-gem) together with the protobuf-c code
# generated from memdiag.proto and profile.proto. Needs a C compiler, ruby-dev,
# libprotobuf-c-dev, libssl-dev and zlib1g-dev.
require "mkmf"

VENDOR = File.join(__dir__, "vendor")
SOURCE_DIRS = %w[hook/src proto/src proto/gen].map { |d| File.join(VENDOR, d) }
INCLUDE_DIRS = %w[hook/include proto/include proto/gen].map { |d| File.join(VENDOR, d) }

missing = (SOURCE_DIRS + INCLUDE_DIRS).uniq.reject { |d| File.directory?(d) }
unless missing.empty?
  abort "memdiag-hook: #{missing.join(', ')} missing: this gem was not built with " \
        "`make gem` (which vendors the C core, the wire library and the generated protobuf code)"
end

# One object per source file in the build directory: two sources with the
# same name would overwrite each other's object.
vendored = SOURCE_DIRS.flat_map { |d| Dir[File.join(d, "*.c")] }.sort
# The binding and the allocation sampler live beside this file.
own = Dir[File.join(__dir__, "*.c")].map { |f| File.basename(f) }.sort
names = own + vendored.map { |f| File.basename(f) }
dups = names.group_by(&:itself).select { |_, v| v.size > 1 }.keys
abort "memdiag-hook: vendored sources share a file name: #{dups.join(', ')}" unless dups.empty?

def need(ok, what, package)
  abort "memdiag-hook: #{what} not found: install #{package}" unless ok
end

need(pkg_config("libprotobuf-c") || have_library("protobuf-c", "protobuf_c_version"),
     "libprotobuf-c", "libprotobuf-c-dev")
need(have_header("protobuf-c/protobuf-c.h"), "protobuf-c/protobuf-c.h", "libprotobuf-c-dev")
need(pkg_config("openssl") || (have_library("crypto", "ERR_get_error") && have_library("ssl", "SSL_new")),
     "OpenSSL", "libssl-dev")
need(have_header("openssl/ssl.h"), "openssl/ssl.h", "libssl-dev")
need(have_library("pthread", "pthread_create"), "pthread", "libc6-dev")
# the allocation sampler gzips its heap profiles and draws its gaps with log()
need(pkg_config("zlib") || have_library("z", "deflate"), "zlib", "zlib1g-dev")
need(have_header("zlib.h"), "zlib.h", "zlib1g-dev")
need(have_library("m", "log"), "libm", "libc6-dev")

# Libraries the vendored code may start to use; each is required only when
# a vendored file includes its header, so the gem follows the C sources.
OPTIONAL = { "zstd.h" => %w[libzstd libzstd-dev], "jansson.h" => %w[jansson libjansson-dev] }.freeze
included = vendored.concat(Dir[File.join(VENDOR, "**", "*.h")]).flat_map do |f|
  File.read(f).scan(/^\s*#\s*include\s*<([^>]+)>/).flatten
end.uniq
OPTIONAL.each do |header, (pc, package)|
  next unless included.include?(header)

  need(pkg_config(pc), pc, package)
  need(have_header(header), header, package)
end

$srcs = names
SOURCE_DIRS.each { |d| $VPATH << d }
INCLUDE_DIRS.uniq.each { |d| $INCFLAGS << " -I#{d}" }
# As the CMake build: C11 with GNU extensions of libc; only Init_hook_native
# exported, so the wire and hook symbols cannot clash with another extension.
$CFLAGS << " -std=c11 -D_GNU_SOURCE -fvisibility=hidden"
# A library missing from the list above fails the install, not the require.
$LDFLAGS << " -Wl,-z,defs" if RbConfig::CONFIG["ENABLE_SHARED"] == "yes"

create_makefile("memdiag/hook_native")
