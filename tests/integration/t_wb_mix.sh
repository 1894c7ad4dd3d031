#!/bin/bash
# test-timeout: 400
# Issue 3 test 3: a seeded random mix (wb_mix.py, profile wb) of writes
# (1 B - 256 KiB: sequential runs, overlapping, gaps, pipelined bursts out
# of order), reads, FLUSH, SET_INFO end-of-file, QUERY_INFO, close/reopen
# and reads by a second connection, through the proxy (write_behind =
# always) at 3.0, 2.1 and 2.0.2, each compared op by op with the same
# operations on a local file; at the end the server's file must equal the
# local one.  wb_overlap.py first: a write inside a just-written (buffered)
# range must win over it, every time.  A last run works on 3 files at once on one connection (several
# opens with buffered writes).  A direct run first proves the script
# against smbd itself.
# WB_MIX_SEED=N repeats a run; WB_MIX_OPS sets the number of operations.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "write-behind"

OPS=${WB_MIX_OPS:-3000}
SEED=${WB_MIX_SEED:-$((RANDOM * 32768 + RANDOM))}
RUNS=${WB_MIX_RUNS:-3.0:1 2.1:1 2.0.2:1 3.0:3}
start_smbd
start_proxy
info "seed $SEED (WB_MIX_SEED=$SEED repeats it)"

# mix PORT DIALECT NAME SEED NFILES: run it, compare the disk files with
# the models.
mix() {
	local out rc k
	out=$(timeout 300 "$PY" "$TESTS_DIR/wb_mix.py" "$1" "$2" "$3" "$4" "$OPS" "$T/$3.model" wb - "$5" 2>&1)
	rc=$?
	echo "$out" | tail -n 25 | sed "s/^/    $3: /"
	[ $rc -eq 124 ] && echo "    $3: timed out (the client hung waiting for an answer)"
	[ $rc -eq 0 ] || return 1
	if [ "$5" = 1 ]; then
		cmp "$T/$3.model" "$SHARE_DIR/$3" > "$T/$3.cmp" 2>&1 ||
		    { echo "    $3: server file differs from the local model: $(cat "$T/$3.cmp")"; return 1; }
	else
		for k in $(seq 1 "$5"); do
			cmp "$T/$3.model.$k" "$SHARE_DIR/$3.$k" > "$T/$3.cmp" 2>&1 ||
			    { echo "    $3.$k: server file differs from the local model: $(cat "$T/$3.cmp")"; return 1; }
		done
	fi
}

# Overlapping rewrites in order (WB_OVERLAP_N times, 3.0 and 2.0.2).
for d in 3.0 2.0.2; do
	out=$(timeout 120 "$PY" "$TESTS_DIR/wb_overlap.py" "$PROXY_PORT" "$d" "overlap-$d" "${WB_OVERLAP_N:-600}" 2>&1) ||
	    problem "$d: overlapping rewrite applied out of order: $out"
	info "$d overlap: $(echo "$out" | tail -n 1)"
done
# each rewrite of a range still in flight waited for it (the check that
# keeps new data behind old is a precise one: t_goclient shows writes that
# do not overlap do not wait)
assert_ge 1 "$(stat_get write_overlap_waits)" "writes that waited for an overlapping write in flight"
info "writes that waited for an overlapping write in flight: $(stat_get write_overlap_waits)"

mix "$SMBD_PORT" 3.0 direct "$SEED" 1 || fail "the mix fails directly against smbd (test bug or smbd): seed $SEED"
mix "$SMBD_PORT" 3.0 direct3 "$SEED" 3 || fail "the 3-file mix fails directly against smbd (test bug or smbd): seed $SEED"
s=$SEED
for r in $RUNS; do
	d=${r%:*} n=${r#*:}
	a0=$(stat_get writes_absorbed)
	mix "$PROXY_PORT" "$d" "mix-$d-$n" "$s" "$n" ||
	    problem "mix of $n file(s) through the proxy at $d differs from the local file (WB_MIX_SEED=$SEED, seed $s)"
	a1=$(stat_get writes_absorbed)
	info "$d, $n file(s): $((a1 - a0)) writes absorbed"
	[ $((a1 - a0)) -ge 100 ] || problem "only $((a1 - a0)) writes absorbed at $d"
	s=$((s + 1))
done
info "stats: $(stats_line writes_absorbed writes_forwarded upstream_writes flush_causes.noncontig flush_causes.request flush_causes.peer deferred_errors ledger_errors)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
assert_eq 0 "$(stat_get deferred_errors)" "stats deferred_errors"
proxy_alive || fail "proxy died"
problems_end
info "PASS"
