#!/bin/bash
# test-timeout: 300
# REDIRECT deployment (mode = transparent) in three network namespaces:
# client 192.0.2.2 -> router (smbaccel, iptables via deploy/iptables.sh)
# -> server 198.51.100.2 (smbd on 445).  The client connects to the
# server's own address.
#  1. smbdd 4 MiB as 1 KiB writes from the client is intercepted (log:
#     accepted client=192.0.2.2 server=198.51.100.2:445), absorbed
#     (writes_absorbed > 0) and intact (disk sha256 equals the same pattern
#     written from the router straight to smbd, which is not intercepted);
#  2. smbclient put/get of 8 MiB random data from the client: intact;
#  3. a live session shows in `smbaccelctl conns --json` with the client's
#     address, server=198.51.100.2:445, a dialect and state relay;
#  4. HTTP to the server's port 8080 is not intercepted (connections_total
#     unchanged, http.server saw the client's own address);
#  5. --local: the router's own smbclient is diverted too (nat OUTPUT) and
#     smbaccel's marked upstream connection is not: exactly one connection;
#  6. smbaccel SIGKILLed during a transfer: the transfer fails (does not
#     hang); a new connection is refused at once (fail-closed), smbclient
#     fails; after "iptables.sh redirect del" (what
#     ExecStopPost does) the client reaches smbd directly (fail-open),
#     and that del, without --ipv6, also took the IPv6 rules the last
#     "add --ipv6" made (none left in the router's ip6tables nat table);
#  7. the nftables REDIRECT variant of deploy/nftables.conf diverts too.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/netns.sh"

require_smbaccel "transparent mode"
[ -x "$SMBDD" ] || skip "$SMBDD not built"
command -v iptables >/dev/null || skip "no iptables"
command -v curl >/dev/null || skip "no curl"
IPT="$TOP/deploy/iptables.sh"

ns_setup
ns_start_smbd
ns_http_server
ns_start_proxy transparent
nsx "$NS_ROUTER" sh "$IPT" redirect add --in "$ROUTER_LAN_IF" \
    --port "$PROXY_PORT" --mark 0x1 || fail "iptables.sh redirect add failed"
nsx "$NS_ROUTER" sh "$IPT" redirect show

# ---- 1. smbdd, 1 KiB writes
seed=$((RANDOM * 32768 + RANDOM + 1))
info "1. smbdd write 4 MiB as 1 KiB writes from the client (seed $seed)"
out=$(ns_smbdd "$NS_CLIENT" write dd-client 1K 4096 -s "$seed" -q -f 2>&1) ||
    fail "smbdd from the client failed: $out"
echo "client: $(echo "$out" | tail -n 1)"
log_has "conn=[0-9]+ accepted client=$CLIENT_IP:[0-9]+ server=$SERVER_IP:445" ||
    fail "no 'accepted client=$CLIENT_IP server=$SERVER_IP:445' line: not intercepted?"
total=$(stat_get connections_total)
assert_ge 1 "$total" "connections_total after smbdd"
assert_ge 1 "$(stat_get writes_absorbed)" "writes_absorbed (write_behind = always)"
out=$(ns_smbdd "$NS_ROUTER" write dd-direct 1K 4096 -s "$seed" -q 2>&1) ||
    fail "smbdd from the router (direct) failed: $out"
assert_eq "$total" "$(stat_get connections_total)" \
    "connections_total after the router's own smbdd (must not be intercepted)"
assert_eq 4194304 "$(stat -c %s "$SHARE_DIR/dd-client")" "size of dd-client"
assert_eq "$(sha256 "$SHARE_DIR/dd-direct")" "$(sha256 "$SHARE_DIR/dd-client")" \
    "sha256 on disk: intercepted vs direct write of the same pattern"
out=$(ns_smbdd "$NS_CLIENT" verify dd-client 4K 1024 -s "$seed" -q 2>&1) ||
    fail "smbdd 4 KiB read+verify from the client failed: $out"

