# A worker's answer that fits in MaxFrameSize, wrapped for the operator, no
# longer does. The operator gets an error saying so on a connection that
# stays usable; the plugin keeps serving the worker.
. "$(dirname "$0")/lib.sh"

write_conf "  MaxFrameSize 4096"
start_collectd_and_wait
worker big --dump-frame 4096
wait_for 20 welcomed big || fail "big was not welcomed"
id=$(conn_id big)
set +e
control thread_dump "$id" >"$T/dump.out" 2>&1
rc=$?
set -e
cat "$T/dump.out"
[ $rc -eq 3 ] || fail "thread_dump exited $rc, expected 3 (an error reply)"
grep -q "^status=error" "$T/dump.out" || fail "no error status for the operator"
grep -q "^error=.*MaxFrameSize" "$T/dump.out" || fail "the error does not name MaxFrameSize"
control ping "$id" | grep -q "^reply status=ok" || fail "ping after the big answer failed"
collectd_alive || fail "collectd died"
echo PASS
