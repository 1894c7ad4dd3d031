#!/bin/bash
# test-timeout: 120
# A client whose socket fails on a write is gone, as at its EOF.  The
# client (conn_faults.py rst) has 64 KiB absorbed and held (flush_idle
# 60s) and 24 MiB of READ answers queued that it does not read, so
# smbaccel has stopped reading it (queue_limit 1M) and only its write
# watcher is left to see the reset that comes next (SO_LINGER 0, answers
# unread).  Within 5 s of the reset smbaccel must log the drain ("client
# reset with 65536 bytes buffered"), write the 64 KiB (sha256 on smbd's
# disk), and close the connection; lost_bytes 0.  Before the fix the
# write error dropped the answers but left the connection in relay: no
# drain until a timer's next tick (the watchdog's, 30 s with the default
# server_timeout), and the client's reconnects were not held behind it.
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's log"

start_smbd
start_proxy "queue_limit = 1M" "flush_idle = 60s" "flush_max_age = 10m"
head -c $((24 << 20)) /dev/urandom > "$SHARE_DIR/big.bin"
chown "$SMB_USER" "$SHARE_DIR/big.bin"

"$PY" "$TESTS_DIR/conn_faults.py" rst "$PROXY_PORT" big.bin 24 "$T/ready" "$T/go" > "$T/client.out" 2>&1 &
cpid=$!
BG_PIDS="$BG_PIDS $cpid"
n=300
while [ ! -e "$T/ready" ] && [ $n -gt 0 ] && kill -0 $cpid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
[ -e "$T/ready" ] || { cat "$T/client.out"; fail "the client did not get ready"; }
# the answers fill smbaccel's queue to the client: the client's socket and
# smbaccel's socket to it hold data (Recv-Q, Send-Q > 0), and what
# smbaccel placed in its queue (bytes_s2c) less those is above queue_limit
# (1 MiB) and no longer grows (two looks 0.2 s apart): smbaccel has
# stopped reading
cport=$(awk '$1 == "port" { print $2 }' "$T/client.out")
[ -n "$cport" ] || { cat "$T/client.out"; fail "the client did not say its port"; }
n=150 prev= q=
while [ $n -gt 0 ]; do
	rq=$(ss -tnH state established "( sport = :$cport and dport = :$PROXY_PORT )" | awk '{ print $1; exit }')
	sq=$(ss -tnH state established "( sport = :$PROXY_PORT and dport = :$cport )" | awk '{ print $2; exit }')
	s2c=$(stat_get bytes_s2c)
	q=$((s2c - ${rq:-0} - ${sq:-0}))
	[ "${rq:-0}" -gt 0 ] && [ "${sq:-0}" -gt 0 ] && [ $q -ge $((1 << 20)) ] && [ "$s2c" = "$prev" ] && break
	prev=$s2c
	sleep 0.2; n=$((n - 1))
done
info "client Recv-Q ${rq:-none}, smbaccel's Send-Q to it ${sq:-none}, queued in smbaccel about $q of $s2c bytes"
[ $n -gt 0 ] || fail "smbaccel's queue to the client did not fill (above queue_limit 1M, stopped growing) within 30 s"
assert_eq 65536 "$(stat_get buffered_bytes)" "bytes held before the reset"
touch "$T/go"
wait $cpid || { cat "$T/client.out"; fail "the client failed"; }
t0=$(now)
wait_log "conn=[0-9]+ client reset with 65536 bytes buffered: writing them" 5 ||
    fail "no drain within 5 s of the client's reset"
n=50
while [ "$(stat_get connections_active)" != 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
assert_eq 0 "$(stat_get connections_active)" "connections_active 5 s after the drain started"
info "drained and closed $(elapsed "$t0") s after the reset"
assert_eq "$(awk '$1 == "sha256" { print $2 }' "$T/client.out")" "$(sha256sum < "$SHARE_DIR/rst.bin" | cut -d' ' -f1)" \
    "sha256 on smbd's disk of the 64 KiB acknowledged before the reset"
assert_eq 0 "$(stat_get lost_bytes)" "lost_bytes"
proxy_alive || fail "proxy died"
info "PASS"
