# conf/kubernetes/ holds what docs/containers.md walks through: the memdiag
# namespace, collectd.conf in a ConfigMap, the collectd DaemonSet and an
# example application Deployment. Every manifest is parsed (Psych) and held
# to what the docs say:
#   - the DaemonSet: hostPID; the socket directory as a hostPath; the
#     capture directory as a hostPath; /sys/fs/cgroup read-only; the plugin's
#     certificate files in a Secret volume; collectd.conf read from the
#     ConfigMap's mount;
#   - the app: the same hostPath for the socket directory at the same path
#     as in the DaemonSet, so MEMDIAG_SOCKET is the plugin's Socket on both
#     sides; MEMDIAG_CERT/KEY/CA in its Secret volume; RUBYOPT loading the
#     hook; only variables the hook reads (taken from its sources, as
#     docs.reference does); a memory limit; the socket's group;
#   - Pod Security Standards: a small Baseline check over the fields these
#     manifests use. The DaemonSet is outside Baseline by exactly hostPID,
#     hostPath and SYS_PTRACE, the app by its hostPath alone, and each
#     namespace holding them enforces Privileged (docs/containers.md says so);
#   - the ConfigMap's collectd.conf is accepted by a real collectd with the
#     built plugin, its paths moved into a temp directory.
# Set MEMDIAG_DOCS_TOP to check another checkout.
require "minitest/autorun"
require "open3"
require "tmpdir"
require "yaml"

