# Fewer arguments (docs/internals/code-style.md, "State and arguments"):
#
#   1. no function of the tree takes more than six parameters (an options
#      struct instead): definitions, declarations and function pointer types
#      in the --params folders (plugin, proto, worker-hook/src);
#   2. no boolean literal is passed to a project function in the --literals
#      folders (plugin): neither `true`/`false` nor 0/1 where the parameter
#      is a bool. A call to anything the tree does not define (collectd,
#      OpenSSL, libc) is not looked at.
#
# A simple C reader, not a compiler: comments, strings, character literals
# and preprocessor lines are blanked first (line numbers kept), then
# functions are found as `name (` at file level, calls as `name (` inside a
# body, arguments split at the commas outside brackets. It fails naming the
# file, line and function; arch.params_detects shows it fails on a fixture.
# There is no list of exceptions: every finding fails.
#
#   ruby params.rb --source DIR --params plugin --params proto ... \
#                  --literals plugin
require "optparse"

MAX_PARAMS = 6
KEYWORDS = %w[if for while switch return sizeof alignof _Alignof _Static_assert
              __attribute__ __typeof__ typeof defined do else case goto _Generic
              offsetof va_arg].freeze

opts = { params: [], literals: [] }
OptionParser.new do |o|
  o.on("--source DIR") { |v| opts[:source] = v }
  o.on("--params DIR") { |v| opts[:params] << v }
  o.on("--literals DIR") { |v| opts[:literals] << v }
end.parse!
abort "usage: params.rb --source DIR --params DIR... --literals DIR..." unless opts[:source]

# The text with comments, strings, characters and preprocessor lines made
# blank (newlines kept).
def blank(text)
  out = +""
  i = 0
  n = text.size
  line_start = true
  while i < n
    c = text[i]
    if line_start && text[i..] =~ /\A[ \t]*#/
      # a directive, with its continuation lines
      j = i
      loop do
        k = text.index("\n", j) || n
        if k > j && text[k - 1] == "\\"
          j = k + 1
        else
          out << text[i...k].gsub(/[^\n]/, " ")
          i = k
          break
        end
      end
      next
    end
    if text[i, 2] == "/*"
      k = text.index("*/", i + 2) || n - 2
      out << text[i...(k + 2)].gsub(/[^\n]/, " ")
      i = k + 2
    elsif text[i, 2] == "//"
      k = text.index("\n", i) || n
      out << " " * (k - i)
      i = k
    elsif c == '"' || c == "'"
      j = i + 1
      j += (text[j] == "\\" ? 2 : 1) while j < n && text[j] != c
      out << c << text[(i + 1)...j].gsub(/[^\n]/, " ") << c
      i = j + 1
    else
      out << c
      i += 1
    end
    line_start = c == "\n" if i <= n
  end
  out
end

# The index just past the bracket that closes the one at `open`.
def closing(text, open)
  depth = 0
  (open...text.size).each do |i|
    case text[i]
    when "(", "[", "{" then depth += 1
    when ")", "]", "}"
      depth -= 1
      return i + 1 if depth.zero?
    end
  end
  text.size
end

# Top-level pieces of "a, b(c, d), e" (brackets and braces respected).
def split_args(s)
  parts = []
  depth = 0
  cur = +""
  s.each_char do |ch|
    case ch
    when "(", "[", "{" then depth += 1
    when ")", "]", "}" then depth -= 1
    end
    if ch == "," && depth.zero?
      parts << cur.strip
      cur = +""
    else
      cur << ch
    end
  end
  parts << cur.strip unless cur.strip.empty? && parts.empty?
  parts
end

def line_of(text, pos) = text[0...pos].count("\n") + 1

Func = Struct.new(:name, :params, :file, :line)

