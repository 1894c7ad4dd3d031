#!/bin/bash
# test-timeout: 240
# bbr's start-up pacing rate on a connection of small exchanges
# (proxy/upstream.c, px_upstream_pace): the branch office of wanlink.sh,
# 20 ms round trip, 100 Mbit/s, no loss; smbaccel in forward mode on the
# router with its default upstream_congestion (auto = bbr), at debug level.
#  1. smbclient mput of 40 x 8 KiB files through smbaccel (each file a
#     CREATE, then its WRITE sent with the CLOSE as one compound, the only
#     messages of more than two segments): every file on smbd's disk equals
#     its source; at least one refresh (upstream_pace_refreshes in stats,
#     and as many debug lines); the first one starts from the rate logged
#     at connect, which is bbr's initial one (2.885 x 10 segments / the
#     handshake's RTT, within 10 %: under load that RTT is not the one at
#     the refresh); each one leaves the
#     socket paced at 2.885 x window / RTT (within 10 %) and at least
#     1.25 x faster than before; the last one with a window past 12
#     segments (without the refreshes bbr keeps its initial rate: under
#     half of that once the window passes 20).  The socket is still bbr.
#  2. 32 MiB in 1 MiB writes (smbdd) on a new connection: byte-exact on
#     disk; while it runs, smbaccelctl conns --json shows the socket bbr
#     with its pacing rate and refresh count (pacing_rate_bps > 0,
#     pace_refreshes); no warning or error logged;
#  3. upstream_congestion = cubic: the same mput intact, no refresh.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/netns.sh"
. "$TESTS_DIR/wanlink.sh"

require_smbaccel "the upstream socket's pacing"
[ -x "$SMBDD" ] || skip "$SMBDD not built"
command -v smbclient >/dev/null || skip "no smbclient"
wl_setup -d 10 -r 100M
ns_start_smbd
NFILES=40

SRC=$T/src
mkdir -p "$SRC"
for i in $(seq "$NFILES"); do head -c 8192 /dev/urandom > "$SRC/f$i.bin"; done

# mput DIR: smbclient mput of SRC into the new folder DIR through smbaccel
mput() {
	local home out
	home=$(client_home "$1")
	out=$(nsx "$NS_CLIENT" env HOME="$home" timeout -k 5 120 smbclient \
	    "//$ROUTER_CLIENT_IP/share" -p "$PROXY_PORT" -s "$home/.smb/smb.conf" \
	    -U "$SMB_USER%$SMB_PASS" -c "prompt off; lcd $SRC; mkdir $1; cd $1; mput *" 2>&1) ||
	    fail "smbclient mput into $1 failed: $(tail -n 5 <<<"$out")"
	grep -q NT_STATUS_ <<<"$out" && fail "smbclient: $(grep NT_STATUS_ <<<"$out" | head -n 3)"
	return 0
}

# same DIR: every file on disk equals its source
same() {
	local f bad=0
	for f in "$SRC"/*.bin; do
		[ "$(sha256 "$f")" = "$(sha256 "$SHARE_DIR/$1/${f##*/}")" ] || {
			info "differs: $1/${f##*/}"; bad=$((bad + 1)); }
	done
	assert_eq 0 "$bad" "$1: files on smbd's disk that differ from their source"
}

# upstream_tcp: "id congestion cwnd pacing_rate_bps pace_refreshes" of
# the connection that has sent more than 4 MiB upstream
upstream_tcp() {
	ctl conns --json | "$PY" -c '
import json, sys
for c in json.load(sys.stdin)["conns"]:
    u = c.get("upstream_tcp")
    if u and u["bytes_sent"] > 4 << 20:
        print(c["id"], u["congestion"], u["cwnd"], u["pacing_rate_bps"],
              u["pace_refreshes"])
        break'
}

# ---- 1. mput, bbr
info "1. mput of $NFILES x 8 KiB through smbaccel (bbr) over 20 ms / 100 Mbit/s"
ns_start_proxy forward "upstream = $SERVER_IP:445" "log_level = debug"
ACC=$ROUTER_CLIENT_IP:$PROXY_PORT
mput bbr
same bbr
n=$(stat_get upstream_pace_refreshes)
info "upstream_pace_refreshes: $n"
grep "pacing refreshed" "$PROXY_LOG"
assert_ge 1 "$n" "upstream_pace_refreshes in stats"
assert_eq "$n" "$(grep -c 'upstream bbr start-up pacing refreshed' "$PROXY_LOG")" "debug lines 'pacing refreshed' vs the stats counter"
grep "upstream bbr start-up pacing" "$PROXY_LOG" | "$PY" -c '
import re, sys
rs = re.compile(r"conn=(\d+) upstream bbr start-up pacing at connect: cwnd=(\d+) mss=(\d+) rtt_us=(\d+) pacing (\d+) B/s")
rx = re.compile(r"conn=(\d+) upstream bbr start-up pacing refreshed: cwnd=(\d+) mss=(\d+) rtt_us=(\d+) bw=\d+ B/s pacing (\d+) -> (\d+) B/s")
text = sys.stdin.read().splitlines()
start = {}
lines = []
for l in text:
    m = rs.search(l)
    if m:
        start[m.group(1)] = [int(x) for x in m.groups()[1:]]
        continue
    lines.append(rx.search(l))
