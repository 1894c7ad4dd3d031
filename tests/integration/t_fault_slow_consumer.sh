#!/bin/bash
# asan-options: quarantine_size_mb=8 (its RSS bounds hold under ASan once freed memory is not kept 256 MB deep)
# test-timeout: 300
# Memory stays bounded when one side stops reading (queue_limit,
# write_behind_memory, read_ahead_memory; STYLE.md "Backpressure").  The
# proxy's peak RSS (VmHWM, so spikes between samples count) may grow by at
# most SC_LIMIT_MIB over its baseline in each phase:
#  1. client stops reading while the server sends, with read_ahead =
#     always: smbclient gets a file into a FIFO nobody reads for SC_STALL s
#     (t_backpressure covers this without read-ahead);
#  2. server stops reading while the client writes large WRITEs: smbclient
#     put, its smbd child SIGSTOPped (before the put starts) for SC_STALL s;
#  3. server stops reading while the client writes 1 KiB writes that are
#     absorbed: smbdd, smbd child SIGSTOPped; buffered bytes must stay
#     within write_behind_memory (16M here) and the client must be held
#     back rather than the buffer grow.
# After each stall the transfer completes and the data is intact (sha256
# on disk / read back).
. "$(dirname "$0")/lib.sh"
require_smbaccel "smbaccel's memory bounds"

STALL=${SC_STALL:-6}
LIMIT_MIB=${SC_LIMIT_MIB:-48}
MIB=${SC_MIB:-128}
start_smbd
start_proxy "read_ahead = always" "write_behind_memory = 16M" "read_ahead_memory = 16M"
home=$(client_home sc)
random_file "$T/big" "$MIB"
want=$(sha256 "$T/big")
cp "$T/big" "$SHARE_DIR/big" && chown "$SMB_USER" "$SHARE_DIR/big"

hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$PROXY_PID/status"; }
# reset VmHWM to the current RSS (proc(5), clear_refs "5"); print the RSS
phase_base() { echo 5 > "/proc/$PROXY_PID/clear_refs" 2>/dev/null; proxy_rss_kb; }
smbd_children() {
	ss -Htnp state established "( sport = :$SMBD_PORT )" |
	    sed -n 's/.*"smbd",pid=\([0-9]*\).*/\1/p' | sort -u
}
# the smbd child that appeared after $1 (the list before the client started)
new_child() {
	local before=$1 n=100 c
	while [ $n -gt 0 ]; do
		for c in $(smbd_children); do
			echo "$before" | grep -qw "$c" || { echo "$c"; return 0; }
		done
		sleep 0.1; n=$((n - 1))
	done
	return 1
}
# stall_watch PID: sample during STALL seconds; PID must stay alive
stall_watch() {
	local end=$(( $(date +%s) + STALL ))
	maxbuf=0
	while [ "$(date +%s)" -lt "$end" ]; do
		proxy_alive || fail "proxy died during the stall"
		kill -0 "$1" 2>/dev/null || fail "the client ended during the stall"
		b=$(stat_get buffered_bytes); [ "$b" -gt "$maxbuf" ] && maxbuf=$b
		sleep 0.3
	done
}
check_growth() {	# check_growth PHASE BASE_KB
	local hwm grow
	hwm=$(hwm_kb)
	grow=$(( (hwm - $2) / 1024 ))
	info "$1: VmRSS baseline $2 KiB, peak (VmHWM) $hwm KiB: growth $grow MiB (limit $LIMIT_MIB MiB)"
	[ "$grow" -lt "$LIMIT_MIB" ] || fail "$1: proxy memory grew by $grow MiB"
}

# warm-up, so that the baseline includes the per-process allocations
head -c 4194304 "$T/big" > "$T/small"
SMBC_HOME=$home smbc "$PROXY_PORT" SMB3_11 "put $T/small small; get small $T/small.back" \
    > "$T/warm.out" 2>&1 || { cat "$T/warm.out"; fail "warm-up"; }
