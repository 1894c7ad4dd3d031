#!/bin/bash
# test-timeout: 120
# A client that goes while smbaccel is not reading it (its input stalled
# behind a flush) and reconnects at once must not be overtaken by its
# previous connection's requests that smbaccel had not handled: the
# reconnect must wait for that connection's drain as when smbaccel has
# seen the client go (t_drain_overtake), and go ahead of it after
# connect_timeout with those requests dropped.
# slowwrite.py between smbaccel and smbd holds the answers to the WRITEs
# of data beginning "SLOW": 2 s below 1 MiB, 5 s at 1 MiB and above.
# drain_overtake.py old ... fin|rst: 64 KiB acknowledged at offset 0 of F
# and 4 KiB at 1 MiB of X (held by smbaccel, flush_idle 60s); then 1 KiB
# more to X, a CREATE of another file (it waits until everything buffered
# is written: X's 5 s; smbaccel stops reading the client), a WRITE of
# 4 KiB "old" at offset 0 of F behind it, and 0.3 s later a close (FIN,
# then in part 2 a reset) that smbaccel, not reading, does not see.  The
# reconnect (drain_overtake.py new, same client address) comes at once:
# smbaccel asks the kernel about the previous connection (POLLRDHUP),
# finds its client gone (logged), reads what it sent and drains it; the
# reconnect waits 1 s (connect_timeout 1s), goes ahead, opens F (it waits
# for F's acknowledged 64 KiB: 2 s), writes 4 KiB "new" at offset 0 and
# closes.  The "old" WRITE must never reach the server (slowwrite.py logs
# every WRITE); F on smbd's disk starts with the 4 KiB "new", then the
# acknowledged bytes, and X holds its 4 KiB and the 1 KiB after it; the
# CREATE and the WRITE are dropped, logged and counted.  Before the fix
# the reconnect did not wait, and the previous connection handled the
# CREATE and the "old" WRITE 5 s after it went, after the reconnect's
# "new" (F began "oooo").
. "$(dirname "$0")/lib.sh"
require_smbaccel "reconnect of a client smbaccel was not reading"
. "$TESTS_DIR/drain_lib.sh"
drain_start

# part HOW F X DROPPED: one client going (HOW) and its reconnect;
# DROPPED is client_requests_dropped after it
part() {
	local how=$1 f=$2 x=$3 dropped=$4 n t0 seen

	info "part $how"
	: > "$T/slowwrite.log"
	seen=$(grep -c "" "$PROXY_LOG")
	touch "$T/go.$how"
	"$PY" "$TESTS_DIR/drain_overtake.py" old "$PROXY_PORT" "$f" "$x" \
	    "$T/ready.$how" "$T/go.$how" "$how" > "$T/old.$how.out" 2>&1 ||
	    { cat "$T/old.$how.out"; fail "$how: the first client failed"; }
	t0=$(now)
	"$PY" "$TESTS_DIR/drain_overtake.py" new "$PROXY_PORT" "$f" > "$T/new.$how.out" 2>&1 ||
	    { cat "$T/new.$how.out"; fail "$how: the reconnecting client failed"; }
	info "$how: reconnect done in $(elapsed "$t0") s"
	n=150
	while [ "$(stat_get connections_active)" != 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
	assert_eq 0 "$(stat_get connections_active)" "$how: connections_active once drained"
	info "$how: drained $(elapsed "$t0") s after the close; WRITEs at offset 0 of F: $(grep 'offset=0 length=4096' "$T/slowwrite.log" | tr '\n' ' ')"
	tail -n +"$((seen + 1))" "$PROXY_LOG" > "$T/proxy.$how.log"
	grep -q 'data=oooo' "$T/slowwrite.log" &&
	    fail "$how: the previous connection's WRITE, never answered, was sent to the server after the reconnect's"
	info "$how: F on disk starts with: $(head -c 8 "$SHARE_DIR/$f" | od -An -c | tr -s ' ')"
	assert_eq "$DRAIN_WANT_F" "$(sha < "$SHARE_DIR/$f")" "$how: sha256 of F on smbd's disk: 4 KiB \"new\" of the reconnect, then the acknowledged bytes"
	assert_eq "$DRAIN_WANT_X" "$(tail -c +$(((1 << 20) + 1)) "$SHARE_DIR/$x" | sha)" "$how: sha256 of X from 1 MiB on smbd's disk"
	grep -E "went while|waits for the drain|client (closed|reset) with|goes ahead" "$T/proxy.$how.log" | cut -c1-200
	grep -Eq "conn=[0-9]+ client [^ ]+ went while smbaccel was not reading it \(a request of it waited for [^)]*\): found at its reconnect \(conn=[0-9]+\)" "$T/proxy.$how.log" ||
	    fail "$how: the client's going was not found at its reconnect (logged)"
	grep -Eq "conn=[0-9]+ waits for the drain of this client's previous connection" "$T/proxy.$how.log" ||
	    fail "$how: the reconnect did not wait for the previous connection"
	grep -Eq "conn=[0-9]+ this client's reconnect \(conn=[0-9]+\) goes ahead of the drain: 2 request frame\(s\), [0-9]+ bytes, .* dropped" "$T/proxy.$how.log" ||
	    fail "$how: the dropped requests were not logged"
	assert_eq "$dropped" "$(stat_get client_requests_dropped)" "$how: client_requests_dropped"
	assert_eq 0 "$(stat_get lost_bytes)" "$how: lost_bytes"
}

part fin f1.bin x1.bin 2
part rst f2.bin x2.bin 4
proxy_alive || fail "proxy died"
stop_proxy
info "PASS"
