#!/bin/bash
# test-timeout: 600
# Issue 12: Kerberos-keyed sessions with encryption required: the AD DC with
# `smb encrypt = required`, smbaccel holding its keytab.  At SMB3_00
# (AES-128-CCM) and at SMB3_11 with AES-128-CCM, AES-128-GCM and AES-256-GCM
# (forced on the client with "client smb3 encryption algorithms"):
#  1. smbclient --use-kerberos=required put and get of KE_MIB (64) MiB:
#     sha256 on the DC's disk and of the copy read back; the session keyed
#     (auth=kerberos) in conns --json; the DC's smbstatus shows the dialect
#     and the cipher asked for;
#  2. smbdd -k: KS_MIB (16) MiB in 1 KiB writes, read back in 4 KiB reads
#     (verified); the DC's file equals the pattern written directly; on the
#     upstream leg the client-to-server TRANSFORM messages of >= 512 KiB
#     (plaintext size, from their headers: the WRITEs are inside) carry >=
#     95 % of the bytes written; read-ahead hits; messages decrypted and
#     encrypted by smbaccel; no bad signature.
# With AES-GCM, the put's WRITEs (larger than the coalesce size, sent on
# as the client sealed them) are authenticated whole and only their heads
# decrypted: at least 90 % of the put's bytes are counted as not decrypted
# (decrypt_skipped_bytes); with CCM none are.
# AES-256-GCM keys come from the full 32-byte Kerberos session key (MS-SMB2
# 3.3.5.5.3 Session.FullSessionKey): a wrong key derivation fails that case
# only.  SMB2_10 has no encryption: the DC refuses it, through smbaccel
# with the same status as directly.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/krb_lib.sh"
require_smbaccel "Kerberos-keyed sessions"

KE_MIB=${KE_MIB:-64}
KS_MIB=${KS_MIB:-16}
CASES=${KE_CASES:-SMB3_00:AES-128-CCM SMB3_11:AES-128-CCM SMB3_11:AES-128-GCM SMB3_11:AES-256-GCM}
ADDC_EXTRA="smb encrypt = required"
KRB_HOME_LINES="client smb encrypt = required"
krb_bed
krb_proxy

random_file "$T/orig" "$KE_MIB"
want=$(sha256 "$T/orig")
seed=$((RANDOM * 32768 + RANDOM + 1))
info "seed $seed"
out=$(kd_smbdd write ref 1M "$KS_MIB" -s "$seed" -q 2>&1) ||
    fail "direct reference write failed: $out"
ref=$(sha256 "$ADDC_SHARE_DIR/ref")

for c in $CASES; do
	d=${c%%:*} cipher=${c#*:} l=$c
	l=${l//:/-}
	CLI_HOME=$(addc_home "cli-$l" "client smb encrypt = required" \
	    "client smb3 encryption algorithms = $cipher")
	snap "$l-0"
	kput_get "$l" "$d" "$KE_MIB"
	snap "$l-p"
	# smbclient's put sends WRITEs larger than the coalesce size: with
	# AES-GCM authenticated whole, only their head decrypted, and sent
	# on as sealed (the DC's sha256 above shows they arrived whole)
	deltas "$l-0" "$l-p"
	info "$l: put and get: decrypted_in +$D_decrypted_in decrypted_head_only +$D_decrypted_head_only ($D_decrypt_skipped_bytes bytes not decrypted)"
	case $cipher in
	*GCM) assert_ge $((KE_MIB * 1048576 * 9 / 10)) "$D_decrypt_skipped_bytes" "$l: put bytes authenticated without decrypting them" ;;
	*) assert_eq 0 "$D_decrypted_head_only" "$l: messages opened without decrypting their data" ;;
	esac

	khold_start "$l" "$d"
	khold_finish "$l"
	sed "s/^/    $l: smbd on the DC: /" "$T/$l.hold.status"
	grep -q ' keyed=true why=- auth=kerberos$' "$T/$l.hold.sessions" ||
	    fail "$l: the held session is not keyed in conns --json"
	grep -q "^$d signing=[^ ]* encryption=$cipher\$" "$T/$l.hold.status" ||
	    fail "$l: smbstatus on the DC shows no $d session encrypted with $cipher"

	ksmbdd_cycle "$l" "$d"
	krb_sealed_big "$l" $((KS_MIB * 1048576))
	deltas "$l-1" "$l-2"
	ra=$D_ra_hits
	deltas "$l-0" "$l-2"
	info "$l: sessions_keyed +$D_sessions_keyed writes_absorbed +$D_writes_absorbed upstream_writes +$D_upstream_writes ra_hits +$ra decrypted_in +$D_decrypted_in encrypted_out +$D_encrypted_out bad_signatures +$D_bad_signatures"
	assert_ge 4 "$D_sessions_keyed" "$l: sessions_keyed"
	assert_eq 0 "$D_sessions_unkeyed" "$l: sessions_unkeyed"
	assert_eq 0 "$D_bad_signatures" "$l: bad_signatures"
	assert_eq 0 "$D_ledger_errors" "$l: ledger_errors"
	assert_eq 0 "$D_deferred_errors" "$l: deferred_errors"
	assert_ge $((KS_MIB * 1024 * 9 / 10)) "$D_writes_absorbed" "$l: writes_absorbed"
	assert_ge 1 "$ra" "$l: ra_hits"
	assert_ge 1 "$D_decrypted_in" "$l: decrypted_in"
	assert_ge 1 "$D_encrypted_out" "$l: encrypted_out"
	rm -f "$ADDC_SHARE_DIR/k-$l" "$KCAP"
done

# 2.1 has no encryption: the DC refuses, the same way through smbaccel
info "SMB2_10 against a server requiring encryption"
CLI_HOME=$(addc_home cli-21) DIR_HOME=$(addc_home dir-21)
kd_smbclient SMB2_10 "ls" > "$T/21-direct.out" 2>&1 && fail "SMB2_10 directly: the DC accepted a session without encryption"
kc_smbclient SMB2_10 "ls" > "$T/21-proxy.out" 2>&1 && fail "SMB2_10 through smbaccel: the session worked"
sd=$(grep -o 'NT_STATUS_[A-Z_]*' "$T/21-direct.out" | sort -u | tr '\n' ' ')
sp=$(grep -o 'NT_STATUS_[A-Z_]*' "$T/21-proxy.out" | sort -u | tr '\n' ' ')
info "SMB2_10: direct: $sd; through smbaccel: $sp"
[ -n "$sd" ] || { cat "$T/21-direct.out"; fail "SMB2_10 direct: no NT_STATUS in the output"; }
assert_eq "$sd" "$sp" "SMB2_10: the status through smbaccel vs directly"
proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
info "PASS"
