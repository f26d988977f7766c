# frozen_string_literal: true

# Shared pieces of the hook's integration tests: certificates made by
# conf/memdiag-certs in a temp dir, the C test server (test_server.c) as the
# plugin's side, and Ruby worker processes hooked the way users hook them.
require "minitest/autorun"
require "json"
require "tmpdir"
require "fileutils"
require "timeout"
require "rbconfig"
require "socket"
require_relative "../harness/preload"

module HookTest
  SERVER = ENV.fetch("MEMDIAG_TEST_SERVER")
  LIB = ENV.fetch("MEMDIAG_HOOK_LIB")
  CERTS_TOOL = ENV.fetch("MEMDIAG_CERTS_TOOL")
  RUBY = RbConfig.ruby
  # Long enough for a loaded CI machine; every wait ends as soon as the
  # awaited line shows up.
  WAIT = Integer(ENV.fetch("MEMDIAG_TEST_WAIT", "60"))

  # ctest does not build: a hook library copied before the last change to
  # its sources would make these tests fail in confusing ways.
  def self.check_build_is_current
    source = ENV["MEMDIAG_HOOK_SOURCE_LIB"]
    return unless source

    stale = Dir.glob("**/*", base: source).reject { |f| File.directory?(File.join(source, f)) }.reject do |f|
      built = File.join(LIB, f)
      File.exist?(built) && File.binread(built) == File.binread(File.join(source, f))
    end
    return if stale.empty?

    abort "the built hook in #{LIB} is older than its sources (#{stale.first(3).join(", ")}): " \
          "run cmake --build before ctest"
  end
  check_build_is_current

  # The plugin's side: mdh-test-server, its events read as JSON lines.
  class Server
    attr_reader :events, :socket

    def initialize(dir, socket:, cert: "plugin", ca: "ca.pem", certs: File.join(dir, "certs"),
                   heartbeat_ms: 200, first_id: 1, on_hello: [], legacy: false, allocation_sampling: nil)
      @socket = socket
      @events = []
      @mutex = Mutex.new
      @cond = ConditionVariable.new
      @stderr = File.join(dir, "server-#{first_id}-#{Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)}.err")
      args = [SERVER, "--socket", socket, "--cert", File.join(certs, "#{cert}.pem"),
              "--key", File.join(certs, "#{cert}.key"), "--ca", File.join(certs, ca),
              "--heartbeat-ms", heartbeat_ms.to_s, "--first-id", first_id.to_s]
      on_hello.each { |spec| args += ["--on-hello", spec] }
      args << "--legacy" if legacy
      args += ["--allocation-sampling", allocation_sampling.to_s] if allocation_sampling
      @io = IO.popen(args, "r+", err: [@stderr, "w"])
      @reader = Thread.new { read_events }
      wait_for("listening") { true }
    end

    def pid
      @io.pid
    end

    def command(line)
      @io.puts(line)
      @io.flush
    end

    # Send a request and return its reply event.
    def request(conn, op, **params)
      args = params.map { |k, v| "#{k}=#{v}" }.join(" ")
      before = count("sent")
      command("request #{conn} #{op} #{args}".strip)
      sent = wait_for("sent", after: before) { |e| e["conn"] == conn }
      wait_for("reply") { |e| e["conn"] == conn && e["request_id"] == sent["request_id"] }
    end

    def count(kind)
      @mutex.synchronize { @events.count { |e| e["event"] == kind } }
    end

    def all(kind)
      @mutex.synchronize { @events.select { |e| e["event"] == kind } }
    end

    # The first event of kind (after the first `after` of them) for which the
    # block is true; fails the test after WAIT seconds.
    def wait_for(kind, after: 0, timeout: WAIT)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      @mutex.synchronize do
        loop do
          found = @events.select { |e| e["event"] == kind }.drop(after).find { |e| yield(e) }
          return found if found

          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          raise Minitest::Assertion, "no #{kind} event within #{timeout} s; server saw:\n#{tail}" if left <= 0

          @cond.wait(@mutex, [left, 1].min)
        end
      end
    end

    def stop
      return unless @io

      begin
        command("quit")
      rescue IOError, Errno::EPIPE
        nil
      end
      begin
        Timeout.timeout(10) { Process.wait(@io.pid) }
      rescue Timeout::Error, Errno::ECHILD
        Process.kill(:KILL, @io.pid) rescue nil
        Process.wait(@io.pid) rescue nil
      end
      @reader.join(5)
      @io.close unless @io.closed?
      @io = nil
    end

    def stderr
      File.exist?(@stderr) ? File.read(@stderr) : ""
    end

    private

    def tail
      @events.last(20).map { |e| JSON.generate(e)[0, 300] }.join("\n") + "\nstderr: #{stderr}"
    end

    def read_events
      @io.each_line do |line|
        event = JSON.parse(line)
        @mutex.synchronize do
          @events << event
          @cond.broadcast
        end
      end
    rescue IOError
      nil
    end
  end

  # A Ruby process with the hook, running `script`; its stdout and stderr
  # go to files so the test can read what the worker printed.
  class Worker
    attr_reader :pid, :out_path, :err_path

    # script: Ruby source run as NAME.rb; or command: any argv (e.g. puma).
    def initialize(dir, script = nil, env: {}, name: "worker", args: [], command: nil, stdin: File::NULL,
                   chdir: Dir.pwd)
      @out_path = File.join(dir, "#{name}.out")
      @err_path = File.join(dir, "#{name}.err")
      cmd = command
      unless cmd
        path = File.join(dir, "#{name}.rb")
        File.write(path, script)
        cmd = [RUBY, path, *args]
      end
      # Every worker here is hooked Ruby or the C core (linked with the
      # runtime itself, so the preload changes nothing for it).
      @pid = Process.spawn(TestPreload.env.merge(env), *cmd, in: stdin, out: [@out_path, "w"],
                                                                   err: [@err_path, "w"], pgroup: true, chdir: chdir)
    end

    def out
      File.read(@out_path)
    end

    def err
      File.read(@err_path)
    end

    # Wait until the worker's stdout has a line matching re.
    def wait_out(re, timeout: WAIT)
      wait_file(@out_path, re, timeout)
    end

    def wait_err(re, timeout: WAIT)
      wait_file(@err_path, re, timeout)
    end

    def alive?
      Process.waitpid(@pid, Process::WNOHANG).nil?
    rescue Errno::ECHILD
      false
    end

    def wait(timeout: WAIT)
      Timeout.timeout(timeout) { Process.wait2(@pid)[1] }
    end

    def stop
      Process.kill(:TERM, -@pid)
      begin
        Timeout.timeout(15) { Process.wait(@pid) }
      rescue Timeout::Error
        Process.kill(:KILL, -@pid)
        Process.wait(@pid)
      end
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    ensure
      # What the worker forked and left in its group: under TSan (make
      # check-tsan) a child forked from a threaded worker never handles the
      # TERM, and test_fork's children outlived the test.
      begin
        Process.kill(:KILL, -@pid)
      rescue Errno::ESRCH, Errno::EPERM
        nil
      end
    end

    private

    def wait_file(path, re, timeout)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      loop do
        text = File.exist?(path) ? File.read(path) : ""
        m = text.match(re)
        return m if m
        if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          raise Minitest::Assertion, "#{File.basename(path)} has no #{re.inspect} within #{timeout} s:\n#{text[-3000..] || text}"
        end

        sleep 0.05
      end
    end
  end

  # Per-test temp dir with certificates, torn down with every process the
  # test started.
  # A worker script that counts its own work on stdout (a line every `every`
  # ticks of 50 ms) and reports the hook's connection ID when it changes.
  def self.counting_worker(every:)
    <<~RUBY
      $stdout.sync = true
      last = nil
      ticks = 0
      loop do
        ticks += 1
        id = Memdiag::Hook.connection_id
        puts "connection_id=\#{id} ticks=\#{ticks}" if id != last
        puts "ticks=\#{ticks}" if (ticks % #{every}).zero?
        last = id
        sleep 0.05
      end
    RUBY
  end

  module Fixture
    PUMA = ENV.fetch("MEMDIAG_PUMA", "puma")

    def setup
      # AF_UNIX paths are limited to 107 bytes: keep the dir short.
      @dir = Dir.mktmpdir("mdh")
      @certs = File.join(@dir, "certs")
      system(CERTS_TOOL, @certs, out: File::NULL, err: File::NULL) || flunk("memdiag-certs failed")
      @socket = File.join(@dir, "plugin.sock")
      @dumps = File.join(@dir, "dumps")
      Dir.mkdir(@dumps, 0o700) # the hook creates no dump directory
      @servers = []
      @workers = []
    end

    def teardown
      @workers.each(&:stop)
      @servers.each(&:stop)
      FileUtils.rm_rf(@dir)
    end

    def start_server(**kw)
      Server.new(@dir, socket: @socket, **kw).tap { |s| @servers << s }
    end

    def hook_env(name: nil, socket: @socket, extra: {})
      env = {
        "MEMDIAG_SOCKET" => socket,
        "MEMDIAG_CERT" => File.join(@certs, "worker.pem"),
        "MEMDIAG_KEY" => File.join(@certs, "worker.key"),
        "MEMDIAG_CA" => File.join(@certs, "ca.pem"),
        "MEMDIAG_DUMP_DIRECTORY" => @dumps,
        "RUBYOPT" => "-I#{LIB} -rmemdiag/hook/auto"
      }
      env["MEMDIAG_NAME"] = name if name
      env.merge(extra)
    end

    # A worker hooked only through RUBYOPT, as users run theirs.
    def start_worker(script, name: "worker", env: hook_env(name: name), **kw)
      Worker.new(@dir, script, env: env, name: name, **kw).tap { |w| @workers << w }
    end

    # The whole answer to GET path from an HTTP server (Puma, Unicorn)
    # listening on the Unix socket at socket_path.
    def http_get(socket_path, path = "/")
      UNIXSocket.open(socket_path) do |s|
        s.write("GET #{path} HTTP/1.0\r\nHost: test\r\n\r\n")
        s.read
      end
    end
  end
end
