#!/bin/bash
# test-timeout: 300
# TPROXY deployment (mode = tproxy) in three network namespaces: client
# 192.0.2.2 -> router (smbaccel; iptables mangle TPROXY via
# deploy/iptables.sh, later deploy/nftables.conf) -> server 198.51.100.2
# (smbd on 445).  The client connects to the server's own address.
#  1. without CAP_NET_ADMIN smbaccel refuses to start, says why, and leaves
#     no routing behind;
#  2. while it runs, the policy routing it installs is there (ip rule
#     fwmark 0x1 -> table 100, iif lo exception, "local default dev lo" in
#     table 100; IPv4 and IPv6, tagged proto 177);
#  3. smbdd 1 KiB writes and smbclient put/get 8 MiB from the client are
#     intercepted (conns/log: client 192.0.2.2, server 198.51.100.2:445),
#     absorbed, and intact (disk sha256 vs the same pattern written from the
#     router straight to smbd); HTTP to port 8080 is not intercepted;
#  3b. a second start while it runs (same file, or another control socket)
#     is refused and leaves the running one's routing and socket alone;
#  4. SIGTERM: exit 0 and every routing entry it added is gone;
#  5. an entry the administrator made before (same rule) is used and left
#     in place at stop; with IPv6 switched off by sysctl it starts with
#     IPv4 routing only, and says so;
#  6. SIGKILL during a transfer: the transfer fails, nothing hangs; the
#     routing stays (nobody removed it); with iptables TPROXY a new
#     connection is dropped (no answer: fail-closed, bounded by the
#     client's timeout); after "iptables.sh tproxy del" (ExecStopPost) the
#     client reaches smbd directly (fail-open), and that del, without
#     --ipv6, also took the IPv6 rules "add --ipv6" made (none left in the
#     router's ip6tables mangle table); a restart adopts the
#     leftover routing and removes it at stop;
#  7. deploy/nftables.conf as shipped: intercepted while smbaccel runs;
#     after SIGKILL new connections go straight to the server (nft tproxy
#     fails open by itself); after a restart they are intercepted again;
#  8. after a SIGKILL, a start with another tproxy_mark and tproxy_table
#     names each of the dead one's rules once (per family), with the
#     commands that remove them, and leaves them; running those commands
#     leaves no routing tagged 177.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/netns.sh"

require_smbaccel "tproxy mode"
[ -x "$SMBDD" ] || skip "$SMBDD not built"
command -v iptables >/dev/null || skip "no iptables"
command -v curl >/dev/null || skip "no curl"
IPT="$TOP/deploy/iptables.sh"
MARK=0x1
TABLE=100

ns_setup
ns_start_smbd
ns_http_server
PROXY_PORT=4445

# routing_state: the tagged entries plus table $TABLE, for messages
routing_state() {
	nsx "$NS_ROUTER" ip -4 rule show
	nsx "$NS_ROUTER" ip -6 rule show
	nsx "$NS_ROUTER" ip -4 route show table $TABLE 2>/dev/null
	nsx "$NS_ROUTER" ip -6 route show table $TABLE 2>/dev/null
}

# assert_routing_present: what smbaccel installs, for both families.
assert_routing_present() {
	local f
	for f in -4 -6; do
		nsx "$NS_ROUTER" ip $f rule show | grep -Eq "^32001:.*fwmark $MARK lookup $TABLE proto (177|0xb1)" ||
		    { routing_state; fail "ip $f rule: no 'fwmark $MARK lookup $TABLE' (pref 32001) while smbaccel runs"; }
		nsx "$NS_ROUTER" ip $f rule show | grep -Eq "^32000:.*fwmark $MARK iif lo lookup main" ||
		    { routing_state; fail "ip $f rule: no 'iif lo fwmark $MARK lookup main' (pref 32000)"; }
		nsx "$NS_ROUTER" ip $f route show table $TABLE | grep -q "^local default dev lo" ||
		    { routing_state; fail "ip $f route: no 'local default dev lo' in table $TABLE"; }
	done
}

