# tests/integration/pl_lib.sh - helpers of the t_pl_* tests (leases on a
# client's behalf, DESIGN.md section 6); sourced after lib.sh and wb_lib.sh.

# pl_capture_start NAME: dumpcap of both legs (the proxy's port and smbd's)
# into $T/NAME.pcapng (wb_lib.sh's capture_start with both ports).
pl_capture_start() {
	CAP_FILTER="tcp port $SMBD_PORT or tcp port $PROXY_PORT" capture_start "$1"
}

# pl_legs OUT.json [MIN]: pl_leg.py on $CAP_FILE for the client leg (proxy
# port) and the upstream leg (smbd port); MIN is upstream-sizes' --min.
pl_legs() {
	timeout 300 "$PY" "$TESTS_DIR/pl_leg.py" --min "${2:-1048576}" "$CAP_FILE" "$PROXY_PORT" "$SMBD_PORT" > "$1" ||
	    fail "pl_leg.py failed on $CAP_FILE"
}

# pl_get JSON PATH: one value of pl_leg.py's output (dotted path; missing
# keys are 0).
pl_get() {
	"$PY" -c '
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k, 0) if isinstance(v, dict) else 0
print(v if not isinstance(v, (dict, list)) else json.dumps(v))' "$1" "$2"
}

# pl_slowlink_proxy: pl_slowlink.py between smbaccel and smbd on
# $LINK_PORT, its rate in $T/rate (0: unlimited; the test writes bytes
# per second there), and smbaccel in front of it with flush_idle 300 ms.
pl_slowlink_proxy() {
	LINK_PORT=$(free_port) || fail "no free port"
	echo 0 > "$T/rate"
	"$PY" "$TESTS_DIR/pl_slowlink.py" "$LINK_PORT" "$SMBD_PORT" "$T/rate" > "$T/link.out" 2>&1 &
	BG_PIDS="$BG_PIDS $!"
	wait_port "$LINK_PORT" 10 $! || fail "pl_slowlink.py did not start: $(cat "$T/link.out")"
	PROXY_UPSTREAM=127.0.0.1:$LINK_PORT PROXY_SHARE_SECTION=no start_proxy "" "[share share]" "flush_idle = 300ms"
}
