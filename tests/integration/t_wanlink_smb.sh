#!/bin/bash
# test-timeout: 300
# waits: transfers paced by a 20 ms, 100 Mbit/s, 1 % loss emulated link: 16 s of CPU in 45 s (36 %) under ASan; checks data and sockets, not speed
# smbaccel over a real lossy WAN: the branch office of wanlink.sh (client
# -> router running smbaccel -> bin/wanlink -> smbd), 20 ms round trip,
# 100 Mbit/s and 1 % loss each way.  Client and server sockets use CUBIC;
# smbaccel (forward mode on the router, write_behind = read_ahead = always)
# uses its default upstream_congestion (auto = bbr).
#  1. 1 KiB writes (smbdd, 4 MiB) through smbaccel: the file on smbd's
#     disk has the sha256 of the same pattern written on the server itself;
#     read back through smbaccel in 4 KiB reads and verified (smbdd verify);
#  2. 1 MiB writes (32 MiB): byte-exact on disk; a 4 MiB prefix read back
#     through smbaccel in 1 MiB reads and verified;
#  3. live sockets (ss -ti) during a transfer: the server's socket to the
#     router is cubic, smbaccel's upstream socket bbr (the router's route
#     says cubic: smbaccel set bbr again after the connect); smbaccelctl
#     conns --json shows it with TCP_INFO (congestion bbr, rtt >= 20 ms,
#     cwnd > 0, retransmits > 0 at 1 % loss) and the log line says so;
#  4. a burst of 30 % loss for 2 s (timed from wanlink's confirmation) in
#     the middle of a 64 MiB transfer of 1 MiB writes: at least 30 packets
#     dropped if the transfer was still running when the burst ended (else
#     noted); the transfer completes, byte-exact on disk, smbaccel logs no
#     lost range and no error;
#  5. upstream_congestion = cubic: the upstream socket is cubic (ss and
#     conns), and data is still intact.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/netns.sh"
. "$TESTS_DIR/wanlink.sh"

require_smbaccel "the upstream socket's congestion control"
[ -x "$SMBDD" ] || skip "$SMBDD not built"
wl_setup -d 10 -r 100M -l 1
ns_start_smbd
ns_start_proxy forward "upstream = $SERVER_IP:445" "read_ahead = always"
ACC=$ROUTER_CLIENT_IP:$PROXY_PORT
seed=$((RANDOM * 32768 + RANDOM + 1))

