#!/bin/bash
# test-timeout: 600
# Issue 13 part 3: a CLOSE of a file with buffered writes goes upstream with
# them as one related compound.  smbclient mput of a tree (12 x 8 KiB, 1 KiB,
# 100 KiB, 1 MiB + 3 bytes, an empty file; write_behind = always) through
# smbaccel at each dialect 2.0.2, 2.1, 3.0, 3.0.2, 3.1.1, both legs
# captured (dumpcap, walked by tests/tools/upstream-sizes):
#  - every file on smbd's disk equals its source;
#  - upstream, at least 13 messages are WRITE(s)+CLOSE related compounds (the
#    related flag on all but the first element, one explicit FileId in each),
#    as many as the proxy counts (closes_compounded), each answered as a
#    compound;
#  - on the client leg no answer is compounded and none carries the related
#    flag: the client gets its CLOSE answer alone, one per CLOSE it sent;
#  - no ledger error, no deferred error.
# Then close_compound = no (a reload): the same mput sends no compound and
# the proxy counts the CLOSEs it did not compound as "off".  Last, against
# impacket's server (signs every answer): nothing compounded, cannot-alter.
# Between them, cmp_reqs.py: READ, QUERY_INFO, SET_INFO and FLUSH of 10
# files at 2.0.2 and 3.0, each after a buffered write, sent with their
# file's flush (40 compounded each), checked against a model and smbd's
# disk; and wb_infoex.py: a rename or delete of the forms Windows 10
# and later send (FileRenameInformationEx, FileDispositionInformationEx)
# waits for the connection's buffered writes, as the classic forms do;
# and wb_twoopens.py: two opens of one file (one connection, then two)
# writing the same range leave the last write on smbd's disk, and a
# read through another name of the file ("NAME::$DATA") on another
# connection sees the first's unflushed write, so does a read through a
# hard link (same on-disk id, another name), and on one connection two
# opens of one file by two names (NAME::$DATA, a second tree of the
# share) keep the last write and read the first's unflushed one, and so
# do opens of one file through two shares of one directory, and a
# sequential reader's read-ahead through one share sees a write through
# the other; and
# kick_close.py: connections kicked together that close in their kicks.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
. "$TESTS_DIR/cmp_lib.sh"
require_smbaccel "the CLOSE compound"
command -v dumpcap >/dev/null || skip "dumpcap not installed"

DIALECTS=${CMP_DIALECTS:-SMB2_02 SMB2_10 SMB3_00 SMB3_02 SMB3_11}
start_smbd
# long flush timers: the CLOSE, not a timer, must send the data
PROXY_SHARE_SECTION=no start_proxy "" "[share share]" "write_behind = always" \
    "flush_idle = 30s" "flush_max_age = 60s" \
    "[share alias]" "write_behind = always" "read_ahead = always" \
    "flush_idle = 30s" "flush_max_age = 60s"
src=$T/src
cmp_tree "$src"

for d in $DIALECTS; do
	c0=$(stat_get closes_compounded)
	cmp_capture_both "cc-$d"
	cmp_mput "$PROXY_PORT" "$d" "$src" "m-$d" ||
	    { capture_stop; fail "$d: smbclient mput through smbaccel failed (above)"; }
	cmp_legs "cc-$d"
	c1=$(stat_get closes_compounded)
	cmp_same "$src" "$SHARE_DIR/m-$d" || fail "$d: the tree on smbd's disk differs from the source (above)"
	"$PY" "$TESTS_DIR/cmp_check.py" "$T/cc-$d.up.json" "$T/cc-$d.client.json" "$CMP_FILES" "$d" ||
	    fail "$d: the compounds on the wire (above)"
	up=$("$PY" -c 'import json,sys; c=json.load(open(sys.argv[1]))["compounds"]["requests"]; print(sum(n for k,n in c.items() if k.endswith("+CLOSE")))' "$T/cc-$d.up.json")
	assert_eq "$up" $((c1 - c0)) "$d: closes_compounded delta vs WRITE+CLOSE compounds in the capture"
