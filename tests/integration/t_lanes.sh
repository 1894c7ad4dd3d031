#!/bin/bash
# sanitizer: no (runs no daemon: tests of its own through the runner)
# test-timeout: 240
# The lanes of tests/run-integration.sh, run on tests of its own
# (INTEGRATION_DIR=$T/it, through a nested runner with TEST_JOBS_NESTED):
#  1. two lanes over eight tests: never more than two run at once and two
#     do run at once; the "# exclusive:" test starts first and nothing runs
#     beside it; the others start longest first (by $T/it/durations); a
#     test that fails, one that skips, one that leaves a process behind
#     (failed, the process named and killed) and one past its
#     "# test-timeout:" (failed, "timed out") are reported as one by one;
#     counts, SUMMARY_FILE and the "failed:" list (in list order) are those
#     of a run one by one; a failure says what ran beside it; the two
#     longest run together, taking 50 ports each at the same moment, and
#     never get the same one (free_port's registry);
#  2. control: the same two tests with one lane never overlap, in list
#     order (so check 1's overlap could fail);
#  3. SIGTERM to the runner while two tests run: it exits 143 within 15 s,
#     both tests' processes and cgroups are gone, their temp directories
#     removed.
. "$(dirname "$0")/lib.sh"

IT=$T/it
mkdir -p "$IT"
export LANES_LOG=$T/lanes.events LIB=$TESTS_DIR/lib.sh LANES_T=$T