# running PID: PID (a child of this shell) has not exited (a zombie, not
# yet waited for, has)
running() { [ -d "/proc/$1" ] && [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# ref NAME BS COUNT: the pattern written on the server itself (no link)
ref() {
	wl_smbdd "$NS_SERVER" "$SERVER_IP" write "ref-$1" "$2" "$3" -s "$seed" -q >/dev/null ||
	    fail "reference write on the server failed"
	sha256 "$SHARE_DIR/ref-$1"
}

# ---- 1. 1 KiB writes
info "1. 4 MiB in 1 KiB writes through smbaccel over 20 ms / 100 Mbit/s / 1 % loss"
out=$(wl_smbdd "$NS_CLIENT" "$ACC" write w1k 1K 4096 -s "$seed" -q -f 2>&1) ||
    fail "smbdd 1 KiB writes failed: $out"
info "client: $(tail -n 1 <<<"$out")"
assert_eq "$(ref w1k 1M 4)" "$(sha256 "$SHARE_DIR/w1k")" "sha256 on disk of 1 KiB writes vs the pattern"
assert_ge 1 "$(stat_get writes_absorbed)" "writes_absorbed"
out=$(wl_smbdd "$NS_CLIENT" "$ACC" verify w1k 4K 1024 -s "$seed" -q 2>&1) ||
    fail "4 KiB read+verify through smbaccel failed: $out"
info "read back: $(tail -n 1 <<<"$out")"

# ---- 2. 1 MiB writes
info "2. 32 MiB in 1 MiB writes through smbaccel"
out=$(wl_smbdd "$NS_CLIENT" "$ACC" write w1m 1M 32 -s "$seed" -q -f 2>&1) ||
    fail "smbdd 1 MiB writes failed: $out"
info "client: $(tail -n 1 <<<"$out")"
assert_eq "$(ref w1m 1M 32)" "$(sha256 "$SHARE_DIR/w1m")" "sha256 on disk of 1 MiB writes vs the pattern"
out=$(wl_smbdd "$NS_CLIENT" "$ACC" read w1m 1M 4 -s "$seed" -q 2>&1) ||
    fail "1 MiB read+verify of a 4 MiB prefix through smbaccel failed: $out"
info "read back 4 MiB: $(tail -n 1 <<<"$out")"

# ---- 3 and 4. live sockets, then a burst, during one 64 MiB transfer
info "3. live sockets during a 64 MiB transfer; 4. a 30 % loss burst for 2 s in it"
wl_smbdd_bg "$T/burst.out" "$NS_CLIENT" "$ACC" write burst 1M 64 -s "$seed" -q -f -T 60
dd_pid=$WL_DD_PID
conn=
for _ in $(seq 100); do
	conn=$(ctl conns --json | "$PY" -c '
import json, sys
for c in json.load(sys.stdin)["conns"]:
    u = c.get("upstream_tcp")
    if u and u["bytes_sent"] > 4 << 20:
        print(c["id"], u["congestion"], u["rtt_ms"], u["cwnd"], u["retrans"], u["congestion_setting"])
        break') && [ -n "$conn" ] && break
	sleep 0.1
done
[ -n "$conn" ] || { ctl conns --json; fail "the transfer did not show up in conns with upstream_tcp"; }
set -- $conn
info "conns: conn=$1 congestion=$2 rtt_ms=$3 cwnd=$4 retrans=$5 setting=$6"
assert_eq bbr "$2" "upstream congestion control in conns (upstream_congestion auto)"
assert_eq auto "$6" "congestion_setting in conns"
awk -v r="$3" 'BEGIN { exit !(r >= 20) }' || fail "upstream rtt_ms $3 below the link's 20 ms"
assert_ge 1 "$4" "upstream cwnd"
assert_ge 1 "$5" "upstream retransmits after 4 MiB at 1 % loss"
log_has "conn=$1 upstream congestion=bbr " || fail "no 'conn=$1 upstream congestion=bbr' log line"
up=$(wl_cc "$NS_ROUTER" "$SERVER_IP" | sort -u | tr '\n' ' ')
srvcc=$(wl_cc "$NS_SERVER" "$ROUTER_WAN_IP" | sort -u | tr '\n' ' ')
info "ss -ti: smbaccel's upstream socket(s): $up; smbd's socket(s) to the router: $srvcc"
assert_eq "bbr " "$up" "ss: congestion control of smbaccel's upstream socket"
assert_eq "cubic " "$srvcc" "ss: congestion control of smbd's socket (route congctl cubic)"
# the burst: timed from wanlink's confirmation that it began (wl_ctl);
# the drops are required only if the transfer was still running when the
# burst was over (on a busy machine it may have ended before)
dl0=$(wl_stat up drop_loss)
running "$dd_pid" || info "note: the transfer ended before the burst began; the burst is not tested"
wl_ctl burst 30 2
t0=$(now)
sleep 2.2
dd_live=no
running "$dd_pid" && dd_live=yes
dl1=$(wl_stat up drop_loss)
info "upstream packets dropped by wanlink during the burst: $((dl1 - dl0)) (the transfer $([ $dd_live = yes ] && echo "was still running" || echo "had ended") $(elapsed "$t0") s after the burst began)"
if [ $dd_live = yes ]; then
	assert_ge 30 "$((dl1 - dl0))" "packets lost in a 30 % burst of 2 s the transfer ran through"
else
	info "note: the transfer ended before the burst did: drops not required, data and log still checked"
fi
wait "$dd_pid" || fail "the transfer through the burst failed: $(cat "$T/burst.out")"
info "client: $(tail -n 1 "$T/burst.out")"
assert_eq "$(ref burst 1M 64)" "$(sha256 "$SHARE_DIR/burst")" "sha256 on disk after the burst"
log_has "lost|smbaccel\[error\]" && fail "smbaccel logged a lost range or an error"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status"

# ---- 5. upstream_congestion = cubic
info "5. upstream_congestion = cubic"
ns_start_proxy forward "upstream = $SERVER_IP:445" "upstream_congestion = cubic"
wl_smbdd_bg "$T/cubic.out" "$NS_CLIENT" "$ACC" write cubic 1M 8 -s "$seed" -q -f -T 60
dd_pid=$WL_DD_PID
cc=
for _ in $(seq 100); do
	cc=$(ctl conns --json | "$PY" -c '
import json, sys
for c in json.load(sys.stdin)["conns"]:
    if c.get("upstream_tcp"):
        print(c["upstream_tcp"]["congestion"]); break') && [ -n "$cc" ] && break
	sleep 0.1
done
assert_eq cubic "$cc" "upstream congestion control in conns (upstream_congestion = cubic)"
up=$(wl_cc "$NS_ROUTER" "$SERVER_IP" | sort -u | tr '\n' ' ')
assert_eq "cubic " "$up" "ss: congestion control of smbaccel's upstream socket"
wait "$dd_pid" || fail "the transfer with cubic failed: $(cat "$T/cubic.out")"
info "client (cubic upstream, 1 MiB writes): $(tail -n 1 "$T/cubic.out")"
assert_eq "$(ref cubic 1M 8)" "$(sha256 "$SHARE_DIR/cubic")" "sha256 on disk (cubic upstream)"
log_has "upstream congestion=cubic sndbuf=auto rcvbuf=auto" ||
    fail "no 'upstream congestion=cubic' log line"
info "wanlink counters:"
wl_stop
info "PASS"
