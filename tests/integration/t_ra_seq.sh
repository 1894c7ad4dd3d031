#!/bin/bash
# test-timeout: 600
# Issue 4 test 1: smbdd reads a 64 MiB (RA_MIB) pattern file in 4 KiB
# reads through the proxy with read_ahead = always, at 3.1.1, 2.1 and
# 2.0.2; smbdd checks every byte.  A dumpcap capture of the proxy -> smbd
# leg (tests/tools/upstream-sizes, independent of the proxy's counters):
# the READ responses carried the whole file, and >= 80 % of the bytes the
# READ requests asked for were asked in READs of >= 512 KiB (64 KiB at
# 2.0.2, its maximum).  A direct read of the same file is timed alongside.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "read-ahead"

MIB=${RA_MIB:-64}
DIALECTS=${RA_DIALECTS:-SMB3_11 SMB2_10 SMB2_02}
start_smbd
PROXY_SHARE_SECTION=no start_proxy "" "[share share]" "write_behind = off" "read_ahead = always"
seed=$((RANDOM + 5))
out=$(smbdd_run write "$SMBD_PORT" ra-seq 1M "$MIB" -s "$seed" -q 2>&1) || fail "cannot write the file directly: $out"

for d in $DIALECTS; do
	h0=$(stat_get ra_hits)
	capture_start "ra-$d"
	out=$(timeout 300 env HOME="$(client_home smbdd)" "$SMBDD" read "$(smb_url "$PROXY_PORT" ra-seq)" 4K \
	    $((MIB * 256)) -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$seed" -q 2>&1)
	rc=$?
	capture_stop
	[ $rc -eq 0 ] || fail "$d: smbdd 4 KiB read through the proxy failed or saw wrong bytes: $out"
	info "$d proxy:  $(echo "$out" | tail -n 1)"
	h1=$(stat_get ra_hits)
	case $d in SMB2_02) min=65536 ;; *) min=524288 ;; esac
	upstream_sizes "$min" "$T/ra-$d.json"
	"$PY" "$TESTS_DIR/wb_sizes.py" "$T/ra-$d.json" read 0.80 $((MIB * 1048576)) "" "$d" ||
	    fail "$d: upstream READ sizes (above); ra_hits +$((h1 - h0))"
	info "$d: ra_hits +$((h1 - h0))"
	rm -f "$CAP_FILE"
	out=$(timeout 300 env HOME="$(client_home smbdd)" "$SMBDD" read "$(smb_url "$SMBD_PORT" ra-seq)" 4K \
	    $((MIB * 256)) -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$seed" -q 2>&1) || fail "$d: direct read failed: $out"
	info "$d direct: $(echo "$out" | tail -n 1)"
done
info "stats: $(stats_line ra_hits ra_served_bytes ra_waits ra_widened ra_fetches ra_fetch_bytes ra_window_max ledger_errors)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
