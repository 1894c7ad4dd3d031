#!/bin/bash
# Run the integration tests (tests/integration/t_*.sh), TEST_JOBS at a time.
#
#   TESTS="t_smb1 t_garbage"  run only these (names with or without .sh)
#   TEST_JOBS=N               lanes: how many tests run at once (default 2;
#                             1 runs them one by one in list order).  A
#                             runner started inside a test (t_host_samba,
#                             t_sanitize's SANITIZE_TESTS) uses
#                             TEST_JOBS_NESTED (default 1).
#   TEST_WAIT_JOBS=N          waiting lanes beside them (default 1; 0: none),
#                             for the "# waits:" tests (below)
#   INTEGRATION_DIR=DIR       run the t_*.sh of DIR (default tests/integration)
#   TEST_TIMEOUT=N            per-test timeout in seconds (default: the
#                             script's "# test-timeout: N" line, else 600)
#   PROXY_IMPL=haproxy        use haproxy in TCP mode instead of bin/smbaccel
#   RESULTS_DIR=DIR           where logs go (default tests/results)
#   KEEP_TMP=1                keep each test's temporary directory
#   ADDC_TEMPLATE=no          each Kerberos test provisions its own AD
#                             domain (default: the first provisions it,
#                             the others copy it; addc_lib.sh)
#   SANITIZE_SUITE=1          run each test against the ASan + UBSan daemon
#                             (bin-san/smbaccel, `make SANITIZE=1`): any
#                             sanitizer report fails the test.  A test whose
#                             script says "# sanitizer: no (why)" (memory
#                             or CPU measurements, LD_PRELOAD) keeps
#                             bin/smbaccel; "# asan-options: A=1:B=2 (why)"
#                             adds ASan options for that test.  `make
#                             check` sets it.
#
# Lanes.  With TEST_JOBS > 1 the tests run side by side, each exactly as it
# would alone (its own cgroup, temp directory, ports, namespaces).  A test
# whose result depends on the machine being otherwise idle (throughput or
# timing thresholds, RSS bounds, tests that load both cores themselves)
# says so with a line "# exclusive: <why>" and runs alone: nothing else is
# started while it runs.  Order: the exclusive tests first, one after the
# other (so no lane waits for the others to drain before one), then the
# rest longest first (so the last lane to finish ends with short tests).
# A test that spends most of its length waiting on the clock with the
# machine idle (a Kerberos ticket running out: minutes at a few % of the
# CPU) says so with "# waits: <why>" and runs in a waiting lane of its own
# (TEST_WAIT_JOBS of them) beside the TEST_JOBS lanes, once the exclusive
# tests are done; when no other test is left to start it may also take a
# free ordinary lane.
# Lengths come from the last run's measurements in RESULTS_DIR/.durations,
# else tests/integration/durations (one "NAME SECONDS" a line; refresh it
# from a CI run's .durations), else a quarter of the test's timeout.  The
# result lines come in completion order; the "failed:" list in list order;
# a failed test's lines end with the tests that ran beside it, and
# RESULTS_DIR/lanes.log has when each test started and ended, and with
# cgroup v2 the CPU seconds its processes used ("cpu N s"): a long test
# that uses little of the CPU is a candidate for "# waits:".
#
# Each test runs in its own cgroup (cgroup v2 where one is mounted, else
# the cgroup v1 freezer hierarchy, else - no cgroups - its process group
# plus every process carrying its SMBACCEL_TEST_ID in the environment).
# When the test's script has ended, anything still running in that cgroup
# fails the test, even one that passed: the log names each process (pid,
# command line); then all of it is killed and the cgroup removed.  Daemons
# that fork twice or call setsid (smbd -D, samba, python servers behind
# `ip netns exec`) stay in the cgroup, which is why it is a cgroup.
# Then the network namespaces the test made and left (killed at its
# timeout, its cleanup never ran; named with its shell's pid, see
# netns_leftovers) and their /etc/netns directories are removed, and
# the log says so.
#   LEFTOVER_GRACE=S          how long processes may take to exit after the
#                             script has ended (default 3 s)
#   TEST_CGROUP=none|v1       do not use cgroups (process group +
#                             environment), or use v1 even where v2 works
#
# Each test's output goes to RESULTS_DIR/NAME.log and is shown (last 50
# lines) only when it fails.  The last line is "N passed, N failed" (plus
# ", N skipped").  Exit status 1 if any test failed.  When SUMMARY_FILE is
# set, "passed failed skipped" counts are also written there (run-all.sh).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
RESULTS_DIR=${RESULTS_DIR:-$TOP/tests/results}
export RESULTS_DIR
# where the t_*.sh are (t_lanes points it at tests of its own)
IDIR=${INTEGRATION_DIR:-$TOP/tests/integration}
mkdir -p "$RESULTS_DIR"

