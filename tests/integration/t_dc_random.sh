#!/bin/bash
# test-timeout: 400
# Issue 13 test 1: the document cache under random readers.
# (1) smbdd -R -V: seeded random offsets and lengths (1 B .. 16 KiB, some
#     past the end) over files of 1000 B, 64 KiB, 200000 B, 3 MiB + 123 B
#     and 6 MiB (above read_cache_file_max = 4M: not cached), at 3.1.1,
#     2.1 and 2.0.2, under read_ahead = always; every byte checked against
#     the pattern the file was written with (smbdd's model), short reads
#     exactly at the end; a copy started and served for each file up to
#     the limit, none for the 6 MiB one.
# (2) dc_coherence.py: a reader (no oplock under always; an R lease and a
#     level II oplock under leased) doing random reads against a local
#     model while another client writes through the proxy (seen at once)
#     and directly on smbd (seen at once through the break under leased,
#     at the next open under always).
# (3) dc_pipeline.py: two READs at once into a chunk not yet fetched: the
#     second waits for the first's widened answer and is answered when it
#     arrives (without the fix it waited up to 30 s for a timer).
# (4) dc_kept.py: a connection that read one document opens the next at
#     once: its first reads start fetches paid with the ids the connection
#     kept (dc_kept_ids), across the CLOSE and the CREATE.
# (5) dc_sticky.py: a reopen while another client's writer still has the
#     file open (smbd holds its times: the same CreationTime, LastWriteTime,
#     ChangeTime and EndOfFile as the copy's) reads the writer's new bytes,
#     under leased with an R lease and under always with no oplock; an open
#     granted an RWH lease (the file's sole open) after the writer closed is
#     served from a copy again, also after an open for attributes alone.
# (6) dc_signed.py, through a third smbaccel whose server's large READ
#     answers arrive marked signed (signflag.py, a relay in front of smbd;
#     no key): a widened miss cannot be cut back, its connection is closed
#     (cannot-sign); a reader on a new connection allowed to use that copy
#     (RWH lease) reads the same bytes at once (it waited for ever for the
#     chunk the closed connection's READ was to bring).
# (7) dc_alias.py: a write through another name of the file ("NAME::$DATA",
#     a non-ASCII letter in the other case) drops a reader's copy: its
#     next read gives the new bytes.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "the document cache"

start_smbd
PROXY_SHARE_SECTION=no start_proxy "read_cache_file_max = 4M" \
    "[share share]" "write_behind = always" "read_ahead = always" \
    "[share dur]" "write_behind = leased" "read_ahead = leased"

seed=$((RANDOM + 17))
n=0
for sz in 1000 65536 200000 3145851 6291456; do
	n=$((n + 1))
	# written directly, in one go: the pattern of smbdd's model
	out=$(smbdd_run write "$SMBD_PORT" "dr-$sz" "$sz" 1 -s "$seed" -q 2>&1) ||
	    fail "cannot write dr-$sz directly: $out"
	for d in SMB3_11 SMB2_10 SMB2_02; do
		s0=$(stat_get dc_started) h0=$(stat_get dc_hits) a0=$(stat_get dc_attached)
		out=$(smbdd_run read "$PROXY_PORT" "dr-$sz" 16K 1500 -s "$seed" -R "$sz" -V \
		    -m "$d" -q 2>&1) || fail "$d dr-$sz: random reads through the proxy saw wrong bytes: $out"
		s1=$(stat_get dc_started) h1=$(stat_get dc_hits) a1=$(stat_get dc_attached)
		info "$d $sz bytes: $(echo "$out" | tail -n 1 | cut -d' ' -f1-2); copies started +$((s1 - s0)), opens served by a copy +$((a1 - a0)), reads served +$((h1 - h0))"
		if [ "$sz" -gt 4194304 ]; then
			assert_eq 0 $((s1 - s0 + a1 - a0 + h1 - h0)) "$d dr-$sz (above read_cache_file_max): cached"
		elif [ "$d" = SMB3_11 ]; then
			assert_eq 1 $((s1 - s0)) "$d dr-$sz: copies started by the first random reader"
			assert_ge 1000 $((h1 - h0)) "$d dr-$sz: reads served from the copy (of 1500)"
		else
			# smbdd asks for no oplock: its answer cannot prove the
			# first dialect's copy current (another handle may have
			# written), so the file is fetched again
			assert_eq 0 $((a1 - a0)) "$d dr-$sz: opens served by the existing copy"
			assert_eq 1 $((s1 - s0)) "$d dr-$sz: copies started again"
			assert_ge 1000 $((h1 - h0)) "$d dr-$sz: reads served from the copy (of 1500)"
		fi
	done
