#!/bin/bash
# test-timeout: 180
# waits: connect_timeout and server_timeout running out against a black hole: 9 s of CPU in 36 s (26 %) under ASan
# Upstream black-holed or unreachable, inside a private network namespace
# (only lo; smbd, the proxy and the clients all run in it, so the firewall
# rules touch nothing else), connect_timeout = 1s:
#  1. iptables DROP of SYNs to smbd's port: a client's connection is
#     closed within connect_timeout + 2 s (20 at once: + 4 s), having received
#     nothing; the log says "timed out"; once the rule is removed the same
#     proxy serves smbclient again;
#  2. iptables REJECT --reject-with tcp-reset: closed at once, "failed";
#  3. upstream behind a "blackhole" route and 4. an "unreachable" route:
#     closed at once, the log says why;
#  5. black hole after the session is up (every packet to and from smbd
#     dropped), server_timeout = 3s: (a) smbclient with a request
#     outstanding is closed by smbaccel within 1.25 x the timeout + 4 s,
#     logged and counted (closed.server-timeout); (b) writes absorbed,
#     then the black hole, then FLUSH: the FLUSH does not succeed and the
#     log names the lost range; (c) a connection whose only outstanding
#     request is async (CHANGE_NOTIFY, interim STATUS_PENDING) stays up
#     past the timeout.
#  6. a 10 s black hole under an idle connection: upstream_keepalive = 0
#     (no keepalive timer on smbaccel's upstream socket), then 2s by a
#     reload, which applies to it: at least 3 probes go unanswered (ss),
#     and once the black hole is lifted the client's ECHO is answered: an
#     outage of the path does not end an idle connection (servers_timed_out
#     0), as it would not directly.
#  6b. tcp_retries2 = 2 in the namespace, server_timeout = 0: a request
#     sent into a black hole makes TCP give up on the server within 3 s;
#     logged "stopped answering TCP", servers_timed_out 1, the connection
#     closed.
#  7. a stateful firewall (conntrack, established timeout 4 s, no
#     mid-stream pickup) between smbaccel and smbd: a client quiet for 9 s
#     then sends an ECHO.  Directly and with upstream_keepalive = 0 the
#     firewall has forgotten the connection and the ECHO goes unanswered;
#     with upstream_keepalive = 2s the probes keep it, and it is answered.
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's connect_timeout and log"
in_netns_with_iptables

CT=1
IPT="iptables -w"
start_smbd
start_proxy "connect_timeout = ${CT}s"

# probe N [LIMIT]: N clients at once send a NEGOTIATE; each must be closed
# within LIMIT s (default CT + 2) with nothing received.  Prints one line
# per client.
probe() {
	"$PY" - "$PROXY_PORT" "${2:-$((CT + 2))}" "${1:-1}" <<'PYEOF'
import os, socket, struct, sys, time
port, limit, n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
neg = struct.pack("<4sHHIHHIIQIIQ16s", b"\xfeSMB", 64, 0, 0, 0, 1, 0, 0, 0,
                  0xFEFF, 0, 0, b"\0" * 16)
neg += struct.pack("<HHHHI16sQ", 36, 2, 1, 0, 0, os.urandom(16), 0)
neg += struct.pack("<HH", 0x0202, 0x0210)
t0 = time.time()
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(struct.pack(">I", len(neg)) + neg)
    s.setblocking(False)
    socks.append(s)
done, got, worst = {}, {}, 0.0
while len(done) < n and time.time() - t0 < limit + 3:
    for i, s in enumerate(socks):
        if i in done:
            continue
        try:
            b = s.recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            b = b""
        if b:
            got[i] = got.get(i, 0) + len(b)
            continue
        done[i] = time.time() - t0
    time.sleep(0.02)
bad = 0
for i in range(n):
    if i not in done:
        print("client %d: still open after %.1fs" % (i, time.time() - t0)); bad = 1
    elif done[i] > limit or got.get(i):
        print("client %d: closed after %.2fs, %d bytes received" % (i, done[i], got.get(i, 0))); bad = 1
    worst = max(worst, done.get(i, 99))
print("%d clients closed, slowest after %.2fs" % (len(done), worst))
sys.exit(bad)
PYEOF
}

smbls() { smbc "$PROXY_PORT" SMB3_11 "ls" > "$T/ls.out" 2>&1; }

