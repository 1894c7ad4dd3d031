#!/bin/bash
# test-timeout: 300
# Issue 12: deploy/smbaccel-keytab against the test DC.
#  1. samba mode (samba-tool domain exportkeytab, run on the DC: in its
#     mount namespace) writes a root-owned 0600 keytab with DC1$'s keys;
#  2. drsuapi mode, from the client namespace, with Administrator (who holds
#     the replication rights): the keys fetched over DRSUAPI equal those of
#     the samba mode, at the account's kvno, under DC1$@REALM and the
#     --spn name; smbaccel holding that keytab keys Kerberos sessions
#     (smbdd -k 1 KiB writes and 4 KiB reads, byte-exact, keyed);
#  3. a user's keys after a password change: the current keys at the new
#     kvno and the previous ones at kvno - 1; MIT kinit -k with the fetched
#     keytab gets a ticket (the keys are the account's);
#  4. an account without replication rights gets a clear error, exit 1,
#     and no file;
#  5. more errors, each exit 1, one line naming the cause, no Python
#     traceback and no file: a password file that does not exist, a wrong
#     password ("logon to DC as USER failed (wrong password or account?)"
#     with the DC's own error after it), and the samba mode with a
#     principal the domain does not have ("no such principal": samba-tool
#     exits 0 having written nothing).
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/krb_lib.sh"
require_smbaccel "Kerberos-keyed sessions"
KTOOL=$TOP/deploy/smbaccel-keytab
[ -x "$KTOOL" ] || fail "$KTOOL is not executable"
krb_bed
echo "$ADDC_ADMIN_PASS" > "$T/admin.pw" && chmod 0600 "$T/admin.pw"

perm_ok() { [ "$(stat -c '%u %a' "$1")" = "0 600" ] || fail "$1 is $(stat -c 'uid %u mode %a' "$1"), not root's 0600"; }

info "1. samba mode on the DC"
_addc_mnt /usr/bin/python3 "$KTOOL" samba --principal 'DC1$' -s "$ADDC_CONF" -o "$T/samba.keytab" \
    > "$T/samba.out" 2>&1 || { cat "$T/samba.out"; fail "smbaccel-keytab samba failed"; }
perm_ok "$T/samba.keytab"
keys_of "$T/samba.keytab" > "$T/samba.keys"
sed 's/ [0-9a-f]*$/ .../; s/^/    /' "$T/samba.keys"
assert_eq 3 "$(wc -l < "$T/samba.keys")" "keys in the samba-mode keytab"
cmp -s <(keys_of "$KT") "$T/samba.keys" || fail "the samba-mode keytab differs from samba-tool's export"

info "2. drsuapi mode from the client side"
in_dir /usr/bin/python3 "$KTOOL" drsuapi --dc "$ADDC_FQDN" --dc-ip "$ADDC_DIR_IP" \
    --domain "$ADDC_DOMAIN" --user Administrator --password-file "$T/admin.pw" \
    --account 'DC1$' --spn "cifs/$ADDC_FQDN" -o "$T/drs.keytab" > "$T/drs.out" 2>&1 ||
    { cat "$T/drs.out"; fail "smbaccel-keytab drsuapi failed"; }
sed 's/^/    /' "$T/drs.out"
perm_ok "$T/drs.keytab"
keys_of "$T/drs.keytab" > "$T/drs.keys"
assert_eq 6 "$(wc -l < "$T/drs.keys")" "keys in the drsuapi-mode keytab (3 enctypes x 2 names)"
grep "DC1\\\$@$ADDC_REALM" "$T/drs.keys" | cmp -s - "$T/samba.keys" ||
    { diff <(grep "DC1" "$T/drs.keys") "$T/samba.keys"; fail "the replicated keys of DC1\$ differ from the exported ones"; }
[ "$(grep -c "cifs/$ADDC_FQDN@$ADDC_REALM" "$T/drs.keys")" = 3 ] || fail "no cifs/$ADDC_FQDN entries"
KRB_KEYTAB_LINE="keytab = $T/drs.keytab" krb_proxy
seed=$((RANDOM * 32768 + RANDOM + 1))
out=$(kd_smbdd write ref 1M 4 -s "$seed" -q 2>&1) || fail "direct reference write failed: $out"
snap t0
ksample_start
out=$(kc_smbdd write t-drs 1K 4096 -m SMB3_11 -s "$seed" -q -f 2>&1) ||
    { ksample_stop >/dev/null; fail "smbdd write through smbaccel failed: $out"; }
out=$(kc_smbdd verify t-drs 4K 1024 -m SMB3_11 -s "$seed" -q 2>&1) ||
    { ksample_stop >/dev/null; fail "smbdd verify through smbaccel failed: $out"; }
