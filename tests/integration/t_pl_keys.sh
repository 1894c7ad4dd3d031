#!/bin/bash
# test-timeout: 120
# The key of the lease smbaccel asks for a client that asks none (lease.c:
# one key per client, server, share and path) where a name and a file part
# (pl_keys.py, impacket + raw SMB2, no lease asked; default policy):
#  - elsewhere (3.0, 2.1): a file the client keeps open is renamed by a
#    client that does not go through smbaccel, and a new file created at
#    its name; the lease went with the renamed file, so the client's next
#    CREATE of the name, asking that key, is refused INVALID_PARAMETER,
#    where directly it succeeds.  Known limit: that one CREATE still is;
#    the next asks another key and succeeds (before 2026-12-07 every later
#    CREATE of the name was refused too).
# Each compared with a direct run where the result is smbaccel's alone;
# the files on smbd's disk are checked.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "lease keys of smbaccel's leases across renames and case"

start_smbd
PROXY_SHARE_SECTION=no start_proxy "" "[share share]" "flush_idle = 300ms"

pattern() {	# pattern CHAR BYTES: sha256 of BYTES bytes of CHAR
	head -c "$2" /dev/zero | tr '\0' "$1" | sha256sum | cut -d' ' -f1
}

keys() {	# keys PORT DIALECT CASE: pl_keys.py's output; fails on its failure
	local out
	out=$(WB_SMB_TIMEOUT=90 timeout 120 "$PY" "$TESTS_DIR/pl_keys.py" "$1" "$SMBD_PORT" "$2" "$3" 2>&1) ||
	    fail "pl_keys.py $3 $2 on port $1: $out"
	echo "$out"
}

for d in 3.0 2.1; do
	rm -f "$SHARE_DIR"/kr-*
	dir=$(keys "$SMBD_PORT" "$d" elsewhere)
	rm -f "$SHARE_DIR"/kr-*
	out=$(keys "$PROXY_PORT" "$d" elsewhere)
	info "elsewhere $d: directly $dir; through smbaccel $out"
	assert_eq "rename=0x00000000 open=0x00000000 again=-" "$dir" "elsewhere $d directly"
	[ "$out" = "$dir" ] || [ "$out" = "rename=0x00000000 open=0xc000000d again=0x00000000" ] ||
	    problem "elsewhere $d through smbaccel: '$out' (directly '$dir'; at most the first CREATE may fail)"
	[ "$(sha256 "$SHARE_DIR/kr-b")" = "$(pattern A 8192)" ] || problem "elsewhere $d: kr-b is not the first file's 8 KiB"
	[ "$(sha256 "$SHARE_DIR/kr-a")" = "$(pattern D 1024)" ] || problem "elsewhere $d: kr-a is not the 1 KiB written through the open that succeeded"
done
log_has "renamed away by a client smbaccel does not see" || problem "no log line for the key refused after a rename elsewhere"

info "stats: $(stats_line proxy_leases_asked proxy_leases_granted proxy_lease_breaks proxy_lease_breaks_acked breaks_unacked writes_absorbed deferred_errors ledger_errors)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
assert_eq 0 "$(stat_get deferred_errors)" "stats deferred_errors"
problems_end
proxy_alive || fail "proxy died"
info "PASS"
