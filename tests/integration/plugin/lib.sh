# Shared setup for the plugin's integration tests (sourced by test_*.sh).
#
# Makes a temp dir with certificates, a PluginDir holding a copy of the
# built memdiag.so beside collectd's stock csv.so and logfile.so, and starts
# `collectd -f` on a config written there. Everything started is stopped on
# exit. Environment (set by ctest, see tests/integration/plugin/CMakeLists.txt):
# MDP_PLUGIN MDP_TEST_WORKER MDP_CERTS MDP_COLLECTD MDP_COLLECTD_PLUGINS
# MDP_TYPES_DB.
set -eu

T=$(mktemp -d /tmp/mdp-test.XXXXXX)
PIDS=""
COLLECTD_PID=""

cleanup() {
  status=$?
  for p in $PIDS; do kill "$p" 2>/dev/null || true; done
  if [ -n "$COLLECTD_PID" ]; then
    kill "$COLLECTD_PID" 2>/dev/null || true
    wait "$COLLECTD_PID" 2>/dev/null || true
  fi
  if [ $status -ne 0 ] && [ -f "$T/collectd.log" ]; then
    echo "---- collectd.log"; tail -n 60 "$T/collectd.log"
  fi
  rm -rf "$T"
  exit $status
}
trap cleanup EXIT INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "-- $*"; }

"$MDP_CERTS" "$T/certs" >/dev/null 2>&1 || fail "memdiag-certs failed"
C="$T/certs"
mkdir -p "$T/plugins" "$T/csv"
# A regular file, not a symlink: collectd loads what the test built.
cp "$MDP_PLUGIN" "$T/plugins/memdiag.so"
cp "$MDP_COLLECTD_PLUGINS/csv.so" "$MDP_COLLECTD_PLUGINS/logfile.so" "$T/plugins/"
SOCK="$T/memdiag.sock"
export MEMDIAG_SOCKET="$SOCK" MEMDIAG_CA="$C/ca.pem"

# write_conf "extra lines for <Plugin memdiag>"
write_conf() {
  cat > "$T/collectd.conf" <<EOF
Hostname "mdtest"
FQDNLookup false
BaseDir "$T"
PIDFile "$T/collectd.pid"
PluginDir "$T/plugins"
TypesDB "$MDP_TYPES_DB"
Interval 1
LoadPlugin logfile
<Plugin logfile>
  LogLevel info
  File "$T/collectd.log"
  Timestamp true
</Plugin>
LoadPlugin csv
<Plugin csv>
  DataDir "$T/csv"
  StoreRates false
</Plugin>
LoadPlugin memdiag
<Plugin memdiag>
  Socket "$SOCK"
  TLSCertificate "$C/plugin.pem"
  TLSKey "$C/plugin.key"
  TLSCA "$C/ca.pem"
  HeartbeatInterval 1
$1
</Plugin>
EOF
}

start_collectd() {
  "$MDP_COLLECTD" -f -C "$T/collectd.conf" >"$T/collectd.out" 2>&1 &
  COLLECTD_PID=$!
}

# wait_for SECONDS COMMAND...: poll until COMMAND succeeds.
wait_for() {
  limit=$1; shift
  i=0
  while [ $i -lt $((limit * 10)) ]; do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1; i=$((i + 1))
  done
  return 1
}

log_has() { grep -q -- "$1" "$T/collectd.log" 2>/dev/null; }
collectd_alive() { kill -0 "$COLLECTD_PID" 2>/dev/null; }

start_collectd_and_wait() {
  start_collectd
  wait_for 20 test -S "$SOCK" || fail "collectd did not open $SOCK"
}

# worker NAME [options]: start a test worker in the background; its output
# goes to $T/NAME.out. Sets WPID.
worker() {
  name=$1; shift
  "$MDP_TEST_WORKER" worker --cert "$C/worker.pem" --key "$C/worker.key" --name "$name" "$@" \
    >"$T/$name.out" 2>&1 &
  WPID=$!
  PIDS="$PIDS $WPID"
}

welcomed() { grep -q '^welcome connection_id=' "$T/$1.out"; }
conn_id() { sed -n 's/^welcome connection_id=\([0-9]*\).*/\1/p' "$T/$1.out" | head -n 1; }

# control VERB ARGS...: an operator request; output on stdout.
control() {
  "$MDP_TEST_WORKER" control --cert "$C/operator.pem" --key "$C/operator.key" "$@"
}

csv_file() { ls "$T/csv/mdtest/$1/$2"-* 2>/dev/null | head -n 1; }
csv_last() { f=$(csv_file "$1" "$2"); [ -n "$f" ] && tail -n 1 "$f" | cut -d, -f2; }
vmrss_bytes() { awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status"; }
has_csv() { test -n "$(csv_file "$1" "$2")"; }
last_is() { f=$(csv_file "$1" "$2"); [ -n "$f" ] && tail -n 1 "$f" | grep -q ",$3\(\.0*\)\?\$"; }
