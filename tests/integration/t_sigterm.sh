#!/bin/bash
# SIGTERM with an idle client connection (negotiated, then silent): the
# daemon exits 0 within a few seconds, logs that it stopped, closes the idle
# connection, and refuses new connections afterwards.
. "$(dirname "$0")/lib.sh"
require_smbaccel "SIGTERM exit status and log"

start_smbd
start_proxy

# Idle client: NEGOTIATE, then wait for EOF (prints how it ended).
: > "$T/idle.out"
"$PY" - "$PROXY_PORT" > "$T/idle.out" 2>&1 <<'PYEOF' &
import os, socket, struct, sys, time
port = int(sys.argv[1])
neg = struct.pack("<4sHHIHHIIQIIQ16s", b"\xfeSMB", 64, 0, 0, 0, 1, 0, 0, 0,
                  0xFEFF, 0, 0, b"\0" * 16)
neg += struct.pack("<HHHHI16sQ", 36, 2, 1, 0, 0, os.urandom(16), 0)
neg += struct.pack("<HH", 0x0202, 0x0210)
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(struct.pack(">I", len(neg)) + neg)
s.settimeout(60)
hdr = s.recv(4)
print("negotiated", len(hdr) == 4, flush=True)
t0 = time.time()
while True:
    try:
        b = s.recv(65536)
    except OSError as e:
        print("closed by reset %s" % e, flush=True)
        break
    if not b:
        print("closed by EOF", flush=True)
        break
PYEOF
idle=$!
BG_PIDS="$BG_PIDS $idle"
n=50
until grep -q 'negotiated True' "$T/idle.out"; do
	n=$((n - 1)); [ $n -gt 0 ] || fail "idle client did not negotiate: $(cat "$T/idle.out")"
	sleep 0.1
done
sleep 1
active=$(stat_get connections_active)
assert_eq 1 "$active" "connections_active before SIGTERM"

pid=$PROXY_PID
t0=$(now)
kill -TERM "$pid"
n=100
while kill -0 "$pid" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
kill -0 "$pid" 2>/dev/null && fail "smbaccel still running 10 s after SIGTERM"
wait "$pid"; rc=$?
PROXY_PID=
info "smbaccel exited with $rc after $(elapsed "$t0") s"
assert_eq 0 "$rc" "exit status after SIGTERM"
tail -n 5 "$PROXY_LOG"
grep -qiE 'stop|exit|shut|terminat' "$PROXY_LOG" || fail "the log does not say the daemon stopped"

n=50
while kill -0 "$idle" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
kill -0 "$idle" 2>/dev/null && fail "the idle client connection was not closed"
cat "$T/idle.out"
port_open "$PROXY_PORT" && fail "port $PROXY_PORT still accepts after SIGTERM"
[ -e "$CTL_SOCK" ] && info "note: control socket $CTL_SOCK left behind"
info "PASS"
