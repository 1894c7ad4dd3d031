#!/bin/bash
# tests/demo.sh - `make demo`: smbaccel's story in about a minute and a half.
#
# A branch office 20 ms (round trip) and 100 Mbit/s away from its file
# server, in three network namespaces: client -> router -> WAN -> server.
# The WAN is bin/wanlink, a packet-level link emulator (real TCP end to
# end, with loss when asked).  An unmodified client writes a file in 1 KiB
# pieces, the way `dd bs=1024` does: first straight over the WAN (the
# router only forwards), then through smbaccel on the router.  Then
# smbaccel's counters and a copy with smbclient whose checksums are
# compared.  Last, the link starts losing 1 % of its packets: large writes
# direct (the client's CUBIC collapses), through smbaccel (its upstream
# socket uses bbr), and through smbaccel told to use cubic.
#
#   client --> router (forwards) --> wanlink (10 ms each way, 100 Mbit/s) --> smbd
#   client --> router: smbaccel  --> wanlink (same link)                  --> smbd
#
# Everything runs in private namespaces and is stopped on exit, even on
# Ctrl-C.  Needs root (namespaces, TUN, a throwaway smbd with its own
# user), `make all` done.  DEMO_DIRECT_MIB / DEMO_ACCEL_MIB change the
# sizes of the 1 KiB-write runs (default 1 and 64).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"

unset RESULTS_DIR
. "$(dirname "$0")/integration/lib.sh"
. "$TESTS_DIR/netns.sh"
. "$TESTS_DIR/wanlink.sh"
TEST_NAME=demo
info() { :; }	# the harness's progress lines; the demo prints its own
trap 'printf "\n\ninterrupted: stopping smbaccel, the WAN emulator and smbd\n"; exit 130' INT
DIRECT_MIB=${DEMO_DIRECT_MIB:-1}
ACCEL_MIB=${DEMO_ACCEL_MIB:-64}
COPY_MIB=16

if [ -t 1 ]; then
	B=$'\e[1m' G=$'\e[32m' R=$'\e[31m' N=$'\e[0m'
else
	B= G= R= N=
fi
step() { printf '\n%s==> %s%s\n' "$B" "$*" "$N"; }
note() { printf '    %s\n' "$*"; }

[ "$(id -u)" -eq 0 ] || { echo "make demo needs root (network namespaces, a private smbd, user $SMB_USER)"; exit 1; }
for b in "$SMBACCEL" "$SMBACCELCTL" "$SMBDD" "$WANLINK"; do
	[ -x "$b" ] || { echo "$b is missing: run 'make all' first"; exit 1; }
done
[ -c /dev/net/tun ] || { echo "no /dev/net/tun: the WAN emulator needs TUN devices"; exit 1; }
command -v smbd >/dev/null && command -v smbclient >/dev/null ||
    { echo "Samba is not installed: run 'sh deploy/install-deps.sh'"; exit 1; }

cat <<EOF
${B}smbaccel demo${N}: small writes over a WAN, with and without smbaccel.

  A client writes with 1 KiB requests (like 'dd bs=1024'). Over a WAN every
  request waits one round trip for its answer: 1 KiB per 20 ms is ~50 KB/s,
  whatever the bandwidth. smbaccel answers small writes locally and sends
  them to the server as large, pipelined writes.
EOF

step "Starting the branch office: client, router and server namespaces, the WAN, Samba, smbaccel"
wl_setup -d 10 -r 100M
note "WAN emulator  router $ROUTER_WAN_IP <-> server $SERVER_IP: 10 ms each way (20 ms round trip), 100 Mbit/s each way"
ns_start_smbd
note "smbd          $SERVER_IP:445 in the server namespace (share 'share' in $SHARE_DIR)"
PROXY_PORT=4445
ns_start_proxy forward "upstream = $SERVER_IP:445" "read_ahead = always"
ACC=$ROUTER_CLIENT_IP:$PROXY_PORT
note "smbaccel      $ACC on the router -> $SERVER_IP:445  (write_behind = always, read_ahead = always)"
note "client        $CLIENT_IP; its TCP and the server's use CUBIC, as Windows does"

