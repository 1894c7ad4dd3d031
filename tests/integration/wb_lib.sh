# tests/integration/wb_lib.sh - helpers shared by the t_wb_* and t_ra_*
# tests (sourced after lib.sh).

WB_PY="$PY"
export PYTHONPATH="$TESTS_DIR${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1

# capture_start NAME: dumpcap of the proxy -> smbd leg (tcp port
# $SMBD_PORT, or the capture filter CAP_FILTER) into $T/NAME.pcapng; pid in
# CAP_PID.  "Capturing on" is
# printed before packets are really captured: probe connections to smbd
# are made until the file grows, so the transfer that follows is captured
# from its first packet.
capture_start() {
	command -v dumpcap >/dev/null || skip "dumpcap not installed"
	CAP_FILE=$T/$1.pcapng
	dumpcap -B 256 -i lo -f "${CAP_FILTER:-tcp port $SMBD_PORT}" -w "$CAP_FILE" > "$T/$1.dumpcap.log" 2>&1 &
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
		[ $n -gt 0 ] || fail "dumpcap captures nothing (probe connections to port $SMBD_PORT not seen)"
		port_open "$SMBD_PORT"
		sleep 0.2
	done
}

# capture_stop: SIGINT and wait, so the file is complete (SMB-NOTES).
capture_stop() {
	sleep 0.3
	kill -INT "$CAP_PID" 2>/dev/null
	wait "$CAP_PID" 2>/dev/null
	CAP_PID=
	info "dumpcap: $(grep -i 'dropped' "${CAP_FILE%.pcapng}.dumpcap.log" | tail -n 1)"
}

# upstream_sizes MIN OUT.json: run tests/tools/upstream-sizes on $CAP_FILE
# (once more if it fails: on a shared machine it has been killed from
# outside).
upstream_sizes() {
	local rc
	timeout 300 "$TOP/tests/tools/upstream-sizes" --min "$1" "$CAP_FILE" "$SMBD_PORT" > "$2" && return 0
	rc=$?
	info "upstream-sizes failed (exit $rc), once more"
	timeout 300 "$TOP/tests/tools/upstream-sizes" --min "$1" "$CAP_FILE" "$SMBD_PORT" > "$2" ||
	    fail "upstream-sizes failed on $CAP_FILE"
}

# wb_py SCRIPT ARGS...: run a helper with the system python (impacket).
wb_py() { "$WB_PY" "$TESTS_DIR/$1" "${@:2}"; }

# stats_line KEYS...: "k=v ..." from smbaccelctl stats --json.
stats_line() {
	ctl stats --json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
out = []
for k in sys.argv[1:]:
    v = d
    for p in k.split("."):
        v = v.get(p, 0) if isinstance(v, dict) else 0
    out.append("%s=%s" % (k, v))
print(" ".join(out))' "$@"
}

# problem MSG: report a failure but go on (checks of one case that do not
# stop the other cases); problems_end fails the test if there was any.
WB_PROBLEMS=
problem() {
	echo "PROBLEM [$TEST_NAME]: $*"
	WB_PROBLEMS="$WB_PROBLEMS
  - $*"
}
problems_end() {
	[ -z "$WB_PROBLEMS" ] || fail "problems:$WB_PROBLEMS"
}

# share_file_a NAME: a 256 KiB file of b"A" on the share, writable by all
# (what the read-ahead tests read, and overwrite through another handle)
share_file_a() { head -c 262144 /dev/zero | tr "\0" A > "$SHARE_DIR/$1"; chmod 666 "$SHARE_DIR/$1"; }

# stats_snap NAME: save `smbaccelctl stats --json` as $T/NAME.stats.json.
stats_snap() { ctl stats --json > "$T/$1.stats.json" 2>/dev/null || echo '{}' > "$T/$1.stats.json"; }

# stats_deltas FROM TO [KEYS...]: what grew between two stats_snap
# snapshots: "flush causes: cause=n ..." (the flush causes that grew), then
# KEY=delta for each KEY (default: delayed_responses upstream_writes
# upstream_echoes).  Which timer, rule or request split the coalesced
# writes or reads: when a size check fails, this line says why.
stats_deltas() {
	local from=$1 to=$2; shift 2
	"$PY" - "$T/$from.stats.json" "$T/$to.stats.json" "$@" <<'PYEOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
keys = sys.argv[3:] or ["delayed_responses", "upstream_writes", "upstream_echoes"]
fa, fb = a.get("flush_causes", {}), b.get("flush_causes", {})
out = ["%s=%d" % (k, fb[k] - fa.get(k, 0)) for k in sorted(fb) if fb[k] - fa.get(k, 0)]
print("flush causes: " + (" ".join(out) or "none") + "; " +
      " ".join("%s=%d" % (k, b.get(k, 0) - a.get(k, 0)) for k in keys))
PYEOF
}
