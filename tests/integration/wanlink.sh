# tests/integration/wanlink.sh - the branch office in three network
# namespaces, with a packet-level WAN (bin/wanlink) between the router and
# the server (bash; source after lib.sh and netns.sh).
#
#   client ns               router ns                               server ns
#   192.0.2.2 c0 ==veth== r0 192.0.2.1
#                           198.51.100.1 wl0 (TUN) <-wanlink-> wl1 198.51.100.2  WAN
#                           203.0.113.1  r1 ========veth======= s1 203.0.113.2   LAN
#                                                          (wl_setup --lan only)
#
# The router forwards; it runs smbaccel when a test starts one there.  The
# direct path (client -> server address) crosses the same emulated link as
# smbaccel's upstream connections.  TCP: the client's and the server's
# sockets use CUBIC, as Windows clients and servers do (a route's "congctl
# cubic": the namespace sysctl refuses cubic here, SMB-NOTES.md), and so
# does the router's route to the server over the WAN, as on a stock
# appliance; smbaccel's upstream_congestion replaces it on its own sockets.
# The server answers on the path a request came in by (a rule for the LAN
# address).  IPv6 is off in the three namespaces, so nothing but the tests'
# own traffic crosses the link.  Everything is deleted by lib.sh's cleanup
# (namespaces in NETNS_LIST, wanlink in BG_PIDS); the TUN devices vanish
# with wanlink.
#
#   wl_setup [--lan] ARGS...   wl_netns + wl_start ARGS
#   wl_netns [--lan]           the namespaces, without the WAN leg
#   wl_start ARGS...           bin/wanlink ARGS (e.g. -d 10 -r 100M -l 1) and the WAN leg
#   wl_set KEY=VALUE...        change the running link (delay= rate= loss= queue=)
#   wl_ctl CMD...              a control command (burst 30 2, loss 1, stats);
#                              returns once wanlink has executed it
#   wl_stat DIR KEY            a counter of the stats file (DIR up|down),
#                              written after the call
#   wl_stop                    SIGTERM; exit status in WL_RC; final counters printed
#   wl_tun_drops               packets the kernels dropped at the TUN devices
#                              themselves (not part of the model; should be 0)
#   wl_rcvbuf_drops NS         UDP datagrams NS's kernel dropped because a
#                              receiving socket's buffer was full (Udp
#                              RcvbufErrors: a receiver kept off the CPU)
#   wl_udp_stat NS FIELD       any Udp counter of NS's /proc/net/snmp
#   wl_cc NS PEER              congestion control of NS's TCP sockets to PEER (ss -ti)
#   wl_smbdd NS HOST[:PORT] OP PATH BS COUNT [args]   bin/smbdd from NS on
#                              smb://HOST[:PORT]/share/PATH (120 s timeout)
#   wl_smbdd_bg OUT NS HOST[:PORT] OP ...   the same in the background
#                              (200 s), output to OUT, pid in WL_DD_PID

WANLINK=${WANLINK:-$TOP/bin/wanlink}
ROUTER_WAN_IP=198.51.100.1
SERVER_LAN_IP=203.0.113.2
ROUTER_LAN_IP=203.0.113.1
WL_PID= WL_RC=
WL_STATS=$T/wanlink.stats
WL_FIFO=$T/wanlink.ctl
WL_LOG=$T/wanlink.log

# wl_require: skip unless wanlink can work here.
wl_require() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, TUN)"
	[ -c /dev/net/tun ] || skip "no /dev/net/tun: wanlink needs TUN devices"
	[ -x "$WANLINK" ] || skip "$WANLINK not built (make all)"
	command -v ip >/dev/null || skip "no ip(8)"
}

_wl_ns_add() {
	_ns_add "$1" || return 1
	nsx "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
	    net.ipv6.conf.default.disable_ipv6=1
}

# wl_setup [--lan] WANLINK_ARGS...: wl_netns, then wl_start.
wl_setup() {
	local lan=
	[ "${1:-}" = --lan ] && { lan=--lan; shift; }
	wl_netns $lan
	wl_start "$@"
}

