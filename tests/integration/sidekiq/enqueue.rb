# Pushes COUNT SidekiqLeakyJob jobs into the Redis named by REDIS_URL, as a
# client process of the application would (the job class is not loaded here).
#   ruby -r sidekiq enqueue.rb COUNT
count = Integer(ARGV.fetch(0))
start = Integer(ARGV.fetch(1, "0"))
Sidekiq::Client.push_bulk("class" => "SidekiqLeakyJob", "args" => Array.new(count) { |i| [start + i] })
puts count
