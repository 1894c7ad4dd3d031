#!/bin/bash
# test-timeout: 240
# smbd killed in the middle of a coalesced flush.  Client A (smbdd, 1 KiB
# writes, write_behind = always) writes a large file; when some of it is on
# disk, A's smbd child (found by its TCP connection, `ss -tnp`) is stopped,
# so that the proxy's coalesced upstream WRITEs stay in flight and more
# writes are absorbed; then it is killed.  Checks:
#  - A gets an error promptly (within KILL_SLACK seconds of the kill), not
#    success and never a hang;
#  - the proxy log names the lost acknowledged ranges ("closed with
#    write-behind data not acknowledged" / "acknowledged data lost", with
#    offset= and length=), and those ranges cover every byte that A wrote
#    before its failed write (acknowledged) but that is missing or wrong on
#    smbd's disk (compared with the same pattern written directly);
#  - client B, writing through the same proxy (its own smbd child) during
#    all this, finishes with its file intact; a new session afterwards
#    works; the proxy stays up;
#  - a client (D) that leaves with absorbed data while its smbd child is
#    stopped leaves a drain that cannot end: the next session from the same
#    address (E) waits at most connect_timeout and is served, and D's lost
#    ranges are logged once its smbd child is killed.
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's log of lost ranges"

MIB=${KILL_MIB:-256}
SLACK=${KILL_SLACK:-10}
start_smbd
start_proxy "connect_timeout = 5s"
home=$(client_home killed)
seeda=$((RANDOM + 1)) seedb=$((RANDOM + 40000))

# smbd_child_of CLIENT_PID: the smbd child serving the proxy connection of
# that client.  The proxy's upstream connections are the established ones
# with local port SMBD_PORT; the newest one not in $known is the client's.
smbd_children() {
	ss -Htnp state established "( sport = :$SMBD_PORT )" |
	    sed -n 's/.*"smbd",pid=\([0-9]*\).*/\1/p' | sort -u
}

info "client A: $MIB MiB in 1 KiB writes"
SMBC_HOME=$home "$SMBDD" write "$(smb_url "$PROXY_PORT" a)" 1K $((MIB * 1024)) \
    -U "$SMB_USER%$SMB_PASS" -s "$seeda" -q > "$T/a.out" 2>&1 &
apid=$!
BG_PIDS="$BG_PIDS $apid"
n=100
until [ -n "$(smbd_children)" ]; do
	n=$((n - 1)); [ $n -gt 0 ] || fail "no smbd child for client A"
	sleep 0.1
done
achild=$(smbd_children)
[ "$(echo "$achild" | wc -w)" -eq 1 ] || fail "expected one smbd child, got: $achild"
info "client A's smbd child: $achild"

info "client B: 32 MiB in 1 KiB writes, concurrently"
SMBC_HOME=$home "$SMBDD" write "$(smb_url "$PROXY_PORT" b)" 1K 32768 \
    -U "$SMB_USER%$SMB_PASS" -s "$seedb" -q -f > "$T/b.out" 2>&1 &
bpid=$!
BG_PIDS="$BG_PIDS $bpid"

# wait for some of A's data on disk, then stop its smbd child
n=300
while [ "$(stat -c %s "$SHARE_DIR/a" 2>/dev/null || echo 0)" -lt 8388608 ]; do
	kill -0 "$apid" 2>/dev/null || { cat "$T/a.out"; fail "client A ended before 8 MiB reached the disk"; }
	n=$((n - 1)); [ $n -gt 0 ] || fail "client A wrote less than 8 MiB in 30 s"
	sleep 0.1
done
kill -STOP "$achild"
info "stopped smbd child $achild with $(stat -c %s "$SHARE_DIR/a") bytes of A on disk"
# the proxy goes on absorbing A's writes until its per-open or memory
# bound; its flushes stay in flight
n=50
while [ "$(stat_get buffered_bytes)" -lt 2097152 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
buffered=$(stat_get buffered_bytes)
info "buffered (absorbed, not acknowledged upstream): $buffered bytes"
assert_ge 1 "$buffered" "bytes buffered while A's smbd child is stopped"
kill -0 "$apid" 2>/dev/null || { cat "$T/a.out"; fail "client A ended while its smbd child was stopped"; }

t0=$(now)
kill -KILL "$achild"
kill -CONT "$achild" 2>/dev/null
n=$((SLACK * 10))
while kill -0 "$apid" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
kill -0 "$apid" 2>/dev/null && fail "client A still running ${SLACK}s after its smbd child was killed"
wait "$apid"; arc=$?
info "client A ended $(elapsed "$t0") s after the kill, exit status $arc: $(tail -n 2 "$T/a.out" | tr '\n' ' ')"
[ $arc -ne 0 ] || fail "client A reported success although its server died"
[ $arc -ne 3 ] || fail "client A saw wrong data"

# the lost ranges in the log
wait_log 'not acknowledged|acknowledged data lost' 5 ||
    fail "no log line about the lost write-behind data"
grep -E 'not acknowledged|acknowledged data lost|server closed' "$PROXY_LOG" | sed 's/^/  log: /'
grep -E 'file=a .*(not acknowledged|acknowledged data lost)' "$PROXY_LOG" |
    sed -n 's/.*offset=\([0-9]*\) length=\([0-9]*\).*/\1 \2/p' > "$T/lost.txt"
[ -s "$T/lost.txt" ] || fail "the log names no lost range (offset=, length=) for file a"

# what A's data should be: the same pattern written directly, 1 MiB blocks
# A writes sequentially: everything before the offset of its failed write
# was acknowledged to it
ack=$(sed -n 's/.*write at offset \([0-9]*\).*/\1/p' "$T/a.out" | head -n 1)
[ -n "$ack" ] || ack=$(( MIB * 1048576 ))
refmib=$(( ack / 1048576 + 2 )); [ $refmib -le "$MIB" ] || refmib=$MIB
out=$(smbdd_run write "$SMBD_PORT" ref 1M "$refmib" -s "$seeda" -q 2>&1) || fail "reference write: $out"
info "A: acknowledged up to offset $ack; on disk $(stat -c %s "$SHARE_DIR/a") bytes"
info "logged lost ranges (offset length): $(tr '\n' ';' < "$T/lost.txt")"
# every byte below $ack that is wrong or missing on disk must lie in a
# logged range (gaps between logged ranges are fine where the disk is right)
"$PY" - "$SHARE_DIR/a" "$SHARE_DIR/ref" "$ack" "$T/lost.txt" <<'PYEOF' || fail "acknowledged data lost without being named in the log"
import sys
disk, ref, ack = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), int(sys.argv[3])
ranges = sorted(tuple(map(int, l.split())) for l in open(sys.argv[4]) if l.strip())
def covered(lo, hi):
    """[lo, hi) inside the union of the logged ranges?"""
    for off, ln in ranges:
        if off <= lo < off + ln:
            lo = off + ln
            if lo >= hi:
                return True
    return lo >= hi
