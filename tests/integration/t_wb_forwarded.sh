#!/bin/bash
# test-timeout: 300
# Issue 3 test 4 (write_behind = always): writes the proxy must forward.
# (1) wb_forwarded.py errors: writes with an unknown or closed FileId, a
#     wrong TreeId or SessionId, on opens without write access (read-only,
#     GENERIC_READ, append-only), another connection's FileId, malformed
#     ones (channel, DataOffset, Length, offset overflow), on a directory
#     handle, after TREE_DISCONNECT, on a MAXIMUM_ALLOWED open: each
#     status (and the data read back) through the proxy must equal the
#     status smbd gives directly; a write + read on a good open after each
#     case must still work.
# (2) wb_forwarded.py wt: 64 WRITE_THROUGH writes and 64 writes on a
#     FILE_WRITE_THROUGH open reach smbd one for one (dumpcap on the
#     upstream leg: exactly 128 WRITEs of 1 KiB), none absorbed.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "write-behind"

DIALECTS=${WB_FWD_DIALECTS:-3.0 2.1}
PARTS=${WB_FWD_PARTS:-errors wt}
export WB_SMB_TIMEOUT=20
start_smbd
start_proxy

for d in $DIALECTS; do
    case " $PARTS " in *" errors "*)
	timeout 90 "$PY" "$TESTS_DIR/wb_forwarded.py" "$SMBD_PORT" "$d" "direct-$d" errors > "$T/direct-$d.out" 2>&1 ||
	    { cat "$T/direct-$d.out"; fail "$d: wb_forwarded.py fails directly against smbd"; }
	timeout 90 "$PY" "$TESTS_DIR/wb_forwarded.py" "$PROXY_PORT" "$d" "proxy-$d" errors > "$T/proxy-$d.out" 2>&1
	rc=$?
	if ! diff "$T/direct-$d.out" "$T/proxy-$d.out" > "$T/diff-$d" || [ $rc -ne 0 ]; then
		echo "$d: statuses differ (< direct, > proxy; exit $rc):"
		grep '^[<>]' "$T/diff-$d" | grep -v '^> *File\|^> *\^\|^>  ' | head -20
		[ $rc -eq 124 ] && echo "  the proxied run hung (timeout) after: $(grep -v '^ \|^Trace\|^$' "$T/proxy-$d.out" | grep status | tail -n 1)"
		fail "$d: writes the server must answer got different answers through the proxy"
	fi
	info "$d: $(wc -l < "$T/proxy-$d.out") cases answered as directly"
	;; esac
	case " $PARTS " in *" wt "*) ;; *) continue ;; esac

	a0=$(stat_get writes_absorbed) f0=$(stat_get writes_forwarded)
	capture_start "wt-$d"
	out=$(timeout 60 "$PY" "$TESTS_DIR/wb_forwarded.py" "$PROXY_PORT" "$d" "wt-$d" wt 2>&1)
	rc=$?
	capture_stop
	[ $rc -eq 0 ] || fail "$d: write-through run failed: $out"
	a1=$(stat_get writes_absorbed) f1=$(stat_get writes_forwarded)
	upstream_sizes 1024 "$T/wt-$d.json"
	hist=$("$PY" -c 'import json,sys; w=json.load(open(sys.argv[1]))["write"]; print(w["count"], w["histogram"])' "$T/wt-$d.json")
	info "$d write-through: upstream WRITEs (count, sizes): $hist; absorbed $((a1 - a0)), forwarded $((f1 - f0))"
	assert_eq "128 {'1024': 128}" "$hist" "$d: upstream WRITEs for 128 write-through writes of 1 KiB"
	assert_eq 0 $((a1 - a0)) "$d: write-through writes absorbed"
	cmp -s "$SHARE_DIR/wt-$d-wt" <("$PY" -c 'import sys; sys.stdout.buffer.write(b"".join(bytes([i]) * 1024 for i in range(64)))') ||
	    fail "$d: content of the write-through file"
	rm -f "$CAP_FILE"
done
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
