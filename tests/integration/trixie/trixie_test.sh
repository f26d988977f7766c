#!/bin/bash
# Debian 13 (trixie: Ruby 3.3, OpenSSL 3.5, gcc 14) as a fleet runs it: a
# trixie chroot made with debootstrap from this machine's Debian mirror
# (cached in MDTX_CACHE, /var/cache/memdiag-trixie, between runs), the gem
# built from this tree (worker-hook/ruby/build-gem) installed there with
# `gem install` (its extension compiled by trixie's gcc against Ruby 3.3
# and OpenSSL 3.5, without a compiler warning), then in the chroot:
#   - the hook's integration tests (tests/integration/hook/*_test.rb,
#     hook_test_silent_plugin included) with the hook loaded from that gem,
#     against this build's mdh-test-server and mdh-core-worker;
#   - the gem test (tests/integration/gem/gem_test.rb): the gem built there
#     with trixie's protoc + protoc-gen-c, installed, and workers and Puma
#     hooked from it registering with collectd running this build's
#     memdiag.so.
# The binaries of this build run in the chroot on trixie's libraries; the
# source and build trees are bind-mounted at their own paths, in a private
# mount namespace (unshare), so nothing stays mounted when the test ends.
# Skips (exit 77) only when there is no cached chroot and the mirror cannot
# be reached. MDTX_ONLY=NAME[,NAME] runs only those hook tests (and no gem
# test unless "gem" is named).
# Environment (tests/integration/trixie/CMakeLists.txt): MDTX_SRC MDTX_BUILD
# MDTX_PROTOC_C MDTX_VERSION MDTX_HOMEPAGE MDTX_TEST_SERVER MDTX_CORE_WORKER MDTX_JE_PREFIXED
# MDTX_PLUGIN MDTX_CTL MDTX_RAWCLIENT MDTX_TEST_WORKER; MDTX_CACHE,
# MDTX_MIRROR (default: the first Debian mirror in /etc/apt/sources.list*).
set -euo pipefail

CACHE=${MDTX_CACHE:-/var/cache/memdiag-trixie}
ROOT=$CACHE/root
SUITE=trixie
# What the chroot holds besides minbase; a change here rebuilds the cache.
PACKAGES="ruby ruby-dev ruby-minitest ruby-bundler build-essential pkg-config
  libssl-dev openssl libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
  zlib1g-dev libzstd1 collectd-core puma unicorn ruby-async ruby-heapy procps"
PACKAGES=$(echo $PACKAGES)
STAMP="suite=$SUITE packages=$PACKAGES"

note() { echo "-- $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot, mounts)"
for tool in debootstrap unshare chroot wget; do
  command -v "$tool" >/dev/null || fail "no $tool: make deps installs it"
done

# The Debian mirror this machine's apt uses: the first URI of a deb source
# for the suite of /etc/os-release (deb822 .sources or one-line .list).
mirror() {
  if [ -n "${MDTX_MIRROR:-}" ]; then echo "$MDTX_MIRROR"; return; fi
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i } /^$/ { exit }' "$f" |
          grep -E '/debian/?$' | head -n 1 || true)
    [ -n "$uri" ] && { echo "${uri%/}"; return; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' "$f" |
          grep -E '/debian/?$' | head -n 1 || true)
    [ -n "$uri" ] && { echo "${uri%/}"; return; }
  done
}

mkdir -p "$CACHE"
exec 9>"$CACHE/lock"
flock 9 # one run at a time builds or uses the chroot

# PACKAGES into the chroot DIR (apt-get from its own sources.list).
install_packages() {
  local dir=$1
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  unshare --mount --propagation private sh -c "
    mount -t proc proc '$dir/proc' && mount --rbind /dev '$dir/dev' &&
    chroot '$dir' sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $PACKAGES && apt-get clean'
  " >"$CACHE/apt.log" 2>&1 || fail "installing into the chroot failed: $(tail -n 30 "$CACHE/apt.log")"
  echo "$STAMP" >"$dir/.memdiag-stamp"
}

