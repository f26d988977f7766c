# Out of file descriptors: accept() fails with EMFILE while the connection
# stays queued. The loop must not spin on the readable listening socket nor
# log every attempt, must keep serving the workers it has, and must accept
# the waiting worker once descriptors are free again.
require_relative "helper"

class FdLimitTest < PluginTest::Case
  def prlimit(nofile) = site.run!("prlimit", "--pid", site.collectd_pid.to_s, "--nofile=#{nofile}")
  def heartbeat_lines(w) = w.lines.grep(/^heartbeat/).size

  def test_fd_limit
    # logfile opens its file for every line, which fails without
    # descriptors: log to collectd's stderr instead.
    start(log_to: "stderr")
    first = site.test_worker("first", "--show-heartbeats")
    site.wait_welcomed(first)
    # A soft limit below the descriptors already open: every new one fails
    # with EMFILE, the ones open keep working.
    prlimit("3:1024")
    second = site.test_worker("second")
    failed = /accept on .* failed/
    site.wait_log(failed)
    # A spinning loop writes thousands of lines a second; give it time to show.
    sleep 2
    n = site.log.lines.grep(failed).size
    puts "#{n} accept failure line(s) logged"
    assert_equal 1, n, "lines about the failed accept: the loop spins on the listening socket"
    before = heartbeat_lines(first)
    wait("first gets heartbeat answers while accept fails") { heartbeat_lines(first) > before }
    prlimit("1024:1024")
    site.wait_welcomed(second)
    assert site.log_has?(/accepting connections on .* again/), "the recovery was not logged"
    assert_collectd_alive
  end
end
