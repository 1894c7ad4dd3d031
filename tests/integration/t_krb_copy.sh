#!/bin/bash
# test-timeout: 600
# Issue 12: Kerberos-keyed sessions, signing (the AD DC signs every session:
# server signing = mandatory).  The DC of addc_lib.sh, smbaccel in the
# client namespace with the DC's keytab (exported by samba-tool), clients
# resolving the DC's FQDN to smbaccel.  At SMB2_10, SMB3_00 and SMB3_11:
#  1. smbclient --use-kerberos=required put and get of KC_MIB (64) MiB of
#     random data through smbaccel: sha256 on the DC's disk and of the copy
#     read back; the session, sampled while it runs, is keyed with
#     auth=kerberos in `smbaccelctl conns --json`; the DC's smbstatus shows
#     the dialect and signing;
#  2. bin/smbdd -k writes KS_MIB (16) MiB in 1 KiB writes and reads them
#     back in 4 KiB reads (verified): the file on the DC's disk equals the
#     pattern written directly (from the direct namespace, 1 MiB writes);
#     the upstream leg, captured with dumpcap and parsed by
#     tests/tools/upstream-sizes, carries >= 95 % of the bytes in WRITEs of
#     >= 512 KiB; the reads are served by read-ahead (ra_hits); every
#     session keyed; no bad signature, no ledger error.
# The proxy's log has one "keyed ... auth=kerberos" line per session and no
# passthrough line.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/krb_lib.sh"
require_smbaccel "Kerberos-keyed sessions"

KC_MIB=${KC_MIB:-64}
KS_MIB=${KS_MIB:-16}
DIALECTS=${KC_DIALECTS:-SMB2_10 SMB3_00 SMB3_11}
krb_bed
krb_proxy
log_has "keytab: $KT: 3 keys" || fail "the proxy did not log the keytab it loaded"

random_file "$T/orig" "$KC_MIB"
want=$(sha256 "$T/orig")
seed=$((RANDOM * 32768 + RANDOM + 1))
info "seed $seed"
out=$(kd_smbdd write ref 1M "$KS_MIB" -s "$seed" -q 2>&1) ||
    fail "direct reference write failed: $out"
ref=$(sha256 "$ADDC_SHARE_DIR/ref")

for d in $DIALECTS; do
	case $d in SMB2_10) dx=2.1 ;; SMB3_00) dx=3.0 ;; SMB3_11) dx=3.1.1 ;; esac
	# ---- 1. smbclient put/get
	snap "$d-0"
	kput_get "$d" "$d" "$KC_MIB"

	# the DC's view of a session held open through smbaccel
	khold_start "$d" "$d"
	khold_finish "$d"
	sed "s/^/    $d: smbd on the DC: /" "$T/$d.hold.status"
	grep -q ' keyed=true why=- auth=kerberos$' "$T/$d.hold.sessions" ||
	    fail "$d: the held session is not keyed in conns --json"
	grep -q "^$d signing=" "$T/$d.hold.status" ||
	    fail "$d: smbstatus on the DC shows no $d session of $ADDC_USER"
	grep "^$d signing=" "$T/$d.hold.status" | grep -q "signing=-" &&
	    fail "$d: the DC shows a session without signing"

	# ---- 2. smbdd 1 KiB writes, 4 KiB reads
	ksmbdd_cycle "$d" "$d"
	ksizes 524288 "$T/sizes-$d.json"
	"$PY" "$TESTS_DIR/wb_sizes.py" "$T/sizes-$d.json" write 0.95 $((KS_MIB * 1048576)) 8388608 "$d" ||
	    fail "$d: upstream WRITE sizes (above)"
	deltas "$d-1" "$d-2"
	ra=$D_ra_hits
	deltas "$d-0" "$d-2"
	info "$d: sessions_keyed +$D_sessions_keyed writes_absorbed +$D_writes_absorbed ra_hits +$ra signed_out +$D_signed_out bad_signatures +$D_bad_signatures"
	assert_ge 4 "$D_sessions_keyed" "$d: sessions_keyed (smbclient, held, smbdd write and read)"
	assert_eq 0 "$D_sessions_unkeyed" "$d: sessions_unkeyed"
	assert_eq 0 "$D_bad_signatures" "$d: bad_signatures"
	assert_eq 0 "$D_ledger_errors" "$d: ledger_errors"
	assert_eq 0 "$D_deferred_errors" "$d: deferred_errors"
	assert_ge $((KS_MIB * 1024 * 9 / 10)) "$D_writes_absorbed" "$d: writes_absorbed (of $((KS_MIB * 1024)) 1 KiB writes)"
	assert_ge 1 "$ra" "$d: ra_hits during the 4 KiB reads"
	assert_ge 1 "$D_signed_out" "$d: signed_out"
	conns=$(grep -c "dialect=$dx .*auth=kerberos client=$ADDC_USER@$ADDC_REALM service=cifs/$ADDC_FQDN@$ADDC_REALM ticket=aes256-cts-hmac-sha1-96/kvno=1" "$PROXY_LOG")
	assert_ge 4 "$conns" "$d: 'keyed dialect=$dx ... auth=kerberos' log lines"
	rm -f "$ADDC_SHARE_DIR/k-$d" "$KCAP"
done
log_has "passthrough reason=" && { grep "passthrough reason=" "$PROXY_LOG" | head; fail "a session was relayed without a key"; }
proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
info "PASS"
