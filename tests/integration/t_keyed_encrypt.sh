#!/bin/bash
# test-timeout: 400
# Issue 5 test 3: smbd with `server smb encrypt = required`; the proxy has
# the user's secret (a user:password: entry).  At 3.0 and 3.0.2 (AES-128-CCM)
# and at 3.1.1 with each cipher smbd offers (forced on the client): smbdd
# writes KS_MIB MiB in 1 KiB writes and reads it back in 4 KiB reads
# (verified); the file on disk equals the pattern written directly; every
# session seen in `conns --json` is keyed; smbstatus shows the dialect and
# cipher asked for; the stats show absorption, large upstream WRITEs,
# read-ahead hits, decrypted_in and encrypted_out > 0, no bad signature.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "keyed sessions"
[ -x "$SMBDD" ] || skip "$SMBDD not built"

KS_MIB=${KS_MIB:-8}
start_smbd "server smb encrypt = required"
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
start_keyed_proxy "secrets = $T/secrets"

KS_SEED=$((RANDOM * 32768 + RANDOM + 1))
info "seed $KS_SEED"
out=$(smbdd_run write "$SMBD_PORT" ref 1M "$KS_MIB" -s "$KS_SEED" -q 2>&1) ||
    fail "direct reference write failed: $out"
KS_REF=$(sha256 "$SHARE_DIR/ref")

ciphers=$(testparm -s -v "$SMBD_CONF" 2>/dev/null |
    sed -n 's/^[[:space:]]*server smb3 encryption algorithms = //p' | tr -d ' ' | tr ',' ' ')
[ -n "$ciphers" ] || fail "testparm shows no 'server smb3 encryption algorithms'"
info "smbd offers ciphers: $ciphers"

cases="SMB3_00:AES-128-CCM SMB3_02:AES-128-CCM"
for a in $ciphers; do cases="$cases SMB3_11:$a"; done
for c in ${KS_CASES:-$cases}; do
	d=${c%%:*} cipher=${c#*:}
	if [ "$d" = SMB3_11 ]; then
		home=$(client_home "$d-$cipher" "client smb encrypt = required" \
		    "client smb3 encryption algorithms = $cipher")
	else
		home=$(client_home "$d" "client smb encrypt = required")
	fi
	ks_case "$d-$cipher" "$d" "$home" "$d signing=[^ ]* encryption=$cipher\$"
	assert_ge 1 "$D_decrypted_in" "$d-$cipher: decrypted_in delta"
	assert_ge 1 "$D_encrypted_out" "$d-$cipher: encrypted_out delta"
done
assert_eq 0 "$(stat_get sessions_unkeyed)" "stats sessions_unkeyed"
proxy_alive || fail "proxy died"
info "PASS"
