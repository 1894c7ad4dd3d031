#!/bin/bash
# test-timeout: 120
# A CANCEL of a READ that waits for smbaccel's own read-ahead fetch
# (ra_cancel.py; slowfetch.py between smbaccel and smbd holds the answers
# to the fetches for 2 s).  Directly smbd completes the READ (SUCCESS,
# the data: it does not cancel a READ it has started); through smbaccel
# the READ waits for the fetch, the CANCEL is dropped (the READ is
# smbaccel's to answer, DESIGN.md section 3 rule 6), and the READ is
# answered SUCCESS with the data once the fetch arrives, as directly;
# reading on works.  A server that never answers the fetches: the READ
# waits until the server watchdog closes the connection (server_timeout,
# 3 s here), not for ever.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "CANCEL of a READ waiting for read-ahead"
export WB_SMB_TIMEOUT=20

start_smbd
share_file_a cancel-direct
out=$(timeout 60 "$PY" "$TESTS_DIR/ra_cancel.py" "$SMBD_PORT" cancel-direct 2>&1) ||
    fail "ra_cancel.py fails directly against smbd: $out"
info "direct: $(echo $out)"

RELAY_PORT=$(free_port) || fail "no free port"
bg "$PY" "$TESTS_DIR/slowfetch.py" "$RELAY_PORT" "$SMBD_PORT" 2 2>>"$T/slowfetch.log"
wait_port "$RELAY_PORT" 10 || fail "slowfetch.py is not accepting"
PROXY_UPSTREAM=127.0.0.1:$RELAY_PORT PROXY_SHARE_SECTION=no start_proxy "" "[share share]" "write_behind = off" "read_ahead = always" > /dev/null
share_file_a cancel-proxy
w0=$(stat_get ra_waits)
out=$(timeout 60 "$PY" "$TESTS_DIR/ra_cancel.py" "$PROXY_PORT" cancel-proxy 2>&1)
rc=$?
info "through smbaccel: $(echo $out) (ra_waits +$(( $(stat_get ra_waits) - w0 )))"
[ $rc -eq 0 ] || fail "answers differ from direct: $out"
grep -q "held" "$T/slowfetch.log" || fail "slowfetch.py held no fetch"
assert_ge 1 $(( $(stat_get ra_waits) - w0 )) "reads that waited for a fetch (stats ra_waits)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
stop_proxy

# a server that never answers the fetches: the READ waits until the
# server watchdog (server_timeout) closes the connection
R2=$(free_port) || fail "no free port"
bg "$PY" "$TESTS_DIR/slowfetch.py" "$R2" "$SMBD_PORT" never 2>>"$T/slowfetch2.log"
wait_port "$R2" 10 || fail "slowfetch.py never is not accepting"
PROXY_UPSTREAM=127.0.0.1:$R2 PROXY_SHARE_SECTION=no start_proxy "server_timeout = 3s" "[share share]" "write_behind = off" "read_ahead = always" > /dev/null
share_file_a cancel-never
t0=$(now)
out=$(timeout 60 "$PY" "$TESTS_DIR/ra_cancel.py" "$PROXY_PORT" cancel-never 2>&1)
rc=$?
info "never: exit $rc after $(elapsed "$t0") s: $(echo "$out" | tail -n 1)"
[ $rc -ne 0 ] || fail "never: the READ was answered, but no fetch was: $out"
grep -q "held" "$T/slowfetch2.log" || fail "never: slowfetch.py held no fetch"
wait_log "server sent nothing for .* \(server_timeout 3000 ms\): closing" 10 ||
    fail "never: the server watchdog did not close the connection"
proxy_alive || fail "proxy died"
info "PASS"
