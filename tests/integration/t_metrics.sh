#!/bin/bash
# `smbaccelctl metrics` (Prometheus text format) against a real smbd:
#  1. before any client and after 1 KiB writes and 4 KiB reads through
#     smbaccel (libsmbclient's smbdd, the file checked on smbd's disk):
#     metrics_check.py reads the text strictly and with the
#     prometheus_client library, and finds every figure of
#     `stats --json`, taken at the same moment, with the same value;
#     the writes are counted as absorbed, the reads as served, both also
#     under the share's own totals (one share, though named in two cases);
#     a client that puts a newline, ESC [31m and U+009B in the server
#     part of its TREE_CONNECT path (evil_names.py) finds them escaped in
#     `shares`, `stats`, `stats --json` and the metrics, and no output or
#     log line of smbaccel holds a control character;
#  2. the checker fails on broken text: a TYPE line dropped, a sample
#     repeated, a counter changed, a family missing;
#  3. `metrics -o FILE` (what smbaccel-metrics.service runs) replaces FILE
#     whole, mode 0644, leaves no temporary file; one it cannot write
#     (no such directory) is exit 1; with smbaccel stopped it exits 3 and
#     removes FILE, so stale figures do not stay behind, saying so once
#     (the next run, with nothing to remove, is silent);
#  4. `metrics --json` is refused (exit 2);
#  5. the `stats` table shows a breakdown's heading (flush causes, opaque
#     relays, closes not compounded, ...) only with something under it:
#     none of them on an idle smbaccel, flush causes after the writes;
#  6. the control socket itself: a command with no newline before EOF
#     (`printf stats | socat`, shutdown(SHUT_WR)) gets its answer (it got
#     none), a line with a NUL in it an error within 1 s (it waited 10 s
#     for a newline and closed without a word); a NUL after the newline
#     is not the command's.
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccelctl metrics"
"$PY" -c 'import prometheus_client' 2>/dev/null ||
    fail "python3-prometheus-client missing (deploy/install-deps.sh installs it)"

CHECK="$PY $TESTS_DIR/metrics_check.py"
t0=$(date +%s)
start_smbd
start_proxy

# snapshot NAME: NAME.prom and NAME.json taken with nothing changing
# between them (the JSON read before and after the metrics is the same).
snapshot() {
	local i
	for i in $(seq 1 20); do
		ctl stats --json > "$T/$1.a.json" || fail "stats --json failed"
		ctl metrics > "$T/$1.prom" || fail "smbaccelctl metrics failed: $(cat "$T/$1.prom")"
		ctl stats --json > "$T/$1.json" || fail "stats --json failed"
		cmp -s "$T/$1.a.json" "$T/$1.json" && return 0
		sleep 0.5
	done
	fail "the counters kept changing for 10 s"
}

# table NAME: `smbaccelctl stats` into NAME.stats; no breakdown heading
# there without an entry after it
table() {
	ctl stats > "$T/$1.stats" || fail "smbaccelctl stats failed"
	if grep -nE '(:|^(invalidations|flush causes|opaque relays|unkeyed sessions|closed by proxy|copies dropped)) *$' \
	    "$T/$1.stats"; then
		cat "$T/$1.stats"
		fail "$1: the stats table has a heading with nothing under it (above)"
	fi
}

# --- 1. before any client
snapshot idle
table idle
for h in 'flush causes' 'opaque relays' 'closes not compounded' 'copies dropped' 'closed by proxy'; do
	grep -q "$h" "$T/idle.stats" && fail "idle: the stats table shows '$h', all 0"
done
$CHECK "$T/idle.prom" "$T/idle.json" --since "$t0" \
    --min 'smbaccel_connections_active=0' || fail "metrics of an idle smbaccel"

# --- after traffic: 1 KiB writes, then 4 KiB reads
seed=$((RANDOM * 32768 + RANDOM + 1))
out=$(smbdd_run write "$PROXY_PORT" m.dat 1K 1024 -s "$seed" -q 2>&1) ||
    fail "smbdd write through smbaccel: $out"
out=$(smbdd_run write "$SMBD_PORT" m-direct.dat 1K 1024 -s "$seed" -q 2>&1) ||
    fail "smbdd write direct: $out"
assert_eq "$(sha256 "$SHARE_DIR/m-direct.dat")" "$(sha256 "$SHARE_DIR/m.dat")" \
    "sha256 on smbd's disk of 1 MiB written through smbaccel and directly"
# the reads name the share in capitals: the same share's totals
out=$(SMBC_SHARE=SHARE smbdd_run read "$PROXY_PORT" m.dat 4K 256 -s "$seed" -q 2>&1) ||
    fail "smbdd read through smbaccel (pattern checked): $out"
snapshot busy
table busy
grep -qE '^flush causes +( [a-z]+=[0-9]+)+$' "$T/busy.stats" ||
    fail "busy: no 'flush causes' line with causes in the stats table: $(cat "$T/busy.stats")"
