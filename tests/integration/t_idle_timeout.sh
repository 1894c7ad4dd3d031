#!/bin/bash
# exclusive: a client asking every 0.4 s must not look idle with idle_timeout = 1s, a quiet one must be closed 1-3 s after
# idle_timeout (smbaccel.conf(5)), against load_idle.py's one-process
# upstream (answers NEGOTIATE):
#  1. idle_timeout = 1s: a client that negotiates, then sends nothing, is
#     closed 1 to 3 s later; logged "idle for 1000 ms", counted closed.idle.
#  2. A client that sends a request every 0.4 s for 3 s is not closed.
#  3. smbaccel stopped (SIGSTOP) for 3 s, past idle_timeout, while the
#     client's next request arrives: when it runs again the request is
#     answered, not taken for idleness (libev runs the expired timer
#     before the read seen in the same pass).
. "$(dirname "$0")/lib.sh"
require_smbaccel "idle_timeout"

FAKE=$(free_port)
"$PY" "$TESTS_DIR/load_idle.py" server "$FAKE" > "$T/fake.out" 2>&1 &
BG_PIDS="$BG_PIDS $!"
wait_port "$FAKE" 10 "$!" || fail "fake upstream not listening"

# client MODE ARGS: idle | busy | stall READYFILE GOFILE
client() {
	"$PY" - "$PROXY_PORT" "$@" <<'PYEOF'
import os, socket, sys, time
sys.path.insert(0, os.environ["TESTS_DIR"])
from load_idle import neg_req
port, mode = int(sys.argv[1]), sys.argv[2]

def ask(s):
    s.sendall(neg_req())
    got = b""
    while len(got) < 4 or len(got) < 4 + int.from_bytes(got[1:4], "big"):
        b = s.recv(65536)
        if not b:
            raise SystemExit("closed before the answer")
        got += b

s = socket.create_connection(("127.0.0.1", port), timeout=15)
ask(s)
t0 = time.time()
if mode == "idle":
    s.settimeout(10)
    try:
        b = s.recv(1)
    except ConnectionResetError:
        b = b""
    print("closed after %.2f s" % (time.time() - t0) if not b else "got data")
elif mode == "busy":
    while time.time() - t0 < 3:
        time.sleep(0.4)
        ask(s)
    print("busy for %.1f s, still open" % (time.time() - t0))
else:
    open(sys.argv[3], "w").close()
    while not os.path.exists(sys.argv[4]):
        time.sleep(0.05)
    ask(s)
    print("answered after the stall")
PYEOF
}
export TESTS_DIR

PROXY_UPSTREAM=127.0.0.1:$FAKE start_proxy "idle_timeout = 1s"
info "1. idle_timeout = 1s, a client that goes quiet"
out=$(client idle) || fail "idle client: $out"
info "  $out"
case $out in "closed after "*) ;; *) fail "idle client not closed: $out" ;; esac
awk -v o="${out#closed after }" 'BEGIN { exit !(o + 0 >= 0.9 && o + 0 <= 3) }' ||
    fail "closed $out, expected 1 to 3 s after going quiet"
wait_log 'idle for 1000 ms' 2 || fail "no 'idle for 1000 ms' log line"
assert_eq 1 "$(stat_get closed.idle)" "closed.idle"

info "2. a client that sends every 0.4 s"
out=$(client busy) || fail "busy client: $out"
info "  $out"
assert_eq 1 "$(stat_get closed.idle)" "closed.idle after the busy client"
stop_proxy

: > "$PROXY_LOG"
PROXY_UPSTREAM=127.0.0.1:$FAKE start_proxy "idle_timeout = 2s"
info "3. smbaccel stopped for 3 s (idle_timeout = 2s) while a request arrives"
client stall "$T/ready" "$T/go" > "$T/stall.out" 2>&1 &
cpid=$!
n=100
while [ ! -e "$T/ready" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
[ -e "$T/ready" ] || fail "stall client did not negotiate"
kill -STOP "$PROXY_PID"
touch "$T/go"
sleep 3
kill -CONT "$PROXY_PID"
wait "$cpid" || { cat "$T/stall.out"; fail "request sent during the stall not answered"; }
info "  $(cat "$T/stall.out")"
log_has 'idle for' && fail "a connection with a request waiting was closed as idle"
assert_eq 0 "$(stat_get closed.idle)" "closed.idle after the stall"
proxy_alive || fail "proxy died"
stop_proxy
info "PASS"
