#!/bin/bash
# test-timeout: 300
# waits: probes and floods paced by the emulated links' delays and rates: 12 s of CPU in 55 s (22 %); its bands are wide, for a loaded machine
# sanitizer: no (tests bin/wanlink, not the daemon)
# bin/wanlink, the packet-level WAN emulator, on its own (no SMB), in the
# namespaces of wanlink.sh; UDP probes from the router across the link to
# the server (wanlink_probe.py).  Bands are wide: the machine is shared and
# loaded, and what is checked is the model, not the scheduler:
#  1. delay: 50 probes' round trip is at least the set delay both ways
#     (wanlink never delivers early) and the median is within +25 ms of it;
#     the same after the delays are changed live (set delay=... up|down);
#  2. rate and queue: 3 s of UDP at 2x the set 20 Mbit/s: the receiver
#     sees (timed by kernel receive timestamps) at most 5 % above the
#     rate and at least half of it, the queue overflows (drop_queue > 0, queue_peak within
#     the limit), and every packet is accounted for (in = out + drops);
#  3. loss: 10,000 packets at 1 % and at 10 % loss: the drops wanlink
#     counts are within 4.5 binomial standard deviations of n x p, and
#     the receiver misses exactly those (plus any wanlink dropped outside
#     the model, and any the kernel dropped at the sender's socket, at a
#     TUN device before wanlink read them, or at the receiver's socket when
#     the busy machine kept it off the CPU past its 8 MiB: all counted and
#     logged; none on a quiet machine).  Every sink counts until its
#     sender has ended (a done file), so a sender the busy machine stalls
#     for a second is not taken for the end of the stream;
#  4. a burst (burst 30 4, timed from wanlink's confirmation that it
#     began): ~30 % loss while it lasts, none after;
#  5. seeds: two fresh links with the same seed drop the same packets
#     (receiver's missing sequence numbers and wanlink's drop log), a third
#     with another seed drops others (a run that lost packets outside
#     wanlink, dropped by the kernel at a TUN device or missed by a busy
#     receiver beyond the drop log, is repeated, at most twice);
#  6. memory: an unlimited link with a 2 s delay and --mem 4M flooded with
#     16 MiB: drop_full > 0, RSS stays below the rings plus 16 MiB;
#  6b. a refused control line (a bad key after a good one, a burst length
#     that is not a number) is counted (ctl_bad) and changes nothing;
#  7. counters readable while running (stats file, SIGUSR1); SIGTERM: exit
#     status 0, final counters printed, the TUN devices gone.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/netns.sh"
. "$TESTS_DIR/wanlink.sh"

PROBE="$PY $TESTS_DIR/wanlink_probe.py"
wl_setup -d 25 -r 0

# in(ns) run a probe command in the router (sender) or server (receiver)
rtr() { nsx "$NS_ROUTER" $PROBE "$@"; }
srv_bg() {	# srv_bg OUT ARGS...: a probe in the server namespace, in the background
	local out=$1; shift
	# a sink counts until the blast before it has ended (blast_done
	# touches $T/sent), then until --quiet seconds without a datagram: a
	# sender the busy machine stalls for a second does not end the count
	rm -f "$T/sent"
	[ "$1" = sink ] && set -- "$@" --done "$T/sent"
	ip netns exec "$NS_SERVER" $PROBE "$@" >"$out" 2>"$out.err" &
	SRV_PID=$!
	BG_PIDS="$BG_PIDS $SRV_PID"
	local n=50
	while [ $n -gt 0 ] && ! grep -q ready "$out.err" 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	[ $n -gt 0 ] || fail "probe $1 did not start: $(cat "$out.err")"
}
blast_done() {	# blast_done ARGS...: rtr blast ARGS, then tell the sink it has ended
	local rc=0
	rtr blast "$@" || rc=$?
	touch "$T/sent"
	return $rc
}
kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2" | tail -n 1; }
fcmp() { awk -v a="$1" -v b="$3" "BEGIN { exit !(a $2 b) }"; }

