#!/bin/bash
# sanitizer: no (runs no daemon: tests of its own through the runner)
# test-timeout: 240
# The lanes of tests/run-integration.sh, run on tests of its own
# (INTEGRATION_DIR=$T/it, through a nested runner with TEST_JOBS_NESTED):
#  1. two lanes over ten tests: never more than two ordinary tests run at
#     once and two do run at once; the "# exclusive:" test starts first and
#     nothing runs beside it; the two "# waits:" tests run in the waiting
#     lane (TEST_WAIT_JOBS=1) after it, one beside two ordinary tests
#     (three at once), never both at once while ordinary tests are left
#     to start; the others start longest first (by $T/it/durations); a
#     test that fails, one that skips, one that leaves a process behind
#     (failed, the process named and killed) and one past its
#     "# test-timeout:" (failed, "timed out") are reported as one by one;
#     counts, SUMMARY_FILE and the "failed:" list (in list order) are those
#     of a run one by one; a failure says what ran beside it; the two
#     longest run together, taking 50 ports each at the same moment, and
#     never get the same one (free_port's registry); with cgroup v2,
#     lanes.log gives the CPU a test used: t_c counts to 1.5 million in sh
#     (about 1.5 s of CPU here; at least 0.6 s), t_x sleeps for 1.5 s
#     (less than 0.3 s);
#  2. control: the same two tests with one lane never overlap, in list
#     order (so check 1's overlap could fail); nor do a waiting and an
#     ordinary test with no waiting lane (TEST_WAIT_JOBS=0);
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
# a fixed amount of work (about 1.5 s of CPU here), not a fixed time: a
# spin of 1.5 s got 0.9 s of CPU while CI ran its other lane beside it
fake t_c -- 'timeout 30 sh -c "i=0; while [ \$i -lt 1500000 ]; do i=\$((i + 1)); done"'
fake t_x '# exclusive: this test checks that nothing runs beside it' -- 'sleep 1.5'
fake t_fail -- 'sleep 0.5' 'fail "failing on purpose"'
fake t_skip -- 'skip "skipping on purpose"'
fake t_leak -- 'sleep 300 & echo $! > "$LANES_T/leaked.pid"' 'sleep 0.5'
fake t_hang '# test-timeout: 2' -- 'sleep 30'
fake t_w1 '# waits: this test checks the waiting lane' -- 'sleep 2.5'
fake t_w2 '# waits: this test checks the waiting lane' -- 'sleep 1'
cat > "$IT/durations" <<EOF
t_w1 50
t_w2 45
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
# (TEST_WAIT_JOBS from the environment, default 1)
runner() {
	local jobs=$1 res=$2; shift 2
	INTEGRATION_DIR=$IT RESULTS_DIR=$res SUMMARY_FILE=$res.summary TEST_JOBS_NESTED=$jobs \
	    TESTS="$*" LEFTOVER_GRACE=1 bash "$TOP/tests/run-integration.sh" > "$res.out" 2>&1
}

# ---- 1. two lanes
info "1. two lanes and a waiting lane, ten tests"
runner 2 "$T/r1" t_fail t_w2 t_a t_skip t_x t_leak t_b t_hang t_w1 t_c
rc=$?
sed 's/^/    /' "$T/r1.out" | grep -v '^    *|'
echo "    lanes.log:"; sed 's/^/      /' "$T/r1/lanes.log"
assert_eq 1 "$rc" "runner exit status with failures"
assert_eq "6 passed, 3 failed, 1 skipped" "$(tail -n 1 "$T/r1.out")" "summary line"
assert_eq "failed: t_fail t_leak t_hang" "$(grep '^failed:' "$T/r1.out")" "failed: list (list order)"
assert_eq "6 3 1| t_fail t_leak t_hang" "$(tr '\n' '|' < "$T/r1.summary" | sed 's/|$//')" "SUMMARY_FILE"
for t in t_a t_b t_c t_x t_w1 t_w2; do grep -q "^PASS  $t (" "$T/r1.out" || fail "no PASS line for $t"; done
grep -q '^PASS  t_x (.*alone' "$T/r1.out" || fail "the exclusive test's line does not say alone"
grep -q '^PASS  t_w1 (.*waiting lane' "$T/r1.out" || fail "the waiting test's line does not say so"
grep -q '^SKIP  t_skip (.*skipping on purpose' "$T/r1.out" || fail "no SKIP line with the reason"
grep -q '^FAIL  t_fail (' "$T/r1.out" || fail "no FAIL line for t_fail"
grep -q 'failing on purpose' "$T/r1.out" || fail "t_fail's log is not shown"
grep -q '^      t_fail ran beside: ' "$T/r1.out" || fail "no 'ran beside' line for t_fail"
grep -q 'still running after the test ended' "$T/r1/t_leak.log" || fail "t_leak's leftover process not reported"
grep -q 'sleep 300' "$T/r1/t_leak.log" || fail "t_leak's leftover process not named"
kill -0 "$(cat "$T/leaked.pid")" 2>/dev/null && fail "t_leak's process is still running"
grep -q 't_hang timed out after 2s' "$T/r1/t_hang.log" || fail "t_hang not reported as timed out"
# the CPU each test used (cpu.stat of its cgroup), when the runner ran the
# tests in cgroup v2 (t_leak's report names the mode it used)
if grep -q 'still running after the test ended (v2 ' "$T/r1/t_leak.log"; then
	cpu_of() { sed -n "s/^[0-9:.]* end   $1 exit 0 cpu \([0-9.]*\) s\$/\1/p" "$T/r1/lanes.log"; }
	cpu_c=$(cpu_of t_c) cpu_x=$(cpu_of t_x)
	info "CPU in lanes.log: t_c (counts to 1.5 million) ${cpu_c:-none} s, t_x (sleeps 1.5 s) ${cpu_x:-none} s"
	[ -n "$cpu_c" ] && [ -n "$cpu_x" ] || fail "lanes.log gives no CPU seconds for t_c and t_x"
	awk -v c="$cpu_c" -v x="$cpu_x" 'BEGIN { exit !(c >= 0.6 && x < 0.3) }' ||
	    fail "CPU seconds in lanes.log: t_c $cpu_c (counts to 1.5 million), t_x $cpu_x (sleeps 1.5 s)"
