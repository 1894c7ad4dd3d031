#!/bin/bash
# Run everything `make check` runs: bin/unit-tests, then every integration
# test (tests/run-integration.sh).  The unit-test binary counts as one
# entry, each integration script as one.  Last line: "N passed, N failed"
# (plus ", N skipped"); exit status 1 if anything failed.
#
#   TESTS="t_smb1 t_garbage"  a subset; the unit tests run only when TESTS
#                             is empty or names "unit"
#   other variables: see tests/run-integration.sh
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
RESULTS_DIR=${RESULTS_DIR:-$TOP/tests/results}
export RESULTS_DIR
mkdir -p "$RESULTS_DIR"
# Only what the runners write there, in case RESULTS_DIR is a shared place.
rm -rf "$RESULTS_DIR"/*.log "$RESULTS_DIR"/*.logs "$RESULTS_DIR"/*.tmpdir "$RESULTS_DIR"/*.san \
    "$RESULTS_DIR/.integration-summary"

pass=0 failn=0 skipn=0 unit_failed=
run_unit=yes
if [ -n "${TESTS:-}" ]; then
	run_unit=no
	for t in $TESTS; do
		case $t in unit|unit-tests) run_unit=yes ;; esac
	done
fi

if [ $run_unit = yes ]; then
	log=$RESULTS_DIR/unit-tests.log
	start=$(date +%s.%N)
	if [ ! -x "$TOP/bin/unit-tests" ]; then
		echo "missing $TOP/bin/unit-tests (run make)" > "$log"
		rc=1
	else
		timeout -k 10 "${UNIT_TIMEOUT:-300}" "$TOP/bin/unit-tests" > "$log" 2>&1 < /dev/null
		rc=$?
	fi
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1)); echo "PASS  unit-tests (${secs}s)"
	else
		failn=$((failn + 1)); unit_failed=" unit-tests"
		echo "FAIL  unit-tests (${secs}s, exit $rc), log $log:"
		tail -n 50 "$log" | sed 's/^/    | /'
	fi
fi

SUMMARY_FILE=$RESULTS_DIR/.integration-summary
export SUMMARY_FILE
rm -f "$SUMMARY_FILE"
bash "$TOP/tests/run-integration.sh" | grep --line-buffered -vE '^[0-9]+ passed, [0-9]+ failed|^failed:'
if [ -f "$SUMMARY_FILE" ]; then
	{ read -r ip if_ is; read -r ifailed; } < "$SUMMARY_FILE"
	pass=$((pass + ip)); failn=$((failn + if_)); skipn=$((skipn + is))
	unit_failed="$unit_failed${ifailed:+ $ifailed}"
else
	echo "FAIL  run-integration.sh did not complete"
	failn=$((failn + 1))
fi

[ -n "$unit_failed" ] && echo "failed:$unit_failed"
line="$pass passed, $failn failed"
[ $skipn -gt 0 ] && line="$line, $skipn skipped"
echo "$line"
[ $failn -eq 0 ]
