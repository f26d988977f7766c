# frozen_string_literal: true

# The memdiag-hook gem as an application gets it: built by build-gem (what
# `make gem` runs) into a temp dir, installed with `gem install --local` into
# an empty GEM_HOME, and loaded with no build tree on the load path. A plain
# worker hooked from the installed gem registers with a real collectd and
# memdiag and answers a heap dump; Puma started with `bundle exec` from a
# Gemfile that lists the gem registers its master and workers.
require_relative "../harness/harness"
require "yaml"
require "zlib"

module GemFixture
  TOP = File.expand_path("../../..", __dir__)
  BUILD = E2E.setting("MEMDIAG_GEM_BUILD")
  PROTOC_C = E2E.setting("MEMDIAG_GEM_PROTOC_C")
  VERSION = E2E.setting("MEMDIAG_GEM_VERSION")
  HOMEPAGE = E2E.setting("MEMDIAG_GEM_HOMEPAGE")
  PUMA = ENV.fetch("MEMDIAG_PUMA", "puma")

  # Built and installed once per test process; removed at exit.
  def self.installed
    @installed ||= begin
      dir = Dir.mktmpdir("memdiag-gem-")
      at_exit { FileUtils.rm_rf(dir) unless ENV["MEMDIAG_E2E_KEEP"] }
      out, st = Open3.capture2e("sh", File.join(TOP, "worker-hook/ruby/build-gem"), TOP,
                                File.join(dir, "out"), PROTOC_C, VERSION)
      raise "build-gem failed:\n#{out}" unless st.success?

      gem = File.join(dir, "out", "memdiag-hook-#{VERSION}.gem")
      raise "build-gem made no #{gem}:\n#{out}" unless File.file?(gem)

      home = File.join(dir, "gemhome")
      FileUtils.mkdir_p(home)
      out, st = Open3.capture2e(clean_env(home), "gem", "install", "--local", "--no-document",
                                "--install-dir", home, gem, chdir: dir)
      raise "gem install failed:\n#{out}" unless st.success?

      { dir: dir, gem: gem, home: home }
    end
  end

  # No RUBYOPT/RUBYLIB from the caller, no bundler state: only GEM_PATH.
  def self.clean_env(home, extra_path: [])
    { "GEM_HOME" => home, "GEM_PATH" => [home, *extra_path].join(":"), "RUBYOPT" => nil,
      "RUBYLIB" => nil, "BUNDLE_GEMFILE" => nil, "BUNDLE_BIN_PATH" => nil }
  end

  def installed = GemFixture.installed
  def home = installed[:home]
  def gem_dir = File.join(home, "gems", "memdiag-hook-#{VERSION}")
end

