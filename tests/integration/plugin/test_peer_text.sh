# Text a worker sends (a Goodbye's reason, a Reply's error) is logged with
# its control characters replaced: a worker cannot forge lines in
# collectd's log.
. "$(dirname "$0")/lib.sh"

NL='
'
write_conf "  CaptureDirectory \"$T/captures\""
start_collectd_and_wait
worker erring --error-text "no${NL}FORGED error line"
wait_for 20 welcomed erring || fail "erring was not welcomed"
control ping "$(conn_id erring)" >/dev/null 2>&1 || true
wait_for 20 log_has "FORGED error line" || fail "the reply's error was not logged"
# A capture whose dump step the worker refuses: the error reaches the log
# and a notification through the capture module.
control capture "$(conn_id erring)" >/dev/null 2>&1 || fail "capture was not started"
wait_for 30 log_has "heap-1.json) failed: unsupported: no.FORGED error line" ||
  fail "the failed capture was not logged"
worker leaving --goodbye "bye${NL}FORGED goodbye line"
wait_for 20 log_has "FORGED goodbye line" || fail "the goodbye reason was not logged"
if grep -q "^FORGED" "$T/collectd.log"; then
  grep -n "FORGED" "$T/collectd.log"
  fail "a worker's text started a line of its own in the log"
fi
collectd_alive || fail "collectd died"
echo PASS
