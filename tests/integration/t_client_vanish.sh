#!/bin/bash
# test-timeout: 240
# waits: TCP keepalive timers of a few seconds run out; little CPU
# Clients that vanish without a FIN (their machine lost power or its
# network), and client_keepalive (smbaccel.conf(5)), inside a private
# network namespace (only lo; smbd, smbaccel and the clients all run in it,
# so the firewall rules touch nothing else).  A client vanishes when every
# packet of its connection is dropped (iptables) and it is killed: its FIN
# never arrives.  Three ways, one client each (vanish.py):
#   idle:   an open with no sharing, 256 KiB written in 1 KiB writes that
#           smbaccel absorbed (flush_idle 60s keeps them buffered), nothing
#           in flight: only keepalive probes can find it gone;
#   echo:   the same with 64 KiB, then an ECHO whose answer is dropped on
#           its way: data in flight, which the kernel retransmits (no
#           keepalive probes are sent then);
#   window: 24 MiB of READs asked and not read: the client's window is
#           closed, smbaccel's zero-window probes go unanswered.
#  1. client_keepalive = 0 (off): 9 s after the three vanished their
#     connections are still up (smbaccelctl conns: idle_s >= 8), and a direct exclusive open of the idle and
#     echo clients' files fails SHARING_VIOLATION: smbd still has their
#     handles (the server's own keepalives reach smbaccel, which answers).
#  2. client_keepalive = 2s given by a reload, which applies to the open
#     connections: within 20 s each is logged gone with its reason
#     ("stopped answering TCP (keepalive probes ...)", "acknowledged none of
#     the data sent to it", "answered no window probe"),
#     clients_timed_out is 3, the connections drain and close, the files on
#     smbd's disk have the sha256 of what the clients were told was written,
#     and the exclusive opens succeed.
#  3. client_keepalive = 2s, a client that is alive but silent: stopped
#     (SIGSTOP) for 10 s, five times the keepalive idle time, first with
#     nothing queued to it (its kernel answers the probes), then with
#     24 MiB of READ answers queued to it (its kernel keeps answering the
#     window probes): neither is dropped; once resumed each reads all its
#     answers, writes and closes.  clients_timed_out stays 3.
#  4. client_keepalive = 2s: a client with a durable handle (batch oplock,
#     [dur]) and 256 KiB absorbed vanishes; once found gone its data is
#     written and the server connection closed (smbd keeps the durable
#     handle); the client comes back on a new connection, reconnects the
#     handle and writes 256 KiB more: the file on disk has the sha256 of
#     all 512 KiB.
#  5. the same with Samba's own client: smbclient puts a FIFO fed 24 MiB
#     and held open (it writes what fills its 8 MiB writes and waits for
#     the rest with the file open; smbstatus -L lists it), then vanishes;
#     once found gone the server no longer lists the file, and what is on
#     disk is the start of what smbclient put (sha256).
# Fails without client_keepalive (part 2 never sees the connections go),
# and with a keepalive that drops a live client (part 3; TCP_USER_TIMEOUT
# did: Linux ends a zero window after it even while the peer answers).
. "$(dirname "$0")/lib.sh"
require_smbaccel "client_keepalive"
in_netns_with_iptables

IPT="iptables -w"
export TESTS_DIR
vanish() { "$PY" "$TESTS_DIR/vanish.py" "$@"; }
FLUSH="flush_idle = 60s"
AGE="flush_max_age = 10m"

start_smbd
start_proxy "client_keepalive = 0" "$FLUSH" "$AGE"

