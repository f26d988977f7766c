# A bad key or value is an error in collectd's log naming the key, and the
# plugin refuses to start (no socket) rather than guess.
. "$(dirname "$0")/lib.sh"

# try "config lines" "expected log text"
try() {
  rm -f "$T/collectd.log" "$SOCK"
  write_conf "$1"
  start_collectd
  wait_for 20 log_has "$2" || fail "log does not say '$2' for: $1"
  wait_for 20 log_has "memdiag plugin: .*\(not start\|rejected\)" || fail "no refusal logged for: $1"
  sleep 1
  [ -S "$SOCK" ] && fail "the plugin started despite: $1"
  kill "$COLLECTD_PID" 2>/dev/null || true
  wait "$COLLECTD_PID" 2>/dev/null || true
  COLLECTD_PID=""
  note "refused: $(echo "$1" | tr -s ' ') -> $2"
}

try "  Sokcet \"/tmp/x\"" 'unknown configuration key "Sokcet"'
try "  Memory rss heap" 'Memory "heap" is not one of rss, pss, private, swap'
try "  SocketMode \"0999\"" 'SocketMode "0999" is not an octal permission'
try "  MaxConnections 0" 'MaxConnections "0" is not a whole number'
try "  Interval \"soon\"" 'Interval "soon" is not a duration'
try "  MaxFrameSize \"12X\"" 'MaxFrameSize "12X" is not a size'
try "  MemoryLimit \"lots\"" 'MemoryLimit'
try "  SocketGroup \"no-such-group-here\"" 'SocketGroup "no-such-group-here": no such group'
try "  RestartAfterCapture true" 'RestartAfterCapture true needs MemoryLimit'
# Missing TLS material is refused at start, naming the key or the file.
sed -i '/TLSKey/d' "$T/collectd.conf"
write_conf "" && sed -i '/TLSKey/d' "$T/collectd.conf"
rm -f "$T/collectd.log"
start_collectd
wait_for 20 log_has "TLSKey is required" || fail "missing TLSKey not named"
kill "$COLLECTD_PID"; wait "$COLLECTD_PID" 2>/dev/null || true; COLLECTD_PID=""
write_conf "" && sed -i "s|$C/plugin.key|$T/nope.key|" "$T/collectd.conf"
rm -f "$T/collectd.log"
start_collectd
wait_for 20 log_has "TLS setup failed (TLSCertificate" || fail "unreadable TLSKey not reported"
echo PASS
