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
			# the copy of the first dialect's run is valid for this open
			assert_eq 1 $((a1 - a0)) "$d dr-$sz: opens served by the existing copy"
			assert_ge 1400 $((h1 - h0)) "$d dr-$sz: reads served from the copy (of 1500)"
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