done
info "stats: $(stats_line closes_compounded compound_writes compound_write_errors upstream_writes writes_absorbed deferred_errors ledger_errors closes_not_compounded.busy closes_not_compounded.ids closes_not_compounded.other)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
assert_eq 0 "$(stat_get deferred_errors)" "stats deferred_errors"
assert_eq 0 "$(stat_get compound_write_errors)" "stats compound_write_errors"

# READ, QUERY_INFO, SET_INFO and FLUSH, each after a write smbaccel
# buffered: each sent with its file's flush, checked against cmp_reqs.py's
# model (what the READ gives, the size the QUERY_INFO gives, the file on
# smbd's disk after the SET_INFO cut it); 4 requests a file compounded
for d in 2.0.2 3.0; do
	r0=$(stat_get requests_compounded)
	out=$(timeout 120 "$PY" "$TESTS_DIR/cmp_reqs.py" "$PROXY_PORT" "$d" "rq-$d" 10 2>&1) ||
	    fail "$d: cmp_reqs.py: $out"
	r1=$(stat_get requests_compounded)
	info "$d: $out; requests compounded $((r1 - r0))"
	assert_eq "$(echo "$out" | sed -n 's/.*sha256=//p')" "$(sha256 "$SHARE_DIR/rq-$d-9")" "$d: the last file on smbd's disk against the model"
	assert_eq 40 $((r1 - r0)) "$d: requests_compounded delta (READ, QUERY_INFO, SET_INFO, FLUSH of 10 files)"
done

# A rename or delete in the forms Windows 10 and later send (classes 65
# and 64) waits for what the connection buffered, as the classic forms
# do: all of the other file's bytes are on disk when it is answered (they
# sat in smbaccel's buffer for its 30 s timers otherwise); the statuses
# are smbd's own (it refuses both classes)
dir=$(timeout 60 "$PY" "$TESTS_DIR/wb_infoex.py" "$SMBD_PORT" "$SHARE_DIR" 3.0 2>&1) ||
    fail "wb_infoex.py directly: $dir"
out=$(timeout 60 "$PY" "$TESTS_DIR/wb_infoex.py" "$PROXY_PORT" "$SHARE_DIR" 3.0 2>&1) ||
    fail "wb_infoex.py through smbaccel: $out"
info "Ex classes: directly $dir; through smbaccel $out"
for cls in 65 64; do
	assert_eq "$(kv "$dir" class$cls)" "$(kv "$out" class$cls)" "status of the SET_INFO of class $cls, as directly"
done
assert_eq 1024 "$(kv "$out" disk65)" "bytes of the buffered file on disk when the class 65 rename was answered"
assert_eq 2048 "$(kv "$out" disk64)" "bytes of the buffered file on disk when the class 64 delete was answered"

# Two opens of one file writing the same range, on one connection and on
# two: each open has its own buffer, and the server must end up with the
# write the client made last (before the fix it got the older one, both
# ways); disjoint ranges both land
ov0=$(stat_get write_overlap_waits)
dir=$(timeout 60 "$PY" "$TESTS_DIR/wb_twoopens.py" "$SMBD_PORT" "$SHARE_DIR" 3.0 2>&1) ||
    fail "wb_twoopens.py directly: $dir"
out=$(timeout 60 "$PY" "$TESTS_DIR/wb_twoopens.py" "$PROXY_PORT" "$SHARE_DIR" 3.0 2>&1) ||
    fail "wb_twoopens.py through smbaccel: $out"
info "two opens: directly $dir; through smbaccel $out"
assert_eq "one=Y two=Y far=XY alias=XX link=L names=YYRR shares=STYB" "$dir" "wb_twoopens.py directly"
assert_eq "$dir" "$out" "wb_twoopens.py through smbaccel, as directly"
assert_ge $((ov0 + 1)) "$(stat_get write_overlap_waits)" "write_overlap_waits after the second open's write"

