# make package's .deb as a sysadmin gets it: its files and modes, a Depends
# that names the package of every library its binaries link, the sysusers.d
# and tmpfiles.d entries applied to a scratch root, and the extracted files
# at work: memdiagctl runs, memdiag-certs makes certificates, and collectd
# loads memdiag.so from a normal PluginDir (the extracted /usr/lib/collectd)
# with the shipped example configuration, and a worker registers; the
# ruby-memdiag-hook package: its vendor_ruby files, Depends, and a Ruby
# worker hooked from it registering; lintian on both packages (no error,
# no warning), their DEP-5 copyright and Debian changelog, the Maintainer
# the build set, and collectd.service's drop-in as systemd reads it.
# Environment (tests/integration/package/CMakeLists.txt): MDPKG_CPACK
# MDPKG_BUILD MDPKG_VERSION MDPKG_COLLECTD MDPKG_COLLECTD_PLUGINS
# MDPKG_TYPES_DB MDPKG_TEST_WORKER MDPKG_RUBY MDPKG_MAINTAINER.
set -eu

T=$(mktemp -d /tmp/mdpkg-test.XXXXXX)
COLLECTD_PID=""
WPID=""
RPID=""
cleanup() {
  status=$?
  [ -n "$WPID" ] && kill "$WPID" 2>/dev/null || true
  [ -n "$RPID" ] && kill "$RPID" 2>/dev/null || true
  if [ -n "$COLLECTD_PID" ]; then
    kill "$COLLECTD_PID" 2>/dev/null || true
    wait "$COLLECTD_PID" 2>/dev/null || true
  fi
  if [ $status -ne 0 ] && [ -f "$T/collectd.log" ]; then
    echo "---- collectd.log"; tail -n 40 "$T/collectd.log"
  fi
  rm -rf "$T"
  exit $status
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "-- $*"; }
wait_for() {
  limit=$1; shift
  i=0
  while [ $i -lt $((limit * 10)) ]; do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1; i=$((i + 1))
  done
  return 1
}

note "cpack into a scratch directory (what make package runs)"
"$MDPKG_CPACK" -G DEB --config "$MDPKG_BUILD/CPackConfig.cmake" -B "$T/out" >"$T/cpack.log" 2>&1 ||
  fail "cpack failed: $(cat "$T/cpack.log")"
DEB="$T/out/memdiag_${MDPKG_VERSION}_$(dpkg --print-architecture).deb"
[ -f "$DEB" ] || fail "no $DEB; cpack made: $(ls "$T/out")"

note "contents"
dpkg-deb -c "$DEB" >"$T/contents"
cat "$T/contents"
has_file() { # MODE PATH
  grep -Eq "^$1 root/root +[0-9]+ [0-9-]+ [0-9:]+ \./$2\$" "$T/contents" ||
    fail "the package lacks $2 with mode $1 owned by root"
}
has_file -rw-r--r-- usr/lib/collectd/memdiag.so
has_file -rwxr-xr-x usr/bin/memdiagctl
has_file -rwxr-xr-x usr/bin/memdiag-certs
has_file -rw-r--r-- usr/share/doc/memdiag/examples/memdiag.conf
has_file -rw-r--r-- usr/share/doc/memdiag/examples/memdiag-rules.yml
has_file -rw-r--r-- usr/share/doc/memdiag/examples/memdiag.json
has_file -rwxr-xr-x usr/share/doc/memdiag/examples/memdiag-ship-rclone
has_file -rw-r--r-- usr/lib/tmpfiles.d/memdiag.conf
has_file -rw-r--r-- usr/lib/sysusers.d/memdiag.conf
has_file -rw-r--r-- usr/lib/systemd/system/collectd.service.d/memdiag.conf
has_file -rw-r--r-- usr/share/man/man1/memdiagctl.1.gz
has_file -rw-r--r-- usr/share/man/man1/memdiag-certs.1.gz
has_file -rw-r--r-- usr/share/man/man5/collectd-memdiag.5.gz
has_file -rw-r--r-- usr/share/doc/memdiag/copyright
has_file -rw-r--r-- usr/share/doc/memdiag/changelog.gz
if grep -Ev '^d' "$T/contents" |
  grep -Ev ' \./usr/(lib/collectd|bin|share/doc/memdiag|share/man/man[15]|lib/tmpfiles\.d|lib/sysusers\.d|lib/systemd/system/collectd\.service\.d)/'; then
  fail "files outside the expected directories (above)"
