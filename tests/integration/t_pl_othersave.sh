#!/bin/bash
# test-timeout: 200
# A reopen after another user's Office-style save (pl_othersave.py,
# impacket + raw SMB2, default policy): user A, asking no lease, keeps
# nh-r/report.docx open (smbaccel holds a lease with read caching for it)
# while user B saves it: report.docx renamed to report.bak, a temp file
# renamed to report.docx, report.bak deleted.  A's next open of
# report.docx must succeed and read B's version, as directly, whether B
# goes to smbd directly or through the same smbaccel.  Before 2026-12-07
# it was refused 0xc000000d: smbaccel asked A's key for the name, which
# had gone with the renamed file (the reviewer's fuzzer also met it as
# OVERWRITE_IF and SUPERSEDE opens refused).
. "$(dirname "$0")/lib.sh"
require_smbaccel "a reopen after another user's save"
start_smbd
start_proxy
export PYTHONPATH=$TESTS_DIR

save() {	# save PORT_A PORT_B: pl_othersave.py's line
	rm -rf "$SHARE_DIR/nh-r"
	WB_SMB_TIMEOUT=60 timeout 90 "$PY" "$TESTS_DIR/pl_othersave.py" "$1" "$2" 2>&1 ||
	    fail "pl_othersave.py $1 $2"
}
want="reopen=0x00000000 read=v2 again=0x00000000"
dir=$(save "$SMBD_PORT" "$SMBD_PORT")
assert_eq "$want" "$dir" "directly"
out=$(save "$PROXY_PORT" "$SMBD_PORT")
info "A through smbaccel, B directly: $out"
assert_eq "$want" "$out" "A through smbaccel, B directly"
out=$(save "$PROXY_PORT" "$PROXY_PORT")
info "A and B through smbaccel: $out"
assert_eq "$want" "$out" "A and B through smbaccel"
assert_eq 0 "$(stat_get ledger_errors)" "ledger errors"
assert_eq 0 "$(stat_get breaks_unacked)" "breaks left to smbd's timeout"
info "PASS"
