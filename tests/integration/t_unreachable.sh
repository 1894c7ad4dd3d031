#!/bin/bash
# Upstream unreachable: (a) a closed port on 127.0.0.1 (refused), (b) an
# address that swallows SYNs, 192.0.2.1:445 with connect_timeout = 1s.  (b)
# runs inside a private network namespace holding only lo, with 192.0.2.0/24
# routed to lo, so the SYNs are dropped locally and nothing leaves the host
# (on this host 192.0.2.1 may be a real gateway).  Each time the client's
# connection must be closed within the connect timeout + 2 s, and the log
# must say why.
. "$(dirname "$0")/lib.sh"

CT=1	# connect_timeout, seconds

# probe NETNS: connect to the proxy, send a NEGOTIATE, time until closed.
probe() {
	${1:+ip netns exec "$1"} "$PY" - "$PROXY_PORT" $((CT + 2)) <<'PYEOF'
import socket, struct, sys, time, os
port, limit = int(sys.argv[1]), float(sys.argv[2])
neg = struct.pack("<4sHHIHHIIQIIQ16s", b"\xfeSMB", 64, 0, 0, 0, 1, 0, 0, 0,
                  0xFEFF, 0, 0, b"\0" * 16)
neg += struct.pack("<HHHHI16sQ", 36, 2, 1, 0, 0, os.urandom(16), 0)
neg += struct.pack("<HH", 0x0202, 0x0210)
t0 = time.time()
s = socket.create_connection(("127.0.0.1", port), timeout=3)
print("client port", s.getsockname()[1])
try:
    s.sendall(struct.pack(">I", len(neg)) + neg)
except OSError as e:
    pass
s.settimeout(0.2)
got = 0
while time.time() - t0 < limit + 3:
    try:
        b = s.recv(4096)
    except socket.timeout:
        continue
    except OSError as e:
        b = b""
    if not b:
        break
    got += len(b)
dt = time.time() - t0
print("closed after %.2fs (%d bytes received)" % (dt, got) if dt < limit + 3
      else "still open after %.2fs" % dt)
sys.exit(0 if dt <= limit and got == 0 else 1)
PYEOF
}

# check_why PROBE_OUTPUT REGEX WHAT: the log line of the probe's own
# connection (not the one wait_port made) matches REGEX.
check_why() {
	local cp id n=30
	cp=$(sed -n 's/^client port //p' "$1")
	while [ $n -gt 0 ]; do
		id=$(conn_of_client "$cp")
		[ -n "$id" ] && grep -E "conn=$id " "$PROXY_LOG" | grep -qE "$2" && break
		sleep 0.1; n=$((n - 1))
	done
	[ $n -gt 0 ] || fail "$3 no log line matching '$2' for the client's connection (port $cp, conn ${id:-?})"
	grep -E "conn=$id " "$PROXY_LOG"
}

# (a) refused
start_smbd
dead=$(free_port)
if is_smbaccel; then
	PROXY_UPSTREAM=127.0.0.1:$dead start_proxy "connect_timeout = ${CT}s"
else
	HAPROXY_CONNECT_TIMEOUT=${CT}s PROXY_UPSTREAM=127.0.0.1:$dead start_proxy
fi
info "(a) upstream 127.0.0.1:$dead, nothing listening"
probe "" > "$T/probe-a.out" || { cat "$T/probe-a.out"; fail "(a) connection to a refused upstream not closed within $((CT + 2))s"; }
cat "$T/probe-a.out"
if is_smbaccel; then
	check_why "$T/probe-a.out" "upstream connect to 127\.0\.0\.1:$dead (failed|refused)" "(a)"
fi
proxy_alive || fail "(a) proxy died"
stop_proxy
echo "---- (a) proxy log" >> "$T/proxy-a.log"; cat "$PROXY_LOG" >> "$T/proxy-a.log"; : > "$PROXY_LOG"

# (b) black hole, in a namespace with nothing but lo
make_netns
ip netns exec "$NETNS" ip route add 192.0.2.0/24 dev lo || fail "route in $NETNS"
info "(b) upstream 192.0.2.1:445 inside netns $NETNS (lo only), connect_timeout ${CT}s"
PROXY_PORT=
if is_smbaccel; then
	PROXY_NETNS=$NETNS PROXY_UPSTREAM=192.0.2.1:445 start_proxy "connect_timeout = ${CT}s"
else
	PROXY_NETNS=$NETNS HAPROXY_CONNECT_TIMEOUT=${CT}s PROXY_UPSTREAM=192.0.2.1:445 start_proxy
fi
probe "$NETNS" > "$T/probe-b.out" || { cat "$T/probe-b.out"; fail "(b) connection to a black-holed upstream not closed within $((CT + 2))s"; }
cat "$T/probe-b.out"
if is_smbaccel; then
	check_why "$T/probe-b.out" "upstream connect to 192\.0\.2\.1:445 (timed out|failed)" "(b)"
fi
proxy_alive || fail "(b) proxy died"
info "PASS"
