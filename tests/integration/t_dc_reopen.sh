#!/bin/bash
# test-timeout: 500
# Issue 13 test 2: reopening a cached document (read_ahead = always).
# An 8 MiB file read at random (smbdd -R) is fetched whole; then:
#  (1) reopened by a new connection with an RWH lease (dc_read.py; the
#      server grants W only to the file's sole open, which proves that no
#      other handle can have written it with its times held): every read
#      served from the copy, no READ on the proxy -> smbd leg (dumpcap +
#      upstream-sizes); reopened by smbdd, which asks for no oplock: its
#      answer proves nothing, the file is read again (READs upstream,
#      dc_valid_failed.unproven);
#  (2) rewritten directly on smbd with the same size (a new
#      LastWriteTime): the reopen finds the copy stale and reads the new
#      bytes;
#  (3) rewritten with the same size and LastWriteTime restored (touch -m):
#      Samba reports ChangeTime = LastWriteTime, so nothing in the CREATE
#      answer differs; what the reopen reads is reported (the limit
#      smbaccel.conf(5) documents), not asserted; rewritten with another
#      size and the time restored: EndOfFile differs, new bytes read;
#  (4) read_cache_dir: the whole copy is stored; smbaccel restarted; an
#      open with no oplock does not read it back (ds_loads 0); the reopen
#      with an RWH lease is served from the store (no upstream READ,
#      ds_loads);
#  (5) a byte of the stored data corrupted, smbaccel restarted: the copy
#      is detected, logged and not served to an RWH open (the reads are
#      correct, READs go upstream); then the header corrupted: the same;
#  (6) the file replaced on the server by another one of the same size
#      whose times and DOS attributes (CreationTime) are those of the old
#      one, renamed over it (as rsync -t does): only the on-disk file id,
#      which smbaccel asks for itself (SMB2_CREATE_QUERY_ON_DISK_ID),
#      differs; the reopen reads the new bytes, and the client never sees
#      the QFid context it did not ask for (client-leg capture).
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "the document cache"

STORE=$T/store
CONF_LINES=("read_cache_dir = $STORE" "read_cache_disk = 64M" "[share share]"
    "write_behind = always" "read_ahead = always")
start_smbd
PROXY_SHARE_SECTION=no start_proxy "${CONF_LINES[@]}"
SIZE=$((8 * 1048576))
F=$SHARE_DIR/doc

# random_read LABEL PORT SEED SIZE COUNT: smbdd -R through PORT, checked
random_read() {
	smbdd_run read "$2" doc 4K "$5" -s "$3" -R "$4" -q 2>&1
}
# proven_read PORT SEED SIZE COUNT [ARGS]: dc_read.py with an RWH lease
proven_read() {
	local port=$1 seed=$2 size=$3 count=$4
	shift 4
	timeout 120 "$PY" "$TESTS_DIR/dc_read.py" "$port" doc "$seed" "$size" "$count" \
	    --lease rwh "$@" 2>&1
}
# reopen_upstream LABEL SEED SIZE [proven]: a reopen through the proxy
# (smbdd, or dc_read.py with an RWH lease), captured; prints the number of
# READs smbaccel sent upstream (fails on bad bytes)
reopen_upstream() {
	local out n
	capture_start "$1" >&2
	if [ "${4:-}" = proven ]; then
		out=$(proven_read "$PROXY_PORT" "$2" "$3" 400)
	else
		out=$(random_read "$1" "$PROXY_PORT" "$2" "$3" 400)
	fi
	local rc=$?
	capture_stop >&2
	[ $rc -eq 0 ] || { rm -f "$CAP_FILE"; fail "$1: the reopen read wrong bytes: $out"; }
	upstream_sizes 1 "$T/$1.json" >&2
	n=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"].get("READ", 0))' "$T/$1.json")
	rm -f "$CAP_FILE"
	info "$1: $(echo "$out" | tail -n 1 | cut -d' ' -f1-3); upstream READs: $n" >&2
	echo "$n"
}
wait_stat_ge() {	# wait_stat_ge KEY MIN SECONDS
	local n=$(( $3 * 10 ))
	while [ $n -gt 0 ]; do
		[ "$(stat_get "$1")" -ge "$2" ] && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}

s1=$((RANDOM + 1))
out=$(smbdd_run write "$SMBD_PORT" doc 1M 8 -s "$s1" -q 2>&1) || fail "cannot write doc: $out"
out=$(random_read first "$PROXY_PORT" "$s1" "$SIZE" 1500) || fail "first open: wrong bytes: $out"
info "first open (1500 random 4 KiB reads): $(echo "$out" | cut -d' ' -f1-3); $(stats_line dc_started dc_hits dc_widened dc_fetches ds_writes)"
wait_stat_ge ds_writes 1 10 || fail "the copy was not stored whole (ds_writes 0): $(stats_line dc_entries_now dc_bytes_now ds_errors)"

