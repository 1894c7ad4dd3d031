#!/bin/bash
# exclusive: two libFuzzer jobs (FUZZ_CHECK_JOBS=2) and the build use both cores; a test beside it would get a third of the CPU
# sanitizer: no (libFuzzer builds of its own)
# test-timeout: 600
# libFuzzer drivers (tests/fuzz/fuzz_*.c): build them (make fuzz-build,
# clang with ASan + UBSan), replay every input in tests/fuzz/regress/NAME/
# (each must run clean), then fuzz each driver for FUZZ_CHECK_SECONDS
# (default 30), FUZZ_CHECK_JOBS (default 2) at a time, from the seeds in
# tests/fuzz/seeds/NAME/.  Any crash, leak, timeout or sanitizer report
# fails the test; the input is kept in build-fuzz/artifacts/.  Skipped when
# clang or its libFuzzer runtime is missing.
. "$(dirname "$0")/lib.sh"

SECS=${FUZZ_CHECK_SECONDS:-30}
JOBS=${FUZZ_CHECK_JOBS:-2}
command -v "${FUZZ_CC:-clang}" >/dev/null || skip "clang not installed"
printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }\n' > "$T/probe.c"
"${FUZZ_CC:-clang}" -fsanitize=fuzzer "$T/probe.c" -o "$T/probe" 2>/dev/null ||
    skip "clang has no libFuzzer runtime (libclang-rt-dev)"

t0=$(now)
make -C "$TOP" -j2 fuzz-build > "$T/build.log" 2>&1 || { tail -n 40 "$T/build.log"; fail "make fuzz-build failed"; }
info "fuzz drivers built in $(elapsed "$t0") s"
names=$(cd "$TOP/build-fuzz" && ls fuzz_* | sed 's/^fuzz_//' | tr '\n' ' ')
info "drivers: $names; ${SECS}s each, $JOBS at a time"
# the artifacts of earlier runs are not this run's failures
rm -rf "$TOP/build-fuzz/artifacts"
FUZZ_DIR=build-fuzz FUZZ_JOBS=$JOBS bash "$TOP/tests/fuzz/run.sh" "$SECS" $names
rc=$?
if [ $rc -ne 0 ]; then
	for f in "$TOP"/build-fuzz/artifacts/*; do
		[ -f "$f" ] && echo "crashing input: $f ($(wc -c < "$f") bytes)"
	done
	fail "fuzzing found a crash or a regression input crashes (see above)"
fi
info "PASS in $(elapsed "$t0") s"
