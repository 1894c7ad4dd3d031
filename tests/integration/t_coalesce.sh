#!/bin/bash
# Write coalescing seen on the wire: smbdd writes 16 MiB in 1 KiB writes
# through the proxy (write_behind = always); dumpcap records the proxy ->
# smbd leg and tests/tools/upstream-sizes counts the upstream WRITEs.  At
# least COALESCE_MIN_FRACTION of the written bytes must travel in WRITEs of
# >= 64 KiB (at 2.0.2 a WRITE cannot exceed 64 KiB: >= 60 KiB there), and
# no WRITE may exceed the dialect's limit; the file must verify directly.
. "$(dirname "$0")/lib.sh"
require_smbaccel "write coalescing"

DIALECTS=${COALESCE_DIALECTS:-SMB3_11 SMB2_02}
MINFRAC=${COALESCE_MIN_FRACTION:-0.9}
MIB=16
command -v dumpcap >/dev/null || skip "dumpcap not installed"
start_smbd
start_proxy
seed=$((RANDOM + 1))

for d in $DIALECTS; do
	cap=$T/up-$d.pcapng
	dumpcap -B 256 -i lo -f "tcp port $SMBD_PORT" -w "$cap" > "$T/dumpcap-$d.log" 2>&1 &
	dc=$!
	BG_PIDS="$BG_PIDS $dc"
	n=100
	until grep -q 'Capturing on' "$T/dumpcap-$d.log"; do
		n=$((n - 1)); [ $n -gt 0 ] || fail "dumpcap did not start: $(cat "$T/dumpcap-$d.log")"
		sleep 0.1
	done
	out=$(smbdd_run write "$PROXY_PORT" "c-$d" 1K $((MIB * 1024)) -m "$d" -s "$seed" -q 2>&1) ||
	    fail "smbdd write via proxy ($d) failed: $out"
	echo "$d proxy write 1K: $(echo "$out" | tail -n 1)"
	sleep 0.5
	kill -INT "$dc"; wait "$dc"
	out=$(smbdd_run verify "$SMBD_PORT" "c-$d" 64K $((MIB * 16)) -s "$seed" -q 2>&1) ||
	    fail "$d: file written through the proxy does not verify directly: $out"

	case $d in SMB2_02) min=61440 max=65536 ;; *) min=65536 max=8388608 ;; esac
	"$TOP/tests/tools/upstream-sizes" --min "$min" "$cap" "$SMBD_PORT" > "$T/sizes-$d.json" ||
	    fail "upstream-sizes failed on $cap"
	"$PY" - "$T/sizes-$d.json" "$MINFRAC" "$max" "$((MIB * 1048576))" "$d" <<'PYEOF' || fail "$d: upstream WRITE sizes (above)"
import json, sys
j = json.load(open(sys.argv[1]))
minfrac, maxw, total, d = float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
w = j["write"]
big = max((int(k) for k in w["histogram"]), default=0)
print("%s upstream: %d WRITEs, %d bytes, mean %s, %.1f%% of bytes in WRITEs >= %d, largest %d; other %s"
      % (d, w["count"], w["bytes"], w["mean"], 100 * (w["fraction_bytes_ge_min"] or 0),
         w["min"], big, j["other"]))
ok = True
if w["bytes"] < total:
    print("  FAIL: only %d of %d bytes went upstream in WRITEs" % (w["bytes"], total)); ok = False
if (w["fraction_bytes_ge_min"] or 0) < minfrac:
    print("  FAIL: fraction below %.2f; histogram %s" % (minfrac, w["histogram"])); ok = False
if big > maxw:
    print("  FAIL: a WRITE of %d bytes exceeds %d at %s" % (big, maxw, d)); ok = False
sys.exit(0 if ok else 1)
PYEOF
done
echo "stats: $(ctl stats --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print({k: d.get(k) for k in ("writes_absorbed","upstream_writes","upstream_write_mean","upstream_echoes","ledger_errors")})')"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
