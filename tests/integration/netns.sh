# tests/integration/netns.sh - three network namespaces for the transparent
# mode tests (bash; source after lib.sh).
#
#    client ns               router ns                   server ns
#   192.0.2.2/24 c0 ==== r0 192.0.2.1/24
#                           198.51.100.1/24 r1 ==== s0 198.51.100.2/24
#
# The router forwards (ip_forward=1); client and server have a route to the
# other side's /24 via the router and nothing else: no default route, so no
# packet can leave the three namespaces.  The veth pairs are created inside
# the namespaces, so their names cannot collide with anything on the host.
# The namespaces are added to lib.sh's NETNS_LIST, so cleanup() deletes them
# (and with them the veths, the firewall rules and the routing in them) even
# when a test fails.
#
#   ns_setup                      make the three; names in NS_CLIENT, NS_ROUTER, NS_SERVER
#   ns_teardown                   delete them now (cleanup does it anyway)
#   nsx NS CMD...                 run CMD in namespace NS
#   ns_start_smbd                 smbd in NS_SERVER on $SERVER_IP:445
#   ns_start_proxy MODE [lines]   bin/smbaccel in NS_ROUTER, 0.0.0.0:$PROXY_PORT
#   ns_kill_proxy                 SIGKILL it (no cleanup of its own)
#   ns_smbclient NS CMDS [args]   smbclient //$SERVER_IP/share from NS
#   ns_smbdd NS OP PATH BS COUNT [args]   bin/smbdd on smb://$SERVER_IP/share/PATH
#   ns_smbdd_bg OUT NS OP PATH BS COUNT [args]   the same in the background
#   ns_find_conn CLIENT_IP SERVER      a connection in smbaccelctl conns --json
#   ns_tagged_routing NS          rules/routes tagged "proto 177" (smbaccel's)
#   ns_http_server, ns_http_get NS     a non-SMB service on $SERVER_IP:8080
#   ns_tcp_probe NS HOST PORT SECS       connect once; prints ok|refused|timeout|error

CLIENT_IP=192.0.2.2
ROUTER_CLIENT_IP=192.0.2.1
ROUTER_SERVER_IP=198.51.100.1
SERVER_IP=198.51.100.2
ROUTER_LAN_IF=r0              # the router's client-side interface
NS_CLIENT= NS_ROUTER= NS_SERVER=

nsx() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# _ns_add NAME: create a namespace with lo up, registered for cleanup.
_ns_add() {
	ip netns add "$1" 2>/dev/null || return 1
	NETNS_LIST="$NETNS_LIST $1"
	nsx "$1" ip link set lo up
}

ns_setup() {
	local base=sa$$x$RANDOM
	command -v ip >/dev/null || skip "no ip(8)"
	NS_CLIENT=$base-cli NS_ROUTER=$base-rtr NS_SERVER=$base-srv
	_ns_add "$NS_CLIENT" || skip "cannot create network namespaces (not root?)"
	_ns_add "$NS_ROUTER" && _ns_add "$NS_SERVER" || fail "cannot create namespaces"
	ip link add c0 netns "$NS_CLIENT" type veth peer name r0 netns "$NS_ROUTER" &&
	ip link add s0 netns "$NS_SERVER" type veth peer name r1 netns "$NS_ROUTER" ||
	    skip "cannot create veth pairs"
	nsx "$NS_CLIENT" ip addr add "$CLIENT_IP/24" dev c0 &&
	nsx "$NS_ROUTER" ip addr add "$ROUTER_CLIENT_IP/24" dev r0 &&
	nsx "$NS_ROUTER" ip addr add "$ROUTER_SERVER_IP/24" dev r1 &&
	nsx "$NS_SERVER" ip addr add "$SERVER_IP/24" dev s0 &&
	nsx "$NS_CLIENT" ip link set c0 up &&
	nsx "$NS_ROUTER" ip link set r0 up &&
	nsx "$NS_ROUTER" ip link set r1 up &&
	nsx "$NS_SERVER" ip link set s0 up &&
	nsx "$NS_CLIENT" ip route add 198.51.100.0/24 via "$ROUTER_CLIENT_IP" &&
	nsx "$NS_SERVER" ip route add 192.0.2.0/24 via "$ROUTER_SERVER_IP" &&
	nsx "$NS_ROUTER" sysctl -qw net.ipv4.ip_forward=1 ||
	    fail "cannot configure the namespaces"
	# the path works when a connect to a closed port on the server is
	# answered with a RST (no ping(8) needed)
	local n=50
	while [ $n -gt 0 ] && [ "$(ns_tcp_probe "$NS_CLIENT" "$SERVER_IP" 9 1)" != refused ]; do
		sleep 0.1; n=$((n - 1))
	done
	[ $n -gt 0 ] || fail "client namespace cannot reach $SERVER_IP through the router"
	info "namespaces: client $NS_CLIENT ($CLIENT_IP), router $NS_ROUTER, server $NS_SERVER ($SERVER_IP)"
}

