#!/bin/bash
# test-timeout: 400
# waits: relays rate-limited to 56 KiB/s-1 MB/s and smbd's 30 s break timeout: 7.5 s of CPU in 88 s (9 %) under ASan
# Issue 15 test 3 (fault injection): breaks of the lease smbaccel holds for
# a client that asks for none, when smbaccel cannot answer at once.  Its
# upstream runs through pl_slowlink.py (the client -> server direction
# rate-limited, answers and breaks at full speed); pl_fault.py:
#  - inflight (1 MB/s): the break arrives with flushes in flight; the log
#    says so, the acknowledgement follows the flush, the second client
#    reads all the data;
#  - late (56 KiB/s, 2 MiB buffered): the flush outlasts the server's 30 s
#    break timeout: the second client gets in and reads a prefix, the late
#    acknowledgement is logged (refused or late), the first client's CLOSE
#    succeeds and every byte is on disk;
#  - noid (64 KiB writes only, no id to spare): no id for the
#    acknowledgement: logged and counted (breaks_unacked), the server's
#    timeout resolves it, the data was written before.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
. "$TESTS_DIR/pl_lib.sh"
require_smbaccel "lease breaks smbaccel cannot answer at once"

start_smbd
pl_slowlink_proxy

run_case() {	# run_case CASE RATE
	local out rc
	echo "$2" > "$T/rate"
	sleep 0.5
	out=$(WB_SMB_TIMEOUT=120 timeout 200 "$PY" "$TESTS_DIR/pl_fault.py" "$PROXY_PORT" "$SMBD_PORT" 3.0 "$1" "$RANDOM" 2>&1)
	rc=$?
	echo "$out" | sed "s/^/    $1: /"
	[ $rc -eq 0 ] || fail "$1: pl_fault.py failed (exit $rc)"
}

run_case inflight 1000000
line=$(grep "file=plf-inflight the server breaks smbaccel's lease RW" "$PROXY_LOG" | tail -n 1)
info "inflight: $line"
inflight=$(echo "$line" | sed -n 's/.*bytes buffered, \([0-9]*\) writes in flight.*/\1/p')
buffered=$(echo "$line" | sed -n 's/.*open, \([0-9]*\) bytes buffered.*/\1/p')
[ -n "$inflight" ] || fail "inflight: no break logged"
assert_ge 1 "$inflight" "inflight: writes in flight when the break arrived"
ack=$(grep "file=plf-inflight break of smbaccel's lease acknowledged" "$PROXY_LOG" | sed -n 's/.* \([0-9]*\) ms after it arrived.*/\1/p' | tail -n 1)
info "inflight: $buffered bytes buffered and $inflight writes in flight at the break, acknowledged after $ack ms"
assert_ge 200 "${ack:-0}" "inflight: ms from the break to its acknowledgement (after the flush)"

r0=$(stat_get proxy_lease_acks_refused)
run_case late 57344
refused=$(( $(stat_get proxy_lease_acks_refused) - r0 ))
late=$(grep "file=plf-late break of smbaccel's lease acknowledged" "$PROXY_LOG" | sed -n 's/.* \([0-9]*\) ms after it arrived.*/\1/p' | tail -n 1)
info "late: acknowledged ${late:-?} ms after the break, refused by the server: $refused"
assert_ge 25000 "${late:-0}" "late: ms from the break to its acknowledgement"
log_has "answered smbaccel's break acknowledgement with 0x" ||
    [ "$refused" -eq 0 ] || fail "late: refused acknowledgement not logged"
assert_eq 0 "$(stat_get deferred_errors)" "late: deferred write errors"

u0=$(stat_get breaks_unacked)
run_case noid 0
assert_eq 1 $(( $(stat_get breaks_unacked) - u0 )) "noid: breaks counted as unacknowledged"
log_has "file=plf-noid no message id left to acknowledge the break of smbaccel's lease" ||
    fail "noid: the missing acknowledgement is not logged"

info "stats: $(stats_line proxy_lease_breaks proxy_lease_breaks_acked proxy_lease_ack_ms_max breaks_unacked proxy_lease_acks_refused deferred_errors ledger_errors)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
assert_eq 0 "$(stat_get deferred_errors)" "stats deferred_errors"
proxy_alive || fail "proxy died"
info "PASS"
