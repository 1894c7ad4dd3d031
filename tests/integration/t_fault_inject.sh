#!/bin/bash
# sanitizer: no (LD_PRELOADs its own allocator shim)
# test-timeout: 420
# Fault injection into bin/smbaccel with the LD_PRELOAD shim
# tests/fault/failinject.c: for N over a whole client session, fail the Nth
# allocation (malloc/calloc/realloc), the Nth socket read, the Nth socket
# write and every one after it (a dead network), the upstream connect.
# The session (tests/fault/fi_client.py, impacket at 2.1 so write-behind
# and read-ahead are active): login, create, 64 x 1 KiB writes, 16 x 4 KiB
# reads, close.  Every session must end ok (data read back and on disk
# equal to what was written) or with an error / closed connection, never
# with wrong data or a hang; the daemon must never die, also when the
# fault hits the first session of a fresh daemon (N = 1..6).  A daemon that dies
# is restarted (the run goes on, the test fails) so that one run lists
# every fatal N.  Then:
#  - a few sessions with real libsmbclient (smbdd 1 KiB writes, 4 KiB
#    verify) under allocation faults;
#  - leaks: the daemon under valgrind through a series of faulted
#    sessions, then SIGTERM: no definitely/indirectly lost bytes, no
#    memcheck errors.
#   FAULT_MALLOC_STEP, FAULT_IO_STEP  step of N (default 2 and 3; 1 for all)
#   FAULT_SKIP_LIBEV=1  do not fail allocations made inside libev (libev
#                       aborts on them unless the daemon installs
#                       ev_set_allocator)
. "$(dirname "$0")/lib.sh"
require_smbaccel "fault injection into bin/smbaccel"

MSTEP=${FAULT_MALLOC_STEP:-2}
IOSTEP=${FAULT_IO_STEP:-3}
command -v cc >/dev/null || skip "no C compiler"
"$PY" -c 'import impacket' 2>/dev/null || skip "python3-impacket not installed"
cc -shared -fPIC -O2 -Wall -o "$T/failinject.so" "$TOP/tests/fault/failinject.c" -ldl ||
    fail "cannot build failinject.so"
FIC=$TOP/tests/fault/fi_client.py
SKIPENV=
[ "${FAULT_SKIP_LIBEV:-0}" = 1 ] && SKIPENV=FI_SKIP=libev

start_smbd
PROXY_PORT=$(free_port) || fail "no free port"
export PROXY_PORT
write_proxy_conf "$PROXY_CONF" "read_ahead = always"
: > "$T/fi.ctl"

# start_fi [wrapper...]: the daemon with the shim, armed at each accept.
start_fi() {
	env LD_PRELOAD="$T/failinject.so" FI_ARM=accept FI_CTL="$T/fi.ctl" \
	    FI_LOG="$T/fi.log" $SKIPENV "$@" "$SMBACCEL" -c "$PROXY_CONF" -f \
	    </dev/null >>"$PROXY_LOG" 2>&1 &
	PROXY_PID=$!
	wait_port "$PROXY_PORT" 30 "$PROXY_PID" || fail "daemon with failinject.so not accepting"
	[ "${COLD:-}" = 1 ] && return 0
	# one clean session first: lazy initialisation (OpenSSL, libev arrays)
	# then happens outside the counted sessions
	"$PY" "$FIC" "$PROXY_PORT" "$SHARE_DIR" "$T/fi.ctl" "$PROXY_PID" none:1:1:1 \
	    >> "$T/warmup.txt" 2>&1 || { cat "$T/warmup.txt"; fail "warm-up session failed"; }
}

deaths=0
# run_specs SPEC...: run fi_client.py over the ranges; restart the daemon
# each time it dies and go on with the rest.
run_specs() {
	local specs="$*" rc out
	while [ -n "$specs" ]; do
		out=$T/fi-run.txt
		"$PY" "$FIC" "$PROXY_PORT" "$SHARE_DIR" "$T/fi.ctl" "$PROXY_PID" $specs > "$out" 2>&1
		rc=$?
		grep -v '^SUMMARY\|^RESUME' "$out" >> "$T/results.txt"
		[ $rc -eq 2 ] || { [ $rc -le 1 ] || { cat "$out"; fail "fi_client.py failed ($rc)"; }; break; }
		deaths=$((deaths + 1))
		wait "$PROXY_PID"; drc=$?
		echo "daemon died (exit status $drc) at: $(grep ' BAD ' "$out" | tail -n 1)" |
		    tee -a "$T/deaths.txt"
		{ tail -n 3 "$PROXY_LOG"; echo; } | grep . | sed 's/^/    log: /' | tee -a "$T/deaths.txt"
		specs=$(sed -n 's/^RESUME //p' "$out")
		[ $deaths -le 40 ] || fail "the daemon died more than 40 times; giving up"
		start_fi
	done
}

