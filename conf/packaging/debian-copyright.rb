# frozen_string_literal: true

# debian-copyright.rb LICENSE OUT: the packages' /usr/share/doc/PACKAGE/copyright
# in Debian's machine-readable format (DEP-5,
# https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/), made
# from the repository's LICENSE so that the two cannot differ: its
# "Copyright (c) ..." line and its MIT (Debian's name: Expat) text.
module MdCopyright
  module_function

  def render(license)
    lines = license.lines(chomp: true)
    raise ArgumentError, "LICENSE is not the MIT licence" unless lines.first&.strip == "MIT License"

    holder = lines.find { |l| l.start_with?("Copyright (c) ") } or raise ArgumentError, "LICENSE has no Copyright line"
    text = lines.drop_while { |l| !l.start_with?("Permission is hereby granted") }
    raise ArgumentError, "LICENSE has no permission notice" if text.empty?

    body = text.map { |l| l.strip.empty? ? " ." : " #{l}" }
    body.pop while body.last == " ."
    <<~DEP5
      Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
      Upstream-Name: memdiag
      Source: https://github.com/memdiag/memdiag

      Files: *
      Copyright: #{holder.delete_prefix('Copyright (c) ')}
      License: Expat

      License: Expat
      #{body.join("\n")}
    DEP5
  end
end

if $PROGRAM_NAME == __FILE__
  abort "usage: debian-copyright.rb LICENSE OUT" unless ARGV.size == 2
  File.write(ARGV[1], MdCopyright.render(File.read(ARGV[0])))
end
