#!/bin/bash
# test-timeout: 300
# Issue 13 part 3: a WRITE sent with the CLOSE fails (the share lives on a
# full tmpfs), and no server handle leaks.  cmp_close.py writes through
# smbaccel and CLOSEs; the capture shows the WRITE and the CLOSE in one
# frame.
#  1. smbd runs the rest of the chain (explicit FileIds): the client's
#     CLOSE gets STATUS_DISK_FULL, the log names file, offset and length,
#     and smbd holds no handle of the file once the CLOSE is answered.
#  2. Through chainfail.py, a relay that makes smbd fail the rest of the
#     chain as MS-SMB2 3.3.5.2.7.2 lets a server (the CLOSE is not done,
#     its answer carries the WRITE's status; grants on each answer):
#     a. 64 x 1 KiB writes leave ids over: smbaccel closes the handle
#        itself with one before answering DISK_FULL: no handle is open when
#        the client has its answer;
#     b. one 8 KiB write takes the only id: the client gets DISK_FULL at
#        once and the handle is still open (logged); once space is back and
#        a second file is written and closed (its ids leave some over),
#        smbaccel closes the first handle with one: none is left open, the
#        second file is intact.
#  1b. The same for a FLUSH sent with its file's flush: the FLUSH gets
#     STATUS_DISK_FULL (the client asked for the data to be on disk), the
#     CLOSE then SUCCESS (reported once); a QUERY_INFO sent with it gets
#     the server's answer and the CLOSE the deferred DISK_FULL.
#  1c. The CLOSE in a related compound of the client's own after that
#     QUERY_INFO: the deferred DISK_FULL on its answer, the compound's last.
#  1d. 1c in a signed session (smbaccel holds the user's secret): the
#     answer smbaccel puts in the server's compound is signed alone and
#     every answer's signature checks (cmp_close.py cmpds checks them all).
#  3. smbclient mput of a tree through the relay with space: every file
#     intact (answers split and granted per element), no ledger error.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
. "$TESTS_DIR/cmp_lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "failed writes of the CLOSE compound"
command -v dumpcap >/dev/null || skip "dumpcap not installed"
DISK_FULL=0xc000007f

mkdir -p "$SHARE_DIR"
mount -t tmpfs -o size=4m,mode=0755 tmpfs "$SHARE_DIR" || skip "cannot mount a tmpfs"
# unmount (lazily: smbd may still have its cwd there) before lib.sh's cleanup
trap 'rc=$?; umount -l "$SHARE_DIR" 2>/dev/null; (exit $rc); cleanup' EXIT
start_smbd
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
# long flush timers: the CLOSE, not a timer, must send the data; the
# user's secret for 1d's signed session
PROXY_SHARE_SECTION=no start_proxy "secrets = $T/secrets" "" "[share share]" "write_behind = always" \
    "flush_idle = 30s" "flush_max_age = 60s"

# a second smbaccel, upstream the chain-failing relay
RELAY_PORT=$(free_port) || fail "no free port"
bg "$PY" "$TESTS_DIR/chainfail.py" "$RELAY_PORT" "$SMBD_PORT" 2>>"$T/chainfail.log"
wait_port "$RELAY_PORT" 10 || fail "chainfail.py is not accepting"
P2_PORT=$(free_port) || fail "no free port"
P2_LOG=$T/proxy2.log P2_CTL=$T/control2.sock
cat > "$T/smbaccel2.conf" <<EOF
[global]
listen = 127.0.0.1:$P2_PORT
upstream = 127.0.0.1:$RELAY_PORT
mode = forward
control_socket = $P2_CTL

[share share]
write_behind = always
flush_idle = 30s
flush_max_age = 60s
EOF
bg "$SMBACCEL" -c "$T/smbaccel2.conf" -f </dev/null >>"$P2_LOG" 2>&1
wait_port "$P2_PORT" 10 || fail "the second smbaccel is not accepting (log: $(tail -n 5 "$P2_LOG"))"
ctl2() { "$SMBACCELCTL" -s "$P2_CTL" "$@"; }
stat2() { ctl2 stats --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], 0))' "$1"; }

