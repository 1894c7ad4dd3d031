#!/bin/bash
# test-timeout: 600
# Issue 12: Kerberos enctypes other than aes256, from the DC's real KDC and
# a real client, through smbaccel holding the keytab.
#  1. Session keys in aes128-cts-hmac-sha1-96 and rc4-hmac.  The DC's own
#     tickets are always in its aes256 key (Samba 4.17 ignores a DC's
#     msDS-SupportedEncryptionTypes), but the session key is the KDC's pick
#     from the client's list: the cifs/ ticket is fetched first with kvno
#     under a krb5.conf whose default_tgs_enctypes lists E before aes256,
#     and the clients take it from the credential cache.  Then the
#     authenticator (usage 11) and the AP-REP (usage 12) are in E.  For
#     each E, at SMB2_10 and SMB3_11 (signing mandatory): smbdd -k writes
#     KE_MIB (2) MiB in 1 KiB writes and reads them back in 4 KiB reads
#     (verified); the DC's file equals the pattern written directly; every
#     session keyed with "session_key=E" in smbaccel's log; writes
#     absorbed, read-ahead hits, no bad signature; klist still shows E (the
#     clients used that ticket).
#     The same session keys and aes256 with a second client, impacket's
#     (tests/integration/krb_impacket.py: its own AP-REQ, with no
#     authenticator subkey and no mutual authentication, so no AP-REP and
#     the SMB session key is the ticket's session key, the last choice of
#     MS-SMB2 3.3.5.5.3; its own signing): at 2.1 (HMAC-SHA256), 3.0 and
#     3.1.1 (AES-CMAC), KI_KIB (1024) KiB in 1 KiB writes and read back in
#     4 KiB reads; the DC's file has the sha256 impacket wrote; keyed with
#     that session key; writes absorbed, upstream in WRITEs of >= 128 KiB
#     on average although impacket's window is small; no bad signature.
#  2. Tickets in aes128 and rc4-hmac service keys: two user accounts with
#     SPNs cifs/fs128.REALM and cifs/fsrc4.REALM, limited to aes128 (8) and
#     rc4-hmac (4); smbaccel's keytab holds the DC's keys and theirs.  The
#     DC's smbd refuses those tickets (not its key), directly and through
#     smbaccel with the same status, but smbaccel decrypts each ticket and
#     its authenticator (debug log: "ticket=E kvno=2 session_key=E: ok").
#     After a reload with the DC's keys only, the same AP-REQ gives
#     "no-matching-key" (the test can tell).
#  3. The DC's own tickets in rc4-hmac: its AES keys are dropped from the
#     database (addc_rc4_only), so the KDC encrypts them in its NT hash and
#     its smbd accepts them.  smbdd -k (KE_MIB MiB, 1 KiB writes, 4 KiB
#     reads) and impacket at 3.1.1 through smbaccel: intact on the DC's
#     disk, keyed with "ticket=rc4-hmac/kvno=1", absorbed, read ahead.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/krb_lib.sh"
require_smbaccel "Kerberos-keyed sessions"
command -v ktutil >/dev/null || skip "ktutil not installed (krb5-user)"

