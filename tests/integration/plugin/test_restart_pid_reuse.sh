# RestartAfterCapture signals only the process that registered (issue 11).
# A worker at MemoryLimit is asked for its dump; it forks, leaves the
# connection to the child and exits; a victim (`sleep 600`) is given the
# worker's PID through ns_last_pid; then the child answers the dump. The
# plugin must not signal the victim (before pidfds it did: kill(pid)
# reached whoever held the PID), and says why in the log.
. "$(dirname "$0")/lib.sh"

[ -w /proc/sys/kernel/ns_last_pid ] || { echo "SKIP: ns_last_pid is not writable (needs root)"; exit 0; }
write_conf "  MemoryLimit \"32M\"
  RestartAfterCapture true
  Plan \"dump\"
  CaptureDirectory \"$T/captures\""
start_collectd_and_wait
GO="$T/go"
worker handoff --allocate-mb 64 --handoff-on-dump "$GO"
P=$WPID
wait_for 60 grep -q '^handed off' "$T/handoff.out" || fail "the worker was never asked to dump"
wait "$P" || true # reaped: its PID is free

V=""
n=0
while [ $n -lt 500 ] && [ -z "$V" ]; do
  echo $((P - 1)) > /proc/sys/kernel/ns_last_pid
  sleep 600 &
  v=$!
  if [ "$v" = "$P" ]; then V=$v; else kill "$v"; wait "$v" 2>/dev/null || true; fi
  n=$((n + 1))
done
[ -n "$V" ] || fail "could not give pid $P to a victim (other processes kept taking it)"
PIDS="$PIDS $V"
note "victim sleep 600 holds pid $P"

touch "$GO" # the child answers the dump request now
wait_for 60 sh -c "grep -q 'not sending SIGTERM\|sent SIGTERM' '$T/collectd.log'" ||
  fail "the plugin neither signalled nor said why not"
kill -0 "$V" || fail "the victim holding pid $P was signalled"
log_has "not sending SIGTERM to worker handoff (pid $P): the process that registered has exited" ||
  fail "no log line says why the worker was not signalled"
log_has "sent SIGTERM" && fail "a signal was reported sent"
collectd_alive || fail "collectd died"
echo PASS
