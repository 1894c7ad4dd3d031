#!/bin/bash
# test-timeout: 120
# A second SIGTERM while the drain cannot end closes every connection and
# reports what is lost.  A client (vanish.py hold) has 256 KiB absorbed
# and held (flush_idle 60s) and stays connected; its smbd child is
# stopped (SIGSTOP), so the drain SIGTERM starts cannot finish
# (drain_timeout 60s).  A second SIGTERM once smbaccel has logged that it
# is stopping, and is still running 1 s later: smbaccel exits within
# 5 s with status 3, having logged "second signal", the lost range of the
# file (offset 0, 262144 bytes: in flight or buffered) and the total.
# Before the fix the second signal left the loop at once: no connection
# closed, nothing logged lost, exit status 0.  Then the same with SIGINT
# twice, on a new smbaccel.
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's signals"

start_smbd
smbd_children() {
	ss -Htnp state established "( sport = :$SMBD_PORT )" | sed -n 's/.*"smbd",pid=\([0-9]*\).*/\1/p' | sort -u
}
for sig in TERM INT; do
	info "SIG$sig twice"
	rm -f "$T/ready"
	start_proxy "flush_idle = 60s" "flush_max_age = 10m"
	log0=$(wc -l < "$PROXY_LOG")
	"$PY" "$TESTS_DIR/vanish.py" hold "$PROXY_PORT" "ss-$sig.bin" 256 "$T/ready" > "$T/client.out" 2>&1 &
	cpid=$!
	BG_PIDS="$BG_PIDS $cpid"
	n=300
	while [ ! -e "$T/ready" ] && [ $n -gt 0 ] && kill -0 $cpid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	[ -e "$T/ready" ] || { cat "$T/client.out"; fail "SIG$sig: the client did not get ready"; }
	assert_eq 262144 "$(stat_get buffered_bytes)" "SIG$sig: bytes held"
	child=$(smbd_children)
	[ "$(echo "$child" | wc -w)" = 1 ] || fail "expected one smbd child, got: $child"
	kill -STOP "$child"
	kill -"$sig" "$PROXY_PID"
	# the second signal only once the first has been handled (two signals
	# pending at once would be one): its "stopping" line
	wait_log "signal [0-9]+: stopping \(no new connections" 15 "$log0" ||
	    { kill -CONT "$child"; fail "SIG$sig: smbaccel did not log that it is stopping within 15 s"; }
	sleep 1
	proxy_alive || { kill -CONT "$child"; fail "SIG$sig: smbaccel did not wait for the drain"; }
	kill -"$sig" "$PROXY_PID"
	n=50
	while proxy_alive && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
	proxy_alive && { kill -CONT "$child"; fail "SIG$sig: smbaccel still running 5 s after the second signal"; }
	wait "$PROXY_PID"
	rc=$?
	PROXY_PID=
	kill -CONT "$child" 2>/dev/null
	kill -KILL "$child" 2>/dev/null
	stop_pid "$cpid" 2
	tail -n +"$((log0 + 1))" "$PROXY_LOG" | grep -E "signal|write-behind data|acknowledged to clients|stopped" | sed 's/^/    /'
	assert_eq 3 "$rc" "SIG$sig: exit status after a second signal with acknowledged data unwritten"
	tail -n +"$((log0 + 1))" "$PROXY_LOG" | grep -Eq "second signal [0-9]+: closing 1 connections now" ||
	    fail "SIG$sig: the second signal is not logged"
	tail -n +"$((log0 + 1))" "$PROXY_LOG" |
	    grep -Eq "file=ss-$sig\.bin offset=0 length=262144 closed with write-behind data" ||
	    fail "SIG$sig: the lost range of ss-$sig.bin is not logged"
	tail -n +"$((log0 + 1))" "$PROXY_LOG" | grep -q "262144 bytes acknowledged to clients were not written while stopping" ||
	    fail "SIG$sig: the total lost is not logged"
done
info "PASS"