smbls || { cat "$T/ls.out"; fail "baseline: smbclient through the proxy"; }

info "1. SYNs to smbd's port dropped"
$IPT -I INPUT -p tcp --dport "$SMBD_PORT" --syn -j DROP || fail "iptables DROP"
probe 1 || fail "1: client not closed within $((CT + 2)) s"
# 20 connects at once, each timed out by smbaccel: more slack on a loaded machine
probe 20 $((CT + 4)) || fail "1: 20 clients not all closed within $((CT + 4)) s"
wait_log "upstream connect to 127\.0\.0\.1:$SMBD_PORT timed out" 15 || fail "1: no 'timed out' log line"
grep -c "timed out" "$PROXY_LOG" | sed 's/^/  connect timeouts logged: /'
$IPT -D INPUT -p tcp --dport "$SMBD_PORT" --syn -j DROP
smbls || { cat "$T/ls.out"; fail "1: smbclient after the rule was removed"; }
proxy_alive || fail "proxy died"

info "2. connections to smbd's port reset"
$IPT -I INPUT -p tcp --dport "$SMBD_PORT" -j REJECT --reject-with tcp-reset || fail "iptables REJECT"
t0=$(now)
probe 1 || fail "2: client not closed"
info "  closed after $(elapsed "$t0") s"
wait_log "upstream connect to 127\.0\.0\.1:$SMBD_PORT failed" 15 || fail "2: no 'failed' log line"
$IPT -D INPUT -p tcp --dport "$SMBD_PORT" -j REJECT --reject-with tcp-reset
smbls || { cat "$T/ls.out"; fail "2: smbclient after the rule was removed"; }

