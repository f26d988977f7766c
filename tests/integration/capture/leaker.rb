# A Ruby worker that leaks on purpose, for the capture-plan tests. Loaded with
# `ruby -r memdiag/hook/auto` (or loading the hook itself after its ballast,
# LEAK_HOOK_AFTER_BALLAST=1); the hook reads MEMDIAG_* from the environment.
#
# Every 0.1 s it keeps another CaptureLeak holding an Array of Integers: the
# memory is real (the pages are written) while each object stays one short
# line in a heap dump, so dumps stay small and quick.
#
# On SIGTERM it writes the wall-clock time to the marker file (argument 1),
# so a test can compare when the worker was signalled with when its dump
# finished, then exits.
$stdout.sync = true
marker = ARGV.fetch(0)
rate = Integer(ENV.fetch("LEAK_BYTES_PER_SECOND", (8 * 1024 * 1024).to_s))
cap = Integer(ENV.fetch("LEAK_MAX_BYTES", (300 * 1024 * 1024).to_s))

class CaptureLeak
  def initialize(payload)
    @payload = payload
  end
end

Signal.trap("TERM") do
  now = Process.clock_gettime(Process::CLOCK_REALTIME)
  File.write("#{marker}.tmp", format("%.6f\n", now))
  File.rename("#{marker}.tmp", marker)
  exit!(0)
end

# Ballast: many small live objects make every heap dump take a while (about
# a second per million here), long enough for memory to move during it.
$ballast = Array.new(Integer(ENV.fetch("LEAK_BALLAST_OBJECTS", "0"))) { |i| CaptureLeak.new(i) }
puts "ballast: #{$ballast.size} objects"
# Started without `-r memdiag/hook/auto` (start_leaker's hook_after_ballast):
# the worker registers only now, holding its whole ballast.
require "memdiag/hook/auto" if ENV["LEAK_HOOK_AFTER_BALLAST"] == "1"

$leak = []
per_tick = rate / 10 / 8 # Integers of 8 bytes per 0.1 s
leaked = 0
loop do
  if leaked < cap
    $leak << CaptureLeak.new(Array.new(per_tick, 1))
    leaked += per_tick * 8
  end
  sleep 0.1
end
