#!/bin/bash
# test-timeout: 600
# Issue 3 test 7: 256 MiB (WB_LONG_MIB) of 1 KiB writes on one connection
# through the proxy (write_behind = always), at 3.1.1, then 64 MiB at
# 2.0.2 (one id per request: 64 KiB WRITEs plus ECHOs); smbd logs at
# `log level = 3 smb2_credits:10`.  Checks: smbdd completes (libsmbclient
# fails at once when it has zero credits: no starvation) on exactly one
# connection (no disconnect/reconnect), the file verifies directly, smbd's
# log has no message-id or credit error and no terminated connection,
# ledger_errors = 0.  The largest credit window smbd logged is reported.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "write-behind"

MIB=${WB_LONG_MIB:-256}
MIB202=${WB_LONG_MIB_202:-64}
SMBD_LOG_LEVEL="3 smb2_credits:10" start_smbd
start_proxy
seed=$((RANDOM + 11))

ERRS='client used more credits than granted|bad message_id|duplicate message_id|credit charge > max credits|CreditCharge too low|assert failed|smbd_server_connection_terminate|terminating connection|Insufficient credits|NT_STATUS_INVALID_NETWORK_RESPONSE|INTERNAL ERROR'

for run in "SMB3_11 $MIB" "SMB2_02 $MIB202"; do
	set -- $run
	d=$1 mib=$2
	acc0=$(grep -c 'accepted client' "$PROXY_LOG")
	t0=$(now)
	out=$(timeout 400 env HOME="$(client_home smbdd)" "$SMBDD" write "$(smb_url "$PROXY_PORT" "long-$d")" 1K \
	    $((mib * 1024)) -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$seed" -q -f 2>&1) ||
	    fail "$d: smbdd $mib MiB of 1 KiB writes failed after $(elapsed "$t0") s: $out"
	info "$d: $(echo "$out" | tail -n 1)"
	acc1=$(grep -c 'accepted client' "$PROXY_LOG")
	assert_eq 1 $((acc1 - acc0)) "$d: client connections smbdd opened (a reconnect means a disconnect)"
	grep -E 'closed client.*reason=' "$PROXY_LOG" | grep -v 'reason=client' | tail -n 3 | sed 's/^/    log: /'
	out=$(smbdd_run verify "$SMBD_PORT" "long-$d" 1M "$mib" -s "$seed" -q 2>&1) ||
	    fail "$d: the file does not verify directly: $out"
	rm -f "$SHARE_DIR/long-$d"
done

# smbd's own view: errors, and the credit window it reported.
logs=$(find "$SMBD_DIR/log" -type f)
if grep -hE "$ERRS" $logs > "$T/smbd-errors" 2>/dev/null; then
	head -n 20 "$T/smbd-errors"
	fail "smbd logged $(wc -l < "$T/smbd-errors") message-id/credit/termination errors"
fi
n=$(grep -h -c 'smb2_set_operation_credit' $logs | awk '{ s += $1 } END { print s + 0 }')
[ "$n" -gt 100 ] || fail "smbd's log has only $n smb2_set_operation_credit lines: is smb2_credits:10 in effect?"
grep -h 'total granted/max/low/range' $logs | sed -n 's/.*total granted\/max\/low\/range \([0-9]*\)\/\([0-9]*\)\/[0-9]*\/\([0-9]*\).*/\1 \2 \3/p' |
    awk '{ if ($3 > r) r = $3; if ($1 > g) g = $1 } END { printf "smbd credit lines: largest range %d, largest total granted %d\n", r, g }' |
    while read -r l; do info "$l"; done
info "$n credit lines in smbd's log, no errors"
info "stats: $(stats_line writes_absorbed upstream_writes upstream_echoes delayed_responses flush_causes.credits pool_ids ledger_errors)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
