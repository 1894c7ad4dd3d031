#!/bin/bash
# test-timeout: 300
# Malformed SMB2 inside established sessions and from the server
# (malformed.py; t_garbage covers framing-level garbage before a session).
#  1. client side, write_behind = read_ahead = always: after a real login
#     (impacket, 2.1, unsigned), one lying request per connection: WRITE
#     with a wrong StructureSize, DataOffset outside the message or into
#     the header, Length beyond the message, offset overflow, CreditCharge
#     beyond the grant or too small, MessageId beyond or below the window,
#     a duplicate MessageId (also of a READ served from the read-ahead
#     cache), wrong SessionId/TreeId/FileId, the response flag set, a
#     truncated body; compounds whose NextCommand points past the end,
#     overlaps or is unaligned; a READ beyond MaxReadSize.  Each case also
#     runs directly against smbd.  None may be answered STATUS_SUCCESS
#     (smbaccel acknowledging what the server refuses); each must end with
#     an error status or a closed connection within 5 s (or do what smbd
#     itself does, success excepted).  Each case connects from its own
#     127.0.0.x, and a normal login from that address must work right
#     after it.
#  2. server side: a fake server (malformed.py server) answers NEGOTIATE
#     with garbage, SMB1, a truncated header, security buffers outside the
#     message, a wrong StructureSize, a lying NextCommand, a 0xFFFFFF frame
#     length, a 65535-credit grant, an unknown message id, an endless
#     interim response, and a TREE_CONNECT response to a SESSION_SETUP.
#     Each connection is closed or relayed (opaquely) within 5 s, and a
#     normal NEGOTIATE through the same smbaccel works after each.
#  3. the real server behind tamper.py, which puts a message no peer can
#     read before the server's next answer while smbaccel holds 16 KiB it
#     acknowledged: the connection closes at once
#     (reason=server-unreadable), never opaque, the loss logged and
#     counted.
#  4. 20 connections each sending one frame of 14,000 ECHOs whose ids lie
#     past the grant: closed (by smbd), a bounded number of log lines; an
#     ECHO with the id of the NEGOTIATE sent just before it: closed by
#     smbaccel (bad-message-id), counted.
# Meanwhile smbclient transfers through the first proxy stay intact; the
# proxies stay up; every malformed connection has log lines (printed).
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's handling of malformed SMB2"
"$PY" -c 'import impacket' 2>/dev/null || skip "python3-impacket not installed"

start_smbd
start_proxy "read_ahead = always"
random_file "$T/orig" 8
want=$(sha256 "$T/orig")
home=$(client_home mf)

transfer_loop() {
	local i=0
	while [ ! -e "$T/stop" ]; do
		i=$((i + 1))
		rm -f "$T/bgback"
		if ! SMBC_HOME=$home smbc "$PROXY_PORT" SMB3_11 \
		    "put $T/orig bg$i; get bg$i $T/bgback; rm bg$i" >"$T/bg.out" 2>&1; then
			echo "round $i: smbclient failed: $(tail -n 3 "$T/bg.out")"; continue
		fi
		[ "$(sha256 "$T/bgback")" = "$want" ] && echo "round $i: ok" || echo "round $i: CORRUPT"
	done
}
transfer_loop > "$T/bg.log" 2>&1 &
bgpid=$!
BG_PIDS="$BG_PIDS $bgpid"

# log lines of the connection whose client port is $1
conn_log() {
	local id
	id=$(sed -n "s/.*conn=\([0-9]*\) accepted client=127\.0\.0\.[0-9]*:$1 .*/\1/p" "$2" | tail -n 1)
	[ -n "$id" ] && grep -E "conn=$id( |$)" "$2" | grep -v ' accepted ' | cut -c14- | head -n 4
}

info "1. lying requests inside established sessions"
"$PY" "$TESTS_DIR/malformed.py" client "$PROXY_PORT" "$SMBD_PORT" > "$T/client.out" 2>&1
crc=$?
while read -r line; do
	echo "  $line"
	p=$(echo "$line" | sed -n 's/.*(client port \([0-9]*\)).*/\1/p')
	[ -n "$p" ] && conn_log "$p" "$PROXY_LOG" | sed 's/^/      log: /'
