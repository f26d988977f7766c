# MaxConnections: connections beyond the limit are closed at once and
# logged; the workers already registered keep being served.
. "$(dirname "$0")/lib.sh"

write_conf "  MaxConnections 2"
start_collectd_and_wait
worker first
F=$WPID
worker second
wait_for 20 welcomed first || fail "first was not welcomed"
wait_for 20 welcomed second || fail "second was not welcomed"
worker third --exit-after 5
wait_for 10 log_has "MaxConnections (2) reached" || fail "refusal not logged"
welcomed third && fail "a third connection was welcomed"
wait_for 20 last_is memdiag count-workers 2 || fail "workers count is not 2"
kill -0 "$F" || fail "first worker dropped"
collectd_alive || fail "collectd died"
echo PASS
