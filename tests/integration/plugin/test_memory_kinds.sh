# Memory rss pss private swap: every figure reaches the csv plugin, read
# from smaps_rollup, and they are consistent with each other.
. "$(dirname "$0")/lib.sh"

write_conf "  Memory rss pss
  Memory private swap
  Interval 1"
start_collectd_and_wait
worker kinds --allocate-mb 32
wait_for 20 welcomed kinds || fail "worker was not welcomed"
for k in rss pss private swap; do
  wait_for 20 has_csv memdiag-kinds "memory-$k" || fail "no memory-$k values"
done
sleep 2
rss=$(csv_last memdiag-kinds memory-rss)
pss=$(csv_last memdiag-kinds memory-pss)
priv=$(csv_last memdiag-kinds memory-private)
echo "rss=$rss pss=$pss private=$priv swap=$(csv_last memdiag-kinds memory-swap)"
awk -v r="$rss" -v p="$pss" -v v="$priv" 'BEGIN { exit !(r >= 32 * 1048576 && p > 0 && p <= r && v >= 32 * 1048576 && v <= r) }' ||
  fail "figures are inconsistent"
log_has "started (Memory rss pss private swap)" || fail "Memory setting not logged"
echo PASS
