#!/bin/bash
# test-timeout: 120
# A client's reconnect that goes ahead of its previous connection's drain
# (connect_timeout) must not be overwritten by requests of the previous
# connection that smbaccel had not handled (and so never answered).
# slowwrite.py between smbaccel and smbd holds the answers to the WRITEs
# of data beginning "SLOW": 2 s below 1 MiB, 5 s at 1 MiB and above.
# drain_overtake.py old: 64 KiB acknowledged at offset 0 of F and 4 KiB at
# 1 MiB of X (held by smbaccel, flush_idle 60s); then, with smbaccel
# stopped (SIGSTOP, so that it finds the reset when it answers), 1 KiB
# more to X, a CREATE of another file (it waits until everything buffered
# is written: X's 5 s), a WRITE of 4 KiB "old" at offset 0 of F behind it,
# and a reset.  smbaccel drains (connect_timeout 1s): the reconnect
# (drain_overtake.py new, same client address) waits 1 s, then goes
# ahead: opens F (it waits for F's acknowledged 64 KiB: 2 s), writes 4 KiB
# "new" at offset 0 and closes.  The "old" WRITE must never reach the
# server (slowwrite.py logs every WRITE); once all has drained, F on
# smbd's disk starts with the 4 KiB "new", then the acknowledged bytes
# 4 KiB..64 KiB (written before the reconnect's open), and X holds its
# 4 KiB and the 1 KiB sent before the reset (acknowledged by smbaccel:
# written, though the answer found the client gone).  The CREATE and the
# WRITE, never handled, are dropped, logged and counted
# (client_requests_dropped 2).  Before the fix the drain handled them 5 s
# after the reset and sent the "old" WRITE after the reconnect's "new"
# (4 runs in 8 smbd applied it, F began "oooo": smbd may drop a request
# that arrives just before the reset of its connection).
. "$(dirname "$0")/lib.sh"
require_smbaccel "drain overtaken by a reconnect"
. "$TESTS_DIR/drain_lib.sh"
drain_start

"$PY" "$TESTS_DIR/drain_overtake.py" old "$PROXY_PORT" f.bin x.bin "$T/ready" "$T/go" > "$T/old.out" 2>&1 &
opid=$!
BG_PIDS="$BG_PIDS $opid"
n=300
while [ ! -e "$T/ready" ] && [ $n -gt 0 ] && kill -0 $opid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
[ -e "$T/ready" ] || { cat "$T/old.out"; fail "the first client did not get ready"; }
assert_eq $((68 << 10)) "$(stat_get buffered_bytes)" "bytes held before the reset"
kill -STOP "$PROXY_PID"
touch "$T/go"
wait $opid
rc=$?
kill -CONT "$PROXY_PID"
[ $rc -eq 0 ] || { cat "$T/old.out"; fail "the first client failed"; }
t0=$(now)
wait_log "conn=[0-9]+ client (reset|closed) with [0-9]+ bytes buffered: writing them" 5 ||
    fail "no drain within 5 s of the client's reset"
"$PY" "$TESTS_DIR/drain_overtake.py" new "$PROXY_PORT" f.bin > "$T/new.out" 2>&1 ||
    { cat "$T/new.out"; fail "the reconnecting client failed"; }
info "reconnect done $(elapsed "$t0") s after the drain started"
wait_log "previous connection of this client still draining after 1000 ms; connecting anyway" 1 ||
    fail "the reconnect did not go ahead of the drain (the drain was too short)"
n=150
while [ "$(stat_get connections_active)" != 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
assert_eq 0 "$(stat_get connections_active)" "connections_active once drained"
info "drained $(elapsed "$t0") s after the reset; slowwrite.py held: $(grep -c held "$T/slowwrite.log") WRITE(s)"
assert_eq 0 "$(stat_get lost_bytes)" "lost_bytes"
# the server must never see the "old" WRITE (smbd may or may not apply
# one that comes just before the reset of its connection)
grep -q 'data=oooo' "$T/slowwrite.log" &&
    fail "the previous connection's WRITE, never answered, was sent to the server after the reconnect's: $(grep 'offset=0 length=4096' "$T/slowwrite.log" | tr '\n' ' ')"
info "F on disk starts with: $(head -c 8 "$SHARE_DIR/f.bin" | od -An -c | tr -s ' ')"
assert_eq "$DRAIN_WANT_F" "$(sha < "$SHARE_DIR/f.bin")" "sha256 of F on smbd's disk: 4 KiB \"new\" of the reconnect, then the acknowledged bytes"
assert_eq "$DRAIN_WANT_X" "$(tail -c +$(((1 << 20) + 1)) "$SHARE_DIR/x.bin" | sha)" "sha256 of X from 1 MiB on smbd's disk"
grep -Eq "conn=[0-9]+ this client's reconnect \(conn=[0-9]+\) goes ahead of the drain: 2 request frame\(s\), [0-9]+ bytes, .* dropped" "$PROXY_LOG" ||
    fail "the dropped requests were not logged"
assert_eq 2 "$(stat_get client_requests_dropped)" "client_requests_dropped"
proxy_alive || fail "proxy died"
stop_proxy
info "PASS"
