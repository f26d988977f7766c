# A Ruby worker that leaks in one of the shapes applications leak in, for
# the analysis tests (shapes_test.rb). Loaded with `ruby -r
# memdiag/hook/auto`; SHAPE picks the leak, LEAK_BYTES_PER_SECOND its rate.
# Each leaking line carries a "SITE:<shape>" comment the test looks for.
#
# On SIGTERM it exits at once (the marker file gets the time, as leaker.rb).
$stdout.sync = true
marker = ARGV.fetch(0)
shape = ENV.fetch("SHAPE")
rate = Integer(ENV.fetch("LEAK_BYTES_PER_SECOND", (4 * 1024 * 1024).to_s))
cap = Integer(ENV.fetch("LEAK_MAX_BYTES", (200 * 1024 * 1024).to_s))
per_tick = rate / 10 # bytes each 0.1 s

Signal.trap("TERM") do
  File.write("#{marker}.tmp", format("%.6f\n", Process.clock_gettime(Process::CLOCK_REALTIME)))
  File.rename("#{marker}.tmp", marker)
  exit!(0)
end

# A price cache: Struct values in a module's Hash.
module PriceBook
  QUOTES = {}
end
Quote = Struct.new(:sku, :cents, :history)

# A registry of sessions, each owning a big Array, in a class's ivar.
class SessionRegistry
  @sessions = []
  class << self
    attr_reader :sessions
  end
end

class UserSession
  def initialize(id, words)
    @id = id
    @frames = Array.new(words, id) # SITE:registry_payload
  end
end

# Callbacks: procs that captured a big local.
module Callbacks
  LIST = []
  def self.make(n, words)
    window = Array.new(words, n)
    -> { window.size } # SITE:procs
  end
end

# An audit buffer in a thread-local.
class AuditEvent
  def initialize(text)
    @text = text
  end
end

# Native memory: Fiddle's malloc, written so that the pages are resident.
if shape == "native"
  require "fiddle"
  $blocks = []
  FILL = ("\x01" * per_tick).freeze
end

$rows = []
Thread.current[:audit_buffer] = []
words = per_tick / 8
leaked = 0
n = 0
puts "shape #{shape}: #{per_tick} bytes a tick"
loop do
  if leaked < cap
    n += 1
    case shape
    when "struct_cache"
      PriceBook::QUOTES["sku-#{n}"] = Quote.new("sku-#{n}", n, Array.new(words, n)) # SITE:struct_cache
    when "registry"
      SessionRegistry.sessions << UserSession.new(n, words) # SITE:registry
    when "procs"
      Callbacks::LIST << Callbacks.make(n, words)
    when "thread_local"
      Thread.current[:audit_buffer] << AuditEvent.new("event #{n} " + ("z" * per_tick)) # SITE:thread_local
    when "strings"
      $rows << ("row #{n};" * (per_tick / 8)) # SITE:strings
    when "native"
      ptr = Fiddle.malloc(per_tick)
      Fiddle::Pointer.new(ptr)[0, per_tick] = FILL
      $blocks << ptr # an Integer: nothing on the Ruby heap
    end
    leaked += per_tick
  end
  # Short-lived garbage, as requests make.
  3000.times { |i| "request #{n}-#{i}".upcase }
  sleep 0.1
end
