#!/usr/bin/env ruby
# frozen_string_literal: true

# No dependency cycle between the project's C files, at the symbol level.
#
# usage: symbol_cycles.rb BUILD_DIR OBJECT...
#
# Reads each object file's symbol table with nm, maps every undefined global
# to the file that defines it, and draws an edge from the user to the
# definer. A cycle in that graph (A uses B, B uses ... A) fails the test,
# naming every file in it. A file is named by its object's path below
# BUILD_DIR with the CMakeFiles/<target>.dir part taken out
# ("plugin/server/server.c"). Symbols nobody here defines (libc, collectd,
# OpenSSL) are not edges.

require 'open3'

build = ARGV.shift
objects = ARGV.flat_map { |a| a.split(';') }.reject(&:empty?)
abort 'usage: symbol_cycles.rb BUILD_DIR OBJECT...' if build.nil? || objects.empty?

def label(path, build)
  rel = path.start_with?("#{build}/") ? path[(build.length + 1)..] : path
  rel.sub(%r{CMakeFiles/[^/]+\.dir/}, '').sub(/\.o\z/, '')
end

# One nm per question for every object: -A prefixes each line with its file.
def nm(args, objects)
  out, err, status = Open3.capture3('nm', '-A', *args, *objects)
  abort "nm: #{err}" unless status.success?
  out.each_line.map do |line|
    file, rest = line.split(/:(?=[^:]*\z)/, 2)
    [file, rest.split.last]
  end
end

objects.uniq!
defined_by = {}
uses = Hash.new { |h, k| h[k] = [] }
objects.each { |obj| uses[label(obj, build)] = [] }
nm(%w[--defined-only --extern-only], objects).each do |obj, sym|
  name = label(obj, build)
  abort "#{sym} is defined twice: #{defined_by[sym]} and #{name}" if defined_by.key?(sym) && defined_by[sym] != name

  defined_by[sym] = name
end
nm(%w[--undefined-only], objects).each { |obj, sym| uses[label(obj, build)] << sym }

edges = Hash.new { |h, k| h[k] = {} }
uses.each do |file, syms|
  syms.each do |sym|
    target = defined_by[sym]
    next if target.nil? || target == file

    (edges[file][target] ||= []) << sym
  end
end

# Depth-first search; a back edge closes a cycle: report the path from the
# target of that edge around to it again, with one symbol per step.
state = {}
stack = []
cycle = nil
visit = lambda do |node|
  state[node] = :open
  stack << node
  edges[node].each_key do |nxt|
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
(uses.keys + defined_by.values).uniq.sort.each do |node|
  visit.call(node) if state[node].nil? && cycle.nil?
end

files = (uses.keys + defined_by.values).uniq.size
nedges = edges.values.sum(&:size)
if cycle
  steps = cycle.each_cons(2).map { |a, b| "  #{a} -> #{b} (#{edges[a][b].first})" }
  puts "FAIL: dependency cycle: #{cycle.join(' -> ')}"
  puts steps
  exit 1
end
puts "no dependency cycle among #{files} files (#{nedges} file-to-file edges)"
