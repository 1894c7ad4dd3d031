#!/bin/bash
# tests/unit/data/krb5/mkdata.sh - regenerate the Kerberos test data of
# tests/unit/test_krb5.c from a real exchange (run by hand as root; not part
# of make check).
#
# Builds the AD DC test bed of tests/integration/addc_lib.sh, exports the
# DC's keytab (dc.keytab: the keys of a throwaway test domain, nothing
# else), and captures smbclient Kerberos sessions straight to the DC:
#   smb210-aes256   SMB 2.1 (aes256 ticket and keys)
#   smb311-aes256   SMB 3.1.1 (preauth integrity: NEGOTIATE kept too)
#   smb311-skaes128 SMB 3.1.1, the ticket in the DC's aes256 key, its
#                   session key (so the authenticator, the AP-REP and their
#                   subkeys) aes128: the service ticket is fetched first
#                   with kvno under a krb5.conf whose default_tgs_enctypes
#                   lists aes128 before aes256, and smbclient takes it from
#                   the credential cache (asked itself, it lists aes256
#                   first)
#   smb311-skrc4    the same with an rc4-hmac session key
#   tkt-aes128      a ticket in aes128.  Samba 4.17's KDC encrypts the
#                   tickets of a DC in aes256 whatever the DC account's
#                   msDS-SupportedEncryptionTypes says, so this ticket is
#                   for cifs/fs128.REALM, the SPN of a user account limited
#                   to aes128 (8), whose keys go to svc.keytab.  The DC's
#                   smbd refuses it (LOGON_FAILURE: not its key), so only
#                   the AP-REQ is used.
#   tkt-rc4         the same for cifs/fsrc4.REALM, limited to rc4-hmac (4)
#   smb311-tktrc4   a whole session with the DC's own ticket in rc4-hmac:
#                   last, after the DC account's AES keys are dropped from
#                   the database (addc_rc4_only; dc.keytab, exported
#                   before, still has its rc4-hmac key, the NT hash)
# extract.py cuts NEGOTIATE and SESSION_SETUP messages out of each stream.
# keys.txt gets, per case, the ticket session key of cifs/FQDN from the
# client's credential cache (read with impacket, independently of
# smbaccel's code): the unit test checks that decrypting the ticket with
# the keytab yields that same key.
. "$(dirname "$0")/../../../integration/lib.sh"
. "$TESTS_DIR/addc_lib.sh"
OUT=$(cd "$(dirname "$0")" && pwd)
command -v dumpcap >/dev/null || fail "dumpcap not installed"
command -v ktutil >/dev/null || fail "ktutil not installed (krb5-user)"
addc_bed
addc_keytab "$T/dc.keytab"
domain=${ADDC_FQDN#*.}
: > "$T/svc.ktutil"
for a in fs128:8 fsrc4:4; do
	acct=${a%%:*}
	addc_svc_account "$acct" "${a#*:}" "$T/$acct.keytab"
	printf '%s\t%s\n' "$ADDC_DIR_IP" "$acct.$domain" >> "/etc/netns/$ADDC_DIRNS/hosts"
	echo "rkt $T/$acct.keytab" >> "$T/svc.ktutil"
done
printf 'wkt %s\nquit\n' "$T/svc.keytab" >> "$T/svc.ktutil"
ktutil < "$T/svc.ktutil" > /dev/null && [ -s "$T/svc.keytab" ] ||
    fail "ktutil could not merge the service keytabs"
: > "$T/keys.txt"
echo hello > "$T/hello.txt"
home=$(addc_home data)
# NAME:DIALECT:HOST:TGS (HOST's cifs/ ticket fetched first with TGS listed
# before aes256; "-": smbclient asks for it)
for c in smb210-aes256:SMB2_10:dc1:- smb311-aes256:SMB3_11:dc1:- \
    smb311-skaes128:SMB3_11:dc1:aes128-cts-hmac-sha1-96 \
    smb311-skrc4:SMB3_11:dc1:rc4-hmac \
    tkt-aes128:SMB3_11:fs128:- tkt-rc4:SMB3_11:fsrc4:- \
    smb311-tktrc4:SMB3_11:dc1:-; do
	IFS=: read -r name d host tgs <<< "$c"
	[ "$name" = smb311-tktrc4 ] && addc_rc4_only 'DC1$'
	fqdn=$host.$domain
	cc=$T/cc-$name
	conf=$T/krb5-$name.conf
	addc_krb5_conf "$conf" "$ADDC_DIR_IP"
	addc_kinit "$ADDC_DIRNS" "$conf" "$cc"
	if [ "$tgs" != - ]; then
		ADDC_KRB5_EXTRA="default_tgs_enctypes = $tgs aes256-cts-hmac-sha1-96" \
		    addc_krb5_conf "$conf.tgs" "$ADDC_DIR_IP"
		ip netns exec "$ADDC_DIRNS" env KRB5_CONFIG="$conf.tgs" KRB5CCNAME="FILE:$cc" \
		    kvno "cifs/$fqdn" || fail "kvno cifs/$fqdn with $tgs"
	fi
	ip netns exec "$ADDC_DCNS" dumpcap -q -i kd1 -f "tcp port 445" -w "$T/$name.pcapng" \
	    > "$T/$name.dumpcap" 2>&1 &
	cap=$!
	sleep 2
	ip netns exec "$ADDC_DIRNS" env KRB5_CONFIG="$conf" KRB5CCNAME="FILE:$cc" \
	    HOME="$home" smbclient --configfile="$home/.smb/smb.conf" \
	    "//$fqdn/share" -m "$d" --option="client min protocol=$d" \
	    -c "put $T/hello.txt $name.txt; ls" </dev/null > "$T/$name.out" 2>&1
	rc=$?
	case $host:$rc in
	dc1:0) ;;
	dc1:*) cat "$T/$name.out"; fail "smbclient $name" ;;
	*:0) fail "the DC accepted a ticket for $fqdn" ;;
	*) grep -q LOGON_FAILURE "$T/$name.out" ||
	    { cat "$T/$name.out"; fail "smbclient $name: not refused with LOGON_FAILURE"; } ;;
	esac
	sleep 1
	kill -INT "$cap"; wait "$cap"
	"$PY" "$OUT/extract.py" "$T/$name.pcapng" 445 "$T/msgs" "$name" || fail "extract $name"
	/usr/bin/python3 - "$cc" "$name" >> "$T/keys.txt" <<'PYEOF'
import sys
from impacket.krb5.ccache import CCache
for cr in CCache.loadFile(sys.argv[1]).credentials:
    s = cr['server'].prettyPrint().decode()
    if s.startswith('cifs/'):
        print(sys.argv[2], s, cr['key']['keytype'], cr['key']['keyvalue'].hex())
PYEOF
	ip netns exec "$ADDC_DIRNS" env KRB5_CONFIG="$conf" KRB5CCNAME="FILE:$cc" klist -e |
	    grep -A1 "cifs/"
done
rm -f "$OUT"/*.s*.neg-* "$OUT"/*.s*.ss-*
cp "$T"/msgs/* "$OUT/"
cp "$T/dc.keytab" "$T/svc.keytab" "$OUT/"
chmod 0644 "$OUT/dc.keytab" "$OUT/svc.keytab"
cp "$T/keys.txt" "$OUT/keys.txt"
klist -kte "$OUT/dc.keytab"
klist -kte "$OUT/svc.keytab"
cat "$OUT/keys.txt"
ls -la "$OUT"
