# A real Sidekiq behind the e2e harness: the harness's private collectd with
# the memdiag plugin, a private redis-server on a unix socket in the site's
# temp directory (never the system's, never a TCP port), and Debian's
# `sidekiq` started with the hook in RUBYOPT only.
#
# ctest passes the e2e settings (see tests/integration/sidekiq/CMakeLists.txt) plus
# MEMDIAG_SIDEKIQ, MEMDIAG_REDIS_SERVER, MEMDIAG_REDIS_CLI and MEMDIAG_HEAPY,
# empty when the program is not installed.
require_relative "../harness/harness"

module SidekiqSite
  HERE = File.expand_path(__dir__)
  NAME = "sidekiq-jobs"
  CONCURRENCY = 2
  PER_JOB = 200 # SidekiqLeakyPayload objects each job keeps
  COUNTER = "memdiag-test:processed"

  def self.program(var)
    v = ENV[var].to_s
    v.empty? || !File.executable?(v) ? nil : v
  end

  SIDEKIQ = program("MEMDIAG_SIDEKIQ")
  REDIS_SERVER = program("MEMDIAG_REDIS_SERVER")
  REDIS_CLI = program("MEMDIAG_REDIS_CLI")
  HEAPY = program("MEMDIAG_HEAPY")

  def self.missing
    { "sidekiq (Debian ruby-sidekiq)" => SIDEKIQ, "redis-server (Debian redis-server)" => REDIS_SERVER,
      "redis-cli (Debian redis-tools)" => REDIS_CLI }
      .select { |_, path| path.nil? }.keys
  end

  # One site per test file; its processes are stopped in the order they
  # depend on each other (Sidekiq, then Redis, then collectd) by the
  # harness's cleanup, which also runs on INT/TERM.
  def self.get
    raise @failed if @failed
    return @state if @state

    site = E2E::SharedSite.get("sidekiq")
    begin
      @state = State.new(site).tap(&:start)
    rescue StandardError => e
      @failed = e
      raise
    end
  end

  class State
    attr_reader :site, :sidekiq, :redis_socket

    def initialize(site)
      @site = site
      @app_dir = File.join(site.dir, "app")
      @redis_socket = File.join(site.dir, "redis.sock")
      @next_job = 0
    end

    def start
      FileUtils.mkdir_p(@app_dir)
      %w[app.rb enqueue.rb].each { |f| FileUtils.cp(File.join(HERE, f), @app_dir) }
      start_redis
      start_sidekiq
    end

    def redis_url = "unix://#{@redis_socket}"

    # ---------------------------------------------------------------- redis

    def start_redis
      out = File.join(site.dir, "redis.out")
      pid = Process.spawn(REDIS_SERVER, "--port", "0", "--unixsocket", @redis_socket,
                          "--unixsocketperm", "700", "--dir", site.dir, "--daemonize", "no",
                          "--save", "", "--appendonly", "no",
                          out: [out, "w"], err: %i[child out])
      @redis_proc = process("redis", pid, out)
      site.workers << @redis_proc
      site.wait_until("redis-server answers on #{@redis_socket}") do
        raise "redis-server exited:\n#{@redis_proc.output}" unless @redis_proc.alive?

        File.socket?(@redis_socket) && redis_cli("PING").strip == "PONG"
      end
    end

    # The test process talks to Redis through redis-cli so that it loads no
    # client library (and certainly not the hook) itself.
    def redis_cli(*args)
      out, st = Open3.capture2e(REDIS_CLI, "-s", @redis_socket, *args)
      st.success? ? out : ""
    end

    def processed = redis_cli("GET", COUNTER).strip.to_i

    # -------------------------------------------------------------- sidekiq

    def hook_env
      {
        "RUBYOPT" => "-I#{E2E::HOOK_LIB} -rmemdiag/hook/auto",
        "MEMDIAG_SOCKET" => site.socket,
        "MEMDIAG_CERT" => site.cert("worker"),
        "MEMDIAG_KEY" => site.key("worker"),
        "MEMDIAG_CA" => site.ca,
        "MEMDIAG_NAME" => NAME,
        "MEMDIAG_DUMP_DIRECTORY" => dump_dir,
      }
    end

    def dump_dir = File.join(site.dir, "dumps", NAME)

    def start_sidekiq
      FileUtils.mkdir_p(dump_dir, mode: 0o700)
      out = File.join(site.dir, "sidekiq.out")
      env = TestPreload.env.merge(hook_env).merge("REDIS_URL" => redis_url, "SIDEKIQ_TEST_PER_JOB" => PER_JOB.to_s)
      # -t: the harness waits 10 s for a TERM'd process before it kills it.
      pid = Process.spawn(env, SIDEKIQ, "-r", "./app.rb", "-c", CONCURRENCY.to_s, "-t", "5",
                          chdir: @app_dir, out: [out, "w"], err: %i[child out])
      @sidekiq = process(NAME, pid, out)
      # Stopped before Redis, so it does not spend its shutdown reconnecting.
      site.workers.unshift(@sidekiq)
      # The hook registers as soon as Ruby starts, before Sidekiq has loaded;
      # a finished job shows its launcher and processors are up.
      site.wait_registered(@sidekiq)
      run_jobs(CONCURRENCY, "once it has started")
    end

    # ----------------------------------------------------------------- jobs

    # Pushes count jobs through a separate client process, as an application
    # enqueues them, and returns at once.
    def enqueue(count)
      env = { "REDIS_URL" => redis_url, "RUBYOPT" => nil }
      out, st = Open3.capture2e(env, E2E::RUBY, "-r", "sidekiq", "enqueue.rb",
                                count.to_s, @next_job.to_s, chdir: @app_dir)
      raise "enqueue.rb failed:\n#{out}" unless st.success?

      @next_job += count
    end

    # Enqueues count jobs and waits until Sidekiq has finished at least that
    # many more than before.
    def run_jobs(count, what)
      before = processed
      enqueue(count)
      site.wait_until("Sidekiq processes #{count} jobs #{what}") do
        raise "sidekiq exited:\n#{@sidekiq.output}" unless @sidekiq.alive?

        processed >= before + count
      end
    end

    # ---------------------------------------------------------------- procs

    # PIDs of the processes whose parent is pid (read from /proc/PID/stat).
    def self.children_of(pid)
      Dir.glob("/proc/[0-9]*/stat").filter_map do |stat|
        fields = File.read(stat).rpartition(")").last.split
        Integer(File.basename(File.dirname(stat))) if fields[1].to_i == pid
      rescue Errno::ENOENT, Errno::ESRCH
        nil
      end
    end

    private

    def process(name, pid, out)
      E2E::Worker.new(name: name, pid: pid, tick_file: File.join(site.dir, "#{name}.none"),
                      dump_dir: dump_dir, out_path: out)
    end
  end
end
