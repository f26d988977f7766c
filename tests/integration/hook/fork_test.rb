# frozen_string_literal: true

# Preforking: a hooked process forks; the child registers as a worker of its
# own (own connection, own TLS session, name and ppid telling whose it is)
# while the parent's connection goes on untouched.
require_relative "helper"

class HookForkTest < Minitest::Test
  include HookTest::Fixture

  WORKER = <<~RUBY
    $stdout.sync = true
    sleep 0.05 until Memdiag::Hook.connection_id
    children = Array.new(2) do
      fork do
        sleep 0.05 until Memdiag::Hook.connection_id
        puts "child pid=\#{Process.pid} name=\#{Memdiag::Hook.name} connection_id=\#{Memdiag::Hook.connection_id}"
        if ARGV.include?("grandchild") # each child forks one
          fork { sleep 0.05 until Memdiag::Hook.connection_id; puts "grandchild name=\#{Memdiag::Hook.name}"; sleep }
        end
        sleep
      end
    end
    puts "parent pid=\#{Process.pid} connection_id=\#{Memdiag::Hook.connection_id} children=\#{children.join(",")}"
    # short-lived children that exit at once must not disturb anyone
    5.times { Process.wait(fork { exit 0 }) }
    puts "churned"
    sleep
  RUBY

  def test_parent_and_children_register_as_separate_workers
    server = start_server
    worker = start_worker(WORKER, name: "forker", args: ["grandchild"])
    parent = Integer(worker.wait_out(/parent pid=(\d+)/)[1])
    worker.wait_out(/churned/)

    parent_hello = server.wait_for("hello") { |e| e["pid"] == parent }
    assert_equal "forker", parent_hello["name"]
    kids = %w[forker/worker-1 forker/worker-2].map do |name|
      server.wait_for("hello") { |e| e["name"] == name }
    end
    kids.each do |kid|
      assert_equal parent, kid["ppid"], "hello carries the parent's pid"
      assert_equal kid["pid"], kid["peer_pid"]
      refute_equal parent, kid["pid"]
      refute_equal parent_hello["conn"], kid["conn"]
      worker.wait_out(/child pid=#{kid["pid"]} name=#{kid["name"]} connection_id=#{kid["conn"]}/)
    end
    grandchild = server.wait_for("hello") { |e| e["name"].start_with?("forker/worker-") && e["name"].count("/") == 2 }
    assert_includes [kids[0]["pid"], kids[1]["pid"]], grandchild["ppid"]

    # every connection answers for its own process; the parent's TLS session
    # survived all the forks
    [parent_hello, *kids, grandchild].each do |hello|
      reply = server.request(hello["conn"], "ping", payload: "p#{hello["pid"]}")
      assert_equal "ok", reply["status"]
      assert_equal "pid #{hello["pid"]}", reply["note"]
    end
    # only the parent, two children, their two grandchildren and the five
    # short-lived children ever said hello, each once at most
    hellos = server.all("hello").map { |e| [e["pid"], e["name"]] }
    assert_equal hellos.uniq, hellos, "no process said hello twice: nobody lost its connection"
    assert_operator hellos.size, :<=, 10, hellos.inspect
  end

  def test_a_daemonized_process_registers_again_under_its_name
    server = start_server
    alive = File.join(@dir, "daemon.alive")
    File.write(alive, "")
    worker = start_worker(<<~RUBY, name: "daemon")
      $stdout.sync = true
      sleep 0.05 until Memdiag::Hook.connection_id
      Process.daemon(true, true)
      puts "daemon pid=\#{Process.pid}"
      sleep 0.05 until Memdiag::Hook.connection_id || !File.exist?(#{alive.inspect})
      puts "daemon connection_id=\#{Memdiag::Hook.connection_id}"
      # setsid took it out of the test's process group: it ends itself when
      # the test's directory goes, whatever happened to the test
      sleep 0.1 while File.exist?(#{alive.inspect})
    RUBY
    daemon = Integer(worker.wait_out(/daemon pid=(\d+)/)[1])
    begin
      before = server.wait_for("hello") { |e| e["pid"] == worker.pid }
      after = server.wait_for("hello") { |e| e["pid"] == daemon }
      assert_equal "daemon", before["name"]
      assert_equal "daemon", after["name"], "a daemon is the same application, not a worker of it"
      worker.wait_out(/daemon connection_id=#{after["conn"]}/)
      assert_equal "ok", server.request(after["conn"], "ping", payload: "d")["status"]
    ensure
      File.delete(alive)
      begin
        Process.kill(:KILL, daemon)
      rescue Errno::ESRCH
        nil
      end
    end
  end
end
