# The socket: default name supervisor.ipc in collectd's BaseDir, SocketMode
# and SocketGroup applied; operators get a status report through it.
require "etc"
require_relative "helper"

class SocketTest < PluginTest::Case
  def test_socket
    group = begin
      Etc.getgrnam("daemon").name
    rescue ArgumentError
      Etc.getgrgid(Process.gid).name
    end
    site.socket = File.join(site.dir, "supervisor.ipc")
    start("  SocketMode \"0600\"\n  SocketGroup \"#{group}\"", socket: false)
    st = File.stat(site.socket)
    assert_equal "600", format("%o", st.mode & 0o7777), "socket mode"
    assert_equal group, Etc.getgrgid(st.gid).name, "socket group"
    assert site.log_has?("listening on #{site.dir}/supervisor.ipc (mode 0600)"), "socket path not logged"

    w = site.test_worker("sock")
    site.wait_welcomed(w)
    status = site.control("status")
    assert status.ok?, status.to_s
    assert_match(/^version=[0-9].* workers=1$/, status.out)

    # the socket file goes away with collectd
    site.stop_collectd
    refute File.exist?(site.socket), "socket file left behind"
  end
end
