# Workers in containers: a leaking worker started in its own PID and mount
# namespace (as `unshare --pid --mount --fork --mount-proc`, what a container
# runtime does to a process), with a private tmpfs over the capture directory
# inside its namespace so nothing it writes there reaches the host. It
# registers under its host PID, `memdiagctl workers` shows the PID it knows
# itself by and its cgroup, and an automatic capture streams three heap dumps
# over its connection into the plugin's capture folder, zstd-compressed,
# that decompress to dumps holding the leak.
require_relative "helper"

class CaptureContainerTest < Minitest::Test
  def setup
    skip "namespaces need root" unless Process.uid.zero?
    @bench = Capture::Bench.new("capture-container", <<~KEYS)
      CaptureSize "60M"
      CaptureInterval 1
    KEYS
  end

  def teardown
    @pids&.each do |pid|
      Process.kill("KILL", pid)
      Process.wait(pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
    @bench&.cleanup
  end

  # Starts the leaker in new PID and mount namespaces; returns its entry in
  # `memdiagctl workers --json` once it has registered.
  def start_contained(name, rate:, max:)
    site = @bench.site
    FileUtils.mkdir_p(@bench.captures, mode: 0o711)
    marker = File.join(site.dir, "#{name}.term")
    out = File.join(site.dir, "#{name}.out")
    env = {
      "MEMDIAG_SOCKET" => site.socket, "MEMDIAG_CERT" => site.cert("worker"),
      "MEMDIAG_KEY" => site.key("worker"), "MEMDIAG_CA" => site.ca, "MEMDIAG_NAME" => name,
      "MEMDIAG_DUMP_DIRECTORY" => @bench.captures,
      "LEAK_BYTES_PER_SECOND" => rate.to_s, "LEAK_MAX_BYTES" => max.to_s
    }
    script = "mount -t tmpfs -o size=4m memdiag-private #{@bench.captures} && " \
             "exec #{TestPreload.env_words.join(' ')} " \
             "#{E2E::RUBY} -I #{E2E::HOOK_LIB} -r memdiag/hook/auto " \
             "#{File.join(Capture::HERE, 'leaker.rb')} #{marker}"
    pid = Process.spawn(env, "unshare", "--pid", "--mount", "--fork", "--kill-child", "--mount-proc",
                        "--propagation", "private", "sh", "-c", script,
                        out: [out, "w"], err: [:child, :out])
    (@pids ||= []) << pid
    site.wait_until("contained worker #{name} registers") do
      raise "#{name} exited:\n#{File.read(out)}" if Process.waitpid(pid, Process::WNOHANG)

      site.workers_json.find { |w| w["name"] == name }
    end
  end

  def zstd_lines(path)
    out, st = Open3.capture2("zstd", "-dc", path)
    assert st.success?, "zstd -dc #{path} failed"
    out.each_line.map { |l| JSON.parse(l) }
  end

  def test_contained_worker_registers_and_its_dumps_are_streamed
    entry = start_contained("boxed", rate: 8 * Capture::MiB, max: 200 * Capture::MiB)
    site = @bench.site

    # Identity across PID namespaces: the host PID, the namespace's PID 1.
    host_pid = entry["pid"]
    refute_equal 1, host_pid
    assert_equal 1, entry["ns_pid"], entry.inspect
    assert_kind_of String, entry["cgroup"], entry.inspect
    # its memory cgroup (v1: the memory line, not the v2 one)
    text = File.read("/proc/#{host_pid}/cgroup")
    assert_equal text[/^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:(.*)$/, 1] || text[/^0::(.*)$/, 1], entry["cgroup"]
    table = site.ctl("workers")
    assert table.ok?, table.to_s
    assert_match(/NS_PID/, table.out)
    row = table.out.lines.find { |l| l.split.include?(host_pid.to_s) }
    refute_nil row, table.out
    assert_equal "1", row.split[2], row

    worker = Struct.new(:name, :pid).new("boxed", host_pid)
    dir, m = @bench.wait_manifest(worker, "the plan ended", timeout: 3 * E2E::WAIT) { |x| x["end"] }
    assert_equal true, m["complete"], JSON.pretty_generate(m)
    assert_equal host_pid, m["worker"]["pid"]
    assert_match(%r{/captures/boxed-#{host_pid}-}, dir)
    # The folder is the plugin's own: the worker never writes into it.
    assert_equal 0, File.stat(dir).uid

    # The OKAY notification waits for the capture's analysis (analysis.json).
    @bench.wait_note("OKAY", /capture of worker boxed .*capture complete/)
    names = Dir.children(dir).sort
    assert_equal %w[analysis.json capture.json gc.txt heap-1.json.zst heap-2.json.zst
                    heap-3.json.zst heap_profile-1.pb.gz heap_profile-2.pb.gz heap_profile-3.pb.gz
                    scheduler.txt threads.txt], names
    leaks = %w[heap-1.json.zst heap-2.json.zst heap-3.json.zst].map do |f|
      path = File.join(dir, f)
      step = m["steps"].find { |s| s["file"] == f }
      refute_nil step, "the manifest does not name #{f}: #{m['steps'].map { |s| s['file'] }}"
      lines = zstd_lines(path)
      decompressed = Open3.capture2("zstd", "-dc", path).first.bytesize
      assert_equal decompressed, step["bytes"], "#{f}: the manifest's size is the dump's"
      assert_operator File.size(path) * 4, :<, decompressed, "#{f} is not compressed"
      klass = lines.find { |o| o["type"] == "CLASS" && o["name"] == "CaptureLeak" }
      refute_nil klass, "#{f} has no CaptureLeak class"
      lines.count { |o| o["type"] == "OBJECT" && o["class"] == klass["address"] }
    end
    assert_operator leaks.first, :>, 0
    assert_operator leaks.last, :>, leaks.first, "the leak grows across the dumps: #{leaks}"
    assert File.size?(File.join(dir, "gc.txt"))
    assert_match(/memdiag-hook|Thread/, File.read(File.join(dir, "threads.txt")))
  end

  # memdiagctl memory_dump without a path: the dump lands in
  # CaptureDirectory/manual/ on the plugin's side, and the reply names it.
  def test_manual_dump_without_path_is_stored_by_the_plugin
    entry = start_contained("boxed-manual", rate: 512 * 1024, max: 8 * Capture::MiB)
    site = @bench.site
    r = site.ctl("--json", "memory_dump", "connection_id=#{entry['connection_id']}", "mode=fork")
    assert r.ok?, r.to_s
    reply = JSON.parse(r.out)
    path = reply["path"]
    assert_match(%r{\A#{Regexp.escape(@bench.captures)}/manual/boxed-manual-#{entry['pid']}-\d{8}T\d{6}\.\d{3}Z/heap\.json\.zst\z}, path)
    assert File.file?(path), path
    assert_equal 0o600, File.stat(path).mode & 0o777
    assert_equal 0o700, File.stat(File.dirname(path)).mode & 0o777
    lines = zstd_lines(path)
    assert lines.any? { |o| o["type"] == "CLASS" && o["name"] == "CaptureLeak" }
    assert_equal Open3.capture2("zstd", "-dc", path).first.bytesize, reply["bytes"]
    assert_equal ["heap.json.zst"], Dir.children(File.dirname(path))

    table = site.ctl("memory_dump", "connection_id=#{entry['connection_id']}")
    assert table.ok?, table.to_s
    assert_match(%r{/manual/boxed-manual-}, table.out)
  end
end
