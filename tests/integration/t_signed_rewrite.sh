#!/bin/bash
# test-timeout: 180
# A server that signs an answer to a request smbaccel changed, in a session
# smbaccel holds no key for (docs/design.md "What may be altered"): impacket's
# server patched to sign its large READ answers only (signs_reads_server.py),
# so that its TREE_CONNECT and small READ answers make it look like a server
# that signs only what it must.  With read_ahead = always smbaccel widens a
# sequential 4 KiB READ; the 64 KiB answer arrives signed and can be neither
# cut back nor re-signed.  Expected: that connection is closed with reason
# cannot-sign (never no-memory), the client gets an error and never wrong
# bytes, the server is remembered, and a new connection to it reads the whole
# file intact with no request widened.
. "$(dirname "$0")/lib.sh"

IMP_SERVER=$TESTS_DIR/signs_reads_server.py start_impacket_server
random_file "$IMP_DIR/doc" 1
want=$(sha256 "$IMP_DIR/doc")

PROXY_UPSTREAM=127.0.0.1:$IMP_PORT
PROXY_SHARE_SECTION=no
start_proxy "read_ahead = always" "write_behind = always"

# direct: the server itself is fine with a 4 KiB reader
"$PY" "$TESTS_DIR/rd_seq.py" "$IMP_PORT" "$SMB_USER" "$SMB_PASS" share doc "$T/direct" ||
    fail "direct read failed"
assert_eq "$want" "$(sha256 "$T/direct")" "sha256 read directly"

# 1: the widened READ's answer arrives signed
"$PY" "$TESTS_DIR/rd_seq.py" "$PROXY_PORT" "$SMB_USER" "$SMB_PASS" share doc "$T/first" &&
    fail "the first read through smbaccel succeeded: no READ was widened, or the signed answer was passed on"
n=$(stat -c %s "$T/first")
cmp -s -n "$n" "$T/first" "$IMP_DIR/doc" || fail "the client got bytes that differ from the file before the connection closed"
info "first read: the connection was closed after $n correct bytes"
wait_log 'reason=cannot-sign' 5 || fail "no close with reason=cannot-sign in the log"
log_has 'signed its answer to a READ smbaccel changed' || fail "no log line naming the cause"
log_has 'reason=no-memory' && fail "a connection was closed as no-memory"
assert_eq 1 "$(stat_get closed.cannot-sign)" "stats closed.cannot-sign"
assert_eq 0 "$(stat_get closed.no-memory)" "stats closed.no-memory"
widened=$(stat_get ra_widened)
assert_eq 1 "$widened" "READs widened before the server was known to sign them"

# 2: the server is remembered: nothing widened, the file read intact
"$PY" "$TESTS_DIR/rd_seq.py" "$PROXY_PORT" "$SMB_USER" "$SMB_PASS" share doc "$T/second" ||
    fail "the second read through smbaccel failed"
assert_eq "$want" "$(sha256 "$T/second")" "sha256 read through smbaccel after the server was remembered"
assert_eq "$widened" "$(stat_get ra_widened)" "READs widened after the server was remembered"
assert_eq 1 "$(stat_get closed.cannot-sign)" "connections closed as cannot-sign in all"
proxy_alive || fail "smbaccel died"
info "cannot-sign closes the connection, the server is remembered, later reads are intact"
