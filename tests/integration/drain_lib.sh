# tests/integration/drain_lib.sh - the setup of the drain tests
# (t_drain_overtake, t_drain_hangup), sourced after lib.sh.
#
#   drain_start           smbd, slowwrite.py in front of it (WRITEs of
#                         "SLOW" data answered after 2 s below 1 MiB,
#                         5 s above; its log $T/slowwrite.log) and
#                         smbaccel through it: connect_timeout 1s, nothing
#                         flushed before drain_overtake.py asks
#   sha                   sha256 of stdin
#   DRAIN_WANT_F          sha256 of F once all is written: the reconnect's
#                         4 KiB "new", then the acknowledged 60 KiB
#   DRAIN_WANT_X          sha256 of X from 1 MiB: its 4 KiB and the 1 KiB
#                         the client sent before it went

export WB_SMB_TIMEOUT=30

drain_start() {
	start_smbd
	RELAY_PORT=$(free_port) || fail "no free port"
	bg "$PY" "$TESTS_DIR/slowwrite.py" "$RELAY_PORT" "$SMBD_PORT" 2 5 2>>"$T/slowwrite.log"
	wait_port "$RELAY_PORT" 10 || fail "slowwrite.py is not accepting"
	PROXY_UPSTREAM=127.0.0.1:$RELAY_PORT start_proxy "connect_timeout = 1s" \
	    "flush_idle = 60s" "flush_max_age = 10m"
}

sha() { "$PY" -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())'; }
DRAIN_WANT_F=$("$PY" -c 'import sys; sys.stdout.buffer.write(b"n" * 4096 + b"a" * 61440)' | sha)
DRAIN_WANT_X=$("$PY" -c 'import sys; sys.stdout.buffer.write(b"SLOW" + b"x" * 4092 + b"y" * 1024)' | sha)
