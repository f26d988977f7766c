# Operator requests relayed to a worker and the answers relayed back; an
# unknown connection ID, a worker that never answers (timeout), a worker
# that exits, one that stops sending heartbeats; a reconnecting worker gets
# a new connection ID.
. "$(dirname "$0")/lib.sh"

write_conf ""
start_collectd_and_wait

worker one
ONE=$WPID
worker two
TWO=$WPID
wait_for 20 welcomed one || fail "one was not welcomed"
wait_for 20 welcomed two || fail "two was not welcomed"
ID1=$(conn_id one)
ID2=$(conn_id two)

note "ping and thread_dump through the plugin"
control ping "$ID1" >"$T/ping.out" || fail "ping failed: $(cat "$T/ping.out")"
grep -q 'reply status=ok data=hi' "$T/ping.out" || fail "ping reply: $(cat "$T/ping.out")"
control thread_dump "$ID2" >"$T/td.out" || fail "thread_dump failed: $(cat "$T/td.out")"
grep -q 'data=test worker: main thread idle' "$T/td.out" || fail "thread_dump reply: $(cat "$T/td.out")"
log_has "runs thread_dump on worker $ID2" || fail "operator request not logged"

note "unknown connection ID"
if control ping 999 >"$T/unknown.out"; then fail "ping to 999 succeeded"; fi
grep -q 'status=unknown' "$T/unknown.out" || fail "unknown ID status: $(cat "$T/unknown.out")"
grep -q 'no worker with connection ID 999' "$T/unknown.out" || fail "unknown ID message: $(cat "$T/unknown.out")"

note "an operation the worker did not announce is refused by the plugin"
if control memory_dump "$ID1" >"$T/unsup.out"; then fail "memory_dump to the test worker succeeded"; fi
grep -q 'status=unsupported' "$T/unsup.out" || fail "unsupported status: $(cat "$T/unsup.out")"
grep -q "does not offer memory_dump" "$T/unsup.out" || fail "unsupported message: $(cat "$T/unsup.out")"

note "a request the worker never answers times out"
if control scheduler_dump "$ID1" 1000 >"$T/timeout.out"; then fail "scheduler_dump did not time out"; fi
grep -q 'status=timeout' "$T/timeout.out" || fail "timeout status: $(cat "$T/timeout.out")"
control ping "$ID1" >/dev/null || fail "worker one unusable after a timeout"

note "a worker that exits disappears"
kill "$TWO"
wait_for 10 sh -c "! '$MDP_TEST_WORKER' control --cert '$C/operator.pem' --key '$C/operator.key' list | grep -q 'id=$ID2 '" ||
  fail "exited worker still listed"
if control ping "$ID2" >"$T/gone.out"; then fail "ping to an exited worker succeeded"; fi
grep -q 'status=unknown' "$T/gone.out" || fail "exited worker status: $(cat "$T/gone.out")"

note "a worker that stops its heartbeats is forgotten"
kill -STOP "$ONE"
wait_for 15 log_has "forgetting worker $ID1" || fail "silent worker not forgotten"
kill -CONT "$ONE"
control list >"$T/list.out"
grep -q "id=$ID1 " "$T/list.out" && fail "silent worker still listed"

note "a new connection gets a new ID"
worker three
wait_for 20 welcomed three || fail "three was not welcomed"
ID3=$(conn_id three)
[ "$ID3" -gt "$ID2" ] && [ "$ID3" -gt "$ID1" ] || fail "connection ID $ID3 reused"
collectd_alive || fail "collectd died"
echo PASS
