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
#  6. Key rotation, as the refresh of deploy/smbaccel-keytab@.service runs
#     it (its ExecStart, the arguments from an instance environment file):
#     it puts FS1$'s keys back and reloads smbaccel (keyed again); run
#     again it says "unchanged" and neither rewrites nor reloads.  Then
#     FS1$'s password changes (wbinfo --change-secret): a session on a
#     ticket of the new kvno is relayed unkeyed (no-matching-key, and one
#     warning for all such sessions) until the next refresh, keyed after it at the new kvno, and a ticket of
#     the old password (cached before) is still keyed at the old kvno.
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

# krb_session LABEL KVNO: 1 MiB in 1 KiB writes through smbaccel at 3.1.1,
# byte-exact on the member's disk; deltas in D_*, keyed lines checked if
# KVNO is given
krb_session() {
	snap "$1-0"
	nlog=$(wc -l < "$PROXY_LOG")
	out=$(kcc_smbdd write "$1" 1K 1024 -m SMB3_11 -s "$seed" -q -f 2>&1) ||
	    fail "$1: smbdd 1 KiB writes through smbaccel failed: $out"
	snap "$1-1"
	assert_eq "$(head -c 1048576 "$ADDC_MEM_SHARE_DIR/ref" | sha256sum | cut -d' ' -f1)" \
	    "$(sha256 "$ADDC_MEM_SHARE_DIR/$1")" "$1: sha256 on the member's disk"
	rm -f "$ADDC_MEM_SHARE_DIR/$1"
	if [ -n "${2:-}" ]; then
		keyed_lines "$nlog" "$1" "$AES128" "$AES128" "$2"
		check_deltas "$1" "$1-0" "$1-1" 1 $((1024 * 9 / 10))
	else
		deltas "$1-0" "$1-1"
	fi
}

# ---- 5. the control: the DC's keys only
nlog=$(wc -l < "$PROXY_LOG")
install -m 0600 -o 0 -g 0 "$KT" "$T/proxy.keytab" || fail "install the DC's keytab"
kreload "$nlog"
l=m-nokey
krb_session "$l"
info "$l: sessions_keyed +$D_sessions_keyed sessions_unkeyed +$D_sessions_unkeyed writes_absorbed +$D_writes_absorbed"
assert_eq 0 "$D_sessions_keyed" "$l: sessions_keyed without the member's key"
assert_ge 1 "$D_sessions_unkeyed" "$l: sessions_unkeyed without the member's key"
assert_eq 0 "$D_writes_absorbed" "$l: writes_absorbed of an unkeyed signed session"
assert_eq "$D_sessions_unkeyed" "$(stat_get unkeyed_by.decrypt-failed)" "$l: stats unkeyed_by.decrypt-failed"
tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep "kerberos AP-REQ .*service=cifs/$ADDC_MEM_FQDN@$ADDC_REALM " > "$T/$l.apreq" ||
    fail "$l: smbaccel logged no AP-REQ for cifs/$ADDC_MEM_FQDN"
# the DC's keytab has an aes128 key of kvno 1 too (DC1$'s): smbaccel tries
# it, as it tries any key of the ticket's enctype, and it does not open
# the ticket
grep -v ": decrypt-failed\$" "$T/$l.apreq" && fail "$l: not decrypt-failed (above)"
tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -q "passthrough reason=decrypt-failed (signing required, encryption off) auth=kerberos" ||
    fail "$l: no 'passthrough reason=decrypt-failed' line"
info "$l: $(head -n 1 "$T/$l.apreq" | sed 's/.*kerberos AP-REQ //')"