# wait_ready FILE PID WHAT
wait_ready() {
	local n=300
	while [ ! -e "$1" ] && [ $n -gt 0 ] && kill -0 "$2" 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	[ -e "$1" ] || { cat "$T/$3.err"; fail "the $3 client did not get ready"; }
}
# drop DIR PORT: drop packets to (to) or from (from) the client port
drop() {
	case $1 in to) $IPT -I INPUT -p tcp --dport "$2" -j DROP ;; from) $IPT -I INPUT -p tcp --sport "$2" -j DROP ;; esac ||
	    fail "iptables"
}
client_port() { awk '$1 == "port" { print $2 }' "$T/$1.out"; }
# window_full PORT: wait (up to 30 s) until the answers not read by the
# client on PORT fill its receive window: its socket's Recv-Q has stopped
# growing (the same, above 0, in three looks 0.2 s apart) and smbaccel's
# socket to it holds unsent data (Send-Q > 0).  False if never.
window_full() {
	local n=150 rq sq prev= same=0
	while [ $n -gt 0 ]; do
		rq=$(ss -tnH state established "( sport = :$1 and dport = :$PROXY_PORT )" | awk '{ print $1; exit }')
		sq=$(ss -tnH state established "( sport = :$PROXY_PORT and dport = :$1 )" | awk '{ print $2; exit }')
		if [ "${rq:-0}" -gt 0 ] && [ "$rq" = "$prev" ]; then same=$((same + 1)); else same=0; fi
		prev=$rq
		[ $same -ge 2 ] && [ "${sq:-0}" -gt 0 ] && { info "  window client: Recv-Q $rq, smbaccel's Send-Q $sq"; return 0; }
		sleep 0.2; n=$((n - 1))
	done
	info "  window client: Recv-Q ${rq:-none}, smbaccel's Send-Q ${sq:-none}"
	return 1
}
client_sum() { awk '$1 == "sha256" { print $2 }' "$T/$1.out"; }

info "1. client_keepalive = 0: three clients vanish"
"$PY" "$TESTS_DIR/vanish.py" hold "$PROXY_PORT" cv1.bin 256 "$T/r1" > "$T/idle.out" 2> "$T/idle.err" &
p1=$!
"$PY" "$TESTS_DIR/vanish.py" hold "$PROXY_PORT" cv2.bin 64 "$T/r2" "$T/go2" "$T/sent2" > "$T/echo.out" 2> "$T/echo.err" &
p2=$!
head -c $((24 << 20)) /dev/urandom > "$SHARE_DIR/big.bin"
chown "$SMB_USER" "$SHARE_DIR/big.bin"
"$PY" "$TESTS_DIR/vanish.py" pause "$PROXY_PORT" big.bin 24 "$T/r3" "$T/go3" > "$T/window.out" 2> "$T/window.err" &
p3=$!
BG_PIDS="$BG_PIDS $p1 $p2 $p3"
wait_ready "$T/r1" $p1 idle
wait_ready "$T/r2" $p2 echo
wait_ready "$T/r3" $p3 window
info "  write-behind bytes held: $(stat_get buffered_bytes)"
# the idle client: once its kernel has acknowledged everything (a delayed
# ACK could otherwise leave the last answer in flight)
sleep 0.5
c1=$(client_port idle)
drop to "$c1"; drop from "$c1"
# the echo client: its ECHO reaches smbaccel, the answer does not reach it
c2=$(client_port echo)
drop to "$c2"
touch "$T/go2"
wait_ready "$T/sent2" $p2 echo
sleep 0.3
drop from "$c2"
# the window client: once the answers it does not read have filled its window
c3=$(client_port window)
window_full "$c3" || fail "1: the window client's receive window did not fill within 30 s"
drop to "$c3"; drop from "$c3"
info "  client ports: idle $c1, echo $c2, window $c3"
kill -KILL $p1 $p2 $p3
wait $p1 $p2 $p3 2>/dev/null
sleep 9
assert_eq 3 "$(stat_get connections_active)" "1: connections_active 9 s after the clients vanished"
idle=$(ctl conns --json | "$PY" -c 'import json, sys; print(min(c["idle_s"] for c in json.load(sys.stdin)["conns"]))')
info "  smbaccelctl conns: idle for at least $idle s"
assert_ge 8 "$idle" "1: idle_s of the vanished clients' connections"
for f in cv1.bin cv2.bin; do
	out=$(vanish excl "$SMBD_PORT" $f) || fail "1: direct exclusive open of $f: $out"
	info "  direct exclusive open of $f: $out"
	assert_eq "open 0xc0000043" "$out" "1: the server still holds the vanished client's open of $f"
done
assert_eq 0 "$(stat_get clients_timed_out)" "1: clients_timed_out"

