# Real Ruby workers with the hook (memdiag/hook/auto) register with the
# plugin; their RSS reaches the csv plugin and matches /proc; an operator's
# ping and thread_dump go through the plugin to one of them while the other
# keeps reporting; a worker that exits is forgotten.
. "$(dirname "$0")/lib.sh"

HOOK_LIB="$MDP_BUILD/worker-hook/ruby/lib"
[ -f "$HOOK_LIB/memdiag/hook/auto.rb" ] || fail "the Ruby hook is not built in $HOOK_LIB"

write_conf ""
start_collectd_and_wait

# rb_worker NAME: a Ruby process holding ~40 MB, hooked through RUBYOPT-free -r.
rb_worker() {
  MEMDIAG_CERT="$C/worker.pem" MEMDIAG_KEY="$C/worker.key" MEMDIAG_NAME="$1" \
    "$MDP_RUBY" -I "$HOOK_LIB" -r memdiag/hook/auto \
    -e 'keep = Array.new(40) { "x" * 1_000_000 }; $stdout.sync = true; puts "up"; sleep' \
    >"$T/$1.out" 2>&1 &
  WPID=$!
  PIDS="$PIDS $WPID"
}

rb_worker rb-one
R1=$WPID
rb_worker rb-two
R2=$WPID
listed() { control list | grep -q "pid=$1 "; }
wait_for 30 listed "$R1" || fail "rb-one did not register: $(cat "$T/rb-one.out")"
wait_for 30 listed "$R2" || fail "rb-two did not register: $(cat "$T/rb-two.out")"
wait_for 20 has_csv memdiag-rb-one memory-rss || fail "no memdiag-rb-one/memory-rss values"
wait_for 20 has_csv memdiag-rb-two memory-rss || fail "no memdiag-rb-two/memory-rss values"

note "rss close to VmRSS"
sleep 2
got=$(csv_last memdiag-rb-one memory-rss)
want=$(vmrss_bytes "$R1")
echo "csv rss=$got VmRSS=$want"
awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(g > 40 * 1000000 && d <= w * 0.10) }' ||
  fail "rss $got not within 10% of VmRSS $want"

note "operations through the plugin"
ID1=$(control list | sed -n "s/^worker id=\([0-9]*\) pid=$R1 .*/\1/p")
[ -n "$ID1" ] || fail "no connection ID for rb-one"
control ping "$ID1" >"$T/ping.out" || fail "ping failed: $(cat "$T/ping.out")"
grep -q 'reply status=ok' "$T/ping.out" || fail "ping: $(cat "$T/ping.out")"
control thread_dump "$ID1" >"$T/td.out" || fail "thread_dump failed: $(cat "$T/td.out")"
grep -q 'reply status=ok data=.' "$T/td.out" || fail "thread_dump: $(cat "$T/td.out")"
before=$(wc -l < "$(csv_file memdiag-rb-two memory-rss)")
wait_for 10 sh -c "[ \$(wc -l < '$(csv_file memdiag-rb-two memory-rss)') -gt $before ]" ||
  fail "rb-two stopped reporting"

note "an exited worker is forgotten"
kill "$R2"
unlisted() { ! listed "$1"; }
wait_for 15 unlisted "$R2" || fail "rb-two still listed after it exited"
log_has "gone" || fail "departure not logged"
collectd_alive || fail "collectd died"
echo PASS
