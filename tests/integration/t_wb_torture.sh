#!/bin/bash
# test-timeout: 1200
# Issue 3 test 8 and issue 4 test 6: smbtorture suites directly against
# smbd and through the proxy with write_behind = always and read_ahead =
# always (one proxy configuration: "wb+ra"; TORTURE_CONFIGS can add e.g.
# "wb|always|off ra|off|always"), sequentially, same run: the per-test
# results must be identical.  smb2.oplock and smb2.lease are in
# t_wb_torture_long.sh.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
. "$TESTS_DIR/wb_torture.sh"
require_smbaccel "write-behind / read-ahead parity"

SUITES=${WB_TORTURE_SUITES:-smb2.connect smb2.read smb2.lock smb2.compound smb2.credits smb2.getinfo smb2.setinfo smb2.rw}
TORTURE_CONFIGS=${TORTURE_CONFIGS:-wb+ra|always|always}
start_smbd
restart_proxy_with always always
torture_parity $SUITES || fail "smbtorture results differ between direct and proxied runs"
info "stats: $(stats_line writes_absorbed writes_forwarded ra_hits ra_fetches deferred_errors ledger_errors)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
info "PASS"
