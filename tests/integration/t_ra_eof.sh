#!/bin/bash
# test-timeout: 300
# Issue 4 test 4: reads across end-of-file, of an empty file, of a file
# truncated (and grown, and rewritten) by another client while the reader
# reads sequentially (ra_eof.py): every read's status, length and data
# through the proxy (read_ahead = always, with write_behind = always and
# with it off) must equal the direct run's, at 3.0 and 2.0.2.
# ra_eof.py's "minimum" case: a sequential read with MinimumCount above
# what is left at the end of a file (END_OF_FILE) is widened with none,
# so later reads of those bytes get them (they got END_OF_FILE from a
# cached end when the widened READ kept the client's MinimumCount).
# rd_locks.py: reads of a file another client (direct to smbd) holds
# byte-range locks on: a miss widened into the locked chunk with a pooled
# id (asked again for the client's bytes: "asked again" in the log), a
# sequential reader whose read-ahead runs into a lock: every answer as
# direct (but the one its script marks "info:").
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "read-ahead"
export WB_SMB_TIMEOUT=20

start_smbd
bad=0
for d in 3.0 2.0.2; do
	timeout 120 "$PY" "$TESTS_DIR/ra_eof.py" "$SMBD_PORT" "$d" "direct-" > "$T/direct-$d.out" 2>&1 ||
	    { tail -n 5 "$T/direct-$d.out"; fail "$d: ra_eof.py fails directly against smbd"; }
	timeout 120 "$PY" "$TESTS_DIR/rd_locks.py" "$SMBD_PORT" "$SMBD_PORT" "$d" "lk-direct-" \
	    2>&1 | grep -v '^info:' > "$T/lk-direct-$d.out"
	grep -q '^done' "$T/lk-direct-$d.out" ||
	    { tail -n 5 "$T/lk-direct-$d.out"; fail "$d: rd_locks.py fails directly against smbd"; }
	for wb in always off; do
		PROXY_SHARE_SECTION=no start_proxy "" "[share share]" "write_behind = $wb" "read_ahead = always" > /dev/null
		h0=$(stat_get ra_hits)
		timeout 120 "$PY" "$TESTS_DIR/ra_eof.py" "$PROXY_PORT" "$d" "p-$wb-" > "$T/proxy-$d-$wb.out" 2>&1
		rc=$?
		h1=$(stat_get ra_hits)
		if ! diff "$T/direct-$d.out" "$T/proxy-$d-$wb.out" > "$T/diff-$d-$wb" || [ $rc -ne 0 ]; then
			echo "$d, write_behind = $wb: reads differ (< direct, > proxy; exit $rc):"
			grep '^[<>]' "$T/diff-$d-$wb" | head -n 20
			bad=1
		else
			info "$d, write_behind = $wb: $(grep -c ': 0x' "$T/proxy-$d-$wb.out") answers as direct (ra_hits +$((h1 - h0)))"
		fi
		n0=$(grep -c 'asked again' "$PROXY_LOG")
		timeout 120 "$PY" "$TESTS_DIR/rd_locks.py" "$PROXY_PORT" "$SMBD_PORT" "$d" "lk-$wb-" \
		    > "$T/lk-proxy-$d-$wb.all" 2>&1
		grep '^info:' "$T/lk-proxy-$d-$wb.all" | sed "s/^/    $d $wb: /"
		grep -v '^info:' "$T/lk-proxy-$d-$wb.all" > "$T/lk-proxy-$d-$wb.out"
		if ! diff "$T/lk-direct-$d.out" "$T/lk-proxy-$d-$wb.out" > "$T/lk-diff-$d-$wb"; then
			echo "$d, write_behind = $wb: reads of a locked file differ (< direct, > proxy):"
			grep '^[<>]' "$T/lk-diff-$d-$wb" | head -n 20
			bad=1
		elif [ "$(grep -c 'asked again' "$PROXY_LOG")" -le "$n0" ]; then
			echo "$d, write_behind = $wb: no READ asked again after a widened READ met a lock"
			bad=1
		else
			info "$d, write_behind = $wb: reads of a locked file as direct; $(grep -c ': 0x' "$T/lk-proxy-$d-$wb.out") answers"
		fi
		[ "$(stat_get ledger_errors)" = 0 ] || { echo "ledger_errors $(stat_get ledger_errors)"; bad=1; }
		stop_proxy
		[ $rc -ne 0 ] || [ $((h1 - h0)) -gt 0 ] || { echo "$d, write_behind = $wb: no read served by read-ahead"; bad=1; }
	done
done
[ $bad -eq 0 ] || fail "reads around end-of-file differ from direct (above)"
info "PASS"