if [ -n "${TESTS:-}" ]; then
	list=
	for t in $TESTS; do
		t=${t%.sh}
		case $t in unit|unit-tests) continue ;; esac
		[ -f "$IDIR/$t.sh" ] || { echo "no such test: $t" >&2; exit 2; }
		list="$list $t"
	done
else
	list=$(cd "$IDIR" && ls t_*.sh 2>/dev/null | sed 's/\.sh$//')
fi

# kill_leftovers NAME: after a test was killed without its cleanup, stop
# what it started: processes whose command line names its temp directory.
kill_leftovers() {
	local f=$RESULTS_DIR/$1.tmpdir dir pid
	[ -f "$f" ] || return 0
	dir=$(cat "$f")
	case $dir in */smbaccel-"$1".*) ;; *) rm -f "$f"; return 0 ;; esac
	for pid in $(grep -l -F -- "$dir" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
		[ "$pid" = $$ ] && continue
		echo "  killing leftover pid $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
		kill -KILL "$pid" 2>/dev/null
	done
	[ -z "${KEEP_TMP:-}" ] && rm -rf "$dir"
	rm -f "$f"
}

# test_shell_pid: the pid of the test's shell, timeout(1)'s one child
# ($TEST_PGID is timeout's pid), once it has started (up to 5 s; nothing
# if the test ended first).
test_shell_pid() {
	local n=50 p
	while [ $n -gt 0 ]; do
		p=$(ps -o pid= --ppid "$TEST_PGID" 2>/dev/null | head -n 1 | tr -d ' ')
		[ -n "$p" ] && { echo "$p"; return 0; }
		kill -0 "$TEST_PGID" 2>/dev/null || return 0
		sleep 0.1; n=$((n - 1))
	done
}