for r in "blackhole 198.51.100.0/24:198.51.100.1" "unreachable 203.0.113.0/24:203.0.113.1"; do
	route=${r%%:*} addr=${r##*:}
	info "3/4. upstream $addr behind route '$route'"
	ip route add $route || fail "ip route add $route"
	stop_proxy
	PROXY_UPSTREAM=$addr:445 start_proxy "connect_timeout = ${CT}s"
	t0=$(now)
	probe 1 || fail "$route: client not closed within $((CT + 2)) s"
	info "  closed after $(elapsed "$t0") s"
	wait_log "upstream connect to ${addr//./\\.}:445 (failed|timed out)" 15 ||
	    fail "$route: no log line about the upstream"
	grep "upstream connect to $addr" "$PROXY_LOG" | tail -n 1 | sed 's/^/  log: /'
	proxy_alive || fail "proxy died"
done

# 5. the server watchdog (server_timeout)
ST=3
info "5. black hole after the session is up, server_timeout = ${ST}s"
stop_proxy
start_proxy "connect_timeout = ${CT}s" "server_timeout = ${ST}s" "flush_idle = 30s" "flush_max_age = 60s"
blackhole() {	# blackhole -I|-D: every packet to and from smbd's port
	$IPT "$1" INPUT -p tcp --dport "$SMBD_PORT" -j DROP &&
	    $IPT "$1" INPUT -p tcp --sport "$SMBD_PORT" -j DROP
}
# 5a. smbclient with a request outstanding: closed by smbaccel
mkfifo "$T/cmds"
home=$(client_home bh)
# smbclient reading its commands from the FIFO (smbc always passes -c);
# stdbuf: its output line by line, so that its listing can be waited for
( HOME=$home stdbuf -oL -eL smbclient "//127.0.0.1/share" -p "$PROXY_PORT" -U "$SMB_USER%$SMB_PASS" \
    -s "$home/.smb/smb.conf" -m SMB3_11 < "$T/cmds" > "$T/bh.out" 2>&1; echo "exit $?" >> "$T/bh.out" ) &
bhpid=$!
BG_PIDS="$BG_PIDS $bhpid"
exec 7> "$T/cmds"
echo "ls" >&7
# the black hole only once smbclient has logged on and listed (the end of
# its first listing: "N blocks of size ... available")
n=300
while ! grep -q 'blocks available' "$T/bh.out" && [ $n -gt 0 ]; do
	grep -q '^exit' "$T/bh.out" && { cat "$T/bh.out"; fail "5a: smbclient exited before its first listing"; }
	sleep 0.1; n=$((n - 1))
done
[ $n -gt 0 ] || { cat "$T/bh.out"; fail "5a: smbclient did not list the share within 30 s"; }
blackhole -I || fail "iptables DROP"
t0=$(now)
echo "ls" >&7
wait_log "server sent nothing for [0-9]+ s with [0-9]+ request" $((ST * 2 + 5)) ||
    fail "5a: no server timeout ${ST} s after the black hole ($(elapsed "$t0") s)"
took=$(elapsed "$t0")
grep "server sent nothing" "$PROXY_LOG" | tail -n 1 | sed 's/^/  log: /'
# bound 1.25 x ST + 4 s, in floating point (ST 3: 7.75 s)
awk -v e="$took" -v st="$ST" 'BEGIN { exit !(e <= st * 5 / 4 + 4) }' ||
    fail "5a: the watchdog took $took s (server_timeout ${ST} s, bound $(awk -v st="$ST" 'BEGIN { print st * 5 / 4 + 4 }') s)"
n=50
while ! grep -q '^exit' "$T/bh.out" && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
info "  closed by smbaccel after $took s; smbclient: $(grep -iE 'NT_STATUS|exit' "$T/bh.out" | tail -n 2 | tr '\n' ' ')"
exec 7>&-
blackhole -D
assert_ge 1 "$(stat_get closed.server-timeout)" "stats closed.server-timeout"

# 5b. absorbed writes, then the black hole, then FLUSH: the FLUSH must not
# succeed and the log must name the range that never reached the server
rm -f "$T/ready"
"$PY" "$TESTS_DIR/server_silent.py" flush "$PROXY_PORT" wd-file "$T/ready" > "$T/flush.out" 2>&1 &
fpid=$!
BG_PIDS="$BG_PIDS $fpid"
n=200
while [ ! -e "$T/ready" ] && [ $n -gt 0 ]; do
	kill -0 "$fpid" 2>/dev/null || { cat "$T/flush.out"; fail "5b: writer failed"; }
	sleep 0.1; n=$((n - 1))
done
[ -e "$T/ready" ] || fail "5b: writer did not get ready"
blackhole -I || fail "iptables DROP"
rm -f "$T/ready"
wait "$fpid"; frc=$?
sed 's/^/  /' "$T/flush.out"
blackhole -D
[ $frc -eq 0 ] || fail "5b: the FLUSH after the black hole reported success"
wait_log "file=wd-file .*not acknowledged" 5 || fail "5b: lost range of wd-file not logged"
grep "file=wd-file .*not acknowledged" "$PROXY_LOG" | sed 's/^/  log: /'

# 5c. an async request (CHANGE_NOTIFY, answered STATUS_PENDING) may wait
# longer than server_timeout: the connection stays up
"$PY" "$TESTS_DIR/server_silent.py" notify "$PROXY_PORT" $((ST * 2 + 2)) > "$T/notify.out" 2>&1 ||
    { cat "$T/notify.out"; fail "5c: a connection with only a CHANGE_NOTIFY pending was closed"; }
sed 's/^/  /' "$T/notify.out"
proxy_alive || fail "proxy died"

# 6. upstream_keepalive under an outage of the path while the connection
# is idle: probes go unanswered, the connection must outlive the outage
# waiting_client PART: server_silent.py's client through the proxy that
# logs on and sends its ECHO once $T/go exists ($ipid, output $T/wait.out)
waiting_client() {
	rm -f "$T/ready" "$T/go"
	"$PY" "$TESTS_DIR/server_silent.py" wait "$PROXY_PORT" "$T/ready" "$T/go" > "$T/wait.out" 2>&1 &
	ipid=$!
	BG_PIDS="$BG_PIDS $ipid"
	local n=200
	while [ ! -e "$T/ready" ] && [ $n -gt 0 ] && kill -0 $ipid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	[ -e "$T/ready" ] || { cat "$T/wait.out"; fail "$1: the client did not log on"; }
}
info "6. a 10 s black hole under an idle connection, upstream_keepalive = 0, then 2s by a reload"
stop_proxy
start_proxy "upstream_keepalive = 0"
waiting_client 6
# upsock: ss's line for smbaccel's socket to smbd (its timer shows the
# keepalive and how many probes are unanswered)
upsock() { ss -tnoH state established "( dport = :$SMBD_PORT )"; }
upsock | grep -q 'timer:(keepalive' && fail "6: keepalive on the upstream socket with upstream_keepalive = 0: $(upsock)"
write_proxy_conf "$PROXY_CONF" "upstream_keepalive = 2s"
ctl reload > "$T/reload.out" 2>&1 || { cat "$T/reload.out"; fail "6: reload"; }
blackhole -I || fail "iptables DROP"
sleep 10
probes=$(upsock | sed -n 's/.*timer:(keepalive,[^,]*,\([0-9]*\)).*/\1/p')
info "  upstream socket after 10 s of black hole: $(upsock | grep -o 'timer:([^)]*)')"
assert_ge 3 "${probes:-0}" "6: unanswered keepalive probes on the upstream socket"
blackhole -D
touch "$T/go"
wait $ipid
info "  client after the black hole: $(cat "$T/wait.out")"
assert_eq "echo answered" "$(cat "$T/wait.out")" "6: the connection outlived the outage"
assert_eq 0 "$(stat_get servers_timed_out)" "6: servers_timed_out"
proxy_alive || fail "proxy died"

# 6b. the server's socket times out: TCP gives up retransmitting a request
# (tcp_retries2 = 2 in this namespace: 1.4 to 3 s), server_timeout off
info "6b. TCP gives up on the server (tcp_retries2 = 2, server_timeout = 0)"
sysctl -qw net.ipv4.tcp_retries2=2 || fail "6b: cannot set tcp_retries2 in this namespace"
stop_proxy
start_proxy "upstream_keepalive = 0" "server_timeout = 0"
waiting_client 6b
blackhole -I || fail "iptables DROP"
touch "$T/go"
wait $ipid
blackhole -D
sysctl -qw net.ipv4.tcp_retries2=15
info "  client: $(cat "$T/wait.out")"
wait_log "server 127\.0\.0\.1:$SMBD_PORT stopped answering TCP \(keepalive probes or retransmissions\) for [0-9]+ s \(upstream_keepalive 0 ms\): taken as gone" 10 ||
    fail "6b: no 'stopped answering TCP' log line"
info "  $(grep -o 'server 127[^ ]* stopped.*' "$PROXY_LOG" | tail -n 1)"
assert_eq 1 "$(stat_get servers_timed_out)" "6b: servers_timed_out"
assert_eq 0 "$(stat_get connections_active)" "6b: connections_active"
proxy_alive || fail "proxy died"

# 7. a stateful firewall that forgets idle connections after 4 s (conntrack
# of this namespace: a packet of a connection it forgot is INVALID, as no
# mid-stream pickup is allowed, and dropped)
info "7. a firewall that forgets idle connections after 4 s: directly, upstream_keepalive = 0, then 2s"
sysctl -qw net.netfilter.nf_conntrack_tcp_timeout_established=4 net.netfilter.nf_conntrack_tcp_loose=0 ||
    fail "7: cannot set the conntrack timeouts of this namespace"
for d in --dport --sport; do
	$IPT -A INPUT -p tcp $d "$SMBD_PORT" -m conntrack --ctstate ESTABLISHED -j ACCEPT &&
	    $IPT -A INPUT -p tcp $d "$SMBD_PORT" --syn -m conntrack --ctstate NEW -j ACCEPT &&
	    $IPT -A INPUT -p tcp $d "$SMBD_PORT" -j DROP || fail "iptables conntrack rules"
done
out=$("$PY" "$TESTS_DIR/server_silent.py" quiet "$SMBD_PORT" 9) || fail "7: quiet client: $out"
info "  directly: $out"
[ "$out" = "echo unanswered after 9 s quiet" ] || fail "7: the emulated firewall did not forget the direct connection"
for ka in 0 2s; do
	stop_proxy
	start_proxy "upstream_keepalive = $ka" "server_timeout = 20s"
	out=$("$PY" "$TESTS_DIR/server_silent.py" quiet "$PROXY_PORT" 9) || fail "7: quiet client: $out"
	info "  upstream_keepalive = $ka: $out"
	case $ka in
	0) [ "$out" = "echo unanswered after 9 s quiet" ] ||
	    fail "7: the emulated firewall did not forget the idle connection" ;;
	*) [ "$out" = "echo answered after 9 s quiet" ] ||
	    fail "7: upstream_keepalive = $ka did not keep the connection through the firewall" ;;
	esac
done
proxy_alive || fail "proxy died"
info "PASS"
