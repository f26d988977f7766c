# Shared by the security tests (issue 24, docs/security.md): a private
# collectd with capture keys (Capture::Bench) and a hostile worker,
# md-attack-peer, run as an unprivileged user (nobody) with its own copy of
# the worker certificate, as code running as the application's user would.
require_relative "../capture/helper"

module Security
  NOBODY = 65_534
  MiB = 1024 * 1024

  def self.attack_peer = E2E.setting("MEMDIAG_ATTACK_PEER")

  # The bench's site admits nobody: a socket others may open, a site
  # directory nobody may pass through.
  def self.keys = "SocketMode \"0666\"\n"

  # md-attack-peer MODE as nobody (or another uid, which need not be a
  # user's); returns an E2E::Worker (registered unless wait: false).
  def self.attacker(bench, mode, *args, name: "attacker-#{mode}", wait: true, uid: NOBODY)
    site = bench.site
    File.chmod(0o711, site.dir)
    own = File.join(site.dir, "certs-#{uid}")
    FileUtils.mkdir_p(own)
    cert, key, ca = [site.cert("worker"), site.key("worker"), site.ca].map do |f|
      File.join(own, File.basename(f)).tap { |c| FileUtils.cp(f, c) }
    end
    FileUtils.chown_R(uid, uid, own)
    out = File.join(site.dir, "#{name}.out")
    pid = Process.spawn("setpriv", "--reuid=#{uid}", "--regid=#{uid}", "--clear-groups", "--",
                        attack_peer, mode, "--socket", site.socket, "--cert", cert, "--key", key,
                        "--ca", ca, "--name", name, *args, out: [out, "w"], err: [:child, :out])
    w = E2E::Worker.new(name: name, pid: pid, tick_file: out, dump_dir: bench.captures, out_path: out)
    site.workers << w
    site.wait_registered(w) if wait
    w
  end

  # An sh script (body) any user may run, as CaptureCommand; its directory
  # is removed when the test process exits.
  def self.command(name, body)
    @command_dir ||= Dir.mktmpdir("memdiag-sec-cmd-").tap do |d|
      File.chmod(0o755, d)
      at_exit { FileUtils.rm_rf(d) unless ENV["MEMDIAG_E2E_KEEP"] }
    end
    File.join(@command_dir, name).tap do |path|
      File.write(path, "#!/bin/sh\n#{body}")
      File.chmod(0o755, path)
    end
  end

  # Bytes used on the file system holding path (as df counts them).
  def self.fs_used(path)
    out = IO.popen(["df", "-B1", "--output=used", path], &:read)
    Integer(out.lines.last.strip)
  end

  # The operator is answered, another worker still registers, and collectd
  # stops on SIGTERM within 15 s (asserted through test t).
  def self.assert_unharmed(t, site)
    t.assert site.ctl("workers").ok?
    site.wait_welcomed(site.test_worker("honest"))
    took = stop_seconds(site)
    t.refute_nil took, "collectd still ran 60 s after SIGTERM"
    t.assert_operator took, :<, 15
    took
  end

  # For a test whose captures are a tmpfs of `size` bytes, mounted before
  # collectd starts and unmounted when the test ends (root only).
  module Tmpfs
    def tmpfs_bench(label, size, keys)
      skip "mounting a tmpfs needs root" unless Process.uid.zero?
      @bench = Capture::Bench.new(label, keys) do |captures|
        FileUtils.mkdir_p(captures)
        system("mount", "-t", "tmpfs", "-o", "size=#{size},mode=0711", label, captures) or raise "mount failed"
        @mounted = captures
      end
    end

    def teardown
      @bench&.site&.stop_collectd
      system("umount", @mounted) if @mounted
      super
    end
  end

  # Sends SIGTERM to collectd and returns the seconds it took to exit, or
  # nil when it was still running after `limit` s (it is then killed).
  def self.stop_seconds(site, limit: 60)
    pid = site.collectd_pid
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    Process.kill("TERM", pid)
    deadline = t0 + limit
    sleep 0.05 while site.collectd_alive? && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    took = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
    return took unless site.collectd_alive?

    Process.kill("KILL", pid)
    nil
  end
end
