#!/usr/bin/env ruby
# frozen_string_literal: true

# The folders are the layers: every library and program of the tree (the
# plugin's modules, memdiagctl, the wire library, the hook's C core and its
# Ruby extension) is held to one table of allowed folder-to-folder edges
# (layers.txt), at two levels:
#
# - symbols: each object file's undefined globals are resolved (nm) to the
#   object that defines them; the edge runs from the user's folder to the
#   definer's. No cycle between files either (a file-level cycle inside a
#   folder is a tangle too).
# - #include lines of every .c and .h under the source folders, resolved as
#   the compiler does (the file's own folder first, then the include roots).
#
# It fails naming each edge outside the table (with a file and a symbol or
# header that makes it), a cycle of folders or of files, a folder the table
# does not know, and a line of the table no file uses any more.
#
# usage: layers.rb --table FILE --source DIR --build DIR [--sources DIR...]
#                  OBJECT...   (objects may also come ';'-separated)

require 'open3'
require 'optparse'

opts = { sources: [] }
OptionParser.new do |o|
  o.on('--table FILE') { |v| opts[:table] = v }
  o.on('--source DIR') { |v| opts[:source] = File.expand_path(v) }
  o.on('--build DIR') { |v| opts[:build] = File.expand_path(v) }
  o.on('--sources DIR', 'a folder (below --source) whose headers and sources are read') { |v| opts[:sources] << v }
end.parse!
objects = ARGV.flat_map { |a| a.split(';') }.reject(&:empty?).uniq
abort 'usage: layers.rb --table FILE --source DIR --build DIR [--sources DIR...] OBJECT...' \
  unless opts[:table] && opts[:source] && opts[:build] && !objects.empty?

SRC = opts[:source]
BUILD = opts[:build]
failures = []

