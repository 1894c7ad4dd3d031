# tests/integration/pl_lib.sh - helpers of the t_pl_* tests (leases on a
# client's behalf, DESIGN.md section 6); sourced after lib.sh and wb_lib.sh.

# pl_capture_start NAME: dumpcap of both legs (the proxy's port and smbd's)
# into $T/NAME.pcapng; the same start-up wait as capture_start.
pl_capture_start() {
	command -v dumpcap >/dev/null || skip "dumpcap not installed"
	CAP_FILE=$T/$1.pcapng
	dumpcap -B 256 -i lo -f "tcp port $SMBD_PORT or tcp port $PROXY_PORT" \
	    -w "$CAP_FILE" > "$T/$1.dumpcap.log" 2>&1 &
	CAP_PID=$!
	BG_PIDS="$BG_PIDS $CAP_PID"
	local n=100 size0
	until grep -q 'Capturing on' "$T/$1.dumpcap.log" && [ -s "$CAP_FILE" ]; do
		n=$((n - 1))
		[ $n -gt 0 ] && kill -0 "$CAP_PID" 2>/dev/null ||
		    fail "dumpcap did not start: $(cat "$T/$1.dumpcap.log")"
		sleep 0.1
	done
	size0=$(stat -c %s "$CAP_FILE")
	n=50
	while [ "$(stat -c %s "$CAP_FILE")" -le "$size0" ]; do
		n=$((n - 1))
		[ $n -gt 0 ] || fail "dumpcap captures nothing"
		port_open "$SMBD_PORT"
		sleep 0.2
	done
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