fi

note "lintian, as a Debian packager runs it: no error, no warning"
HDEB="$T/out/ruby-memdiag-hook_${MDPKG_VERSION}_$(dpkg --print-architecture).deb"
# Only E: and W: count (I: and P: are advice). An override would need a
# written reason beside it in conf/packaging/ (there is none).
command -v lintian >/dev/null || fail "no lintian (make deps installs it)"
rc=0
lintian --fail-on error,warning --tag-display-limit 0 "$DEB" "$HDEB" >"$T/lintian" 2>&1 || rc=$?
cat "$T/lintian"
[ $rc -eq 0 ] || fail "lintian exited $rc: errors or warnings (above)"
if grep -E '^[EW]: ' "$T/lintian"; then fail "lintian reports errors or warnings (above)"; fi

note "the Maintainer, copyright and changelog a Debian user reads"
MAINT=$(dpkg-deb -f "$DEB" Maintainer)
echo "Maintainer: $MAINT"
[ "$MAINT" = "$MDPKG_MAINTAINER" ] || fail "Maintainer is '$MAINT', the build set '$MDPKG_MAINTAINER'"
[ "$(dpkg-deb -f "$HDEB" Maintainer)" = "$MAINT" ] || fail "the two packages name different maintainers"
mkdir "$T/doc"
for pkg in memdiag ruby-memdiag-hook; do
  d="$T/doc/$pkg"
  mkdir "$d"
  case $pkg in memdiag) f=$DEB ;; *) f=$HDEB ;; esac
  dpkg-deb --fsys-tarfile "$f" | tar -x -C "$d" "./usr/share/doc/$pkg/copyright" "./usr/share/doc/$pkg/changelog.gz" ||
    fail "$pkg lacks usr/share/doc/$pkg/copyright or changelog.gz"
  grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$d/usr/share/doc/$pkg/copyright" ||
    fail "$pkg's copyright is not DEP-5"
  grep -qx 'License: Expat' "$d/usr/share/doc/$pkg/copyright" || fail "$pkg's copyright names no Expat (MIT) licence"
  gzip -dc "$d/usr/share/doc/$pkg/changelog.gz" >"$d/changelog"
  got=$(dpkg-parsechangelog -l "$d/changelog" -S Version) || fail "$pkg's changelog does not parse"
  [ "$got" = "$MDPKG_VERSION" ] || fail "$pkg's changelog is for $got, the package $MDPKG_VERSION"
  dpkg-parsechangelog -l "$d/changelog" -S Maintainer | grep -qxF "$MAINT" || fail "$pkg's changelog is not signed by the Maintainer"
done

note "collectd.service with the package's drop-in: systemd reads it without a complaint"
mkdir -p "$T/units/collectd.service.d"
cp /lib/systemd/system/collectd.service "$T/units/"
dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/lib/systemd/system/collectd.service.d/memdiag.conf \
  >"$T/units/collectd.service.d/memdiag.conf"
grep -qx 'RuntimeDirectory=memdiag' "$T/units/collectd.service.d/memdiag.conf" || fail "the drop-in sets no RuntimeDirectory=memdiag"
SYSTEMD_UNIT_PATH="$T/units:" systemd-analyze verify "$T/units/collectd.service" >"$T/verify" 2>&1 ||
  fail "systemd-analyze verify failed: $(cat "$T/verify")"
if grep -F "memdiag.conf" "$T/verify"; then fail "systemd complains about the drop-in (above)"; fi

note "Depends"
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
echo "Depends: $DEPENDS"
depends_on() {
  printf '%s\n' "$DEPENDS" | tr ',' '\n' | sed 's/^ *//; s/[ :(].*//' | grep -qx "$1" ||
    fail "Depends does not name $1: $DEPENDS"
}
for p in collectd-core libprotobuf-c1 libssl3 openssl libc6; do depends_on "$p"; done

