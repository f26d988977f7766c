# frozen_string_literal: true

# debian-changelog.rb CHANGELOG.md VERSION MAINTAINER OUT: CHANGELOG.md in
# the format of a Debian changelog (deb-changelog(5)), which the packages
# install, gzip'd, as /usr/share/doc/PACKAGE/changelog.gz. Each
# "## VERSION (DATE)" section becomes an entry; its list items (and
# paragraphs) become "  * " lines wrapped at 78 columns. The newest section
# must carry VERSION. DATE "unreleased" takes the date of the last commit
# that changed CHANGELOG.md (SOURCE_DATE_EPOCH when set, else now) and the
# distribution UNRELEASED.
require "time"

module MdChangelog
  module_function

  def sections(text)
    text.split(/^## /).drop(1).map do |chunk|
      head, body = chunk.split("\n", 2)
      m = head.match(/\A(\d+\.\d+\.\d+\S*) \((unreleased|\d{4}-\d{2}-\d{2})\)\s*\z/) or
        raise ArgumentError, "CHANGELOG.md: a section heading must be '## VERSION (YYYY-MM-DD|unreleased)', not '## #{head}'"
      { version: m[1], date: m[2], items: items(body.to_s) }
    end
  end

  # Paragraphs and "- " items, each one line of plain text.
  def items(body)
    out = []
    body.each_line(chomp: true) do |line|
      if line.strip.empty? then out << nil
      elsif line.start_with?("- ") then out << line.delete_prefix("- ").strip
      elsif out.last then out[-1] = "#{out.last} #{line.strip}"
      else out << line.strip
      end
    end
    out.compact.map { |i| i.delete("`").gsub("**", "") }
  end

  def wrap(item)
    lines = [+""]
    item.split.each do |word|
      if !lines.last.empty? && lines.last.size + 1 + word.size > 72
        lines << +""
      end
      lines.last << " " unless lines.last.empty?
      lines.last << word
    end
    "  * #{lines.first}\n" + lines.drop(1).map { |l| "    #{l}\n" }.join
  end

  def when_unreleased(changelog)
    epoch = ENV.fetch("SOURCE_DATE_EPOCH", nil)
    epoch ||= IO.popen(["git", "-C", File.dirname(changelog), "log", "-1", "--format=%ct", "--",
                        File.basename(changelog)], err: File::NULL, &:read).strip
    epoch.to_s.empty? ? Time.now.utc : Time.at(Integer(epoch)).utc
  end

  def render(changelog, version, maintainer)
    secs = sections(File.read(changelog))
    raise ArgumentError, "CHANGELOG.md has no section" if secs.empty?
    unless secs.first[:version] == version
      raise ArgumentError, "CHANGELOG.md's newest section is #{secs.first[:version]}, the project is #{version}"
    end

    secs.map do |s|
      released = s[:date] != "unreleased"
      time = released ? Time.utc(*s[:date].split("-").map(&:to_i), 12) : when_unreleased(changelog)
      dist = released ? "unstable" : "UNRELEASED"
      "memdiag (#{s[:version]}) #{dist}; urgency=medium\n\n#{s[:items].map { |i| wrap(i) }.join}\n" \
        " -- #{maintainer}  #{time.strftime("%a, %d %b %Y %H:%M:%S +0000")}\n"
    end.join("\n")
  end
end

if $PROGRAM_NAME == __FILE__
  abort "usage: debian-changelog.rb CHANGELOG.md VERSION MAINTAINER OUT" unless ARGV.size == 4
  changelog, version, maintainer, out = ARGV
  File.write(out, MdChangelog.render(changelog, version, maintainer))
end