build_chroot() {
  local url=$1 new=$CACHE/root.new start
  start=$(date +%s)
  rm -rf "$new"
  note "debootstrap --variant=minbase $SUITE from $url (cold cache)"
  debootstrap --variant=minbase "$SUITE" "$new" "$url" >"$CACHE/debootstrap.log" 2>&1 ||
    fail "debootstrap failed: $(tail -n 20 "$CACHE/debootstrap.log")"
  note "debootstrap: $(($(date +%s) - start)) s"
  # No service starts in the chroot while packages are installed.
  printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
  chmod 755 "$new/usr/sbin/policy-rc.d"
  install_packages "$new"
  rm -rf "$ROOT"
  mv "$new" "$ROOT"
  note "chroot ready: $(($(date +%s) - start)) s, $(du -sh "$ROOT" | cut -f1)"
}

if [ -f "$ROOT/.memdiag-stamp" ] && [ "$(cat "$ROOT/.memdiag-stamp")" = "$STAMP" ]; then
  note "cached trixie chroot: $ROOT"
else
  url=$(mirror)
  [ -n "$url" ] || skip "no Debian mirror in /etc/apt/sources.list* (set MDTX_MIRROR)"
  wget -q -T 15 -t 2 -O /dev/null "$url/dists/$SUITE/Release" ||
    skip "the Debian mirror $url is unreachable (no $url/dists/$SUITE/Release) and no chroot is cached in $CACHE"
  if [ -f "$ROOT/.memdiag-stamp" ] && grep -q "^suite=$SUITE " "$ROOT/.memdiag-stamp"; then
    note "cached trixie chroot with another package list: apt-get install into it"
    start=$(date +%s)
    install_packages "$ROOT"
    note "installed: $(($(date +%s) - start)) s"
  else
    build_chroot "$url"
  fi
fi

