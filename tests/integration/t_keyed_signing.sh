#!/bin/bash
# test-timeout: 400
# Issue 5 test 2: smbd with `server signing = mandatory`; the proxy has the
# user's secret (a DOMAIN\user:nthash: entry, the hash taken from smbd's
# passdb, among decoy lines).  At each dialect 2.0.2, 2.1, 3.0, 3.0.2 and at
# 3.1.1 with each signing algorithm smbd offers (forced on the client):
# smbdd writes KS_MIB MiB in 1 KiB writes and reads it back in 4 KiB reads
# (pattern verified by smbdd); the file on disk equals the same pattern
# written directly; every session seen in `conns --json` while smbdd runs is
# keyed; smbstatus shows the dialect and signing algorithm asked for; the
# stats show the writes absorbed, large upstream WRITEs, read-ahead hits,
# signed synthesized messages and no bad signature.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "keyed sessions"
[ -x "$SMBDD" ] || skip "$SMBDD not built"

KS_MIB=${KS_MIB:-8}
start_smbd "server signing = mandatory"
h=$(nt_hash)
[ ${#h} -eq 32 ] || fail "no NT hash for $SMB_USER from pdbedit: '$h'"
write_secrets "$T/secrets" "# smbaccel test secrets" \
    "other:password:nothing" "OTHERDOM\\$SMB_USER:password:wrong" \
    "SMBACCEL\\$SMB_USER:nthash:$h"
start_keyed_proxy "secrets = $T/secrets"
log_has "secrets: 3 entries" || fail "the proxy did not log 'secrets: 3 entries'"

KS_SEED=$((RANDOM * 32768 + RANDOM + 1))
info "seed $KS_SEED"
out=$(smbdd_run write "$SMBD_PORT" ref 1M "$KS_MIB" -s "$KS_SEED" -q 2>&1) ||
    fail "direct reference write failed: $out"
KS_REF=$(sha256 "$SHARE_DIR/ref")

# smbd's offer, from its effective configuration.
algs=$(smbd_ns testparm -s -v "$SMBD_CONF" 2>/dev/null |
    sed -n 's/^[[:space:]]*server smb3 signing algorithms = //p' | tr -d ' ' | tr ',' ' ')
[ -n "$algs" ] || fail "testparm shows no 'server smb3 signing algorithms'"
info "smbd offers signing algorithms: $algs"

cases="SMB2_02:HMAC-SHA256 SMB2_10:HMAC-SHA256 SMB3_00:AES-128-CMAC SMB3_02:AES-128-CMAC"
for a in $algs; do cases="$cases SMB3_11:$a"; done
for c in ${KS_CASES:-$cases}; do
	d=${c%%:*} alg=${c#*:}
	home=$(client_home "$d-$alg" "client signing = required" \
	    ${alg:+"client smb3 signing algorithms = $alg"})
	[ "$d" != SMB3_11 ] && home=$(client_home "$d" "client signing = required")
	ks_case "$d-$alg" "$d" "$home" "$d signing=$alg encryption=-"
	assert_ge 1 "$D_signed_out" "$d-$alg: signed_out delta"
done
assert_eq 0 "$(stat_get sessions_unkeyed)" "stats sessions_unkeyed"
proxy_alive || fail "proxy died"
info "PASS"
