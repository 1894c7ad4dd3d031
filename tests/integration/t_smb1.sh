#!/bin/bash
# SMB1 (NT1) through the proxy: smbd allows NT1, smbclient forces NT1; a
# 4 MiB put/get must be intact (disk and read-back checksums).  smbaccel
# must relay it opaquely: stats opaque.smb1 >= 1 and a log line reason=smb1.
. "$(dirname "$0")/lib.sh"

start_smbd "server min protocol = NT1"
start_proxy
random_file "$T/orig" 4
want=$(sha256 "$T/orig")

home=$(client_home smb1 "client min protocol = NT1")
SMBC_HOME=$home smbc "$PROXY_PORT" NT1 \
    "put $T/orig smb1file; get smb1file $T/back" > "$T/smbclient.log" 2>&1 ||
    { cat "$T/smbclient.log"; fail "smbclient NT1 through the proxy failed"; }
cat "$T/smbclient.log"
assert_eq "$want" "$(sha256 "$SHARE_DIR/smb1file")" "sha256 on smbd's disk"
assert_eq "$want" "$(sha256 "$T/back")" "sha256 of the copy read back"

# Prove the session really was SMB1: smbstatus while connected.
printf '%s\n' "!smbstatus -s $SMBD_CONF -b > $T/status 2>&1" "ls" |
    HOME=$home smbclient //127.0.0.1/share -p "$PROXY_PORT" -U "$SMB_USER%$SMB_PASS" \
    -s "$home/.smb/smb.conf" -m NT1 --option='client min protocol=NT1' --option='client max protocol=NT1' \
    > "$T/smbclient2.log" 2>&1 || { cat "$T/smbclient2.log"; fail "second NT1 session failed"; }
grep -qw NT1 "$T/status" || { cat "$T/status"; fail "smbstatus does not show an NT1 session"; }

if is_smbaccel; then
	n=$(stat_get opaque.smb1) || fail "smbaccelctl stats --json failed"
	assert_ge 1 "$n" "stats opaque.smb1"
	wait_log 'reason=smb1' 5 || fail "no 'reason=smb1' line in the proxy log"
	grep -E 'reason=smb1' "$PROXY_LOG" | head -3
else
	info "stand-in relay: opaque/log checks skipped"
fi
proxy_alive || fail "proxy died"
info "PASS"
