# A local user without a certificate cannot keep the workers out (issue
# 11): each uid may hold at most 64 connections that are in their TLS
# handshake or waiting for their hello. User nobody opens 100 connections
# that never start TLS, on a plugin that allows 80 connections in all; a
# worker still registers, one line says nobody is refused, and one more
# line, once nobody lets go, how many were refused.
require_relative "helper"

class UnauthFloodTest < PluginTest::Case
  NOBODY = 65_534

  def test_one_uid_cannot_fill_max_connections
    start(<<~KEYS)
      MaxConnections 80
      HandshakeTimeout 60
      SocketMode "0666"
    KEYS
    File.chmod(0o711, site.dir)
    ready = File.join(site.dir, "flood.ready")
    flood = Process.spawn("setpriv", "--reuid=#{NOBODY}", "--regid=#{NOBODY}", "--clear-groups", "--",
                          E2E::RUBY, "-rsocket", "-e", <<~RUBY, site.socket, out: [ready, "w"])
                            socks = Array.new(100) { UNIXSocket.new(ARGV[0]) }
                            $stdout.puts socks.size
                            $stdout.flush
                            sleep
                          RUBY
    site.adopt(flood)
    wait("nobody's 100 connections are made") { File.read(ready).strip == "100" }

    # Queued behind all 100: before the limit, MaxConnections turned it away.
    legit = site.test_worker("legit")
    site.wait_welcomed(legit)
    site.wait_log("refusing connections from uid #{NOBODY}: 64 of its connections are still in " \
                  "their TLS handshake or waiting for their hello (at most 64 per uid)")
    assert_equal 1, site.log.lines.grep(/refusing connections from uid #{NOBODY}/).size,
                 "one line per episode"

    Process.kill("KILL", flood)
    Process.wait(flood)
    site.wait_log("accepting connections from uid #{NOBODY} again (36 refused while it had 64 " \
                  "unauthenticated)")
    assert_collectd_alive
  end
end