bad, lost, B = [], 0, 65536
for lo in range(0, ack, B):
    hi = min(lo + B, ack)
    if disk[lo:hi] == ref[lo:hi]:
        continue
    # the wrong bytes of this block, as runs
    i = lo
    while i < hi:
        if i < len(disk) and disk[i] == ref[i]:
            i += 1
            continue
        j = i
        while j < hi and not (j < len(disk) and disk[j] == ref[j]):
            j += 1
        lost += j - i
        if not covered(i, j):
            if bad and bad[-1][1] == i:
                bad[-1] = (bad[-1][0], j)
            else:
                bad.append((i, j))
        i = j
print("acknowledged bytes missing or wrong on disk: %d; not covered by a logged range: %s"
      % (lost, "none" if not bad else ", ".join("%d..%d (%d bytes)" % (a, b, b - a) for a, b in bad[:5])))
sys.exit(1 if bad else 0)
PYEOF

# client B: intact
wait "$bpid"; brc=$?
[ $brc -eq 0 ] || { cat "$T/b.out"; fail "client B failed (exit $brc) while A's server was killed"; }
out=$(smbdd_run write "$SMBD_PORT" refb 1M 32 -s "$seedb" -q 2>&1) || fail "reference write B: $out"
assert_eq "$(sha256 "$SHARE_DIR/refb")" "$(sha256 "$SHARE_DIR/b")" "client B's file on disk"
info "client B: 32 MiB intact"

# a new session afterwards
out=$(smbdd_run write "$PROXY_PORT" c 1K 4096 -s 7 -q -f 2>&1) || fail "new session after the kill: $out"
out=$(smbdd_run verify "$PROXY_PORT" c 4K 1024 -s 7 -q 2>&1) || fail "new session read back: $out"

# A drain that cannot end (the client left with absorbed data, its server
# is stopped) must not lock the same client address out: its next
# connection waits at most connect_timeout (5 s) and is then served.
info "client D leaves with absorbed data while its smbd child is stopped"
before=$(smbd_children)
SMBC_HOME=$home "$SMBDD" write "$(smb_url "$PROXY_PORT" d)" 1K $((MIB * 1024)) \
    -U "$SMB_USER%$SMB_PASS" -s 9 -q > "$T/d.out" 2>&1 &
dpid=$!
BG_PIDS="$BG_PIDS $dpid"
n=100 dchild=
while [ -z "$dchild" ] && [ $n -gt 0 ]; do
	for c in $(smbd_children); do echo "$before" | grep -qw "$c" || dchild=$c; done
	sleep 0.1; n=$((n - 1))
done
[ -n "$dchild" ] || fail "no smbd child for client D"
n=300
while [ "$(stat -c %s "$SHARE_DIR/d" 2>/dev/null || echo 0)" -lt 4194304 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
kill -STOP "$dchild"
sleep 1
kill -KILL "$dpid"; wait "$dpid" 2>/dev/null
wait_log "client (reset|closed) with [0-9]+ bytes buffered" 5 || fail "D's connection is not draining"
t0=$(now)
out=$(smbdd_run write "$PROXY_PORT" e 1K 1024 -s 11 -q -f 2>&1); erc=$?
info "client E (same address) finished $(elapsed "$t0") s later, exit $erc"
kill -KILL "$dchild"; kill -CONT "$dchild" 2>/dev/null
[ $erc -eq 0 ] || fail "a client behind a drain that cannot end failed: $out"
log_has "still draining" && grep "still draining" "$PROXY_LOG" | tail -n 1 | sed 's/^/  log: /'
awk -v e="$(elapsed "$t0")" 'BEGIN { exit !(e < 20) }' || fail "client E waited $(elapsed "$t0") s behind the drain"
wait_log "file=d .*not acknowledged" 10 || fail "D's lost data not logged"
grep "file=d .*not acknowledged" "$PROXY_LOG" | sed 's/^/  log: /'
proxy_alive || fail "proxy died"
info "PASS"
