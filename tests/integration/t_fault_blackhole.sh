#!/bin/bash
# test-timeout: 180
# Upstream black-holed or unreachable, inside a private network namespace
# (only lo; smbd, the proxy and the clients all run in it, so the firewall
# rules touch nothing else), connect_timeout = 1s:
#  1. iptables DROP of SYNs to smbd's port: a client's connection (and 20
#     at once) is closed within connect_timeout + 2 s, having received
#     nothing; the log says "timed out"; once the rule is removed the same
#     proxy serves smbclient again;
#  2. iptables REJECT --reject-with tcp-reset: closed at once, "failed";
#  3. upstream behind a "blackhole" route and 4. an "unreachable" route:
#     closed at once, the log says why;
#  5. black hole after the session is up (every packet to smbd dropped):
#     informational, how long until the client gives up (smbaccel has no
#     upstream response timeout; the client's own timeout applies).
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's connect_timeout and log"
command -v iptables >/dev/null || skip "iptables not installed"

if [ -z "${BH_INNER:-}" ]; then
	make_netns
	ip netns exec "$NETNS" iptables -S >/dev/null 2>&1 || skip "iptables does not work in a network namespace"
	ip netns exec "$NETNS" env BH_INNER=1 RESULTS_DIR= bash "$0"
	exit $?
fi

CT=1
IPT="iptables -w"
start_smbd
start_proxy "connect_timeout = ${CT}s"

# probe N: N clients at once send a NEGOTIATE; each must be closed within
# CT + 2 s with nothing received.  Prints one line per client.
probe() {
	"$PY" - "$PROXY_PORT" "$((CT + 2))" "${1:-1}" <<'PYEOF'
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
probe 20 || fail "1: 20 clients not all closed within $((CT + 2)) s"
wait_log "upstream connect to 127\.0\.0\.1:$SMBD_PORT timed out" 3 || fail "1: no 'timed out' log line"
grep -c "timed out" "$PROXY_LOG" | sed 's/^/  connect timeouts logged: /'
$IPT -D INPUT -p tcp --dport "$SMBD_PORT" --syn -j DROP
smbls || { cat "$T/ls.out"; fail "1: smbclient after the rule was removed"; }
proxy_alive || fail "proxy died"

info "2. connections to smbd's port reset"
$IPT -I INPUT -p tcp --dport "$SMBD_PORT" -j REJECT --reject-with tcp-reset || fail "iptables REJECT"
t0=$(now)
probe 1 || fail "2: client not closed"
info "  closed after $(elapsed "$t0") s"
wait_log "upstream connect to 127\.0\.0\.1:$SMBD_PORT failed" 3 || fail "2: no 'failed' log line"
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
	wait_log "upstream connect to ${addr//./\\.}:445 (failed|timed out)" 3 ||
	    fail "$route: no log line about the upstream"
	grep "upstream connect to $addr" "$PROXY_LOG" | tail -n 1 | sed 's/^/  log: /'
	proxy_alive || fail "proxy died"
done

info "5. black hole after the session is up (informational, ${BH_WAIT:-8} s at most)"
stop_proxy
start_proxy "connect_timeout = ${CT}s"
mkfifo "$T/cmds"
home=$(client_home bh)
# smbclient reading its commands from the FIFO (smbc always passes -c)
( HOME=$home smbclient "//127.0.0.1/share" -p "$PROXY_PORT" -U "$SMB_USER%$SMB_PASS" \
    -m SMB3_11 < "$T/cmds" > "$T/bh.out" 2>&1; echo "exit $?" >> "$T/bh.out" ) &
bhpid=$!
BG_PIDS="$BG_PIDS $bhpid"
exec 7> "$T/cmds"
echo "ls" >&7
sleep 2
$IPT -I INPUT -p tcp --dport "$SMBD_PORT" -j DROP
$IPT -I INPUT -p tcp --sport "$SMBD_PORT" -j DROP
t0=$(now)
echo "ls" >&7
n=$(( ${BH_WAIT:-8} * 10 ))
while ! grep -q '^exit' "$T/bh.out" && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
if grep -q '^exit' "$T/bh.out"; then
	info "  smbclient gave up $(elapsed "$t0") s after the black hole: $(grep -iE 'error|NT_STATUS|exit' "$T/bh.out" | tail -n 2 | tr '\n' ' ')"
else
	info "  smbclient still waiting after $(elapsed "$t0") s: smbaccel has no upstream response timeout, the client's TCP stays alive"
fi
exec 7>&-
$IPT -D INPUT -p tcp --dport "$SMBD_PORT" -j DROP
$IPT -D INPUT -p tcp --sport "$SMBD_PORT" -j DROP
proxy_alive || fail "proxy died"
info "PASS"