HOME_C=$(client_home demo)
SEED=$((RANDOM * 32768 + RANDOM + 1))
# sdd HOST:PORT FILE BS COUNT: smbdd from the client namespace, with a live
# progress line; the result line is kept in $T/FILE.out.
sdd() {
	ip netns exec "$NS_CLIENT" env HOME="$HOME_C" "$SMBDD" write "smb://$1/share/$2" "$3" "$4" \
	    -U "$SMB_USER%$SMB_PASS" -s "$SEED" -q -P -T 60 > "$T/$2.out" ||
	    fail "smbdd to $2 failed: $(cat "$T/$2.out")"
}
val() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" "$T/$2.out" | tail -n 1; }

step "1) Direct over the WAN: $DIRECT_MIB MiB in 1 KiB writes (about $((DIRECT_MIB * 21)) s)"
note "(the live line shows MB written and MB/s; at ~0.05 MB/s the rate reads 0.0)"
sdd "$SERVER_IP" direct.bin 1K $((DIRECT_MIB * 1024))
D_MBPS=$(val MBps direct.bin)
D_OPUS=$(awk -v s="$(val seconds direct.bin)" -v n="$(val ops direct.bin)" 'BEGIN { printf "%.1f", s * 1000 / n }')
note "direct: ${B}$D_MBPS MB/s${N}  ($D_OPUS ms per 1 KiB write: one round trip each)"

step "2) Through smbaccel: $ACCEL_MIB MiB in 1 KiB writes, same client, same link"
s0=$(ctl stats --json)
sdd "$ACC" accel.bin 1K $((ACCEL_MIB * 1024))
A_MBPS=$(val MBps accel.bin)
A_OPUS=$(awk -v s="$(val seconds accel.bin)" -v n="$(val ops accel.bin)" 'BEGIN { printf "%.0f", s * 1e6 / n }')
note "smbaccel: ${B}$A_MBPS MB/s${N}  ($A_OPUS µs per 1 KiB write; the link carries at most 12.5 MB/s)"

SPEEDUP=$(awk -v a="$A_MBPS" -v d="$D_MBPS" 'BEGIN { printf "%.0f", (d > 0) ? a / d : 0 }')
LINKPCT=$(awk -v a="$A_MBPS" 'BEGIN { printf "%.0f", a / 12.5 * 100 }')
printf '\n    %s%s speed-up: %sx faster than direct (%s%% of the 100 Mbit/s link)%s\n' \
    "$B" "$G" "$SPEEDUP" "$LINKPCT" "$N"

step "Is the data right?  The same pattern was written both times"
DSUM=$(sha256 "$SHARE_DIR/direct.bin")
PSUM=$(head -c $((DIRECT_MIB * 1048576)) "$SHARE_DIR/accel.bin" | sha256sum | cut -d' ' -f1)
note "first $DIRECT_MIB MiB on the server's disk: direct ${DSUM:0:16}…  via smbaccel ${PSUM:0:16}…"
[ "$DSUM" = "$PSUM" ] || fail "the file written through smbaccel differs from the direct one"
ip netns exec "$NS_SERVER" env HOME="$HOME_C" "$SMBDD" verify "smb://$SERVER_IP/share/accel.bin" 1M \
    "$ACCEL_MIB" -U "$SMB_USER%$SMB_PASS" -s "$SEED" -q >/dev/null 2>&1 ||
    fail "the $ACCEL_MIB MiB file written through smbaccel does not read back correctly"
note "all $ACCEL_MIB MiB written through smbaccel read back on the server byte for byte: ${G}OK${N}"

step "smbaccel's counters for that run (smbaccelctl stats)"
s1=$(ctl stats --json)
"$PY" - "$s0" "$s1" <<'EOF'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
d = lambda k: b.get(k, 0) - a.get(k, 0)
ab, uw, ub = d("writes_absorbed"), d("upstream_writes"), d("upstream_write_bytes")
print("    client writes absorbed (answered locally): %d" % ab)
print("    writes sent to the server:                 %d, mean size %.0f KiB"
      % (uw, ub / uw / 1024 if uw else 0))
if uw:
    print("    => %d client round trips became %d" % (ab, uw))
EOF
echo
ctl stats | sed -n '/^connections/,/^read-ahead/p' | sed 's/^/    | /'
echo
note "the same figures for a monitoring system (smbaccelctl metrics, Prometheus"
note "text; smbaccel-metrics.timer hands them to the node exporter), a few of them:"
ctl metrics | grep -E '^smbaccel_(writes_absorbed_total|upstream_write_mean|lost_bytes_total|share_bytes_absorbed_total)' |
    sed 's/^/    | /'

