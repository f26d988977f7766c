# frozen_string_literal: true

# Central metrics with collectd's stock plugins (docs/fleet.md): two "hosts",
# each a collectd with memdiag and the network plugin sending to 127.0.0.1,
# and a central collectd that listens (network), writes csv and exposes
# write_prometheus. Both hosts run a worker named "web"; Hostname tells them
# apart. The central collectd holds both hosts' memory values, receives their
# capture notifications, and a real Prometheus server scraping it answers a
# query for both workers.
require_relative "../harness/harness"
require "net/http"
require "uri"

module Fleet
  PROMETHEUS = E2E.setting("MEMDIAG_FLEET_PROMETHEUS")
  TOP = File.expand_path("../../..", __dir__)
  RULES = File.join(TOP, "conf/prometheus/memdiag-rules.yml")
  DASHBOARD = File.join(TOP, "conf/grafana/memdiag.json")
  HOSTS = %w[fleet-a fleet-b].freeze

  def self.free_tcp_port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }

  def self.free_udp_port
    s = UDPSocket.new
    s.bind("127.0.0.1", 0)
    s.addr[1]
  ensure
    s&.close
  end

  # A process the test spawned (@pid) and its temp directory (@dir).
  module Daemon
    def alive?
      Process.waitpid(@pid, Process::WNOHANG).nil?
    rescue Errno::ECHILD
      false
    end

    def stop
      Process.kill("TERM", @pid)
      Process.waitpid(@pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    ensure
      FileUtils.rm_rf(@dir) unless ENV["MEMDIAG_E2E_KEEP"]
    end
  end

  # A memdiag host: the e2e site with its own Hostname and a network Server.
  class Host < E2E::Site
    def initialize(hostname, port)
      @hostname = hostname
      @port = port
      super(hostname)
    end

    def captures = File.join(dir, "captures")

    def config(extra, **opts)
      super.sub(/^Hostname "#{E2E::HOSTNAME}"$/, %(Hostname "#{@hostname}")) + <<~CONF
        LoadPlugin network
        <Plugin network>
          Server "127.0.0.1" "#{@port}"
        </Plugin>
      CONF
    end

    private

    def install_plugins
      super
      FileUtils.cp(File.join(E2E::STOCK_PLUGINS, "network.so"), File.join(dir, "plugins"))
    end
  end

  # The central collectd: network Listen, csv, write_prometheus, logfile
  # (which logs the notifications network receives).
  class Central
    include Daemon

    attr_reader :dir, :csv_dir, :metrics_port

    def initialize(port)
      @dir = Dir.mktmpdir("memdiag-fleet-central-")
      @csv_dir = File.join(@dir, "csv")
      @metrics_port = Fleet.free_tcp_port
      plugins = File.join(@dir, "plugins")
      FileUtils.mkdir_p(plugins)
      %w[network csv logfile write_prometheus].each do |p|
        FileUtils.cp(File.join(E2E::STOCK_PLUGINS, "#{p}.so"), plugins)
      end
      File.write(conf, E2E.collectd_conf("central", @dir, log_file: log_path, csv_dir: @csv_dir) + <<~CONF)
        LoadPlugin network
        <Plugin network>
          Listen "127.0.0.1" "#{port}"
        </Plugin>
        LoadPlugin write_prometheus
        <Plugin write_prometheus>
          Port "#{@metrics_port}"
        </Plugin>
      CONF
      @pid = Process.spawn(E2E::COLLECTD, "-f", "-C", conf, out: [File.join(@dir, "collectd.out"), "w"],
                                                            err: %i[child out])
    end

    def conf = File.join(@dir, "collectd.conf")
    def log_path = File.join(@dir, "collectd.log")
    def log = File.exist?(log_path) ? File.read(log_path) : ""

    def metrics
      Net::HTTP.get(URI("http://127.0.0.1:#{@metrics_port}/metrics"))
    rescue SystemCallError, IOError, Net::HTTPBadResponse
      ""
    end
  end

  # Debian's prometheus on 127.0.0.1 with a temp config and storage, and
  # the alert rules docs/fleet.md shows.
  class Prometheus
    include Daemon

    attr_reader :port

    def initialize(target_port)
      @dir = Dir.mktmpdir("memdiag-fleet-prometheus-")
      @port = Fleet.free_tcp_port
      File.write(File.join(@dir, "prometheus.yml"), <<~YAML)
        global:
          scrape_interval: 1s
          evaluation_interval: 1s
        rule_files: ["#{RULES}"]
        scrape_configs:
          - job_name: collectd
            honor_labels: true
            static_configs:
              - targets: ["127.0.0.1:#{target_port}"]
      YAML
      @pid = Process.spawn(PROMETHEUS, "--config.file=#{File.join(@dir, 'prometheus.yml')}",
                           "--storage.tsdb.path=#{File.join(@dir, 'data')}",
                           "--web.listen-address=127.0.0.1:#{@port}",
                           out: [File.join(@dir, "prometheus.log"), "w"], err: %i[child out])
    end

    def log = File.read(File.join(@dir, "prometheus.log"))

    # The result vector of an instant query, or nil while Prometheus is not up.
    def query(expr)
      uri = URI("http://127.0.0.1:#{@port}/api/v1/query")
      uri.query = URI.encode_www_form(query: expr)
      body = JSON.parse(Net::HTTP.get(uri))
      body["status"] == "success" ? body["data"]["result"] : nil
    rescue SystemCallError, IOError, JSON::ParserError, Net::HTTPBadResponse
      nil
    end

    def rule_groups
      body = JSON.parse(Net::HTTP.get(URI("http://127.0.0.1:#{@port}/api/v1/rules")))
      body["status"] == "success" ? body["data"]["groups"] : nil
    rescue SystemCallError, IOError, JSON::ParserError, Net::HTTPBadResponse
      nil
    end
  end
end

class FleetTest < Minitest::Test
  def setup
    port = Fleet.free_udp_port
    @central = Fleet::Central.new(port)
    @hosts = Fleet::HOSTS.map { |h| Fleet::Host.new(h, port) }
    @hosts.each do |h|
      FileUtils.mkdir_p(h.captures, mode: 0o711)
      h.start_collectd(<<~KEYS)
        CaptureDirectory "#{h.captures}"
        Plan "dump"
        DumpMode "fork"
      KEYS
    end
    @prometheus = Fleet::Prometheus.new(@central.metrics_port)
  end

  def teardown
    @hosts&.each(&:cleanup)
    @central&.stop
    @prometheus&.stop
  end

  def test_central_collectd_and_prometheus_see_both_hosts_workers
    workers = @hosts.to_h do |h|
      w = h.start_worker("web", env: { "MEMDIAG_DUMP_DIRECTORY" => h.captures })
      [h, h.wait_registered(w).merge("worker" => w)]
    end

    # Values: central's csv plugin writes them under each sender's Hostname.
    @hosts.each do |h|
      files = nil
      h.wait_until("central holds #{h.socket} host's web memory-rss in csv") do
        raise "central collectd exited:\n#{@central.log}" unless @central.alive?

        files = Dir[File.join(@central.csv_dir, hostname(h), "memdiag-web", "memory-rss-*")]
        files.any? { |f| File.readlines(f).size >= 3 }
      end
      rss = File.readlines(files.first).last.split(",")[1].to_f
      w = workers[h]["worker"]
      assert_in_delta w.vm_rss_bytes, rss, w.vm_rss_bytes * 0.5, "#{hostname(h)}'s value is its worker's RSS"
    end

    # Capture notifications travel with the network plugin too.
    @hosts.each do |h|
      r = h.ctl("capture", "connection_id=#{workers[h]['connection_id']}")
      assert r.ok?, r.to_s
    end
    @hosts.each do |h|
      h.wait_until("central logs #{hostname(h)}'s capture notifications") do
        notes = @central.log.lines.grep(/Notification: severity = OKAY, host = #{hostname(h)}, plugin = memdiag,/)
        notes.grep(/message = capture of worker web \(pid #{workers[h]['pid']}\)/).any?
      end
    end

    # write_prometheus: one series per host for the same worker name.
    metrics = nil
    @hosts.first.wait_until("write_prometheus exposes both hosts") do
      metrics = @central.metrics
      Fleet::HOSTS.all? { |n| rss_line(metrics, n) }
    end
    Fleet::HOSTS.each { |n| assert_match(/\s\d+(\.\d+)?(e\+\d+)?\s+\d+$/, rss_line(metrics, n)) }

    # A real Prometheus scraping central answers for both hosts' workers.
    result = nil
    @hosts.first.wait_until("Prometheus answers for both hosts") do
      raise "prometheus exited:\n#{@prometheus.log}" unless @prometheus.alive?

      result = @prometheus.query('collectd_memdiag_memory{type="rss",memdiag="web"}')
      result && Fleet::HOSTS.all? { |n| result.any? { |s| s["metric"]["instance"] == n } }
    end
    result.each do |s|
      assert_equal "collectd", s["metric"]["job"]
      assert_operator s["value"][1].to_f, :>, 1024 * 1024, "a Ruby worker's RSS is more than 1 MiB"
    end

    # The alert rules load and evaluate.
    groups = nil
    @hosts.first.wait_until("Prometheus evaluated the memdiag rules") do
      groups = @prometheus.rule_groups
      rules = groups&.find { |g| g["name"] == "memdiag" }&.fetch("rules")
      rules && rules.size == 2 && rules.all? { |r| r["lastEvaluation"] && !r["lastEvaluation"].start_with?("0001") }
    end
    groups.find { |g| g["name"] == "memdiag" }["rules"].each do |r|
      assert_equal "ok", r["health"], "#{r['name']}: #{r['lastError']}"
    end

    # Every query of the Grafana dashboard runs, and its RSS panel shows both hosts.
    dashboard = JSON.parse(File.read(Fleet::DASHBOARD))
    exprs = dashboard["panels"].flat_map { |p| p["targets"].map { |t| [p["title"], t["expr"]] } }
    refute_empty exprs
    host_var = dashboard["templating"]["list"].find { |v| v["name"] == "host" }
    exprs << ["host variable", host_var["definition"][/\Alabel_values\((.*), instance\)\z/, 1]]
    exprs.each do |title, expr|
      r = @prometheus.query(expr.gsub("$host", ".*"))
      refute_nil r, "dashboard panel #{title}: #{expr} is not a valid query"
    end
    rss = @prometheus.query(exprs.first[1].gsub("$host", ".*"))
    assert_equal Fleet::HOSTS, rss.map { |s| s["metric"]["instance"] }.sort, "panel #{exprs.first[0]}"
  end

  private

  def hostname(site) = Fleet::HOSTS[@hosts.index(site)]

  def rss_line(metrics, host)
    metrics.lines.find do |l|
      l.start_with?("collectd_memdiag_memory{") && l.include?(%(instance="#{host}")) &&
        l.include?(%(memdiag="web")) && l.include?(%(type="rss"))
    end
  end
end