done

for c in none:share:3.0 lease:dur:3.0 oplock2:dur:2.1 none:share:2.0.2; do
	IFS=: read -r mode share d <<< "$c"
	case $share in share) dir=$SHARE_DIR ;; *) dir=$DUR_DIR ;; esac
	f=dc-$mode-$d
	random_file "$T/$f.orig" 2
	head -c 12345 /dev/urandom >> "$T/$f.orig"
	# through smbd, which stores the CreationTime (one it derives from
	# the file's times for a file written locally moves with atime)
	out=$(SMBC_SHARE=$share smbc "$SMBD_PORT" SMB3_11 "put $T/$f.orig $f" 2>&1) ||
	    fail "cannot put $f: $out"
	h0=$(stat_get dc_hits)
	out=$(timeout 120 "$PY" "$TESTS_DIR/dc_coherence.py" "$PROXY_PORT" "$SMBD_PORT" "$d" \
	    "$mode" "$f" "$T/$f.orig" "$seed" "$share" 2>&1)
	rc=$?
	echo "$out" | sed "s/^/    $c: /"
	[ $rc -eq 0 ] || fail "$c: the reader saw wrong bytes (above)"
	h1=$(stat_get dc_hits)
	info "$c: reads served from the copy +$((h1 - h0))"
	assert_ge 300 $((h1 - h0)) "$c: reads served from the document cache"
done
# (3) pipelined READs into a chunk that a widened READ is fetching, through
# a second smbaccel whose server is 20 ms away (tests/tools/wanem), so that
# the second READ always arrives while the first is out
f=dc-pipe
random_file "$T/$f.orig" 8
out=$(smbc "$SMBD_PORT" SMB3_11 "put $T/$f.orig $f" 2>&1) || fail "cannot put $f: $out"
WAN_PORT=$(free_port) P2_PORT=$(free_port)
bg "$TOP/bin/wanem" -l "127.0.0.1:$WAN_PORT" -u "127.0.0.1:$SMBD_PORT" -d 10 -r 1000000000 \
    > "$T/wanem.log" 2>&1
wait_port "$WAN_PORT" 10 "$!" || fail "wanem did not start: $(cat "$T/wanem.log")"
printf '[global]\nlisten = 127.0.0.1:%s\nupstream = 127.0.0.1:%s\nmode = forward\ncontrol_socket = %s\n[share share]\nwrite_behind = always\nread_ahead = always\n' \
    "$P2_PORT" "$WAN_PORT" "$T/p2.sock" > "$T/p2.conf"
bg "$SMBACCEL" -c "$T/p2.conf" -f > "$T/proxy2.log" 2>&1
wait_port "$P2_PORT" 10 "$!" || fail "the second smbaccel did not start: $(tail -n 5 "$T/proxy2.log")"
out=$(timeout 90 "$PY" "$TESTS_DIR/dc_pipeline.py" "$P2_PORT" "$f" "$T/$f.orig" 2>&1)
rc=$?
echo "$out" | sed "s/^/    pipeline: /"
[ $rc -eq 0 ] || fail "pipelined reads (above)"
w=$("$SMBACCELCTL" -s "$T/p2.sock" stats --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["dc_waits"])')
info "pipelined reads: $w waited for a fetch in flight"
assert_ge 15 "$w" "reads that waited for a fetch in flight (of 20 pipelined pairs)"

# (4) ids kept for the next document
random_file "$T/kx.orig" 2
random_file "$T/ky.orig" 4
for f in kx ky; do
	out=$(smbc "$SMBD_PORT" SMB3_11 "put $T/$f.orig $f" 2>&1) || fail "cannot put $f: $out"