if not lines or None in lines:
    sys.exit("a refresh line without its figures")
bad = 0
for i, m in enumerate(lines):
    conn = m.group(1)
    cwnd, mss, rtt, old, new = (int(x) for x in m.groups()[1:])
    want = 2.885 * cwnd * mss * 1e6 / rtt
    print("refresh %d (conn %s): cwnd %d, pacing %.2f -> %.2f MB/s; 2.885 x cwnd / RTT %.2f MB/s"
          % (i + 1, conn, cwnd, old / 1e6, new / 1e6, want / 1e6))
    if i == 0:
        if conn not in start:
            print("  no rate logged at connect for conn %s" % conn); bad += 1
        else:
            # bbr starts at 2.885 x its initial window / the handshake RTT
            scwnd, smss, srtt, srate = start[conn]
            init = 2.885 * scwnd * smss * 1e6 / srtt
            print("  at connect: cwnd %d, RTT %.1f ms, pacing %.2f MB/s; 2.885 x cwnd / RTT %.2f MB/s"
                  % (scwnd, srtt / 1e3, srate / 1e6, init / 1e6))
            if scwnd != 10:
                print("  the initial window is not 10 segments"); bad += 1
            if abs(srate - init) > 0.1 * init:
                print("  bbr did not start at 2.885 x window / RTT"); bad += 1
            if old != srate:
                print("  the first refresh did not start from the rate at connect"); bad += 1
    if abs(new - want) > 0.1 * want:
        print("  the new rate is not 2.885 x cwnd / RTT"); bad += 1
    if new < 1.25 * old * 0.99:
        print("  less than 1.25 x the old rate"); bad += 1
if int(lines[-1].group(2)) <= 12:
    print("the window never grew past 12 segments: the test shows nothing"); bad += 1
sys.exit(1 if bad else 0)' || fail "refreshed pacing rates (above)"
log_has "conn=[0-9]+ upstream congestion=bbr " || fail "no 'upstream congestion=bbr' log line"

# ---- 2. bulk writes after it
info "2. 32 MiB in 1 MiB writes through smbaccel (bbr)"
seed=$((RANDOM * 32768 + RANDOM + 1))
wl_smbdd_bg "$T/bulk.out" "$NS_CLIENT" "$ACC" write w1m 1M 32 -s "$seed" -q -f
tcp=
for _ in $(seq 100); do
	tcp=$(upstream_tcp) && [ -n "$tcp" ] && break
	sleep 0.1
done
[ -n "$tcp" ] || { ctl conns --json; cat "$T/bulk.out"; fail "the transfer did not show up in conns with upstream_tcp"; }
set -- $tcp
info "conns: conn=$1 congestion=$2 cwnd=$3 pacing_rate_bps=$4 pace_refreshes=$5"
assert_eq bbr "$2" "upstream congestion control in conns"
assert_ge 1 "$4" "pacing_rate_bps in conns"
case $5 in [0-9]*) ;; *) fail "pace_refreshes in conns is '$5'" ;; esac
wait "$WL_DD_PID" || fail "smbdd 1 MiB writes failed: $(cat "$T/bulk.out")"
info "client: $(tail -n 1 "$T/bulk.out")"
wl_smbdd "$NS_SERVER" "$SERVER_IP" write ref-w1m 1M 32 -s "$seed" -q >/dev/null ||
    fail "reference write on the server failed"
assert_eq "$(sha256 "$SHARE_DIR/ref-w1m")" "$(sha256 "$SHARE_DIR/w1m")" "sha256 on disk of 1 MiB writes vs the pattern"
info "refreshes after it: $(stat_get upstream_pace_refreshes)"
log_has "smbaccel\[(warn|error)\]" && { grep -E "smbaccel\[(warn|error)\]" "$PROXY_LOG" | head -n 5; fail "smbaccel logged a warning or an error"; }
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status"

# ---- 3. cubic: nothing to refresh
info "3. the same mput with upstream_congestion = cubic"
ns_start_proxy forward "upstream = $SERVER_IP:445" "upstream_congestion = cubic" "log_level = debug"
mput cubic
same cubic
assert_eq 0 "$(stat_get upstream_pace_refreshes)" "upstream_pace_refreshes with cubic"
log_has "conn=[0-9]+ upstream congestion=cubic " || fail "no 'upstream congestion=cubic' log line"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status"
wl_stop
info "PASS"
