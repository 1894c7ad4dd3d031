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
# Then CSN 7 again in a keyed session: smbd requires signing, smbaccel
# holds the user's secret and signs its coalesced WRITEs, the
# ChannelSequence under the signature.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "ChannelSequence of smbaccel's own requests"
CW=$TESTS_DIR/csn_writes.py
N=256

# run LABEL PORT CSN SEED [--sign]: the transcript in $T/LABEL.out
run() {
	timeout 120 "$PY" "$CW" "$2" "$1.dat" "$4" "$3" "$N" ${5:+"$5"} > "$T/$1.out" 2> "$T/$1.err" ||
	    { cat "$T/$1.err" >&2; fail "$1: csn_writes.py failed"; }
	sed "s/^/$1: /" "$T/$1.out" | while read -r l; do info "$l"; done
}

# the pattern csn_writes.py writes: N + 1 KiB of Python's generator
pattern() { "$PY" -c "import random,sys; sys.stdout.buffer.write(random.Random($1).randbytes(1024 * ($N + 1)))"; }

# csn_case LABEL CSN [--sign]
csn_case() {
	local l=$1 csn=$2 seed want a u b v
	seed=$((RANDOM * 32768 + RANDOM + 1))
	want=$(pattern "$seed" | sha256sum | cut -d' ' -f1)
	run "direct-$l" "$SMBD_PORT" "$csn" "$seed" "${3:-}"
	a=$(stat_get writes_absorbed); u=$(stat_get upstream_writes)
	run "proxy-$l" "$PROXY_PORT" "$csn" "$seed" "${3:-}"
	b=$(stat_get writes_absorbed); v=$(stat_get upstream_writes)
	diff -u "$T/direct-$l.out" "$T/proxy-$l.out" >&2 ||
	    fail "$l: answers through smbaccel differ from smbd's"
	grep -qx "write-older STATUS_FILE_NOT_AVAILABLE" "$T/direct-$l.out" ||
	    fail "$l: smbd did not refuse the older ChannelSequence (the test proves nothing)"
	assert_eq "$want" "$(sha256 "$SHARE_DIR/direct-$l.dat")" "$l: direct file on smbd's disk"
	assert_eq "$want" "$(sha256 "$SHARE_DIR/proxy-$l.dat")" "$l: file written through smbaccel on smbd's disk"
	info "$l: absorbed $((b - a)) writes, $((v - u)) upstream WRITEs"
	assert_ge $((N - 8)) $((b - a)) "$l: writes absorbed"
	[ $((v - u)) -le 16 ] || fail "$l: $((v - u)) upstream WRITEs for $N writes (not coalesced)"
	assert_eq 0 "$(stat_get deferred_errors)" "$l: deferred write errors"
	assert_eq 0 "$(stat_get ledger_errors)" "$l: ledger errors"
}

start_smbd
start_proxy
csn_case csn7 7
csn_case csn7fff 32767
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status"
stop_smbd

start_smbd "server signing = mandatory"
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
PROXY_PORT= start_proxy "secrets = $T/secrets"
csn_case signed7 7 --sign
assert_ge 1 "$(stat_get sessions_keyed)" "signed: keyed sessions"
assert_eq 0 "$(stat_get bad_signatures)" "signed: bad signatures"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status"
info "PASS"