mkdir "$T/x"
dpkg-deb -x "$DEB" "$T/x"
X="$T/x"
# Every library the shipped binaries name as NEEDED belongs to a package Depends names,
# so a library another part starts to link (libzstd, ...) cannot be forgotten.
links_covered() { # BIN...: against $DEPENDS
  for bin in "$@"; do
    ldd "$bin" >"$T/ldd" || fail "ldd $bin failed"
    if grep -q 'not found' "$T/ldd"; then fail "$bin links a library this host lacks: $(cat "$T/ldd")"; fi
    # Its own NEEDED entries; what those link in turn their packages depend on.
    for name in $(readelf -d "$bin" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
      case "$name" in ld-linux*) continue ;; esac
      lib=$(awk -v n="$name" '$1 == n && $2 == "=>" { print $3 }' "$T/ldd")
      [ -n "$lib" ] || fail "$bin needs $name, which ldd did not resolve: $(cat "$T/ldd")"
      real=$(readlink -f "$lib")
      pkg=""
      for cand in "$lib" "$real" "/usr$lib" "/usr$real"; do
        pkg=$(dpkg -S "$cand" 2>/dev/null | head -n 1 | sed 's/[:,].*//') && [ -n "$pkg" ] && break
      done
      [ -n "$pkg" ] || fail "no Debian package owns $lib (linked by $bin)"
      echo "$(basename "$bin") links $lib from $pkg"
      depends_on "$pkg"
    done
  done
}
links_covered "$X/usr/lib/collectd/memdiag.so" "$X/usr/bin/memdiagctl"

note "ruby-memdiag-hook: the hook in Debian Ruby's vendor_ruby"
[ -f "$HDEB" ] || fail "no $HDEB; cpack made: $(ls "$T/out")"
VLIB=$("$MDPKG_RUBY" -e 'print RbConfig::CONFIG["vendordir"]')
VARCH=$("$MDPKG_RUBY" -e 'print RbConfig::CONFIG["vendorarchdir"]')
RUBYPKG=$("$MDPKG_RUBY" -e 'print "ruby#{RbConfig::CONFIG["MAJOR"]}.#{RbConfig::CONFIG["MINOR"]}"')
dpkg-deb -c "$HDEB" >"$T/hcontents"
grep -Eq "^-rw-r--r-- root/root +[0-9]+ [0-9-]+ [0-9:]+ \.$VLIB/memdiag/hook\.rb\$" "$T/hcontents" ||
  fail "ruby-memdiag-hook lacks $VLIB/memdiag/hook.rb: $(cat "$T/hcontents")"
grep -Eq "^-rw-r--r-- root/root +[0-9]+ [0-9-]+ [0-9:]+ \.$VARCH/memdiag/hook_native\.so\$" "$T/hcontents" ||
  fail "ruby-memdiag-hook lacks $VARCH/memdiag/hook_native.so: $(cat "$T/hcontents")"
if grep -Ev '^d' "$T/hcontents" | grep -Fv " .$VLIB/memdiag/" | grep -Fv " .$VARCH/memdiag/" |
  grep -Ev ' \./usr/share/doc/ruby-memdiag-hook/(copyright|changelog\.gz)$'; then
  fail "ruby-memdiag-hook has files outside vendor_ruby's memdiag/ (above)"
fi
DEPENDS=$(dpkg-deb -f "$HDEB" Depends)
echo "Depends: $DEPENDS"
depends_on "$RUBYPKG"
H="$T/h"
mkdir "$H"
dpkg-deb -x "$HDEB" "$H"
links_covered "$H$VARCH/memdiag/hook_native.so"

note "maintainer script and the group and runtime directory it makes"
dpkg-deb -e "$DEB" "$T/control"
[ -x "$T/control/postinst" ] || fail "no executable postinst"
sh -n "$T/control/postinst" || fail "postinst is not valid sh"
R="$T/root"
mkdir -p "$R/etc" "$R/usr/lib"
cp -r "$X/usr/lib/sysusers.d" "$X/usr/lib/tmpfiles.d" "$R/usr/lib/"
systemd-sysusers --root="$R" memdiag.conf || fail "systemd-sysusers rejected the package's entry"
gid=$(awk -F: '$1 == "memdiag" { print $3 }' "$R/etc/group")
[ -n "$gid" ] || fail "sysusers made no memdiag group: $(cat "$R/etc/group")"
systemd-tmpfiles --root="$R" --create memdiag.conf || fail "systemd-tmpfiles rejected the package's entry"
got=$(stat -c '%a %u %g' "$R/run/memdiag") || fail "tmpfiles made no /run/memdiag"
[ "$got" = "750 0 $gid" ] || fail "/run/memdiag is '$got' (mode uid gid), want '750 0 $gid'"