info "after traffic: $(grep '^flush causes' "$T/busy.stats")"
"$PY" - "$T/busy.json" <<'PYEOF' || fail "per-share totals of stats --json"
import json, sys
sh = json.load(open(sys.argv[1]))["shares"]
print("  shares: %s" % sh)
if len(sh) != 1 or sh[0]["share"].lower() != "share" or sh[0]["tree_connects"] < 2:
    sys.exit("want one share, connected at least twice (share, SHARE)")
PYEOF
$CHECK "$T/busy.prom" "$T/busy.json" --since "$t0" \
    --min 'smbaccel_writes_absorbed_total=1000' \
    --min 'smbaccel_bytes_absorbed_total=1024000' \
    --min 'smbaccel_commands_total{command="WRITE"}=1024' \
    --min 'smbaccel_connections_total=3' \
    --min 'smbaccel_upstream_write_mean=65536' \
    --min 'smbaccel_ra_hits_total=200' \
    --min 'smbaccel_share_bytes_absorbed_total{server="127.0.0.1",share="share"}=1048576' \
    --min 'smbaccel_share_ra_served_bytes_total{server="127.0.0.1",share="share"}=800000' \
    || fail "metrics after traffic"
info "metrics after traffic: $(grep -c '^smbaccel_' "$T/busy.prom") samples, $(grep -c '^# TYPE' "$T/busy.prom") families"

# --- names a client chose: a server name with a newline, ESC [31m and
# U+009B in its TREE_CONNECT path is shown escaped in every table and in
# the metrics (one sample line, the prometheus_client parser and the
# strict one agree, and stats --json has the same name); no output and
# no log line carries a control character
"$PY" "$TESTS_DIR/evil_names.py" "$PROXY_PORT" 4 > "$T/evil.out" 2>&1 &
evil=$!
for i in $(seq 1 100); do grep -q READY "$T/evil.out" && break; sleep 0.1; done
grep -q READY "$T/evil.out" || fail "evil_names.py: $(cat "$T/evil.out")"
ctl shares > "$T/evil.shares" || fail "smbaccelctl shares failed"
ctl stats > "$T/evil.stats" || fail "smbaccelctl stats failed"
wait "$evil" || fail "evil_names.py: $(cat "$T/evil.out")"
snapshot evil
$CHECK "$T/evil.prom" "$T/evil.json" \
    --min 'smbaccel_share_bytes_absorbed_total{server="ev\x0ail\x1b[31m\u009b",share="share"}=100' \
    || fail "metrics with a client's odd server name"
esc='ev\\x0ail\\x1b\[31m\\u009b'
grep -q " ${esc} *share " "$T/evil.shares" ||
    fail "smbaccelctl shares does not show the server name escaped: $(cat -A "$T/evil.shares")"
grep -q "//${esc}/share " "$T/evil.stats" ||
    fail "smbaccelctl stats does not show the share escaped: $(cat -A "$T/evil.stats" | tail -n 8)"
for f in evil.shares evil.stats evil.prom "$(basename "$PROXY_LOG")"; do
	d=$T; [ "$f" = "$(basename "$PROXY_LOG")" ] && d=$(dirname "$PROXY_LOG")
	LC_ALL=C grep -n $'[\x01-\x08\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]' "$d/$f" > "$T/ctl.bad" &&
	    fail "$f holds a control character: $(cat -A "$T/ctl.bad" | head -n 3)"
	grep -n '^il' "$d/$f" && fail "$f has a line the client's newline started"
done
"$PY" - "$T/evil.json" <<'PYEOF' || fail "the odd name in stats --json"
import json, sys
names = [s["server"] for s in json.load(open(sys.argv[1]))["shares"]]
want = "ev\\x0ail\\x1b[31m\\u009b"
print("  servers: %r" % names)
if want not in names:
    sys.exit("want %r among %r" % (want, names))
PYEOF
info "a client's server name with a newline and escapes: shown as $(grep -o "//${esc}/share" "$T/evil.stats")"

# a server part that smbaccel's 255-byte field cuts inside a character:
# the JSON answers stay valid UTF-8 (U+FFFD where the cut was; before,
# the lone byte made every strict parser refuse the whole answer)
"$PY" "$TESTS_DIR/evil_names.py" "$PROXY_PORT" 4 long > "$T/long.out" 2>&1 &
evil=$!
for i in $(seq 1 100); do grep -q READY "$T/long.out" && break; sleep 0.1; done
grep -q READY "$T/long.out" || fail "evil_names.py long: $(cat "$T/long.out")"
for what in conns shares; do
	ctl $what --json > "$T/long.$what.json" || fail "smbaccelctl $what --json failed"
	"$PY" - "$T/long.$what.json" "$what" <<'PYEOF' || fail "smbaccelctl $what --json with a server name cut inside a character"
import json, sys
d = json.loads(open(sys.argv[1], "rb").read())     # strict: bytes must be UTF-8
def strings(v):
    if isinstance(v, dict):
        v = list(v.values())
    if isinstance(v, list):
        for x in v:
            yield from strings(x)
    elif isinstance(v, str):
        yield v
