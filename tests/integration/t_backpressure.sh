#!/bin/bash
# asan-options: quarantine_size_mb=8 (its RSS bounds hold under ASan once freed memory is not kept 256 MB deep)
# Slow consumers; the proxy's RSS (VmRSS) must stay within BP_LIMIT_MIB of
# its baseline while the client does not read, and the data must be intact
# once it does.
#  1. smbclient gets a large file into a FIFO whose reader does not read for
#     BP_STALL seconds (smbclient keeps only ~8 MiB of reads in flight).
#  2. bp_reader.py (impacket) puts BP_MIB MiB of 1 MiB READs in flight at
#     once and reads no response for BP_STALL seconds: smbd answers them
#     all, so a proxy that keeps reading upstream without bound grows by
#     ~BP_MIB MiB (a naive asyncio relay grew by 128 MiB; haproxy by 0).
. "$(dirname "$0")/lib.sh"

MIB=${BP_MIB:-128}
STALL=${BP_STALL:-8}
LIMIT_MIB=${BP_LIMIT_MIB:-64}
start_smbd
start_proxy
random_file "$SHARE_DIR/big" "$MIB"
chown "$SMB_USER" "$SHARE_DIR/big"
want=$(sha256 "$SHARE_DIR/big")
home=$(client_home bp)

# Warm up the proxy with a small transfer, then take the baseline.
head -c 1048576 "$SHARE_DIR/big" > "$T/small"
SMBC_HOME=$home smbc "$PROXY_PORT" SMB3_11 "put $T/small small; get small $T/small.back" \
    > "$T/warm.out" 2>&1 || { cat "$T/warm.out"; fail "warm-up transfer failed"; }
base=$(proxy_rss_kb)
info "proxy baseline VmRSS ${base} KiB"

mkfifo "$T/fifo"
# Reader: opens the FIFO at once but reads nothing until $T/go exists.
( exec 3<"$T/fifo"; while [ ! -e "$T/go" ]; do sleep 0.1; done; exec cat <&3 > "$T/out" ) &
reader=$!
BG_PIDS="$BG_PIDS $reader"
SMBC_HOME=$home smbc "$PROXY_PORT" SMB3_11 "get big $T/fifo" > "$T/get.out" 2>&1 &
client=$!
BG_PIDS="$BG_PIDS $client"

max=$base
end=$(( $(date +%s) + STALL ))
while [ "$(date +%s)" -lt "$end" ]; do
	r=$(proxy_rss_kb) || fail "proxy died during the stall"
	[ "$r" -gt "$max" ] && max=$r
	kill -0 "$client" 2>/dev/null || { cat "$T/get.out"; fail "smbclient ended during the stall"; }
	sleep 0.2
done
info "phase 1: during the stall: max VmRSS ${max} KiB (baseline ${base} KiB)"
echo "sockets during the stall (Recv-Q/Send-Q):"
ss -tn "( sport = :$PROXY_PORT or dport = :$PROXY_PORT or dport = :$SMBD_PORT )" | sed 's/^/  /'
if is_smbaccel; then
	echo "proxy s2c bytes so far: $(stat_get bytes_s2c) (file $((MIB * 1048576)))"
fi

touch "$T/go"
n=600
while kill -0 "$client" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
kill -0 "$client" 2>/dev/null && fail "transfer did not finish within 60 s after the stall"
wait "$client" || { cat "$T/get.out"; fail "smbclient get failed"; }
wait "$reader"
cat "$T/get.out"
assert_eq "$want" "$(sha256 "$T/out")" "sha256 of the file read through the stalled client"
grow=$(( (max - base) / 1024 ))
info "phase 1: VmRSS growth during the stall: ${grow} MiB (limit ${LIMIT_MIB} MiB)"
[ "$grow" -lt "$LIMIT_MIB" ] || fail "proxy RSS grew by ${grow} MiB while the client was stalled"
proxy_alive || fail "proxy died"

info "phase 2: $MIB MiB of READs in flight, client not reading for ${STALL}s"
base=$(proxy_rss_kb)
size=$((MIB * 1048576))
"$PY" "$TESTS_DIR/bp_reader.py" "$PROXY_PORT" share big "$size" "$T/go2" \
    "$SMB_USER" "$SMB_PASS" > "$T/bp.out" 2>&1 &
client=$!
BG_PIDS="$BG_PIDS $client"
n=300
until grep -q '^SENT' "$T/bp.out"; do
	kill -0 "$client" 2>/dev/null || { cat "$T/bp.out"; fail "bp_reader.py failed"; }
	n=$((n - 1)); [ $n -gt 0 ] || { cat "$T/bp.out"; fail "bp_reader.py sent nothing in 30 s"; }
	sleep 0.1
done
grep '^SENT' "$T/bp.out"
max=$base
end=$(( $(date +%s) + STALL ))
while [ "$(date +%s)" -lt "$end" ]; do
	r=$(proxy_rss_kb) || fail "proxy died during the stall"
	[ "$r" -gt "$max" ] && max=$r
	sleep 0.2
done
echo "sockets during the stall (Recv-Q/Send-Q):"
ss -tn "( sport = :$PROXY_PORT or dport = :$PROXY_PORT or dport = :$SMBD_PORT )" | sed 's/^/  /'
touch "$T/go2"
n=600
while kill -0 "$client" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
kill -0 "$client" 2>/dev/null && fail "bp_reader.py did not finish within 60 s after the stall"
wait "$client" || { cat "$T/bp.out"; fail "bp_reader.py failed"; }
cat "$T/bp.out"
got=$(sed -n 's/^SHA256 //p' "$T/bp.out")
want2=$(head -c "$size" "$SHARE_DIR/big" | sha256sum | cut -d' ' -f1)
assert_eq "$want2" "$got" "sha256 of the data read by the stalled pipelined client"
grow=$(( (max - base) / 1024 ))
info "phase 2: VmRSS ${base} -> max ${max} KiB: growth ${grow} MiB (limit ${LIMIT_MIB} MiB)"
[ "$grow" -lt "$LIMIT_MIB" ] || fail "proxy RSS grew by ${grow} MiB while the pipelined client was stalled"
proxy_alive || fail "proxy died"
info "PASS"