# netns_leftovers PID: after a test whose shell had PID has ended (its
# processes gone), remove the network namespaces it made and did not
# remove (killed by the timeout: no cleanup ran), and their /etc/netns
# directories.  The names carry the shell's $$ (lib.sh make_netns
# sa-PID-N; netns.sh sa{PID}xN-cli|rtr|srv; addc_lib.sh
# sa{PID}kN-cli|dir|dc; wanlink.sh wl{PID}xN-cli|rtr|srv): only names of
# exactly these forms with this PID are touched, never another test's; and
# none while a process with that pid lives again (the pid reused).
netns_leftovers() {
	local pid=$1 ns d re
	[ -n "$pid" ] || return 0
	[ -d "/proc/$pid" ] && return 0
	re="^(sa-$pid-[0-9]+|(sa|wl)${pid}x[0-9]+-(cli|rtr|srv)|sa${pid}k[0-9]+-(cli|dir|dc))\$"
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		[[ $ns =~ $re ]] || continue
		ip netns del "$ns" 2>/dev/null &&
		    echo "  removed the leftover network namespace $ns"
	done
	for d in /etc/netns/*; do
		[ -d "$d" ] || continue
		[[ ${d#/etc/netns/} =~ $re ]] || continue
		rm -rf "$d" && echo "  removed the leftover $d"
	done
}

# ---------------------------------------------------------------- containment
# cg_setup: choose CG_MODE (v2, v1 or none) and CG_PARENT, the cgroup
# directory under which each test gets one, named after this runner's pid
# and the test.  Nested runners (a test that runs this script) nest.
CG_MODE=none CG_PARENT= CG= CG_CPU= TEST_PGID= TEST_ID=
cg_setup() {
	local root rel
	[ "${TEST_CGROUP:-}" = none ] && return 0
	[ "$(id -u)" -eq 0 ] || return 0
	for root in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		[ "${TEST_CGROUP:-}" = v1 ] && break
		[ "$(stat -fc %T "$root" 2>/dev/null)" = cgroup2fs ] || continue
		rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
		CG_PARENT=$root${rel%/}
		mkdir "$CG_PARENT/smbaccel-probe.$$" 2>/dev/null || continue
		rmdir "$CG_PARENT/smbaccel-probe.$$"
		CG_MODE=v2
		return 0
	done
	root=/sys/fs/cgroup/freezer
	if [ "$(stat -fc %T "$root" 2>/dev/null)" = cgroupfs ] && [ -f "$root/cgroup.procs" ]; then
		rel=$(sed -n 's/^[0-9]*:freezer://p' /proc/self/cgroup)
		CG_PARENT=$root${rel%/}
		if mkdir "$CG_PARENT/smbaccel-probe.$$" 2>/dev/null; then
			rmdir "$CG_PARENT/smbaccel-probe.$$"
			CG_MODE=v1
			return 0
		fi
	fi
	CG_PARENT=
}

# cg_pids: every live process of the current test (cgroup and the cgroups
# below it; without cgroups: its process group and every process with its
# SMBACCEL_TEST_ID).  Zombies are not counted.
cg_pids() {
	local f p
	{
		if [ -n "$CG" ]; then
			find "$CG" -name cgroup.procs -exec cat {} + 2>/dev/null
		else
			[ -n "$TEST_PGID" ] && ps -e -o pid=,pgid= | awk -v g="$TEST_PGID" '$2 == g {print $1}'
			grep -lzxF "SMBACCEL_TEST_ID=$TEST_ID" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
		fi
	} | sort -un | while read -r p; do
		[ "$p" = $$ ] && continue
		[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = Z ] && continue
		[ -d "/proc/$p" ] && echo "$p"
	done
}

# cg_kill: SIGKILL everything left (frozen first, so nothing forks away).
cg_kill() {
	local n=50 p
	while [ $n -gt 0 ]; do
		p=$(cg_pids)
		[ -n "$p" ] || return 0
		case $CG_MODE${CG:+-cg} in
		v2-cg)	echo 1 > "$CG/cgroup.kill" 2>/dev/null || kill -KILL $p 2>/dev/null ;;
		v1-cg)	echo FROZEN > "$CG/freezer.state" 2>/dev/null
			kill -KILL $p 2>/dev/null
			echo THAWED > "$CG/freezer.state" 2>/dev/null ;;
		*)	kill -KILL $p 2>/dev/null ;;
		esac
		sleep 0.1; n=$((n - 1))
	done
	echo "  could not kill: $(cg_pids | tr '\n' ' ')"
}

# cg_remove: remove the test's cgroup (and any below it), deepest first.
cg_remove() {
	[ -n "$CG" ] || return 0
	find "$CG" -depth -type d -exec rmdir {} + 2>/dev/null
	[ -d "$CG" ] && echo "  cgroup $CG not removed"
	CG=
}

# contain_end NAME LOG: after test NAME's script ended: wait LEFTOVER_GRACE
# for its processes to exit, then name what is left in LOG, kill it and
# remove the cgroup.  Returns 1 if anything was left.
contain_end() {
	local t=$1 log=$2 n left rc=0
	n=$(awk -v g="${LEFTOVER_GRACE:-3}" 'BEGIN { printf "%d", g * 10 }')
	left=$(cg_pids)
	while [ -n "$left" ] && [ "$n" -gt 0 ]; do
		sleep 0.1; n=$((n - 1))
		left=$(cg_pids)
	done
	if [ -n "$left" ]; then
		rc=1
		{
			echo "FAIL [$t]: $(echo "$left" | wc -l) process(es) still running after the test ended ($CG_MODE${CG:+ $CG}):"
			ps -o pid=,ppid=,pgid=,sid=,args= -p "$(echo $left | tr ' ' ',')" 2>/dev/null | sed 's/^/    /'
			echo "  (killed; a test must stop everything it starts, also on failure)"
		} >> "$log"
	fi
	cg_kill >> "$log"
	# the CPU the test's processes used, the exited ones included (cgroup
	# v2 counts them; none without it)
	CG_CPU=
	[ "$CG_MODE" = v2 ] && [ -n "$CG" ] &&
	    CG_CPU=$(awk '$1 == "usage_usec" { printf "%.1f", $2 / 1e6 }' "$CG/cpu.stat" 2>/dev/null)
	cg_remove >> "$log"
	TEST_PGID=
	return $rc
}

cg_setup

SAN_BIN=$TOP/bin-san/smbaccel
if [ "${SANITIZE_SUITE:-}" = 1 ] && [ ! -x "$SAN_BIN" ]; then
	echo "SANITIZE_SUITE=1 but $SAN_BIN is not built (make SANITIZE=1)" >&2
	exit 2
fi

# san_env T: the environment of test T under SANITIZE=1 (none when the
# test opts out); reports go to $RESULTS_DIR/T.san/.
san_env() {
	[ "${SANITIZE_SUITE:-}" = 1 ] || return 0
	grep -q '^# sanitizer: no' "$IDIR/$1.sh" && return 0
	local d=$RESULTS_DIR/$1.san extra
	extra=$(sed -n 's/^# asan-options: *\([^ ]*\).*/:\1/p' "$IDIR/$1.sh" | head -n 1)
	mkdir -p "$d"
	echo "SMBACCEL=$SAN_BIN"
	echo "ASAN_OPTIONS=log_path=$d/asan:abort_on_error=1:halt_on_error=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1$extra"
	echo "UBSAN_OPTIONS=log_path=$d/ubsan:halt_on_error=1:print_stacktrace=1"
	echo "LSAN_OPTIONS=log_path=$d/lsan"
}