fill() {
	rm -rf "${SHARE_DIR:?}"/*
	head -c 8m /dev/zero > "$SHARE_DIR/filler" 2>/dev/null
	sync
}
# kv LINE KEY: the value of KEY=... in LINE

# 1. smbd itself
fill
capture_start full-smbd
out=$(timeout 60 "$PY" "$TESTS_DIR/cmp_close.py" "$PROXY_PORT" "$SMBD_CONF" one c-smbd 2>&1) ||
    { capture_stop; fail "cmp_close.py one (smbd) failed: $out"; }
capture_stop
info "1 (smbd): $out"
upstream_sizes 1M "$T/full-smbd.json"
n=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["compounds"]["requests"].get("WRITE+CLOSE", 0))' "$T/full-smbd.json")
assert_eq 1 "$n" "1: WRITE+CLOSE compounds in the capture"
assert_eq "$DISK_FULL" "$(kv "$out" close)" "1: status of the CLOSE"
assert_eq 0 "$(kv "$out" open)" "1: opens of c-smbd smbd holds after the CLOSE"
wait_log "file=c-smbd offset=0 length=8192 write sent with the CLOSE failed status=$DISK_FULL" 5 ||
    fail "1: the log does not name file, offset and length of the failed write"
log_has "file=c-smbd .*closes the handle itself" && fail "1: smbaccel closed a handle smbd had closed"
assert_eq 1 "$(stat_get compound_write_errors)" "1: stats compound_write_errors"

# 1b. a FLUSH, then a QUERY_INFO, sent with the flush of their file
for m in flush query; do
	fill
	capture_start "full-$m"
	out=$(timeout 60 "$PY" "$TESTS_DIR/cmp_close.py" "$PROXY_PORT" "$SMBD_CONF" $m "c-$m" 2>&1) ||
	    { capture_stop; fail "cmp_close.py $m failed: $out"; }
	capture_stop
	info "1b ($m): $out"
	upstream_sizes 1M "$T/full-$m.json"
	M=$(echo "$m" | sed 's/flush/FLUSH/; s/query/QUERY_INFO/')
	n=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["compounds"]["requests"].get("WRITE+" + sys.argv[2], 0))' "$T/full-$m.json" "$M")
	assert_eq 1 "$n" "1b: WRITE+$M compounds in the capture"
	if [ $m = flush ]; then
		assert_eq "$DISK_FULL" "$(kv "$out" flush)" "1b: status of the FLUSH"
		assert_eq 0x00000000 "$(kv "$out" close)" "1b: status of the CLOSE after the FLUSH reported the error"
		wait_log "file=c-flush offset=0 length=65536 write sent with the FLUSH failed status=$DISK_FULL: reported on the FLUSH" 5 ||
		    fail "1b: the log does not name file, offset and length of the write sent with the FLUSH"
	else
		assert_eq 0x00000000 "$(kv "$out" query)" "1b: status of the QUERY_INFO (the server's)"
		assert_eq "$DISK_FULL" "$(kv "$out" close)" "1b: status of the CLOSE (the deferred write error)"
		wait_log "file=c-query deferred write error $DISK_FULL reported on CLOSE" 5 ||
		    fail "1b: the deferred error was not logged on the CLOSE"
	fi
done
assert_eq 2 "$(stat_get requests_compounded)" "1b: stats requests_compounded"
assert_eq 3 "$(stat_get compound_write_errors)" "1b: stats compound_write_errors"

# 1c. as the QUERY_INFO of 1b, then the CLOSE in a compound of the
# client's own (a QUERY_INFO and the CLOSE): the deferred error comes on
# the CLOSE's answer, the last of the server's compound (before, that
# answer was passed on as the server sent it, SUCCESS, and the error lost)
fill
out=$(timeout 60 "$PY" "$TESTS_DIR/cmp_close.py" "$PROXY_PORT" "$SMBD_CONF" cmpd c-cmpd 2>&1) ||
    fail "cmp_close.py cmpd failed: $out"
info "1c: $out"
assert_eq 0x00000000 "$(kv "$out" query)" "1c: status of the QUERY_INFO sent with the flush"
assert_eq 0x00000000 "$(kv "$out" cquery)" "1c: status of the QUERY_INFO of the client's compound"
assert_eq "$DISK_FULL" "$(kv "$out" cclose)" "1c: status of the CLOSE of the client's compound (the deferred write error)"
wait_log "deferred write error $DISK_FULL reported on the CLOSE of a compound" 5 ||
    fail "1c: the deferred error was not logged on the compound's CLOSE"
assert_eq 0 "$(stat_get deferred_unreported)" "1c: stats deferred_unreported"

# 1d. 1c signed: the replaced answer carries a signature of its own that
# checks, and so does every other answer (cmp_close.py raises otherwise)
fill
k0=$(stat_get sessions_keyed)
out=$(timeout 60 "$PY" "$TESTS_DIR/cmp_close.py" "$PROXY_PORT" "$SMBD_CONF" cmpds c-cmpds 2>&1) ||
    fail "cmp_close.py cmpds failed: $out"
info "1d: $out"
assert_eq 0x00000000 "$(kv "$out" cquery)" "1d: status of the QUERY_INFO of the client's compound"
assert_eq "$DISK_FULL" "$(kv "$out" cclose)" "1d: status of the CLOSE of the client's compound (the deferred write error)"
assert_ge 2 "$(kv "$out" signed)" "1d: signed answers checked"
assert_ge 1 "$(( $(stat_get sessions_keyed) - k0 ))" "1d: sessions keyed (stats sessions_keyed delta)"
assert_eq 0 "$(stat_get deferred_unreported)" "1d: stats deferred_unreported"
assert_eq 0 "$(stat_get bad_signatures)" "1d: stats bad_signatures"

# 2a. a server that fails the chain; ids left over
fill
out=$(timeout 60 "$PY" "$TESTS_DIR/cmp_close.py" "$P2_PORT" "$SMBD_CONF" many c-spare 2>&1) ||
    fail "cmp_close.py many failed: $out"
info "2a (chain failed, ids left): $out"
grep -q "WRITE status $DISK_FULL CLOSE sent spoiled" "$T/chainfail.log" ||
    fail "2a: chainfail.py did not fail the chain: $(tail -n 3 "$T/chainfail.log")"
assert_eq "$DISK_FULL" "$(kv "$out" close)" "2a: status of the CLOSE"
assert_eq 0 "$(kv "$out" open)" "2a: opens of c-spare left on the server when the CLOSE was answered"
grep -q "file=c-spare the server failed the CLOSE after the failed write: smbaccel closes the handle itself" "$P2_LOG" ||
    fail "2a: smbaccel did not log closing the handle itself"
grep -q "file=c-spare handle closed by smbaccel" "$P2_LOG" || fail "2a: no 'handle closed by smbaccel' for c-spare"
grep -q "file=c-spare no message id left" "$P2_LOG" && fail "2a: the kept id was not used: the handle waited for one"
assert_eq 0 "$(stat2 compound_handles_waited)" "2a: stats compound_handles_waited (the kept id closed it before the answer)"

# 2b. no id left: the handle waits for one
fill
out=$(timeout 60 "$PY" "$TESTS_DIR/cmp_close.py" "$P2_PORT" "$SMBD_CONF" leftover c-noid "$SHARE_DIR/filler" 2>&1) ||
    fail "cmp_close.py leftover failed: $out"
info "2b (chain failed, no id): $out"
assert_eq "$DISK_FULL" "$(kv "$out" close)" "2b: status of the CLOSE"
assert_eq 1 "$(kv "$out" open)" "2b: the handle of c-noid right after the CLOSE (no id to close it with)"
grep -q "file=c-noid no message id left to close the handle with now" "$P2_LOG" ||
    fail "2b: smbaccel did not log the handle it could not close at once"
assert_eq 0x00000000 "$(kv "$out" close2)" "2b: status of the second file's CLOSE"
assert_eq ok "$(kv "$out" data2)" "2b: the second file read back"
assert_eq 0 "$(kv "$out" open_later)" "2b: opens of c-noid once ids were left over"
grep -q "file=c-noid handle closed by smbaccel" "$P2_LOG" || fail "2b: no 'handle closed by smbaccel' for c-noid"
info "proxy 2: $(ctl2 stats | grep 'closes compounded')"
assert_eq 2 "$(stat2 compound_handles_closed)" "2: stats compound_handles_closed"
assert_eq 1 "$(stat2 compound_handles_waited)" "2: stats compound_handles_waited"

# 3. with space, through the relay: split answers, grants on each
rm -rf "${SHARE_DIR:?}"/*
cmp_tree "$T/src"
c0=$(stat2 closes_compounded)
cmp_mput "$P2_PORT" SMB3_11 "$T/src" m-relay || fail "3: smbclient mput through the relay failed (above)"
cmp_same "$T/src" "$SHARE_DIR/m-relay" || fail "3: the tree on disk differs (above)"
assert_ge "$CMP_FILES" $(( $(stat2 closes_compounded) - c0 )) "3: closes compounded through the relay"
assert_eq 0 "$(stat2 ledger_errors)" "proxy 2: ledger_errors"
assert_eq 0 "$(stat_get ledger_errors)" "proxy 1: ledger_errors"
grep -E 'smbaccel\[(warn|error)\]' "$P2_LOG" | grep -vE 'write sent with the CLOSE failed|upstream write failed|closes the handle itself|no message id left' |
    sed 's/^/    unexpected: /' | grep . && fail "proxy 2 logged unexpected warnings (above)"
proxy_alive || fail "proxy died"
info "PASS"