step "3) A copy with smbclient through smbaccel: put $COPY_MIB MiB, get it back"
random_file "$T/original.bin" "$COPY_MIB"
t0=$(now)
(cd "$T" && ip netns exec "$NS_CLIENT" env HOME="$HOME_C" smbclient "//$ROUTER_CLIENT_IP/share" \
    -p "$PROXY_PORT" -U "$SMB_USER%$SMB_PASS" -s "$HOME_C/.smb/smb.conf" \
    -c "put original.bin copy.bin; get copy.bin readback.bin") \
    >"$T/smbclient.out" 2>&1 || fail "smbclient failed: $(tail -n 3 "$T/smbclient.out")"
note "put + get took $(elapsed "$t0") s"
O=$(sha256 "$T/original.bin") S=$(sha256 "$SHARE_DIR/copy.bin") G2=$(sha256 "$T/readback.bin")
note "sha256 original            $O"
note "sha256 on the server disk  $S"
note "sha256 read back           $G2"
if [ "$O" = "$S" ] && [ "$O" = "$G2" ]; then
	note "${G}checksums match${N}"
else
	fail "checksums differ"
fi

step "4) The link now loses 1 % of its packets each way: 1 MiB writes"
cat <<EOF
    One TCP stream with loss-based CUBIC (what the client and the server run)
    gets a few Mbit/s of this link.  smbaccel splits the TCP connection: across
    the WAN only its own upstream socket sends, and it uses bbr.
EOF
wl_set loss=1
CUB_PORT=4446
{
	echo "[global]"
	echo "listen = $ROUTER_CLIENT_IP:$CUB_PORT"
	echo "upstream = $SERVER_IP:445"
	echo "mode = forward"
	echo "control_socket = $T/cubic.sock"
	echo "upstream_congestion = cubic"
	echo "[share share]"
	echo "write_behind = always"
} > "$T/cubic.conf"
ip netns exec "$NS_ROUTER" "$SMBACCEL" -c "$T/cubic.conf" -f </dev/null >"$T/cubic.log" 2>&1 &
BG_PIDS="$BG_PIDS $!"
sdd "$SERVER_IP" lossy-direct.bin 1M 8
note "direct:                               ${B}$(val MBps lossy-direct.bin) MB/s${N}  (8 MiB)"
sdd "$ACC" lossy-accel.bin 1M 32
note "through smbaccel (upstream bbr):      ${B}$(val MBps lossy-accel.bin) MB/s${N}  (32 MiB)"
sdd "$ROUTER_CLIENT_IP:$CUB_PORT" lossy-cubic.bin 1M 8
note "through smbaccel, upstream cubic:     ${B}$(val MBps lossy-cubic.bin) MB/s${N}  (8 MiB)"
note "$(grep -m1 -o 'upstream congestion=[a-z]*' "$PROXY_LOG") / $(grep -m1 -o 'upstream congestion=[a-z]*' "$T/cubic.log"): what each smbaccel's upstream socket got (its log)"
for f in lossy-direct lossy-accel lossy-cubic; do
	n=$(( $(stat -c %s "$SHARE_DIR/$f.bin") / 1048576 ))
	ip netns exec "$NS_SERVER" env HOME="$HOME_C" "$SMBDD" verify "smb://$SERVER_IP/share/$f.bin" 1M "$n" \
	    -U "$SMB_USER%$SMB_PASS" -s "$SEED" -q >/dev/null 2>&1 || fail "$f.bin does not read back correctly"
done
note "all three files verified on the server byte for byte: ${G}OK${N}"
L_MBPS=$(val MBps lossy-accel.bin) LD_MBPS=$(val MBps lossy-direct.bin)
LSPEED=$(awk -v a="$L_MBPS" -v d="$LD_MBPS" 'BEGIN { printf "%.0f", (d > 0) ? a / d : 0 }')

step "Done"
note "20 ms, 100 Mbit/s: 1 KiB writes direct $D_MBPS MB/s, through smbaccel $A_MBPS MB/s: ${B}${SPEEDUP}x${N}."
note "with 1 % loss: 1 MiB writes direct $LD_MBPS MB/s, through smbaccel $L_MBPS MB/s: ${B}${LSPEED}x${N}."
note "Reads are sent by the server's TCP: smbaccel cannot change its congestion control (docs/performance.md)."
note "Stopping smbaccel, the WAN emulator and smbd. Full benchmarks: make bench (docs/performance.md)."
exit 0