t0=$(now)
# cold: the first sessions of a fresh daemon, where libev still grows its
# arrays (a failed allocation there aborts unless ev_set_allocator is used)
for n in 1 2 3 4 5 6; do
	echo "malloc $n" > "$T/fi.ctl"
	COLD=1 start_fi
	FI_TIMEOUT=5 "$PY" "$FIC" "$PROXY_PORT" "$SHARE_DIR" "$T/fi.ctl" "$PROXY_PID" \
	    "malloc:$n:$n:1" > "$T/cold.txt" 2>&1
	sed -n 's/^malloc/cold malloc/p' "$T/cold.txt" | tee -a "$T/results.txt" | sed 's/^/  /'
	if proxy_alive; then
		stop_proxy
	else
		deaths=$((deaths + 1))
		wait "$PROXY_PID"; drc=$?
		echo "daemon died (exit status $drc) at: cold malloc $n" | tee -a "$T/deaths.txt"
		{ tail -n 2 "$PROXY_LOG"; echo; } | grep . | sed 's/^/    log: /' | tee -a "$T/deaths.txt"
		PROXY_PID=
	fi
done
: > "$T/fi.ctl"
start_fi
info "allocation faults, step $MSTEP; read faults, step $IOSTEP; write faults (sticky), step $IOSTEP; connect"
# a session makes ~130 allocations, ~100 reads and ~100 writes (the shim
# logs the counts per session in fi.log)
run_specs "malloc:1:140:$MSTEP" "read:1:105:$IOSTEP" "write:1:100:$IOSTEP:sticky" \
    "connect:1:1:1" "accept:1:1:1"
grep '^session' "$T/fi.log" | sort | uniq -c | sort -rn | head -n 3 | sed 's/^/  counts per session: /'
info "impacket phase done in $(elapsed "$t0") s"
awk '$1 == "cold" { print "cold-" $2, $4; next } { print $1, $3 }' "$T/results.txt" |
    sort | uniq -c | sed 's/^/  /'

# real libsmbclient sessions under allocation faults
t1=$(now)
home=$(client_home fi)
seed=$((RANDOM + 1))
for n in 5 17 33 49 65 81 97 113; do
	echo "malloc $n" > "$T/fi.ctl"
	rm -f "$SHARE_DIR/dd"
	out=$(SMBC_HOME=$home timeout 60 "$SMBDD" write "$(smb_url "$PROXY_PORT" dd)" 1K 64 \
	    -U "$SMB_USER%$SMB_PASS" -s "$seed" -q -f 2>&1); wrc=$?
	res="write=$wrc"
	: > "$T/fi.ctl"
	if [ $wrc -eq 0 ]; then
		out=$(SMBC_HOME=$home timeout 60 "$SMBDD" verify "$(smb_url "$PROXY_PORT" dd)" 4K 16 \
		    -U "$SMB_USER%$SMB_PASS" -s "$seed" -q 2>&1); vrc=$?
		res="$res verify=$vrc"
		[ $vrc -eq 0 ] || echo "smbdd malloc $n BAD: data written without error does not verify: $out" >> "$T/results.txt"
	fi
	[ $wrc -eq 3 ] || [ $wrc -eq 124 ] && echo "smbdd malloc $n BAD: write exit $wrc: $out" >> "$T/results.txt"
	echo "  smbdd malloc $n: $res"
	if ! proxy_alive; then
		echo "smbdd malloc $n BAD daemon died" >> "$T/results.txt"
		deaths=$((deaths + 1))
		{ tail -n 3 "$PROXY_LOG"; echo; } | grep . | sed 's/^/    log: /' | tee -a "$T/deaths.txt"
		wait "$PROXY_PID"
		start_fi
	fi
done
: > "$T/fi.ctl"
info "smbdd phase done in $(elapsed "$t1") s"
stop_proxy

# leaks: the same kinds of faults with the daemon under valgrind
if command -v valgrind >/dev/null; then
	t2=$(now)
	SKIPENV=FI_SKIP=libev   # a libev abort would end the run, not leak
	start_fi valgrind -q --leak-check=full --show-leak-kinds=definite,indirect \
	    --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
	    --log-file="$T/valgrind.log"
	FI_TIMEOUT=30 "$PY" "$FIC" "$PROXY_PORT" "$SHARE_DIR" "$T/fi.ctl" "$PROXY_PID" \
	    malloc:3:130:9 read:5:100:19 write:10:90:40:sticky connect:1:1:1 none:1:1:1 \
	    > "$T/vg-run.txt" 2>&1
	vrc=$?
	sed 's/^/  valgrind: /' "$T/vg-run.txt" | grep -v ' ok \| error '
	grep -E ' BAD ' "$T/vg-run.txt" >> "$T/results.txt"
	[ $vrc -le 1 ] || fail "fi_client.py under valgrind: exit $vrc"
	stop_proxy
	info "valgrind phase done in $(elapsed "$t2") s; daemon exit status $PROXY_RC"
	if [ -s "$T/valgrind.log" ]; then
		echo "---- valgrind.log"; head -n 80 "$T/valgrind.log"
	fi
	[ "$PROXY_RC" = 0 ] || fail "daemon under valgrind exited with $PROXY_RC (99: memcheck errors or leaks)"
else
	info "valgrind not installed: leak check skipped"
fi

echo "---- every session that was not ok or error:"
grep -E ' BAD ' "$T/results.txt" || echo "  (none)"
[ -s "$T/deaths.txt" ] && { echo "---- deaths:"; cat "$T/deaths.txt"; }
[ "$deaths" -eq 0 ] || fail "the daemon died $deaths times under fault injection (see above)"
grep -q ' BAD ' "$T/results.txt" && fail "wrong data or hangs under fault injection (see above)"
info "PASS in $(elapsed "$t0") s"
