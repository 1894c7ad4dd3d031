#!/bin/bash
# Run the integration tests (tests/integration/t_*.sh) one by one.
#
#   TESTS="t_smb1 t_garbage"  run only these (names with or without .sh)
#   TEST_TIMEOUT=N            per-test timeout in seconds (default: the
#                             script's "# test-timeout: N" line, else 600)
#   PROXY_IMPL=haproxy        use haproxy in TCP mode instead of bin/smbaccel
#   RESULTS_DIR=DIR           where logs go (default tests/results)
#   KEEP_TMP=1                keep each test's temporary directory
#   SANITIZE_SUITE=1          run each test against the ASan + UBSan daemon
#                             (bin-san/smbaccel, `make SANITIZE=1`): any
#                             sanitizer report fails the test.  A test whose
#                             script says "# sanitizer: no (why)" (memory
#                             or CPU measurements, LD_PRELOAD) keeps
#                             bin/smbaccel; "# asan-options: A=1:B=2 (why)"
#                             adds ASan options for that test.  `make
#                             check` sets it.
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
mkdir -p "$RESULTS_DIR"

if [ -n "${TESTS:-}" ]; then
	list=
	for t in $TESTS; do
		t=${t%.sh}
		case $t in unit|unit-tests) continue ;; esac
		[ -f "$TOP/tests/integration/$t.sh" ] || { echo "no such test: $t" >&2; exit 2; }
		list="$list $t"
	done
else
	list=$(cd "$TOP/tests/integration" && ls t_*.sh 2>/dev/null | sed 's/\.sh$//')
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

SAN_BIN=$TOP/bin-san/smbaccel
if [ "${SANITIZE_SUITE:-}" = 1 ] && [ ! -x "$SAN_BIN" ]; then
	echo "SANITIZE_SUITE=1 but $SAN_BIN is not built (make SANITIZE=1)" >&2
	exit 2
fi

# san_env T: the environment of test T under SANITIZE=1 (none when the
# test opts out); reports go to $RESULTS_DIR/T.san/.
san_env() {
	[ "${SANITIZE_SUITE:-}" = 1 ] || return 0
	grep -q '^# sanitizer: no' "$TOP/tests/integration/$1.sh" && return 0
	local d=$RESULTS_DIR/$1.san extra
	extra=$(sed -n 's/^# asan-options: *\([^ ]*\).*/:\1/p' "$TOP/tests/integration/$1.sh" | head -n 1)
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

pass=0 failn=0 skipn=0 failed=
for t in $list; do
	script=$TOP/tests/integration/$t.sh
	log=$RESULTS_DIR/$t.log
	to=${TEST_TIMEOUT:-$(sed -n 's/^# test-timeout: *\([0-9][0-9]*\).*/\1/p' "$script" | head -n 1)}
	to=${to:-600}
	rm -rf "$RESULTS_DIR/$t.san"
	senv=$(san_env "$t")
	tag=
	[ -n "$senv" ] && tag=", asan"
	start=$(date +%s.%N)
	# shellcheck disable=SC2086
	env $senv timeout -k 15 "$to" bash "$script" > "$log" 2>&1 < /dev/null
	rc=$?
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	if [ -n "$senv" ] && san_reports "$t" >> "$log"; then
		echo "FAIL [$t]: sanitizer report (above)" >> "$log"
		[ $rc -eq 0 ] || [ $rc -eq 77 ] && rc=1
	fi
	[ -n "$senv" ] && rmdir "$RESULTS_DIR/$t.san" 2>/dev/null
	case $rc in
	0)	pass=$((pass + 1)); echo "PASS  $t (${secs}s$tag)" ;;
	77)	skipn=$((skipn + 1))
		echo "SKIP  $t (${secs}s): $(grep -m1 '^SKIP' "$log" | sed 's/^SKIP \[[^]]*\]: //')" ;;
	*)	failn=$((failn + 1)); failed="$failed $t"
		[ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "      $t timed out after ${to}s" >> "$log"
		echo "FAIL  $t (${secs}s, exit $rc), log $log:"
		tail -n 50 "$log" | sed 's/^/    | /'
		kill_leftovers "$t"
		;;
	esac
done

[ -n "${SUMMARY_FILE:-}" ] && printf '%s %s %s\n%s\n' "$pass" "$failn" "$skipn" "$failed" > "$SUMMARY_FILE"
line="$pass passed, $failn failed"
[ $skipn -gt 0 ] && line="$line, $skipn skipped"
[ -n "$failed" ] && echo "failed:$failed"
echo "$line"
[ $failn -eq 0 ]
