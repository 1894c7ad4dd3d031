#!/bin/bash
# test-timeout: 600
# Issue 12: Kerberos sessions to a domain member file server, with the
# server's tickets in aes128-cts-hmac-sha1-96, end to end.
#
# The usual branch-office file server is not the DC but a member of the
# domain.  The test joins one to the test DC (addc_member_join: Samba's
# smbd and winbindd, security = ads, `net ads join`), then limits its
# machine account FS1$ to aes128 (msDS-SupportedEncryptionTypes 8), so the
# KDC encrypts its tickets, and picks the session keys, in aes128: the
# case the DC's own tickets cannot give (Samba 4.17 issues them in aes256
# whatever that attribute says).  smbaccel holds FS1$'s keys only,
# fetched by deploy/smbaccel-keytab drsuapi (checked against samba-tool
# domain exportkeytab), forwarding to the member.
#  1. The cached cifs/fs1 ticket is aes128 / aes128 (klist -e).
#  2. smbdd -k at SMB2_10, SMB3_00 and SMB3_11 (signing mandatory):
#     KM_MIB (16) MiB in 1 KiB writes, read back in 4 KiB reads (verified);
#     the member's file equals the pattern written directly; every session
#     keyed "ticket=aes128-cts-hmac-sha1-96/kvno=K session_key=aes128-..."
#     (K from the exported keytab); writes absorbed, read-ahead hits, no
#     bad signature.
#  3. smbclient --use-kerberos=required put and get of KM_PUT_MIB (16) MiB
#     at SMB3_11, and impacket (a second client, its own AP-REQ and
#     signing) at 3.1.1: sha256 on the member's disk and of the get.
#  4. Sealed: the member's [sealed] share has smb encrypt = required;
#     smbdd -k at SMB3_00 (AES-128-CCM) and SMB3_11 (the client's first
#     choice, AES-128-GCM) through smbaccel: byte-exact, keyed, absorbed,
#     read ahead, and on the upstream leg (captured) >= 95 % of the bytes
#     written travel in TRANSFORM messages of >= 512 KiB of WRITE data.
#  5. The control: after a reload with the DC's keys only (no FS1$ key),
#     the same transfer is intact but relayed unkeyed, and smbaccel logs
#     the AP-REQ as decrypt-failed (DC1$'s aes128 key has the same kvno,
#     so it is tried and fails) and the session as passthrough.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/krb_lib.sh"
require_smbaccel "Kerberos-keyed sessions to a member server"

MIB=${KM_MIB:-16}
PUT_MIB=${KM_PUT_MIB:-16}
KIB=${KI_KIB:-1024}
AES128=aes128-cts-hmac-sha1-96

# signing mandatory, as Windows Server 2025 and Windows 11 24H2 have it
ADDC_MEM_EXTRA="server signing = mandatory"
ADDC_MEM_SHARES="[sealed]
	path = $ADDC_MEM_SHARE_DIR
	read only = no
	smb encrypt = required"
krb_bed
addc_member_join
addc_member_start
addc_enctypes "${ADDC_MEM_HOST^^}\$" 8
MKT=$T/fs1.keytab
addc_keytab "$MKT" "${ADDC_MEM_HOST^^}\$"
kvno=$(klist -k "$MKT" | awk '$2 ~ /@/ {print $1; exit}')
[ -n "$kvno" ] || fail "no kvno in $MKT: $(klist -k "$MKT" 2>&1)"
info "${ADDC_MEM_HOST^^}\$ keytab: $(klist -ke "$MKT" | grep -c '@') keys, kvno $kvno"
KHOST=$ADDC_MEM_FQDN

PROXY_UPSTREAM=$ADDC_MEM_IP:445
export PROXY_UPSTREAM
# smbaccel's keytab comes from deploy/smbaccel-keytab's drsuapi mode, run
# from the dir ns as a Windows AD administrator would: FS1$'s keys by
# directory replication, the same as samba-tool's export
echo "$ADDC_ADMIN_PASS" > "$T/admin.pw" && chmod 0600 "$T/admin.pw"
in_dir /usr/bin/python3 "$TOP/deploy/smbaccel-keytab" drsuapi --dc "$ADDC_FQDN" \
    --dc-ip "$ADDC_DIR_IP" --domain "$ADDC_DOMAIN" --user Administrator \
    --password-file "$T/admin.pw" --account "${ADDC_MEM_HOST^^}\$" \
    --spn "cifs/$ADDC_MEM_FQDN" -o "$T/proxy.keytab" > "$T/drs.out" 2>&1 ||
    { cat "$T/drs.out"; fail "smbaccel-keytab drsuapi --account ${ADDC_MEM_HOST^^}\$ failed"; }
