# frozen_string_literal: true

# The worker tests/bench/analyze dumps: MEMDIAG_BENCH_MB of live objects
# allocated before tracing starts (as with a capture plan's trace_start),
# then a leak of Bench::CartLine objects from LEAK_LINE, three heap dumps a
# leak step apart, with garbage made and collected between them.
#   ruby analyze_worker.rb DIR
require "objspace"

module Bench
  class CartLine
    def initialize(i)
      @sku = "sku-#{i % 100}"
      @qty = i
      @price = i * 3
      @added_at = i
      @note = nil
    end
  end
end

def rss_mb = File.read("/proc/self/status")[/VmRSS:\s+(\d+)/, 1].to_i / 1024.0

def leak(into, n)
  n.times { |i| into << Bench::CartLine.new(i) } # LEAK_LINE
end

def garbage = 200_000.times { |i| "garbage-#{i}" }

dir = ARGV.fetch(0)
want_mb = Integer(ENV.fetch("MEMDIAG_BENCH_MB", "300"))
step = [want_mb * 700, 2000].max
base = []
base << Array.new(10_000) { |i| { id: i, name: "user-#{i}-#{'x' * (i % 64)}", tags: ["t#{i % 7}", "plain"] } } while rss_mb < want_mb
GC.start
ObjectSpace.trace_object_allocations_start
kept = []
3.times do |n|
  GC.start
  File.open(File.join(dir, "heap-#{n + 1}.json"), "w") { |f| ObjectSpace.dump_all(output: f) }
  warn format("analyze_worker: heap-%d.json %.0f MiB RSS %.0f MiB", n + 1,
              File.size(File.join(dir, "heap-#{n + 1}.json")) / 1_048_576.0, rss_mb)
  next if n == 2

  leak(kept, step)
  garbage
end
puts base.size, kept.size
