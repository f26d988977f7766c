# A worker that leaks from one known line (the `SESSIONS <<` line below) while
# it churns short-lived hashes and strings, as a busy application does: every
# 10 ms it keeps 40 SampledLeak objects (each holding a 2 KiB string) and
# drops 400 hashes. Loaded with `ruby -r memdiag/hook/auto`; allocation
# sampling is the hook's default. LEAK_MAX_BYTES bounds it. On SIGTERM it
# writes the time to the marker file (argument 1) and exits.
$stdout.sync = true
marker = ARGV.fetch(0)
cap = Integer(ENV.fetch("LEAK_MAX_BYTES", (300 * 1024 * 1024).to_s))

class SampledLeak
  def initialize(payload)
    @payload = payload
  end
end

Signal.trap("TERM") do
  File.write(marker, format("%.6f\n", Process.clock_gettime(Process::CLOCK_REALTIME)))
  exit!(0)
end

SESSIONS = []
leaked = 0
loop do
  if leaked < cap
    40.times { SESSIONS << SampledLeak.new("s" * 2048) }
    leaked += 40 * 2100
  end
  400.times { |i| { id: i, name: "request-#{i}" } }
  sleep 0.01
end
