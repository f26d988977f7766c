# The one collectd harness of the integration tests: a private collectd
# running the built memdiag plugin, real hooked Ruby workers, the C test
# worker (md-test-worker), memdiagctl, and real certificates, all in one
# temp directory that is removed when the test ends.
#
# ctest passes the locations of the built pieces in MEMDIAG_E2E_* variables
# (see tests/integration/CMakeLists.txt; MEMDIAG_E2E_TEST_WORKER only for the
# tests of tests/integration/plugin/ and capture_stream_busy). Set MEMDIAG_E2E_KEEP=1 to keep the temp
# directory (collectd.log, csv files, worker output) for a post-mortem.
require "minitest/autorun"
require "fileutils"
require "json"
require "open3"
require "rbconfig"
require "socket"
require "tmpdir"
require_relative "preload"

module E2E
  HERE = File.expand_path(__dir__)

  def self.setting(name)
    v = ENV[name]
    abort "#{name} is not set: run this test through ctest" if v.nil? || v.empty?
    v
  end

  CTL = setting("MEMDIAG_E2E_CTL")
  PLUGIN = setting("MEMDIAG_E2E_PLUGIN")
  HOOK_LIB = setting("MEMDIAG_E2E_HOOK_LIB")
  CERTS_TOOL = setting("MEMDIAG_E2E_CERTS_TOOL")
  COLLECTD = setting("MEMDIAG_E2E_COLLECTD")
  STOCK_PLUGINS = setting("MEMDIAG_E2E_COLLECTD_PLUGIN_DIR")
  TYPES_DB = setting("MEMDIAG_E2E_TYPES_DB")
  RUBY = ENV["MEMDIAG_E2E_RUBY"] || RbConfig.ruby

  # md-test-worker (tests/integration/plugin/test_worker.c): read on first
  # use, as only the plugin's tests are given it.
  def self.test_worker_path = setting("MEMDIAG_E2E_TEST_WORKER")

  HOSTNAME = "e2e"

  # Generous: machines running ctest -j2 are noisy. Nothing asserts a time;
  # these only bound how long a broken build hangs.
  WAIT = Integer(ENV.fetch("MEMDIAG_E2E_WAIT", "60"))

  Result = Struct.new(:out, :err, :status) do
    def ok? = status.success?
    def code = status.exitstatus
    def to_s = "exit #{code}\n--- stdout\n#{out}\n--- stderr\n#{err}"
  end

  # The head of every collectd.conf the tests write: collectd's own keys
  # (plugins in dir/plugins), logfile into log_file and csv into csv_dir.
  def self.collectd_conf(hostname, dir, log_file:, csv_dir:)
    <<~CONF
      Hostname "#{hostname}"
      FQDNLookup false
      Interval 1
      BaseDir "#{dir}"
      PluginDir "#{dir}/plugins"
      TypesDB "#{TYPES_DB}"
      LoadPlugin logfile
      <Plugin logfile>
        LogLevel info
        File "#{log_file}"
        Timestamp true
        PrintSeverity true
      </Plugin>
      LoadPlugin csv
      <Plugin csv>
        DataDir "#{csv_dir}"
        StoreRates false
      </Plugin>
    CONF
  end

  # A hooked Ruby worker process.
  class Worker
    attr_reader :name, :pid, :tick_file, :dump_dir, :out_path, :err_path

    # err_path: where stderr goes when it is kept apart from stdout.
    def initialize(name:, pid:, tick_file:, dump_dir:, out_path:, err_path: nil)
      @name = name
      @pid = pid
      @tick_file = tick_file
      @dump_dir = dump_dir
      @out_path = out_path
      @err_path = err_path || out_path
    end

    def ticks = File.exist?(@tick_file) ? File.read(@tick_file).to_i : 0

    def alive?
      Process.waitpid(@pid, Process::WNOHANG).nil?
    rescue Errno::ECHILD
      false
    end

    def vm_rss_bytes
      line = File.read("/proc/#{@pid}/status")[/^VmRSS:\s+(\d+) kB/, 1]
      Integer(line) * 1024
    end

    def output = File.exist?(@out_path) ? File.read(@out_path) : ""
    def errors = File.exist?(@err_path) ? File.read(@err_path) : ""

    def stop
      return unless alive?

      Process.kill("TERM", @pid)
      deadline = Time.now + 10
      sleep 0.05 while alive? && Time.now < deadline
      Process.kill("KILL", @pid) if alive?
      Process.waitpid(@pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
  end

  # An md-test-worker process (`worker` mode): its stdout is in out_path,
  # one line per event ("welcome connection_id=N pid=P", "heartbeat back
  # sequence=S sent=N rtt_us=U", "goodbye status=...", "closed by the plugin").
  class TestWorker < Worker
    def initialize(name:, pid:, out_path:)
      super(name: name, pid: pid, tick_file: "", dump_dir: "", out_path: out_path)
    end

    def lines = output.lines.map(&:chomp)
    def welcomed? = lines.any? { |l| l.start_with?("welcome connection_id=") }

    # The connection ID of the first welcome, or nil.
    def conn_id
      l = lines.find { |x| x.start_with?("welcome connection_id=") }
      l && Integer(l[/connection_id=(\d+)/, 1])
    end

    def heartbeats = lines.grep(/^heartbeat back /)

    # Waits for the exit (the process may have been started with
    # --exit-after) and returns its status.
    def wait
      _, st = Process.waitpid2(@pid)
      st
    rescue Errno::ECHILD
      nil
    end
  end

  # One private collectd with the memdiag plugin, its certificates, its
  # workers; everything under one temp directory.
  class Site
    attr_reader :dir, :certs, :socket, :log_path, :csv_dir, :workers

    def initialize(label)
      @dir = Dir.mktmpdir("memdiag-e2e-#{label}-")
      @certs = File.join(@dir, "certs")
      @socket = File.join(@dir, "supervisor.ipc")
      @log_path = File.join(@dir, "collectd.log")
      @csv_dir = File.join(@dir, "csv")
      @workers = []
      @others = [] # other processes a test started through the site
      @collectd = nil
      run!(CERTS_TOOL, @certs)
      install_plugins
    end

    def cert(name) = File.join(@certs, "#{name}.pem")
    def key(name) = File.join(@certs, "#{name}.key")
    def ca = File.join(@certs, "ca.pem")

    # Another key pair signed by this site's CA (conf/memdiag-certs --add).
    def add_cert(name, role)
      run!(CERTS_TOOL, @certs, "--add", name, role)
    end

    # A complete CA with its own pairs that this site does not trust.
    def foreign_certs
      @foreign_certs ||= File.join(@dir, "foreign-certs").tap { |d| run!(CERTS_TOOL, d) }
    end

    # ---------------------------------------------------------------- collectd

    # The collectd.conf the site runs: extra goes inside <Plugin memdiag>.
    # log_to: "stderr" sends collectd's log to collectd.out (see log_path).
    # socket: false leaves the Socket key out (the plugin's default name).
    def config(extra, log_to: nil, socket: true)
      E2E.collectd_conf(HOSTNAME, @dir, log_file: log_to || @log_path, csv_dir: @csv_dir) + <<~CONF
        LoadPlugin memdiag
        <Plugin memdiag>
        #{socket ? %(  Socket "#{@socket}") : ''}
          TLSCertificate "#{cert('plugin')}"
          TLSKey "#{key('plugin')}"
          TLSCA "#{ca}"
        #{extra}
        </Plugin>
      CONF
    end

    # Starts `collectd -f` on config(extra_config, log_to:, socket:), passed
    # through the block when one is given (to drop or change a line).
    # wait: :answers (memdiagctl gets an answer), :socket (the socket
    # exists) or nil (do not wait: a configuration the plugin refuses).
    def start_collectd(extra_config = "", wait: :answers, log_to: nil, socket: true)
      raise "collectd already running" if collectd_alive?

      conf = File.join(@dir, "collectd.conf")
      # Only options given are passed on: subclasses may override config(extra).
      opts = {}
      opts[:log_to] = log_to if log_to
      opts[:socket] = false unless socket
      text = config(extra_config, **opts)
      text = yield(text) if block_given?
      File.write(conf, text)
      @log_path = File.join(@dir, "collectd.out") if log_to == "stderr"
      @collectd = Process.spawn(TestPreload.env, *collectd_prefix, COLLECTD, "-f", "-C", conf,
                                out: [File.join(@dir, "collectd.out"), "a"],
                                err: [:child, :out])
      return unless wait

      wait_until("collectd's memdiag plugin answers on #{@socket}") do
        raise "collectd exited at start:\n#{log}" unless collectd_alive?

        File.socket?(@socket) && (wait == :socket || ctl("workers").ok?)
      end
    end

    # Words run before collectd, which they exec (e.g. a wrapper that joins a
    # cgroup, or `unshare --cgroup`): collectd keeps their PID. Default none.
    attr_writer :collectd_prefix

    def collectd_prefix = @collectd_prefix || []

    # Where the plugin listens: set it before start_collectd(socket: false)
    # to the default name the plugin will use.
    attr_writer :socket

    def collectd_pid = @collectd

    def collectd_alive?
      return false unless @collectd

      Process.waitpid(@collectd, Process::WNOHANG).nil?
    rescue Errno::ECHILD
      false
    end

    def stop_collectd
      return unless @collectd

      if collectd_alive?
        Process.kill("TERM", @collectd)
        deadline = Time.now + WAIT
        sleep 0.1 while collectd_alive? && Time.now < deadline
        if collectd_alive?
          Process.kill("KILL", @collectd)
          Process.waitpid(@collectd)
        end
      end
      @collectd = nil
    rescue Errno::ESRCH, Errno::ECHILD
      @collectd = nil
    end

    def log = File.exist?(@log_path) ? File.read(@log_path) : ""

    # The plugin's own log lines ("memdiag plugin: ...").
    def plugin_log = log.lines.grep(/memdiag plugin:/).join

    def log_has?(pattern) = pattern.is_a?(Regexp) ? log.match?(pattern) : log.include?(pattern)

    # Waits until collectd's log has pattern (a String or a Regexp).
    def wait_log(pattern, timeout: WAIT)
      wait_until("collectd's log has #{pattern.inspect}", timeout: timeout) { log_has?(pattern) }
    end

    # ---------------------------------------------------------------- csv

    # The csv plugin's file for plugin instance pi and type ti (e.g.
    # "memdiag-web", "memory-rss"), or nil before the first value.
    def csv_file(pi, ti) = Dir.glob(File.join(@csv_dir, HOSTNAME, pi, "#{ti}-*")).min

    # The rows written so far (after the header), each [time, value].
    def csv_rows(pi, ti)
      f = csv_file(pi, ti)
      return [] unless f

      File.readlines(f).drop(1).map { |l| l.chomp.split(",").then { |t, v| [Float(t), Float(v)] } }
    end

    def csv_last(pi, ti) = csv_rows(pi, ti).last&.last

    def wait_csv(pi, ti, timeout: WAIT)
      wait_until("csv values for #{pi}/#{ti}", timeout: timeout) { !csv_rows(pi, ti).empty? }
    end

    # ------------------------------------------------------------------ workers

    # code: run this Ruby code (-e) instead of worker.rb (no tick file).
    # stderr: keep stderr apart (Worker#errors) rather than in the output.
    def start_worker(name, env: {}, code: nil, stderr: false)
      dump_dir = File.join(@dir, "dumps", name)
      FileUtils.mkdir_p(dump_dir, mode: 0o700)
      tick = File.join(@dir, "#{name}.tick")
      out = File.join(@dir, "#{name}.out")
      hook_env = TestPreload.env.merge(
        "MEMDIAG_SOCKET" => @socket,
        "MEMDIAG_CERT" => cert("worker"),
        "MEMDIAG_KEY" => key("worker"),
        "MEMDIAG_CA" => ca,
        "MEMDIAG_NAME" => name,
        "MEMDIAG_DUMP_DIRECTORY" => dump_dir
      ).merge(env)
      err = stderr ? File.join(@dir, "#{name}.err") : nil
      script = code ? ["-e", code] : [File.join(HERE, "worker.rb"), tick]
      pid = Process.spawn(hook_env, RUBY, "-I", HOOK_LIB, "-r", "memdiag/hook/auto", *script,
                          out: [out, "w"], err: err ? [err, "w"] : [:child, :out])
      w = Worker.new(name: name, pid: pid, tick_file: tick, dump_dir: dump_dir, out_path: out,
                     err_path: err)
      @workers << w
      w
    end

    # The worker's entry in `memdiagctl workers --json` once it registered.
    def wait_registered(worker)
      entry = nil
      wait_until("worker #{worker.name} (pid #{worker.pid}) registers") do
        raise "worker #{worker.name} exited:\n#{worker.output}" unless worker.alive?

        entry = workers_json.find { |w| w["pid"] == worker.pid }
      end
      entry
    end

    # ----------------------------------------------------------- md-test-worker

    # An md-test-worker in worker mode, with a worker certificate unless
    # cert:/key: name others; flags are its switches (--allocate-mb 64 ...).
    # label: the output file's name when two workers share a name.
    def test_worker(name, *flags, cert: cert("worker"), key: key("worker"), ca: self.ca, label: name)
      out = File.join(@dir, "#{label}.out")
      pid = Process.spawn(E2E.test_worker_path, "worker", "--socket", @socket, "--cert", cert,
                          "--key", key, "--ca", ca, "--name", name, *flags.map(&:to_s),
                          out: [out, "w"], err: [:child, :out])
      w = TestWorker.new(name: name, pid: pid, out_path: out)
      @workers << w
      w
    end

    def wait_welcomed(worker)
      wait_until("#{worker.name} is welcomed:\n#{worker.output}") { worker.welcomed? }
      worker.conn_id
    end

    # md-test-worker control VERB ARGS with the operator certificate:
    # "status=NAME", then a line per worker or the reply's fields.
    def control(*args)
      out, err, st = Open3.capture3(E2E.test_worker_path, "control", "--socket", @socket,
                                    "--cert", cert("operator"), "--key", key("operator"),
                                    "--ca", ca, *args.map(&:to_s))
      Result.new(out, err, st)
    end

    # md-test-worker garbage: bytes that are not TLS; ok once the plugin closed.
    def garbage
      out, err, st = Open3.capture3(E2E.test_worker_path, "garbage", "--socket", @socket)
      Result.new(out, err, st)
    end

    # A process the site stops (TERM) at cleanup.
    def adopt(pid) = @others << pid

    # ------------------------------------------------------------- memdiagctl

    def operator_env
      { "MEMDIAG_SOCKET" => @socket, "MEMDIAG_CERT" => cert("operator"),
        "MEMDIAG_KEY" => key("operator"), "MEMDIAG_CA" => ca }
    end

    def ctl(*args, env: {})
      out, err, st = Open3.capture3(operator_env.merge(env), CTL, *args.map(&:to_s))
      Result.new(out, err, st)
    end

    def workers_json
      r = ctl("workers", "--json")
      raise "memdiagctl workers --json failed: #{r}" unless r.ok?

      JSON.parse(r.out)
    end

    # ------------------------------------------------------------------ helpers

    def wait_until(what, timeout: WAIT)
      deadline = Time.now + timeout
      loop do
        v = yield
        return v if v
        raise "timed out after #{timeout} s waiting until #{what}\n--- collectd.log\n#{log}" if Time.now > deadline

        sleep 0.2
      end
    end

    def run!(*cmd)
      out, st = Open3.capture2e(*cmd)
      raise "#{cmd.join(' ')} failed:\n#{out}" unless st.success?

      out
    end

    def cleanup
      @workers.each(&:stop)
      @others.each do |pid|
        Process.kill("TERM", pid)
        Process.waitpid(pid)
      rescue Errno::ESRCH, Errno::ECHILD
        nil
      end
      stop_collectd
      if ENV["MEMDIAG_E2E_KEEP"]
        warn "memdiag e2e: kept #{@dir}"
      else
        FileUtils.rm_rf(@dir)
      end
    end

    private

    # The plugin is copied, not linked, as collectd would load an installed one.
    def install_plugins
      dir = File.join(@dir, "plugins")
      FileUtils.mkdir_p(dir)
      FileUtils.cp(PLUGIN, File.join(dir, "memdiag.so"))
      %w[csv logfile].each { |p| FileUtils.cp(File.join(STOCK_PLUGINS, "#{p}.so"), dir) }
    end
  end

  # One site per test file, started on first use, torn down when minitest
  # finishes (or the process is interrupted).
  module SharedSite
    def self.get(label, workers: [], config: "")
      @sites ||= {}
      @failed ||= {}
      raise @failed[label] if @failed[label]
      return @sites[label] if @sites[label]

      @cleanup_registered ||= begin
        Minitest.after_run { E2E::SharedSite.cleanup }
        # Minitest skips after_run when the process exits with an exception.
        at_exit { E2E::SharedSite.cleanup }
        %w[INT TERM].each { |sig| trap(sig) { E2E::SharedSite.cleanup; exit!(1) } }
        true
      end
      # Registered before anything starts, so a failed start is cleaned up too.
      site = @sites[label] = Site.new(label)
      begin
        site.start_collectd(config)
        # One after the other, so connection IDs follow the list's order.
        workers.each { |n| site.wait_registered(site.start_worker(n)) }
      rescue StandardError => e
        @failed[label] = e # every test of the file reports the same cause
        raise
      end
      site
    end

    def self.cleanup
      (@sites || {}).each_value(&:cleanup)
      @sites = {}
    end
  end

  # Heap dumps are newline-delimited JSON: one object per line. text: the
  # file's content when it is not the file as stored (a decompressed dump).
  def self.parse_ndjson(path, text: nil)
    (text ? text.each_line : File.foreach(path)).map.with_index(1) do |line, n|
      JSON.parse(line)
    rescue JSON::ParserError => e
      raise "#{path}:#{n} is not JSON: #{e.message}"
    end
  end
end
