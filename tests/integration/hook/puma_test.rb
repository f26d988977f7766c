# frozen_string_literal: true

# A real Puma in cluster mode, hooked only through RUBYOPT: the master and
# each forked worker register as separate connections, Puma keeps serving,
# and a heap dump of one worker is readable by heapy.
require_relative "helper"

class HookPumaTest < Minitest::Test
  include HookTest::Fixture

  HEAPY = ENV.fetch("MEMDIAG_HEAPY", "heapy")

  def test_puma_cluster_master_and_workers_register
    server = start_server(heartbeat_ms: 1000)
    rackup = File.join(@dir, "config.ru")
    File.write(rackup, <<~RUBY)
      class Order
        def initialize(id) = @id = id
      end
      ORDERS = Array.new(50) { |i| Order.new(i) }
      run ->(env) { [200, { "content-type" => "text/plain" }, ["orders=\#{ORDERS.size}\\n"]] }
    RUBY
    http = File.join(@dir, "puma.sock")
    puma = HookTest::Worker.new(@dir, name: "puma", env: hook_env,
                                      command: [PUMA, "-w", "2", "-t", "1:2", "-b", "unix://#{http}", rackup])
    @workers << puma

    master = server.wait_for("hello") { |e| e["name"] == "puma" }
    assert_equal puma.pid, master["pid"]
    workers = %w[puma/worker-1 puma/worker-2].map { |n| server.wait_for("hello") { |e| e["name"] == n } }
    workers.each do |w|
      assert_equal master["pid"], w["ppid"], "#{w["name"]} was forked by the master"
      assert_equal w["pid"], w["peer_pid"]
    end
    assert_equal 3, [master, *workers].map { |e| e["conn"] }.uniq.size
    assert_equal 3, [master, *workers].map { |e| e["pid"] }.uniq.size
    puma.wait_out(/Worker 1 \(PID: \d+\) booted/)

    assert_match(/orders=50/, http_get(http, "/"))

    # Under TSan a fork inside a Puma worker (itself forked from a threaded
    # master) waited for good: the worker dumps inline there (preload.rb).
    mode = TestPreload.tsan? ? "inline" : "fork"
    dump = server.request(workers[0]["conn"], "memory_dump", path: "puma-worker.json", mode: mode)
    assert_equal "ok", dump["status"], dump["error"]
    File.foreach(dump["path"]) { |line| JSON.parse(line) }
    out = IO.popen([HEAPY, "read", dump["path"]], err: %i[child out], &:read)
    assert $?.success?, "heapy read failed:\n#{out}"
    assert_match(/Generation:/, out)

    assert_match(/orders=50/, http_get(http, "/"), "the worker still serves after its dump")
    assert_equal 3, server.count("hello"), "the dump child did not register"
  end
end