# wl_netns [--lan]: the three namespaces, the client's veth (and with
# --lan the router-server veth); the WAN leg comes with wl_start.
wl_netns() {
	local lan=no base=wl$$x$RANDOM
	[ "${1:-}" = --lan ] && lan=yes
	wl_require
	NS_CLIENT=$base-cli NS_ROUTER=$base-rtr NS_SERVER=$base-srv
	_wl_ns_add "$NS_CLIENT" || skip "cannot create network namespaces"
	_wl_ns_add "$NS_ROUTER" && _wl_ns_add "$NS_SERVER" || fail "cannot create namespaces"
	ip link add c0 netns "$NS_CLIENT" type veth peer name r0 netns "$NS_ROUTER" ||
	    skip "cannot create veth pairs"
	nsx "$NS_CLIENT" ip addr add "$CLIENT_IP/24" dev c0 &&
	nsx "$NS_ROUTER" ip addr add "$ROUTER_CLIENT_IP/24" dev r0 &&
	nsx "$NS_CLIENT" ip link set c0 up &&
	nsx "$NS_ROUTER" ip link set r0 up &&
	nsx "$NS_CLIENT" ip route replace 192.0.2.0/24 dev c0 proto kernel scope link \
	    src "$CLIENT_IP" congctl cubic &&
	nsx "$NS_CLIENT" ip route add 198.51.100.0/24 via "$ROUTER_CLIENT_IP" congctl cubic &&
	nsx "$NS_ROUTER" sysctl -qw net.ipv4.ip_forward=1 ||
	    fail "cannot configure the client side"
	if [ $lan = yes ]; then
		ip link add r1 netns "$NS_ROUTER" type veth peer name s1 netns "$NS_SERVER" &&
		nsx "$NS_ROUTER" ip addr add "$ROUTER_LAN_IP/24" dev r1 &&
		nsx "$NS_SERVER" ip addr add "$SERVER_LAN_IP/24" dev s1 &&
		nsx "$NS_ROUTER" ip link set r1 up &&
		nsx "$NS_SERVER" ip link set s1 up &&
		nsx "$NS_CLIENT" ip route add 203.0.113.0/24 via "$ROUTER_CLIENT_IP" congctl cubic &&
		nsx "$NS_SERVER" ip route replace 203.0.113.0/24 dev s1 proto kernel \
		    scope link src "$SERVER_LAN_IP" congctl cubic &&
		nsx "$NS_SERVER" ip route add 192.0.2.0/24 via "$ROUTER_LAN_IP" dev s1 \
		    congctl cubic table 101 &&
		nsx "$NS_SERVER" ip rule add from "$SERVER_LAN_IP" table 101 ||
		    fail "cannot configure the LAN leg"
	fi
}