# What a run killed before its trap left (the lock says none is running).
rm -rf "$ROOT"/tmp/memdiag-run.* "$ROOT"/tmp/mdh* "$ROOT"/tmp/memdiag-*
RUN=$(mktemp -d "$ROOT/tmp/memdiag-run.XXXXXX")
chmod 755 "$RUN"
IN=${RUN#"$ROOT"} # the same directory as the chroot sees it
mkdir "$RUN/gem-build"
trap 'rm -rf "$RUN"' EXIT

note "versions in the chroot"
chroot "$ROOT" sh -c 'ruby --version; openssl version; gcc --version | head -n 1; . /etc/os-release; echo "$PRETTY_NAME"' |
  tee "$RUN/versions"
grep -q '^ruby 3\.3' "$RUN/versions" || fail "the chroot's Ruby is not 3.3"

note "the gem from this tree: build-gem here, gem install in the chroot"
sh "$MDTX_SRC/worker-hook/ruby/build-gem" "$MDTX_SRC" "$RUN/out" "$MDTX_PROTOC_C" "$MDTX_VERSION" >"$RUN/build-gem.log" 2>&1 ||
  fail "build-gem: $(cat "$RUN/build-gem.log")"
GEM=$IN/out/memdiag-hook-$MDTX_VERSION.gem
HOME_IN=$IN/gemhome
chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  gem install --local --no-document --install-dir "$HOME_IN" "$GEM" >"$RUN/gem-install.log" 2>&1 ||
  fail "gem install in the chroot: $(cat "$RUN/gem-install.log")"
MAKE_OUT=$(find "$RUN/gemhome/extensions" -name gem_make.out | head -n 1)
[ -n "$MAKE_OUT" ] || fail "gem install left no gem_make.out"
if grep -E 'warning:' "$MAKE_OUT"; then fail "the extension compiled with warnings on trixie (above)"; fi
HOOK_LIB=$HOME_IN/gems/memdiag-hook-$MDTX_VERSION/lib
[ -f "$ROOT$HOOK_LIB/memdiag/hook_native.so" ] || fail "the installed gem has no lib/memdiag/hook_native.so"
echo "built and installed without a compiler warning: $HOOK_LIB"

want() { [ -z "${MDTX_ONLY:-}" ] || case ",$MDTX_ONLY," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

# hook_heap_profile reads its profiles with `go tool pprof`: the host's Go
# toolchain (static binaries) is lent to the chroot read-only, at its own
# path, rather than installing golang-go there.
MDTX_GOROOT=$(go env GOROOT 2>/dev/null || true)
go_mount=true
if [ -n "$MDTX_GOROOT" ] && [ -d "$MDTX_GOROOT" ]; then
  mkdir -p "$ROOT$MDTX_GOROOT"
  go_mount="mount --bind '$MDTX_GOROOT' '$ROOT$MDTX_GOROOT' && mount -o remount,bind,ro '$ROOT$MDTX_GOROOT'"
fi

# The tests, in one private mount namespace: /proc, /dev, and the source
# and build trees at their own paths (read-only).
cat >"$RUN/run.sh" <<EOF
set -u
failed=""
cd "$IN"
export PATH=${MDTX_GOROOT:+$MDTX_GOROOT/bin:}/usr/sbin:/usr/bin:/sbin:/bin HOME=$IN LANG=C.UTF-8
export MEMDIAG_TEST_SERVER="$MDTX_TEST_SERVER" MEMDIAG_CORE_WORKER="$MDTX_CORE_WORKER"
export MEMDIAG_TEST_JE_PREFIXED="$MDTX_JE_PREFIXED"
export MEMDIAG_HOOK_LIB="$HOOK_LIB" MEMDIAG_CERTS_TOOL="$MDTX_SRC/conf/memdiag-certs"
for t in $(cd "$MDTX_SRC/tests/integration/hook" && ls ./*_test.rb | sed 's|^\./||; s|_test\.rb$||' | while read -r n; do want "$n" && echo "$n"; done | tr '\n' ' '); do
  s=\$(date +%s)
  if ruby "$MDTX_SRC/tests/integration/hook/\${t}_test.rb" >"$IN/hook_\$t.log" 2>&1; then r=ok; else r=FAILED; failed="\$failed hook_\$t"; fi
  echo "hook_\$t: \$r (\$((\$(date +%s) - s)) s): \$(grep -E '^[0-9]+ runs' "$IN/hook_\$t.log" | tail -n 1)"
done
if [ "$(want gem && echo yes)" = yes ]; then
  s=\$(date +%s)
  if env MEMDIAG_E2E_CTL="$MDTX_CTL" MEMDIAG_E2E_PLUGIN="$MDTX_PLUGIN" MEMDIAG_E2E_RAWCLIENT="$MDTX_RAWCLIENT" \\
      MEMDIAG_E2E_TEST_WORKER="$MDTX_TEST_WORKER" MEMDIAG_E2E_HOOK_LIB="$HOOK_LIB" \\
      MEMDIAG_E2E_CERTS_TOOL="$MDTX_SRC/conf/memdiag-certs" MEMDIAG_E2E_COLLECTD=/usr/sbin/collectd \\
      MEMDIAG_E2E_COLLECTD_PLUGIN_DIR=/usr/lib/collectd MEMDIAG_E2E_TYPES_DB=/usr/share/collectd/types.db \\
      MEMDIAG_E2E_RUBY=/usr/bin/ruby MEMDIAG_GEM_BUILD="$IN/gem-build" MEMDIAG_GEM_VERSION="$MDTX_VERSION" \\
      MEMDIAG_GEM_PROTOC_C="protoc --plugin=protoc-gen-c=/usr/bin/protoc-gen-c" MEMDIAG_GEM_HOMEPAGE="$MDTX_HOMEPAGE" \\
      ruby "$MDTX_SRC/tests/integration/gem/gem_test.rb" >"$IN/gem_install.log" 2>&1; then r=ok; else r=FAILED; failed="\$failed gem_install"; fi
  echo "gem_install: \$r (\$((\$(date +%s) - s)) s): \$(grep -E '^[0-9]+ runs' "$IN/gem_install.log" | tail -n 1)"
fi
echo "\$failed" >"$IN/failed"
EOF

note "the hook's integration tests and the gem test on trixie"
mkdir -p "$ROOT$MDTX_SRC" "$ROOT$MDTX_BUILD"
MDTX_ONLY=${MDTX_ONLY:-} unshare --mount --propagation private bash -c "
  set -e
  mount -t proc proc '$ROOT/proc'
  mount --rbind /dev '$ROOT/dev'
  mount --bind '$MDTX_SRC' '$ROOT$MDTX_SRC' && mount -o remount,bind,ro '$ROOT$MDTX_SRC'
  mount --bind '$MDTX_BUILD' '$ROOT$MDTX_BUILD' && mount -o remount,bind,ro '$ROOT$MDTX_BUILD'
  $go_mount
  chroot '$ROOT' bash '$IN/run.sh'
"
failed=$(cat "$RUN/failed")
if [ -n "$failed" ]; then
  for t in $failed; do echo "---- $t"; tail -n 60 "$RUN/$t.log"; done
  fail "on Debian 13:$failed"
fi
echo "PASS"
