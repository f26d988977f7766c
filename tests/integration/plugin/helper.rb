# Shared by the plugin's integration tests: each test has its own site (the
# harness's private collectd, certificates, plugin copy, csv and logfile) and
# talks to the plugin through md-test-worker, hooked Ruby workers and
# memdiagctl. Every plugin block gets HeartbeatInterval 1 so that silence is
# noticed within seconds.
require_relative "../harness/harness"

module PluginTest
  MiB = 1024 * 1024

  class Case < Minitest::Test
    attr_reader :site

    def setup
      @site = E2E::Site.new("plugin-#{name}")
    end

    def teardown
      return unless @site

      unless passed?
        puts "---- collectd log (last 60 lines)"
        puts @site.log.lines.last(60).join
      end
      @site.cleanup
    end

    # Starts collectd; extra goes inside <Plugin memdiag> after the TLS keys.
    def start(extra = "", **opts, &edit)
      site.start_collectd("  HeartbeatInterval 1\n#{extra}", **opts, &edit)
    end

    def wait(what, timeout: E2E::WAIT, &cond) = site.wait_until(what, timeout: timeout, &cond)

    def assert_collectd_alive = assert(site.collectd_alive?, "collectd died")

    def vm_rss_bytes(pid) = Integer(File.read("/proc/#{pid}/status")[/^VmRSS:\s+(\d+) kB/, 1]) * 1024

    # Waits until the csv file of pi/ti has more rows than it had.
    def wait_more_rows(pi, ti)
      n = site.csv_rows(pi, ti).size
      wait("new values for #{pi}/#{ti}") { site.csv_rows(pi, ti).size > n }
    end
  end
end
