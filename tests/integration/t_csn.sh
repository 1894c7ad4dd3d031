#!/bin/bash
# A client's ChannelSequence.  A client that reconnects after a network
# failure raises the ChannelSequence of its session (MS-SMB2 3.2.4.1,
# 3.2.7.1: Windows does, and Linux since 5.16), and the server takes the
# newest one a request naming an open carries as the open's, failing a
# WRITE, SET_INFO or IOCTL with an older one STATUS_FILE_NOT_AVAILABLE
# (3.3.5.2.10).  Until 2026-12-06 smbaccel sent its own coalesced WRITEs
# with ChannelSequence 0: behind such a client smbd failed every one of
# them, and the writes smbaccel had acknowledged were lost (reported as a
# deferred error on the next WRITE or the CLOSE).  Found by smbtorture's
# smb2.replay.channel-sequence (t_torture_parity).
#
# csn_writes.py (impacket, SMB 3.0, no oplock or lease) runs directly
# against smbd and through smbaccel (write_behind = always): from its
# CREATE on with ChannelSequence CSN, 256 writes of 1 KiB, the second half
# with CSN + 1 (the client moved on again); then one WRITE with CSN (now
# older: smbd fails it FILE_NOT_AVAILABLE, so smbaccel must not absorb
# and acknowledge it) and one with CSN + 1, and the CLOSE.  Both
# transcripts must be identical and both files on smbd's disk hold the
# pattern; through smbaccel the 1 KiB writes must have been absorbed and
# coalesced, with no deferred error.  CSN 7, and 0x7FFF, whose successor
# 0x8000 is past the middle of the 16-bit space (newer by the server's
# serial arithmetic; smbaccel's old 0 was then older than the open's).
. "$(dirname "$0")/lib.sh"
require_smbaccel "ChannelSequence of smbaccel's own requests"
CW=$TESTS_DIR/csn_writes.py
N=256
start_smbd
start_proxy

# run LABEL PORT CSN SEED: the transcript in $T/LABEL.out
run() {
	timeout 120 "$PY" "$CW" "$2" "$1.dat" "$4" "$3" "$N" > "$T/$1.out" 2> "$T/$1.err" ||
	    { cat "$T/$1.err" >&2; fail "$1: csn_writes.py failed"; }
	sed "s/^/$1: /" "$T/$1.out" | while read -r l; do info "$l"; done
}

# the pattern csn_writes.py writes: N + 1 KiB of Python's generator
pattern() { "$PY" -c "import random,sys; sys.stdout.buffer.write(random.Random($1).randbytes(1024 * ($N + 1)))"; }

for csn in 7 32767; do
	seed=$((RANDOM * 32768 + RANDOM + 1))
	want=$(pattern "$seed" | sha256sum | cut -d' ' -f1)
	run "direct-$csn" "$SMBD_PORT" "$csn" "$seed"
	a=$(stat_get writes_absorbed); u=$(stat_get upstream_writes)
	run "proxy-$csn" "$PROXY_PORT" "$csn" "$seed"
	b=$(stat_get writes_absorbed); v=$(stat_get upstream_writes)
	diff -u "$T/direct-$csn.out" "$T/proxy-$csn.out" >&2 ||
	    fail "csn $csn: answers through smbaccel differ from smbd's"
	grep -qx "write-older STATUS_FILE_NOT_AVAILABLE" "$T/direct-$csn.out" ||
	    fail "csn $csn: smbd did not refuse the older ChannelSequence (the test proves nothing)"
	assert_eq "$want" "$(sha256 "$SHARE_DIR/direct-$csn.dat")" "csn $csn: direct file on smbd's disk"
	assert_eq "$want" "$(sha256 "$SHARE_DIR/proxy-$csn.dat")" "csn $csn: file written through smbaccel on smbd's disk"
	info "csn $csn: absorbed $((b - a)) writes, $((v - u)) upstream WRITEs"
	assert_ge $((N - 8)) $((b - a)) "csn $csn: writes absorbed"
	[ $((v - u)) -le 16 ] || fail "csn $csn: $((v - u)) upstream WRITEs for $N writes (not coalesced)"
done
assert_eq 0 "$(stat_get deferred_errors)" "deferred write errors"
assert_eq 0 "$(stat_get ledger_errors)" "ledger errors"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status"
info "PASS"