class GemInstallTest < Minitest::Test
  include GemFixture

  def ruby(*args, env: {})
    Open3.capture3(GemFixture.clean_env(home).merge(env), E2E::RUBY, *args, chdir: installed[:dir])
  end

  def test_the_gem_carries_generated_sources_and_no_build_products
    files = IO.popen(["tar", "-xOf", installed[:gem], "metadata.gz"]) { |io| Zlib::GzipReader.new(io).read }
    %w[ext/memdiag_hook/extconf.rb ext/memdiag_hook/hook_native.c
       ext/memdiag_hook/vendor/proto/gen/memdiag.pb-c.c ext/memdiag_hook/vendor/proto/gen/memdiag.pb-c.h
       ext/memdiag_hook/vendor/hook/src/hook.c ext/memdiag_hook/vendor/proto/src/frame.c
       lib/memdiag/hook.rb lib/memdiag/hook/auto.rb].each do |f|
      assert_includes files, "- #{f}\n", "the gem lacks #{f}"
    end
    refute_match(/\.(so|o)$/, files, "the gem carries a build product")
  end

  # What `gem spec` and rubygems.org show a company's review, and a `gem
  # build` that says nothing but what it built.
  def test_gem_spec_names_the_licence_and_homepage_and_gem_build_did_not_warn
    spec = ->(field) { Open3.capture2("gem", "spec", installed[:gem], field).first }
    assert_equal ["MIT"], YAML.safe_load(spec.call("licenses")), "gem spec licenses"
    assert_equal HOMEPAGE, YAML.safe_load(spec.call("homepage")), "gem spec homepage (the packages' Homepage)"
    files = YAML.safe_load(spec.call("files"))
    assert_includes files, "LICENSE"
    assert_includes files, "CHANGELOG.md"
    log = File.read(File.join(installed[:dir], "out", "gem-build.log"))
    assert_match(/Successfully built RubyGem/, log)
    refute_match(/warning/i, log, "gem build warned")
  end

  def test_require_loads_the_extension_built_by_gem_install
    out, err, st = ruby("-e", <<~RUBY)
      require "memdiag/hook"
      puts Memdiag::Hook::VERSION
      puts $LOADED_FEATURES.grep(%r{memdiag/hook_native}).first
      puts $LOAD_PATH
    RUBY
    assert st.success?, err
    version, native, *load_path = out.lines.map(&:chomp)
    assert_equal VERSION, version
    assert native.start_with?(gem_dir), "hook_native.so came from #{native}, not the installed gem"
    assert_empty load_path.select { |p| p.start_with?(TOP) }, "the source or build tree is on the load path"
  end

  def test_auto_without_settings_runs_unhooked_after_one_warning
    out, err, st = ruby("-rmemdiag/hook/auto", "-e",
                        'puts defined?(Memdiag::Hook::Native).inspect; puts $LOADED_FEATURES.grep(/hook_native/)')
    assert st.success?, err
    refute_match(/cannot load/, err)
    assert_match(/MEMDIAG_SOCKET.*not set; this process runs without the memdiag hook/, err)
    assert_match(/"constant"/, out)
    assert_includes out, gem_dir
  end

  def test_a_worker_hooked_from_the_gem_registers_and_dumps
    site = E2E::SharedSite.get("gem")
    # worker.rb uses Debian's async gem, so the system gems are on GEM_PATH;
    # memdiag-hook is only in the empty GEM_HOME it was installed into.
    w = start_gem_worker(site, "gemworker", [E2E::RUBY, "-rmemdiag/hook/auto", File.join(E2E::HERE, "worker.rb")],
                         system_gems: true)
    entry = site.wait_registered(w)
    assert_equal "gemworker", entry["name"]
    maps = File.read("/proc/#{w.pid}/maps")
    assert_includes maps, File.join(gem_dir, "lib/memdiag/hook_native.so"), "the worker runs the installed gem's extension"
    path = File.join(w.dump_dir, "gem-heap.json")
    r = site.ctl("memory_dump", "connection_id=#{entry['connection_id']}", "path=#{path}", "mode=fork")
    assert r.ok?, r.to_s
    objects = E2E.parse_ndjson(path)
    assert objects.any? { |o| o["type"] == "OBJECT" }, "the dump has objects"
    assert_equal 0o600, File.stat(path).mode & 0o777
  end

  def test_puma_under_bundle_exec_registers_master_and_workers
    site = E2E::SharedSite.get("gem")
    app = File.join(site.dir, "app")
    FileUtils.mkdir_p(app)
    File.write(File.join(app, "Gemfile"), <<~RUBY)
      source "https://rubygems.org"
      gem "puma"
      gem "memdiag-hook", "#{VERSION}"
    RUBY
    File.write(File.join(app, "config.ru"), <<~'RUBY')
      run lambda { |env|
        native = $LOADED_FEATURES.grep(%r{memdiag/hook_native}).first
        spec = Gem.loaded_specs["memdiag-hook"]&.full_gem_path
        [200, { "content-type" => "text/plain" }, ["native=#{native}\nspec=#{spec}\n"]]
      }
    RUBY
    http = File.join(app, "puma.sock")
    env = {
      "BUNDLE_GEMFILE" => File.join(app, "Gemfile"), "BUNDLE_USER_HOME" => File.join(app, "bundle-home"),
      "BUNDLE_APP_CONFIG" => File.join(app, ".bundle"), "RUBYOPT" => "-rmemdiag/hook/auto"
    }
    puma = start_gem_worker(site, "puma", ["bundle", "exec", PUMA, "-w", "2", "-t", "1:2", "-b", "unix://#{http}",
                                           "config.ru"], env: env, chdir: app, system_gems: true)
    list = nil
    site.wait_until("puma's master and two workers register") do
      raise "puma exited:\n#{puma.output}" unless puma.alive?

      list = site.workers_json
      %w[puma puma/worker-1 puma/worker-2].all? { |n| list.any? { |e| e["name"] == n } }
    end
    master = list.find { |e| e["name"] == "puma" }
    assert_equal puma.pid, master["pid"], "the master is the process bundle exec started"
    workers = %w[puma/worker-1 puma/worker-2].map { |n| list.find { |e| e["name"] == n } }
    workers.each { |e| assert_equal master["pid"], e["ppid"], "#{e['name']} was forked by the master" }

    site.wait_until("puma serves") { File.socket?(http) }
    body = UNIXSocket.open(http) { |s| s.write("GET / HTTP/1.0\r\n\r\n"); s.read }
    assert_match(%r{^native=#{Regexp.escape(gem_dir)}/}, body, "the worker runs the installed gem's extension")
    assert_match(/^spec=#{Regexp.escape(gem_dir)}$/, body, "the gem is activated from GEM_HOME")
    lock = File.read(File.join(app, "Gemfile.lock"))
    assert_match(/^    memdiag-hook \(#{Regexp.escape(VERSION)}\)$/, lock, "Bundler resolved the gem from the Gemfile")

    path = File.join(puma.dump_dir, "puma-worker.json")
    r = site.ctl("memory_dump", "connection_id=#{workers[0]['connection_id']}", "path=#{path}", "mode=fork")
    assert r.ok?, r.to_s
    refute_empty E2E.parse_ndjson(path)
  end

  private

  # A process hooked from the installed gem alone, tracked by the site so it
  # is stopped at the end.
  def start_gem_worker(site, name, cmd, env: {}, chdir: site.dir, system_gems: false)
    dump_dir = File.join(site.dir, "dumps", name.tr("/", "-"))
    FileUtils.mkdir_p(dump_dir, mode: 0o700)
    tick = File.join(site.dir, "#{name}.tick")
    out = File.join(site.dir, "#{name}.out")
    cmd += [tick] if cmd.last.end_with?("worker.rb")
    extra = system_gems ? Gem.default_path : []
    full_env = GemFixture.clean_env(home, extra_path: extra).merge(
      "MEMDIAG_SOCKET" => site.socket, "MEMDIAG_CERT" => site.cert("worker"),
      "MEMDIAG_KEY" => site.key("worker"), "MEMDIAG_CA" => site.ca, "MEMDIAG_NAME" => name,
      "MEMDIAG_DUMP_DIRECTORY" => dump_dir
    ).merge(env)
    pid = Process.spawn(full_env, *cmd, chdir: chdir, out: [out, "w"], err: %i[child out])
    w = E2E::Worker.new(name: name, pid: pid, tick_file: tick, dump_dir: dump_dir, out_path: out)
    site.workers << w
    w
  end
end
