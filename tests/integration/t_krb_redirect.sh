#!/bin/bash
# test-timeout: 300
# Issue 12: Kerberos-keyed sessions in transparent mode: the AD DC in the
# server namespace of netns.sh (198.51.100.2), smbaccel (mode =
# transparent, the DC's keytab) in the router with deploy/iptables.sh's
# REDIRECT of TCP 445; the client (192.0.2.2) resolves the DC's FQDN to the
# DC's own address and talks Kerberos to the KDC through the router (port
# 88 is not diverted).
#  1. smbdd -k writes KR_MIB (8) MiB in 1 KiB writes, reads them back in
#     4 KiB reads (verified); the DC's file equals the same pattern written
#     from the router straight to the DC (not diverted); the connection was
#     intercepted (client=192.0.2.2 server=198.51.100.2:445), its sessions
#     keyed with auth=kerberos, writes absorbed, reads served ahead;
#  2. smbclient --use-kerberos=required put/get of 16 MiB: intact, keyed.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/netns.sh"
. "$TESTS_DIR/krb_lib.sh"
require_smbaccel "transparent mode"
[ -x "$SMBDD" ] || skip "$SMBDD not built"
command -v iptables >/dev/null || skip "no iptables"
command -v kinit >/dev/null || skip "kinit not installed (krb5-user)"
IPT="$TOP/deploy/iptables.sh"
MIB=${KR_MIB:-8}

ns_setup
[ "$SERVER_IP" = "$ADDC_IP" ] || fail "netns.sh's server address $SERVER_IP is not the DC's $ADDC_IP"
addc_hosts "$NS_CLIENT" "$SERVER_IP"
addc_hosts "$NS_ROUTER" "$SERVER_IP"
addc_hosts "$NS_SERVER" "$SERVER_IP"
addc_provision
addc_start "$NS_SERVER" "$SERVER_IP"
addc_keytab "$KT"
addc_krb5_conf "$T/krb5.conf" "$SERVER_IP"
addc_kinit "$NS_CLIENT" "$T/krb5.conf" "$ADDC_CCACHE"
ns_start_proxy transparent "keytab = $KT" "read_ahead = always"
nsx "$NS_ROUTER" sh "$IPT" redirect add --in "$ROUTER_LAN_IF" --port "$PROXY_PORT" --mark 0x1 ||
    fail "iptables.sh redirect add failed"
CHOME=$(addc_home client) RHOME=$(addc_home router)
in_client() { ip netns exec "$NS_CLIENT" env KRB5_CONFIG="$T/krb5.conf" KRB5CCNAME="FILE:$ADDC_CCACHE" "$@"; }
in_router() { ip netns exec "$NS_ROUTER" env KRB5_CONFIG="$T/krb5.conf" KRB5CCNAME="FILE:$ADDC_CCACHE" "$@"; }
ndd() {	# ndd NSFUNC HOME OP PATH BS COUNT [args]
	local fn=$1 home=$2 op=$3 path=$4 bs=$5 count=$6; shift 6
	$fn env HOME="$home" timeout -k 5 120 "$SMBDD" "$op" "smb://$ADDC_FQDN/share/$path" \
	    "$bs" "$count" -k -W "$ADDC_REALM" -U "$ADDC_USER%$ADDC_PASS" "$@"
}

seed=$((RANDOM * 32768 + RANDOM + 1))
info "1. smbdd -k, 1 KiB writes from the client (seed $seed)"
snap r0
ksample_start
out=$(ndd in_client "$CHOME" write dd-client 1K $((MIB * 1024)) -s "$seed" -q -f 2>&1) ||
    { ksample_stop >/dev/null; fail "smbdd from the client failed: $out"; }
info "client: $(echo "$out" | tail -n 1)"
out=$(ndd in_client "$CHOME" verify dd-client 4K $((MIB * 256)) -s "$seed" -q 2>&1) ||
    { ksample_stop >/dev/null; fail "smbdd 4 KiB read+verify from the client failed: $out"; }
ksample_stop > "$T/r1.sessions"
snap r1
sed 's/^/    smbdd session: /' "$T/r1.sessions"
log_has "conn=[0-9]+ accepted client=$CLIENT_IP:[0-9]+ server=$SERVER_IP:445" ||
    fail "no 'accepted client=$CLIENT_IP server=$SERVER_IP:445' line: not intercepted?"
total=$(stat_get connections_total)
out=$(ndd in_router "$RHOME" write dd-direct 1K $((MIB * 1024)) -s "$seed" -q 2>&1) ||
    fail "smbdd from the router (direct) failed: $out"
assert_eq "$total" "$(stat_get connections_total)" "connections_total after the router's own smbdd (not diverted)"
assert_eq "$(sha256 "$ADDC_SHARE_DIR/dd-direct")" "$(sha256 "$ADDC_SHARE_DIR/dd-client")" \
    "sha256 on the DC's disk: intercepted vs direct write of the same pattern"
grep -q ' tree=yes keyed=true why=- auth=kerberos$' "$T/r1.sessions" || fail "no keyed Kerberos session seen"
grep -v ' tree=no keyed=false why=not-needed' "$T/r1.sessions" |
    grep -v ' keyed=true why=- auth=kerberos$' && fail "a session was not keyed (above)"
deltas r0 r1
info "sessions_keyed +$D_sessions_keyed writes_absorbed +$D_writes_absorbed ra_hits +$D_ra_hits bad_signatures +$D_bad_signatures"
assert_ge 2 "$D_sessions_keyed" "sessions_keyed"
assert_ge $((MIB * 1024 * 9 / 10)) "$D_writes_absorbed" "writes_absorbed"
assert_ge 1 "$D_ra_hits" "ra_hits"
assert_eq 0 "$D_bad_signatures" "bad_signatures"

info "2. smbclient --use-kerberos=required put/get 16 MiB from the client"
random_file "$T/big.bin" 16
keyed0=$(stat_get sessions_keyed); unkeyed0=$(stat_get sessions_unkeyed)
ksample_start
in_client env HOME="$CHOME" timeout -k 5 120 smbclient --configfile="$CHOME/.smb/smb.conf" \
    "//$ADDC_FQDN/share" -N --use-kerberos=required \
    -c "put $T/big.bin big.bin; get big.bin $T/back.bin" </dev/null > "$T/put.out" 2>&1 ||
    { ksample_stop >/dev/null; cat "$T/put.out"; fail "smbclient put/get failed"; }
ksample_stop > "$T/r2.sessions"
assert_file_eq "$T/big.bin" "$ADDC_SHARE_DIR/big.bin" "16 MiB put: the file on the DC's disk"
assert_file_eq "$T/big.bin" "$T/back.bin" "16 MiB get: the copy read back"
# keyed, by the counters: the session can be over (16 MiB each way on
# this link take about 70 ms) before the sampler's next poll sees it
sed 's/^/    smbclient session: /' "$T/r2.sessions"
assert_ge $((keyed0 + 1)) "$(stat_get sessions_keyed)" "the smbclient session keyed (sessions_keyed)"
assert_eq "$unkeyed0" "$(stat_get sessions_unkeyed)" "sessions_unkeyed during the smbclient put/get"
log_has "session=0x[0-9a-f]+ keyed .* auth=kerberos" ||
    fail "no keyed Kerberos session line in smbaccel's log"
grep -q "passthrough reason=" "$PROXY_LOG" && fail "a session was relayed without a key"
proxy_alive || fail "proxy died"
nsx "$NS_ROUTER" sh "$IPT" redirect del || fail "iptables.sh redirect del failed"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
info "PASS"
