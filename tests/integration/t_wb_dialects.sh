#!/bin/bash
# exclusive: >= 95 % of the bytes must go upstream in WRITEs >= 512 KiB; when smbd answers later than smbdd spends its 8192 credits (a busy neighbour), the zero-credit rule flushes early (13 WRITEs of 8 KiB, 90.6 % seen in a 2-lane run)
# test-timeout: 900
# Issue 3 test 1: smbdd writes WB_MIB (default 64) MiB in 1 KiB writes
# through the proxy (write_behind = always) at each dialect 2.0.2, 2.1, 3.0,
# 3.0.2 and 3.1.1.  For each: the file on smbd's disk has the sha256 of the
# same pattern written directly (1 MiB writes); a dumpcap capture of the
# proxy -> smbd leg, parsed by tests/tools/upstream-sizes (independent of
# the proxy's counters), shows every byte went upstream in WRITEs, >= 95 %
# of them in WRITEs of >= 512 KiB (>= 64 KiB at 2.0.2, its maximum), none
# larger than the dialect allows.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "write coalescing"

MIB=${WB_MIB:-64}
DIALECTS=${WB_DIALECTS:-SMB2_02 SMB2_10 SMB3_00 SMB3_02 SMB3_11}
start_smbd
# flush_idle 1s: a client stalled by a busy machine must not split the
# coalesced writes (the timer is not what is tested here).
PROXY_SHARE_SECTION=no start_proxy "" "[share share]" "write_behind = always" "flush_idle = 1s" "flush_max_age = 10s"
seed=$((RANDOM * 7 + 3))

# The reference: the same pattern written directly in 1 MiB writes.
out=$(smbdd_run write "$SMBD_PORT" ref 1M "$MIB" -s "$seed" -q 2>&1) ||
    fail "direct reference write failed: $out"
ref=$(sha256 "$SHARE_DIR/ref")
rm -f "$SHARE_DIR/ref"

for d in $DIALECTS; do
	stats_snap "$d-0"
	capture_start "up-$d"
	t0=$(now)
	out=$(timeout 300 env HOME="$(client_home smbdd)" "$SMBDD" write \
	    "$(smb_url "$PROXY_PORT" "wb-$d")" 1K $((MIB * 1024)) \
	    -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$seed" -q -f 2>&1) ||
	    { capture_stop; fail "$d: smbdd 1 KiB write through the proxy failed: $out"; }
	capture_stop
	stats_snap "$d-1"
	info "$d: $(echo "$out" | tail -n 1) ($(elapsed "$t0") s); $(stats_deltas "$d-0" "$d-1")"
	got=$(sha256 "$SHARE_DIR/wb-$d")
	[ "$got" = "$ref" ] || fail "$d: sha256 of the file on disk ($got, $(stat -c %s "$SHARE_DIR/wb-$d") bytes) differs from the pattern's ($ref)"
	case $d in SMB2_02) min=65536 max=65536 ;; *) min=524288 max=8388608 ;; esac
	upstream_sizes "$min" "$T/sizes-$d.json"
	"$PY" "$TESTS_DIR/wb_sizes.py" "$T/sizes-$d.json" write 0.95 $((MIB * 1048576)) "$max" "$d" ||
	    fail "$d: upstream WRITE sizes (above)"
	rm -f "$CAP_FILE" "$SHARE_DIR/wb-$d"
done
info "stats: $(stats_line writes_absorbed writes_forwarded upstream_writes upstream_write_mean upstream_echoes deferred_errors ledger_errors flush_causes.full flush_causes.pool flush_causes.credits)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
assert_eq 0 "$(stat_get deferred_errors)" "stats deferred_errors"
proxy_alive || fail "proxy died"
info "PASS"