# ---- 1. delay
info "1. delay: 25 ms each way"
srv_bg "$T/echo.out" echo --bind "$SERVER_IP" --port 7000
echo_pid=$SRV_PID
r=$(rtr rtt --to "$SERVER_IP" --port 7000 --count 50) || fail "rtt probe failed: $r"
info "rtt: $r"
assert_eq 0 "$(kv lost "$r")" "probes lost on a loss-free link"
fcmp "$(kv min_ms "$r")" ">=" 50 || fail "round trip $(kv min_ms "$r") ms is shorter than the set 50 ms"
fcmp "$(kv median_ms "$r")" "<=" 75 || fail "median round trip $(kv median_ms "$r") ms is far above the set 50 ms"
wl_set delay=40 up
wl_set delay=5 down
r=$(rtr rtt --to "$SERVER_IP" --port 7000 --count 50) || fail "rtt probe failed: $r"
info "rtt after set delay=40 up, delay=5 down: $r"
fcmp "$(kv min_ms "$r")" ">=" 45 || fail "round trip $(kv min_ms "$r") ms is shorter than the set 45 ms"
fcmp "$(kv median_ms "$r")" "<=" 70 || fail "median round trip $(kv median_ms "$r") ms is far above the set 45 ms"
stop_pid "$echo_pid" 2

# ---- 2. rate and queue
info "2. rate 20 Mbit/s, 10 ms each way (queue = one BDP = 50000 B): 3 s at 40 Mbit/s"
wl_set delay=10 rate=20M queue=auto
in0=$(wl_stat up pkts_in) out0=$(wl_stat up pkts_out) dq0=$(wl_stat up drop_queue)
td0=$(wl_tun_drops) rb0=$(wl_rcvbuf_drops "$NS_SERVER")
srv_bg "$T/sink.out" sink --bind "$SERVER_IP" --port 7001 --quiet 1.5
r=$(blast_done --to "$SERVER_IP" --port 7001 --count 12500 --size 1200 --rate 40e6)
wait "$SRV_PID"
s=$(cat "$T/sink.out")
info "sent: $r; received: $s"
rate=$(kv rate_bps "$s")
queue=$(wl_stat up queue)
# the sink's rate is timed by kernel receive timestamps (a sink stalled
# then reading a backlog at once does not shorten the span)
assert_eq 0 "$(kv user_ts "$s")" "datagrams the sink had to time itself (no SO_TIMESTAMPNS)"
fcmp "$rate" "<=" "20e6 * 1.05" || fail "receiver saw $rate bit/s through a 20 Mbit/s link"
fcmp "$rate" ">=" 10e6 || fail "receiver saw only $rate bit/s through a 20 Mbit/s link"
dq=$(( $(wl_stat up drop_queue) - dq0 ))
assert_ge 1 "$dq" "drop_queue after 2x overfill"
peak=$(wl_stat up queue_peak)
[ "$peak" -le "$queue" ] || fail "queue_peak $peak above the queue limit $queue"
assert_eq 50000 "$queue" "queue = one BDP (20 Mbit/s x 20 ms)"
[ "$(wl_tun_drops)" = "$td0" ] || info "note: the kernel dropped $(( $(wl_tun_drops) - td0 )) packets at the TUN devices"
in1=$(( $(wl_stat up pkts_in) - in0 )) out1=$(( $(wl_stat up pkts_out) - out0 ))
assert_eq "$in1" "$((out1 + dq))" "packets in = out + queue drops (wanlink counters)"
rb=$(( $(wl_rcvbuf_drops "$NS_SERVER") - rb0 ))
[ "$rb" = 0 ] || info "note: the receiver's socket was full for $rb packets"
assert_eq "$out1" "$(( $(kv received "$s") + rb ))" "packets wanlink wrote out = packets the receiver got + dropped at its full socket"
info "queue drops $dq of $in1, queue_peak $peak of $queue, receiver $(awk -v r="$rate" 'BEGIN { printf "%.1f", r / 1e6 }') Mbit/s"