note "the extracted memdiagctl and memdiag-certs run"
"$X/usr/bin/memdiagctl" --version >"$T/version" 2>&1 || fail "memdiagctl --version: $(cat "$T/version")"
grep -q "^memdiagctl $MDPKG_VERSION " "$T/version" || fail "memdiagctl --version said: $(cat "$T/version")"
"$X/usr/bin/memdiag-certs" "$T/certs" >"$T/certs.log" 2>&1 || fail "memdiag-certs: $(cat "$T/certs.log")"
for f in ca.pem plugin.pem plugin.key worker.pem worker.key operator.pem operator.key; do
  [ -f "$T/certs/$f" ] || fail "memdiag-certs did not write $f"
done

note "collectd loads memdiag.so from the extracted /usr/lib/collectd with the example configuration"
PD="$X/usr/lib/collectd"
cp "$MDPKG_COLLECTD_PLUGINS/logfile.so" "$MDPKG_COLLECTD_PLUGINS/csv.so" "$PD/"
mkdir -p "$T/run" "$T/captures"
{
  cat <<CONF
Hostname "pkgtest"
FQDNLookup false
BaseDir "$T"
PIDFile "$T/collectd.pid"
PluginDir "$PD"
TypesDB "$MDPKG_TYPES_DB"
Interval 1
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File "$T/collectd.log"
</Plugin>
LoadPlugin csv
<Plugin csv>
  DataDir "$T/csv"
</Plugin>
CONF
  sed -e "s|/run/memdiag/|$T/run/|; s|/etc/memdiag/|$T/certs/|g; s|/var/tmp/memdiag|$T/captures|" \
    "$X/usr/share/doc/memdiag/examples/memdiag.conf"
} >"$T/collectd.conf"
grep -q "Socket \"$T/run/supervisor.ipc\"" "$T/collectd.conf" || fail "the example has no Socket line to point at $T"
"$MDPKG_COLLECTD" -f -C "$T/collectd.conf" >"$T/collectd.out" 2>&1 &
COLLECTD_PID=$!
wait_for 30 test -S "$T/run/supervisor.ipc" ||
  fail "collectd did not open the socket: $(cat "$T/collectd.out")"
grep -q "plugin_load: plugin \"memdiag\" successfully loaded" "$T/collectd.log" ||
  fail "collectd's log does not show memdiag.so loaded"

export MEMDIAG_SOCKET="$T/run/supervisor.ipc" MEMDIAG_CA="$T/certs/ca.pem"
"$MDPKG_TEST_WORKER" worker --cert "$T/certs/worker.pem" --key "$T/certs/worker.key" \
  --name pkgworker >"$T/worker.out" 2>&1 &
WPID=$!
export MEMDIAG_CERT="$T/certs/operator.pem" MEMDIAG_KEY="$T/certs/operator.key"
listed() { "$X/usr/bin/memdiagctl" workers >"$T/workers" 2>&1 && grep -q "pkgworker" "$T/workers"; }
wait_for 30 listed || fail "the extracted memdiagctl does not list the worker: $(cat "$T/workers" "$T/worker.out")"
cat "$T/workers"

note "a Ruby worker hooked from the extracted ruby-memdiag-hook registers"
env MEMDIAG_CERT="$T/certs/worker.pem" MEMDIAG_KEY="$T/certs/worker.key" MEMDIAG_NAME=pkgruby \
  RUBYOPT= RUBYLIB= "$MDPKG_RUBY" -I "$H$VLIB" -I "$H$VARCH" -rmemdiag/hook/auto \
  -e 'puts $LOADED_FEATURES.grep(%r{memdiag/hook_native}); $stdout.flush; sleep' >"$T/ruby.out" 2>&1 &
RPID=$!
ruby_listed() { "$X/usr/bin/memdiagctl" workers >"$T/workers" 2>&1 && grep -q "pkgruby" "$T/workers"; }
wait_for 60 ruby_listed || fail "the Ruby worker did not register: $(cat "$T/workers" "$T/ruby.out")"
grep -qx "$H$VARCH/memdiag/hook_native.so" "$T/ruby.out" ||
  fail "the worker did not load the package's extension: $(cat "$T/ruby.out")"
wait_for 30 sh -c "ls '$T/csv/pkgtest/memdiag-pkgworker/'memory-rss-* " ||
  fail "no memory values for the worker: $(ls -R "$T/csv" 2>&1 | head -n 20)"
echo "PASS"