ksample_stop > "$T/drs.sessions"
snap t1
sed 's/^/    session: /' "$T/drs.sessions"
assert_eq "$(sha256 "$ADDC_SHARE_DIR/ref")" "$(sha256 "$ADDC_SHARE_DIR/t-drs")" "sha256 on the DC's disk"
grep -q ' tree=yes keyed=true why=- auth=kerberos$' "$T/drs.sessions" || fail "no session keyed with the fetched keytab"
grep -v ' tree=no keyed=false why=not-needed' "$T/drs.sessions" | grep -v ' keyed=true ' &&
    fail "a session was not keyed with the fetched keytab"
deltas t0 t1
assert_ge 2 "$D_sessions_keyed" "sessions_keyed with the fetched keytab"
assert_ge 1 "$D_writes_absorbed" "writes_absorbed"
stop_proxy

info "3. a user's keys after a password change, and kinit -k with them"
addc_tool user setpassword "$ADDC_USER" --newpassword='Chang3d-Pass.krb' > "$T/setpw.out" 2>&1 ||
    { cat "$T/setpw.out"; fail "samba-tool user setpassword failed"; }
in_dir /usr/bin/python3 "$KTOOL" drsuapi --dc "$ADDC_FQDN" --dc-ip "$ADDC_DIR_IP" \
    --domain "$ADDC_DOMAIN" --user Administrator --password-file "$T/admin.pw" \
    --account "$ADDC_USER" -o "$T/user.keytab" > "$T/user.out" 2>&1 ||
    { cat "$T/user.out"; fail "smbaccel-keytab drsuapi for $ADDC_USER failed"; }
keys_of "$T/user.keytab" > "$T/user.keys"
sed 's/ [0-9a-f]*$/ .../; s/^/    /' "$T/user.keys"
new=$(sort -n "$T/user.keys" | tail -n 1 | cut -d' ' -f1)
assert_eq 3 "$(awk -v k="$new" '$1 == k' "$T/user.keys" | wc -l)" "keys at the current kvno $new"
assert_ge 2 "$(awk -v k=$((new - 1)) '$1 == k' "$T/user.keys" | wc -l)" "keys of the previous password at kvno $((new - 1))"
ip netns exec "$ADDC_DIRNS" env KRB5_CONFIG="$ADDC_DIR_KRB5" KRB5CCNAME="FILE:$T/cc-kt" \
    kinit -k -t "$T/user.keytab" "$ADDC_USER@$ADDC_REALM" > "$T/kinit.out" 2>&1 ||
    { cat "$T/kinit.out"; fail "kinit -k with the fetched keytab failed: the keys are not the account's"; }

info "4. no replication rights"
rm -f "$T/x.keytab"
if in_dir /usr/bin/python3 "$KTOOL" drsuapi --dc "$ADDC_FQDN" --dc-ip "$ADDC_DIR_IP" \
    --domain "$ADDC_DOMAIN" --user "$ADDC_REPL" --password "$ADDC_REPL_PASS" \
    --account 'DC1$' -o "$T/x.keytab" > "$T/x.out" 2>&1; then
	fail "an account without replication rights got keys: $(cat "$T/x.out")"
fi
info "    $(tail -n 1 "$T/x.out")"
grep -q "replication rights" "$T/x.out" || fail "the error does not mention the replication rights"
[ -e "$T/x.keytab" ] && fail "a keytab was written anyway"

info "5. a missing password file, a wrong password, an unknown principal"
# kt_error LABEL WANT (ERE) CMD...: CMD exits 1 with WANT on its last line,
# no traceback, and leaves no $T/LABEL.keytab
kt_error() {
	local l=$1 want=$2 rc; shift 2
	"$@" -o "$T/$l.keytab" > "$T/$l.out" 2>&1
	rc=$?
	info "    $l: exit $rc, $(tail -n 1 "$T/$l.out")"
	assert_eq 1 "$rc" "5: $l: exit status"
	grep -q Traceback "$T/$l.out" && { cat "$T/$l.out"; fail "5: $l: a Python traceback"; }
	tail -n 1 "$T/$l.out" | grep -Eq "$want" || { cat "$T/$l.out"; fail "5: $l: not /$want/"; }
	[ -e "$T/$l.keytab" ] && fail "5: $l: a keytab was written anyway"
	return 0
}
drs() {
	in_dir /usr/bin/python3 "$KTOOL" drsuapi --dc "$ADDC_FQDN" --dc-ip "$ADDC_DIR_IP" \
	    --domain "$ADDC_DOMAIN" --user Administrator --account 'DC1$' "$@"
}
kt_error nopwfile "^smbaccel-keytab: cannot read the password file $T/none.pw: No such file or directory\$" \
    drs --password-file "$T/none.pw"
echo "wrong-$ADDC_ADMIN_PASS" > "$T/bad.pw"
kt_error wrongpw "^smbaccel-keytab: logon to $ADDC_FQDN as Administrator failed \(wrong password or account\?\): [a-z_]+" \
    drs --password-file "$T/bad.pw"
kt_error noprinc "^smbaccel-keytab: no such principal NOSUCH\\\$: samba-tool domain exportkeytab wrote no keys for it\$" \
    _addc_mnt /usr/bin/python3 "$KTOOL" samba --principal 'NOSUCH$' -s "$ADDC_CONF"
info "PASS"
