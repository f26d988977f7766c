# Shared by the capture-plan tests: a private collectd (the e2e harness's
# Site: certificates, plugin copy, logfile with PrintSeverity, csv) whose
# memdiag block adds capture keys, and leaking Ruby workers hooked through
# `-r memdiag/hook/auto` that write into the capture directory.
require_relative "../harness/harness"

module Capture
  HERE = File.expand_path(__dir__)
  MiB = 1024 * 1024

  # A notification as collectd's logfile plugin writes it.
  Note = Struct.new(:severity, :message)

  class Bench
    attr_reader :site, :captures

    # link: make CaptureDirectory a symbolic link to the real captures
    # directory (which the workers are given as their dump directory).
    # A block gets the captures path before collectd starts (which checks
    # and makes CaptureDirectory).
    def initialize(label, keys, link: false)
      @site = E2E::Site.new(label)
      @captures = File.join(@site.dir, "captures")
      yield @captures if block_given?
      configured = @captures
      if link
        FileUtils.mkdir_p(@captures, mode: 0o711)
        configured = File.join(@site.dir, "captures-link")
        File.symlink(@captures, configured)
      end
      @site.start_collectd(<<~KEYS)
        CaptureDirectory "#{configured}"
        #{keys}
      KEYS
    end

    # A hooked worker that leaks `rate` bytes/s up to `max` bytes.
    # dump_dir: the worker's MEMDIAG_DUMP_DIRECTORY (default: the captures).
    # uid: run the worker under this uid/gid (setpriv) with its own copy of
    # the worker certificate; the site's socket must admit it (SocketMode).
    # cgroup: a v1/v2 cgroup directory the worker joins before it starts
    # (so it registers from inside it).
    # script: the worker (leaker.rb by default); env: more of its environment.
    # hook_after_ballast: leaker.rb loads the hook only once its ballast is
    # built, so that no capture can begin before the ballast is whole.
    def start_leaker(name, rate: 8 * MiB, max: 300 * MiB, dump_dir: @captures, uid: nil, ballast: 0,
                     cgroup: nil, script: File.join(HERE, "leaker.rb"), env: {}, hook_after_ballast: false)
      marker = File.join(@site.dir, "#{name}.term")
      out = File.join(@site.dir, "#{name}.out")
      cert, key, ca = @site.cert("worker"), @site.key("worker"), @site.ca
      prefix = []
      if uid
        File.chmod(0o711, @site.dir)
        own = File.join(@site.dir, "certs-#{uid}")
        FileUtils.mkdir_p(own)
        cert, key, ca = [cert, key, ca].map do |f|
          File.join(own, File.basename(f)).tap { |c| FileUtils.cp(f, c) }
        end
        FileUtils.chown_R(uid, uid, own)
        prefix = ["setpriv", "--reuid=#{uid}", "--regid=#{uid}", "--clear-groups", "--"]
      end
      # The shell that joins the cgroup must not get the sanitizer preload
      # (libtsan kills sh): it goes to what the shell execs.
      preload = cgroup ? {} : TestPreload.env
      prefix = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup] + TestPreload.env_words + prefix if cgroup
      env = preload.merge(
        "MEMDIAG_SOCKET" => @site.socket,
        "MEMDIAG_CERT" => cert,
        "MEMDIAG_KEY" => key,
        "MEMDIAG_CA" => ca,
        "MEMDIAG_NAME" => name,
        "MEMDIAG_DUMP_DIRECTORY" => dump_dir,
        "LEAK_BYTES_PER_SECOND" => rate.to_s,
        "LEAK_MAX_BYTES" => max.to_s,
        "LEAK_BALLAST_OBJECTS" => ballast.to_s,
        "LEAK_HOOK_AFTER_BALLAST" => hook_after_ballast ? "1" : "0"
      ).merge(env)
      hook = hook_after_ballast ? [] : ["-r", "memdiag/hook/auto"]
      pid = Process.spawn(env, *prefix, E2E::RUBY, "-I", E2E::HOOK_LIB, *hook,
                          script, marker, out: [out, "w"], err: [:child, :out])
      w = E2E::Worker.new(name: name, pid: pid, tick_file: marker, dump_dir: @captures, out_path: out)
      @site.workers << w
      @site.wait_registered(w)
      w
    end

    # The worker's connection ID once `memdiagctl workers` lists it; a
    # memdiagctl that fails (a plugin restarting) is waited out too.
    def connection_id(worker)
      entry = nil
      @site.wait_until("#{worker.name} (pid #{worker.pid}) is registered") do
        r = @site.ctl("workers", "--json")
        entry = r.ok? && JSON.parse(r.out).find { |x| x["pid"] == worker.pid }
      end
      entry["connection_id"]
    end

    # `memdiagctl capture connection_id=N ARGS` for the worker.
    def capture(worker, *args) = @site.ctl("capture", "connection_id=#{connection_id(worker)}", *args)

    def notes
      @site.log.lines.filter_map do |l|
        m = l.match(/Notification: severity = (\w+),.*message = (.*)$/)
        m && Note.new(m[1], m[2])
      end
    end

    def wait_note(severity, pattern)
      @site.wait_until("a #{severity} notification matching #{pattern.inspect}") do
        notes.find { |n| n.severity == severity && n.message.match?(pattern) }
      end
    end

    # Capture folders of one worker (name-pid-time).
    def folders(worker)
      Dir.glob(File.join(@captures, "#{worker.name}-#{worker.pid}-*")).select { |d| File.directory?(d) }
    end

    def manifest(dir)
      path = File.join(dir, "capture.json")
      File.exist?(path) ? JSON.parse(File.read(path)) : nil
    end

    # Waits for the worker's capture folder and a manifest the block accepts.
    def wait_manifest(worker, what, timeout: E2E::WAIT)
      found = nil
      @site.wait_until("the manifest of #{worker.name}: #{what}", timeout: timeout) do
        found = folders(worker).map { |d| [d, manifest(d)] }.find { |_d, m| m && yield(m) }
      end
      found
    end

    def csv_value(type_instance)
      files = Dir.glob(File.join(@site.csv_dir, "*", "memdiag", "counter-#{type_instance}-*"))
      return nil if files.empty?

      last = File.readlines(files.max).last
      last && last !~ /^epoch/ ? last.split(",")[1].to_f : nil
    end

    def cleanup
      @site.cleanup
    end
  end

  # The capture tests' base: each test makes its @bench, which is cleaned
  # up when the test ends.
  class Test < Minitest::Test
    def teardown
      @bench&.cleanup
    end

    # A small leaking worker (start_leaker's options) whose operator
    # capture is refused: the reply matches reason and a FAILURE
    # notification matches note. Returns the worker.
    def assert_capture_refused(name, reason, note, **leaker)
      w = @bench.start_leaker(name, rate: MiB, max: 10 * MiB, **leaker)
      r = @bench.capture(w)
      refute r.ok?, r.to_s
      assert_match(reason, r.out + r.err)
      @bench.wait_note("FAILURE", note)
      w
    end
  end

  # The stored dump for a plan's file name: heap-1.json, or heap-1.json.zst
  # when the plugin compressed it (DumpCompression zstd, the default).
  def self.dump_path(dir, name)
    [name, "#{name}.zst"].map { |n| File.join(dir, n) }.find { |p| File.file?(p) } || File.join(dir, name)
  end

  # The dump's JSON text, decompressed when stored as .zst.
  def self.dump_text(path)
    path = dump_path(File.dirname(path), File.basename(path)) unless File.file?(path)
    return File.read(path) unless path.end_with?(".zst")

    out, st = Open3.capture2("zstd", "-dc", path)
    raise "zstd -dc #{path} failed" unless st.success?

    out
  end

  def self.heap_lines(path) = E2E.parse_ndjson(path, text: dump_text(path))

  # Relative path => SHA-256 of every regular file below dir (a shipped
  # copy compared with its capture folder).
  def self.tree(dir)
    require "digest"
    Dir.glob("**/*", File::FNM_DOTMATCH, base: dir).sort.each_with_object({}) do |rel, h|
      path = File.join(dir, rel)
      h[rel] = Digest::SHA256.file(path).hexdigest if File.file?(path) && !File.symlink?(path)
    end
  end
end