assert_routing_gone() {
	local left
	left=$(ns_tagged_routing "$NS_ROUTER")
	[ -z "$left" ] || { echo "$left"; fail "routing left behind after smbaccel stopped ($1)"; }
	[ -z "$(nsx "$NS_ROUTER" ip -4 route show table $TABLE 2>/dev/null)" ] ||
	    { routing_state; fail "table $TABLE not empty after smbaccel stopped ($1)"; }
}

# ---- 1. no CAP_NET_ADMIN
if command -v capsh >/dev/null; then
	info "1. tproxy mode without CAP_NET_ADMIN"
	ns_write_proxy_conf tproxy
	rc=0
	ip netns exec "$NS_ROUTER" timeout -k 2 20 capsh --drop=cap_net_admin -- \
	    -c "exec '$SMBACCEL' -c '$PROXY_CONF' -f" </dev/null >"$T/nocap.log" 2>&1 || rc=$?
	cat "$T/nocap.log"
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "smbaccel without CAP_NET_ADMIN: exit status $rc, expected a refusal"
	grep -q "CAP_NET_ADMIN" "$T/nocap.log" || fail "no CAP_NET_ADMIN in the error"
	assert_routing_gone "start refused"
	rm -f "$CTL_SOCK"
else
	info "1. skipped: no capsh"
fi

# ---- 2. routing while it runs
info "2. start in tproxy mode; policy routing present"
ns_start_proxy tproxy "tproxy_mark = $MARK" "tproxy_table = $TABLE"
assert_routing_present
routing_state
V6=
command -v ip6tables >/dev/null && V6=--ipv6
nsx "$NS_ROUTER" sh "$IPT" tproxy add --in "$ROUTER_LAN_IF" --port "$PROXY_PORT" \
    --mark "$MARK" $V6 || fail "iptables.sh tproxy add $V6 failed"
nsx "$NS_ROUTER" sh "$IPT" tproxy show

# ---- 3. transfers
seed=$((RANDOM * 32768 + RANDOM + 1))
info "3. smbdd write 4 MiB as 1 KiB writes from the client (seed $seed)"
out=$(ns_smbdd "$NS_CLIENT" write dd-client 1K 4096 -s "$seed" -q -f 2>&1) ||
    fail "smbdd from the client failed: $out"
echo "client: $(echo "$out" | tail -n 1)"
log_has "conn=[0-9]+ accepted client=$CLIENT_IP:[0-9]+ server=$SERVER_IP:445" ||
    fail "no 'accepted client=$CLIENT_IP server=$SERVER_IP:445' line: not intercepted?"
assert_ge 1 "$(stat_get writes_absorbed)" "writes_absorbed (write_behind = always)"
total=$(stat_get connections_total)
out=$(ns_smbdd "$NS_ROUTER" write dd-direct 1K 4096 -s "$seed" -q 2>&1) ||
    fail "smbdd from the router (direct; smbaccel's mark must not loop it) failed: $out"
assert_eq "$total" "$(stat_get connections_total)" "connections_total after the router's own smbdd"
assert_eq "$(sha256 "$SHARE_DIR/dd-direct")" "$(sha256 "$SHARE_DIR/dd-client")" \
    "sha256 on disk: intercepted vs direct write of the same pattern"
out=$(ns_smbdd "$NS_CLIENT" verify dd-client 4K 1024 -s "$seed" -q 2>&1) ||
    fail "smbdd 4 KiB read+verify from the client failed: $out"

info "3. smbclient put/get 8 MiB from the client"
random_file "$T/big.bin" 8
(cd "$T" && ns_smbclient "$NS_CLIENT" "put big.bin big.bin") >"$T/put.out" 2>&1 ||
    { cat "$T/put.out"; fail "smbclient put failed"; }
assert_file_eq "$T/big.bin" "$SHARE_DIR/big.bin" "8 MiB put: file on the server's disk"
(cd "$T" && ns_smbclient "$NS_CLIENT" "get big.bin back.bin") >"$T/get.out" 2>&1 ||
    { cat "$T/get.out"; fail "smbclient get failed"; }
assert_file_eq "$T/big.bin" "$T/back.bin" "8 MiB get: copy read back"

