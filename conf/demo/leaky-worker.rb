# The demo's worker: a Ruby process that leaks on purpose. Started with
# `ruby -r memdiag/hook/auto`, so the hook comes from MEMDIAG_* alone.
#
# It serves nothing; it keeps "request contexts" in a global list that is
# never pruned, the shape of many real leaks (a cache or registry without a
# bound). Each tick adds DemoRequestContext objects holding arrays of
# integers: the pages are written, so RSS grows for real.
$stdout.sync = true
rate = Integer(ENV.fetch("DEMO_LEAK_BYTES_PER_SECOND", (4 * 1024 * 1024).to_s))
cap = Integer(ENV.fetch("DEMO_LEAK_MAX_BYTES", (900 * 1024 * 1024).to_s))
settle = Float(ENV.fetch("DEMO_SETTLE_SECONDS", "8"))

class DemoRequestContext
  def initialize(payload)
    @payload = payload
    @created_at = Time.now
  end
end

RETAINED = []
Thread.new do
  Thread.current.name = "demo-leak"
  sleep settle # a short stable start, as a worker after boot
  per_tick = rate / 10 / 8
  leaked = 0
  loop do
    if leaked < cap
      RETAINED << DemoRequestContext.new(Array.new(per_tick, 7))
      leaked += per_tick * 8
    end
    sleep 0.1
  end
end
Signal.trap("TERM") { exit!(0) }
sleep