# ---- 2. smbclient put/get 8 MiB
info "2. smbclient put/get 8 MiB from the client"
random_file "$T/big.bin" 8
(cd "$T" && ns_smbclient "$NS_CLIENT" "put big.bin big.bin") >"$T/put.out" 2>&1 ||
    { cat "$T/put.out"; fail "smbclient put failed"; }
assert_file_eq "$T/big.bin" "$SHARE_DIR/big.bin" "8 MiB put: file on the server's disk"
(cd "$T" && ns_smbclient "$NS_CLIENT" "get big.bin back.bin") >"$T/get.out" 2>&1 ||
    { cat "$T/get.out"; fail "smbclient get failed"; }
assert_file_eq "$T/big.bin" "$T/back.bin" "8 MiB get: copy read back"

# ---- 3. a live connection in smbaccelctl conns
info "3. a live session in smbaccelctl conns --json"
mkfifo "$T/cmd.fifo"
exec 7<>"$T/cmd.fifo"
SMBC_HOME=$(client_home live)
# (not through bg: a background job's stdin would be /dev/null)
ip netns exec "$NS_CLIENT" env HOME="$SMBC_HOME" smbclient "//$SERVER_IP/share" \
    -s "$SMBC_HOME/.smb/smb.conf" -U "$SMB_USER%$SMB_PASS" <"$T/cmd.fifo" >"$T/live.out" 2>&1 &
live_pid=$!
BG_PIDS="$BG_PIDS $live_pid"
echo "ls" >&7
conn=
for _ in $(seq 100); do
	conn=$(ns_find_conn "$CLIENT_IP" "$SERVER_IP:445") &&
	    set -- $conn && [ "$3" != "-" ] && break
	conn=
	sleep 0.1
done
[ -n "$conn" ] || { ctl conns; fail "no live connection client=$CLIENT_IP server=$SERVER_IP:445 in conns"; }
info "conns: id=$1 state=$2 dialect=$3 writes_absorbed=$4"
case $2 in relay) ;; *) fail "live connection in state '$2', expected relay" ;; esac
ctl conns
echo "quit" >&7
exec 7>&-
stop_pid "$live_pid" 10
unset SMBC_HOME

# ---- 4. other ports are not intercepted
info "4. HTTP to port 8080 is not intercepted"
total=$(stat_get connections_total)
body=$(ns_http_get "$NS_CLIENT") || fail "HTTP from the client to $SERVER_IP:8080 failed"
assert_eq "not smb" "$body" "HTTP body"
assert_eq "$total" "$(stat_get connections_total)" "connections_total after HTTP"
grep -q "^$CLIENT_IP " "$T/http.log" ||
    { cat "$T/http.log"; fail "http.server did not see the client's own address"; }

# ---- 5. local clients, and the mark that keeps smbaccel's own traffic out
info "5. --local: the router's own client is diverted, smbaccel's upstream is not"
nsx "$NS_ROUTER" sh "$IPT" redirect add --in "$ROUTER_LAN_IF" --local \
    --port "$PROXY_PORT" --mark 0x1 || fail "iptables.sh redirect add --local failed"
ns_wait_idle 10 || fail "connections still open before the --local check"
total=$(stat_get connections_total)
ns_smbclient "$NS_ROUTER" "ls" >"$T/local.out" 2>&1 ||
    { cat "$T/local.out"; fail "smbclient from the router with --local failed"; }
assert_eq $((total + 1)) "$(stat_get connections_total)" \
    "connections_total after one local smbclient (1 = diverted, more = a loop)"
log_has "accepted client=$ROUTER_SERVER_IP:[0-9]+ server=$SERVER_IP:445" ||
    fail "the local client was not diverted"
V6=
command -v ip6tables >/dev/null && V6=--ipv6
nsx "$NS_ROUTER" sh "$IPT" redirect add --in "$ROUTER_LAN_IF" --port "$PROXY_PORT" $V6 ||
    fail "iptables.sh redirect add $V6 (without --local) failed"
nsx "$NS_ROUTER" iptables -t nat -S OUTPUT | grep -q SMBACCEL &&
    fail "re-adding without --local left the OUTPUT rule"