# wl_start WANLINK_ARGS...: bin/wanlink between the router (wl0) and the
# server (wl1), the addresses and routes of the WAN leg, and a check that
# the client reaches the server across it (one SYN and its RST, sent
# before the test's own packets).  wl_stop, then wl_start again, gives a
# fresh link (new seed, new counters) on the same namespaces.
wl_start() {
	local n
	rm -f "$WL_FIFO" "$WL_STATS"
	echo "---- $(date +%T) wanlink $*" >> "$WL_LOG"
	# nice -10: the link, not the tests' traffic, should get the CPU
	# first on a loaded machine (it needs little; WL_NICE=0 to compare)
	nice -n "${WL_NICE:--10}" "$WANLINK" -a "$NS_ROUTER:wl0" -b "$NS_SERVER:wl1" \
	    -S "$WL_STATS" -c "$WL_FIFO" "$@" </dev/null >>"$WL_LOG" 2>&1 &
	WL_PID=$!
	BG_PIDS="$BG_PIDS $WL_PID"
	n=100
	while [ $n -gt 0 ] && ! { nsx "$NS_ROUTER" ip link show wl0 && nsx "$NS_SERVER" ip link show wl1; } >/dev/null 2>&1; do
		kill -0 "$WL_PID" 2>/dev/null || { cat "$WL_LOG"; fail "wanlink exited at start"; }
		sleep 0.1; n=$((n - 1))
	done
	[ $n -gt 0 ] || fail "wanlink did not create its devices"
	# txqueuelen 4000 (default 500): room for what piles up while a busy
	# machine keeps wanlink from reading (what overflows: wl_tun_drops)
	nsx "$NS_ROUTER" ip addr add "$ROUTER_WAN_IP/24" dev wl0 &&
	nsx "$NS_ROUTER" ip link set wl0 txqueuelen 4000 up &&
	nsx "$NS_SERVER" ip addr add "$SERVER_IP/24" dev wl1 &&
	nsx "$NS_SERVER" ip link set wl1 txqueuelen 4000 up &&
	nsx "$NS_ROUTER" ip route replace 198.51.100.0/24 dev wl0 proto kernel \
	    scope link src "$ROUTER_WAN_IP" congctl cubic &&
	nsx "$NS_SERVER" ip route replace 198.51.100.0/24 dev wl1 proto kernel \
	    scope link src "$SERVER_IP" congctl cubic &&
	nsx "$NS_SERVER" ip route add 192.0.2.0/24 via "$ROUTER_WAN_IP" dev wl1 congctl cubic ||
	    fail "cannot configure the WAN leg"
	n=100
	while [ $n -gt 0 ] && [ "$(ns_tcp_probe "$NS_CLIENT" "$SERVER_IP" 9 2)" != refused ]; do
		sleep 0.1; n=$((n - 1))
	done
	[ $n -gt 0 ] || fail "the client cannot reach $SERVER_IP across wanlink"
	info "wanlink pid $WL_PID: $(grep '^wanlink: a=' "$WL_LOG" | tail -n 1 | sed 's/^wanlink: //')"
}

# wl_ctl CMD...: one line into wanlink's control FIFO (never blocks for
# long, even if wanlink has died), then wait until wanlink has executed it:
# its stats file's ctl_seq (lines executed) is one more than before.
# Every wl_ctl waits so, so when one starts, every line sent before has
# been executed (also those sent from a $(...) subshell: nothing is
# counted in the shell).  Fails if wanlink refused the command (ctl_bad
# grew) or has not confirmed it within 10 s.
wl_ctl() {
	local bad0 bad end=$((SECONDS + 11)) seq want
	[ -p "$WL_FIFO" ] || _wl_fail "no wanlink control FIFO"
	bad0=$(_wl_head ctl_bad)
	seq=$(_wl_head ctl_seq)
	want=$((${seq:-0} + 1))
	timeout 5 sh -c 'printf "%s\n" "$1" > "$2"' sh "$*" "$WL_FIFO" ||
	    _wl_fail "wanlink does not read its control FIFO"
	while seq=$(_wl_head ctl_seq); [ "${seq:-0}" -lt "$want" ]; do
		[ $SECONDS -lt $end ] || _wl_fail "wanlink did not confirm control command '$*' within 10 s (stats file: ctl_seq=${seq:-none}, waiting for $want)"
		kill -0 "$WL_PID" 2>/dev/null || _wl_fail "wanlink died before executing '$*'"
		sleep 0.02
	done
	bad=$(_wl_head ctl_bad)
	[ "${bad:-0}" = "${bad0:-0}" ] ||
	    _wl_fail "wanlink refused control command '$*': $(grep 'control:' "$WL_LOG" | tail -n 1)"
}
# _wl_fail MSG: fail, also from a command substitution ($(wl_stat ...)),
# where fail's message would land in a variable and its exit end only the
# subshell: say it on stderr and stop the test's shell (TERM: cleanup).
_wl_fail() {
	if [ "$BASH_SUBSHELL" -gt 0 ]; then
		echo "FAIL [$TEST_NAME]: $*" >&2
		kill -TERM $$
	fi
	fail "$*"
}
# _wl_head KEY: a field of the stats file's first line (empty if none yet)
_wl_head() {
	sed -n "1s/.*\\b$1=\\([0-9]*\\).*/\\1/p" "$WL_STATS" 2>/dev/null
}

# wl_set KEY=VALUE... [up|down]: change the running link; returns once
# wanlink has applied it (wl_ctl).
wl_set() {
	wl_ctl set "$@"
}

