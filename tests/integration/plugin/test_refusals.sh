# Refusals: a client with a foreign CA, an expired certificate, garbage
# bytes, an oversized frame, a worker claiming another PID, a worker that
# never says hello, an operator certificate saying hello, a worker
# certificate sending a control request. Each is refused and logged, while
# collectd keeps running and keeps serving the legitimate worker.
. "$(dirname "$0")/lib.sh"

write_conf "  MaxFrameSize 64K
  HandshakeTimeout 2"
start_collectd_and_wait

worker good
GOOD=$WPID
wait_for 20 welcomed good || fail "good worker was not welcomed: $(cat "$T/good.out")"
wait_for 20 has_csv memdiag-good memory-rss || fail "no values for the good worker"

note "foreign CA"
"$MDP_CERTS" "$T/foreign" >/dev/null 2>&1
if "$MDP_TEST_WORKER" worker --cert "$T/foreign/worker.pem" --key "$T/foreign/worker.key" \
    --ca "$C/ca.pem" --name foreign --exit-after 5 >"$T/foreign.out" 2>&1; then
  grep -q '^welcome' "$T/foreign.out" && fail "a foreign-CA worker was welcomed"
fi
wait_for 10 log_has "memdiag plugin: refused connection from pid" || fail "foreign CA refusal not logged"

note "expired certificate"
"$MDP_CERTS" "$C" --add-expired old worker >/dev/null 2>&1
"$MDP_TEST_WORKER" worker --cert "$C/old.pem" --key "$C/old.key" --name old --exit-after 5 \
  >"$T/old.out" 2>&1 || true
grep -q '^welcome' "$T/old.out" && fail "an expired certificate was welcomed"
wait_for 10 sh -c "grep 'refused connection' '$T/collectd.log' | grep -q expired" ||
  fail "expired certificate refusal not logged with its reason"

note "garbage bytes"
"$MDP_TEST_WORKER" garbage >"$T/garbage.out" 2>&1 || fail "garbage: $(cat "$T/garbage.out")"
n=$(grep -c 'refused connection from pid' "$T/collectd.log")
[ "$n" -ge 3 ] || fail "garbage bytes not logged as a refused connection"

note "oversized frame"
worker big --big-hello 100000
wait_for 10 log_has "larger than the size limit" || fail "oversized frame not logged"
welcomed big && fail "an oversized hello was welcomed"

note "worker claiming another PID"
worker liar --claim-pid 1
wait_for 10 grep -q 'goodbye status=forbidden' "$T/liar.out" || fail "liar not refused: $(cat "$T/liar.out")"
wait_for 5 log_has "it claims pid 1" || fail "pid mismatch not logged with both pids"
log_has "refused worker hello from pid $WPID (SO_PEERCRED): it claims pid 1" || fail "log does not name both pids"

note "worker that never says hello"
worker silent --skip-hello
wait_for 10 log_has "no hello within 2000 ms" || fail "missing hello not logged"

note "operator certificate saying hello"
"$MDP_TEST_WORKER" worker --cert "$C/operator.pem" --key "$C/operator.key" --name op \
  --exit-after 10 >"$T/op.out" 2>&1 || true
grep -q 'goodbye status=forbidden' "$T/op.out" || fail "operator hello not refused: $(cat "$T/op.out")"
log_has "an operator certificate may not register as a worker" || fail "operator hello not logged"

note "worker certificate sending a control request"
worker sneaky --control-after-hello --exit-after 3
wait_for 10 grep -q 'control_reply status=forbidden' "$T/sneaky.out" ||
  fail "worker control not refused: $(cat "$T/sneaky.out")"
log_has "a worker certificate may not run operator requests" || fail "worker control not logged"

note "collectd still serves the good worker"
collectd_alive || fail "collectd died"
kill -0 "$GOOD" || fail "the good worker was dropped"
control list >"$T/list.out" || fail "list failed after the refusals"
grep -q "pid=$GOOD name=good " "$T/list.out" || fail "good worker missing: $(cat "$T/list.out")"
grep -q "name=liar\|name=op \|name=xxx" "$T/list.out" && fail "a refused peer is listed"
before=$(wc -l < "$(csv_file memdiag-good memory-rss)")
wait_for 10 sh -c "[ \$(wc -l < '$(csv_file memdiag-good memory-rss)') -gt $before ]" ||
  fail "no new values for the good worker after the refusals"
echo PASS
