# Shared by the container tests: real memory cgroups this test process makes
# (and always removes), hooked Ruby workers started inside them, and workers
# run by a real OCI runtime (runc) from a bundle made at test time.
#
# - Containers::Cgroup: /sys/fs/cgroup/memory/memdiag-test-<pid>-<n> (cgroup
#   v1's memory controller; on a host whose memory controller is on cgroup v2,
#   the same name under the v2 mount). Its limit, charge and OOM kill count
#   as the kernel reports them. A worker joins it through a shell that writes
#   its own PID into cgroup.procs and then execs Ruby, so nothing of the
#   worker ever runs outside it. Every cgroup a test made is removed when the
#   test ends (its processes SIGKILLed first), and so at exit are cgroups
#   left by test processes that no longer exist.
# - Containers::Bench: Capture::Bench (a private collectd with the plugin,
#   certificates, capture keys) whose socket is alone in its own directory,
#   so a container can be given that directory and nothing else.
# - Containers::Runc: a bundle whose rootfs binds the host's /usr (and the
#   /lib*, /bin, /sbin links of a merged-/usr host), /etc/ssl, the hook's
#   built library and this folder read-only, the plugin's socket directory at
#   /run/memdiag and the worker's certificate at /etc/memdiag; config.json
#   asks for its own PID, mount, IPC, UTS, network and cgroup namespaces and
#   a memory limit. runc creates the container's cgroup (cgroupfs, the same
#   memdiag-test-<pid>-<n> name) and removes it when the container is
#   deleted.
#
# A test skips, with the reason, only where the kernel offers no memory
# controller (Containers.skip_reason); a missing runc is a failure.
require_relative "../capture/helper"

