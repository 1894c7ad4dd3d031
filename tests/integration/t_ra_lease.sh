#!/bin/bash
# exclusive: >= 60 % of read-ahead's upstream READ bytes must be in READs >= 512 KiB (87.5-89.9 % here, also beside 3 CPU hogs); when smbd answers late the reader nears the fetched end and read-ahead sends 64 KiB fetches (75 % seen in CI)
# test-timeout: 300
# Issue 4 test 2: read-ahead under read_ahead = leased (write_behind =
# leased).  ra_lease.py: A holds a level II oplock, an R lease or an RH
# lease (3.0; lease R also at 2.1) and reads an 8 MiB random file in 4 KiB
# reads (each checked): read-ahead serves them (ra_hits) and, per the
# dumpcap capture of the upstream leg, most upstream READ bytes travel in
# READs of >= 512 KiB.  B then overwrites regions behind, just ahead of
# and far ahead of A, through the proxy or directly to smbd; the server
# breaks A; A's next reads see the new bytes.  A reader with no oplock
# gets read-ahead under leased through the lease smbaccel asks on its
# behalf (proxy_lease, issue 15), and B's writes through smbaccel still
# reach its next reads.  Then A reopens (a new oplock/lease)
# and reads the whole file again.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "read-ahead under leased"
export WB_SMB_TIMEOUT=20

start_smbd
PROXY_SHARE_SECTION=no start_proxy "" "[share share]" "write_behind = leased" "read_ahead = leased"
CASES=${RA_LEASE_CASES:-oplock2:3.0:proxy lease-r:3.0:proxy lease-rh:3.0:direct lease-r:2.1:direct oplock2:3.0:direct none:3.0:proxy}
for c in $CASES; do
	IFS=: read -r mode d via <<< "$c"
	f=ra-$mode-$d-$via
	random_file "$T/$f.orig" 8
	cp "$T/$f.orig" "$SHARE_DIR/$f"
	chown "$SMB_USER" "$SHARE_DIR/$f"
	case $via in proxy) wp=$PROXY_PORT ;; *) wp=$SMBD_PORT ;; esac
	h0=$(stat_get ra_hits)
	stats_snap "$c-0"
	capture_start "$f"
	out=$(timeout 120 "$PY" "$TESTS_DIR/ra_lease.py" "$PROXY_PORT" "$d" "$mode" "$f" "$wp" "$T/$f.orig" 2>&1)
	rc=$?
	capture_stop
	h1=$(stat_get ra_hits)
	stats_snap "$c-1"
	echo "$out" | sed "s/^/    $c: /"
	[ $rc -eq 0 ] || fail "$c: the reader saw wrong bytes or no break (above)"
	info "$c: ra_hits +$((h1 - h0)); $(stats_deltas "$c-0" "$c-1" ra_fetches ra_fetch_bytes ra_waits ra_widened delayed_responses)"
	if [ "$mode" = none ]; then
		# smbaccel's own R lease serves the first half; B's write
		# through smbaccel breaks it (the rest goes to the server)
		assert_ge 900 $((h1 - h0)) "$c: reads served by read-ahead (of 1024 before B's writes) under smbaccel's lease"
	else
		assert_ge 2900 $((h1 - h0)) "$c: reads served by read-ahead (of 4096 under an oplock/lease)"
		# 4 MiB + 8 MiB read under the oplock/lease go through
		# read-ahead; 4 MiB after the break and B's regions are A's own
		# 4 KiB and 8 KiB READs, forwarded (no oplock then), so they are
		# left out: >= 60 % of read-ahead's bytes in large READs.  Over
		# all READ bytes that was 69.9-71.8 % at best and 59.9 % in a
		# CI run whose read-ahead share was 75 %.
		upstream_sizes 524288 "$T/$f.json"
		"$PY" "$TESTS_DIR/wb_sizes.py" "$T/$f.json" read 0.6 $((16 * 1048576)) "" "$c" 8192 ||
		    fail "$c: upstream READ sizes (above)"
	fi
	rm -f "$CAP_FILE"
done
info "stats: $(stats_line ra_hits ra_fetches ra_fetch_bytes ra_invalidations.break ra_invalidations.peer ra_invalidations.write ledger_errors)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