# san_reports T: print the sanitizer reports of test T; false if none.
san_reports() {
	local f found=1
	for f in "$RESULTS_DIR/$1.san"/*; do
		[ -f "$f" ] || continue
		found=0
		echo "==== sanitizer report $f"
		head -n 60 "$f"
	done
	return $found
}

# ---------------------------------------------------------------- one test
# run_one NAME OUT: run test NAME (in a background subshell: its lane) and
# leave in OUT the lines to print for it; exit status 0 pass, 77 skip, 1
# fail.  SIGTERM (from the main loop, on INT/TERM) stops the test's
# processes and ends the lane.
run_one() {
	local t=$1 out=$2 script log to senv tag start rc secs tpid=
	# stopped: the test's processes, then what its cleanup would remove
	trap 'cg_kill >/dev/null 2>&1; cg_remove >/dev/null 2>&1
	    kill_leftovers "$t" >/dev/null 2>&1; netns_leftovers "$tpid" >/dev/null 2>&1
	    rmdir "$RESULTS_DIR/$t.san" 2>/dev/null
	    exit 143' TERM
	script=$IDIR/$t.sh
	log=$RESULTS_DIR/$t.log
	to=$(test_timeout "$t")
	rm -rf "$RESULTS_DIR/$t.san"
	senv=$(san_env "$t")
	tag=
	[ -n "$senv" ] && tag=", asan"
	[ "$JOBS" -gt 1 ] && [ -n "$(test_exclusive "$t")" ] && tag="$tag, alone"
	test_waits "$t" && tag="$tag, waiting lane"
	start=$(date +%s.%N)
	TEST_ID=$$.$t.$(date +%s%N)
	if [ "$CG_MODE" != none ]; then
		CG=$CG_PARENT/smbaccel-test.$$.$t
		mkdir "$CG" || { echo "cannot create cgroup $CG: $t runs without one" >&2; CG=; }
	fi
	# The test enters its cgroup before anything runs (sh writes its own
	# pid, then execs); timeout makes it a process group of its own.
	# shellcheck disable=SC2086
	env $senv SMBACCEL_TEST_ID="$TEST_ID" sh -c '[ -z "$1" ] || echo $$ > "$1/cgroup.procs" || exit 125
	    shift; exec "$@"' sh "$CG" timeout -k 15 "$to" bash "$script" > "$log" 2>&1 < /dev/null &
	TEST_PGID=$!
	tpid=$(test_shell_pid)
	wait $TEST_PGID
	rc=$?
	if ! contain_end "$t" "$log"; then
		[ $rc -eq 0 ] || [ $rc -eq 77 ] && rc=1
	fi
	netns_leftovers "$tpid" >> "$log"
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	if [ -n "$senv" ] && san_reports "$t" >> "$log"; then
		echo "FAIL [$t]: sanitizer report (above)" >> "$log"
		[ $rc -eq 0 ] || [ $rc -eq 77 ] && rc=1
	fi
	[ -n "$senv" ] && rmdir "$RESULTS_DIR/$t.san" 2>/dev/null
	echo "$t $secs" > "$out.secs"
	[ -n "$CG_CPU" ] && echo "$CG_CPU" > "$out.cpu"
	case $rc in
	0)	echo "PASS  $t (${secs}s$tag)" > "$out"; exit 0 ;;
	77)	echo "SKIP  $t (${secs}s): $(grep -m1 '^SKIP' "$log" | sed 's/^SKIP \[[^]]*\]: //')" > "$out"
		exit 77 ;;
	esac
	[ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "      $t timed out after ${to}s" >> "$log"
	{
		echo "FAIL  $t (${secs}s$tag, exit $rc), log $log:"
		tail -n 50 "$log" | sed 's/^/    | /'
		kill_leftovers "$t"
	} > "$out"
	exit 1
}

# test_timeout T, test_exclusive T (the reason, or nothing), test_estimate T
# (expected seconds, for the order).
test_timeout() {
	local to
	to=${TEST_TIMEOUT:-$(sed -n 's/^# test-timeout: *\([0-9][0-9]*\).*/\1/p' \
	    "$IDIR/$1.sh" | head -n 1)}
	echo "${to:-600}"
}
test_exclusive() {
	sed -n 's/^# exclusive: *\(.*\)/\1/p' "$IDIR/$1.sh" | head -n 1
}
# test_waits T: true if T runs in a waiting lane (a "# waits:" line, with
# waiting lanes beside two or more ordinary ones)
test_waits() {
	[ "$JOBS" -gt 1 ] && [ "$WJOBS" -gt 0 ] && grep -q '^# waits: ' "$IDIR/$1.sh"
}
DURATIONS=$IDIR/durations
test_estimate() {
	local f s
	for f in "$RESULTS_DIR/.durations" "$DURATIONS"; do
		s=$(awk -v t="$1" '$1 == t { printf "%d", $2; exit }' "$f" 2>/dev/null)
		[ -n "$s" ] && { echo "$s"; return; }
	done
	echo $(( $(test_timeout "$1") / 4 ))
}

