#!/bin/bash
# test-timeout: 180
# A client that closes its sending side (shutdown SHUT_WR) and then reads
# nothing must not keep its connection draining for ever.  The client
# (conn_faults.py halfclose) has 64 KiB absorbed and held (flush_idle
# 60s) and 24 MiB of READ answers queued that it does not read: past
# queue_limit (4M) they hold the server's back, so the answer to the
# drain's WRITE is never read and the drain cannot end; the client's
# kernel answers the window probes, so it is not "unanswered" either.
# With client_keepalive 2s, within 15 s smbaccel must take it as gone
# ("closed its side and read none of its answers"), drop its answers,
# write the 64 KiB (sha256 on smbd's disk) and close; a reconnect from
# the same address is then served at once (connect_timeout 60s).  Before
# the fix client_keepalive was not checked while draining: the
# connection stayed draining, and every reconnect of the client waited
# connect_timeout.
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's drain"

start_smbd
start_proxy "client_keepalive = 2s" "connect_timeout = 60s" "flush_idle = 60s" "flush_max_age = 10m"
head -c $((24 << 20)) /dev/urandom > "$SHARE_DIR/big.bin"
chown "$SMB_USER" "$SHARE_DIR/big.bin"

# halfclose N: start the client; waits until it has closed its side
halfclose() {
	"$PY" "$TESTS_DIR/conn_faults.py" halfclose "$PROXY_PORT" big.bin 24 "hc$1.bin" "$T/r$1" "$T/g$1" \
	    > "$T/hc$1.out" 2>&1 &
	cpid=$!
	BG_PIDS="$BG_PIDS $cpid"
	local n=300
	while [ ! -e "$T/r$1" ] && [ $n -gt 0 ] && kill -0 $cpid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	[ -e "$T/r$1" ] || { cat "$T/hc$1.out"; fail "$1: the client did not get ready"; }
}
# on_disk N SECS: the client's 64 KiB are on smbd's disk within SECS
on_disk() {
	local want n=$(( $2 * 10 ))
	want=$(awk '$1 == "sha256" { print $2 }' "$T/hc$1.out")
	while [ $n -gt 0 ]; do
		[ "$(sha256sum < "$SHARE_DIR/hc$1.bin" 2>/dev/null | cut -d' ' -f1)" = "$want" ] && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}

halfclose 1
t0=$(now)
wait_log "client 127\.0\.0\.1:[0-9]+ closed its side and read none of its answers for [0-9]+ s \(client_keepalive 2000 ms\): taken as gone" 15 ||
    fail "a half-closed client that reads nothing kept its drain for 15 s"
info "taken as gone after $(elapsed "$t0") s"
on_disk 1 10 || fail "the 64 KiB are not on smbd's disk"
n=100
while [ "$(stat_get connections_active)" != 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
assert_eq 0 "$(stat_get connections_active)" "connections_active"
assert_eq 0 "$(stat_get lost_bytes)" "lost_bytes"
t0=$(now)
out=$(cd "$TESTS_DIR" && timeout 20 "$PY" -c 'import sys
from wb_smb import Client
c = Client(int(sys.argv[1]), "3.0")
print("echo 0x%08x" % c.echo())
c.logoff()' "$PROXY_PORT" 2>&1) || { echo "$out"; fail "the reconnect failed or took more than 20 s"; }
info "a reconnect from the same address: $out after $(elapsed "$t0") s"
touch "$T/g1"
wait $cpid
cat "$T/hc1.out"
proxy_alive || fail "proxy died"
info "PASS"