# fake NAME [header lines...] -- BODY: a test script of our own.  Every one
# logs "NAME start|end EPOCH" around BODY.
fake() {
	local name=$1 l; shift
	{
		echo '#!/bin/bash'
		while [ $# -gt 0 ] && [ "$1" != -- ]; do echo "$1"; shift; done
		shift
		echo '. "$LIB"'
		echo 'echo "$TEST_NAME start $(date +%s.%N)" >> "$LANES_LOG"'
		for l in "$@"; do echo "$l"; done
		echo 'echo "$TEST_NAME end $(date +%s.%N)" >> "$LANES_LOG"'
	} > "$IT/$name.sh"
}
# t_a and t_b (the longest: they start together) take 50 ports each at the
# same time, then wait a little
ports='for i in $(seq 1 50); do free_port >> "$LANES_T/ports.$TEST_NAME"; done; sleep 1.5'
fake t_a -- "$ports"
fake t_b -- "$ports"
fake t_c -- 'sleep 2'
fake t_x '# exclusive: this test checks that nothing runs beside it' -- 'sleep 1.5'
fake t_fail -- 'sleep 0.5' 'fail "failing on purpose"'
fake t_skip -- 'skip "skipping on purpose"'
fake t_leak -- 'sleep 300 & echo $! > "$LANES_T/leaked.pid"' 'sleep 0.5'
fake t_hang '# test-timeout: 2' -- 'sleep 30'
cat > "$IT/durations" <<EOF
t_x 5
t_a 40
t_b 35
t_c 30
t_leak 25
t_fail 15
t_skip 10
t_hang 5
EOF

# runner JOBS RESULTS TESTS...: the nested runner, output in RESULTS.out
runner() {
	local jobs=$1 res=$2; shift 2
	INTEGRATION_DIR=$IT RESULTS_DIR=$res SUMMARY_FILE=$res.summary TEST_JOBS_NESTED=$jobs \
	    TESTS="$*" LEFTOVER_GRACE=1 bash "$TOP/tests/run-integration.sh" > "$res.out" 2>&1
}

# ---- 1. two lanes
info "1. two lanes, eight tests"
runner 2 "$T/r1" t_fail t_a t_skip t_x t_leak t_b t_hang t_c
rc=$?
sed 's/^/    /' "$T/r1.out" | grep -v '^    *|'
echo "    lanes.log:"; sed 's/^/      /' "$T/r1/lanes.log"
assert_eq 1 "$rc" "runner exit status with failures"
assert_eq "4 passed, 3 failed, 1 skipped" "$(tail -n 1 "$T/r1.out")" "summary line"
assert_eq "failed: t_fail t_leak t_hang" "$(grep '^failed:' "$T/r1.out")" "failed: list (list order)"
assert_eq "4 3 1| t_fail t_leak t_hang" "$(tr '\n' '|' < "$T/r1.summary" | sed 's/|$//')" "SUMMARY_FILE"
for t in t_a t_b t_c t_x; do grep -q "^PASS  $t (" "$T/r1.out" || fail "no PASS line for $t"; done
grep -q '^PASS  t_x (.*alone' "$T/r1.out" || fail "the exclusive test's line does not say alone"
grep -q '^SKIP  t_skip (.*skipping on purpose' "$T/r1.out" || fail "no SKIP line with the reason"
grep -q '^FAIL  t_fail (' "$T/r1.out" || fail "no FAIL line for t_fail"
grep -q 'failing on purpose' "$T/r1.out" || fail "t_fail's log is not shown"
grep -q '^      t_fail ran beside: ' "$T/r1.out" || fail "no 'ran beside' line for t_fail"
grep -q 'still running after the test ended' "$T/r1/t_leak.log" || fail "t_leak's leftover process not reported"
grep -q 'sleep 300' "$T/r1/t_leak.log" || fail "t_leak's leftover process not named"
kill -0 "$(cat "$T/leaked.pid")" 2>/dev/null && fail "t_leak's process is still running"
grep -q 't_hang timed out after 2s' "$T/r1/t_hang.log" || fail "t_hang not reported as timed out"
# who ran when: the runner's lanes.log (a test "ends" there once all its
# processes are gone)
"$PY" - "$T/r1/lanes.log" <<'PYEOF' || fail "lanes (above)"
import sys
iv = {}
for line in open(sys.argv[1]):
    f = line.split()
    h, m, s = f[0].split(":")
    t = int(h) * 3600 + int(m) * 60 + float(s)
    iv.setdefault(f[2], [None, None])[0 if f[1] == "start" else 1] = t
pts = sorted([(a, 1) for a, b in iv.values()] + [(b, -1) for a, b in iv.values()])
cur, most = 0, 0
for _, d in pts:
    cur += d
    most = max(most, cur)
x = iv["t_x"]
beside = [n for n, (a, b) in iv.items() if n != "t_x" and a < x[1] and b > x[0]]
first = min(iv, key=lambda n: iv[n][0])
a, b = iv["t_a"], iv["t_b"]
print("    at most %d at once; first %s; beside t_x: %s; t_a and t_b overlap %.1f s"
      % (most, first, beside or "nothing", min(a[1], b[1]) - max(a[0], b[0])))
bad = 0
if min(a[1], b[1]) - max(a[0], b[0]) < 1:
    print("    FAIL: t_a and t_b (the two longest) did not run together"); bad = 1
if most != 2:
    print("    FAIL: %d tests at once with two lanes" % most); bad = 1
if beside or first != "t_x":
    print("    FAIL: the exclusive test did not run first and alone"); bad = 1
sys.exit(bad)
PYEOF
order=$(sed -n 's/^[0-9:.]* start \(t_[a-z]*\).*/\1/p' "$T/r1/lanes.log" | tr '\n' ' ')
assert_eq "t_x t_a t_b t_c t_leak t_fail t_skip t_hang " "$order" "start order (exclusive first, then longest first)"
na=$(wc -l < "$T/ports.t_a") nb=$(wc -l < "$T/ports.t_b")
dup=$(sort "$T/ports.t_a" "$T/ports.t_b" | uniq -d | wc -l)
info "  ports: $na + $nb taken at once, $dup given twice"
assert_eq 100 $((na + nb)) "ports taken by t_a and t_b"
assert_eq 0 "$dup" "ports given to both t_a and t_b"

# ---- 2. control: one lane
info "2. control: one lane"
: > "$LANES_LOG"
runner 1 "$T/r2" t_b t_a || { cat "$T/r2.out"; fail "one-lane run failed"; }
sed 's/^/    /' "$T/r2.out"
"$PY" - "$LANES_LOG" <<'PYEOF' || fail "one lane (above)"
import sys
ev = [l.split() for l in open(sys.argv[1])]
seq = [(n, w) for n, w, _ in sorted(ev, key=lambda e: float(e[2]))]
print("    events: %s" % " ".join("%s.%s" % e for e in seq))
sys.exit(0 if seq == [("t_b", "start"), ("t_b", "end"), ("t_a", "start"), ("t_a", "end")] else 1)
PYEOF

# ---- 3. SIGTERM while two tests run
info "3. SIGTERM to the runner while two tests run"
fake t_long1 -- 'sleep 300 & echo $! > "$LANES_T/$TEST_NAME.pid"' 'echo "$T" > "$LANES_T/$TEST_NAME.tmp"' 'wait'
fake t_long2 -- 'sleep 300 & echo $! > "$LANES_T/$TEST_NAME.pid"' 'echo "$T" > "$LANES_T/$TEST_NAME.tmp"' 'wait'
runner 2 "$T/r3" t_long1 t_long2 &
rpid=$!
BG_PIDS="$BG_PIDS $rpid"
n=200
until [ -s "$T/t_long1.tmp" ] && [ -s "$T/t_long2.tmp" ]; do
	n=$((n - 1)); [ $n -gt 0 ] || { cat "$T/r3.out"; fail "the two tests did not start"; }
	sleep 0.1
done
# the runner itself is bash below our runner() subshell
rbash=$(ps -o pid= --ppid "$rpid" | tr -d ' ' | head -n 1)
[ -n "$rbash" ] || fail "no runner process under $rpid"
kill -TERM "$rbash"
n=150
while kill -0 "$rpid" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
kill -0 "$rpid" 2>/dev/null && fail "the runner still runs 15 s after SIGTERM"
wait "$rpid"; rrc=$?
assert_eq 143 "$rrc" "runner exit status after SIGTERM"
# running: PID exists and is not a zombie (a killed test's child waits to
# be reaped by whoever inherited it)
running() { [ -e "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
for t in t_long1 t_long2; do
	p=$(cat "$T/$t.pid")
	running "$p" && fail "$t's process $p still runs after the runner was stopped: $(ps -o stat=,args= -p "$p")"
	[ -e "$(cat "$T/$t.tmp")" ] && fail "$t's temp directory $(cat "$T/$t.tmp") was left behind"
done
left=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "smbaccel-test.$rbash.*" 2>/dev/null)
[ -z "$left" ] || fail "cgroups left after SIGTERM: $left"
info "  runner exit 143, both tests' processes, cgroups and temp directories gone"
info "PASS"
