#!/bin/bash
# tests/fuzz/run.sh SECONDS NAME... - replay the regression inputs, then
# fuzz each driver for SECONDS.  Used by `make fuzz` and t_fuzz.sh.
#
#   FUZZ_DIR   where the drivers are (build-fuzz); corpora grow in
#              FUZZ_DIR/corpus/NAME, crashes go to FUZZ_DIR/artifacts/
#   FUZZ_JOBS  drivers fuzzed at the same time (default 1)
#
# Per driver NAME: build-fuzz/fuzz_NAME, seeds tests/fuzz/seeds/NAME/,
# regression inputs tests/fuzz/regress/NAME/ (each must run clean), an
# optional dictionary tests/fuzz/NAME.dict.  A crash, leak, timeout or
# sanitizer report fails the run; its input is kept in FUZZ_DIR/artifacts/
# (copy it to tests/fuzz/regress/NAME/ once the bug is fixed).
# Exit status: 0 clean, 1 something failed, 2 usage.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_DIR=${FUZZ_DIR:-build-fuzz}
case $FUZZ_DIR in /*) ;; *) FUZZ_DIR=$TOP/$FUZZ_DIR ;; esac
JOBS=${FUZZ_JOBS:-1}
[ $# -ge 2 ] || { echo "usage: $0 SECONDS NAME..." >&2; exit 2; }
SECS=$1; shift
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$FUZZ_DIR/artifacts" "$FUZZ_DIR/logs"

# Longest input per driver: a relay session needs room, a policy file or
# a single SMB2 message much less.
max_len() {
	case $1 in
	relay) echo 131072 ;;
	smb2|frame) echo 16384 ;;
	*) echo 8192 ;;
	esac
}

failed=

# 1. regression inputs: every file must run clean
for n in "$@"; do
	bin=$FUZZ_DIR/fuzz_$n
	[ -x "$bin" ] || { echo "FAIL  $n: $bin not built"; failed="$failed $n"; continue; }
	dir=$TOP/tests/fuzz/regress/$n
	[ -d "$dir" ] || continue
	files=0 bad=0
	for f in "$dir"/*; do
		[ -f "$f" ] || continue
		files=$((files + 1))
		log=$FUZZ_DIR/logs/regress-$n-$(basename "$f").log
		if ! "$bin" -runs=1 "$f" > "$log" 2>&1; then
			bad=$((bad + 1))
			echo "FAIL  $n: regression input $(basename "$f") crashes; log $log:"
			grep -E 'ERROR|SUMMARY|^ +#[0-5] ' "$log" | head -n 12 | sed 's/^/    | /'
		fi
	done
	[ $files -gt 0 ] || continue
	if [ $bad -eq 0 ]; then
		echo "ok    $n: $files regression inputs replayed"
	else
		failed="$failed $n"
	fi
done

# 2. fuzz each for SECS, JOBS at a time
run_one() {
	local n=$1 bin=$FUZZ_DIR/fuzz_$1 corpus=$FUZZ_DIR/corpus/$1
	local seeds=$TOP/tests/fuzz/seeds/$1 dict=$TOP/tests/fuzz/$1.dict
	local log=$FUZZ_DIR/logs/fuzz-$1.log
	mkdir -p "$corpus"
	"$bin" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=3072 \
	    -max_len="$(max_len "$n")" -print_final_stats=1 \
	    -artifact_prefix="$FUZZ_DIR/artifacts/$n-" \
	    $( [ -f "$dict" ] && echo "-dict=$dict" ) \
	    "$corpus" $( [ -d "$seeds" ] && echo "$seeds" ) > "$log" 2>&1
}

pids= names=
for n in "$@"; do
	[ -x "$FUZZ_DIR/fuzz_$n" ] || continue
	run_one "$n" &
	pids="$pids $!"; names="$names $n"
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 0.5; done
done
set -- $names
for p in $pids; do
	n=$1; shift
	log=$FUZZ_DIR/logs/fuzz-$n.log
	if wait "$p"; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		cov=$(grep -E '^#[0-9]+.*(DONE|cov:)' "$log" | tail -n 1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
		echo "ok    $n: ${runs:-?} runs in ${SECS}s, coverage ${cov:-?}, corpus $(ls "$FUZZ_DIR/corpus/$n" | wc -l) files"
	else
		echo "FAIL  $n: see $log; crashing input in $FUZZ_DIR/artifacts/:"
		grep -E 'ERROR|SUMMARY|Test unit written|^ +#[0-9] ' "$log" | head -n 30 | sed 's/^/    | /'
		failed="$failed $n"
	fi
done
[ -z "$failed" ] || { echo "fuzz failed:$failed"; exit 1; }
exit 0