# Functions declared or defined at file level, and function pointer types
# (typedef R (*name)(...), struct members R (*name)(...)).
def functions(rel, text)
  found = []
  depth = 0
  i = 0
  while i < text.size
    ch = text[i]
    # extern "C" { ... } (C++ guards) opens no body
    if (m = text.match(/\Gextern\s*"[^"]*"\s*\{/, i))
      i = m.end(0)
      next
    end
    if ch == "{" || ch == "}"
      depth += ch == "{" ? 1 : -1
      depth = 0 if depth.negative? # the guard's closing brace
      i += 1
      next
    end
    m = text.match(/\G\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(/, i)
    if m
      open = m.end(0) - 1
      close = closing(text, open)
      found << Func.new(m[1], split_args(text[(open + 1)...(close - 1)]), rel, line_of(text, i))
      i = close
      next
    end
    m = depth.zero? && text.match(/\G([A-Za-z_]\w*)\s*\(/, i)
    if m && !KEYWORDS.include?(m[1]) && (i.zero? || text[i - 1] !~ /\w/)
      before = text[0...i].rstrip
      open = m.end(0) - 1
      close = closing(text, open)
      after = text[close..].to_s.lstrip
      # a declarator follows a type (not an operator or a comma of a call)
      if before =~ /[\w*]\z/ && after =~ /\A(\{|;|__attribute__|,|\))/ && before !~ /\b(return|=)\s*\z/
        found << Func.new(m[1], split_args(text[(open + 1)...(close - 1)]), rel, line_of(text, i))
        i = close
        next
      end
    end
    i += 1
  end
  found
end

def param_count(params)
  return 0 if params.empty? || params == ["void"]
  params.size
end

def bool_param?(p) = p =~ /\A(const\s+)?(bool|_Bool)\b/

src = opts[:source]
files = lambda do |dirs|
  dirs.flat_map { |d| Dir.glob(File.join(src, d, "**", "*.{c,h}")) }.sort.uniq
end
texts = {}
(files.call(opts[:params]) + files.call(opts[:literals])).uniq.each do |f|
  texts[f.delete_prefix("#{src}/")] = blank(File.read(f))
end

failures = []
decls = {}
files.call(opts[:params]).each do |f|
  rel = f.delete_prefix("#{src}/")
  functions(rel, texts[rel]).each do |fn|
    decls[fn.name] ||= fn
    n = param_count(fn.params)
    failures << ["#{fn.file}: #{fn.name}", "#{fn.file}:#{fn.line}: #{fn.name} takes #{n} parameters (at most #{MAX_PARAMS}: an options struct)"] if n > MAX_PARAMS
  end
end
# the literal check needs the declarations of every function it may see called
files.call(opts[:literals]).each do |f|
  rel = f.delete_prefix("#{src}/")
  functions(rel, texts[rel]).each { |fn| decls[fn.name] ||= fn }
end

calls = 0
files.call(opts[:literals]).each do |f|
  rel = f.delete_prefix("#{src}/")
  text = texts[rel]
  text.to_enum(:scan, /\b([A-Za-z_]\w*)\s*\(/).each do
    m = Regexp.last_match
    fn = decls[m[1]]
    next unless fn && fn.params.size.positive?
    open = m.end(0) - 1
    args = split_args(text[(open + 1)...(closing(text, open) - 1)])
    calls += 1
    args.each_with_index do |a, k|
      literal = a =~ /\A(true|false)\z/ || (a =~ /\A[01]\z/ && fn.params[k] && bool_param?(fn.params[k]))
      next unless literal
      failures << ["#{rel}: #{m[1]}", "#{rel}:#{line_of(text, m.begin(0))}: #{m[1]}(...) gets the boolean literal " \
                                       "'#{a}' as argument #{k + 1} (a named function or an enum says what it means)"]
    end
  end
end

bad = failures.uniq.map { |_key, text| "FAIL: #{text}" }
bad.each { |l| puts l }
if bad.empty?
  puts "params hold: #{decls.size} functions, none with more than #{MAX_PARAMS} parameters; " \
       "#{calls} calls of project functions, no boolean literal"
  exit 0
end
exit 1