grep "${ADDC_MEM_HOST^^}\\\$@$ADDC_REALM" <(keys_of "$T/proxy.keytab") | cmp -s - <(keys_of "$MKT") ||
    { diff <(keys_of "$T/proxy.keytab") <(keys_of "$MKT"); fail "the replicated keys of ${ADDC_MEM_HOST^^}\$ differ from the exported ones"; }
info "smbaccel's keytab (smbaccel-keytab drsuapi): $(keys_of "$T/proxy.keytab" | wc -l) keys"
KRB_KEYTAB_LINE="keytab = $T/proxy.keytab"
# the [sealed] share gets the policy krb_proxy gives [share]
krb_proxy "log_level = debug" "" "[share sealed]" "write_behind = ${KRB_WB:-always}" \
    "read_ahead = ${KRB_RA:-always}" "flush_idle = 1s" "flush_max_age = 10s"

seed=$((RANDOM * 32768 + RANDOM + 1))
info "seed $seed"
out=$(kd_smbdd write ref 1M "$MIB" -s "$seed" -q 2>&1) || fail "direct reference write to the member failed: $out"
ref=$(sha256 "$ADDC_MEM_SHARE_DIR/ref")

# ---- 1. the ticket
in_cli kvno "cifs/$ADDC_MEM_FQDN" > /dev/null || fail "kvno cifs/$ADDC_MEM_FQDN"
assert_eq "$AES128, $AES128" "$(cached_etypes "$ADDC_MEM_FQDN")" "the member's ticket (skey, tkt)"

# ---- 2. signed, three dialects
for d in SMB2_10 SMB3_00 SMB3_11; do
	l=m-$d
	snap "$l-0"
	nlog=$(wc -l < "$PROXY_LOG")
	out=$(kcc_smbdd write "$l" 1K $((MIB * 1024)) -m "$d" -s "$seed" -q -f 2>&1) ||
	    fail "$l: smbdd 1 KiB writes through smbaccel failed: $out"
	out=$(kcc_smbdd verify "$l" 4K $((MIB * 256)) -m "$d" -s "$seed" -q 2>&1) ||
	    fail "$l: smbdd 4 KiB read+verify through smbaccel failed: $out"
	snap "$l-1"
	assert_eq "$ref" "$(sha256 "$ADDC_MEM_SHARE_DIR/$l")" "$l: sha256 on the member's disk vs the pattern written directly"
	keyed_lines "$nlog" "$l" "$AES128" "$AES128" "$kvno"
	check_deltas "$l" "$l-0" "$l-1" 2 $((MIB * 1024 * 9 / 10))
	assert_ge 1 "$D_ra_hits" "$l: ra_hits"
	assert_ge 1 "$D_signed_out" "$l: signed_out"
	rm -f "$ADDC_MEM_SHARE_DIR/$l"
done

# ---- 3. smbclient put/get, impacket
l=m-put
head -c $((PUT_MIB * 1024 * 1024)) /dev/urandom > "$T/put.src"
snap "$l-0"
nlog=$(wc -l < "$PROXY_LOG")
out=$(kc_smbclient SMB3_11 "put $T/put.src $l; get $l $T/put.back" 2>&1) ||
    fail "$l: smbclient put/get through smbaccel failed: $out"
snap "$l-1"
assert_eq "$(sha256 "$T/put.src")" "$(sha256 "$ADDC_MEM_SHARE_DIR/$l")" "$l: sha256 on the member's disk vs the file put"
assert_eq "$(sha256 "$T/put.src")" "$(sha256 "$T/put.back")" "$l: sha256 of the file got back"
keyed_lines "$nlog" "$l" "$AES128" "$AES128" "$kvno"
check_deltas "$l" "$l-0" "$l-1" 1 0
rm -f "$ADDC_MEM_SHARE_DIR/$l" "$T/put.back"