info "2. client_keepalive = 2s by a reload: the vanished clients are found gone"
write_proxy_conf "$PROXY_CONF" "client_keepalive = 2s" "$FLUSH" "$AGE"
ctl reload > "$T/reload.out" 2>&1 || { cat "$T/reload.out"; fail "reload"; }
t0=$(now)
for w in "$c1:stopped answering TCP \(keepalive probes or retransmissions\)" "$c2:acknowledged none of the data sent to it" \
    "$c3:answered no window probe \(it had stopped reading\)"; do
	wait_log "client 127\.0\.0\.1:${w%%:*} ${w#*:} for [0-9]+ s \(client_keepalive 2000 ms\): taken as gone" 20 ||
	    fail "2: no log line 'client 127.0.0.1:${w%%:*} ${w#*:}' within 20 s"
done
info "  all found gone after $(elapsed "$t0") s:"
grep -o 'client 127[^ ]* [a-z].*taken as gone' "$PROXY_LOG" | sed 's/^/    /'
n=100
while [ "$(stat_get connections_active)" != 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
assert_eq 0 "$(stat_get connections_active)" "2: connections_active after the timeouts"
assert_eq 3 "$(stat_get clients_timed_out)" "2: clients_timed_out"
assert_eq 0 "$(stat_get lost_bytes)" "2: lost_bytes"
assert_eq "$(client_sum idle)" "$(sha256sum < "$SHARE_DIR/cv1.bin" | cut -d' ' -f1)" "2: sha256 on smbd's disk of the idle client's 256 KiB"
assert_eq "$(client_sum echo)" "$(sha256sum < "$SHARE_DIR/cv2.bin" | cut -d' ' -f1)" "2: sha256 on smbd's disk of the echo client's 64 KiB"
for f in cv1.bin cv2.bin; do
	out=$(vanish excl "$SMBD_PORT" $f) || fail "2: direct exclusive open of $f: $out"
	info "  direct exclusive open of $f: $out"
	assert_eq "open SUCCESS" "$out" "2: the server let go of the vanished client's open of $f"
done
for c in $c1 $c2 $c3; do
	$IPT -D INPUT -p tcp --dport "$c" -j DROP
	$IPT -D INPUT -p tcp --sport "$c" -j DROP 2>/dev/null
done

info "3. client_keepalive = 2s: live clients stopped for 10 s are kept"
for mib in 0 24; do
	rm -f "$T/ready" "$T/go"
	"$PY" "$TESTS_DIR/vanish.py" pause "$PROXY_PORT" big.bin $mib "$T/ready" "$T/go" > "$T/pause.out" 2>&1 &
	ppid=$!
	BG_PIDS="$BG_PIDS $ppid"
	n=300
	while [ ! -e "$T/ready" ] && [ $n -gt 0 ] && kill -0 $ppid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	[ -e "$T/ready" ] || { cat "$T/pause.out"; fail "3: pausing client ($mib MiB) did not start"; }
	kill -STOP $ppid
	sleep 10
	kill -CONT $ppid
	touch "$T/go"
	wait $ppid || { cat "$T/pause.out"; fail "3: the client stopped with $mib MiB queued was dropped"; }
	info "  $mib MiB queued: $(tr '\n' ' ' < "$T/pause.out")"
	grep -qx "read $mib MiB" "$T/pause.out" || fail "3: answers lost ($mib MiB queued)"
	grep -qx done "$T/pause.out" || fail "3: the client did not finish"
done
assert_eq 3 "$(stat_get clients_timed_out)" "3: clients_timed_out after the live clients"

info "4. a client with a durable handle vanishes, is found gone, and comes back"
"$PY" "$TESTS_DIR/durable_reopen.py" --hold "$PROXY_PORT" cvd.bin 256 "$T/r4" > "$T/dur.out" 2> "$T/dur.err" &
p4=$!
BG_PIDS="$BG_PIDS $p4"
wait_ready "$T/r4" $p4 dur
sleep 0.5
c4=$(client_port dur)
fid=$(awk '$1 == "fileid" { print $2 }' "$T/dur.out")
info "  write-behind bytes held: $(stat_get buffered_bytes)"
drop to "$c4"; drop from "$c4"
kill -KILL $p4
wait $p4 2>/dev/null
wait_log "client 127\.0\.0\.1:$c4 stopped answering TCP" 20 || fail "4: the durable client was not found gone within 20 s"
n=100
while [ "$(stat_get connections_active)" != 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
assert_eq 0 "$(stat_get connections_active)" "4: connections_active after the drain"
$IPT -D INPUT -p tcp --dport "$c4" -j DROP
$IPT -D INPUT -p tcp --sport "$c4" -j DROP
"$PY" "$TESTS_DIR/durable_reopen.py" --back "$PROXY_PORT" cvd.bin "$fid" 256 > "$T/back.out" 2>&1 ||
    { cat "$T/back.out"; fail "4: the returning client failed"; }
info "  back: $(tr '\n' ' ' < "$T/back.out")"
grep -qx "reconnect SUCCESS" "$T/back.out" || fail "4: the durable reconnect after the vanish failed"
assert_eq "$(awk '$1 == "sha256" { print $2 }' "$T/back.out")" "$(sha256sum < "$DUR_DIR/cvd.bin" | cut -d' ' -f1)" \
    "4: sha256 on smbd's disk of the 512 KiB (256 before the vanish, 256 after the reconnect)"
assert_eq 0 "$(stat_get lost_bytes)" "4: lost_bytes"

info "5. smbclient (Samba's client) vanishes in the middle of a put"
# its put reads a FIFO fed 24 MiB and then held open: smbclient writes what
# fills its (8 MiB) writes and waits for more with the file open
head -c $((24 << 20)) /dev/urandom > "$T/feed.data"
mkfifo "$T/feed"
exec 8<> "$T/feed"
# (bg: in BG_PIDS, so that cleanup stops it if the test fails before the kill)
bg smbc "$PROXY_PORT" SMB3_11 "put $T/feed cv5.bin" > "$T/put.out" 2>&1
cat "$T/feed.data" >&8
n=100
while [ "$(stat -c %s "$SHARE_DIR/cv5.bin" 2>/dev/null || echo 0)" -lt $((16 << 20)) ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
openfiles() { smbd_ns smbstatus -s "$SMBD_CONF" -L 2>/dev/null | grep -c 'cv5\.bin'; }
sleep 1
ss -tnpH state established "( dport = :$PROXY_PORT )" > "$T/ss5"
c5=$(sed -n 's/^[^ ]* *[^ ]* *[^ ]*:\([0-9]*\) .*smbclient.*/\1/p' "$T/ss5")
s5=$(sed -n 's/.*smbclient",pid=\([0-9]*\).*/\1/p' "$T/ss5")
[ -n "$c5" ] && [ -n "$s5" ] || { cat "$T/ss5" "$T/put.out"; fail "5: cannot find smbclient's connection"; }
info "  smbclient pid $s5, port $c5; $(stat -c %s "$SHARE_DIR/cv5.bin") bytes on disk; smbstatus lists cv5.bin $(openfiles) time(s)"
assert_ge 1 "$(openfiles)" "5: smbstatus -L lists the file smbclient is writing"
drop to "$c5"; drop from "$c5"
kill -KILL "$s5"
wait_log "client 127\.0\.0\.1:$c5 stopped answering TCP" 20 || fail "5: smbclient's vanished connection was not found gone within 20 s"
n=100
while [ "$(stat_get connections_active)" != 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
assert_eq 0 "$(stat_get connections_active)" "5: connections_active"
assert_eq 0 "$(openfiles)" "5: smbstatus -L lists cv5.bin after smbaccel found smbclient gone"
size=$(stat -c %s "$SHARE_DIR/cv5.bin")
assert_eq "$(head -c "$size" "$T/feed.data" | sha256sum)" "$(sha256sum < "$SHARE_DIR/cv5.bin")" \
    "5: the $size bytes on disk are the start of what smbclient put"
info "  $size bytes on disk, the start of what smbclient put"
exec 8>&-
$IPT -D INPUT -p tcp --dport "$c5" -j DROP
$IPT -D INPUT -p tcp --sport "$c5" -j DROP
proxy_alive || fail "proxy died"
stop_proxy
info "PASS"