info "3. live connection in smbaccelctl conns"
ns_smbdd_bg "$T/live.out" "$NS_CLIENT" write dd-live 1K 65536 -s "$seed" -q
dd_pid=$NS_BG_PID
conn=
for _ in $(seq 100); do
	conn=$(ns_find_conn "$CLIENT_IP" "$SERVER_IP:445") && set -- $conn &&
	    [ "$3" != "-" ] && [ "$4" -gt 0 ] && break
	conn=
	sleep 0.1
done
[ -n "$conn" ] || { ctl conns; fail "no live connection client=$CLIENT_IP server=$SERVER_IP:445 with absorbed writes"; }
info "conns: id=$1 state=$2 dialect=$3 writes_absorbed=$4"
ctl conns

info "3. HTTP to port 8080 is not intercepted"
total=$(stat_get connections_total)
body=$(ns_http_get "$NS_CLIENT") || fail "HTTP from the client to $SERVER_IP:8080 failed"
assert_eq "not smb" "$body" "HTTP body"
assert_eq "$total" "$(stat_get connections_total)" "connections_total after HTTP"
grep -q "^$CLIENT_IP " "$T/http.log" || fail "http.server did not see the client's own address"

wait "$dd_pid" || fail "smbdd 64 MiB transfer failed: $(tail -n 3 "$T/live.out")"
out=$(ns_smbdd "$NS_ROUTER" verify dd-live 64K 1024 -s "$seed" -q 2>&1) ||
    fail "dd-live on the server does not hold the pattern: $out"

# ---- 3b. a second start while it runs (an administrator trying the
# configuration by hand beside the service): refused before it touches
# anything.  Same file: the control socket answers; another control
# socket: the port is taken, found before any routing is made.  (Before:
# the second one took the running one's routing for a dead instance's
# leftovers, adopted it, failed at listen, and removed it: the running
# smbaccel was cut off, TPROXY'd SYNs dropped.)
info "3b. a second smbaccel while one runs"
second() {	# second CONF LOG: run a second smbaccel in the router, rc
	ip netns exec "$NS_ROUTER" timeout -k 2 20 "$SMBACCEL" -c "$1" -f \
	    </dev/null >"$2" 2>&1
}
rc=0; second "$PROXY_CONF" "$T/second.log" || rc=$?
cat "$T/second.log"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a second smbaccel with the same file: exit status $rc"
grep -q "another smbaccel is running: its control socket" "$T/second.log" ||
    fail "the second smbaccel does not say that another one runs"
sed "s#^control_socket = .*#control_socket = $T/second.sock#" "$PROXY_CONF" > "$T/second.conf"
rc=0; second "$T/second.conf" "$T/second2.log" || rc=$?
cat "$T/second2.log"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a second smbaccel on the same port: exit status $rc"
! grep -q "tproxy: " "$T/second2.log" || fail "the second smbaccel touched the policy routing"
assert_routing_present
[ -S "$CTL_SOCK" ] && ctl stats >/dev/null || fail "the running smbaccel's control socket is gone"
out=$(ns_smbdd "$NS_CLIENT" write dd-second 1K 256 -s "$seed" -q -f 2>&1) ||
    fail "smbdd through the running smbaccel after the second start: $out"

# ---- 4. SIGTERM removes the routing
info "4. SIGTERM: routing removed"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
assert_routing_gone "SIGTERM"
log_has "tproxy: removed ip -4 rule pref 32001" || fail "no 'tproxy: removed' log line"

# ---- 5. an administrator's own entry is used and kept
info "5. a rule the administrator added is kept"
nsx "$NS_ROUTER" ip -4 rule add pref 31000 fwmark $MARK lookup $TABLE ||
    fail "cannot add the administrator's rule"
ns_start_proxy tproxy "tproxy_mark = $MARK" "tproxy_table = $TABLE"
log_has "equivalent rule is already there \(pref 31000\)" || fail "the existing rule was not recognised"
stop_proxy
nsx "$NS_ROUTER" ip -4 rule show | grep -q "^31000:.*fwmark $MARK lookup $TABLE" ||
    fail "smbaccel removed a rule it did not add"
