# The README is the product's front door: every configuration key the plugin
# accepts, every memdiagctl verb and every MEMDIAG_* variable the hook or the
# CLI reads must be documented there, and conf/memdiag.conf must list every key.
require "minitest/autorun"

class ReadmeTest < Minitest::Test
  TOP = File.expand_path("../../..", __dir__)

  def read(path) = File.read(File.join(TOP, path))

  def config_keys
    Dir[File.join(TOP, "plugin/**/*.c")].reject { |f| f.include?("/ctl/") }.flat_map do |f|
      File.read(f).scan(/strcasecmp\(\s*(?:k|key)\s*,\s*"([A-Z][A-Za-z]+)"\)/).flatten
    end.uniq
  end

  def verbs
    read("plugin/ctl/cmd.c").scan(/\{\s*"([a-z_]+)",\s*MDCTL_KIND_/).flatten + ["replay"]
  end

  def env_vars
    files = Dir[File.join(TOP, "worker-hook/ruby/lib/**/*.rb")] + Dir[File.join(TOP, "plugin/ctl/*.c")]
    files.flat_map { |f| File.read(f).scan(/\bMEMDIAG_[A-Z_]+\b/) }.uniq
  end

  def test_sources_were_found
    assert_operator config_keys.size, :>=, 30, "the key scan found too few keys: #{config_keys}"
    assert_operator verbs.size, :>=, 12, "the verb scan found too few verbs: #{verbs}"
    assert_includes env_vars, "MEMDIAG_SOCKET"
  end

  def test_every_config_key_is_in_the_readme
    readme = read("README.md")
    missing = config_keys.reject { |k| readme.include?("`#{k}`") }
    assert_empty missing, "README.md does not document these <Plugin memdiag> keys"
  end

  def test_every_config_key_is_in_the_example_config
    conf = read("conf/memdiag.conf")
    missing = config_keys.reject { |k| conf.match?(/^\s*#?#{k}\s/) }
    assert_empty missing, "conf/memdiag.conf does not list these keys"
  end

  def test_every_verb_is_in_the_readme
    readme = read("README.md")
    missing = verbs.reject { |v| readme.include?("`#{v}`") }
    assert_empty missing, "README.md does not document these memdiagctl verbs"
  end

  def test_every_environment_variable_is_in_the_readme
    readme = read("README.md")
    missing = env_vars.reject { |v| readme.include?(v) }
    assert_empty missing, "README.md does not document these variables"
  end
end