# Two connections whose CREATEs wait for a third's buffered data, each
# followed by a bad frame: the flush's answer kicks both, and each closes
# in its kick (kick_close.py).  Before smbaccel held the connections it
# kicks, the sanitized daemon reported a heap-use-after-free here and died.
for i in 1 2 3; do
	out=$(timeout 60 "$PY" "$TESTS_DIR/kick_close.py" "$PROXY_PORT" 2>&1) || fail "kick_close.py: $out"
	info "kicked connections that close, run $i: $out"
	assert_eq closed=2 "$out" "kick_close.py run $i: connections closed for their bad frames"
done
proxy_alive || fail "proxy died kicking connections that close"

# close_compound = no: a reload; new trees take it
PROXY_SHARE_SECTION=no write_proxy_conf "$PROXY_CONF" "" "[share share]" \
    "write_behind = always" "flush_idle = 30s" "flush_max_age = 60s" \
    "close_compound = no"
ctl reload >/dev/null || fail "smbaccelctl reload failed"
wait_log "reload" 5 || fail "the proxy did not log the reload"
off0=$(stat_get closes_not_compounded.off)
cmp_capture_both "cc-off"
cmp_mput "$PROXY_PORT" SMB3_11 "$src" m-off || { capture_stop; fail "close_compound = no: mput failed (above)"; }
cmp_legs "cc-off"
cmp_same "$src" "$SHARE_DIR/m-off" || fail "close_compound = no: the tree on disk differs (above)"
"$PY" "$TESTS_DIR/cmp_check.py" "$T/cc-off.up.json" "$T/cc-off.client.json" 0 "close_compound=no" none ||
    fail "close_compound = no: the wire (above)"
off1=$(stat_get closes_not_compounded.off)
assert_ge "$CMP_FILES" $((off1 - off0)) "closes_not_compounded.off delta with close_compound = no"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"

# A server that signs every answer once a session key exists (impacket's,
# 2.0.2): without the key the CLOSE may not be changed, so nothing is
# compounded (cannot-alter), and nothing is closed for cannot-sign.
IMP=/usr/share/doc/python3-impacket/examples/smbserver.py
if [ -f "$IMP" ]; then
	stop_proxy
	IMP_PORT=$(free_port) || fail "no free port"
	mkdir -p "$T/impshare" && chmod 0777 "$T/impshare"
	bg "$PY" "$IMP" -smb2support -ip 127.0.0.1 -port "$IMP_PORT" \
	    -username "$SMB_USER" -password "$SMB_PASS" share "$T/impshare" >"$T/impacket.log" 2>&1
	wait_port "$IMP_PORT" 20 || fail "impacket's smbserver did not start: $(tail -n 3 "$T/impacket.log")"
	PROXY_UPSTREAM=127.0.0.1:$IMP_PORT start_proxy
	mkdir -p "$T/isrc/a"
	for i in 1 2 3 4 5; do head -c 8192 /dev/urandom > "$T/isrc/a/f$i.bin"; done
	cmp_mput "$PROXY_PORT" SMB2_02 "$T/isrc" m-imp || fail "impacket server: mput through smbaccel failed (above)"
	cmp_same "$T/isrc" "$T/impshare/m-imp" || fail "impacket server: the tree differs (above)"
	info "impacket server: $(stats_line closes_compounded closes_not_compounded.cannot-alter writes_absorbed closed.cannot-sign)"
	assert_eq 0 "$(stat_get closes_compounded)" "impacket server: closes_compounded"
	assert_ge 5 "$(stat_get closes_not_compounded.cannot-alter)" "impacket server: closes_not_compounded.cannot-alter"
	assert_eq 0 "$(stat_get closed.cannot-sign)" "impacket server: connections closed for cannot-sign"
else
	info "impacket's smbserver.py not installed: server-signs-all case skipped"
fi
info "PASS"
