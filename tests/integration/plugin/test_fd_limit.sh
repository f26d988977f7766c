# Out of file descriptors: accept() fails with EMFILE while the connection
# stays queued. The loop must not spin on the readable listening socket nor
# log every attempt, must keep serving the workers it has, and must accept
# the waiting worker once descriptors are free again.
. "$(dirname "$0")/lib.sh"

write_conf ""
# logfile opens its file for every line, which fails without descriptors:
# log to collectd's stderr instead.
sed -i "s|File \"$T/collectd.log\"|File stderr|" "$T/collectd.conf"
LOG="$T/collectd.out"
log_has() { grep -q -- "$1" "$LOG" 2>/dev/null; }
start_collectd_and_wait
worker first --show-heartbeats
wait_for 20 welcomed first || fail "first was not welcomed"
# A soft limit below the descriptors already open: every new one fails with
# EMFILE, the ones open keep working.
prlimit --pid "$COLLECTD_PID" --nofile=3:1024 || fail "prlimit failed"
worker second
wait_for 20 log_has "accept on .* failed" || fail "the accept failure was not logged"
# A spinning loop writes thousands of lines a second; give it time to show.
sleep 2
n=$(grep -c "accept on .* failed" "$LOG")
note "$n accept failure line(s) logged"
[ "$n" -eq 1 ] || fail "$n lines about the failed accept: the loop spins on the listening socket"
before=$(grep -c '^heartbeat' "$T/first.out" || true)
wait_for 20 sh -c "[ \$(grep -c '^heartbeat' '$T/first.out') -gt $before ]" ||
  fail "first gets no heartbeat answers while accept fails"
prlimit --pid "$COLLECTD_PID" --nofile=1024:1024 || fail "prlimit failed"
wait_for 20 welcomed second || fail "second was not welcomed once descriptors were free"
log_has "accepting connections on .* again" || fail "the recovery was not logged"
collectd_alive || fail "collectd died"
echo PASS