done < "$T/client.out"
proxy_alive || fail "proxy died during the client cases"

info "2. a lying server"
FAKE_PORT=$(free_port)
echo relay > "$T/case"
"$PY" "$TESTS_DIR/malformed.py" server "$FAKE_PORT" "$SMBD_PORT" "$T/case" > "$T/fake.out" 2>&1 &
BG_PIDS="$BG_PIDS $!"
wait_port "$FAKE_PORT" 10 || fail "fake server not listening"
# a second smbaccel in front of the fake server
P2_PORT=$(free_port)
P2_LOG=$T/proxy2.log
cat > "$T/proxy2.conf" <<EOF
[global]
listen = 127.0.0.1:$P2_PORT
upstream = 127.0.0.1:$FAKE_PORT
mode = forward
control_socket = $T/control2.sock
[share share]
write_behind = always
EOF
"$SMBACCEL" -c "$T/proxy2.conf" -f </dev/null >>"$P2_LOG" 2>&1 &
p2=$!
BG_PIDS="$BG_PIDS $p2"
wait_port "$P2_PORT" 10 "$p2" || { cat "$P2_LOG"; fail "second smbaccel not accepting"; }
"$PY" "$TESTS_DIR/malformed.py" server-cases "$P2_PORT" "$T/case" > "$T/server.out" 2>&1
src=$?
while read -r line; do
	echo "  $line"
	p=$(echo "$line" | sed -n 's/.*(client port \([0-9]*\)).*/\1/p')
	[ -n "$p" ] && conn_log "$p" "$P2_LOG" | sed 's/^/      log: /'
done < "$T/server.out"
kill -0 "$p2" 2>/dev/null || { tail -n 20 "$P2_LOG"; fail "the smbaccel in front of the lying server died"; }

# 3. a message smbaccel cannot read from the real server (tamper.py puts
# one before the server's next answer) while it holds 16 KiB it
# acknowledged: no opaque relay (the data would never be written and the
# answers to its own requests would reach the client): the connection
# closes at once (reason=server-unreadable) and the loss is logged and
# counted.  Before, the connection turned opaque and the data stayed held
# until the client went away.
TP_PORT=$(free_port) || fail "no free port"
bg "$PY" "$TESTS_DIR/tamper.py" "$TP_PORT" "$SMBD_PORT" 999999999 "$T/garble" 2>>"$T/tamper.log"
wait_port "$TP_PORT" 10 || fail "tamper.py is not accepting"
P3_PORT=$(free_port) || fail "no free port"
P3_LOG=$T/proxy3.log
cat > "$T/proxy3.conf" <<EOF
[global]
listen = 127.0.0.1:$P3_PORT
upstream = 127.0.0.1:$TP_PORT
mode = forward
control_socket = $T/control3.sock
[share share]
write_behind = always
flush_idle = 60s
flush_max_age = 60s
EOF
bg "$SMBACCEL" -c "$T/proxy3.conf" -f </dev/null >>"$P3_LOG" 2>&1
wait_port "$P3_PORT" 10 || { cat "$P3_LOG"; fail "third smbaccel not accepting"; }
out=$(timeout 60 "$PY" "$TESTS_DIR/garble_client.py" "$P3_PORT" "$T/garble" garbled 2>&1) ||
    fail "3: garble_client.py failed: $out"
info "3: $out; $(grep -m1 'tamper: garbage' "$T/tamper.log")"
n=50
until grep -q "reason=server-unreadable" "$P3_LOG"; do
	n=$((n - 1))
	[ $n -gt 0 ] || { tail -n 20 "$P3_LOG"; fail "3: the connection was not closed with reason=server-unreadable"; }
	sleep 0.1
done
grep "server-unreadable\|closed with write-behind\|opaque" "$P3_LOG" | sed 's/^/    3: log: /'
grep -q "opaque reason=" "$P3_LOG" && fail "3: the connection turned opaque with acknowledged data held"
grep -q "file=garbled offset=0 length=16384 closed with write-behind data not acknowledged" "$P3_LOG" ||
    fail "3: the loss of the 16 KiB held is not logged with file, offset and length"
