#!/bin/bash
# test-timeout: 300
# Issue 12: Kerberos sessions of a user in many groups.  Every group of a
# domain user travels in the PAC of each of its tickets, so a user in
# thousands of groups logs on with a ticket of tens of KiB (Windows allows
# 48000 bytes of token by default, MaxTokenSize; SMB2's 16-bit
# SecurityBufferLength caps a SESSION_SETUP's token at 64 KiB).  The DC's
# user krbbig is put in BIGPAC_GROUPS (2400) groups, and its cifs/ ticket
# must be at least BIGPAC_MIN (18000) bytes.  (Samba 4.17's DC refuses the
# session setup of a user in 3000 groups, a 25 KiB ticket, with
# STATUS_INTERNAL_ERROR, and stops answering at 5000, 41 KiB: 2400 is
# about the largest PAC it serves.)  Through smbaccel holding the DC's
# keytab:
#  1. smbdd -k (libsmbclient's AP-REQ) writes MIB (2) MiB in 1 KiB writes
#     and reads them back in 4 KiB reads (verified) at 3.1.1 and 2.1: the
#     DC's file equals the same pattern written directly with the same
#     ticket; the session keyed with auth=kerberos for krbbig, writes
#     absorbed, no unkeyed session, no bad signature;
#  2. impacket (its own AP-REQ, the ticket of the credential cache) writes
#     1 MiB in 1 KiB writes at 3.1.1 and reads it back: intact on the
#     DC's disk, keyed for krbbig, writes absorbed;
#  3. krbbig put in 3000 groups: impacket's session setup is refused with
#     the same status through smbaccel as directly (or, by a DC that
#     serves such a PAC, taken both ways), and smbaccel goes on (a session
#     of the first user still keyed and intact after it).
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/krb_lib.sh"
require_smbaccel "keyed sessions"
GROUPS_N=${BIGPAC_GROUPS:-2400}
MIN=${BIGPAC_MIN:-18000}
MIB=${BIGPAC_MIB:-2}
KIB=1024

krb_bed
out=$(addc_tool user create krbbig "$ADDC_PASS" 2>&1) || fail "samba-tool user create krbbig: $out"
t0=$(now)
addc_groups krbbig "$GROUPS_N"
info "krbbig is in $GROUPS_N groups ($(elapsed "$t0") s)"
# every helper below speaks as krbbig, from its own credential cache
KRB_FIRST_USER=$ADDC_USER KRB_FIRST_CCACHE=$ADDC_CCACHE
ADDC_USER=krbbig
ADDC_CCACHE=$T/krbbig.ccache
addc_kinit "$ADDC_CLI" "$ADDC_CLI_KRB5" "$ADDC_CCACHE"
out=$(in_cli kvno "cifs/$ADDC_FQDN" 2>&1) || fail "kvno cifs/$ADDC_FQDN as krbbig: $out"
tlen=$("$PY" - "$ADDC_CCACHE" "$ADDC_FQDN" <<'EOF'
import sys
from impacket.krb5.ccache import CCache
for c in CCache.loadFile(sys.argv[1]).credentials:
    if c["server"].prettyPrint().startswith(b"cifs/" + sys.argv[2].encode()):
        print(len(c.ticket["data"]))
EOF
)
info "krbbig's cifs/$ADDC_FQDN ticket: ${tlen:-?} bytes"
assert_ge "$MIN" "${tlen:-0}" "size of krbbig's cifs/ ticket"
krb_proxy

seed=$((RANDOM * 32768 + RANDOM + 1))
info "seed $seed"
# krbbig's session setups make the DC expand 2400 groups: on a loaded
# machine one took over libsmbclient's 20 s (ci73, directly: "Connection
# timed out"); wait as long as a Windows client does
SMBDD_T="-T 60"
out=$(kd_smbdd write ref 1M "$MIB" -s "$seed" -q $SMBDD_T 2>&1) ||
    fail "direct reference write as krbbig failed: $out"
ref=$(sha256 "$ADDC_SHARE_DIR/ref")

# keyed_as LABEL FROM: smbaccel's "keyed" lines since log line FROM
# (keyed_lines: aes256 tickets and session keys) are all krbbig's
keyed_as() {
	keyed_lines "$2" "$1" aes256-cts-hmac-sha1-96
	grep -v " auth=kerberos client=krbbig@$ADDC_REALM " "$T/$1.keyed" &&
	    fail "$1: a session of another client (above)"
}

