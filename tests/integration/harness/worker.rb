# A small Ruby worker for the end-to-end tests, hooked by
# `ruby -r memdiag/hook/auto` (the hook reads MEMDIAG_* from the environment).
# It holds objects of a class the tests look for, allocates from a known
# line while it runs (for allocation traces), makes garbage (for the GC
# profile), names a thread (for thread dumps), runs an Async task with a
# known annotation (for scheduler dumps), and writes a tick counter so a
# test can see that it keeps serving while another worker is diagnosed.
$stdout.sync = true
tick_file = ARGV.fetch(0)

class E2EMarker
  def initialize(i)
    @i = i
  end
end

class E2ETraced; end

$markers = Array.new(2000) { |i| E2EMarker.new(i) }
$traced = []

Thread.new do
  Thread.current.name = "e2e-ticker"
  n = 0
  loop do
    n += 1
    File.write("#{tick_file}.tmp", n.to_s)
    File.rename("#{tick_file}.tmp", tick_file)
    sleep 0.1
  end
end

Thread.new do
  Thread.current.name = "e2e-allocator"
  i = 0
  loop do
    i += 1
    $traced << E2ETraced.new # e2e-traced-allocation
    $traced.shift if $traced.size > 500
    200.times { "garbage" * 10 }
    GC.start if (i % 20).zero?
    sleep 0.05
  end
end

require "async"
Async do |task|
  task.async do |t|
    t.annotate("e2e-async-task")
    loop { sleep 1 }
  end
end
