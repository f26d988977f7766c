# frozen_string_literal: true

# A real Unicorn (Debian's `unicorn`), hooked only through RUBYOPT: master
# and workers register separately; a worker Unicorn replaces comes back as a
# new worker with a new connection, and one added with TTIN registers too.
require_relative "helper"

class HookUnicornTest < Minitest::Test
  include HookTest::Fixture

  UNICORN = ENV.fetch("MEMDIAG_UNICORN", "unicorn")

  def test_unicorn_master_and_workers_register_and_replacements_reconnect
    server = start_server(heartbeat_ms: 1000)
    http = File.join(@dir, "unicorn.sock")
    File.write(File.join(@dir, "unicorn.conf.rb"), "worker_processes 2\nlisten #{http.inspect}\n")
    File.write(File.join(@dir, "config.ru"), <<~RUBY)
      run ->(env) { [200, { "content-type" => "text/plain" }, ["pid=\#{Process.pid}\\n"]] }
    RUBY
    unicorn = HookTest::Worker.new(@dir, name: "unicorn", env: hook_env(name: "api"), chdir: @dir,
                                         command: [UNICORN, "-c", "unicorn.conf.rb", "config.ru"])
    @workers << unicorn

    master = server.wait_for("hello") { |e| e["name"] == "api" }
    assert_equal unicorn.pid, master["pid"]
    workers = %w[api/worker-1 api/worker-2].map { |n| server.wait_for("hello") { |e| e["name"] == n } }
    workers.each { |w| assert_equal master["pid"], w["ppid"] }
    unicorn.wait_err(/worker=1 ready/)
    assert_match(/pid=\d+/, http_get(http))

    # Unicorn replaces a worker that dies: the replacement is a new worker
    Process.kill(:KILL, workers[0]["pid"])
    server.wait_for("closed") { |e| e["conn"] == workers[0]["conn"] }
    replacement = server.wait_for("hello") { |e| e["name"] == "api/worker-3" }
    assert_equal master["pid"], replacement["ppid"]
    refute_equal workers[0]["conn"], replacement["conn"]

    Process.kill(:TTIN, master["pid"])
    added = server.wait_for("hello") { |e| e["name"] == "api/worker-4" }
    assert_equal master["pid"], added["ppid"]

    [master, workers[1], replacement, added].each do |w|
      assert_equal "pid #{w["pid"]}", server.request(w["conn"], "ping", payload: "u")["note"]
    end
  end
end