# wl_stat DIR KEY: one counter, from a stats file written after the
# request (wl_ctl stats waits for it).
wl_stat() {
	wl_ctl stats
	awk -v d="$1" -v k="$2" '$1 == d { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' "$WL_STATS"
}

# wl_stop: SIGTERM wanlink; WL_RC is its exit status.  Prints its last lines.
wl_stop() {
	WL_RC=
	[ -n "$WL_PID" ] || return 0
	kill -TERM "$WL_PID" 2>/dev/null
	local n=50
	while [ $n -gt 0 ] && kill -0 "$WL_PID" 2>/dev/null; do
		sleep 0.1; n=$((n - 1))
	done
	kill -0 "$WL_PID" 2>/dev/null && kill -KILL "$WL_PID" 2>/dev/null
	wait "$WL_PID" 2>/dev/null
	WL_RC=$?
	WL_PID=
	tail -n 3 "$WL_LOG"
}

# wl_tun_drops: TX drops of wl0 and wl1 (packets the kernel could not hand
# to wanlink in time: losses outside the model).
wl_tun_drops() {
	local a b
	a=$(nsx "$NS_ROUTER" cat /sys/class/net/wl0/statistics/tx_dropped 2>/dev/null || echo 0)
	b=$(nsx "$NS_SERVER" cat /sys/class/net/wl1/statistics/tx_dropped 2>/dev/null || echo 0)
	echo $((a + b))
}

# wl_rcvbuf_drops NS: Udp RcvbufErrors of namespace NS (/proc/net/snmp is
# per namespace): datagrams that reached NS and found their socket full.
wl_rcvbuf_drops() { wl_udp_stat "$1" RcvbufErrors; }
# wl_udp_stat NS FIELD: one Udp counter of namespace NS (SndbufErrors:
# datagrams a sender's kernel dropped on the way out, e.g. at the qdisc)
wl_udp_stat() {
	nsx "$1" awk -v f="$2" '$1 == "Udp:" { if (!n) { for (i = 2; i <= NF; i++)
	    if ($i == f) n = i; next } print n ? $n : 0; exit }' /proc/net/snmp
}

# wl_cc NS PEER_IP: the congestion control of each TCP socket in NS whose
# peer is PEER_IP (ss -ti), one per line, e.g. "cubic".
wl_cc() {
	nsx "$1" ss -Htin "dst $2" 2>/dev/null |
	    grep -oE '[a-z0-9_]+ wscale:' | cut -d' ' -f1
}

# wl_smbdd NS HOST[:PORT] OP PATH BS COUNT [args...]: bin/smbdd from NS.
wl_smbdd() {
	local ns=$1 hp=$2 op=$3 path=$4 bs=$5 count=$6; shift 6
	[ -x "$SMBDD" ] || fail "$SMBDD not built"
	local home=${SMBC_HOME:-$(client_home "wl")}
	nsx "$ns" env HOME="$home" timeout -k 5 "${WL_DD_TIMEOUT:-120}" "$SMBDD" "$op" \
	    "smb://$hp/share/$path" "$bs" "$count" -U "$SMB_USER%$SMB_PASS" "$@"
}

# wl_smbdd_bg OUT NS HOST[:PORT] OP PATH BS COUNT [args]: wl_smbdd in the
# background (timeout 200 s), output to OUT; its pid in WL_DD_PID and in
# lib.sh's BG_PIDS.
wl_smbdd_bg() {
	local out=$1 ns=$2 hp=$3 op=$4 path=$5 bs=$6 count=$7; shift 7
	[ -x "$SMBDD" ] || fail "$SMBDD not built"
	local home=${SMBC_HOME:-$(client_home "wl")}
	# "ip netns exec" execs: $! is timeout(1)'s pid, which passes a
	# SIGTERM on to smbdd (nsx, a function, would leave a subshell)
	ip netns exec "$ns" env HOME="$home" timeout -k 5 200 "$SMBDD" "$op" \
	    "smb://$hp/share/$path" "$bs" "$count" -U "$SMB_USER%$SMB_PASS" "$@" \
	    >"$out" 2>&1 &
	WL_DD_PID=$!
	BG_PIDS="$BG_PIDS $WL_DD_PID"
}