assert_routing_gone "with an administrator's rule"
nsx "$NS_ROUTER" ip -4 rule del pref 31000

# ---- 5b. IPv6 switched off by sysctl (a common hardening of routers):
# IPv4 routing only, said in the log (before: the kernel's EACCES for the
# IPv6 local route, logged as "No Access", refused the start)
info "5b. net.ipv6.conf.all.disable_ipv6 = 1: IPv4 routing only"
nsx "$NS_ROUTER" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
ns_start_proxy tproxy "tproxy_mark = $MARK" "tproxy_table = $TABLE"
log_has "tproxy: IPv6 is disabled on lo" || fail "no log line saying IPv6 is disabled"
nsx "$NS_ROUTER" ip -4 rule show | grep -Eq "^32001:.*fwmark $MARK lookup $TABLE" ||
    { routing_state; fail "no IPv4 rule with IPv6 disabled"; }
out=$(ns_smbdd "$NS_CLIENT" write dd-noipv6 1K 256 -s "$seed" -q -f 2>&1) ||
    fail "smbdd through smbaccel with IPv6 disabled on the router: $out"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status with IPv6 disabled"
assert_routing_gone "IPv6 disabled"
nsx "$NS_ROUTER" sysctl -qw net.ipv6.conf.all.disable_ipv6=0
nsx "$NS_ROUTER" sysctl -qw net.ipv6.conf.lo.disable_ipv6=0

# ---- 6. SIGKILL
info "6. SIGKILL during a transfer"
ns_start_proxy tproxy "tproxy_mark = $MARK" "tproxy_table = $TABLE"
ns_smbdd_bg "$T/kill.out" "$NS_CLIENT" write dd-kill 1K 262144 -s "$seed" -q
dd_pid=$NS_BG_PID
for _ in $(seq 100); do
	conn=$(ns_find_conn "$CLIENT_IP" "$SERVER_IP:445") && set -- $conn && [ "$4" -gt 0 ] && break
	sleep 0.1
done
ns_kill_proxy
start=$(now)
wait "$dd_pid" && fail "smbdd succeeded although smbaccel was killed under it"
info "the transfer ended $(elapsed "$start") s after the SIGKILL: $(tail -n 1 "$T/kill.out")"
assert_routing_present
r=$(ns_tcp_probe "$NS_CLIENT" "$SERVER_IP" 445 3)
info "connect to $SERVER_IP:445 with smbaccel dead (iptables TPROXY): $r"
assert_eq timeout "$r" "new connection with smbaccel dead: xt_TPROXY drops it"
nsx "$NS_ROUTER" sh "$IPT" tproxy del || fail "iptables.sh tproxy del failed"
[ -z "$(nsx "$NS_ROUTER" iptables-save -t mangle | grep SMBACCEL)" ] ||
    fail "iptables.sh tproxy del left rules behind"
if [ -n "$V6" ]; then
	# the fail-open drop-in's del has no --ipv6: it must take those too
	nsx "$NS_ROUTER" ip6tables -t mangle -S | grep SMBACCEL &&
	    fail "iptables.sh tproxy del (no --ipv6) left the IPv6 rules of add --ipv6"
fi
r=$(ns_tcp_probe "$NS_CLIENT" "$SERVER_IP" 445 10)
assert_eq ok "$r" "connection after the rules were removed (fail-open)"
(cd "$T" && ns_smbclient "$NS_CLIENT" "put big.bin direct.bin") >"$T/direct.out" 2>&1 ||
    { cat "$T/direct.out"; fail "smbclient straight to the server failed"; }
assert_file_eq "$T/big.bin" "$SHARE_DIR/direct.bin" "put straight to the server"

