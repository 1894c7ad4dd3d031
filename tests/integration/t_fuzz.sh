#!/bin/bash
# exclusive: two libFuzzer jobs (FUZZ_CHECK_JOBS=2) and the build use both cores; a test beside it would get a third of the CPU
# sanitizer: no (libFuzzer builds of its own)
# test-timeout: 600
# libFuzzer drivers (tests/fuzz/fuzz_*.c): build them (make fuzz-build,
# clang with ASan + UBSan), check that fuzz_relay's keyed seeds
# (tests/fuzz/seeds/relay/keyed/) key their sessions and pass smbaccel's
# signature and tag checks, replay every input in tests/fuzz/regress/NAME/
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
# The relay driver reaches keyed sessions: replayed, its seeds from keyed
# sessions (mkseeds-keyed.sh; records it signs or seals itself) must key
# every session, pass every signature, and reach the sealed paths
# (AES-GCM WRITEs authenticated without being decrypted among them).
keyed_seeds=$(ls "$TOP"/tests/fuzz/seeds/relay/keyed/* 2>/dev/null)
nk=$(echo "$keyed_seeds" | grep -c .)
[ "$nk" -ge 4 ] || fail "only $nk seeds in tests/fuzz/seeds/relay/keyed/ (mkseeds-keyed.sh)"
FUZZ_RELAY_LOG=0 "$TOP/build-fuzz/fuzz_relay" -runs=1 $keyed_seeds > "$T/keyed.log" 2>&1 ||
    { tail -n 30 "$T/keyed.log"; fail "fuzz_relay failed on the keyed seeds"; }
line=$(grep "^fuzz_relay: since start" "$T/keyed.log" | tail -n 1)
info "keyed seeds ($nk): $line"
set -- $(echo "$line" | tr -c '0-9\n' ' ')
[ $# -eq 6 ] || fail "cannot read fuzz_relay's counters: $line"
[ "$1" -ge "$nk" ] || fail "$nk keyed seeds keyed $1 sessions"
[ "$2" -eq 0 ] || fail "$2 bad signatures in the keyed seeds: fuzz_relay signs what smbaccel does not accept"
[ "$5" -gt 0 ] || fail "smbaccel opened no sealed message of the keyed seeds"
[ "$6" -gt 0 ] || fail "no sealed WRITE of the keyed seeds was authenticated without decryption"
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
