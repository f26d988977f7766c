# A Ruby worker for the container tests. It is started as `ruby -I HOOK_LIB
# worker.rb MARKER` (in a cgroup the test made, or as a runc container's
# process) and loads the hook itself, after its ballast:
#
#   WORKER_BALLAST_BYTES   memory taken before the hook registers, so the
#                          worker's first sample already holds it and the
#                          detector sees a flat worker (default 0)
#   LEAK_BYTES_PER_SECOND  then leaked every 0.1 s in CaptureLeak objects,
#   LEAK_MAX_BYTES         up to this many bytes (0: no leak)
#
# Both kinds of memory are Arrays of Integers: the pages are written (the
# cgroup is charged for them) while each Array is one short line of a heap
# dump, so dumps stay small and quick whatever the worker holds.
#
# Every 0.1 s it writes how many bytes it has leaked so far into MARKER
# (argument 1; a file in a directory the test can read). On SIGTERM it exits.
$stdout.sync = true
marker = ARGV.fetch(0)
ballast = Integer(ENV.fetch("WORKER_BALLAST_BYTES", "0"))
rate = Integer(ENV.fetch("LEAK_BYTES_PER_SECOND", "0"))
cap = Integer(ENV.fetch("LEAK_MAX_BYTES", "0"))

class CaptureLeak
  def initialize(payload)
    @payload = payload
  end
end

$ballast = Array.new(ballast / 8, 1)
require "memdiag/hook/auto"
puts "ready pid=#{Process.pid} ballast=#{ballast}"

Signal.trap("TERM") { exit!(0) }

$leak = []
per_tick = rate / 10 / 8 # Integers of 8 bytes per 0.1 s
leaked = 0
loop do
  if per_tick.positive? && leaked < cap
    $leak << CaptureLeak.new(Array.new(per_tick, 1))
    leaked += per_tick * 8
    File.write("#{marker}.tmp", "#{leaked}\n")
    File.rename("#{marker}.tmp", marker)
  end
  sleep 0.1
end
