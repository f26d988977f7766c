# The socket: default name supervisor.ipc in collectd's BaseDir, SocketMode
# and SocketGroup applied; operators get a status report through it.
. "$(dirname "$0")/lib.sh"

group=$(getent group daemon >/dev/null && echo daemon || id -gn)
write_conf "  SocketMode \"0600\"
  SocketGroup \"$group\""
sed -i '/^  Socket "/d' "$T/collectd.conf"
SOCK="$T/supervisor.ipc"
export MEMDIAG_SOCKET="$SOCK"
start_collectd_and_wait
[ "$(stat -c %a "$SOCK")" = 600 ] || fail "socket mode is $(stat -c %a "$SOCK"), not 600"
[ "$(stat -c %G "$SOCK")" = "$group" ] || fail "socket group is $(stat -c %G "$SOCK"), not $group"
log_has "listening on $T/supervisor.ipc (mode 0600)" || fail "socket path not logged"

worker sock
wait_for 20 welcomed sock || fail "worker was not welcomed on the default socket"
control status >"$T/status.out" || fail "status failed: $(cat "$T/status.out")"
grep -q '^version=[0-9].* workers=1$' "$T/status.out" || fail "status report: $(cat "$T/status.out")"

note "the socket file goes away with collectd"
kill "$COLLECTD_PID"; wait "$COLLECTD_PID" 2>/dev/null || true; COLLECTD_PID=""
[ -e "$SOCK" ] && fail "socket file left behind"
echo PASS
