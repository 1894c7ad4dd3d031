#!/bin/bash
# test-timeout: 120
# No redirect loop in the transparent modes.  smbaccel's upstream sockets
# carry tproxy_mark (SO_MARK, CAP_NET_ADMIN) so that the interception
# rules can skip them; unmarked, a REDIRECT rule hands smbaccel's own
# connection to a server back to it, which connects again, and so on
# (33 connections within milliseconds from one client, seen without
# CAP_NET_ADMIN).  Inside a private network namespace (only lo):
#  1. mode = transparent under capsh without cap_net_admin and
#     cap_net_raw: smbaccel -t fails naming SO_MARK and tproxy_mark and
#     both capabilities ("needs CAP_NET_ADMIN or CAP_NET_RAW"), and the
#     daemon refuses to start (exit 1, the reason logged) instead of
#     running unmarked; with cap_net_raw alone smbaccel -t passes (Linux
#     5.17 and later: SO_MARK takes either); in forward mode, without
#     the capabilities, it starts.
#  2. transparent, with an iptables REDIRECT of port SMBD_PORT to
#     smbaccel that skips marked packets (as deploy/iptables.sh does):
#     smbclient to SMBD_PORT is diverted through smbaccel and served
#     (one connection accepted, the put file intact on smbd's disk).
#  3. the same REDIRECT without the mark exception: smbaccel's own
#     upstream connection comes back to it and is refused as a loop
#     (logged, naming the connection); one client connection gives at
#     most 2 accepts.  Before the fix: the daemon started in 1, and in 3
#     the connections multiplied until max_connections.
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's transparent mode"
command -v capsh >/dev/null || skip "capsh (libcap2-bin) not installed"
in_netns_with_iptables

IPT="iptables -w"
start_smbd
P=$(free_port) || fail "no free port"
conf() {	# conf MODE: a policy for this test
	{
		echo "[global]"
		echo "listen = 127.0.0.1:$P"
		[ "$1" = forward ] && echo "upstream = 127.0.0.1:$SMBD_PORT"
		echo "mode = $1"
		echo "control_socket = $CTL_SOCK"
		echo "max_connections = 200"
	} > "$PROXY_CONF"
}
nocap() { capsh --drop=cap_net_admin,cap_net_raw -- -c 'exec "$@"' nocap "$@"; }

info "1. without CAP_NET_ADMIN"
conf transparent
"$SMBACCEL" -t -c "$PROXY_CONF" > "$T/t-root.out" 2>&1 || { cat "$T/t-root.out"; fail "1: smbaccel -t as root"; }
if nocap "$SMBACCEL" -t -c "$PROXY_CONF" > "$T/t-nocap.out" 2>&1; then
	cat "$T/t-nocap.out"; fail "1: smbaccel -t passes a transparent policy it cannot mark for"
fi
sed 's/^/    /' "$T/t-nocap.out"
grep -q "refuses SO_MARK 0x1 (tproxy_mark)" "$T/t-nocap.out" || fail "1: smbaccel -t does not name SO_MARK"
grep -q "(needs CAP_NET_ADMIN or CAP_NET_RAW)" "$T/t-nocap.out" ||
    fail "1: smbaccel -t does not name both capabilities SO_MARK takes"
kv=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')
if [ "$kv" -ge 5017 ]; then
	capsh --drop=cap_net_admin -- -c 'exec "$@"' rawonly "$SMBACCEL" -t -c "$PROXY_CONF" \
	    > "$T/t-raw.out" 2>&1 || { cat "$T/t-raw.out"; fail "1: smbaccel -t refuses transparent with CAP_NET_RAW alone"; }
fi
nocap "$SMBACCEL" -c "$PROXY_CONF" -f > "$T/nocap.log" 2>&1 &
pid=$!
BG_PIDS="$BG_PIDS $pid"
n=100
while kill -0 $pid 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
if kill -0 $pid 2>/dev/null; then
	cat "$T/nocap.log"; stop_pid $pid 2; fail "1: smbaccel started in mode = transparent without CAP_NET_ADMIN"
fi
wait $pid
rc=$?
sed 's/^/    /' "$T/nocap.log"
assert_eq 1 "$rc" "1: exit status"
grep -q "cannot set SO_MARK 0x1 (tproxy_mark) on upstream sockets (needs CAP_NET_ADMIN or CAP_NET_RAW)" "$T/nocap.log" ||
    fail "1: the reason (and both capabilities) not logged"
conf forward
nocap "$SMBACCEL" -c "$PROXY_CONF" -f > "$T/fwd.log" 2>&1 &
pid=$!
BG_PIDS="$BG_PIDS $pid"
wait_port "$P" 10 "$pid" || { cat "$T/fwd.log"; fail "1: forward mode without CAP_NET_ADMIN did not start"; }
stop_pid $pid 5

run_transparent() {
	conf transparent
	: > "$PROXY_LOG"
	"$SMBACCEL" -c "$PROXY_CONF" -f > "$PROXY_LOG" 2>&1 &
	PROXY_PID=$!
	n=100
	until grep -q "smbaccel started" "$PROXY_LOG"; do
		kill -0 $PROXY_PID 2>/dev/null && [ $n -gt 0 ] || { cat "$PROXY_LOG"; fail "transparent smbaccel did not start"; }
		sleep 0.1; n=$((n - 1))
	done
}
accepted() { grep -c "accepted client=" "$PROXY_LOG"; }

info "2. REDIRECT skipping smbaccel's mark: served"
run_transparent
$IPT -t nat -A OUTPUT -p tcp -d 127.0.0.1 --dport "$SMBD_PORT" -m mark --mark 0x1 -j RETURN || fail "iptables"
$IPT -t nat -A OUTPUT -p tcp -d 127.0.0.1 --dport "$SMBD_PORT" -j REDIRECT --to-ports "$P" || fail "iptables"
head -c 1048576 /dev/urandom > "$T/put.bin"
smbc "$SMBD_PORT" SMB3_11 "put $T/put.bin put.bin" > "$T/put.out" 2>&1 || { cat "$T/put.out"; fail "2: smbclient through the redirect"; }
assert_file_eq "$T/put.bin" "$SHARE_DIR/put.bin" "2: the file put through the redirect"
assert_eq 1 "$(accepted)" "2: connections accepted"
stop_proxy
$IPT -t nat -F OUTPUT

info "3. REDIRECT without the mark exception: the loop is refused"
run_transparent
$IPT -t nat -A OUTPUT -p tcp -d 127.0.0.1 --dport "$SMBD_PORT" -j REDIRECT --to-ports "$P" || fail "iptables"
"$PY" -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(2)' "$SMBD_PORT" 2>/dev/null
sleep 0.5
grep -E "loop|refusing" "$PROXY_LOG" | head -n 3 | sed 's/^/    /'
info "  connections accepted: $(accepted)"
grep -Eq "refusing client=127\.0\.0\.1:[0-9]+: it is the upstream connection of conn=1, diverted back to smbaccel: a loop" "$PROXY_LOG" ||
    fail "3: smbaccel's own connection diverted back was not refused as a loop"
[ "$(accepted)" -le 2 ] || fail "3: one client connection gave $(accepted) accepted connections"
proxy_alive || fail "proxy died"
stop_proxy
info "PASS"