# ---- 3. loss
lossrun() {	# lossrun PCT FIRST: 10,000 packets; checks
	local pct=$1 first=$2 dl0 ow0 td rb sb s lo hi miss dl ow
	wl_set rate=0 delay=5 loss="$pct"
	dl0=$(wl_stat up drop_loss) ow0=$(wl_other_drops) td=$(wl_tun_drops)
	rb=$(wl_rcvbuf_drops "$NS_SERVER") sb=$(wl_udp_stat "$NS_ROUTER" SndbufErrors)
	srv_bg "$T/loss.out" sink --bind "$SERVER_IP" --port 7002 --quiet 1 \
	    --first "$first" --expect 10000 --missing "$T/miss-$pct"
	blast_done --to "$SERVER_IP" --port 7002 --count 10000 --size 100 --rate 4e6 --first "$first" >/dev/null
	wait "$SRV_PID"
	s=$(cat "$T/loss.out")
	dl=$(( $(wl_stat up drop_loss) - dl0 ))
	ow=$(( $(wl_other_drops) - ow0 ))
	td=$(( $(wl_tun_drops) - td ))
	rb=$(( $(wl_rcvbuf_drops "$NS_SERVER") - rb ))
	sb=$(( $(wl_udp_stat "$NS_ROUTER" SndbufErrors) - sb ))
	miss=$(kv missing "$s")
	read -r lo hi < <(awk -v p="$pct" 'BEGIN { n = 10000; q = p / 100; m = n * q; sd = sqrt(n * q * (1 - q)); printf "%d %d\n", m - 4.5 * sd, m + 4.5 * sd + 1 }')
	info "loss $pct %: wanlink dropped $dl (band $lo..$hi) and $ow more (queue, full ring, write errors), the receiver misses $miss of 10000 (last missing: $(tail -n 1 "$T/miss-$pct")), the kernel dropped $sb at the sender's socket, $td at the TUN devices and $rb at the receiver's full socket"
	assert_eq "$((dl + ow + sb + td + rb))" "$miss" "packets the receiver misses (= dropped by wanlink + by the kernel at the sender, at the TUN, at the receiver's full socket)"
	[ "$dl" -ge "$lo" ] && [ "$dl" -le "$hi" ] ||
	    fail "wanlink dropped $dl of 10000 at $pct %: outside $lo..$hi"
}
# wl_other_drops: what wanlink lost in the up direction beyond its loss model
wl_other_drops() { echo $(( $(wl_stat up drop_queue) + $(wl_stat up drop_full) + $(wl_stat up write_errors) )); }
info "3. loss"
lossrun 1 100000
lossrun 10 200000

# ---- 4. burst
info "4. burst 30 % for 4 s, then the setting (0 %) again"
wl_set loss=0
srv_bg "$T/burst.out" sink --bind "$SERVER_IP" --port 7003 --quiet 1 --first 0 --expect 8000
wl_ctl burst 30 4	# returns once wanlink has begun it: the 4 s run from before t0
t0=$(now)
blast_done --to "$SERVER_IP" --port 7003 --count 8000 --size 100 --rate 6.4e6 >/dev/null	# ~1 s
wait "$SRV_PID"
m=$(kv missing "$(cat "$T/burst.out")")
info "during the burst: $m of 8000 lost"
[ "$m" -ge 2000 ] && [ "$m" -le 2800 ] || fail "$m of 8000 lost in a 30 % burst (expected 2000..2800)"
sleep "$(awk -v e="$(elapsed "$t0")" 'BEGIN { s = 4.5 - e; print (s > 0) ? s : 0 }')"	# the burst is over
srv_bg "$T/after.out" sink --bind "$SERVER_IP" --port 7004 --quiet 1 --first 0 --expect 5000
blast_done --to "$SERVER_IP" --port 7004 --count 5000 --size 100 --rate 2e6 >/dev/null
wait "$SRV_PID"
assert_eq 0 "$(kv missing "$(cat "$T/after.out")")" "packets lost after the burst ended"

# ---- 7 (first half). counters while running, SIGUSR1
info "7. counters while running"
grep -q '^up pkts_in=[1-9]' "$WL_STATS" || fail "stats file has no live counters: $(cat "$WL_STATS")"
kill -USR1 "$WL_PID"
sleep 0.3
grep -q '^up pkts_in=' "$WL_LOG" || fail "SIGUSR1 printed no counters"

