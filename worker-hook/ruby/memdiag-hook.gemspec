# frozen_string_literal: true

# The memdiag worker hook as a gem. Build it with `make gem` from the
# repository (build/memdiag-hook-VERSION.gem): that vendors the C sources and
# the generated protobuf-c code the extension compiles from.
require_relative "lib/memdiag/hook/version"

Gem::Specification.new do |s|
  s.name = "memdiag-hook"
  s.version = Memdiag::Hook::VERSION
  s.summary = "Worker hook for memdiag: heap dumps, GC profiles and thread dumps on request"
  s.description = <<~TEXT
    Runs inside a Ruby worker (Puma, Unicorn, Sidekiq, a plain script) and
    connects over mutual TLS to memdiag, a collectd plugin that watches the
    workers' memory. When the plugin detects a leak, or an operator asks with
    memdiagctl, the hook takes heap dumps (optionally in a forked child), GC
    profiles, allocation traces and thread and fiber dumps. Load it with
    RUBYOPT=-rmemdiag/hook/auto or Memdiag::Hook.start.
  TEXT
  s.authors = ["memdiag"]
  s.license = "MIT"
  # The same page as the Debian packages' Homepage (MEMDIAG_HOMEPAGE in
  # conf/packaging/PackageDocs.cmake; tests/integration/gem checks they agree).
  s.homepage = "https://github.com/memdiag/memdiag"
  s.metadata = { "changelog_uri" => "#{s.homepage}/blob/main/CHANGELOG.md" }
  s.required_ruby_version = ">= 3.1"
  s.files = Dir.chdir(__dir__) do
    Dir["lib/**/*.rb", "ext/memdiag_hook/**/*.{rb,c,h}", "memdiag-hook.gemspec", "LICENSE", "CHANGELOG.md"].sort
  end
  s.extensions = ["ext/memdiag_hook/extconf.rb"]
  s.require_paths = ["lib"]
end
