# Two workers register; their memory reaches collectd's csv plugin as
# memdiag-NAME/memory-rss; the values match /proc/PID/status; the workers
# count is dispatched; a second worker with the same name is told apart.
. "$(dirname "$0")/lib.sh"

write_conf ""
start_collectd_and_wait

worker alpha --allocate-mb 64
A=$WPID
worker beta
B=$WPID
worker beta
B2=$WPID
wait_for 20 welcomed alpha || fail "alpha was not welcomed: $(cat "$T/alpha.out")"
wait_for 20 welcomed beta || fail "beta was not welcomed"

note "values in csv"
wait_for 20 has_csv memdiag-alpha memory-rss || fail "no memdiag-alpha/memory-rss csv file"
wait_for 20 has_csv memdiag-beta memory-rss || fail "no memdiag-beta/memory-rss csv file"
second_beta() { has_csv "memdiag-beta-$B2" memory-rss || has_csv "memdiag-beta-$B" memory-rss; }
wait_for 20 second_beta ||
  fail "the second 'beta' worker has no series of its own: $(ls "$T/csv/mdtest")"
wait_for 20 has_csv memdiag count-workers || fail "no memdiag/count-workers csv file"
wait_for 10 last_is memdiag count-workers 3 ||
  fail "workers count is not 3: $(tail -n 1 "$(csv_file memdiag count-workers)")"

note "rss close to /proc/PID/status VmRSS"
sleep 2
got=$(csv_last memdiag-alpha memory-rss)
want=$(vmrss_bytes "$A")
echo "csv rss=$got VmRSS=$want"
awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(g > 64 * 1048576 && d <= w * 0.10) }' ||
  fail "rss $got not within 10% of VmRSS $want"

note "operators see both workers with their pids"
control list > "$T/list.out" || fail "list failed: $(cat "$T/list.out")"
cat "$T/list.out"
grep -q "pid=$A name=alpha instance=alpha " "$T/list.out" || fail "alpha missing from the list"
grep -q "pid=$B name=beta " "$T/list.out" || fail "beta missing from the list"
grep -q "pid=$B2 name=beta " "$T/list.out" || fail "second beta missing from the list"
log_has "memdiag plugin: worker 1 registered" || fail "registration not logged"
collectd_alive || fail "collectd died"
echo PASS
