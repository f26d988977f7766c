# frozen_string_literal: true

# No C file over --max lines (700): a file that long holds more than one
# module (docs/internals/code-style.md). Walks the --sources folders of
# --source for *.c and *.h and fails naming every file over the bound.
#
#   ruby lines.rb --source DIR [--max N] --sources plugin --sources proto ...
require "optparse"

opts = { max: 700, sources: [] }
OptionParser.new do |o|
  o.on("--source DIR") { |v| opts[:source] = v }
  o.on("--max N", Integer) { |v| opts[:max] = v }
  o.on("--sources DIR") { |v| opts[:sources] << v }
end.parse!
abort "lines.rb: --source and at least one --sources are needed" if opts[:source].nil? || opts[:sources].empty?

files = opts[:sources].flat_map do |dir|
  root = File.join(opts[:source], dir)
  abort "lines.rb: no folder #{root}" unless File.directory?(root)
  Dir.glob(File.join(root, "**", "*.{c,h}"))
end
abort "lines.rb: no C file under #{opts[:sources].join(', ')}" if files.empty?

over = files.map { |f| [f, File.foreach(f).count] }.select { |_, n| n > opts[:max] }.sort_by { |_, n| -n }
over.each { |f, n| puts "FAIL: #{f.delete_prefix("#{opts[:source]}/")} has #{n} lines (at most #{opts[:max]})" }
largest = files.map { |f| File.foreach(f).count }.max
puts "#{files.size} C files, the largest #{largest} lines" if over.empty?
exit(over.empty? ? 0 : 1)