# ---- 6. the machine password changes; the keytab follows it by the
# refresh that smbaccel-keytab@.service runs hourly (deploy/): its
# ExecStart, with $SMBACCEL_KEYTAB_ARGS from the instance's environment
# file split at blanks, as systemd does
FS1="${ADDC_MEM_HOST^^}\$"
ENVF=$T/keytab-fs1.env
echo "SMBACCEL_KEYTAB_ARGS=drsuapi --dc $ADDC_FQDN --dc-ip $ADDC_DIR_IP --domain $ADDC_DOMAIN --user Administrator --password-file $T/admin.pw --account $FS1 --spn cifs/$ADDC_MEM_FQDN -o $T/proxy.keytab --control-socket $CTL_SOCK" > "$ENVF"
UNIT_EXEC=$(sed -n 's/^ExecStart=//p' "$TOP/deploy/smbaccel-keytab@.service.in")
case $UNIT_EXEC in
'@SBINDIR@/smbaccel-keytab '*'$SMBACCEL_KEYTAB_ARGS'*) ;;
*) fail "smbaccel-keytab@.service.in: unexpected ExecStart: $UNIT_EXEC" ;;
esac
# unit_refresh LABEL: the service's ExecStart once, its output in
# $T/LABEL.refresh; the new "policy reloaded" lines counted in RELOADS
unit_refresh() {
	local args rest n0
	args=$(sed -n 's/^SMBACCEL_KEYTAB_ARGS=//p' "$ENVF")
	rest=${UNIT_EXEC#@SBINDIR@/smbaccel-keytab }
	rest=${rest//\$SMBACCEL_KEYTAB_ARGS/$args}
	n0=$(grep -c "policy reloaded" "$PROXY_LOG")
	set -f
	# shellcheck disable=SC2086  # split at blanks, as systemd splits $VAR
	in_dir env PATH="$TOP/bin:$PATH" /usr/bin/python3 "$TOP/deploy/smbaccel-keytab" $rest \
	    > "$T/$1.refresh" 2>&1 || { set +f; cat "$T/$1.refresh"; fail "$1: the keytab refresh failed"; }
	set +f
	RELOADS=$(($(grep -c "policy reloaded" "$PROXY_LOG") - n0))
	info "$1: refresh: $(grep -E '^(wrote|unchanged|smbaccel reloaded)' "$T/$1.refresh" | tr '\n' ' ')(policy reloaded x$RELOADS)"
}

l=r-back
unit_refresh "$l"
grep -q "^wrote .* keys to $T/proxy.keytab\$" "$T/$l.refresh" || fail "$l: the DC's keytab was not replaced"
grep -q "^smbaccel reloaded" "$T/$l.refresh" || fail "$l: no reload after the new keytab"
assert_eq 1 "$RELOADS" "$l: policy reloads"
grep -F " $FS1@$ADDC_REALM " <(keys_of "$T/proxy.keytab") | cmp -s - <(keys_of "$MKT") ||
    fail "$l: the refreshed keys of $FS1 differ from the exported ones"
krb_session "$l" "$kvno"

l=r-same
m0=$(stat -c %Y.%i "$T/proxy.keytab")
unit_refresh "$l"
grep -q "^unchanged: $T/proxy.keytab already holds these" "$T/$l.refresh" || fail "$l: not 'unchanged'"
grep -q "^smbaccel reloaded" "$T/$l.refresh" && fail "$l: reloaded though nothing changed"
assert_eq 0 "$RELOADS" "$l: policy reloads with the same keys"
assert_eq "$m0" "$(stat -c %Y.%i "$T/proxy.keytab")" "$l: the keytab's mtime.inode (left alone)"

# the client's cached ticket of the old password, for later
cp "$ADDC_CCACHE" "$T/krb5cc.old"
# as Samba's winbindd does every "machine password timeout" (NETLOGON
# ServerPasswordSet2 to the DC, the old password kept as the previous one)
out=$(_addc_mem_mnt ip netns exec "$ADDC_DCNS" wbinfo --change-secret 2>&1) ||
    { echo "$out"; fail "wbinfo --change-secret on the member failed"; }
info "$FS1's password changed: $(echo "$out" | tail -n 1)"
in_cli kdestroy
addc_kinit "$ADDC_CLI" "$ADDC_CLI_KRB5" "$ADDC_CCACHE"
nkvno=$(in_cli kvno "cifs/$ADDC_MEM_FQDN" | sed -n 's/.*kvno = \([0-9]*\)$/\1/p')
assert_eq $((kvno + 1)) "${nkvno:-none}" "the kvno of the new cifs/$ADDC_MEM_FQDN ticket"

nm0=$(stat_get unkeyed_by.no-matching-key)
l=r-stale
krb_session "$l"
u1=$D_sessions_unkeyed
assert_eq 0 "$D_sessions_keyed" "$l: sessions_keyed on a ticket of the new password with the old keytab"
assert_ge 1 "$D_sessions_unkeyed" "$l: sessions_unkeyed"
tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -q "passthrough reason=no-matching-key .*auth=kerberos" ||
    fail "$l: no 'passthrough reason=no-matching-key' line"
# and the administrator is told, once per service and key version
warn="kerberos: the keytab has no $AES128 key of version $nkvno for cifs/$ADDC_MEM_FQDN@$ADDC_REALM: if the server's password changed, fetch its keys again"
assert_eq 1 "$(grep -cF "$warn" "$PROXY_LOG")" "$l: the stale keytab warnings"
krb_session r-stale2
assert_eq 0 "$D_sessions_keyed" "r-stale2: sessions_keyed"
assert_eq 1 "$(grep -cF "$warn" "$PROXY_LOG")" "r-stale2: the stale keytab warnings (once, not per session)"
assert_eq $((nm0 + u1 + D_sessions_unkeyed)) "$(stat_get unkeyed_by.no-matching-key)" \
    "r-stale, r-stale2: smbaccelctl stats unkeyed_by.no-matching-key"
info "$l: relayed unkeyed, no-matching-key (kvno $nkvno, the keytab holds $kvno), warned once"

l=r-new
unit_refresh "$l"
grep -q "^wrote .* keys to $T/proxy.keytab\$" "$T/$l.refresh" || fail "$l: the keytab was not rewritten"
assert_eq 1 "$RELOADS" "$l: policy reloads"
for v in "$nkvno" "$kvno"; do
	keys_of "$T/proxy.keytab" | awk -v v="$v" -v p="$FS1@$ADDC_REALM" -v e="$AES128" \
	    '$1 == v && $2 == p && $3 == e {f = 1} END {exit !f}' ||
	    { keys_of "$T/proxy.keytab" | cut -d' ' -f1-3; fail "$l: no $AES128 key of kvno $v in the refreshed keytab"; }
done
krb_session "$l" "$nkvno"
# the old password's ticket, still valid for hours, is still accelerated
cp "$ADDC_CCACHE" "$T/krb5cc.new" && cp "$T/krb5cc.old" "$ADDC_CCACHE"
krb_session r-old "$kvno"
cp "$T/krb5cc.new" "$ADDC_CCACHE"

proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
info "PASS"