# ---- 6. smbaccel killed: fail-closed, then fail-open by removing the rules
info "6. SIGKILL smbaccel while intercepting"
ns_smbdd_bg "$T/kill.out" "$NS_CLIENT" write dd-kill 1K 262144 -s "$seed" -q
dd_pid=$NS_BG_PID
conn=
for _ in $(seq 100); do
	conn=$(ns_find_conn "$CLIENT_IP" "$SERVER_IP:445") && set -- $conn &&
	    [ "$4" -gt 0 ] && break
	conn=
	sleep 0.1
done
[ -n "$conn" ] || fail "the smbdd transfer to kill smbaccel under did not show up in conns"
ns_kill_proxy
start=$(now)
wait "$dd_pid" && fail "smbdd succeeded although smbaccel was killed under it"
info "the transfer in progress ended $(elapsed "$start") s after the SIGKILL: $(tail -n 1 "$T/kill.out")"
start=$(now)
r=$(ns_tcp_probe "$NS_CLIENT" "$SERVER_IP" 445 10)
info "connect to $SERVER_IP:445 with smbaccel dead: $r after $(elapsed "$start") s"
assert_eq refused "$r" "new connection while smbaccel is dead (REDIRECT is fail-closed)"
if ns_smbclient "$NS_CLIENT" "ls" >"$T/dead.out" 2>&1; then
	fail "smbclient succeeded through a dead smbaccel"
fi
info "smbclient failed as expected: $(grep -m1 -iE 'refused|error|failed' "$T/dead.out")"
nsx "$NS_ROUTER" sh "$IPT" redirect del || fail "iptables.sh redirect del failed"
[ -z "$(nsx "$NS_ROUTER" iptables-save -t nat | grep SMBACCEL)" ] ||
    fail "iptables.sh redirect del left rules behind"
if [ -n "$V6" ]; then
	# the fail-open drop-in's del has no --ipv6: it must take those too
	nsx "$NS_ROUTER" ip6tables -t nat -S | grep SMBACCEL &&
	    fail "iptables.sh redirect del (no --ipv6) left the IPv6 rules of add --ipv6"
fi
r=$(ns_tcp_probe "$NS_CLIENT" "$SERVER_IP" 445 10)
assert_eq ok "$r" "connection after the rules were removed (fail-open)"
(cd "$T" && ns_smbclient "$NS_CLIENT" "put big.bin direct.bin") >"$T/direct.out" 2>&1 ||
    { cat "$T/direct.out"; fail "smbclient straight to the server failed"; }
assert_file_eq "$T/big.bin" "$SHARE_DIR/direct.bin" "put straight to the server"

# ---- 7. the nftables REDIRECT example
if command -v nft >/dev/null; then
	info "7. deploy/nftables.conf, REDIRECT variant"
	{
		sed -n '/^define/p' "$TOP/deploy/nftables.conf"
		sed -n '/^# ---- REDIRECT/,$ s/^#\([^ ]\)/\1/p' "$TOP/deploy/nftables.conf"
	} > "$T/redirect.nft"
	nsx "$NS_ROUTER" nft -f "$T/redirect.nft" ||
	    { cat "$T/redirect.nft"; fail "nft rejects the REDIRECT variant"; }
	ns_start_proxy transparent
	ns_smbclient "$NS_CLIENT" "ls" >"$T/nft.out" 2>&1 ||
	    { cat "$T/nft.out"; fail "smbclient via nft REDIRECT failed"; }
	assert_eq 1 "$(stat_get connections_total)" "connections_total via nft REDIRECT"
	total=$(stat_get connections_total)
	ns_smbclient "$NS_ROUTER" "ls" >"$T/nftlocal.out" 2>&1 ||
	    { cat "$T/nftlocal.out"; fail "smbclient from the router via nft output chain failed"; }
	assert_eq $((total + 1)) "$(stat_get connections_total)" \
	    "connections_total after a local client with the nft output chain (1 = diverted, more = a loop)"
	stop_proxy
	assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
	nsx "$NS_ROUTER" nft delete table inet smbaccel
else
	info "7. skipped: no nft"
fi
info "PASS"
