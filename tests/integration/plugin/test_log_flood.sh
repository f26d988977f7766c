# A peer looping on bad connections cannot flood collectd's log: at most 30
# refusals are logged per minute; later peers are still served.
. "$(dirname "$0")/lib.sh"

write_conf ""
start_collectd_and_wait
i=0
while [ $i -lt 45 ]; do
  "$MDP_TEST_WORKER" garbage >/dev/null 2>&1 || fail "garbage connection $i was not closed"
  i=$((i + 1))
done
n=$(grep -c 'refused connection from' "$T/collectd.log")
echo "refusals logged: $n of 45"
[ "$n" -eq 30 ] || fail "expected 30 refusals logged in the first minute, got $n"
worker after
wait_for 20 welcomed after || fail "a worker after the flood was not welcomed"
collectd_alive || fail "collectd died"
echo PASS