names = [s for s in strings(d) if s.startswith("a" * 200)]
print("  %s: %r" % (sys.argv[2], [n[-4:] for n in names]))
if not names or not all(n.endswith("\ufffd") for n in names):
    sys.exit("want the cut name ending in U+FFFD: %r" % names)
PYEOF
done
wait "$evil" || fail "evil_names.py long: $(cat "$T/long.out")"

# --- 2. the checker must fail on broken text
must_fail() {	# must_fail WHAT FILE [JSON]
	if out=$($CHECK "$2" "${3:-$T/busy.json}" 2>&1); then
		fail "metrics_check passes $1: $out"
	fi
	info "broken on purpose ($1): $(echo "$out" | grep FAIL | head -n 1)"
}
grep -v '^# TYPE smbaccel_bytes_c2s_total' "$T/busy.prom" > "$T/b1.prom"
must_fail "a TYPE line dropped" "$T/b1.prom"
{ cat "$T/busy.prom"; grep '^smbaccel_ra_hits_total ' "$T/busy.prom"; } > "$T/b2.prom"
must_fail "a sample repeated at the end" "$T/b2.prom"
sed 's/^smbaccel_writes_absorbed_total \([0-9]*\)$/smbaccel_writes_absorbed_total 1\1/' \
    "$T/busy.prom" > "$T/b3.prom"
cmp -s "$T/busy.prom" "$T/b3.prom" && fail "could not change writes_absorbed in the copy"
must_fail "a counter changed" "$T/b3.prom"
awk '/^# HELP smbaccel_ra_fetches_total /{skip=3} skip>0{skip--; next} {print}' \
    "$T/busy.prom" > "$T/b4.prom"
must_fail "a family missing" "$T/b4.prom"
sed 's/^smbaccel_commands_total{command="WRITE"}/smbaccel_commands_total{command=WRITE}/' \
    "$T/busy.prom" > "$T/b5.prom"
must_fail "a label value unquoted" "$T/b5.prom"

# --- 3. -o FILE
mkdir -p "$T/textfile"
F=$T/textfile/smbaccel.prom
echo "stale" > "$F"
ctl metrics -o "$F" || fail "metrics -o failed"
assert_eq 644 "$(stat -c %a "$F")" "mode of the -o file"
ls "$T/textfile" | grep -v '^smbaccel\.prom$' && fail "files left beside $F"
ctl stats --json > "$T/o.json"
$CHECK "$F" "$T/o.json" > "$T/o.check" 2>&1 ||
    { cat "$T/o.check"; fail "the -o file does not read as the metrics"; }
out=$(ctl metrics --json 2>&1); rc=$?
assert_eq 2 "$rc" "exit status of metrics --json ($out)"
out=$(ctl metrics -o "$T/no-such-dir/smbaccel.prom" 2>&1); rc=$?
assert_eq 1 "$rc" "exit status of metrics -o into a missing directory ($out)"

# --- 6. the control socket: a command ended by EOF, a NUL in a line
"$PY" - "$CTL_SOCK" > "$T/ctlproto.out" 2>&1 <<'PYEOF' ||
import socket, sys, time
def ask(data, shut):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    s.connect(sys.argv[1])
    s.sendall(data)
    if shut:
        s.shutdown(socket.SHUT_WR)
    t0, out = time.monotonic(), b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        out += b"<no answer within 3 s>"
    s.close()
    return out.decode(errors="replace"), time.monotonic() - t0
bad = 0
out, took = ask(b"stats", True)
if not out.startswith("connections "):
    print("stats then EOF, no newline: %r" % out[:200])
    bad = 1
out, took = ask(b"stats\n\x00", False)
if not out.startswith("connections "):
    print("stats newline NUL: %r" % out[:200])
    bad = 1
out, took = ask(b"stats\x00\n", False)
if not out.startswith("error: bad command") or took > 1:
    print("stats NUL newline: %r after %.1f s" % (out[:200], took))
    bad = 1
if not bad:
    print("EOF: stats answered; NUL: %r in %.3f s" % (out.strip(), took))
sys.exit(bad)
PYEOF
    { cat "$T/ctlproto.out"; fail "control socket: a command at EOF or with a NUL"; }
info "$(cat "$T/ctlproto.out")"

proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status at SIGTERM"
out=$(ctl metrics -o "$F" 2>&1); rc=$?
assert_eq 3 "$rc" "exit status of metrics -o with smbaccel stopped ($out)"
[ -e "$F" ] && fail "$F left behind with smbaccel stopped"
ls "$T/textfile" | grep . && fail "files left in the textfile directory"
echo "$out" | grep -q "not running.*removed $F" || fail "no word of the removal: $out"
info "metrics -o with smbaccel stopped: exit 3, file removed ($out)"
out=$(ctl metrics -o "$F" 2>&1); rc=$?
assert_eq 3 "$rc" "exit status of metrics -o with smbaccel still stopped"
assert_eq "" "$out" "output of metrics -o with smbaccel still stopped and nothing to remove"
info "PASS"