class KubernetesManifestsTest < Minitest::Test
  TOP = ENV["MEMDIAG_DOCS_TOP"] || File.expand_path("../../..", __dir__)
  DIR = File.join(TOP, "conf/kubernetes")

  # Capabilities Baseline lets a container add.
  BASELINE_CAPS = %w[AUDIT_WRITE CHOWN DAC_OVERRIDE FOWNER FSETID KILL MKNOD NET_BIND_SERVICE SETFCAP
                     SETGID SETPCAP SETUID SYS_CHROOT].freeze

  def self.documents
    @documents ||= Dir[File.join(DIR, "*.yaml")].sort.flat_map do |f|
      YAML.load_stream(File.read(f), filename: f).compact.map { |d| [File.basename(f), d] }
    end
  end

  def docs = self.class.documents

  def find(kind, name = nil)
    found = docs.map(&:last).select { |d| d["kind"] == kind && (name.nil? || d.dig("metadata", "name") == name) }
    assert_equal 1, found.size, "one #{kind} #{name} in conf/kubernetes (found #{found.size})"
    found.first
  end

  def daemonset = find("DaemonSet")
  def deployment = find("Deployment")
  def pod(workload) = workload.dig("spec", "template", "spec")

  def config_map = find("ConfigMap", "memdiag-collectd")

  def collectd_conf = config_map.dig("data", "collectd.conf")

  # A key of <Plugin memdiag> in the ConfigMap's collectd.conf.
  def memdiag_key(key)
    block = collectd_conf[%r{<Plugin memdiag>(.*?)</Plugin>}m, 1]
    refute_nil block, "collectd.conf has a <Plugin memdiag> block"
    block[/^\s*#{key}\s+"([^"]*)"/, 1]
  end

  def container(workload, name = nil)
    cs = pod(workload)["containers"]
    name ? cs.find { |c| c["name"] == name } : cs.first
  end

  def env(container) = (container["env"] || []).to_h { |e| [e["name"], e["value"] || e["valueFrom"]] }

  def volume(workload, name) = pod(workload)["volumes"].find { |v| v["name"] == name }

  # The volume whose mount holds path in container c: [volume, mount].
  def volume_at(workload, c, path)
    mount = c["volumeMounts"].select { |m| path == m["mountPath"] || path.start_with?("#{m['mountPath'].chomp('/')}/") }
                             .max_by { |m| m["mountPath"].size }
    refute_nil mount, "no volume holds #{path} in #{workload['kind']} #{c['name']}"
    [volume(workload, mount["name"]), mount]
  end

  # Where a hostPath volume shows the node's dir in container c: the
  # mountPath of a volume with hostPath.path == dir.
  def host_mount(workload, c, dir)
    v = pod(workload)["volumes"].find { |x| x.dig("hostPath", "path") == dir }
    refute_nil v, "#{workload['kind']} has a hostPath volume for #{dir}"
    c["volumeMounts"].find { |m| m["name"] == v["name"] }
  end

  # The Baseline controls a pod breaks, by the fields these manifests use.
  def baseline_violations(workload)
    spec = pod(workload)
    v = []
    %w[hostPID hostNetwork hostIPC].each { |k| v << k if spec[k] }
    v << "hostPath" if (spec["volumes"] || []).any? { |x| x.key?("hostPath") }
    (spec["containers"] + (spec["initContainers"] || [])).each do |c|
      sc = c["securityContext"] || {}
      v << "privileged" if sc["privileged"]
      (sc.dig("capabilities", "add") || []).each { |cap| v << cap unless BASELINE_CAPS.include?(cap) }
      v << "hostPort" if (c["ports"] || []).any? { |p| p["hostPort"] }
      v << "seccomp Unconfined" if sc.dig("seccompProfile", "type") == "Unconfined"
      v << "procMount" if sc["procMount"] && sc["procMount"] != "Default"
    end
    v << "seccomp Unconfined" if spec.dig("securityContext", "seccompProfile", "type") == "Unconfined"
    v.uniq.sort
  end

  def namespace_of(workload) = find("Namespace", workload.dig("metadata", "namespace"))

  def test_every_manifest_parses_and_names_itself
    files = Dir[File.join(DIR, "*.yaml")]
    refute_empty files
    docs.each do |file, d|
      %w[apiVersion kind].each { |k| assert_kind_of String, d[k], "#{file}: #{k}" }
      assert_kind_of String, d.dig("metadata", "name"), "#{file}: metadata.name"
    end
    guide = File.read(File.join(TOP, "docs/containers.md"))
    (files + Dir[File.join(DIR, "*.Dockerfile")]).each do |f|
      assert guide.include?("conf/kubernetes/#{File.basename(f)}"), "docs/containers.md walks through #{File.basename(f)}"
    end
  end

  def test_daemonset_mounts_what_the_plugin_needs
    ds = daemonset
    c = container(ds, "collectd")
    assert_equal true, pod(ds)["hostPID"], "hostPID: the plugin reads workers' /proc by host PID"

    socket = memdiag_key("Socket")
    socket_mount = host_mount(ds, c, File.dirname(socket))
    assert_equal File.dirname(socket), socket_mount["mountPath"], "the socket directory at the node's path"
    refute socket_mount["readOnly"], "the plugin makes its socket there"

    cg = host_mount(ds, c, "/sys/fs/cgroup")
    assert_equal "/sys/fs/cgroup", cg["mountPath"]
    assert_equal true, cg["readOnly"], "/sys/fs/cgroup read-only"

    captures = memdiag_key("CaptureDirectory")
    v, = volume_at(ds, c, captures)
    assert v.key?("hostPath"), "CaptureDirectory #{captures} is on the node, not in the pod"

    %w[TLSCertificate TLSKey TLSCA].each do |k|
      v, = volume_at(ds, c, memdiag_key(k))
      assert v.key?("secret"), "#{k} #{memdiag_key(k)} comes from a Secret"
      assert_equal 0o400, v.dig("secret", "defaultMode"), "#{k}: only root reads the plugin's key"
    end
    # memdiagctl in the pod (kubectl exec): the operator pair from a Secret.
    e = env(c)
    assert_equal socket, e["MEMDIAG_SOCKET"]
    %w[MEMDIAG_CERT MEMDIAG_KEY MEMDIAG_CA].each do |k|
      v, = volume_at(ds, c, e[k])
      assert v.key?("secret"), "#{k} from a Secret"
    end

    # collectd.conf is the ConfigMap's, read where it is mounted.
    script = c["command"].join(" ")
    conf_in = script[%r{(/\S+/collectd\.conf)\s*>}, 1]
    refute_nil conf_in, script
    v, m = volume_at(ds, c, conf_in)
    assert_equal config_map.dig("metadata", "name"), v.dig("configMap", "name")
    assert_equal "collectd.conf", conf_in.delete_prefix("#{m['mountPath']}/")
    assert_includes collectd_conf, "@NODE_NAME@"
    assert_equal({ "fieldRef" => { "fieldPath" => "spec.nodeName" } }, e["NODE_NAME"])
    assert_equal config_map.dig("metadata", "namespace"), ds.dig("metadata", "namespace")
  end

  def test_app_reaches_the_plugin_through_the_same_host_directory
    ds = daemonset
    app = deployment
    c = container(app)
    socket = memdiag_key("Socket")
    dir = File.dirname(socket)
    plugin_side = host_mount(ds, container(ds, "collectd"), dir)
    app_side = host_mount(app, c, dir)
    assert_equal plugin_side["mountPath"], app_side["mountPath"], "the socket directory at the same path on both sides"
    assert_equal true, app_side["readOnly"], "the app only connects"

    e = env(c)
    assert_equal socket, e["MEMDIAG_SOCKET"], "MEMDIAG_SOCKET is the plugin's Socket"
    assert_match(/(\A|\s)-rmemdiag\/hook\/auto(\s|\z)/, e["RUBYOPT"], "RUBYOPT loads the hook")
    secret = nil
    %w[MEMDIAG_CERT MEMDIAG_KEY MEMDIAG_CA].each do |k|
      refute_nil e[k], "#{k} is set"
      v, = volume_at(app, c, e[k])
      assert v.key?("secret"), "#{k} #{e[k]} comes from a Secret"
      secret = v["secret"]
    end
    assert_equal "memdiag-worker", secret["secretName"]
    assert_equal({ "fieldRef" => { "fieldPath" => "metadata.name" } }, e["MEMDIAG_NAME"])
    refute e.key?("MEMDIAG_DUMP_DIRECTORY"), "no dump directory: the worker streams its dumps"
    read = hook_variables
    e.keys.grep(/\AMEMDIAG_/).each { |k| assert_includes read, k, "#{k} is a variable the hook reads" }

    limit = c.dig("resources", "limits", "memory")
    assert_match(/\A\d+(Mi|Gi)\z/, limit.to_s, "a memory limit: what the OOM killer enforces")

    # The socket's group and mode let the non-root worker in, and it can
    # read its certificate files.
    sc = pod(app)["securityContext"]
    assert_equal true, sc["runAsNonRoot"]
    assert_equal memdiag_key("SocketGroup"), sc["runAsGroup"].to_s
    assert_equal "0660", memdiag_key("SocketMode")
    assert_equal sc["runAsGroup"], sc["fsGroup"]
    assert_equal 0o040, secret["defaultMode"] & 0o040, "group-readable for fsGroup"
  end

  def test_pod_security_levels_are_what_the_docs_say
    ds = daemonset
    app = deployment
    assert_equal %w[SYS_PTRACE hostPID hostPath], baseline_violations(ds)
    assert_equal %w[hostPath], baseline_violations(app), "the app needs only the hostPath volume beyond Baseline"
    [ds, app].each do |w|
      labels = namespace_of(w).dig("metadata", "labels")
      assert_equal "privileged", labels["pod-security.kubernetes.io/enforce"], w["kind"]
      assert_equal "baseline", labels["pod-security.kubernetes.io/warn"], "#{w['kind']}: the rest still warns"
    end
    refute_equal namespace_of(ds).dig("metadata", "name"), namespace_of(app).dig("metadata", "name"),
                 "the DaemonSet's namespace holds nothing else"
    guide = File.read(File.join(TOP, "docs/containers.md"))
    %w[hostPID hostPath SYS_PTRACE pod-security.kubernetes.io/enforce].each do |w|
      assert guide.include?(w), "docs/containers.md names #{w}"
    end
  end

  def test_collectd_accepts_the_configmaps_collectd_conf
    collectd, plugin, stock, typesdb = %w[COLLECTD PLUGIN STOCK TYPESDB].map { |k| ENV["MEMDIAG_K8S_#{k}"] }
    skip "run through ctest (MEMDIAG_K8S_* unset)" unless collectd && plugin
    Dir.mktmpdir("memdiag-k8s-conf-") do |dir|
      FileUtils.mkdir_p(File.join(dir, "plugins"))
      FileUtils.cp(plugin, File.join(dir, "plugins", "memdiag.so"))
      FileUtils.cp(File.join(stock, "logfile.so"), File.join(dir, "plugins"))
      out, st = Open3.capture2e("sh", File.join(TOP, "conf/memdiag-certs"), File.join(dir, "etc"))
      assert st.success?, out
      conf = collectd_conf.dup
      # write_prometheus would take its port: the memdiag block is what is checked.
      conf.sub!(%r{^LoadPlugin write_prometheus\n<Plugin write_prometheus>.*?</Plugin>\n}m, "")
      refute_includes conf, "write_prometheus"
      conf.gsub!("@NODE_NAME@", "node-1")
      conf.gsub!(%r{"/usr/lib/collectd"}, %("#{dir}/plugins"))
      conf.gsub!(%r{"/usr/share/collectd/types.db"}, %("#{typesdb}"))
      conf.gsub!("/var/lib/collectd", dir)
      conf.gsub!(%r{/etc/memdiag/plugin/}, "#{dir}/etc/")
      conf.gsub!("/run/memdiag", dir)
      conf.gsub!("/var/lib/memdiag/captures", "#{dir}/captures")
      conf.sub!(/SocketGroup "[^"]*"/, %(SocketGroup "#{Process.gid}"))
      path = File.join(dir, "collectd.conf")
      File.write(path, conf)
      env = ENV["MEMDIAG_TEST_PRELOAD"].to_s.empty? ? {} : { "LD_PRELOAD" => ENV["MEMDIAG_TEST_PRELOAD"] }
      out, st = Open3.capture2e(env, collectd, "-T", "-C", path)
      assert st.success?, out
      refute_match(/Parsing the config file failed|memdiag plugin:.*(unknown|invalid|rejected|not started)/, out)
      assert_match(/memdiag plugin: listening on/, out)
    end
  end

  # MEMDIAG_* variables the hook reads: string literals in its C core and
  # Ruby library (as docs.reference finds them).
  def hook_variables
    files = Dir[File.join(TOP, "worker-hook/**/*.{c,h,rb}")]
    files.flat_map { |f| File.read(f).scan(/["'](MEMDIAG_[A-Z][A-Z0-9_]*)(?=["'=])/).flatten }.uniq
  end
end
