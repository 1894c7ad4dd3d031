#!/bin/bash
# sanitizer: no (performance figures; uses bin/smbaccel)
# test-timeout: 200
# tests/bench/goclient (go-smb2 over the 20 ms / 100 Mbit/s branch link,
# direct and through smbaccel) at tiny sizes, so that its code cannot
# rot.  The bench itself fails on a file on smbd's disk that is not the
# pattern, a byte gosmb read wrong, or a bad signature; this checks that
# it exited 0, printed a figure and a ratio for every workload, and that
# smbaccel absorbed the writes in keyed sessions and sent the save's
# requests with their flush.  Never asserts a speed.
. "$(dirname "$0")/lib.sh"
require_smbaccel "the go-smb2 bench"
. "$TESTS_DIR/netns.sh"
. "$TESTS_DIR/wanlink.sh"
wl_require
GOSMB=$TOP/bin/gosmb
if [ ! -x "$GOSMB" ]; then
	[ -n "${CI:-}" ] && fail "$GOSMB not built (make with golang-go installed: make deps)"
	skip "$GOSMB not built"
fi
out=$(TMPDIR=$T bash "$TOP/tests/bench/goclient" --smoke 2>&1)
rc=$?
echo "$out" | grep -v '^ *|' | tail -n 12
[ $rc -eq 0 ] || fail "tests/bench/goclient --smoke exited $rc"
# a figure or ratio above 0 (0 or 0.0 would be a figure not read)
pos='0*[1-9][0-9]*(\.[0-9]+)?|0*\.[0-9]*[1-9][0-9]*'
pos="($pos)"
for w in "1 KiB writes" "4 KiB reads"; do
	grep -Eq "^  $w +$pos +$pos +$pos""x$" <<<"$out" ||
	    fail "no figures and ratio for $w"
done
for w in "save (-F)" "  no compounds"; do
	grep -Fq "  $w " <<<"$out" && grep -Eq "^  ${w//[()]/.} +$pos +$pos +$pos""x$" <<<"$out" ||
	    fail "no figures and ratio for $w"
done
grep -Eq 'sessions_keyed=[1-9][0-9]* sessions_unkeyed=0 bad_signatures=0' <<<"$out" ||
    fail "sessions not keyed: $(grep 'smbaccel:' <<<"$out")"
# 64 writes, then two saves of 67 through smbaccel; the save with
# close_compound = yes sends its FLUSH, QUERY_INFOs and SET_INFO with
# their flush
n=$(sed -n 's/.*writes_absorbed=\([0-9]*\) .*/\1/p' <<<"$out" | tail -n 1)
assert_ge $((64 + 2 * 60)) "${n:-0}" "writes absorbed"
n=$(sed -n 's/.*requests_compounded=\([0-9]*\) .*/\1/p' <<<"$out" | tail -n 1)
assert_ge 2 "${n:-0}" "requests sent with their flush (save)"
info "PASS"
