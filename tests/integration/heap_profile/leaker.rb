# A worker that leaks from one known line (the `SESSIONS <<` line below) while
# it churns short-lived objects, as a busy application does: every 10 ms it
# keeps 20 SampledLeak objects (each holding a 4 KiB string) and drops 400
# hashes. It also allocates many more SampledLeak objects of the same class
# on another line (the `Array.new(DECOYS)` line) and keeps each for DECOY_SECONDS
# only: at any moment more of them are alive than leaked ones allocated since
# the capture began, yet none lives from one heap dump to the next (the plan
# waits at least CaptureInterval, 1 s, between them). A join of the samples
# to the retained set by class and age would name the decoy line; by
# address, the leaking one. Loaded with `ruby -r memdiag/hook/auto`;
# allocation sampling is the hook's default. LEAK_MAX_BYTES bounds the leak.
# On SIGTERM it writes the time to the marker file (argument 1) and exits.
$stdout.sync = true
marker = ARGV.fetch(0)
cap = Integer(ENV.fetch("LEAK_MAX_BYTES", (300 * 1024 * 1024).to_s))
DECOYS = Integer(ENV.fetch("DECOYS", "600"))
DECOY_SECONDS = Float(ENV.fetch("DECOY_SECONDS", "0.5"))

class SampledLeak
  def initialize(payload)
    @payload = payload
  end
end

Signal.trap("TERM") do
  File.write(marker, format("%.6f\n", Process.clock_gettime(Process::CLOCK_REALTIME)))
  exit!(0)
end

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

SESSIONS = []
RECENT = [] # [time, [SampledLeak...]], oldest first
leaked = 0
loop do
  # The decoys come first: a sample armed while the worker slept falls on
  # the first allocations after it.
  t = now
  RECENT << [t, Array.new(DECOYS) { SampledLeak.new(nil) }]
  RECENT.shift while RECENT.first[0] < t - DECOY_SECONDS
  if leaked < cap
    20.times { SESSIONS << SampledLeak.new("s" * 4096) }
    leaked += 20 * 4200
  end
  400.times { |i| { id: i, name: "request-#{i}" } }
  sleep 0.01
end
