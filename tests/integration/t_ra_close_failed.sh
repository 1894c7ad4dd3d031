#!/bin/bash
# test-timeout: 120
# A CLOSE the server fails without closing the handle (ra_closefail.py):
# the CLOSE names the open with a TreeId, or a SessionId, that names none
# (tree, session: NETWORK_NAME_DELETED, USER_SESSION_DELETED), or names it
# from its own session and tree with a bad signature in a signed session
# (signature: ACCESS_DENIED; smbaccel holds the session's key, so it acts
# on it) or with an undefined header flag (flags: INVALID_PARAMETER).
# smbd answers each before it looks for the open, which stays open.  The
# handle is then written through, while another handle of the file on
# the same connection reads it sequentially with read-ahead
# (read_ahead = always, write_behind off and always): the reader must see
# what was written, as directly.  smbaccel forgot the open at any answer
# to its CLOSE, so the WRITE went by as one on an unknown handle and the
# reader was served the bytes read-ahead held from before it; until
# 2026-12-08 it still did when the CLOSE came on the open's own session
# and tree (signature, flags).
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "read-ahead after a failed CLOSE"
export WB_SMB_TIMEOUT=20

MODES=${CF_MODES:-tree session signature flags}
start_smbd
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
for m in $MODES; do
	share_file_a "cf-direct-$m"
	out=$(timeout 60 "$PY" "$TESTS_DIR/ra_closefail.py" "$SMBD_PORT" "cf-direct-$m" $m 2>&1) ||
	    fail "ra_closefail.py $m fails directly against smbd: $out"
	info "direct: $(echo $out)"
done
for wb in off always; do
	PROXY_SHARE_SECTION=no start_proxy "secrets = $T/secrets" "[share share]" \
	    "write_behind = $wb" "read_ahead = always" > /dev/null
	for m in $MODES; do
		share_file_a "cf-$wb-$m"
		h0=$(stat_get ra_hits)
		out=$(timeout 60 "$PY" "$TESTS_DIR/ra_closefail.py" "$PROXY_PORT" "cf-$wb-$m" $m 2>&1)
		rc=$?
		info "write_behind = $wb: $(echo $out) (ra_hits +$(( $(stat_get ra_hits) - h0 )))"
		[ $rc -eq 0 ] || fail "write_behind = $wb, $m: reads or statuses differ from direct: $out"
		assert_ge 1 $(( $(stat_get ra_hits) - h0 )) "write_behind = $wb, $m: reads served by read-ahead"
	done
	assert_eq 0 "$(stat_get ledger_errors)" "write_behind = $wb: stats ledger_errors"
	proxy_alive || fail "proxy died"
	stop_proxy
done
info "PASS"
