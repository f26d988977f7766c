# frozen_string_literal: true

# gen-man.rb PAGE.md REFERENCE.md VERSION OUT: the man page OUT (roff), made
# at build time from PAGE.md (conf/man/) and the reference REFERENCE.md
# (docs/configuration.md), so that a man page cannot drift from the
# reference: the options, verbs, keys and variables come from the
# reference's tables, never from a copy.
#
# PAGE.md is kramdown (https://kramdown.gettalong.org) with a title line
# "# name(section) -- description" and these directive lines:
#   @section HEADING            the body of the reference's section HEADING
#                               (a whole heading line, "### Verbs"), up to the
#                               next heading: its prose, and each table as a
#                               list of entries
#   @tables HEADING [WORD]      only the section's tables; with WORD, only the
#                               rows that mention it
#   @prose HEADING              only the section's prose (no code, no table)
#   @code HEADING               only the section's first code block
# A table row becomes an entry: its first cell (and the second when that
# column is "value" or "arguments") is the term; the column whose header
# starts with "what" (or is "written as" or "values"; else the last) is the text, followed by the other
# cells as "Header: cell". Links become their text: a man page cannot
# follow them.
# kramdown's man converter (Debian's ruby-kramdown) writes the roff.
require "kramdown"

module MdMan
  module_function

  # section HEADING => its lines up to the next heading (any level).
  def section(reference, heading)
    lines = reference.lines(chomp: true)
    start = lines.index(heading)
    raise ArgumentError, "the reference has no heading line '#{heading}'" unless start

    body = lines[(start + 1)..].take_while { |l| !l.start_with?("#") }
    drop_comments(body)
  end

  def drop_comments(lines)
    text = lines.join("\n").gsub(/<!--.*?-->/m, "")
    text.lines(chomp: true)
  end

  def cells(row)
    row.strip.delete_prefix("|").delete_suffix("|").split(/(?<!\\)\|/).map { |c| c.strip.gsub("\\|", "|") }
  end

  def separator?(line) = line.match?(/\A\|[\s:|-]+\|?\s*\z/)

  # Splits LINES into [:text, lines], [:code, lines] and [:table, header,
  # rows] blocks; fenced code becomes kramdown's (~~~).
  def blocks(lines)
    out = []
    split_code(lines).each do |kind, chunk|
      if kind == :code
        out << [:code, ["~~~", *chunk, "~~~"]]
        next
      end
      split_tables(chunk, out)
    end
    out
  end

  def split_code(lines)
    parts = []
    fence = nil
    lines.each do |l|
      if l.start_with?("```")
        fence = fence ? (parts << [:code, fence]) && nil : []
        next
      end
      if fence then fence << l
      elsif parts.last && parts.last[0] == :text then parts.last[1] << l
      else parts << [:text, [l]]
      end
    end
    parts
  end

  def split_tables(lines, out)
    lines.slice_when { |a, b| a.start_with?("|") != b.start_with?("|") }.each do |chunk|
      if chunk.first.start_with?("|")
        header = cells(chunk.first)
        rows = chunk.drop(1).reject { |l| separator?(l) }.map { |l| cells(l) }
        out << [:table, header, rows]
      else
        out << [:text, chunk]
      end
    end
  end

  def entries(header, rows)
    names = header.map(&:downcase)
    term_cols = [0]
    term_cols << 1 if %w[value arguments].include?(names[1])
    text_col = names.index { |h| h.start_with?("what") || ["written as", "values"].include?(h) } || (names.size - 1)
    text_col = names.size - 1 if term_cols.include?(text_col)
    rows.map do |row|
      # The second term cell in italics, its code spans unmarked (roff
      # fonts do not nest) and escaped ("--" is not a dash, "[x]" no link).
      term = term_cols.map { |i| i.zero? ? row[i].to_s : "*#{row[i].to_s.delete('`').gsub(/([\[\]*-])/, '\\\\\1')}*" }
      term = term.reject { |t| t.strip.empty? || %w[** *none*].include?(t) }
      extra = names.each_index.reject { |i| term_cols.include?(i) || i == text_col }.filter_map do |i|
        next if row[i].to_s.empty? || %w[— -].include?(row[i])

        "#{header[i].capitalize}: #{row[i]}."
      end
      text = [row[text_col].to_s, *extra].join(" ").gsub(/\.\.(\s|\z)/, '.\1')
      "#{term.join(' ')}\n: #{text}\n"
    end
  end

  # KINDS: which blocks to keep (:text, :code, :table).
  def render_blocks(blocks, kinds, match: nil)
    blocks.filter_map do |kind, a, b|
      next unless kinds.include?(kind)

      if kind == :table
        rows = match ? b.select { |r| r.join(" ").include?(match) } : b
        entries(a, rows).join("\n")
      else
        a.join("\n")
      end
    end.join("\n\n")
  end

  def first_code(lines)
    code = blocks(lines).find { |kind, _| kind == :code }
    raise ArgumentError, "no code block in that section" unless code

    code[1].join("\n")
  end

  # Reference markup a man page has no use for: anchors, links.
  def plain(text)
    text.gsub(%r{<a id="[^"]*"></a>}, "")
        .gsub(/\[([^\]]+)\]\([^)\s]*\)/, '\1')
  end

  def expand(page, reference)
    page.lines(chomp: true).map do |line|
      case line
      when /\A@section (.+)\z/ then plain(render_blocks(blocks(section(reference, $1)), %i[text code table]))
      when /\A@prose (.+)\z/ then plain(render_blocks(blocks(section(reference, $1)), %i[text]))
      when /\A@tables (#+ [^|]+?)(?: \| (\S+))?\z/
        plain(render_blocks(blocks(section(reference, $1)), %i[table], match: $2))
      when /\A@code (.+)\z/ then first_code(section(reference, Regexp.last_match(1)))
      when /\A@/ then raise ArgumentError, "unknown directive: #{line}"
      else line
      end
    end.join("\n") << "\n"
  end

  def roff(page, reference, version)
    doc = Kramdown::Document.new(expand(page, reference), input: "kramdown", auto_ids: false)
    raise ArgumentError, "kramdown: #{doc.warnings.join('; ')}" unless doc.warnings.empty?

    # groff names Unicode characters in upper-case hex (\[u201C]); kramdown
    # writes lower case, which groff does not know.
    man = doc.to_man.gsub(/\\\[u(\h{4,6})\]/) { "\\[u#{Regexp.last_match(1).upcase}]" }
    # .TH name section [date [source]]: name the version as the source.
    # .TH name section [date [source]]: name the version as the source.
    man.sub(/^\.TH ("[^"]*") ("[^"]*")$/) { %(.TH #{$1} #{$2} "" "memdiag #{version}") }
  end
end

if $PROGRAM_NAME == __FILE__
  abort "usage: gen-man.rb PAGE.md REFERENCE.md VERSION OUT" unless ARGV.size == 4
  page, reference, version, out = ARGV
  text = MdMan.roff(File.read(page), File.read(reference), version)
  File.write("#{out}.tmp", text)
  File.rename("#{out}.tmp", out)
end
