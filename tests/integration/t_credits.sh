#!/bin/bash
# test-timeout: 400
# Credits of clients that ask for no more than they spend
# (credits_window.py, impacket + raw SMB2, dialect 3.0), against smbd with
# "smb2 max credits" 512 and 48, directly and through smbaccel: smbd grants
# a request its CreditCharge plus CreditRequest - 1, so directly such a
# client keeps its window for ever.  Through smbaccel the answers to
# absorbed writes grant from the proxy's bank at least the request's
# charge, and what they could not grant is owed and paid on later answers
# (this client never asks for it again).  Before, what they could not
# grant was never paid back, and they ignored the charge:
#   small  1,500 pipelined 4 KiB writes asking 1, then a 256 KiB READ
#          (charge 4): the client was left with 1 credit, nothing in
#          flight, and could never send the READ;
#   mc128  300 128 KiB writes (charge 2) asking 1: starved at write 211;
#   mc1m   24 pipelined 1 MiB writes (charge 16) asking 1: stuck at write
#          14 with 9 credits;
#   shapes WRITEs with their data after 8 bytes of padding or after a
#          WriteChannelInfo of channel 0: smbd refuses both
#          (INVALID_PARAMETER), smbaccel absorbed and acknowledged them.
# Each case must end as directly (ok: never stuck, the READs sent, every
# write done; shapes' statuses equal), the files on smbd's disk must hold
# every byte written, and the ledger must stay consistent (C <= S).  The
# credits the client ends with may be fewer than directly.
. "$(dirname "$0")/lib.sh"
require_smbaccel "credits of absorbed requests"
export WB_SMB_TIMEOUT=30
CASES=${CREDITS_CASES:-small:1500 mc128:300 mc1m:24 shapes}

# check_file PATH N SIZE: N blocks of SIZE bytes, block k all k & 0xff
check_file() {
	"$PY" - "$1" "$2" "$3" <<'PYEOF'
import sys
path, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = open(path, "rb").read()
want = b"".join(bytes([k & 0xff]) * size for k in range(n))
if d[:len(want)] != want:
    bad = next(i for i in range(min(len(d), len(want))) if d[i] != want[i]) if len(d) >= len(want) else len(d)
    sys.exit("%s: %d bytes, differs from what was written at byte %d" % (path, len(d), bad))
PYEOF
}

for max in 512 48; do
	start_smbd "smb2 max credits = $max"
	start_proxy
	timeout 200 "$PY" "$TESTS_DIR/credits_window.py" "$SMBD_PORT" "direct$max" $CASES > "$T/direct$max.out" 2>&1 ||
	    { cat "$T/direct$max.out"; fail "max credits $max: credits_window.py fails directly"; }
	timeout 200 "$PY" "$TESTS_DIR/credits_window.py" "$PROXY_PORT" "proxy$max" $CASES > "$T/proxy$max.out" 2>&1
	rc=$?
	sed "s/^/  max credits $max, direct:  /" "$T/direct$max.out"
	sed "s/^/  max credits $max, smbaccel: /" "$T/proxy$max.out"
	[ $rc -eq 0 ] || fail "max credits $max: credits_window.py through smbaccel exited $rc"
	for spec in $CASES; do
		c=${spec%%:*} n=${spec#*:}
		d=$(grep "^CASE $c " "$T/direct$max.out") p=$(grep "^CASE $c " "$T/proxy$max.out")
		[ "$(echo "$d" | cut -d' ' -f3)" = ok ] || fail "max credits $max: $c directly: $d"
		[ "$(echo "$p" | cut -d' ' -f3)" = ok ] || fail "max credits $max: $c through smbaccel: $p"
		case $c in
		small) check_file "$SHARE_DIR/proxy$max-small" "$n" 4096 || fail "small: data on disk" ;;
		mc128) check_file "$SHARE_DIR/proxy$max-mc128" "$n" 131072 || fail "mc128: data on disk" ;;
		mc1m) check_file "$SHARE_DIR/proxy$max-mc1m" "$n" 1048576 || fail "mc1m: data on disk" ;;
		shapes)
			assert_eq "$(echo "$d" | cut -d' ' -f5-)" "$(echo "$p" | cut -d' ' -f5-)" \
			    "max credits $max: statuses of the odd WRITEs"
			cmp -s "$SHARE_DIR/direct$max-shapes" "$SHARE_DIR/proxy$max-shapes" ||
			    fail "max credits $max: shapes: the file differs from the direct run's"
			;;
		esac
	done
	assert_eq 0 "$(stat_get ledger_errors)" "ledger errors"
	stop_proxy
	stop_smbd
done
info "PASS"