# ---- 5. seeds
seeded() {	# seeded SEED TAG: a fresh link with SEED and 2 % loss, 10,000 packets
	local try td miss logged
	for try in 1 2 3; do
		wl_stop >/dev/null
		wl_start -d 5 -r 0 -s "$1" -D "$T/drops-$2"
		wl_set loss=2
		td=$(wl_tun_drops)
		srv_bg "$T/seed.out" sink --bind "$SERVER_IP" --port 7005 --quiet 1 \
		    --first 0 --expect 10000 --missing "$T/seedmiss-$2"
		blast_done --to "$SERVER_IP" --port 7005 --count 10000 --size 100 --rate 4e6 >/dev/null
		wait "$SRV_PID"
		td=$(( $(wl_tun_drops) - td ))
		wl_stop >/dev/null
		assert_eq 0 "$WL_RC" "wanlink exit status after SIGTERM"
		miss=$(wc -l < "$T/seedmiss-$2")
		logged=$(grep -c ' loss$' "$T/drops-$2")
		info "seed $1: $miss missing, $logged in the drop log, $td dropped by the kernel at the TUN"
		# a packet lost outside wanlink (the kernel at the TUN, or the
		# receiver's socket buffer while the busy machine kept the
		# sink off the CPU) makes the receiver's list no longer the
		# seed's: run again
		[ "$td" -eq 0 ] && [ "$miss" -eq "$logged" ] && return 0
	done
	fail "in 3 runs with seed $1, packets were lost outside wanlink (the kernel at the TUN devices, or the receiver missed more than the drop log holds): machine too busy to compare seeds"
}
info "5. seeded runs"
seeded 42 a
seeded 42 b
seeded 43 c
[ -s "$T/seedmiss-a" ] || fail "seed 42 dropped nothing at 2 %"
cmp -s "$T/seedmiss-a" "$T/seedmiss-b" || fail "two runs with seed 42 dropped different packets (receiver)"
cmp -s "$T/drops-a" "$T/drops-b" || fail "two runs with seed 42 have different drop logs"
cmp -s "$T/seedmiss-a" "$T/seedmiss-c" && fail "seeds 42 and 43 dropped the same packets"

# ---- 6. memory bound
info "6. memory: --mem 4M, 2 s delay, unlimited rate, flooded with 16 MiB"
wl_start -d 5 -r 0 --mem 4M
wl_set delay=2000
srv_bg "$T/mem.out" sink --bind "$SERVER_IP" --port 7006 --quiet 3 --max 30
blast_done --to "$SERVER_IP" --port 7006 --count 12000 --size 1400 --rate 0 >/dev/null
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$WL_PID/status")
full=$(wl_stat up drop_full)
wait "$SRV_PID"
info "drop_full $full, wanlink VmRSS $rss KiB; receiver: $(cat "$T/mem.out")"
assert_ge 1 "$full" "drop_full when 16 MiB meet a 4 MiB ring"
[ "$rss" -le $(( (4 + 4 + 16) * 1024 )) ] || fail "wanlink RSS $rss KiB above two 4 MiB rings + 16 MiB"

# ---- 6b. refused control lines
info "6b. a refused control line changes nothing"
for line in "set delay=77 rate=bogus" "burst 30 2x"; do
	d0=$(wl_stat up delay_ms) l0=$(wl_stat up loss) bad0=$(_wl_head ctl_bad)
	timeout 5 sh -c 'printf "%s\n" "$1" > "$2"' sh "$line" "$WL_FIFO" ||
	    fail "6b: cannot write to the control FIFO"
	n=0
	while [ "$(_wl_head ctl_bad)" = "$bad0" ] && [ $n -lt 500 ]; do sleep 0.02; n=$((n + 1)); done
	assert_eq $((bad0 + 1)) "$(_wl_head ctl_bad)" "6b: '$line' refused (ctl_bad)"
	assert_eq "$d0 $l0" "$(wl_stat up delay_ms) $(wl_stat up loss)" "6b: delay and loss after the refused '$line'"
done

# ---- 7. SIGTERM
info "7. SIGTERM"
wl_stop
assert_eq 0 "$WL_RC" "wanlink exit status after SIGTERM"
grep -q 'wanlink: exit after' "$WL_LOG" || fail "no final counters at exit"
nsx "$NS_ROUTER" ip link show wl0 >/dev/null 2>&1 && fail "wl0 still exists after wanlink exited"
nsx "$NS_SERVER" ip link show wl1 >/dev/null 2>&1 && fail "wl1 still exists after wanlink exited"
info "PASS"
