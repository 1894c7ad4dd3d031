#!/bin/bash
# test-timeout: 400
# asan-options: quarantine_size_mb=8 (the test bounds RSS growth)
# Issue 13 test 4: with read_cache_memory = 8M, 12 clients at once read 24
# files of 2 MiB at random (smbdd -R, every byte checked): the document
# cache never holds more than 8 MiB (dc_bytes_now sampled every 0.2 s),
# evicting copies or starting none while the others are read
# and the proxy's resident set grows by less than 8 MiB + 24 MiB (buffers
# of the 12 connections, allocator slack; 48 MiB for the sanitized
# daemon, whose shadow memory and quarantine grow with use).  The same
# run with the default 256M must grow by more than that + 16 MiB (the 48
# MiB of files are cached), which shows the measurement can see what the
# bound prevents.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "the document cache"

start_smbd
seed=$((RANDOM + 3))
for i in $(seq 1 24); do
	out=$(smbdd_run write "$SMBD_PORT" "m$i" 1M 2 -s $((seed + i)) -q 2>&1) || fail "cannot write m$i: $out"
done

# run LIMIT: sets GROWTH (KiB) and MAXC (largest dc_bytes_now seen); not
# in a subshell: the proxy it starts must be the one cleanup stops
run() {
	local limit=$1 r0 r1 pids= p i k max=0 v
	[ -n "$PROXY_PID" ] && stop_proxy
	PROXY_SHARE_SECTION=no start_proxy "read_cache_memory = $limit" "[share share]" \
	    "write_behind = always" "read_ahead = always"
	sleep 0.3
	r0=$(proxy_rss_kb)
	for k in $(seq 1 12); do
		(
			for i in $k $((k + 12)); do
				smbdd_run read "$PROXY_PORT" "m$i" 4K 600 -s $((seed + i)) -R 2M -q >/dev/null 2>"$T/r$k-$i.err" ||
				    { echo "m$i" > "$T/bad$k"; exit 1; }
			done
		) &
		pids="$pids $!"
		BG_PIDS="$BG_PIDS $!"
	done
	while :; do
		v=$(stat_get dc_bytes_now)
		[ "$v" -gt "$max" ] && max=$v
		k=0
		for p in $pids; do kill -0 "$p" 2>/dev/null && k=1; done
		[ $k -eq 0 ] && break
		sleep 0.2
	done
	for p in $pids; do wait "$p" 2>/dev/null; done
	ls "$T"/bad* >/dev/null 2>&1 && fail "limit $limit: wrong bytes read: $(cat "$T"/bad* "$T"/r*.err | head -n 5)"
	r1=$(proxy_rss_kb)
	info "read_cache_memory = $limit: RSS $r0 -> $r1 KiB; cached at most $max bytes; $(stats_line dc_hits dc_started dc_no_room dc_evicted dc_entries_now dc_bytes_now)"
	GROWTH=$((r1 - r0)) MAXC=$max
}

SLACK=24
case $SMBACCEL in *bin-san*) SLACK=48 ;; esac
run 8M
g=$GROWTH m=$MAXC
# the bound acted: copies were evicted, or not started while others were read
assert_ge 1 $(($(stat_get dc_evicted) + $(stat_get dc_no_room))) "copies evicted or not started for memory with read_cache_memory = 8M"
[ "$m" -le $((8 * 1048576)) ] || fail "the cache held $m bytes, above read_cache_memory = 8M"
[ "$g" -lt $(((8 + SLACK) * 1024)) ] || fail "RSS grew by $g KiB with read_cache_memory = 8M (bound $((8 + SLACK)) MiB)"
run 256M
info "control: RSS grew by $GROWTH KiB with 256M (cached at most $MAXC bytes); bounded run: $g KiB"
[ "$GROWTH" -gt $(((8 + SLACK + 16) * 1024)) ] || fail "control run: RSS grew by only $GROWTH KiB with 256M; the bound above proves nothing"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