# (1) a new connection, the same file unchanged
a0=$(stat_get dc_attached)
n=$(reopen_upstream reopen "$s1" "$SIZE" proven)
assert_eq 0 "$n" "(1) READs sent upstream by a reopen (RWH lease) of the unchanged file"
assert_eq $((a0 + 1)) "$(stat_get dc_attached)" "(1) opens served by the copy"
u0=$(stat_get dc_valid_failed.unproven)
n=$(reopen_upstream unproven "$s1" "$SIZE")
assert_ge 1 "$n" "(1) READs sent upstream by a reopen with no oplock"
assert_eq $((a0 + 1)) "$(stat_get dc_attached)" "(1) opens with no oplock served by the copy"
assert_eq $((u0 + 1)) "$(stat_get dc_valid_failed.unproven)" "(1) reopens whose answer could not prove the copy current"

# (2) rewritten on the server, same size, new LastWriteTime
s2=$((s1 + 1))
sleep 0.05
out=$(smbdd_run write "$SMBD_PORT" doc 1M 8 -s "$s2" -q 2>&1) || fail "cannot rewrite doc: $out"
v0=$(stat_get dc_valid_failed.last-write-time)
out=$(random_read changed "$PROXY_PORT" "$s2" "$SIZE" 1500) ||
    fail "(2) the reopen after a direct rewrite read stale or wrong bytes: $out"
assert_eq $((v0 + 1)) "$(stat_get dc_valid_failed.last-write-time)" "(2) reopens that found the copy stale by LastWriteTime"
info "(2) rewrite with a new LastWriteTime: new bytes read"

# (3) same size, LastWriteTime restored
mt=$(stat -c %y "$F")
s3=$((s2 + 1))
out=$(smbdd_run write "$SMBD_PORT" doc 1M 8 -s "$s3" -q 2>&1) || fail "cannot rewrite doc: $out"
touch -m -d "$mt" "$F"
if out=$(random_read restored "$PROXY_PORT" "$s3" "$SIZE" 400); then
	info "(3) same size, LastWriteTime restored: the reopen read the new bytes (the server's CREATE answer showed a difference)"
else
	info "(3) same size, LastWriteTime restored: the reopen read the old bytes, as smbaccel.conf(5) says it must with Samba (ChangeTime = LastWriteTime): $(echo "$out" | tail -n 1)"
fi
s4=$((s3 + 1))
SIZE4=$((SIZE + 4096))
out=$(smbdd_run write "$SMBD_PORT" doc 4K $((SIZE4 / 4096)) -s "$s4" -q 2>&1) || fail "cannot rewrite doc: $out"
touch -m -d "$mt" "$F"
v0=$(stat_get dc_valid_failed.size)
w3=$(stat_get ds_writes)
out=$(random_read resized "$PROXY_PORT" "$s4" "$SIZE4" 1500) ||
    fail "(3) the reopen after a rewrite of another size (LastWriteTime restored) read stale or wrong bytes: $out"
info "(3) another size, LastWriteTime restored: new bytes read; $(stats_line dc_valid_failed.size dc_valid_failed.last-write-time)"
[ "$(stat_get dc_valid_failed.size)" -gt "$v0" ] || [ "$(stat_get dc_valid_failed.last-write-time)" -gt 1 ] ||
    fail "(3) the reopen of the resized file found no difference"

# (4) the store survives a restart
# the resized file's copy must be in the store before the restart
wait_stat_ge ds_writes $((w3 + 1)) 10 ||
    fail "(4) the resized file's copy was not stored: $(stats_line ds_writes ds_errors dc_entries_now)"
ls -l "$STORE" | sed 's/^/    store: /'
stop_proxy
PROXY_SHARE_SECTION=no start_proxy "${CONF_LINES[@]}"
# an open with no oplock proves nothing: the store's copy is not read back
out=$(timeout 60 "$PY" "$TESTS_DIR/dc_read.py" "$PROXY_PORT" doc "$s4" "$SIZE4" 0 2>&1) ||
    fail "(4) an open with no oplock after the restart: $out"
assert_eq 0 "$(stat_get ds_loads)" "(4) copies read back from the store for an open with no oplock"
n=$(reopen_upstream restart "$s4" "$SIZE4" proven)
info "(4) after the restart: $(stats_line ds_files ds_loads ds_chunk_reads dc_attached)"
assert_eq 0 "$n" "(4) READs sent upstream by the first open after a restart"
assert_ge 1 "$(stat_get ds_loads)" "(4) copies read back from the store"
assert_ge 1 "$(stat_get ds_chunk_reads)" "(4) chunks read back from the store"

