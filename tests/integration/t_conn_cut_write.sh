#!/bin/bash
# test-timeout: 180
# A client that leaves in the middle of a large WRITE that smbaccel cuts
# through to the server as it arrives (conn_faults.py cutwrite, impacket
# at 2.1 and 3.0): 100 KiB absorbed (held: flush_idle 60s) on cw-a.bin,
# then 400 KiB of a 2 MiB WRITE to cw-b.bin, and the socket closed.  The
# server connection can take nothing more (the server reads whatever
# follows as the rest of that WRITE), so smbaccel must say so ("client
# closed inside a WRITE being forwarded") and, with server_timeout 60s,
# within 10 s either have the 100 KiB on smbd's disk (sha256) or have
# logged them lost (their range, lost_bytes 102400), and closed the
# connection; the client's reconnect at once is served within 10 s
# (connect_timeout 60s).  Third case, at 3.0: a FLUSH sent just before
# the WRITE took the 100 KiB upstream, and its smbd child is stopped
# until smbaccel has said it waits for the answers to what was sent
# before: once resumed, they come, the 100 KiB are on disk, and the
# connection closes.  Before the fix the drain's WRITEs waited behind
# the cut WRITE for ever: after server_timeout "server sent nothing" and
# the loss, and the reconnect waited for it.
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's log"

start_smbd
start_proxy "server_timeout = 60s" "connect_timeout = 60s" "flush_idle = 60s" "flush_max_age = 10m"

smbd_children() {
	ss -Htnp state established "( sport = :$SMBD_PORT )" | sed -n 's/.*"smbd",pid=\([0-9]*\).*/\1/p' | sort -u
}
lost0=0
for d in 2.1 3.0 3.0-flushing; do
	info "dialect $d"
	rm -f "$T/closed" "$T/ready" "$T/go" "$SHARE_DIR/cw-a.bin"
	log0=$(wc -l < "$PROXY_LOG")
	set -- "$T/closed"
	[ "$d" = 3.0-flushing ] && set -- "$T/closed" "$T/ready" "$T/go"
	"$PY" "$TESTS_DIR/conn_faults.py" cutwrite "$PROXY_PORT" "${d%-*}" "$@" > "$T/client.out" 2>&1 &
	cpid=$!
	BG_PIDS="$BG_PIDS $cpid"
	if [ "$d" = 3.0-flushing ]; then
		# the FLUSH's WRITE and the FLUSH itself are unanswered when the
		# client leaves: its smbd child is stopped until smbaccel says it
		# waits for them
		n=300
		while [ ! -e "$T/ready" ] && [ $n -gt 0 ] && kill -0 $cpid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
		[ -e "$T/ready" ] || { cat "$T/client.out"; fail "$d: the client did not get ready"; }
		child=$(smbd_children)
		[ "$(echo "$child" | wc -w)" = 1 ] || fail "expected one smbd child, got: $child"
		kill -STOP "$child"
		touch "$T/go"
		wait_log "conn=[0-9]+ waits for the answers to [0-9]+ request\(s\) sent before, then closes" 10 "$log0" ||
		    { kill -CONT "$child"; fail "$d: smbaccel does not wait for the answers to the FLUSH"; }
		sleep 1
		[ "$(stat_get connections_active)" -ge 1 ] || { kill -CONT "$child"; fail "$d: closed before the answers came"; }
		kill -CONT "$child"
	fi
	n=300
	while [ ! -e "$T/closed" ] && [ $n -gt 0 ] && kill -0 $cpid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	[ -e "$T/closed" ] || { cat "$T/client.out"; fail "$d: the client did not get to close"; }
	t0=$(now)
	want=$(awk '$1 == "sha256" { print $2 }' "$T/client.out")
	n=100
	while [ $n -gt 0 ]; do
		[ "$(sha256sum < "$SHARE_DIR/cw-a.bin" 2>/dev/null | cut -d' ' -f1)" = "$want" ] && { outcome=written; break; }
		tail -n +"$((log0 + 1))" "$PROXY_LOG" | grep -q "file=cw-a\.bin offset=0 length=102400 closed with write-behind data" &&
		    { outcome=lost; break; }
		sleep 0.1; n=$((n - 1))
	done
	[ $n -gt 0 ] || fail "$d: 10 s after the client left, cw-a.bin's 100 KiB are neither on smbd's disk nor logged lost"
	info "  cw-a.bin's 100 KiB $outcome $(elapsed "$t0") s after the client left"
	tail -n +"$((log0 + 1))" "$PROXY_LOG" |
	    grep -Eq "conn=[0-9]+ client closed inside a WRITE being forwarded: [0-9]+ bytes of it never sent" ||
	    fail "$d: no log line for the client leaving inside the cut-through WRITE"
	[ "$d" = 3.0-flushing ] && assert_eq written "$outcome" "$d: cw-a.bin's 100 KiB, sent with the FLUSH before the cut WRITE"
	tail -n +"$((log0 + 1))" "$PROXY_LOG" | grep -E "inside a WRITE|answers|closed with write-behind|closed client" | sed 's/^/    /'
	if [ "$outcome" = lost ]; then
		assert_eq $((lost0 + 102400)) "$(stat_get lost_bytes)" "$d: lost_bytes"
		lost0=$((lost0 + 102400))
	fi
	wait $cpid || { cat "$T/client.out"; fail "$d: the reconnecting client failed"; }
	sed 's/^/    /' "$T/client.out"
	r=$(awk '$1 == "reconnect" { print int($2) }' "$T/client.out")
	[ -n "$r" ] && [ "$r" -lt 10 ] || fail "$d: the reconnect took ${r:-?} s"
	grep -qx "echo 0x00000000" "$T/client.out" || fail "$d: the reconnected client's ECHO failed"
	log_has "still draining after" && fail "$d: a reconnect waited connect_timeout for the drain"
	n=100
	while [ "$(stat_get connections_active)" != 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
	assert_eq 0 "$(stat_get connections_active)" "$d: connections_active"
done
log_has "server sent nothing" && fail "a connection was closed by the watchdog"
proxy_alive || fail "proxy died"
info "PASS"
