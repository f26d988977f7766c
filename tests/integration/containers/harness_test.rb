# The container tests' own pieces, on a real memory cgroup and a real runc:
# a worker started through the cgroup's wrapper runs inside it from its
# first instruction and registers; the kernel charges the cgroup for what
# it holds; a leak past the cgroup's limit is ended by the kernel's OOM
# killer (the cgroup's oom_kill count rises); a cgroup is gone, with its
# processes, once the test removes it. A worker under runc registers through
# the mounted socket directory under its host PID (its own PID is 1), lives
# in the runc cgroup with the bundle's limit, and its heap dump, asked for
# without a path, is streamed into the host's capture folder.
require_relative "helper"

class ContainersHarnessTest < Minitest::Test
  include Containers::Test

  def setup
    start_bench("containers-harness", "")
  end

  def teardown
    @runc&.destroy
    super
  end

  def test_worker_in_a_cgroup_is_charged_and_oom_killed_past_its_limit
    cg = cgroup
    ballast = Containers.rand_mib(20..40)
    w = @bench.start_worker("cg-ballast", cgroup: cg, ballast: ballast)
    assert_equal [w.pid], cg.procs
    assert_match(/^\d+:memory:#{Regexp.escape(cg.relative)}$/, File.read("/proc/#{w.pid}/cgroup"))
    own = cg.charge
    assert_operator own, :>=, ballast, "the cgroup is charged for the worker's ballast"
    assert_equal 0, cg.oom_kills

    # The kernel kills the cgroup's largest process: the limit leaves the
    # leaker room to outgrow this worker by 32-64 MiB. (A limit drawn
    # alone, 96-160 MiB beside a 20-40 MiB ballast, let this worker be the
    # larger in a few per cent of runs: limit 96 MiB, ballast 40 MiB
    # always did, and the kernel killed it.)
    limit = 2 * own + Containers.rand_mib(32..64)
    cg.limit = limit
    assert_equal limit, cg.limit

    # A second worker leaks into the same limit until the kernel kills it.
    leaker = @bench.start_worker("cg-leaker", cgroup: cg, rate: 32 * Containers::MiB, max: 2 * limit)
    @bench.site.wait_until("the kernel OOM-kills a worker in #{cg.path}", timeout: 3 * E2E::WAIT) do
      cg.oom_kills.positive?
    end
    @bench.site.wait_until("the killed leaker is reaped") { !leaker.alive? }
    assert w.alive?, "the OOM killer took the larger process, the leaker"
    assert_operator cg.oom_kills, :>=, 1

    path = cg.path
    cg.destroy
    @cgroups.delete(cg)
    refute File.exist?(path), "#{path} is removed"
    refute w.alive?, "its processes went with it"
  end

  def test_runc_worker_registers_through_the_socket_directory_and_streams_its_dump
    limit = Containers.rand_mib(200..260)
    @runc = Containers::Runc.new(@bench, name: "runc-smoke", limit: limit,
                                         env: { "WORKER_BALLAST_BYTES" => 8 * Containers::MiB })
    host_pid = @runc.start
    site = @bench.site
    entry = site.wait_until("the runc worker registers:\n#{@runc.output}") do
      site.workers_json.find { |x| x["name"] == "runc-smoke" }
    end
    assert_equal host_pid, entry["pid"], "registered under its host PID"
    assert_equal 1, entry["ns_pid"], entry.inspect
    assert_match(/^\d+:memory:#{Regexp.escape(@runc.cgroup_relative)}$/, File.read("/proc/#{host_pid}/cgroup"))
    root = Containers.controller.last
    assert_equal limit.to_s, File.read(File.join(root, @runc.cgroup_relative, "memory.limit_in_bytes")).strip

    r = site.ctl("--json", "memory_dump", "connection_id=#{entry['connection_id']}")
    assert r.ok?, r.to_s
    path = JSON.parse(r.out)["path"]
    assert path.start_with?("#{@bench.captures}/manual/runc-smoke-#{host_pid}-"), path
    assert File.file?(path), "the stream landed on the host: #{path}"
    text = Capture.dump_text(path)
    assert text.each_line.any? { |l| l.include?('"name":"CaptureLeak"') }, "the dump is the worker's heap"
    assert_equal [], Dir.children(@runc.state_dir).grep_v(/\Aleaked(\.tmp)?\z/), "the worker wrote no dump of its own"
  end
end