# ---------------------------------------------------------------- lanes
JOBS=${TEST_JOBS:-2}
# a runner inside a test (a nested run) shares that test's lane
[ -n "${SMBACCEL_TEST_ID:-}" ] && JOBS=${TEST_JOBS_NESTED:-1}
case $JOBS in ''|*[!0-9]*|0) echo "TEST_JOBS must be a number >= 1 (got '$JOBS')" >&2; exit 2 ;; esac
WJOBS=${TEST_WAIT_JOBS:-1}
case $WJOBS in ''|*[!0-9]*) echo "TEST_WAIT_JOBS must be a number >= 0 (got '$WJOBS')" >&2; exit 2 ;; esac

# The queues: with one lane, list order; with more, the exclusive tests
# (longest first), then the others (longest first); the waiting ones
# (longest first) in wqueue.
nexcl=0 wqueue=
if [ "$JOBS" -gt 1 ]; then
	queue=$(for t in $list; do
		x=1; [ -n "$(test_exclusive "$t")" ] && x=0
		test_waits "$t" && x=2
		echo "$x $(test_estimate "$t") $t"
	done | sort -k1,1n -k2,2nr -k3,3 | awk '{ print $1, $3 }')
	wqueue=$(echo "$queue" | awk '$1 == 2 { print $2 }')
	queue=$(echo "$queue" | awk '$1 != 2 { print $2 }')
	for t in $queue; do [ -n "$(test_exclusive "$t")" ] && nexcl=$((nexcl + 1)); done
	nall=$(echo $queue $wqueue | wc -w)
	[ "$nall" -gt 1 ] &&
	    echo "$nall tests in $JOBS lanes; $nexcl exclusive (first, each alone)${wqueue:+; $(echo $wqueue | wc -w) in $WJOBS waiting lane(s) beside}"
