# The plugin answers every worker heartbeat, so a worker can tell a live
# plugin from one that is stopped but keeps its socket open: a hooked Ruby
# worker whose collectd is SIGSTOPped for longer than three heartbeat
# intervals gives up on that connection and, once collectd runs again,
# registers under a new connection ID (memdiagctl workers shows it).
. "$(dirname "$0")/lib.sh"

HOOK_LIB="$MDP_BUILD/worker-hook/ruby/lib"
CTL="$MDP_BUILD/plugin/memdiagctl"
[ -f "$HOOK_LIB/memdiag/hook/auto.rb" ] || fail "the Ruby hook is not built in $HOOK_LIB"
[ -x "$CTL" ] || fail "memdiagctl is not built in $MDP_BUILD/plugin"

write_conf ""
start_collectd_and_wait

note "each heartbeat comes back with its sequence number"
worker beater --show-heartbeats
wait_for 20 welcomed beater || fail "beater was not welcomed: $(cat "$T/beater.out")"
answered() { [ "$(grep -c '^heartbeat back ' "$T/beater.out")" -ge 3 ]; }
wait_for 30 answered || fail "fewer than 3 heartbeats answered: $(cat "$T/beater.out")"
grep '^heartbeat back ' "$T/beater.out" | head -n 3 >"$T/answers"
cat "$T/answers"
[ "$(sed 's/ sent=.*//' "$T/answers" | tr '\n' ' ')" = "heartbeat back sequence=1 heartbeat back sequence=2 heartbeat back sequence=3 " ] ||
  fail "answers do not echo the worker's sequence: $(cat "$T/answers")"

note "a Ruby worker leaves a stopped collectd and registers again after it resumes"
MEMDIAG_CERT="$C/worker.pem" MEMDIAG_KEY="$C/worker.key" MEMDIAG_NAME="patient" \
  "$MDP_RUBY" -I "$HOOK_LIB" -r memdiag/hook/auto \
  -e '$stdout.sync = true; n = 0; loop { n += 1; puts "work #{n}"; sleep 0.1 }' \
  >"$T/patient.out" 2>"$T/patient.err" &
RPID=$!
PIDS="$PIDS $RPID"

# ctl_id PID: the connection ID memdiagctl workers lists for PID.
ctl_id() {
  MEMDIAG_CERT="$C/operator.pem" MEMDIAG_KEY="$C/operator.key" "$CTL" workers |
    awk -v pid="$1" '$2 == pid { print $1 }'
}
has_id() { [ -n "$(ctl_id "$RPID")" ]; }
wait_for 30 has_id || fail "the Ruby worker did not register: $(cat "$T/patient.err")"
OLD=$(ctl_id "$RPID")
note "registered as connection $OLD; stopping collectd"

kill -STOP "$COLLECTD_PID"
work_at_stop=$(grep -c '^work ' "$T/patient.out")
wait_for 30 grep -q "plugin silent for [0-9]* ms on connection $OLD; reconnecting" "$T/patient.err" ||
  { kill -CONT "$COLLECTD_PID"; fail "the worker did not notice the stopped plugin: $(cat "$T/patient.err")"; }
work_then=$(grep -c '^work ' "$T/patient.out")
kill -CONT "$COLLECTD_PID"
note "collectd resumed"

new_id() { id=$(ctl_id "$RPID"); [ -n "$id" ] && [ "$id" != "$OLD" ]; }
wait_for 60 new_id || fail "the worker did not register again: $(cat "$T/patient.err")"
NEW=$(ctl_id "$RPID")
note "registered again as connection $NEW"
[ "$NEW" -gt "$OLD" ] || fail "new connection ID $NEW is not newer than $OLD"
grep -q "connected to .* as connection $NEW" "$T/patient.err" || fail "reconnection not logged: $(cat "$T/patient.err")"
[ "$(grep -c 'plugin silent for' "$T/patient.err")" -ge 1 ] || fail "silence not logged"

# The worker's own loop ran while its plugin was stopped and still runs.
more_work() { [ "$(grep -c '^work ' "$T/patient.out")" -gt "$work_then" ]; }
[ "$work_then" -gt "$work_at_stop" ] || fail "the worker did no work while collectd was stopped"
wait_for 10 more_work || fail "the worker stopped working"
kill -0 "$RPID" || fail "the Ruby worker died"
cat "$T/patient.err"
collectd_alive || fail "collectd died"
echo PASS