# (5) corrupt data, then a corrupt header
# flip_byte FILE OFFSET: invert the byte's bits, so it always changes (a
# constant written over random data or a LastWriteTime byte left it as it
# was one time in 256: nothing corrupt, nothing logged)
flip_byte() {
	"$PY" - "$1" "$2" <<'PYEOF' || fail "cannot change byte $2 of $1"
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    b = f.read(1)
    assert len(b) == 1
    f.seek(int(sys.argv[2]))
    f.write(bytes([b[0] ^ 0xff]))
PYEOF
}
copy=$(ls "$STORE"/*.dc 2>/dev/null | head -n 1)
[ -f "$copy" ] || fail "(5) no stored copy in $STORE"
stop_proxy
sz=$(stat -c %s "$copy")
flip_byte "$copy" $((sz - 70000))
nlog5=$(wc -l < "$PROXY_LOG")
PROXY_SHARE_SECTION=no start_proxy "${CONF_LINES[@]}"
pid5=$PROXY_PID
# why5: what the restarted smbaccel logged and counted (a failure of (5)
# says what happened instead)
why5() {
	echo "    smbaccel pid $pid5 since its start: $(stats_line ds_files ds_loads ds_chunk_reads ds_corrupt dc_attached dc_hits dc_valid_failed)"
	tail -n +"$((nlog5 + 1))" "$PROXY_LOG" | grep -v '\[debug\]' | head -n 40 | sed 's/^/    | /'
	ls -l "$STORE" | sed 's/^/    store: /'
}
capture_start corrupt
out=$(proven_read "$PROXY_PORT" "$s4" "$SIZE4" 0 --seq)
rc=$?
capture_stop
[ $rc -eq 0 ] || fail "(5) reading the file with a corrupted stored copy gave wrong bytes: $out"
upstream_sizes 1 "$T/corrupt.json"
n=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"].get("READ", 0))' "$T/corrupt.json")
rm -f "$CAP_FILE"
wait_log 'document store: .* is corrupt \(checksum of chunk [0-9]+\): discarded, never served' 5 ||
    { why5; fail "(5) the corrupted data was not logged ($n READs upstream)"; }
[ "$(stat_get ds_corrupt)" = 1 ] || { why5; fail "(5) corrupt copies found: not 1"; }
assert_ge 1 "$n" "(5) READs upstream after the corrupt copy was discarded"
info "(5) corrupt data: detected, logged, not served; $n READs upstream"
# the file is fetched again and stored again; now break its header
out=$(random_read refetch "$PROXY_PORT" "$s4" "$SIZE4" 1500) || fail "(5) refetch: wrong bytes: $out"
wait_stat_ge ds_writes 1 10 || fail "(5) the copy was not stored again"
copy=$(ls "$STORE"/*.dc 2>/dev/null | head -n 1)
[ -f "$copy" ] || fail "(5) no stored copy in $STORE after the refetch"
stop_proxy
flip_byte "$copy" 33
PROXY_SHARE_SECTION=no start_proxy "${CONF_LINES[@]}"
out=$(proven_read "$PROXY_PORT" "$s4" "$SIZE4" 400) || fail "(5) reading with a corrupt header: wrong bytes: $out"
log_has 'document store: .* is corrupt \(header checksum\): discarded, never served' ||
    fail "(5) the corrupted header was not logged"
assert_eq 0 "$(stat_get ds_loads)" "(5) copies with a corrupt header read back"
info "(5) corrupt header: detected, logged, not served"

# (6) replaced by a rename with times, size and creation time kept
out=$(random_read cached "$PROXY_PORT" "$s4" "$SIZE4" 1500) || fail "(6) first read: wrong bytes: $out"
s6=$((s4 + 1))
out=$(smbdd_run write "$SMBD_PORT" docnew 4K $((SIZE4 / 4096)) -s "$s6" -q 2>&1) ||
    fail "cannot write docnew: $out"
"$PY" - "$F" "$SHARE_DIR/docnew" <<'PYEOF' || fail "(6) cannot replace the file"
import os, sys
old, new = sys.argv[1], sys.argv[2]
for name in os.listxattr(old):          # user.DOSATTRIB: CreationTime
    os.setxattr(new, name, os.getxattr(old, name))
st = os.stat(old)
os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
assert os.stat(new).st_ino != st.st_ino
os.rename(new, old)
PYEOF
v0=$(stat_get dc_valid_failed.file-id)
CAP_FILTER="tcp port $PROXY_PORT or tcp port $SMBD_PORT" capture_start qfid
out=$(random_read replaced "$PROXY_PORT" "$s6" "$SIZE4" 1500)
rc=$?
capture_stop
[ $rc -eq 0 ] || fail "(6) the reopen of the replaced file read stale or wrong bytes: $out"
assert_eq $((v0 + 1)) "$(stat_get dc_valid_failed.file-id)" "(6) reopens that found the copy stale by its on-disk id"
timeout 300 "$PY" "$TESTS_DIR/pl_leg.py" "$CAP_FILE" "$PROXY_PORT" "$SMBD_PORT" > "$T/qfid.json" ||
    fail "(6) pl_leg.py failed"
rm -f "$CAP_FILE"
read -r cq ca uq ua <<< "$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
def n(port, kind):
    return d[port][kind]["ctx"].get("QFid", 0)
print(n(sys.argv[2], "create_requests"), n(sys.argv[2], "create_answers"),
      n(sys.argv[3], "create_requests"), n(sys.argv[3], "create_answers"))' \
    "$T/qfid.json" "$PROXY_PORT" "$SMBD_PORT")"
assert_eq 0 "$cq" "(6) client CREATEs asking for QFid (smbdd asks for none)"
assert_ge 1 "$uq" "(6) upstream CREATEs with smbaccel's QFid"
assert_ge 1 "$ua" "(6) upstream CREATE answers with QFid"
assert_eq 0 "$ca" "(6) CREATE answers to the client carrying the QFid it did not ask for"
info "(6) replaced with times and size kept: caught by the on-disk id; $(stats_line dc_valid_failed.file-id creates_rewritten)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"

# (7) the store's index is memory too: a store of 8,000 small copies
# (91-byte keys, 6,144 bytes each, smbaccel's header) opened with
# read_cache_memory = 1M keeps an index of at most 1 MiB, the least
# recently written copies going (before: all 8,000 indexed, about 1.6 MB
# that no limit covered, growing with the store: 1 GiB of small copies
# is 260,000 records); and copies count in whole 4 KiB blocks of disk
# (6,144 bytes take 8,192).
S7=$T/store7
mkdir -m 700 "$S7"
"$PY" - "$S7" 8000 <<'PYEND'
import os, struct, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    key = ("10.1.2.3:445|projects|clients\\acme\\2026\\q-%d\\invoice-%06d-final.pdf" % (i % 4, i)).encode()
    hdr = bytearray(128); hdr[0:8] = b"SMBACDC1"
    struct.pack_into("<I", hdr, 8, 1); struct.pack_into("<I", hdr, 88, len(key))
    fd = os.open("%s/%016x.dc" % (d, (i * 0x9E3779B97F4A7C15 + 1) & (2**64 - 1)), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, bytes(hdr) + key); os.ftruncate(fd, 6144); os.close(fd)
PYEND
stop_proxy
PROXY_SHARE_SECTION=no start_proxy "read_cache_memory = 1M" "read_cache_dir = $S7"
files=$(stat_get ds_files) idx=$(stat_get ds_index_bytes) bytes=$(stat_get ds_bytes)
info "(7) store of 8000 copies, read_cache_memory = 1M: $files indexed, index $idx bytes, $bytes bytes on disk, $(ls "$S7" | wc -l) files left"
[ "$idx" -gt 0 ] && [ "$idx" -le 1048576 ] || fail "(7) ds_index_bytes $idx (want 1..1048576)"
[ "$files" -lt 8000 ] || fail "(7) all $files copies indexed with read_cache_memory = 1M"
assert_eq "$files" "$(ls "$S7" | wc -l)" "(7) copies left in the store"
assert_eq $((files * 8192)) "$bytes" "(7) ds_bytes: 8,192 bytes of disk a copy"
log_has "its index takes [0-9]+ bytes, read_cache_memory" || fail "(7) no log line about the index's budget"
proxy_alive || fail "proxy died"

# (8) a store on a read-only mount (under the unit's ProtectSystem=strict,
# any read_cache_dir but /var/cache/smbaccel): said once at start, no
# store (before: taken as a store, and every copy a client's reads made
# failed with a warning of its own)
S8=$T/store8
mkdir -m 700 "$S8"
printf '%s\n' '#!/bin/sh' "mount --bind '$S8' '$S8' && mount -o remount,bind,ro '$S8' && exec \"\$@\"" > "$T/rowrap.sh"
chmod +x "$T/rowrap.sh"
stop_proxy
PROXY_WRAP="unshare -m --propagation private $T/rowrap.sh" PROXY_SHARE_SECTION=no start_proxy "read_cache_dir = $S8"
log_has "document store: cannot write in $S8: no store" || fail "(8) no line saying the store cannot be written"
log_has "document cache: running without its store" || fail "(8) the store was taken"
info "(8) read-only store: $(grep -o 'document store: cannot write in .*' "$PROXY_LOG" | head -n 1)"
proxy_alive || fail "proxy died"
info "PASS"