MIB=${KE_MIB:-2}
KIB=${KI_KIB:-1024}
krb_bed
domain=${ADDC_FQDN#*.}

# the service accounts, their keys and the merged keytab
: > "$T/all.ktutil"
echo "rkt $KT" >> "$T/all.ktutil"
for a in fs128:8 fsrc4:4; do
	acct=${a%%:*}
	addc_svc_account "$acct" "${a#*:}" "$T/$acct.keytab"
	printf '127.0.0.1\t%s\n' "$acct.$domain" >> "/etc/netns/$ADDC_CLI/hosts"
	printf '%s\t%s\n' "$ADDC_DIR_IP" "$acct.$domain" >> "/etc/netns/$ADDC_DIRNS/hosts"
	echo "rkt $T/$acct.keytab" >> "$T/all.ktutil"
done
printf 'wkt %s\nquit\n' "$T/all.keytab.new" >> "$T/all.ktutil"
ktutil < "$T/all.ktutil" > "$T/ktutil.out" 2>&1 && [ -s "$T/all.keytab.new" ] ||
    fail "ktutil could not merge the keytabs: $(cat "$T/ktutil.out")"
install -m 0600 -o 0 -g 0 "$T/all.keytab.new" "$T/all.keytab" || fail "install all.keytab"
info "keytab: $(klist -ke "$T/all.keytab" | grep -c '@') keys (DC1\$, fs128, fsrc4)"

KRB_KEYTAB_LINE="keytab = $T/all.keytab"
krb_proxy "log_level = debug"

seed=$((RANDOM * 32768 + RANDOM + 1))
info "seed $seed"
out=$(kd_smbdd write ref 1M "$MIB" -s "$seed" -q 2>&1) || fail "direct reference write failed: $out"
ref=$(sha256 "$ADDC_SHARE_DIR/ref")

# tgs_ticket E: a fresh TGT, then cifs/FQDN with E before aes256
tgs_ticket() {
	in_cli kdestroy > /dev/null 2>&1
	addc_kinit "$ADDC_CLI" "$ADDC_CLI_KRB5" "$ADDC_CCACHE"
	ADDC_KRB5_EXTRA="default_tgs_enctypes = $1 aes256-cts-hmac-sha1-96" \
	    addc_krb5_conf "$T/krb5-$1.conf" "$ADDC_IP"
	ip netns exec "$ADDC_CLI" env KRB5_CONFIG="$T/krb5-$1.conf" \
	    KRB5CCNAME="FILE:$ADDC_CCACHE" kvno "cifs/$ADDC_FQDN" > /dev/null ||
	    fail "kvno cifs/$ADDC_FQDN with $1 first"
	check_skey "$1" "after kvno"
}
check_skey() {	# check_skey E WHEN: the cached cifs/ ticket's session key is E
	assert_eq "$1, aes256-cts-hmac-sha1-96" "$(cached_etypes "$ADDC_FQDN")" \
	    "cached cifs/ ticket (skey, tkt) $2"
}
# ---- 1. aes256, aes128 and rc4-hmac session keys
for et in aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96 rc4-hmac; do
	tgs_ticket "$et"
	for d in 2.1 3.0 3.1.1; do
		l=imp-$et-$d
		snap "$l-0"
		nlog=$(wc -l < "$PROXY_LOG")
		out=$(kimp write "i-$l" --dialect "$d") || fail "$l: impacket's writes through smbaccel failed: $out"
		want=$(echo "$out" | sed -n 's/^sha256=//p')
		[ -n "$want" ] || fail "$l: impacket printed no sha256: $out"
		out=$(kimp verify "i-$l" --dialect "$d") || fail "$l: impacket's reads through smbaccel failed: $out"
		snap "$l-1"
		assert_eq "$want" "$(sha256 "$ADDC_SHARE_DIR/i-$l")" "$l: sha256 on the DC's disk vs what impacket wrote"
		keyed_lines "$nlog" "$l" "$et"
		check_deltas "$l" "$l-0" "$l-1" 2 $((KIB * 9 / 10))
		# impacket starts writing with a window of ~130 credits: the
		# credits its writes ask for reach the server through smbaccel's
		# own requests (co_proxy_ask), or its writes would go up in
		# 31 KiB pieces (34 per MiB)
		[ "$D_upstream_writes" -le $((KIB / 128)) ] ||
		    fail "$l: $D_upstream_writes upstream WRITEs for $KIB KiB (want <= $((KIB / 128)): >= 128 KiB each)"
		rm -f "$ADDC_SHARE_DIR/i-$l"
	done
	[ "$et" = aes256-cts-hmac-sha1-96 ] && continue   # smbdd: t_krb_copy
	for d in SMB2_10 SMB3_11; do
		l=$et-$d
		snap "$l-0"
		nlog=$(wc -l < "$PROXY_LOG")
		ksample_start
		out=$(kcc_smbdd write "k-$l" 1K $((MIB * 1024)) -m "$d" -s "$seed" -q -f 2>&1) ||
		    { ksample_stop >/dev/null; fail "$l: smbdd 1 KiB writes through smbaccel failed: $out"; }
		info "$l: write 1K: $(echo "$out" | tail -n 1)"
		snap "$l-1"
		out=$(kcc_smbdd verify "k-$l" 4K $((MIB * 256)) -m "$d" -s "$seed" -q 2>&1) ||
		    { ksample_stop >/dev/null; fail "$l: smbdd 4 KiB read+verify through smbaccel failed: $out"; }
		ksample_stop > "$T/$l.sessions"
		snap "$l-2"
		assert_eq "$ref" "$(sha256 "$ADDC_SHARE_DIR/k-$l")" "$l: sha256 on the DC's disk vs the pattern written directly"
		grep -v ' tree=no keyed=false why=not-needed' "$T/$l.sessions" |
		    grep -v ' keyed=true why=- auth=kerberos$' && fail "$l: a session was not keyed (above)"
		keyed_lines "$nlog" "$l" "$et"
		deltas "$l-1" "$l-2"
		ra=$D_ra_hits
		check_deltas "$l" "$l-0" "$l-2" 2 $((MIB * 1024 * 9 / 10))
		assert_ge 1 "$ra" "$l: ra_hits (reads)"
		assert_ge 1 "$D_signed_out" "$l: signed_out"
		rm -f "$ADDC_SHARE_DIR/k-$l"
	done
	check_skey "$et" "after the transfers"
done

# ---- 2. aes128 and rc4-hmac tickets
# fs_smbclient NSFUNC HOME PORT HOST: a session to //HOST/share (refused)
fs_smbclient() {
	$1 env HOME="$2" timeout -k 5 60 smbclient --configfile="$2/.smb/smb.conf" \
	    "//$4.$domain/share" ${3:+-p "$3"} -N --use-kerberos=required -m SMB3_11 \
	    -c "ls" </dev/null 2>&1
}
# apreq_lines FROM HOST: smbaccel's AP-REQ lines for cifs/HOST (the client's
# name is in the ticket: "?" when it was not opened)
apreq_lines() {
	tail -n +"$(($1 + 1))" "$PROXY_LOG" |
	    grep "kerberos AP-REQ client=[^ ]* service=cifs/$2.$domain@$ADDC_REALM "
}
in_cli kdestroy > /dev/null 2>&1
addc_kinit "$ADDC_CLI" "$ADDC_CLI_KRB5" "$ADDC_CCACHE"
for a in fs128:aes128-cts-hmac-sha1-96 fsrc4:rc4-hmac; do
	host=${a%%:*} et=${a#*:}
	nlog=$(wc -l < "$PROXY_LOG")
	sd=$(fs_smbclient in_dir "$DIR_HOME" "" "$host" | grep -o 'NT_STATUS_[A-Z_]*' | sort -u | tr '\n' ' ')
	sp=$(fs_smbclient in_cli "$CLI_HOME" "$PROXY_PORT" "$host" | grep -o 'NT_STATUS_[A-Z_]*' | sort -u | tr '\n' ' ')
	info "$host: direct: $sd; through smbaccel: $sp"
	assert_eq "NT_STATUS_LOGON_FAILURE " "$sd" "$host: the DC's answer directly"
	assert_eq "$sd" "$sp" "$host: the status through smbaccel vs directly"
	assert_eq "$et, $et" "$(cached_etypes "$host.$domain")" "$host: the KDC's ticket (skey, tkt)"
	apreq_lines "$nlog" "$host" > "$T/$host.apreq" || fail "$host: smbaccel logged no AP-REQ for cifs/$host"
	grep -v "client=$ADDC_USER@$ADDC_REALM .* ticket=$et kvno=2 session_key=$et: ok\$" "$T/$host.apreq" &&
	    fail "$host: an AP-REQ smbaccel could not open (above)"
	info "$host: $(head -n 1 "$T/$host.apreq" | sed 's/.*kerberos AP-REQ //')"
done

# the control: the DC's keys only, and the same tickets are not opened
nlog=$(wc -l < "$PROXY_LOG")
install -m 0600 -o 0 -g 0 "$KT" "$T/all.keytab" || fail "install the DC's keytab"
kreload "$nlog"
for host in fs128 fsrc4; do
	nlog=$(wc -l < "$PROXY_LOG")
	fs_smbclient in_cli "$CLI_HOME" "$PROXY_PORT" "$host" > "$T/$host.nokey.out"
	grep -q NT_STATUS_LOGON_FAILURE "$T/$host.nokey.out" ||
	    { cat "$T/$host.nokey.out"; fail "$host: not refused with the DC's keys only"; }
	apreq_lines "$nlog" "$host" > "$T/$host.nokey.apreq" || fail "$host: no AP-REQ logged after the reload"
	grep -v ": no-matching-key\$" "$T/$host.nokey.apreq" &&
	    fail "$host: with the DC's keys only, not no-matching-key (above)"
	info "$host, DC keys only: $(head -n 1 "$T/$host.nokey.apreq" | sed 's/.*kerberos AP-REQ //')"
done
# ---- 3. the DC's own tickets in rc4-hmac: its AES keys dropped
addc_rc4_only 'DC1$'
in_cli kdestroy > /dev/null 2>&1
addc_kinit "$ADDC_CLI" "$ADDC_CLI_KRB5" "$ADDC_CCACHE"
in_cli kvno "cifs/$ADDC_FQDN" > /dev/null || fail "kvno cifs/$ADDC_FQDN with rc4 keys only"
assert_eq "aes256-cts-hmac-sha1-96, rc4-hmac" "$(cached_etypes "$ADDC_FQDN")" \
    "the DC's ticket (skey, tkt) without its AES keys"
l=tktrc4
snap "$l-0"
nlog=$(wc -l < "$PROXY_LOG")
out=$(kcc_smbdd write "k-$l" 1K $((MIB * 1024)) -m SMB3_11 -s "$seed" -q -f 2>&1) ||
    fail "$l: smbdd 1 KiB writes through smbaccel failed: $out"
out=$(kcc_smbdd verify "k-$l" 4K $((MIB * 256)) -m SMB3_11 -s "$seed" -q 2>&1) ||
    fail "$l: smbdd 4 KiB read+verify through smbaccel failed: $out"
assert_eq "$ref" "$(sha256 "$ADDC_SHARE_DIR/k-$l")" "$l: sha256 on the DC's disk vs the pattern written directly"
out=$(kimp write "i-$l" --dialect 3.1.1) || fail "$l: impacket's writes through smbaccel failed: $out"
want=$(echo "$out" | sed -n 's/^sha256=//p')
out=$(kimp verify "i-$l" --dialect 3.1.1) || fail "$l: impacket's reads through smbaccel failed: $out"
assert_eq "$want" "$(sha256 "$ADDC_SHARE_DIR/i-$l")" "$l: sha256 on the DC's disk vs what impacket wrote"
snap "$l-1"
keyed_lines "$nlog" "$l" aes256-cts-hmac-sha1-96 rc4-hmac
check_deltas "$l" "$l-0" "$l-1" 4 $(((MIB * 1024 + KIB) * 9 / 10))
assert_ge 1 "$D_ra_hits" "$l: ra_hits"

proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
info "PASS"