# ---- 1. libsmbclient
for d in SMB3_11 SMB2_10; do
	l=smbdd-$d
	snap "$l-0"
	nlog=$(wc -l < "$PROXY_LOG")
	out=$(kc_smbdd write "w-$d" 1K $((MIB * 1024)) -m "$d" -s "$seed" -q -f $SMBDD_T 2>&1) ||
	    fail "$l: 1 KiB writes through smbaccel failed: $out"
	out=$(kc_smbdd read "w-$d" 4K $((MIB * 256)) -m "$d" -s "$seed" -q $SMBDD_T 2>&1) ||
	    fail "$l: 4 KiB verified reads through smbaccel failed: $out"
	snap "$l-1"
	assert_eq "$ref" "$(sha256 "$ADDC_SHARE_DIR/w-$d")" "$l: sha256 on the DC's disk vs the direct write"
	keyed_as "$l" "$nlog"
	check_deltas "$l" "$l-0" "$l-1" 2 $((MIB * 1024 * 9 / 10))
done

# ---- 2. impacket
l=imp-3.1.1
snap "$l-0"
nlog=$(wc -l < "$PROXY_LOG")
out=$(kimp write "i-$l" --dialect 3.1.1) || fail "$l: impacket's writes through smbaccel failed: $out"
want=$(echo "$out" | sed -n 's/^sha256=//p')
[ -n "$want" ] || fail "$l: impacket printed no sha256: $out"
out=$(kimp verify "i-$l" --dialect 3.1.1) || fail "$l: impacket's reads through smbaccel failed: $out"
snap "$l-1"
assert_eq "$want" "$(sha256 "$ADDC_SHARE_DIR/i-$l")" "$l: sha256 on the DC's disk vs what impacket wrote"
keyed_as "$l" "$nlog"
check_deltas "$l" "$l-0" "$l-1" 2 $((KIB * 9 / 10))

# ---- 3. a PAC the DC refuses
addc_groups krbbig 3000
rm -f "$ADDC_CCACHE"
addc_kinit "$ADDC_CLI" "$ADDC_CLI_KRB5" "$ADDC_CCACHE"
out=$(in_cli kvno "cifs/$ADDC_FQDN" 2>&1) || fail "kvno cifs/$ADDC_FQDN as krbbig in 3000 groups: $out"
st_of() { sed -n 's/.*SMB SessionError: \(STATUS_[A-Z_]*\).*/\1/p' <<<"$1" | head -n 1; }
dout=$(in_dir timeout -k 5 120 "$PY" "$TESTS_DIR/krb_impacket.py" --host "$ADDC_FQDN" \
    --addr "$ADDC_DIR_IP" --user krbbig --realm "$ADDC_REALM" write big3000 1024 "$seed" 2>&1)
drc=$?
nlog=$(wc -l < "$PROXY_LOG")
pout=$(kimp write big3000p --dialect 3.1.1)
prc=$?
info "3000 groups: directly rc=$drc $(tail -n 1 <<<"$dout"); through smbaccel rc=$prc $(tail -n 1 <<<"$pout")"
if [ $drc -eq 0 ]; then
	# a DC that serves this PAC: then smbaccel must too
	info "this DC takes a user in 3000 groups: the same is required through smbaccel"
	assert_eq 0 "$prc" "impacket's exit status through smbaccel (0 directly)"
else
	[ -n "$(st_of "$dout")" ] || fail "no SMB status in the direct refusal: $dout"
	assert_eq "$(st_of "$dout")" "$(st_of "$pout")" "the refusal's status through smbaccel vs directly"
fi
proxy_alive || fail "smbaccel died after the refused session setup"
tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -v ' debug ' | sed 's/^/    smbaccel: /' | head -n 5
ADDC_USER=$KRB_FIRST_USER ADDC_CCACHE=$KRB_FIRST_CCACHE
nlog=$(wc -l < "$PROXY_LOG")
out=$(kc_smbdd write after 1K 256 -s "$seed" -q -f $SMBDD_T 2>&1) || fail "a session after the refusal failed: $out"
assert_eq "$(head -c 262144 "$ADDC_SHARE_DIR/ref" | sha256sum | cut -d' ' -f1)" \
    "$(sha256 "$ADDC_SHARE_DIR/after")" "the file written after the refusal"
tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -q " keyed dialect=.* auth=kerberos client=$ADDC_USER@" ||
    fail "the session after the refusal was not keyed"

proxy_alive || fail "smbaccel died"
log_has "passthrough reason=" && fail "a session was relayed without a key: $(grep -m 1 'passthrough reason=' "$PROXY_LOG")"
info "PASS"
