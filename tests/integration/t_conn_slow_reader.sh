#!/bin/bash
# test-timeout: 180
# A client that does not read the answers smbaccel makes itself: they are
# bounded by queue_limit like forwarded ones.  conn_faults.py noread reads
# a 4 MiB document at random (the document cache fetches it whole), then
# sends up to 1500 READs of 64 KiB of it at once, all answered from the
# copy, and reads none of the answers for 6 s.  What smbaccel holds for
# the client in user space, the bytes it has queued to it (the growth of
# stats bytes_s2c) less what the kernel holds (Send-Q of smbaccel's
# socket, Recv-Q of the client's), must stay under queue_limit (1M) plus
# 2 MiB.  Without the fix the client was read on while its own queue grew:
# about 1500 x 64 KiB (90 MiB) less what the kernel holds.  Then the
# client reads every answer and checks every byte.
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's stats"

start_smbd
PROXY_SHARE_SECTION=no start_proxy "queue_limit = 1M" \
    "[share share]" "write_behind = always" "read_ahead = always"
random_file "$T/doc.bin" 4
cp "$T/doc.bin" "$SHARE_DIR/doc.bin"
chown "$SMB_USER" "$SHARE_DIR/doc.bin"

"$PY" "$TESTS_DIR/conn_faults.py" noread "$PROXY_PORT" doc.bin "$T/doc.bin" 1500 \
    "$T/r1" "$T/g1" "$T/r2" "$T/g2" > "$T/client.out" 2>&1 &
cpid=$!
BG_PIDS="$BG_PIDS $cpid"
wait_for() {
	local n=600
	while [ ! -e "$1" ] && [ $n -gt 0 ] && kill -0 $cpid 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	[ -e "$1" ] || { cat "$T/client.out"; fail "the client did not get to $2"; }
}
wait_for "$T/r1" "its pipelined reads"
cport=$(awk '$1 == "port" { print $2 }' "$T/client.out")
info "client port $cport; reads served from the copy so far: $(stat_get dc_hits)"
h0=$(stat_get dc_hits)
b0=$(stat_get bytes_s2c)
rss0=$(proxy_rss_kb)
touch "$T/g1"
wait_for "$T/r2" "sending"
grep '^sent' "$T/client.out"
# held: queued to the client, not yet taken by the kernel
held_kib() {
	local q1 q2
	q1=$(ss -Htn state established "( sport = :$PROXY_PORT and dport = :$cport )" | awk '{ s += $2 } END { print s + 0 }')
	q2=$(ss -Htn state established "( sport = :$cport and dport = :$PROXY_PORT )" | awk '{ s += $1 } END { print s + 0 }')
	echo $(( ($(stat_get bytes_s2c) - b0 - q1 - q2) / 1024 ))
}
max=0
for i in 1 2 3 4 5 6; do
	sleep 1
	h=$(held_kib)
	[ "$h" -gt "$max" ] && max=$h
done
info "held for the client in user space: at most $max KiB (queue_limit 1024 KiB); VmRSS grew $(( ($(proxy_rss_kb) - rss0) / 1024 )) MiB"
info "reads served from the copy meanwhile: $(( $(stat_get dc_hits) - h0 ))"
touch "$T/g2"
wait $cpid || { cat "$T/client.out"; fail "the client failed"; }
cat "$T/client.out"
grep -q '^verified' "$T/client.out" || fail "the answers were not verified"
assert_ge 100 $(( $(stat_get dc_hits) - h0 )) "reads served from the document cache"
[ "$max" -lt $((1024 + 2048)) ] || fail "smbaccel held $max KiB of answers for a client that did not read (queue_limit 1 MiB)"
proxy_alive || fail "proxy died"
info "PASS"