else
	queue=$list
fi

LANE_DIR=$(mktemp -d "$RESULTS_DIR/.lanes.XXXXXX") || exit 2
# what the tests of this run may share (addc_lib.sh: the provisioned AD
# domain they copy); removed with LANE_DIR
TEST_SHARED_DIR=$LANE_DIR/shared
mkdir "$TEST_SHARED_DIR" || exit 2
export TEST_SHARED_DIR
declare -A running=()       # lane pid -> test
declare -A waiting=()       # lane pid -> test, of the tests in waiting lanes
declare -A status=()        # test -> pass | fail | skip
declare -A beside=()        # test -> the tests that ran while it ran
excl=
# RESULTS_DIR/lanes.log: when each test started and ended, and beside what
TRACE=$RESULTS_DIR/lanes.log
: > "$TRACE"
trace() { echo "$(date +%T.%N | cut -c1-12) $*" >> "$TRACE"; }
pass=0 failn=0 skipn=0

# stop_lanes RC: on INT/TERM, stop every running test, then exit.
stop_lanes() {
	local p
	trap '' INT TERM
	for p in "${!running[@]}"; do kill -TERM "$p" 2>/dev/null; done
	wait
	rm -rf "$LANE_DIR"
	exit "$1"
}
trap 'stop_lanes 130' INT
trap 'stop_lanes 143' TERM

# reap: wait for one lane to end, print its lines, count it.
reap() {
	local pid rc t cpu
	while :; do
		pid=
		wait -n -p pid
		rc=$?
		[ -n "$pid" ] && [ -n "${running[$pid]:-}" ] && break
		if [ -z "$pid" ] && [ $rc -eq 127 ]; then
			# no child left although lanes are counted: never expected
			echo "run-integration: lost track of the lanes of:${running[*]}" >&2
			for pid in "${!running[@]}"; do status[${running[$pid]}]=fail; failn=$((failn + 1)); done
			running=()
			return
		fi
	done
	t=${running[$pid]}
	unset "running[$pid]" "waiting[$pid]"
	cpu=
	[ -f "$LANE_DIR/$t.out.cpu" ] && cpu=$(cat "$LANE_DIR/$t.out.cpu")
	[ "$t" = "$excl" ] && excl=
	trace "end   $t exit $rc${cpu:+ cpu $cpu s}"
	if [ -f "$LANE_DIR/$t.out" ]; then
		cat "$LANE_DIR/$t.out"
	else
		rc=1
		echo "FAIL  $t (its lane ended without a result, exit $rc), log $RESULTS_DIR/$t.log"
	fi
	# a failure in a lane: say what ran beside it
	case $rc in 0|77) ;; *) [ "$JOBS" -gt 1 ] &&
		echo "      $t ran beside:${beside[$t]:- nothing}" ;; esac
	[ -f "$LANE_DIR/$t.out.secs" ] && cat "$LANE_DIR/$t.out.secs" >> "$LANE_DIR/durations"
	case $rc in
	0)	pass=$((pass + 1)); status[$t]=pass ;;
	77)	skipn=$((skipn + 1)); status[$t]=skip ;;
	*)	failn=$((failn + 1)); status[$t]=fail ;;
	esac
}

