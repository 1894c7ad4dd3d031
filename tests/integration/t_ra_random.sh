#!/bin/bash
# test-timeout: 300
# Issue 4 test 3: smbdd -r reads a 16 MiB (RA_RANDOM_MIB) file in 4 KiB
# blocks in a random (seeded) order through the proxy with read_ahead =
# always, at 3.1.1 and 2.0.2: every byte checked by smbdd; the READ
# responses on the proxy -> smbd leg (dumpcap + upstream-sizes) carried at
# most 1.1 x the bytes the client read.  Then the same file read in 64 KiB
# blocks in random order (no read-ahead either).
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "read-ahead"

MIB=${RA_RANDOM_MIB:-16}
start_smbd
PROXY_SHARE_SECTION=no start_proxy "" "[share share]" "write_behind = off" "read_ahead = always"
seed=$((RANDOM + 9))
out=$(smbdd_run write "$SMBD_PORT" ra-rand 1M "$MIB" -s "$seed" -q 2>&1) || fail "cannot write the file directly: $out"

for run in "SMB3_11 4K" "SMB2_02 4K" "SMB3_11 64K"; do
	set -- $run
	d=$1 bs=$2
	n=$(( MIB * 1048576 / ${bs%K} / 1024 ))
	capture_start "rand-$d-$bs"
	out=$(timeout 200 env HOME="$(client_home smbdd)" "$SMBDD" read "$(smb_url "$PROXY_PORT" ra-rand)" "$bs" "$n" \
	    -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$seed" -r -q 2>&1)
	rc=$?
	capture_stop
	[ $rc -eq 0 ] || fail "$d $bs: random reads through the proxy failed or saw wrong bytes: $out"
	info "$d $bs random: $(echo "$out" | tail -n 1)"
	upstream_sizes 1 "$T/rand-$d-$bs.json"
	"$PY" - "$T/rand-$d-$bs.json" $((MIB * 1048576)) "$d $bs" <<'PYEOF' || fail "$d $bs: too many bytes read upstream (above)"
import json, sys
r = json.load(open(sys.argv[1]))["read"]
client, label = int(sys.argv[2]), sys.argv[3]
print("%s: upstream %d READs asked %d bytes, responses carried %d bytes: %.3f x the client's %d"
      % (label, r["count"], r["requested_bytes"], r["response_bytes"], r["response_bytes"] / client, client))
sys.exit(0 if r["response_bytes"] <= 1.1 * client and r["requested_bytes"] <= 1.1 * client else 1)
PYEOF
	rm -f "$CAP_FILE"
done
info "stats: $(stats_line ra_hits ra_widened ra_fetches ra_fetch_bytes ra_invalidations.random ledger_errors)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
