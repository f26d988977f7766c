# The Sidekiq application of sidekiq_test.rb, loaded with `sidekiq -r ./app.rb`.
# Its one job leaks on purpose: every run keeps PER_JOB payload objects in a
# global, the way a per-process cache that is never pruned does. Each finished
# job bumps a counter in Redis so the test can see that Sidekiq keeps working.
require "sidekiq"

# Debian pairs Sidekiq 6.4 with redis-rb 4.8, which warns on every BRPOP
# Sidekiq 6.4 makes (every 2 s per processor); the warnings say nothing here.
Redis.silence_deprecations = true

class SidekiqLeakyPayload
  def initialize(job, index)
    @job = job
    @index = index
    @body = "order #{job}/#{index} " * 8
  end
end

$sidekiq_leak = [] # rubocop:disable Style/GlobalVars -- the leak under test

class SidekiqLeakyJob
  include Sidekiq::Worker

  PER_JOB = Integer(ENV.fetch("SIDEKIQ_TEST_PER_JOB", "200"))
  COUNTER = "memdiag-test:processed"

  def perform(number)
    PER_JOB.times { |i| $sidekiq_leak << SidekiqLeakyPayload.new(number, i) } # rubocop:disable Style/GlobalVars
    Sidekiq.redis { |r| r.incr(COUNTER) }
  end
end