n=$("$SMBACCELCTL" -s "$T/control3.sock" stats --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("lost_bytes", 0))')
assert_eq 16384 "$n" "3: stats lost_bytes"

touch "$T/stop"
wait "$bgpid"
echo "background transfers: $(grep -c ': ok$' "$T/bg.log") ok"
grep -v ': ok$' "$T/bg.log"
[ $crc -eq 0 ] || fail "a lying client request was acknowledged or hung (BAD above)"
[ $src -eq 0 ] || fail "a lying server case broke the proxy (BAD above)"
grep -q ': ok$' "$T/bg.log" || fail "no background transfer completed"
grep -qv ': ok$' "$T/bg.log" && fail "a background transfer failed"

# 4. message ids beyond the grant in bulk: 20 connections each send one
# frame of 14,000 ECHOs (ids 1..14000) before any NEGOTIATE; smbd ends
# each connection, and smbaccel logs a bounded number of lines (before:
# one per id, 500,000 lines for the 20); then one connection sends an
# ECHO whose id is one in flight: smbaccel closes it itself
# (reason=bad-message-id, counted).
b0=$(stat_get bad_message_ids)
l0=$(wc -l < "$PROXY_LOG")
out=$("$PY" - "$PROXY_PORT" <<'PYEND'
import socket, struct, sys
port, n = int(sys.argv[1]), 14000
els = []
for i in range(n):
    nxt = 0 if i == n - 1 else 72
    el = (b"\xfeSMB" + struct.pack("<HHIHHIIQIIQ16s", 64, 1, 0, 13, 1, 0, nxt,
                                   i + 1, 0, 0, 0, b"\0" * 16) + struct.pack("<HH", 4, 0))
    els.append(el + (b"\0" * 4 if nxt else b""))
msg = b"".join(els)
frame = struct.pack(">I", len(msg)) + msg
closed = 0
for k in range(20):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    try:
        s.sendall(frame)
        while s.recv(65536):
            pass
        closed += 1
    except OSError:
        closed += 1
    s.close()
print("closed %d of 20" % closed)
# a duplicate of an id in flight: a NEGOTIATE (mid 0) and, in the next
# frame, sent with it (before its answer), an ECHO with mid 0
neg = (b"\xfeSMB" + struct.pack("<HHIHHIIQIIQ16s", 64, 1, 0, 0, 1, 0, 0, 0,
                                0, 0, 0, b"\0" * 16) +
       struct.pack("<HHHHI16sIHH", 36, 1, 1, 0, 0x7F, b"\0" * 16, 0, 0, 0) +
       struct.pack("<H", 0x0202) + b"\0" * 2)
echo = (b"\xfeSMB" + struct.pack("<HHIHHIIQIIQ16s", 64, 1, 0, 13, 1, 0, 0, 0,
                                 0, 0, 0, b"\0" * 16) + struct.pack("<HH", 4, 0))
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(10)
s.sendall(struct.pack(">I", len(neg)) + neg + struct.pack(">I", len(echo)) + echo)
try:
    while s.recv(65536):
        pass
    print("dup closed")
except OSError:
    print("dup closed")
PYEND
) || fail "4: the id flood: $out"
sleep 0.5
lines=$(($(wc -l < "$PROXY_LOG") - l0))
info "4: 20 frames of 14,000 ECHOs with ids past the grant, one duplicate id: $(echo $out), bad_message_ids +$(($(stat_get bad_message_ids) - b0)), $lines log lines"
assert_eq "closed 20 of 20 dup closed" "$(echo $out)" "4: connections closed"
assert_eq $((b0 + 1)) "$(stat_get bad_message_ids)" "4: stats bad_message_ids (the duplicate)"
[ "$lines" -le 200 ] || fail "4: $lines log lines for 21 connections (unbounded logging)"
log_has "reason=bad-message-id" || fail "4: no log line with reason=bad-message-id"
proxy_alive || fail "proxy died"
info "PASS"