# --- the table --------------------------------------------------------------
allowed = {}  # folder => { folder => :ok | :known }
aliases = {}  # folder prefix => folder it counts as
known_cycles = [] # lists of files
File.foreach(opts[:table]).with_index(1) do |line, no|
  line = line.sub(/#.*/, '').strip
  next if line.empty?

  if (m = line.match(/\A!cycle:\s*(.+)\z/))
    known_cycles << m[1].split
    next
  end
  if (m = line.match(/\A(\S+)\s*=\s*(\S+)\z/))
    aliases[m[1]] = m[2]
    next
  end
  m = line.match(/\A(\S+):\s*(.*)\z/) or abort "#{opts[:table]}:#{no}: not 'folder: folders...'"
  allowed[m[1]] = m[2].split.to_h { |t| t.start_with?('!') ? [t[1..], :known] : [t, :ok] }
end
folders = allowed.keys

# The folder a file belongs to: the longest table folder (or alias) that
# holds it. Generated files in the build tree count as their source folder.
folder_of = lambda do |rel|
  (aliases.each { |pre, to| return to if rel.start_with?("#{pre}/") })
  folders.select { |f| rel.start_with?("#{f}/") }.max_by(&:length)
end

observed = Hash.new { |h, k| h[k] = {} } # [from, to] => example
add_edge = lambda do |from, to, why|
  return if from.nil? || to.nil? || from == to

  observed[[from, to]][why] = true
end

# --- symbols ----------------------------------------------------------------
def label(path)
  rel = if path.start_with?("#{BUILD}/") then path[(BUILD.length + 1)..]
        elsif path.start_with?("#{SRC}/") then path[(SRC.length + 1)..]
        else path
        end
  rel.sub(%r{CMakeFiles/[^/]+\.dir/}, '').sub(/\.o\z/, '')
end

def nm(args, objects)
  out, err, status = Open3.capture3('nm', '-A', *args, *objects)
  abort "nm: #{err}" unless status.success?
  out.each_line.map do |line|
    file, rest = line.split(/:(?=[^:]*\z)/, 2)
    [file, rest.split.last]
  end
end

defined_by = {}
uses = Hash.new { |h, k| h[k] = [] }
objects.each { |obj| uses[label(obj)] = [] }
nm(%w[--defined-only --extern-only], objects).each do |obj, sym|
  name = label(obj)
  failures << "#{sym} is defined twice: #{defined_by[sym]} and #{name}" if defined_by.key?(sym) && defined_by[sym] != name
  defined_by[sym] = name
end
nm(%w[--undefined-only], objects).each { |obj, sym| uses[label(obj)] << sym }

file_edges = Hash.new { |h, k| h[k] = {} }
uses.each do |file, syms|
  failures << "#{file}: its folder is not in #{File.basename(opts[:table])}" if folder_of.call(file).nil?
  syms.each do |sym|
    target = defined_by[sym]
    next if target.nil? || target == file

    (file_edges[file][target] ||= []) << sym
    add_edge.call(folder_of.call(file), folder_of.call(target), "#{file} calls #{sym} (#{target})")
  end
end

# --- #include lines ---------------------------------------------------------
roots = %w[plugin proto/include worker-hook/include].map { |r| File.join(SRC, r) }
roots << File.join(BUILD, 'proto', 'gen')
opts[:sources].each do |dir|
  Dir.glob(File.join(SRC, dir, '**', '*.{c,h}')).sort.each do |path|
    rel = path[(SRC.length + 1)..]
    from = folder_of.call(rel)
    if from.nil?
      failures << "#{rel}: its folder is not in #{File.basename(opts[:table])}"
      next
    end
    File.foreach(path) do |line|
      next unless (m = line.match(/^\s*#\s*include\s+"([^"]+)"/))

      found = ([File.dirname(path)] + roots).map { |r| File.join(r, m[1]) }.find { |c| File.file?(c) }
      next if found.nil? # collectd's, or another system header

      target = label(File.expand_path(found))
      add_edge.call(from, folder_of.call(target), "#{rel} includes \"#{m[1]}\"")
    end
  end
end

# --- the checks -------------------------------------------------------------
known = []
observed.each do |(from, to), whys|
  case allowed.dig(from, to)
  when :ok then nil
  when :known then known << "KNOWN: #{from} -> #{to} runs against the diagram: #{whys.keys.first}"
  else
    unless allowed.key?(from)
      failures << "#{from}: not in #{File.basename(opts[:table])}"
      next
    end
    failures << "FAIL: edge #{from} -> #{to} is not in the table: #{whys.keys.first}"
  end
end
allowed.each do |from, tos|
  tos.each_key do |to|
    next if observed.key?([from, to])

    failures << "FAIL: #{from} -> #{to} is in the table but no file uses it any more: remove it"
  end
end

# A cycle in a directed graph given as { node => [next...] }: the nodes of
# the first found, first node repeated at the end; nil when there is none.
def find_cycle(graph)
  state = {}
  stack = []
  cycle = nil
  visit = lambda do |node|
    state[node] = :open
    stack << node
    (graph[node] || []).each do |nxt|
      break if cycle

      if state[nxt] == :open
        cycle = stack[stack.index(nxt)..] + [nxt]
      elsif state[nxt].nil?
        visit.call(nxt)
      end
    end
    stack.pop
    state[node] = :done
  end
  graph.keys.sort.each { |n| visit.call(n) if state[n].nil? && cycle.nil? }
  cycle
end

folder_graph = Hash.new { |h, k| h[k] = [] }
observed.each_key { |from, to| folder_graph[from] << to unless allowed.dig(from, to) == :known }
if (c = find_cycle(folder_graph))
  failures << "FAIL: folder cycle: #{c.join(' -> ')}: " +
              c.each_cons(2).map { |a, b| observed[[a, b]].keys.first }.join('; ')
end
table_graph = allowed.to_h { |f, tos| [f, tos.select { |_, k| k == :ok }.keys] }
failures << "FAIL: the table itself has a cycle: #{find_cycle(table_graph).join(' -> ')}" if find_cycle(table_graph)

file_graph = file_edges.transform_values(&:keys)
known_cycles.each do |files|
  sub = files.to_h { |f| [f, file_graph.fetch(f, []) & files] }
  if find_cycle(sub)
    known << "KNOWN: a cycle between #{files.join(' and ')}"
    files.each { |f| file_graph[f] = file_graph.fetch(f, []) - files }
  else
    failures << "FAIL: !cycle #{files.join(' ')} is in the table but there is no cycle any more: remove it"
  end
end
if (c = find_cycle(file_graph))
  failures << "FAIL: dependency cycle: #{c.join(' -> ')}"
  c.each_cons(2) { |a, b| failures << "  #{a} -> #{b} (#{file_edges[a][b].first})" }
end

puts known
if failures.empty?
  puts "layers hold: #{uses.size} object files, #{observed.size} folder edges, " \
       "all in the table (#{known.size} known against the diagram), no cycle"
  exit 0
end
puts failures
exit 1
