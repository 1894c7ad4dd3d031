#!/bin/bash
# test-timeout: 1500
# The slow part of t_wb_torture.sh: smb2.oplock and smb2.lease (about 110 s
# and 185 s per run) directly and through the proxy with write_behind =
# always and read_ahead = always, same run, per-test results identical.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
. "$TESTS_DIR/wb_torture.sh"
require_smbaccel "write-behind / read-ahead parity"

SUITES=${WB_TORTURE_SUITES:-smb2.oplock smb2.lease}
TORTURE_CONFIGS=${TORTURE_CONFIGS:-wb+ra|always|always}
start_smbd
restart_proxy_with always always
torture_parity $SUITES || fail "smbtorture results differ between direct and proxied runs"
info "stats: $(stats_line writes_absorbed writes_forwarded ra_hits ra_fetches deferred_errors ledger_errors)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
info "PASS"