ns_teardown() {
	local ns
	for ns in "$NS_CLIENT" "$NS_ROUTER" "$NS_SERVER"; do
		[ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
	done
	NS_CLIENT= NS_ROUTER= NS_SERVER=
}

# ns_tcp_probe NS HOST PORT SECS: one TCP connect from NS; prints ok,
# refused, timeout or error.  Never takes longer than SECS (+1).
ns_tcp_probe() {
	nsx "$1" timeout -k 1 "$4" "$PY" - "$2" "$3" <<'EOF' 2>/dev/null || echo timeout
import socket, sys
s = socket.socket()
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    print("ok")
except ConnectionRefusedError:
    print("refused")
except ConnectionResetError:
    print("reset")
except OSError as e:
    print("error", e.errno)
EOF
}

# _ns_port_listening NS PORT: something listens on TCP PORT in NS.
_ns_port_listening() {
	nsx "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q .
}

# ns_start_smbd: a private smbd in NS_SERVER listening on $SERVER_IP:445
# only (NS_SMBD_INTERFACES: other addresses), with the same configuration, shares, user, private directories and
# private mount namespace as lib.sh's start_smbd (write_smbd_conf,
# launch_smbd).  Stopped by lib.sh's stop_smbd (pid file), from cleanup.
ns_start_smbd() {
	ensure_test_user
	SMBD_NETBIOS=SMBACCELNS SMBD_INTERFACES=${NS_SMBD_INTERFACES:-$SERVER_IP/24} SMBD_LISTEN_PORT=445 \
	    write_smbd_conf
	launch_smbd "$NS_SERVER"
	local n=200
	while [ $n -gt 0 ] && ! _ns_port_listening "$NS_SERVER" 445; do
		sleep 0.1; n=$((n - 1))
	done
	[ $n -gt 0 ] || fail "smbd is not listening on $SERVER_IP:445"
	SMBD_PID=$(smbd_pid_from_file) || fail "smbd wrote no pid file"
	info "smbd pid $SMBD_PID on $SERVER_IP:445 in $NS_SERVER"
}

# ns_write_proxy_conf MODE [lines...]: smbaccel config for the router.
ns_write_proxy_conf() {
	local mode=$1 l; shift
	{
		echo "[global]"
		echo "listen = 0.0.0.0:$PROXY_PORT"
		echo "mode = $mode"
		echo "control_socket = $CTL_SOCK"
		for l in "$@"; do echo "$l"; done
		echo ""
		echo "[share share]"
		echo "write_behind = always"
	} > "$PROXY_CONF"
}

# ns_start_proxy MODE [lines...]: bin/smbaccel in NS_ROUTER on
# 0.0.0.0:$PROXY_PORT (default 4445); waits until it listens and answers on
# its control socket.  (It is not probed with a connection: in transparent
# modes a connection made straight to the listener is not a client.)
ns_start_proxy() {
	[ -x "$SMBACCEL" ] || fail "$SMBACCEL not built"
	PROXY_PORT=${PROXY_PORT:-4445}
	ns_write_proxy_conf "$@"
	echo "---- start $(date +%T) mode $1" >> "$PROXY_LOG"
	# "ip netns exec" execs smbaccel, so $! is smbaccel's own pid (nsx, a
	# function, would leave a subshell in between)
	ip netns exec "$NS_ROUTER" "$SMBACCEL" -c "$PROXY_CONF" -f </dev/null >>"$PROXY_LOG" 2>&1 &
	PROXY_PID=$!
	local n=100
	while [ $n -gt 0 ]; do
		kill -0 "$PROXY_PID" 2>/dev/null || { wait "$PROXY_PID"; PROXY_PID=; fail "smbaccel exited at start"; }
		_ns_port_listening "$NS_ROUTER" "$PROXY_PORT" && [ -S "$CTL_SOCK" ] &&
		    ctl stats >/dev/null 2>&1 && break
		sleep 0.1; n=$((n - 1))
	done
	[ $n -gt 0 ] || fail "smbaccel is not listening on :$PROXY_PORT in $NS_ROUTER"
	info "smbaccel pid $PROXY_PID, mode $1, listening on 0.0.0.0:$PROXY_PORT in $NS_ROUTER"
}

# ns_kill_proxy: SIGKILL, as a crash would; nothing is cleaned up by it.
ns_kill_proxy() {
	[ -n "$PROXY_PID" ] || return 0
	kill -KILL "$PROXY_PID" 2>/dev/null
	wait "$PROXY_PID" 2>/dev/null
	PROXY_PID=
	rm -f "$CTL_SOCK"
}

# ns_smbclient NS CMDS [args...]: smbclient //$SERVER_IP/share from NS.
ns_smbclient() {
	local ns=$1 cmds=$2; shift 2
	local home=${SMBC_HOME:-$(client_home "ns")}
	nsx "$ns" env HOME="$home" timeout -k 5 120 smbclient "//$SERVER_IP/share" \
	    -s "$home/.smb/smb.conf" -U "$SMB_USER%$SMB_PASS" -c "$cmds" "$@"
}

# ns_smbdd NS write|read|verify PATH BS COUNT [args...]
ns_smbdd() {
	local ns=$1 op=$2 path=$3 bs=$4 count=$5; shift 5
	[ -x "$SMBDD" ] || fail "$SMBDD not built"
	local home=${SMBC_HOME:-$(client_home "nsdd")}
	nsx "$ns" env HOME="$home" timeout -k 5 120 "$SMBDD" "$op" \
	    "smb://$SERVER_IP/share/$path" "$bs" "$count" -U "$SMB_USER%$SMB_PASS" "$@"
}

# ns_smbdd_bg OUT NS OP PATH BS COUNT [args...]: ns_smbdd in the
# background, output to OUT; its pid (that of timeout(1), which passes a
# SIGTERM on to smbdd) in NS_BG_PID and in lib.sh's BG_PIDS.
ns_smbdd_bg() {
	local out=$1 ns=$2 op=$3 path=$4 bs=$5 count=$6; shift 6
	local home=${SMBC_HOME:-$(client_home "nsdd")}
	ip netns exec "$ns" env HOME="$home" timeout -k 5 120 "$SMBDD" "$op" \
	    "smb://$SERVER_IP/share/$path" "$bs" "$count" -U "$SMB_USER%$SMB_PASS" \
	    "$@" >"$out" 2>&1 &
	NS_BG_PID=$!
	BG_PIDS="$BG_PIDS $NS_BG_PID"
}

# ns_tagged_routing NS: rules and routes in NS tagged by smbaccel (proto 177).
ns_tagged_routing() {
	{
		nsx "$1" ip -4 rule show
		nsx "$1" ip -6 rule show
		nsx "$1" ip -4 route show table all
		nsx "$1" ip -6 route show table all
	} 2>/dev/null | grep -E 'proto (177|0xb1)\b'
}

# ns_find_conn CLIENT_IP SERVER_ADDR: from `smbaccelctl conns --json`, print
# "id state dialect writes_absorbed" of the first connection whose client
# address is CLIENT_IP and whose server is SERVER_ADDR (ip:port); false if
# there is none.
ns_find_conn() {
	ctl conns --json 2>/dev/null | "$PY" -c '
import json, sys
cli, srv = sys.argv[1], sys.argv[2]
for c in json.load(sys.stdin).get("conns", []):
    if c["client"].rsplit(":", 1)[0] == cli and c["server"] == srv:
        print(c["id"], c["state"], c["dialect"], c["writes_absorbed"])
        sys.exit(0)
sys.exit(1)' "$1" "$2"
}

# ns_wait_idle SECS: wait until smbaccel has no connection left.
ns_wait_idle() {
	local n=$(( $1 * 10 ))
	while [ $n -gt 0 ]; do
		[ "$(stat_get connections_active)" = 0 ] && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}

# ns_http_server: python http.server on $SERVER_IP:8080 in NS_SERVER (a
# service on another port, which must not be intercepted).  Its log is
# $T/http.log.
ns_http_server() {
	mkdir -p "$T/www" && echo "not smb" > "$T/www/index.txt"
	bg ip netns exec "$NS_SERVER" "$PY" -m http.server 8080 --bind "$SERVER_IP" \
	    --directory "$T/www" >"$T/http.log" 2>&1
	local n=100
	while [ $n -gt 0 ] && ! _ns_port_listening "$NS_SERVER" 8080; do
		sleep 0.1; n=$((n - 1))
	done
	[ $n -gt 0 ] || fail "http.server did not start"
}

# ns_http_get NS: fetch http://$SERVER_IP:8080/index.txt from NS.
ns_http_get() {
	nsx "$1" curl -sS --max-time 10 "http://$SERVER_IP:8080/index.txt"
}
