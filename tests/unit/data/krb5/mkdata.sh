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
# (Samba 4.17's KDC issues tickets for a DC in aes256 and session keys in
# aes256 whatever the account's msDS-SupportedEncryptionTypes or the
# client's enctype list say, so aes128 and rc4-hmac are covered by the
# unit tests' own tickets, not by captures.)
# extract.py cuts NEGOTIATE and SESSION_SETUP messages out of each stream.
# keys.txt gets, per case, the ticket session key of cifs/FQDN from the
# client's credential cache (read with impacket, independently of
# smbaccel's code): the unit test checks that decrypting the ticket with
# the keytab yields that same key.
. "$(dirname "$0")/../../../integration/lib.sh"
. "$TESTS_DIR/addc_lib.sh"
OUT=$(cd "$(dirname "$0")" && pwd)
command -v dumpcap >/dev/null || fail "dumpcap not installed"
addc_bed
addc_keytab "$T/dc.keytab"
: > "$T/keys.txt"
echo hello > "$T/hello.txt"
home=$(addc_home data)
for c in smb210-aes256:SMB2_10 smb311-aes256:SMB3_11; do
	name=${c%%:*} d=${c#*:}
	cc=$T/cc-$name
	conf=$T/krb5-$name.conf
	addc_krb5_conf "$conf" "$ADDC_DIR_IP"
	addc_kinit "$ADDC_DIRNS" "$conf" "$cc"
	ip netns exec "$ADDC_DCNS" dumpcap -q -i kd1 -f "tcp port 445" -w "$T/$name.pcapng" \
	    > "$T/$name.dumpcap" 2>&1 &
	cap=$!
	sleep 2
	ip netns exec "$ADDC_DIRNS" env KRB5_CONFIG="$conf" KRB5CCNAME="FILE:$cc" \
	    HOME="$home" smbclient --configfile="$home/.smb/smb.conf" \
	    "//$ADDC_FQDN/share" -m "$d" --option="client min protocol=$d" \
	    -c "put $T/hello.txt $name.txt; ls" </dev/null > "$T/$name.out" 2>&1 ||
	    { cat "$T/$name.out"; fail "smbclient $name"; }
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
done
rm -f "$OUT"/*.s*.neg-* "$OUT"/*.s*.ss-*
cp "$T"/msgs/* "$OUT/"
cp "$T/dc.keytab" "$OUT/dc.keytab"
chmod 0644 "$OUT/dc.keytab"
cp "$T/keys.txt" "$OUT/keys.txt"
klist -kte "$OUT/dc.keytab"
cat "$OUT/keys.txt"
ls -la "$OUT"