l=m-imp
snap "$l-0"
nlog=$(wc -l < "$PROXY_LOG")
out=$(kimp write "$l" --dialect 3.1.1) || fail "$l: impacket's writes through smbaccel failed: $out"
want=$(echo "$out" | sed -n 's/^sha256=//p')
out=$(kimp verify "$l" --dialect 3.1.1) || fail "$l: impacket's reads through smbaccel failed: $out"
snap "$l-1"
assert_eq "$want" "$(sha256 "$ADDC_MEM_SHARE_DIR/$l")" "$l: sha256 on the member's disk vs what impacket wrote"
keyed_lines "$nlog" "$l" "$AES128" "$AES128" "$kvno"
check_deltas "$l" "$l-0" "$l-1" 2 $((KIB * 9 / 10))
rm -f "$ADDC_MEM_SHARE_DIR/$l"

# ---- 4. sealed: the upstream leg captured, its WRITEs inside TRANSFORMs
for d in SMB3_00 SMB3_11; do
	l=s-$d
	snap "$l-0"
	nlog=$(wc -l < "$PROXY_LOG")
	kcap_start "up-$l"
	out=$(KSHARE=sealed kcc_smbdd write "$l" 1K $((MIB * 1024)) -m "$d" -s "$seed" -q -f 2>&1) ||
	    { kcap_stop; fail "$l: sealed smbdd 1 KiB writes through smbaccel failed: $out"; }
	kcap_stop
	out=$(KSHARE=sealed kcc_smbdd verify "$l" 4K $((MIB * 256)) -m "$d" -s "$seed" -q 2>&1) ||
	    fail "$l: sealed smbdd 4 KiB read+verify through smbaccel failed: $out"
	snap "$l-1"
	assert_eq "$ref" "$(sha256 "$ADDC_MEM_SHARE_DIR/$l")" "$l: sha256 on the member's disk vs the pattern written directly"
	keyed_lines "$nlog" "$l" "$AES128" "$AES128" "$kvno"
	check_deltas "$l" "$l-0" "$l-1" 2 $((MIB * 1024 * 9 / 10))
	assert_ge 1 "$D_encrypted_out" "$l: encrypted_out"
	assert_ge 1 "$D_decrypted_in" "$l: decrypted_in"
	assert_ge 1 "$D_ra_hits" "$l: ra_hits"
	krb_sealed_big "$l" $((MIB * 1048576))
	rm -f "$ADDC_MEM_SHARE_DIR/$l"
done

# ---- 5. the control: the DC's keys only
nlog=$(wc -l < "$PROXY_LOG")
install -m 0600 -o 0 -g 0 "$KT" "$T/proxy.keytab" || fail "install the DC's keytab"
kreload "$nlog"
l=m-nokey
snap "$l-0"
nlog=$(wc -l < "$PROXY_LOG")
out=$(kcc_smbdd write "$l" 1K 1024 -m SMB3_11 -s "$seed" -q -f 2>&1) ||
    fail "$l: smbdd through smbaccel without the member's key failed: $out"
snap "$l-1"
assert_eq "$(head -c 1048576 "$ADDC_MEM_SHARE_DIR/ref" | sha256sum | cut -d' ' -f1)" \
    "$(sha256 "$ADDC_MEM_SHARE_DIR/$l")" "$l: sha256 on the member's disk"
deltas "$l-0" "$l-1"
info "$l: sessions_keyed +$D_sessions_keyed sessions_unkeyed +$D_sessions_unkeyed writes_absorbed +$D_writes_absorbed"
assert_eq 0 "$D_sessions_keyed" "$l: sessions_keyed without the member's key"
assert_ge 1 "$D_sessions_unkeyed" "$l: sessions_unkeyed without the member's key"
assert_eq 0 "$D_writes_absorbed" "$l: writes_absorbed of an unkeyed signed session"
tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep "kerberos AP-REQ .*service=cifs/$ADDC_MEM_FQDN@$ADDC_REALM " > "$T/$l.apreq" ||
    fail "$l: smbaccel logged no AP-REQ for cifs/$ADDC_MEM_FQDN"
# the DC's keytab has an aes128 key of kvno 1 too (DC1$'s): smbaccel tries
# it, as it tries any key of the ticket's enctype, and it does not open
# the ticket
grep -v ": decrypt-failed\$" "$T/$l.apreq" && fail "$l: not decrypt-failed (above)"
tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -q "passthrough reason=decrypt-failed (signing required, encryption off) auth=kerberos" ||
    fail "$l: no 'passthrough reason=decrypt-failed' line"
info "$l: $(head -n 1 "$T/$l.apreq" | sed 's/.*kerberos AP-REQ //')"

proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
info "PASS"
