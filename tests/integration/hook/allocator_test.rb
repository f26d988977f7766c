# frozen_string_literal: true

# The GC profile carries the allocator's own statistics, read inside the
# worker by the hook's C extension: glibc's malloc_info always, and
# jemalloc's statistics when jemalloc is the worker's malloc (here preloaded,
# as LD_PRELOAD or a jemalloc-linked Ruby does it in production), found
# under its plain names (Debian's libjemalloc2) or under the je_ prefix a
# jemalloc built with --with-jemalloc-prefix=je_ has (a stand-in library,
# je_prefixed.c), its version from mallctl "version" on the section's first
# line. A worker whose growth is outside the Ruby heap is diagnosed from
# these figures.
require_relative "helper"

class HookAllocatorTest < Minitest::Test
  include HookTest::Fixture

  WORKER = <<~RUBY
    $stdout.sync = true
    sleep 0.05 until Memdiag::Hook.connection_id
    $held = Array.new(2_000) { "x" * 4096 }
    puts "ready"
    sleep
  RUBY

  JEMALLOC = Dir.glob(["/usr/lib/*/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2"]).first
  JE_PREFIXED = ENV.fetch("MEMDIAG_TEST_JE_PREFIXED")

  # The jemalloc section: [its first line's version, entry point, the report].
  def jemalloc_section(data)
    m = data.match(/^== jemalloc stats\njemalloc (\S+) through (\S+)\n(.*)/m)
    assert m, data[-600..]
    m.captures
  end

  def profile(extra)
    server = start_server
    start_worker(WORKER, name: "alloc-worker", env: hook_env(name: "alloc-worker", extra: extra))
      .wait_out(/^ready$/)
    conn = server.wait_for("hello") { true }["conn"]
    assert_equal "ok", server.request(conn, "garbage_profile_start")["status"]
    reply = server.request(conn, "garbage_profile_stop")
    assert_equal "ok", reply["status"], reply["error"]
    reply["data"]
  end

  def test_glibc_worker_has_malloc_info_and_no_jemalloc_section
    data = profile({})
    assert_match(/== malloc_info \(glibc\)\n<malloc version="\d+">/, data)
    refute_match(/== jemalloc/, data)
  end

  def test_jemalloc_worker_has_jemalloc_statistics
    skip "libjemalloc2 is not installed" unless JEMALLOC
    # The sanitizer builds preload their runtime (into every process under
    # ASan, into the workers under TSan), which owns malloc.
    runtime = [ENV.fetch("LD_PRELOAD", ""), TestPreload::RUNTIME].reject(&:empty?)
    skip "jemalloc cannot replace malloc beside #{runtime.join(' ')}" unless runtime.empty?

    data = profile({ "LD_PRELOAD" => JEMALLOC })
    version, entry, section = jemalloc_section(data)
    assert_equal "malloc_stats_print", entry
    # mallctl("version") answers what the report's own Version line says
    assert_match(/\A\d+\.\d+\.\d+-/, version)
    assert_includes section, %(Version: "#{version}"), section[0, 400]
    assert_match(/^___ Begin jemalloc statistics ___$/, section)
    allocated = section[/^Allocated: (\d+), active: \d+, metadata: \d+.*resident: (\d+)/, 1]
    assert allocated, section[0, 400]
    assert_operator Integer(allocated), :>=, 2_000 * 4096, "the worker's 8 MiB of strings are jemalloc's"
    assert_match(/^--- End jemalloc statistics ---$/, section)
  end

  def test_jemalloc_under_the_je_prefix_is_found_with_its_version
    # It replaces no malloc: beside a sanitizer's runtime too.
    preload = [ENV.fetch("LD_PRELOAD", ""), TestPreload::RUNTIME, JE_PREFIXED].reject(&:empty?).uniq.join(" ")
    data = profile({ "LD_PRELOAD" => preload })
    assert_match(/== malloc_info \(glibc\)\n<malloc version="\d+">/, data, "glibc's malloc is still there")
    version, entry, section = jemalloc_section(data)
    assert_equal "je_malloc_stats_print", entry
    assert_equal "5.3.0-memdiag-test-je-prefix", version
    assert_match(/\A___ Begin jemalloc statistics ___\nVersion: "#{Regexp.escape(version)}"\n/, section)
    assert_includes section, %(Options given: "ax"\n), "merged statistics, without the per-arena tables"
    assert_match(/^Allocated: 4096, active: 8192, .*\n--- End jemalloc statistics ---$/, section)
  end
end
