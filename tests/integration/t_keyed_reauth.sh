#!/bin/bash
# test-timeout: 180
# Re-authentication of an established keyed session (keyed_reauth.py,
# impacket at SMB 3.0; the proxy holds the user's secret):
#  - refused (a wrong password): the server deletes the session with its
#    opens (MS-SMB2 3.3.5.5.3), so the session's later READ and WRITE get
#    what they get directly (an error), not an answer from smbaccel's
#    caches; the two writes acknowledged before it are on smbd's disk
#    (smbaccel writes what it acknowledged before it lets a
#    re-authentication go); counted sessions_reauth_refused, logged;
#  - accepted, on a server that requires encryption: the session stays
#    encrypted in smbaccel's view (smbd answers a re-authentication with
#    SessionFlags 0; before the fix that cleared it).
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "keyed sessions"
"$PY" -c 'import impacket' 2>/dev/null || skip "python3-impacket not installed"

start_smbd "server signing = mandatory"
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
start_keyed_proxy "secrets = $T/secrets"
head -c 1048576 /dev/urandom > "$SHARE_DIR/big"
chown "$SMB_USER" "$SHARE_DIR/big"

dir=$(timeout 60 "$PY" "$TESTS_DIR/keyed_reauth.py" "$SMBD_PORT" fail 2>&1) ||
    fail "keyed_reauth.py fail directly: $dir"
r0=$(stat_get sessions_reauth_refused)
out=$(timeout 60 "$PY" "$TESTS_DIR/keyed_reauth.py" "$PROXY_PORT" fail 2>&1) ||
    fail "keyed_reauth.py fail through smbaccel: $out"
info "refused re-authentication: directly $dir; through smbaccel $out"
case $dir in
reauth=OK*|*read=OK*|*write=OK*) fail "directly: the refused re-authentication did not end the session ($dir): test bug or smbd" ;;
esac
assert_eq "$dir" "$out" "after a refused re-authentication, through smbaccel as directly"
want=$( { head -c 1024 /dev/zero | tr '\0' A; head -c 1024 /dev/zero | tr '\0' B; } | sha256sum | cut -d' ' -f1)
assert_eq "$want" "$(head -c 2048 "$SHARE_DIR/reauth.txt" | sha256sum | cut -d' ' -f1)" \
    "the 2 KiB acknowledged before the re-authentication, on smbd's disk"
assert_eq $((r0 + 1)) "$(stat_get sessions_reauth_refused)" "stats sessions_reauth_refused"
log_has "refused the client's re-authentication" || fail "no log line for the refused re-authentication"

stop_proxy
stop_smbd
start_smbd "server smb encrypt = required"
start_keyed_proxy "secrets = $T/secrets"
out=$(timeout 60 "$PY" "$TESTS_DIR/keyed_reauth.py" "$PROXY_PORT" flags \
    "$SMBACCELCTL" -s "$CTL_SOCK" 2>&1) || fail "keyed_reauth.py flags: $out"
info "accepted re-authentication, server requires encryption: $out"
assert_eq "encrypt=True,True" "$out" "the session's encrypt flag before and after the re-authentication"
want=$( { head -c 1024 /dev/zero | tr '\0' A; head -c 1024 /dev/zero | tr '\0' B; } | sha256sum | cut -d' ' -f1)
assert_eq "$want" "$(sha256 "$SHARE_DIR/reauth-flags.txt")" "reauth-flags.txt on smbd's disk"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
