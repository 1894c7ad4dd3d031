#!/bin/bash
# tests/fuzz/mkseeds.sh - regenerate tests/fuzz/seeds/{frame,smb2,relay,ntlm}
# from real sessions (run by hand after `make`; not part of make check).
#
# Starts the integration harness's smbd and bin/smbaccel (write_behind and
# read_ahead = always), captures loopback with dumpcap while smbclient and
# smbdd (libsmbclient) run small sessions at several dialects, and cuts the
# capture into seeds with mkseeds.py.  The policy seeds (seeds/policy/) are
# written by hand and left alone.
. "$(dirname "$0")/../integration/lib.sh"

SEEDS=${SEEDS_DIR:-$TOP/tests/fuzz/seeds}
command -v dumpcap >/dev/null || fail "dumpcap not installed"
start_smbd
start_proxy "read_ahead = always"
home=$(client_home seeds)

dumpcap -q -B 64 -i lo -f "tcp port $PROXY_PORT or tcp port $SMBD_PORT" \
    -w "$T/cap.pcapng" > "$T/dumpcap.out" 2>&1 &
cap=$!
sleep 1
head -c 3000 /dev/urandom > "$T/small"
for d in SMB3_11 SMB3_00 SMB2_10 SMB2_02; do
	SMBC_HOME=$home smbc "$PROXY_PORT" "$d" \
	    "mkdir dir$d; put $T/small dir$d/f; ls dir$d/*; get dir$d/f $T/back; rm dir$d/f; rmdir dir$d" \
	    > "$T/smbc.out" 2>&1 || { cat "$T/smbc.out"; fail "smbclient $d"; }
	SMBC_HOME=$home smbdd_run write "$PROXY_PORT" "dd$d" 1K 40 -m "$d" -q > /dev/null ||
	    fail "smbdd write $d"
	SMBC_HOME=$home smbdd_run verify "$PROXY_PORT" "dd$d" 4K 10 -m "$d" -q > /dev/null ||
	    fail "smbdd verify $d"
done
# writes followed by a FLUSH or a QUERY_INFO, and renames and deletes in
# both forms: the requests smbaccel sends with their file's flush
for m in flush query; do
	"$PY" "$TESTS_DIR/cmp_close.py" "$PROXY_PORT" "$SMBD_CONF" $m "seed-$m" > /dev/null ||
	    fail "cmp_close.py $m"
done
"$PY" "$TESTS_DIR/wb_infoex.py" "$PROXY_PORT" "$SHARE_DIR" 3.0 > /dev/null || fail "wb_infoex.py"
sleep 1
kill -INT "$cap"; wait "$cap"
rm -rf "$SEEDS/frame" "$SEEDS/smb2" "$SEEDS/relay" "$SEEDS/ntlm"
"$PY" "$TOP/tests/fuzz/mkseeds.py" "$T/cap.pcapng" "$PROXY_PORT" "$SMBD_PORT" "$SEEDS" ||
    fail "mkseeds.py"
du -sh "$SEEDS"