fi
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
def most_at_once(names):
    pts = sorted([(iv[n][0], 1) for n in names] + [(iv[n][1], -1) for n in names])
    cur, most = 0, 0
    for _, d in pts:
        cur += d
        most = max(most, cur)
    return most
waits = ["t_w1", "t_w2"]
ordinary = [n for n in iv if n not in waits]
most, most_ord = most_at_once(list(iv)), most_at_once(ordinary)
x = iv["t_x"]
beside = [n for n, (a, b) in iv.items() if n != "t_x" and a < x[1] and b > x[0]]
first = min(iv, key=lambda n: iv[n][0])
a, b = iv["t_a"], iv["t_b"]
w1, w2 = iv["t_w1"], iv["t_w2"]
# the waiting tests may overlap only once no ordinary test is left to start
last_ord_start = max(iv[n][0] for n in ordinary)
w_overlap = min(w1[1], w2[1]) - max(w1[0], w2[0])
print("    at most %d at once (%d ordinary); first %s; beside t_x: %s; "
      "t_a and t_b overlap %.1f s; t_w1 and t_w2 overlap %.1f s"
      % (most, most_ord, first, beside or "nothing",
         min(a[1], b[1]) - max(a[0], b[0]), w_overlap))
bad = 0
if min(a[1], b[1]) - max(a[0], b[0]) < 1:
    print("    FAIL: t_a and t_b (the two longest) did not run together"); bad = 1
if most_ord != 2:
    print("    FAIL: %d ordinary tests at once with two lanes" % most_ord); bad = 1
if most != 3:
    print("    FAIL: %d tests at once with two lanes and a waiting lane" % most); bad = 1
if beside or first != "t_x":
    print("    FAIL: the exclusive test did not run first and alone"); bad = 1
if w1[0] < x[1] or w2[0] < x[1]:
    print("    FAIL: a waiting test started before the exclusive one ended"); bad = 1
if w_overlap > 0 and max(w1[0], w2[0]) < last_ord_start:
    print("    FAIL: both waiting tests ran at once while ordinary tests were left"); bad = 1
sys.exit(bad)
PYEOF
order=$(grep -v '(waiting lane)' "$T/r1/lanes.log" | sed -n 's/^[0-9:.]* start \(t_[a-z]*\).*/\1/p' | tr '\n' ' ')
assert_eq "t_x t_a t_b t_c t_leak t_fail t_skip t_hang " "$order" "start order (exclusive first, then longest first)"
worder=$(sed -n 's/^[0-9:.]* start \(t_w[0-9]\) (waiting lane)$/\1/p' "$T/r1/lanes.log" | tr '\n' ' ')
assert_eq "t_w1 t_w2 " "$worder" "waiting lane's start order (longest first)"
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
: > "$LANES_LOG"
TEST_WAIT_JOBS=0 runner 2 "$T/r2w" t_w1 t_x t_c t_w2 ||
    { cat "$T/r2w.out"; fail "two lanes without a waiting lane failed"; }
grep -q 'waiting lane' "$T/r2w.out" "$T/r2w/lanes.log" && fail "a waiting lane with TEST_WAIT_JOBS=0"
"$PY" - "$LANES_LOG" <<'PYEOF' || fail "no waiting lane (above)"
import sys
iv = {}
for n, w, t in (l.split() for l in open(sys.argv[1])):
    iv.setdefault(n, {})[w] = float(t)
most = max(sum(1 for v in iv.values() if v["start"] <= t < v["end"])
           for v0 in iv.values() for t in [v0["start"]])
print("    TEST_WAIT_JOBS=0: at most %d of t_w1 t_x t_c t_w2 at once" % most)
sys.exit(0 if most == 2 else 1)
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
