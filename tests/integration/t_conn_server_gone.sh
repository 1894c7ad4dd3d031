#!/bin/bash
# test-timeout: 120
# A server that went away while a client does not read: the server_timeout
# watchdog still fires.  A client (conn_faults.py servergone) has 64 KiB
# absorbed and held (flush_idle 60s) and 24 MiB of READ answers queued in
# smbaccel (queue_limit 64M), none read.  Its smbd child is stopped, the
# client's FLUSH sends the 64 KiB upstream, and the child is killed: its
# socket resets with the WRITE and FLUSH unanswered.  smbaccel cannot pass
# the reset on while the client's answers wait, so the connection stays;
# with server_timeout = 3s the watchdog must close it within 15 s and log
# the 64 KiB lost (lost_bytes 65536, the range named).  Before the fix a
# reset socket, which polls readable for ever, kept the watchdog from
# firing: the connection stayed as long as the client did not read, with
# the loss never logged.
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's watchdog and log"

start_smbd
start_proxy "server_timeout = 3s" "queue_limit = 64M" "flush_idle = 60s" "flush_max_age = 10m"
head -c $((24 << 20)) /dev/urandom > "$SHARE_DIR/big.bin"
chown "$SMB_USER" "$SHARE_DIR/big.bin"

"$PY" "$TESTS_DIR/conn_faults.py" servergone "$PROXY_PORT" big.bin 24 "$T/ready" "$T/go1" "$T/go2" \
    > "$T/client.out" 2>&1 &
cpid=$!
BG_PIDS="$BG_PIDS $cpid"
n=300
while [ ! -e "$T/ready" ] && [ $n -gt 0 ] && kill -0 $cpid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
[ -e "$T/ready" ] || { cat "$T/client.out"; fail "the client did not get ready"; }
child=$(ss -Htnp state established "( sport = :$SMBD_PORT )" | sed -n 's/.*"smbd",pid=\([0-9]*\).*/\1/p' | sort -u)
[ "$(echo "$child" | wc -w)" = 1 ] || fail "expected one smbd child, got: $child"
# smbd answers the READs; the answers wait in smbaccel: every one of them
# placed in smbaccel's queue to the client (bytes_s2c counts what is put
# there; 24 MiB is reached only with the last 1 MiB answer)
n=300
while [ "$(stat_get bytes_s2c)" -lt $((24 << 20)) ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
[ "$(stat_get bytes_s2c)" -ge $((24 << 20)) ] ||
    fail "smbd's 24 MiB of READ answers did not reach smbaccel's queue to the client within 30 s (bytes_s2c $(stat_get bytes_s2c))"
info "smbd child $child; write-behind bytes held: $(stat_get buffered_bytes)"
assert_eq 65536 "$(stat_get buffered_bytes)" "bytes held before the FLUSH"
kill -STOP "$child"
touch "$T/go1"
n=100
while [ "$(stat_get upstream_writes)" = 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
[ "$(stat_get upstream_writes)" != 0 ] || { kill -CONT "$child"; fail "the FLUSH did not send the 64 KiB upstream"; }
sleep 0.5   # in the stopped smbd child's socket
kill -KILL "$child"; kill -CONT "$child" 2>/dev/null
t0=$(now)
wait_log "conn=[0-9]+ server sent nothing for [0-9]+ s with [0-9]+ request\(s\) outstanding" 15 ||
    fail "the watchdog did not close the connection of a reset server within 15 s"
info "closed by the watchdog after $(elapsed "$t0") s"
wait_log "file=sg\.bin offset=0 length=65536 closed with write-behind data" 5 ||
    fail "the lost range of sg.bin is not logged"
assert_eq 65536 "$(stat_get lost_bytes)" "lost_bytes"
touch "$T/go2"
wait $cpid
cat "$T/client.out"
assert_eq 0 "$(stat_get connections_active)" "connections_active"
proxy_alive || fail "proxy died"
info "PASS"
