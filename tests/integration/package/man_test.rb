# frozen_string_literal: true

# The man pages the package installs (build/man/*.gz, made by
# conf/man/gen-man.rb from conf/man/*.md and docs/configuration.md), as an
# operator meets them: `man -l` renders each one without a groff warning,
# memdiagctl(1) lists the verbs and options `memdiagctl --help` lists, and
# each page has an entry for every name the reference documents in the
# sections it covers (keys, verbs, options, variables), so the pages cannot
# drift from docs/configuration.md or from the program.
# Environment (tests/integration/package/CMakeLists.txt): MDMAN_DIR,
# MDMAN_MEMDIAGCTL; MDMAN_TOP (default: this checkout) names the sources.
require "minitest/autorun"
require "open3"
require "zlib"

class ManPagesTest < Minitest::Test
  TOP = ENV["MDMAN_TOP"] || File.expand_path("../../..", __dir__)
  DIR = ENV.fetch("MDMAN_DIR")
  CTL = ENV.fetch("MDMAN_MEMDIAGCTL")
  PAGES = %w[memdiagctl.1 memdiag-certs.1 collectd-memdiag.5].freeze

  def roff(page) = Zlib::GzipReader.open(File.join(DIR, "#{page}.gz"), &:read)

  # section title => the first word of each .TP term in it, roff escapes
  # undone. With runs: section title => lists of the terms of each run of
  # entries (a paragraph ends a run: VERBS has the verbs, then the arguments).
  def terms(page, runs: false)
    sections = Hash.new { |h, k| h[k] = [[]] }
    current = nil
    lines = roff(page).lines(chomp: true)
    lines.each_with_index do |line, i|
      if (title = line[/\A\.SH "?([^"]+)"?\z/, 1])
        current = title
      elsif current && line == ".P" && !sections[current].last.empty?
        sections[current] << []
      elsif current && line == ".TP"
        term = lines[i + 1].gsub(/\\f[BIRP]/, "").gsub(/\\(.)/, '\1')
        sections[current].last << term.split(/[\s,]/).first
      end
    end
    runs ? sections : sections.transform_values(&:flatten)
  end

  # The first cells' names of the first table in the reference's section
  # HEADING (up to the next heading); with WORD, the rows that mention it.
  def reference_names(heading, word = nil)
    lines = File.read(File.join(TOP, "docs/configuration.md")).lines(chomp: true)
    start = lines.index(heading) or flunk "docs/configuration.md has no '#{heading}'"
    body = lines[(start + 1)..].take_while { |l| !l.start_with?("#") }
    rows = body.drop_while { |l| !l.start_with?("|") }.take_while { |l| l.start_with?("|") }
    rows = rows.drop(2) # header, separator
    rows = rows.select { |r| r.include?(word) } if word
    rows.map { |r| r.split("|")[1][/`([^`]+)`/, 1].split(/[\s=]/).first }
  end

  def test_every_page_renders_without_a_warning
    PAGES.each do |page|
      out, err, st = Open3.capture3({ "MANWIDTH" => "80", "LC_ALL" => "C.UTF-8" }, "man", "--warnings", "-E", "UTF-8",
                                    "-l", File.join(DIR, "#{page}.gz"))
      assert st.success?, "man -l #{page}: #{err}"
      assert_equal "", err, "groff warned on #{page}"
      name = page.sub(/\.\d\z/, "")
      assert_match(/^NAME\n\s+#{Regexp.escape(name)}\s+-\s+\S/, out, "#{page} has no NAME line")
      assert_match(/^SYNOPSIS\n/, out)
      assert_match(/^SEE ALSO\n/, out)
    end
  end

  def help_verbs
    out, st = Open3.capture2e(CTL, "--help")
    assert st.success?, out
    out[/^Verbs:\n(.*?)\n\n/m, 1].lines.grep(/\A  \S/).map { |l| l.split.first }
  end

  def help_options
    out, = Open3.capture2e(CTL, "--help")
    out[/^Options.*?:\n(.*?)\n\n/m, 1].scan(/(?:^|, )(--[a-z]+)/).flatten
  end

  def test_memdiagctl_page_lists_the_verbs_of_help_and_of_the_reference
    man = terms("memdiagctl.1", runs: true)["VERBS"].first
    assert_operator help_verbs.size, :>=, 12, "--help's verb list was not found: #{help_verbs}"
    assert_equal help_verbs.sort, man.sort, "memdiagctl --help and memdiagctl(1) list different verbs"
    assert_equal reference_names("### Verbs").sort, man.sort, "memdiagctl(1) and docs/configuration.md differ"
    out, = Open3.capture2({ "MANWIDTH" => "200" }, "man", "-l", File.join(DIR, "memdiagctl.1.gz"))
    assert_includes out, "replay [Key=Value ...] [--summary] TRACE.csv", "an argument as it is typed"
  end

  def test_memdiagctl_page_lists_the_options_of_help_and_of_the_reference
    man = terms("memdiagctl.1")["OPTIONS"]
    assert_equal reference_names("### Options").sort, man.sort
    missing = help_options - man
    assert_empty missing, "options memdiagctl --help names that memdiagctl(1) lacks"
    assert_equal reference_names("## Environment variables", "memdiagctl").sort,
                 terms("memdiagctl.1")["ENVIRONMENT"].sort
  end

  def test_collectd_page_has_every_key_of_the_reference
    sections = terms("collectd-memdiag.5")
    man = sections.values_at("SOCKET AND CONNECTIONS", "SAMPLING", "DETECTION", "CAPTURE PLANS").flatten
    ref = ["### Socket and connections", "### Sampling", "### Detection", "### Capture plans"].flat_map do |h|
      reference_names(h)
    end
    assert_operator ref.size, :>=, 34, "the reference's key tables were not found"
    assert_equal ref.sort, man.sort, "collectd-memdiag(5) and docs/configuration.md list different keys"
    assert_equal reference_names("### Variables set for CaptureCommand").sort,
                 sections["CAPTURECOMMAND ENVIRONMENT"].sort
    assert_includes sections["VALUE FORMATS"], "duration"
  end

  # memdiag-certs has no entry in the reference: its page names each form
  # of the script's usage line.
  def test_certs_page_names_every_form_of_the_usage
    out, st = Open3.capture2e("sh", File.join(TOP, "conf/memdiag-certs"))
    refute st.success?
    forms = out[/usage: (.*)/, 1].scan(/--[a-z-]+/)
    assert_equal %w[--add --add-expired], forms.sort
    assert_equal ["memdiag-certs", *forms].sort, terms("memdiag-certs.1")["OPTIONS"].sort
    assert_includes roff("memdiag-certs.1"), "MEMDIAG_CERT_DAYS"
    assert_includes File.read(File.join(TOP, "conf/memdiag-certs")), "MEMDIAG_CERT_DAYS"
  end
end
