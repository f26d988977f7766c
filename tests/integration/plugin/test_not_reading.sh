# A peer that keeps asking but never reads the answers: what waits for it is
# bounded (MaxFrameSize), then the plugin closes that connection and keeps
# serving the others.
. "$(dirname "$0")/lib.sh"

write_conf "  MaxFrameSize 4096"
start_collectd_and_wait
worker steady
wait_for 20 welcomed steady || fail "steady was not welcomed"
# Each refused Control costs the plugin a ControlReply several times its
# size: far more than the socket buffers hold.
worker flood --control-flood 40000
wait_for 60 grep -q "closed by the plugin" "$T/flood.out" ||
  fail "the plugin kept queueing answers for a peer that does not read them"
control ping "$(conn_id steady)" | grep -q "^reply status=ok" || fail "steady is not served"
collectd_alive || fail "collectd died"
echo PASS