smbdd_run verify "$PROXY_PORT" big 4K 256 -n -q > /dev/null 2>&1
rm -f "$SHARE_DIR/small"

info "1. client stops reading, read_ahead = always, ${STALL}s"
base=$(phase_base)
mkfifo "$T/fifo"
( exec 3<"$T/fifo"; while [ ! -e "$T/go" ]; do sleep 0.1; done; exec cat <&3 > "$T/out1" ) &
reader=$!
BG_PIDS="$BG_PIDS $reader"
SMBC_HOME=$home smbc "$PROXY_PORT" SMB3_11 "get big $T/fifo" > "$T/get.out" 2>&1 &
client=$!
BG_PIDS="$BG_PIDS $client"
stall_watch "$client"
ra=$(stat_get ra_bytes_now)
info "  read-ahead bytes held during the stall: $ra"
touch "$T/go"
wait "$client" || { cat "$T/get.out"; fail "1: smbclient get failed"; }
wait "$reader"
assert_eq "$want" "$(sha256 "$T/out1")" "1: sha256 read through the stalled client"
check_growth "1" "$base"

info "2. server stops reading during smbclient put (large WRITEs), ${STALL}s"
# smbclient reads its commands from standard input: it connects (ls),
# and is given the put only once $T/go2 exists, after smbd's child for
# the connection has been found and stopped, so the whole put meets a
# server that does not read (a put of 128 MiB can take 0.1 s here:
# stopping smbd once part of it had landed missed it in 3 tries of 3 in a
# CI run, 2026-12-06)
before=$(smbd_children)
rm -f "$SHARE_DIR/put2" "$T/go2"
{
	echo ls
	while [ ! -e "$T/go2" ]; do sleep 0.05; done
	echo "put $T/big put2"
} | SMBC_HOME=$home smbc "$PROXY_PORT" SMB3_11 - > "$T/put.out" 2>&1 &
client=$!
BG_PIDS="$BG_PIDS $client"
child=$(new_child "$before") || { touch "$T/go2"; fail "2: no smbd child for the put"; }
kill -STOP "$child"
base=$(phase_base)
touch "$T/go2"
stall_watch "$client"
kill -CONT "$child"
wait "$client" || { cat "$T/put.out"; fail "2: smbclient put failed"; }
assert_eq "$want" "$(sha256 "$SHARE_DIR/put2")" "2: sha256 on disk"
check_growth "2" "$base"

info "3. server stops reading during 1 KiB absorbed writes, ${STALL}s"
seed=$((RANDOM + 1))
before=$(smbd_children)
SMBC_HOME=$home "$SMBDD" write "$(smb_url "$PROXY_PORT" dd3)" 1K $((MIB * 1024 / 4)) \
    -U "$SMB_USER%$SMB_PASS" -s "$seed" -q -f > "$T/dd3.out" 2>&1 &
client=$!
BG_PIDS="$BG_PIDS $client"
child=$(new_child "$before") || fail "3: no smbd child for smbdd"
n=100
while [ "$(stat -c %s "$SHARE_DIR/dd3" 2>/dev/null || echo 0)" -lt 4194304 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
base=$(phase_base)
kill -STOP "$child"
stall_watch "$client"
info "  buffered bytes during the stall: at most $maxbuf (write_behind_memory 16 MiB)"
[ "$maxbuf" -le 16777216 ] || fail "3: $maxbuf bytes buffered, over write_behind_memory"
assert_ge 1 "$maxbuf" "3: bytes buffered while the server was stopped"
kill -CONT "$child"
wait "$client" || { cat "$T/dd3.out"; fail "3: smbdd write failed"; }
out=$(smbdd_run write "$SMBD_PORT" ref3 1M $((MIB / 4)) -s "$seed" -q 2>&1) || fail "reference: $out"
assert_eq "$(sha256 "$SHARE_DIR/ref3")" "$(sha256 "$SHARE_DIR/dd3")" "3: sha256 on disk"
check_growth "3" "$base"
proxy_alive || fail "proxy died"
info "PASS"
