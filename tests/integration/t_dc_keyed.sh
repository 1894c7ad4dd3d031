#!/bin/bash
# test-timeout: 300
# Issue 13: the document cache in keyed sessions.  smbd with `server
# signing = mandatory`; the proxy holds the user's secret.  At 2.0.2, 2.1,
# 3.0.2 and 3.1.1 with signing required, and at 3.1.1 with encryption
# required by the client: random reads (smbdd -R -V, every byte checked)
# are answered from a copy (signed or sealed by smbaccel: signed_out or
# encrypted_out grow, no bad signature), misses are widened and re-signed,
# fetches signed, or sealed when the client seals (none travels in
# clear); a reopen by a new connection is served from the copy.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "keyed sessions"
[ -x "$SMBDD" ] || skip "$SMBDD not built"

start_smbd "server signing = mandatory"
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
start_keyed_proxy "secrets = $T/secrets"
seed=$((RANDOM + 5))
size=$((3 * 1048576 + 777))
for c in SMB2_02:sign SMB2_10:sign SMB3_02:sign SMB3_11:sign SMB3_11:seal; do
	d=${c%%:*} how=${c#*:}
	f=dk-$d-$how
	out=$(smbdd_run write "$SMBD_PORT" "$f" "$size" 1 -s "$seed" -q 2>&1) || fail "cannot write $f: $out"
	if [ "$how" = seal ]; then
		home=$(client_home "$d-$how" "client signing = required" "client smb encrypt = required")
	else
		home=$(client_home "$d-$how" "client signing = required")
	fi
	snap "$c-0"
	for pass in open reopen; do
		out=$(HOME=$home timeout 120 "$SMBDD" read "$(smb_url "$PROXY_PORT" "$f")" 16K 1200 \
		    -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$seed" -R "$size" -V -q 2>&1) ||
		    fail "$c $pass: random reads through the proxy saw wrong bytes: $out"
	done
	snap "$c-1"
	deltas "$c-0" "$c-1"
	info "$c: dc_hits +$D_dc_hits dc_widened +$D_dc_widened dc_fetches +$D_dc_fetches dc_attached +$D_dc_attached signed_out +$D_signed_out encrypted_out +$D_encrypted_out bad_signatures +$D_bad_signatures"
	assert_ge 1800 "$D_dc_hits" "$c: reads served from the copy (of 2400)"
	assert_ge 1 "$D_dc_widened" "$c: misses widened (re-signed)"
	assert_eq 1 "$D_dc_attached" "$c: reopens served by the copy"
	assert_eq 0 "$D_bad_signatures" "$c: bad signatures"
	assert_eq 0 "$D_sessions_unkeyed" "$c: sessions not keyed"
	if [ "$how" = seal ]; then
		assert_ge "$D_dc_hits" "$D_encrypted_out" "$c: messages smbaccel sealed"
		# the client seals: so are smbaccel's fetches of its file
		assert_eq 0 "$D_signed_out" "$c: messages smbaccel only signed (in clear)"
	else
		assert_ge "$D_dc_hits" "$D_signed_out" "$c: messages smbaccel signed"
	fi
done
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
