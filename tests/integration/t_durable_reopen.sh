#!/bin/bash
# A durable reconnect must not overtake the server's teardown of the
# client's previous connection.  A client whose connection failed
# reconnects and reopens its durable handles (MS-SMB2 3.2.4.4); smbd gives
# a handle up only when it has torn the old connection down, which it does
# in that connection's own process, and fails a reconnect that comes
# first with OBJECT_NAME_NOT_FOUND.  Through smbaccel the client's FIN
# reaches smbd a little later than directly; under load smbtorture's
# durable-open suites (t_torture_parity, t_keyed_torture) then failed a
# reconnect now and then that succeeded directly (2026-12-06: 1 run in 5
# with the CPUs busy).  smbaccel now holds a reconnect (DHnC, DH2C) while
# a previous connection of the same client to the same server is still
# closing, until that connection has closed, at most connect_timeout.
#
# durable_reopen.py opens a file on [dur] with a durable handle, stops
# (SIGSTOP) the smbd process of that connection, drops the connection,
# connects again and sends the reconnect; the old process resumes HOLD
# seconds after the drop.
#  direct, HOLD 1.5 s: smbd refuses the reconnect (the situation is real);
#  through smbaccel, HOLD 1.5 s: the reconnect waits for the old
#    connection's close and succeeds (reopen_waits 1, the log line); the
#    reconnect carries no create context of smbaccel's (the document
#    cache's on-disk id query, which smbd refuses in a reconnect: before
#    the fix it failed so even without the stop);
#  resume (durable_reopen.py --resume), directly and through smbaccel
#    (write_behind as configured for [dur]): 512 writes of 1 KiB, the
#    connection dropped at once (smbaccel still holds the data), the
#    reconnect, 512 more and the CLOSE: the reconnect succeeds and the
#    file on smbd's disk holds all 1 MiB; again through smbaccel with the
#    old connection's smbd process stopped for 1.5 s from the drop (the
#    drain cannot end, the reconnect must wait for it: on a WAN the
#    drain takes longer than the new connection's set-up);
#  through smbaccel with connect_timeout = 1s, HOLD 4 s: the wait ends
#    after 1 s, logged, and the reconnect gets the server's answer.
. "$(dirname "$0")/lib.sh"
require_smbaccel "durable reconnects"
DR=$TESTS_DIR/durable_reopen.py

# run LABEL PORT HOLD: the transcript in $T/LABEL.out
run() {
	timeout 120 "$PY" "$DR" "$2" "$SMBD_PID" "$3" "$1.dat" > "$T/$1.out" 2> "$T/$1.err" ||
	    { cat "$T/$1.err" >&2; fail "$1: durable_reopen.py failed"; }
	info "$1: $(tr '\n' ' ' < "$T/$1.out")"
}
# waited LABEL: the seconds the reconnect took, times 10
waited() { awk '$1 == "waited" { printf "%d", $2 * 10 }' "$T/$1.out"; }

start_smbd
run direct "$SMBD_PORT" 1.5
grep -qx "reconnect 0xc0000034" "$T/direct.out" ||
    fail "direct: smbd did not refuse the reconnect that overtook the teardown (the test proves nothing)"

start_proxy
run proxy "$PROXY_PORT" 1.5
grep -qx "reconnect SUCCESS" "$T/proxy.out" ||
    fail "proxy: the reconnect failed: $(grep reconnect "$T/proxy.out")"
assert_ge 13 "$(waited proxy)" "proxy: tenths of a second the reconnect waited"
assert_eq 1 "$(stat_get reopen_waits)" "proxy: reopen_waits"
grep -q "durable reconnect waits for the close of this client's previous connection" "$PROXY_LOG" ||
    fail "proxy: no log line for the wait"

# resume LABEL PORT [SMBD_PID HOLD]: a client's connection fails while
# it writes
resume() {
	timeout 120 "$PY" "$DR" --resume "$2" "$1.dat" 512 ${3:+"$3" "$4"} > "$T/$1.out" 2> "$T/$1.err" ||
	    { cat "$T/$1.err" >&2; fail "$1: durable_reopen.py --resume failed"; }
	info "$1: $(tr '\n' ' ' < "$T/$1.out")"
	grep -qx "reconnect SUCCESS" "$T/$1.out" || fail "$1: the reconnect failed"
	assert_eq "$(awk '$1 == "sha256" { print $2 }' "$T/$1.out")" \
	    "$(sha256 "$DUR_DIR/$1.dat")" "$1: the file on smbd's disk"
}
resume resume-direct "$SMBD_PORT"
a=$(stat_get writes_absorbed)
resume resume-proxy "$PROXY_PORT"
assert_ge 500 $(($(stat_get writes_absorbed) - a)) "resume-proxy: writes absorbed"
assert_eq 0 "$(stat_get deferred_errors)" "resume-proxy: deferred write errors"
a=$(stat_get writes_absorbed)
resume resume-stopped "$PROXY_PORT" "$SMBD_PID" 1.5
assert_ge 500 $(($(stat_get writes_absorbed) - a)) "resume-stopped: writes absorbed"
assert_ge 13 "$(waited resume-stopped)" "resume-stopped: tenths of a second the reconnect waited"
assert_eq 0 "$(stat_get deferred_errors)" "resume-stopped: deferred write errors"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status"

PROXY_PORT= start_proxy "connect_timeout = 1s"
run bounded "$PROXY_PORT" 4
grep -qx "reconnect 0xc0000034" "$T/bounded.out" ||
    fail "bounded: want the server's refusal after the wait: $(grep reconnect "$T/bounded.out")"
w=$(waited bounded)
[ "$w" -ge 9 ] && [ "$w" -le 35 ] || fail "bounded: the reconnect took $w tenths of a second (want 1 s of wait)"
grep -q "still open after 1000 ms: durable reconnect sent anyway" "$PROXY_LOG" ||
    fail "bounded: no log line for the end of the wait"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status"
info "PASS"