module Containers
  HERE = File.expand_path(__dir__)
  MiB = Capture::MiB
  PREFIX = "memdiag-test"

  # "no limit" as cgroup v1 writes it (PAGE_COUNTER_MAX pages of 4 KiB).
  V1_UNLIMITED = 9_223_372_036_854_771_712

  # Where the memory controller is: [:v1, dir] or [:v2, dir], or nil.
  def self.controller
    @controller ||= begin
      v1 = "/sys/fs/cgroup/memory"
      if File.file?(File.join(v1, "memory.limit_in_bytes"))
        [:v1, v1]
      else
        v2 = File.foreach("/proc/self/mountinfo").map(&:split)
                 .select { |f| f[f.index("-") + 1] == "cgroup2" }.map { |f| f[4] }
                 .find { |d| File.read(File.join(d, "cgroup.controllers")).split.include?("memory") rescue false }
        v2 ? [:v2, v2] : false
      end
    end
  end

  # Why the container tests cannot run here, or nil.
  def self.skip_reason
    return "the container tests make memory cgroups and need root" unless Process.uid.zero?
    return "the kernel offers no memory cgroup controller (neither v1 memory nor v2 memory.max)" unless controller

    nil
  end

  def self.rand_mib(range) = rand(range) * MiB

  # A memory cgroup this process made.
  class Cgroup
    @made = []
    @count = 0
    class << self
      attr_reader :made

      def next_name
        @count += 1
        "#{PREFIX}-#{Process.pid}-#{@count}"
      end
    end

    attr_reader :path, :relative

    # limit: bytes or nil (none). parent: a Cgroup to nest under.
    def initialize(limit: nil, parent: nil, name: nil)
      @kind, root = Containers.controller
      raise "no memory cgroup controller" unless @kind

      name ||= Cgroup.next_name
      @relative = parent ? "#{parent.relative}/#{name}" : "/#{name}"
      @path = File.join(root, @relative)
      if @kind == :v2
        # Children of this one may use the controller too.
        parent_dir = File.dirname(@path)
        File.write(File.join(parent_dir, "cgroup.subtree_control"), "+memory")
      end
      Dir.mkdir(@path)
      Cgroup.made << self
      self.limit = limit if limit
    end

    def v1? = @kind == :v1

    def file(name) = File.join(@path, name)

    def read(name) = File.read(file(name))

    def limit=(bytes)
      if v1?
        File.write(file("memory.limit_in_bytes"), bytes.to_s)
      else
        File.write(file("memory.max"), bytes ? bytes.to_s : "max")
      end
    end

    # The limit of this cgroup alone (nil when none).
    def limit
      raw = read(v1? ? "memory.limit_in_bytes" : "memory.max").strip
      raw == "max" || raw.to_i >= V1_UNLIMITED ? nil : Integer(raw)
    end

    # What the kernel charges the cgroup (usage_in_bytes, memory.current).
    def charge = Integer(read(v1? ? "memory.usage_in_bytes" : "memory.current"))

    # OOM kills in this cgroup (v1 memory.oom_control, v2 memory.events).
    def oom_kills
      text = read(v1? ? "memory.oom_control" : "memory.events")
      Integer(text[/^oom_kill (\d+)/, 1] || 0)
    end

    def procs = exists? ? read("cgroup.procs").split.map { |x| Integer(x) } : []

    def exists? = File.directory?(@path)

    # The plugin's name for this cgroup's values: "cgroup-" and the path
    # relative to the hierarchy's root, '/' as '_' (cgroup-contract.md).
    def csv_instance = "cgroup-#{@relative.delete_prefix('/').tr('/', '_').gsub(/[^A-Za-z0-9._-]/, '_')}"

    # argv that runs cmd inside this cgroup: the shell moves itself in, then
    # execs cmd (so cmd's PID is the one in cgroup.procs).
    def join_command(*cmd)
      ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', @path, *cmd.map(&:to_s)]
    end

    # Kills what is left inside and removes the cgroup (children first).
    def destroy
      Cgroup.made.select { |c| c != self && c.relative.start_with?("#{@relative}/") }.each(&:destroy)
      Cgroup.remove_dir(@path)
      Cgroup.made.delete(self)
    end

    # SIGKILLs every process in dir's tree, waits for them, removes it.
    def self.remove_dir(dir)
      return unless File.directory?(dir)

      Dir.children(dir).map { |c| File.join(dir, c) }.select { |c| File.directory?(c) }
         .each { |c| remove_dir(c) }
      deadline = Time.now + 30
      loop do
        pids = File.read(File.join(dir, "cgroup.procs")).split.map(&:to_i)
        break if pids.empty?
        raise "processes #{pids} stay in #{dir}" if Time.now > deadline

        pids.each do |pid|
          Process.kill("KILL", pid)
        rescue Errno::ESRCH
          nil
        end
        pids.each do |pid|
          Process.waitpid(pid, Process::WNOHANG)
        rescue Errno::ECHILD
          nil
        end
        sleep 0.05
      end
      # rmdir can be refused for a moment while the last task exits.
      begin
        Dir.rmdir(dir)
      rescue Errno::EBUSY
        raise if Time.now > deadline

        sleep 0.05
        retry
      rescue Errno::ENOENT
        nil
      end
    end

    # At exit: every cgroup this process made, and those of test processes
    # that are gone (a test killed before its cleanup), in every hierarchy
    # (runc makes its cgroups in each v1 controller).
    def self.sweep
      made.dup.reverse_each do |c|
        c.destroy
      rescue StandardError => e
        warn "memdiag container tests: #{c.path} not removed: #{e.message}"
      end
      Dir.glob("/sys/fs/cgroup/{,*/}#{PREFIX}-*-*").each do |dir|
        owner = Integer(File.basename(dir)[/\A#{PREFIX}-(\d+)-/o, 1])
        next if owner != Process.pid && File.exist?("/proc/#{owner}")

        remove_dir(dir)
      rescue StandardError => e
        warn "memdiag container tests: #{dir} not removed: #{e.message}"
      end
    end
  end

  at_exit { Cgroup.sweep if Process.uid.zero? && Containers.controller }

  # A capture bench (Capture::Bench) whose plugin socket is alone in
  # dir/run, the directory a container is given.
  class Bench < Capture::Bench
    attr_reader :socket_dir

    # collectd_in: a Cgroup collectd runs in, in a cgroup namespace of its
    # own (what a DaemonSet pod that is not privileged gets on cgroup v2):
    # collectd then reads every other cgroup path as "/../...".
    # prefix: words collectd's command line starts with (given the site's
    # directory), as a wrapper that makes its namespace.
    def initialize(label, keys, collectd_in: nil, prefix: nil)
      super(label, keys) do
        @socket_dir = File.join(@site.dir, "run")
        FileUtils.mkdir_p(@socket_dir, mode: 0o755)
        @site.socket = File.join(@socket_dir, "supervisor.ipc")
        @site.collectd_prefix = collectd_in.join_command("unshare", "--cgroup") if collectd_in
        @site.collectd_prefix = prefix.call(@site.dir) if prefix
      end
    end

    # A hooked worker (worker.rb) started inside cgroup; registered when
    # this returns. dump_dir: its MEMDIAG_DUMP_DIRECTORY (default: the
    # plugin's capture directory, as a worker on the host has it).
    def start_worker(name, cgroup:, ballast: 0, rate: 0, max: 0, dump_dir: @captures)
      marker = File.join(@site.dir, "#{name}.leaked")
      out = File.join(@site.dir, "#{name}.out")
      env = {
        "MEMDIAG_SOCKET" => @site.socket, "MEMDIAG_CERT" => @site.cert("worker"),
        "MEMDIAG_KEY" => @site.key("worker"), "MEMDIAG_CA" => @site.ca, "MEMDIAG_NAME" => name,
        "WORKER_BALLAST_BYTES" => ballast.to_s, "LEAK_BYTES_PER_SECOND" => rate.to_s,
        "LEAK_MAX_BYTES" => max.to_s
      }
      env["MEMDIAG_DUMP_DIRECTORY"] = dump_dir if dump_dir
      cmd = cgroup.join_command(*TestPreload.env_words, E2E::RUBY, "-I", E2E::HOOK_LIB,
                                File.join(HERE, "worker.rb"), marker)
      pid = Process.spawn(env, *cmd, out: [out, "w"], err: [:child, :out])
      w = E2E::Worker.new(name: name, pid: pid, tick_file: marker, dump_dir: @captures, out_path: out)
      @site.workers << w
      @site.wait_registered(w)
      w
    end

    # The notifications (Capture::Note) about a worker's OOM kill.
    def oom_notes = notes.select { |n| n.message.include?("killed by the kernel's OOM killer") }

    # Capture folders of a worker named name with host PID pid.
    def folders_of(name, pid)
      Dir.glob(File.join(@captures, "#{name}-#{pid}-*")).select { |d| File.directory?(d) }
    end

    # `memdiagctl workers` as rows: one Hash per worker with "ID", "PID",
    # ("NS_PID"), "PPID", "NAME", "RSS", "LIMIT" and "LIMIT_SOURCE" as printed (sizes
    # are two words, "200.0 MiB", or "-"; names here have no spaces).
    def workers_table
      r = @site.ctl("workers")
      raise "memdiagctl workers failed: #{r}" unless r.ok?

      head, *rows = r.out.lines.map(&:chomp).reject(&:empty?)
      raise "no LIMIT column in:\n#{r.out}" unless head.split.include?("LIMIT_SOURCE")

      singles = head.split.take_while { |c| c != "RSS" } # ID PID [NS_PID] PPID NAME
      rows.map do |row|
        t = row.split
        cells = singles.to_h { |c| [c, t.shift] }
        %w[RSS LIMIT].each { |c| cells[c] = t.first == "-" ? t.shift : t.shift(2).join(" ") }
        cells["LIMIT_SOURCE"] = t.shift
        cells
      end
    end
  end

  # What a container test does around its bench (include it in the test
  # class): skip where containers cannot run, and remove the cgroups it made
  # and the bench afterwards, whatever failed.
  module Test
    # Skips unless containers can run here; then starts the bench.
    def start_bench(label, keys, **opts)
      reason = Containers.skip_reason
      skip reason if reason
      @bench = Bench.new(label, keys, **opts)
    end

    # A cgroup (Cgroup.new's options) removed after the test.
    def cgroup(**opts) = Cgroup.new(**opts).tap { |c| (@cgroups ||= []) << c }

    def teardown
      @cgroups&.each(&:destroy)
      @bench&.cleanup
    end
  end

  # A container run by runc from a bundle made at test time.
  class Runc
    RUNC = "runc"
    SOCKET_DIR = "/run/memdiag"
    CERT_DIR = "/etc/memdiag"
    STATE_DIR = "/var/lib/memdiag-test"

    attr_reader :id, :bundle, :out_path, :state_dir

    # bench: the Containers::Bench whose socket directory the container
    # gets; name: the worker's MEMDIAG_NAME; limit: linux.resources.memory.
    # env: more variables (LEAK_*, WORKER_BALLAST_BYTES).
    def initialize(bench, name:, limit:, env: {})
      @site = bench.site
      @id = Cgroup.next_name
      @runc_root = File.join(@site.dir, "runc")
      @bundle = File.join(@site.dir, "bundles", @id)
      @state_dir = File.join(@bundle, "state") # the only place it writes, for the test to read
      @out_path = File.join(@site.dir, "#{name}.out")
      FileUtils.mkdir_p([@runc_root, @state_dir])
      certs = File.join(@bundle, "certs")
      FileUtils.mkdir_p(certs, mode: 0o700)
      %w[worker.pem worker.key ca.pem].each { |f| FileUtils.cp(File.join(@site.certs, f), certs) }
      make_rootfs
      write_config(bench, name, limit, certs, env)
    end

    def cgroup_relative = "/#{@id}"

    # Starts the container detached; returns its host PID.
    def start
      pid_file = File.join(@bundle, "pid")
      out = File.open(@out_path, "w")
      ok = system(RUNC, "--root", @runc_root, "run", "--detach", "--bundle", @bundle, "--pid-file",
                  pid_file, @id, in: File::NULL, out: out, err: out)
      out.close
      raise "runc run failed:\n#{File.read(@out_path)}" unless ok

      @pid = Integer(File.read(pid_file))
    end

    attr_reader :pid

    # The container's state as runc reports it ("running", "stopped"...).
    def status
      out, st = Open3.capture2e(RUNC, "--root", @runc_root, "state", @id)
      st.success? ? JSON.parse(out)["status"] : "gone"
    end

    def running? = status == "running"

    def output = File.exist?(@out_path) ? File.read(@out_path) : ""

    # Kills and deletes the container (runc removes its cgroups).
    def destroy
      return unless File.directory?(@runc_root)

      system(RUNC, "--root", @runc_root, "kill", @id, "KILL", out: File::NULL, err: File::NULL)
      system(RUNC, "--root", @runc_root, "delete", "--force", @id, out: File::NULL, err: File::NULL)
    end

    private

    # An empty root (read-only in config.json) with the host's links of a
    # merged /usr; real directories are bound instead.
    def make_rootfs
      @rootfs = File.join(@bundle, "rootfs")
      FileUtils.mkdir_p(@rootfs)
      @binds = [["/usr", "/usr", "ro"], ["/etc/ssl", "/etc/ssl", "ro"]]
      %w[/bin /sbin /lib /lib32 /lib64 /libx32].each do |top|
        if File.symlink?(top)
          File.symlink(File.readlink(top), File.join(@rootfs, top))
        elsif File.directory?(top)
          @binds << [top, top, "ro"]
        end
      end
      @binds << [E2E::HOOK_LIB, E2E::HOOK_LIB, "ro"]
      @binds << [HERE, HERE, "ro"]
    end

    def write_config(bench, name, limit, certs, env)
      # Read-only: connecting to a socket writes nothing (the app pods of
      # conf/kubernetes mount the socket directory so).
      @binds << [bench.socket_dir, SOCKET_DIR, "ro"]
      @binds << [certs, CERT_DIR, "ro"]
      @binds << [@state_dir, STATE_DIR, "rw"]
      Dir.chdir(@bundle) { system(RUNC, "spec", exception: true) }
      path = File.join(@bundle, "config.json")
      c = JSON.parse(File.read(path))
      p = c["process"]
      p["terminal"] = false
      p["args"] = [E2E::RUBY, "-I", E2E::HOOK_LIB, File.join(HERE, "worker.rb"),
                   File.join(STATE_DIR, "leaked")]
      p["env"] = ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp",
                  "MEMDIAG_SOCKET=#{SOCKET_DIR}/#{File.basename(@site.socket)}",
                  "MEMDIAG_CERT=#{CERT_DIR}/worker.pem", "MEMDIAG_KEY=#{CERT_DIR}/worker.key",
                  "MEMDIAG_CA=#{CERT_DIR}/ca.pem", "MEMDIAG_NAME=#{name}"] +
                 TestPreload.env.map { |k, v| "#{k}=#{v}" } + env.map { |k, v| "#{k}=#{v}" }
      c["root"] = { "path" => "rootfs", "readonly" => true }
      c["hostname"] = name.gsub(/[^A-Za-z0-9-]/, "-")
      c["mounts"] << { "destination" => "/tmp", "type" => "tmpfs", "source" => "tmpfs",
                       "options" => %w[nosuid nodev mode=1777 size=16m] }
      @binds.each do |src, dst, mode|
        c["mounts"] << { "destination" => dst, "type" => "bind", "source" => src,
                         "options" => ["rbind", mode, "nosuid", "nodev"] }
      end
      l = c["linux"]
      l["namespaces"] << { "type" => "cgroup" } unless l["namespaces"].any? { |n| n["type"] == "cgroup" }
      l["cgroupsPath"] = cgroup_relative
      l["resources"] ||= {}
      l["resources"]["memory"] = { "limit" => limit }
      File.write(path, JSON.pretty_generate(c))
    end
  end
end
