# docs/configuration.md is the one reference: every <Plugin memdiag> key the
# plugin accepts, every memdiagctl verb and every MEMDIAG_* variable the
# product reads must have exactly one entry there (a heading or a table row
# whose first cell names it), so that the reference cannot drift from the
# code and no key is documented twice. No other page keeps a table of keys
# or variables (they link to the reference). The README is the front door:
# short, and linking to the reference. Links between the pages must land.
#
# The names are taken from the sources, not from a list kept here:
#   keys       strcasecmp(<anything>, "Key") in plugin/**/*.c (memdiagctl's
#              own sources excluded), plus {"Key", ...} and {.name = "Key"}
#              key-table entries (keys/keys.h) in the plugin's *config*.c
#              files
#   verbs      the verb table in plugin/ctl/cmd.c, plus verbs main.c sends
#              elsewhere (strcmp(argv[i], "replay"))
#   variables  "MEMDIAG_X" (or "MEMDIAG_X=...") string literals in the
#              plugin, memdiagctl, the hook's C core and its Ruby library
# Set MEMDIAG_DOCS_TOP to check another checkout (the test's own check that
# it can fail uses this).
require "minitest/autorun"

class ReferenceTest < Minitest::Test
  TOP = ENV["MEMDIAG_DOCS_TOP"] || File.expand_path("../../..", __dir__)
  REFERENCE = "docs/configuration.md"
  README_MAX_LINES = 220

  def read(path) = File.read(File.join(TOP, path))

  def sources(*globs) = globs.flat_map { |g| Dir[File.join(TOP, g)] }.sort.uniq

  def plugin_c_files = sources("plugin/**/*.c").reject { |f| f.include?("/plugin/ctl/") }

  def config_keys
    @config_keys ||= plugin_c_files.flat_map do |f|
      text = File.read(f)
      keys = text.scan(/\bstrcasecmp\(\s*[\w.\->\[\]]+\s*,\s*"([A-Z][A-Za-z0-9]+)"/).flatten
      if File.basename(f).include?("config")
        keys += text.scan(/\{\s*"([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)"\s*,/).flatten
        keys += text.scan(/\{\s*\.name\s*=\s*"([A-Z][A-Za-z0-9]+)"/).flatten
      end
      keys
    end.uniq.sort
  end

  def verbs
    @verbs ||= begin
      table = read("plugin/ctl/cmd.c").scan(/\{\s*"([a-z_]+)",\s*MDCTL_KIND_/).flatten
      others = sources("plugin/ctl/main.c").flat_map do |f|
        File.read(f).scan(/strcmp\(\s*argv\[\w+\]\s*,\s*"([a-z][a-z_]*)"\s*\)/).flatten
      end
      (table + others).uniq.sort
    end
  end

  def env_vars
    files = sources("plugin/**/*.c", "plugin/**/*.h", "worker-hook/**/*.c", "worker-hook/**/*.h",
                    "worker-hook/**/*.rb")
    @env_vars ||= files.flat_map do |f|
      File.read(f).scan(/["'](MEMDIAG_[A-Z][A-Z0-9_]*)(?=["'=])/).flatten
    end.uniq.sort
  end

  # name => how many entries document it: backquoted names in a heading, or
  # in the first cell of a table row (an <a id> anchor there is ignored).
  def entries
    @entries ||= begin
      counts = Hash.new(0)
      read(REFERENCE).each_line do |line|
        cell = if line.start_with?("#")
                 line
               elsif line.start_with?("|") && line !~ /^\|[\s:|-]+$/
                 line.split("|")[1].to_s
               end
        next unless cell

        cell.scan(/`([^`]+)`/).flatten.each do |code|
          name = code.split(/[\s=]/).first.to_s
          counts[name] += 1 unless name.empty?
        end
      end
      counts
    end
  end

  def check_documented_once(names, what)
    missing = names.select { |n| entries[n].zero? }
    twice = names.select { |n| entries[n] > 1 }
    assert_empty missing, "#{REFERENCE} has no entry (heading or first cell of a table row) for these #{what}"
    assert_empty twice, "#{REFERENCE} documents these #{what} more than once: keep one entry"
  end

  def test_sources_were_found
    assert_operator config_keys.size, :>=, 34, "the key scan found too few keys: #{config_keys}"
    %w[Socket TLSCA MemoryLimit CaptureDirectory RestartSignal].each { |k| assert_includes config_keys, k }
    assert_operator verbs.size, :>=, 12, "the verb scan found too few verbs: #{verbs}"
    assert_includes verbs, "replay"
    assert_includes verbs, "memory_dump"
    %w[MEMDIAG_SOCKET MEMDIAG_DUMP_DIRECTORY MEMDIAG_BACKOFF_MAX_MS].each { |v| assert_includes env_vars, v }
  end

  def test_every_config_key_has_one_entry
    check_documented_once(config_keys, "<Plugin memdiag> keys")
  end

  def test_every_verb_has_one_entry
    check_documented_once(verbs, "memdiagctl verbs")
  end

  def test_every_environment_variable_has_one_entry
    check_documented_once(env_vars, "environment variables")
  end

  # The other pages explain and link; they do not keep key tables of their
  # own (those are the copies that drifted).
  def test_no_other_page_has_an_entry_for_a_key_or_variable
    names = config_keys + env_vars
    pages = sources("README.md", "docs/**/*.md").reject { |f| f.end_with?(REFERENCE) }
    copies = pages.flat_map do |page|
      File.readlines(page).each_with_index.filter_map do |line, i|
        cell = if line.start_with?("|") then line.split("|")[1].to_s
               elsif line.start_with?("#") then line
               end
        next unless cell

        hit = names.find { |n| cell.include?("`#{n}`") }
        "#{page.delete_prefix("#{TOP}/")}:#{i + 1}: #{hit}" if hit
      end
    end
    assert_empty copies, "entries (table rows, headings) for keys or variables outside #{REFERENCE}: link to it instead"
  end

  # A key that is not in the code any more must leave the reference too.
  def test_no_entry_for_a_key_the_plugin_does_not_know
    text = read(REFERENCE)
    section = text[/^## `<Plugin memdiag>` keys\n(.*?)(?=^## )/m]
    refute_nil section, "#{REFERENCE} lost its '## `<Plugin memdiag>` keys' section"
    documented = section.each_line.grep(/^\|/).map { |l| l.split("|")[1].to_s[/`([A-Za-z0-9]+)`/, 1] }.compact
    documented -= ["key"]
    stale = documented - config_keys
    assert_empty stale, "#{REFERENCE} documents keys the plugin does not accept"
  end

  def test_readme_is_short_and_links_to_the_reference
    readme = read("README.md")
    lines = readme.lines.size
    assert_operator lines, :<=, README_MAX_LINES, "README.md has #{lines} lines; it is the front door, keep it short"
    assert_match(%r{\(docs/configuration\.md(#[^)]*)?\)}, readme, "README.md must link to docs/configuration.md")
  end

  # Anchors a page offers: <a id="..."> and its headings, slugged as GitHub
  # does (lower case, punctuation dropped, spaces to hyphens).
  def anchors(path)
    text = File.read(path)
    ids = text.scan(/<a id="([^"]+)">/).flatten
    ids + text.scan(/^#+\s+(.+)$/).flatten.map { |h| h.downcase.gsub(/[^a-z0-9 _-]/, "").tr(" ", "-") }
  end

  def test_reference_anchors_are_unique
    ids = anchors(File.join(TOP, REFERENCE))
    assert_empty ids.tally.select { |_, n| n > 1 }.keys, "duplicate anchors in #{REFERENCE}"
  end

  # Every relative link between the docs lands: the file exists and, with a
  # #fragment, so does the anchor (configuration.md#socket).
  def test_links_between_pages_land
    pages = sources("README.md", "docs/**/*.md")
    broken = pages.flat_map do |page|
      File.read(page).scan(/\]\(([^)\s]*)\)/).flatten.filter_map do |link|
        next if link.match?(%r{\A[a-z]+:}) # http:, mailto:

        file, anchor = link.split("#", 2)
        target = file.empty? ? page : File.expand_path(file, File.dirname(page))
        where = "#{page.delete_prefix("#{TOP}/")}: #{link}"
        next where unless File.exist?(target)
        next unless anchor && target.end_with?(".md")

        where unless anchors(target).include?(anchor)
      end
    end
    assert_empty broken, "links that land nowhere"
  end

  # The example configuration points to the reference instead of repeating it.
  def test_example_configuration_points_to_the_reference
    assert_includes read("conf/memdiag.conf"), REFERENCE
  end
end