# start T [KIND]: run T in a lane of its own (KIND waits: a waiting lane)
start() {
	local t=$1 p
	beside[$t]=
	for p in "${!running[@]}"; do
		beside[$t]="${beside[$t]} ${running[$p]}"
		beside[${running[$p]}]="${beside[${running[$p]}]} $t"
	done
	run_one "$t" "$LANE_DIR/$t.out" &
	running[$!]=$t
	[ "${2:-}" = waits ] && waiting[$!]=$t
	trace "start $t${excl:+ (alone)}${2:+ (waiting lane)}"
}

set -- $queue
while [ $# -gt 0 ] || [ -n "$wqueue" ] || [ ${#running[@]} -gt 0 ]; do
	while [ $# -gt 0 ] && [ -z "$excl" ] &&
	    [ $((${#running[@]} - ${#waiting[@]})) -lt "$JOBS" ]; do
		t=$1
		if [ "$JOBS" -gt 1 ] && [ -n "$(test_exclusive "$t")" ]; then
			[ ${#running[@]} -eq 0 ] || break   # it waits for the lanes to drain
			excl=$t
		fi
		start "$t"
		shift
	done
	# a waiting test: never beside an exclusive one (those come first),
	# in a waiting lane, or in an ordinary one nothing else will take
	while [ -n "$wqueue" ] && [ -z "$excl" ] &&
	    { [ $# -eq 0 ] || [ -z "$(test_exclusive "$1")" ]; } &&
	    { [ ${#waiting[@]} -lt "$WJOBS" ] ||
	      { [ $# -eq 0 ] && [ ${#running[@]} -lt "$JOBS" ]; }; }; do
		t=${wqueue%%$'\n'*}
		[ "$t" = "$wqueue" ] && wqueue= || wqueue=${wqueue#*$'\n'}
		start "$t" waits
	done
	if [ ${#running[@]} -eq 0 ]; then
		echo "run-integration: nothing runs and cannot start:" $* $wqueue >&2
		exit 2
	fi
	reap
done

# measured lengths, for the next run's order
if [ -f "$LANE_DIR/durations" ]; then
	{
		cat "$LANE_DIR/durations"
		[ -f "$RESULTS_DIR/.durations" ] && cat "$RESULTS_DIR/.durations"
	} | awk '!seen[$1]++' | sort > "$LANE_DIR/durations.all" &&
	    mv "$LANE_DIR/durations.all" "$RESULTS_DIR/.durations"
fi
rm -rf "$LANE_DIR"

failed=
for t in $list; do [ "${status[$t]:-}" = fail ] && failed="$failed $t"; done
[ -n "${SUMMARY_FILE:-}" ] && printf '%s %s %s\n%s\n' "$pass" "$failn" "$skipn" "$failed" > "$SUMMARY_FILE"
line="$pass passed, $failn failed"
[ $skipn -gt 0 ] && line="$line, $skipn skipped"
[ -n "$failed" ] && echo "failed:$failed"
echo "$line"
[ $failn -eq 0 ]
