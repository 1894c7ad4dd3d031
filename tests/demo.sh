#!/bin/bash
# tests/demo.sh - `make demo`: smbaccel's story in about a minute.
#
# A branch office 20 ms (round trip) and 100 Mbit/s away from its file
# server.  An unmodified client writes a file in 1 KiB pieces, the way
# `dd bs=1024` does: first straight over the WAN, then through smbaccel at
# the client's end.  Then smbaccel's counters, and a copy with smbclient
# whose checksums are compared.
#
#   client --> wanem (10 ms each way, 100 Mbit/s) --> smbd          (direct)
#   client --> smbaccel --> wanem (same link) --> smbd              (accelerated)
#
# Everything runs on 127.0.0.1 and is stopped on exit, even on Ctrl-C.
# Needs root (a throwaway smbd with its own user), `make all` done.
# DEMO_DIRECT_MIB / DEMO_ACCEL_MIB change the sizes (default 1 and 64).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"

unset RESULTS_DIR
. "$(dirname "$0")/integration/lib.sh"
TEST_NAME=demo
info() { :; }	# the harness's progress lines; the demo prints its own
trap 'printf "\n\ninterrupted: stopping smbaccel, the WAN emulator and smbd\n"; exit 130' INT
WANEM=$TOP/bin/wanem
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

[ "$(id -u)" -eq 0 ] || { echo "make demo needs root (it starts a private smbd and adds user $SMB_USER)"; exit 1; }
for b in "$SMBACCEL" "$SMBACCELCTL" "$SMBDD" "$WANEM"; do
	[ -x "$b" ] || { echo "$b is missing: run 'make all' first"; exit 1; }
done
command -v smbd >/dev/null && command -v smbclient >/dev/null ||
    { echo "Samba is not installed: run 'sh deploy/install-deps.sh'"; exit 1; }

cat <<EOF
${B}smbaccel demo${N}: small writes over a WAN, with and without smbaccel.

  A client writes with 1 KiB requests (like 'dd bs=1024'). Over a WAN every
  request waits one round trip for its answer: 1 KiB per 20 ms is ~50 KB/s,
  whatever the bandwidth. smbaccel answers small writes locally and sends
  them to the server as large, pipelined writes.
EOF

step "Starting a throwaway Samba server, the WAN emulator and smbaccel"
start_smbd
note "smbd          127.0.0.1:$SMBD_PORT  (share 'share' in $SHARE_DIR)"
WAN_PORT=$(free_port) || fail "no free port"
"$WANEM" -l "127.0.0.1:$WAN_PORT" -u "127.0.0.1:$SMBD_PORT" -d 10 -r 100M \
    </dev/null >"$T/wanem.log" 2>&1 &
BG_PIDS="$BG_PIDS $!"
wait_port "$WAN_PORT" 10 "$!" || fail "wanem did not start: $(cat "$T/wanem.log")"
note "WAN emulator  127.0.0.1:$WAN_PORT -> smbd, 10 ms each way (20 ms round trip), 100 Mbit/s each way"
PROXY_PORT=$(free_port) || fail "no free port"
PROXY_UPSTREAM=127.0.0.1:$WAN_PORT
start_proxy "read_ahead = always"
note "smbaccel      127.0.0.1:$PROXY_PORT -> WAN emulator  (write_behind = always, read_ahead = always)"

HOME_C=$(client_home demo)
SEED=$((RANDOM * 32768 + RANDOM + 1))
# dd PORT FILE MIB: smbdd writing MIB MiB in 1 KiB requests, with a live
# progress line; the result line is kept in $T/FILE.out.
dd1k() {
	HOME=$HOME_C "$SMBDD" write "$(smb_url "$1" "$2")" 1K $(($3 * 1024)) \
	    -U "$SMB_USER%$SMB_PASS" -s "$SEED" -q -P > "$T/$2.out" ||
	    fail "smbdd to $2 failed: $(cat "$T/$2.out")"
}
val() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" "$T/$2.out" | tail -n 1; }

step "1) Direct over the WAN: $DIRECT_MIB MiB in 1 KiB writes (about $((DIRECT_MIB * 21)) s)"
note "(the live line shows MB written and MB/s; at ~0.05 MB/s the rate reads 0.0)"
dd1k "$WAN_PORT" direct.bin "$DIRECT_MIB"
D_MBPS=$(val MBps direct.bin)
D_OPUS=$(awk -v s="$(val seconds direct.bin)" -v n="$(val ops direct.bin)" 'BEGIN { printf "%.1f", s * 1000 / n }')
note "direct: ${B}$D_MBPS MB/s${N}  ($D_OPUS ms per 1 KiB write: one round trip each)"

step "2) Through smbaccel: $ACCEL_MIB MiB in 1 KiB writes, same client, same link"
s0=$(ctl stats --json)
dd1k "$PROXY_PORT" accel.bin "$ACCEL_MIB"
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
HOME=$HOME_C "$SMBDD" verify "$(smb_url "$SMBD_PORT" accel.bin)" 1M "$ACCEL_MIB" \
    -U "$SMB_USER%$SMB_PASS" -s "$SEED" -q >/dev/null 2>&1 ||
    fail "the $ACCEL_MIB MiB file written through smbaccel does not read back correctly"
note "all $ACCEL_MIB MiB written through smbaccel read back from the server byte for byte: ${G}OK${N}"

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

step "3) A copy with smbclient through smbaccel: put $COPY_MIB MiB, get it back"
random_file "$T/original.bin" "$COPY_MIB"
t0=$(now)
HOME=$HOME_C smbclient //127.0.0.1/share -p "$PROXY_PORT" -U "$SMB_USER%$SMB_PASS" \
    -s "$HOME_C/.smb/smb.conf" -c "put $T/original.bin copy.bin; get copy.bin $T/readback.bin" >"$T/smbclient.out" 2>&1 ||
    fail "smbclient failed: $(tail -n 3 "$T/smbclient.out")"
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

step "Done"
note "direct $D_MBPS MB/s, through smbaccel $A_MBPS MB/s: ${B}${SPEEDUP}x${N}."
note "Stopping smbaccel, the WAN emulator and smbd. Full benchmarks: make bench (docs/performance.md)."
exit 0