done
k0=$(stat_get dc_kept_ids)
out=$(timeout 60 "$PY" "$TESTS_DIR/dc_kept.py" "$PROXY_PORT" kx "$T/kx.orig" ky "$T/ky.orig" 2>&1)
rc=$?
echo "$out" | sed "s/^/    kept: /"
[ $rc -eq 0 ] || fail "reads of the second document (above)"
k1=$(stat_get dc_kept_ids)
info "second document: fetches paid with $((k1 - k0)) ids kept from the first"
assert_ge 32 $((k1 - k0)) "ids kept from the first document that paid for fetches of the second"

# (5) a reopen with another client's writer open
for c in r:dur none:share; do
	IFS=: read -r mode share <<< "$c"
	a0=$(stat_get dc_attached) u0=$(stat_get dc_valid_failed.unproven)
	out=$(timeout 60 "$PY" "$TESTS_DIR/dc_sticky.py" "$PROXY_PORT" "$SMBD_PORT" "$mode" \
	    "sticky-$mode" "$share" 2>&1)
	rc=$?
	echo "$out" | sed "s/^/    sticky $c: /"
	[ $rc -eq 0 ] || fail "sticky $c: a reopen with the writer open (above)"
	a1=$(stat_get dc_attached) u1=$(stat_get dc_valid_failed.unproven)
	assert_ge 1 $((u1 - u0)) "sticky $c: reopens not served from a copy their answer could not prove current"
	assert_eq 2 $((a1 - a0)) "sticky $c: opens served by an existing copy (the RWH reopens alone)"
done

# (6) a widened miss whose answer cannot be cut back
f=dc-signed
random_file "$T/$f.orig" 1
out=$(smbc "$SMBD_PORT" SMB3_11 "put $T/$f.orig $f" 2>&1) || fail "cannot put $f: $out"
REL_PORT=$(free_port) P3_PORT=$(free_port)
bg "$PY" "$TESTS_DIR/signflag.py" "$REL_PORT" "$SMBD_PORT" 2> "$T/signflag.log"
wait_port "$REL_PORT" 10 "$!" || fail "signflag.py did not start"
printf '[global]\nlisten = 127.0.0.1:%s\nupstream = 127.0.0.1:%s\nmode = forward\ncontrol_socket = %s\n[share share]\nwrite_behind = leased\nread_ahead = leased\n' \
    "$P3_PORT" "$REL_PORT" "$T/p3.sock" > "$T/p3.conf"
bg "$SMBACCEL" -c "$T/p3.conf" -f > "$T/proxy3.log" 2>&1
wait_port "$P3_PORT" 10 "$!" || fail "the third smbaccel did not start: $(tail -n 5 "$T/proxy3.log")"
out=$(WB_SMB_TIMEOUT=10 timeout 60 "$PY" "$TESTS_DIR/dc_signed.py" "$P3_PORT" "$f" "$T/$f.orig" 2>&1)
rc=$?
echo "$out" | sed "s/^/    signed: /"
sed 's/^/    /' "$T/signflag.log"
grep -q 'reason=cannot-sign' "$T/proxy3.log" || fail "(6) no connection closed as cannot-sign: $(tail -n 5 "$T/proxy3.log")"
[ $rc -eq 0 ] || fail "(6) a reader of the copy after the widened miss's connection was closed (above)"

# (7) other names of the same file
out=$(timeout 60 "$PY" "$TESTS_DIR/dc_alias.py" "$PROXY_PORT" 3.0 alias.doc 2>&1)
rc=$?
echo "$out" | sed "s/^/    alias: /"
[ $rc -eq 0 ] || fail "(7) a write through another name of the file left a reader's copy (above)"

info "stats: $(stats_line dc_hits dc_waits dc_widened dc_fetches dc_valid_ok dc_valid_failed.last-write-time dc_valid_failed.creation-time dc_drops.write dc_drops.break dc_drops.stale ledger_errors)"
# each reader's copy went for the write through the proxy; under leased
# the direct write's break took the second; under always the reopen's
# validation (LastWriteTime) did
assert_ge 4 "$(stat_get dc_drops.write)" "copies dropped by a write through the proxy"
assert_ge 2 "$(stat_get dc_drops.break)" "copies dropped by a break"
assert_ge 2 "$(stat_get dc_valid_failed.last-write-time)" "reopens that found the copy stale"
assert_eq 0 "$(stat_get dc_valid_failed.creation-time)" "copies found stale by CreationTime (files written through smbd)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