# ---- 7. deploy/nftables.conf as shipped
if command -v nft >/dev/null; then
	info "7. deploy/nftables.conf (TPROXY); restart adopts the leftover routing"
	nsx "$NS_ROUTER" nft -f "$TOP/deploy/nftables.conf" || fail "nft rejects deploy/nftables.conf"
	ns_start_proxy tproxy "tproxy_mark = $MARK" "tproxy_table = $TABLE"
	log_has "tproxy: adopting leftover rule pref 32001" || fail "leftover routing not adopted"
	(cd "$T" && ns_smbclient "$NS_CLIENT" "put big.bin nft1.bin") >"$T/nft1.out" 2>&1 ||
	    { cat "$T/nft1.out"; fail "smbclient via nft TPROXY failed"; }
	assert_eq 1 "$(stat_get connections_total)" "connections_total via nft TPROXY"
	assert_file_eq "$T/big.bin" "$SHARE_DIR/nft1.bin" "put via nft TPROXY"
	ns_kill_proxy
	r=$(ns_tcp_probe "$NS_CLIENT" "$SERVER_IP" 445 10)
	assert_eq ok "$r" "new connection with smbaccel dead under nft tproxy (fails open)"
	(cd "$T" && ns_smbclient "$NS_CLIENT" "put big.bin nft2.bin") >"$T/nft2.out" 2>&1 ||
	    { cat "$T/nft2.out"; fail "smbclient with smbaccel dead under nft tproxy failed"; }
	assert_file_eq "$T/big.bin" "$SHARE_DIR/nft2.bin" "put straight to the server (nft fail-open)"
	ns_start_proxy tproxy "tproxy_mark = $MARK" "tproxy_table = $TABLE"
	ns_smbclient "$NS_CLIENT" "ls" >"$T/nft3.out" 2>&1 ||
	    { cat "$T/nft3.out"; fail "smbclient via nft TPROXY after the restart failed"; }
	assert_eq 1 "$(stat_get connections_total)" "connections_total after the restart"
	stop_proxy
	assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
	assert_routing_gone "SIGTERM after adoption"
	nsx "$NS_ROUTER" nft delete table inet smbaccel
else
	info "7. skipped: no nft; stopping the leftover routing by a clean start/stop"
	ns_start_proxy tproxy "tproxy_mark = $MARK" "tproxy_table = $TABLE"
	stop_proxy
	assert_routing_gone "SIGTERM after adoption"
fi

# ---- 8. leftovers of another mark and table
info "8. SIGKILL, then a start with another tproxy_mark and tproxy_table"
ns_start_proxy tproxy "tproxy_mark = $MARK" "tproxy_table = $TABLE"
ns_kill_proxy
from=$(wc -l < "$PROXY_LOG")
ns_start_proxy tproxy "tproxy_mark = 0x2" "tproxy_table = 101"
tail -n +"$((from + 1))" "$PROXY_LOG" | grep "was installed by another smbaccel" > "$T/foreign.log" || true
cat "$T/foreign.log"
for f in -4 -6; do
	for want in "pref 32000 fwmark 0x1 lookup main" "pref 32001 fwmark 0x1 lookup $TABLE"; do
		grep -q -- "$want proto 177 .*ip $f rule del $want" "$T/foreign.log" ||
		    { routing_state; fail "no warning naming the leftover ip $f rule '$want' with its removal"; }
	done
	grep -q -- "ip $f rule del pref 32001 fwmark 0x1 lookup $TABLE; ip $f route flush table $TABLE proto 177" "$T/foreign.log" ||
	    fail "the ip $f warning does not say how to flush table $TABLE's leftover route"
done
assert_eq 0 "$(head -n "$from" "$PROXY_LOG" | grep -c "installed by another smbaccel")" \
    "leftover warnings in sections 1-7 (none of their rules was another instance's)"
n=$(grep -c . "$T/foreign.log")
assert_eq 4 "$n" "leftover rules named (two per family; none of the running instance's own)"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
left=$(ns_tagged_routing "$NS_ROUTER")
echo "$left" | grep -q "fwmark 0x2" && fail "the stopped instance left its own fwmark 0x2 routing"
echo "$left" | grep -q "fwmark 0x1 lookup $TABLE" || fail "another instance's rules were removed (only named)"
# the commands the warnings give remove them all
sed 's/.*remove it: //' "$T/foreign.log" | tr ';' '\n' | while read -r cmd; do
	[ -n "$cmd" ] && nsx "$NS_ROUTER" $cmd
done
assert_routing_gone "the commands of the warnings run"
info "PASS"
