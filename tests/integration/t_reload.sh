#!/bin/bash
# Config check and reload: `smbaccel -t` prints FILE:LINE: for each bad
# line and exits non-zero, 0 for a good file; SIGHUP with a bad file logs
# the error with its line and keeps serving with the old policy; SIGHUP
# with a good file logs the reload and the new policy is in force.
. "$(dirname "$0")/lib.sh"
require_smbaccel "config check and reload"

start_smbd
start_proxy

# --- smbaccel -t
PROXY_SHARE_SECTION=no write_proxy_conf "$T/good.conf" "" "[share share]" "write_behind = off"
out=$("$SMBACCEL" -t -c "$T/good.conf" 2>&1) || fail "-t rejects a good file: $out"
info "-t good.conf: exit 0 ${out:+($out)}"

# Line numbers: 1 [global] 2 listen 3 upstream 4 mode 5 control_socket
# 6 (empty) 7 [share share] 8 the bad value
PROXY_SHARE_SECTION=no write_proxy_conf "$T/bad.conf" "" "[share share]" "write_behind = sometimes"
assert_eq "write_behind = sometimes" "$(sed -n 8p "$T/bad.conf")" "bad.conf line 8"
if out=$("$SMBACCEL" -t -c "$T/bad.conf" 2>&1); then
	fail "-t accepts bad.conf (write_behind = sometimes): $out"
fi
echo "$out"
echo "$out" | grep -q 'bad\.conf:8:' || fail "-t output lacks 'bad.conf:8:': $out"

# A line that is not INI at all, at line 6.
PROXY_SHARE_SECTION=no write_proxy_conf "$T/bad2.conf" "this line is not ini"
if out=$("$SMBACCEL" -t -c "$T/bad2.conf" 2>&1); then
	fail "-t accepts bad2.conf (garbage line 6): $out"
fi
echo "$out"
echo "$out" | grep -q 'bad2\.conf:6:' || fail "-t output lacks 'bad2.conf:6:': $out"

# An unknown setting and an out-of-range value: non-zero exit, with lines.
PROXY_SHARE_SECTION=no write_proxy_conf "$T/bad3.conf" "no_such_setting = 1" "connect_timeout = -5s"
if out=$("$SMBACCEL" -t -c "$T/bad3.conf" 2>&1); then
	fail "-t accepts bad3.conf (unknown key line 6, bad timeout line 7): $out"
fi
echo "$out"
echo "$out" | grep -qE 'bad3\.conf:(6|7):' || fail "-t output lacks 'bad3.conf:6:' or ':7:': $out"

# --- SIGHUP
home=$(client_home reload)
random_file "$T/orig" 2
want=$(sha256 "$T/orig")
transfer() {	# transfer NAME
	SMBC_HOME=$home smbc "$PROXY_PORT" SMB3_11 "put $T/orig $1; get $1 $T/back-$1" \
	    > "$T/$1.out" 2>&1 || { cat "$T/$1.out"; fail "transfer $1 failed"; }
	assert_eq "$want" "$(sha256 "$SHARE_DIR/$1")" "$1: sha256 on disk"
	assert_eq "$want" "$(sha256 "$T/back-$1")" "$1: sha256 read back"
}
shares() { ctl shares --json 2>/dev/null || ctl shares 2>/dev/null; }
transfer before
policy0=$(shares) || policy0=
[ -n "$policy0" ] || info "smbaccelctl shares gives nothing: old/new policy compared by serving only"

lines=$(wc -l < "$PROXY_LOG")
cp "$PROXY_CONF" "$T/orig.conf"
PROXY_SHARE_SECTION=no write_proxy_conf "$PROXY_CONF" "" "[share share]" "write_behind = sometimes"
kill -HUP "$PROXY_PID"
n=50
until tail -n +$((lines + 1)) "$PROXY_LOG" | grep -q 'smbaccel\.conf:8:'; do
	n=$((n - 1)); [ $n -gt 0 ] || fail "no 'smbaccel.conf:8:' in the log after SIGHUP with a bad file"
	sleep 0.1
done
tail -n +$((lines + 1)) "$PROXY_LOG"
proxy_alive || fail "proxy died on SIGHUP with a bad file"
transfer after-bad
if [ -n "$policy0" ]; then
	assert_eq "$policy0" "$(shares)" "policy after a rejected reload"
fi

lines=$(wc -l < "$PROXY_LOG")
PROXY_SHARE_SECTION=no write_proxy_conf "$PROXY_CONF" "" "[share share]" "write_behind = off" "read_ahead = off"
kill -HUP "$PROXY_PID"
n=50
until tail -n +$((lines + 1)) "$PROXY_LOG" | grep -i 'reload' | grep -qviE 'fail|error|invalid|keep|reject'; do
	n=$((n - 1)); [ $n -gt 0 ] || fail "no reload line in the log after SIGHUP with a good file"
	sleep 0.1
done
tail -n +$((lines + 1)) "$PROXY_LOG"
proxy_alive || fail "proxy died on SIGHUP with a good file"
transfer after-good
if [ -n "$policy0" ]; then
	[ "$policy0" != "$(shares)" ] || fail "policy unchanged after a good reload: $(shares)"
fi
info "PASS"
