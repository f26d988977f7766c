# A bad key or value is an error in collectd's log naming the key, and the
# plugin refuses to start (no socket) rather than guess.
require_relative "helper"

class BadConfigTest < PluginTest::Case
  CASES = [
    ['  Sokcet "/tmp/x"', 'unknown configuration key "Sokcet"'],
    ["  Memory rss heap", 'Memory "heap" is not one of rss, pss, private, swap'],
    ['  SocketMode "0999"', 'SocketMode "0999" is not an octal permission'],
    ["  MaxConnections 0", 'MaxConnections "0" is not a whole number'],
    ['  Interval "soon"', 'Interval "soon" is not a duration'],
    ['  MaxFrameSize "12X"', 'MaxFrameSize "12X" is not a size'],
    ['  MemoryLimit "lots"', "MemoryLimit"],
    ['  SocketGroup "no-such-group-here"', 'SocketGroup "no-such-group-here": no such group'],
    ["  RestartAfterCapture true", "RestartAfterCapture true needs MemoryLimit"],
  ].freeze

  def fresh_start(lines, &edit)
    site.stop_collectd
    FileUtils.rm_f([site.log_path, site.socket])
    start(lines, wait: nil, &edit)
  end

  def test_bad_config
    CASES.each do |lines, expected|
      fresh_start(lines)
      site.wait_log(expected)
      site.wait_log(/memdiag plugin: .*(not start|rejected)/)
      sleep 1
      refute File.socket?(site.socket), "the plugin started despite: #{lines}"
      puts "refused: #{lines.squeeze(' ')} -> #{expected}"
    end

    # Missing TLS material is refused at start, naming the key or the file.
    fresh_start("") { |conf| conf.sub(/^\s*TLSKey .*\n/, "") }
    site.wait_log("TLSKey is required")
    fresh_start("") { |conf| conf.sub(site.key("plugin"), File.join(site.dir, "nope.key")) }
    site.wait_log("TLS setup failed (TLSCertificate")
  end
end
