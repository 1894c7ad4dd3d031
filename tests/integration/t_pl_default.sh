#!/bin/bash
# test-timeout: 900
# Issue 15 test 1: the default policy (write_behind = read_ahead = leased,
# proxy_lease on) accelerates a client that asks for no oplock or lease.
# smbdd (libsmbclient: no oplock, no lease) writes PL_MIB (default 16) MiB
# in 1 KiB writes through smbaccel and reads it back in 4 KiB reads, at
# 3.1.1, 3.0 and 2.1 (smbaccel asks a lease) and 2.0.2 (an oplock).  Each:
#  - the file on smbd's disk has the sha256 of the same pattern written
#    directly; every 4 KiB read compares its data with the pattern;
#  - the upstream leg (a dumpcap capture, tests/tools/upstream-sizes) shows
#    >= 95 % of the bytes in WRITEs >= 512 KiB (64 KiB at 2.0.2);
#  - >= 90 % of the 4 KiB reads were served by read-ahead (ra_hits), and
#    the upstream leg carried fewer than a tenth as many READs;
#  - the upstream CREATEs carry smbaccel's lease request (an exclusive
#    oplock at 2.0.2), the client leg's CREATE answers carry no lease
#    context and OplockLevel 0 only, and the client leg has no break;
#  - smbclient put/get (no lease either) intact, its opens measured: are
#    they standalone CREATEs (which smbaccel may give a lease)?
# Control: with proxy_lease = off (reload) nothing is absorbed.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
. "$TESTS_DIR/pl_lib.sh"
require_smbaccel "leases on behalf of clients"

MIB=${PL_MIB:-16}
DIALECTS=${PL_DIALECTS:-SMB3_11 SMB3_00 SMB2_10 SMB2_02}
start_smbd
# flush_idle 1s: a client stalled by a busy machine must not split the
# coalesced writes (the timer is not what is tested here).  No share
# section: the built-in defaults (leased, leased, proxy_lease on).
PROXY_SHARE_SECTION=no start_proxy "" "[share share]" "flush_idle = 1s" "flush_max_age = 10s"
seed=$((RANDOM * 7 + 5))
out=$(smbdd_run write "$SMBD_PORT" ref 1M "$MIB" -s "$seed" -q 2>&1) ||
    fail "direct reference write failed: $out"
ref=$(sha256 "$SHARE_DIR/ref")
home=$(client_home pl)

for d in $DIALECTS; do
	a0=$(stat_get writes_absorbed) h0=$(stat_get ra_hits) g0=$(stat_get proxy_leases_granted)
	pl_capture_start "pl-$d"
	t0=$(now)
	out=$(timeout 300 env HOME="$home" "$SMBDD" write "$(smb_url "$PROXY_PORT" "pl-$d")" \
	    1K $((MIB * 1024)) -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$seed" -q -f 2>&1) ||
	    { capture_stop; fail "$d: smbdd 1 KiB write through smbaccel failed: $out"; }
	tw=$(elapsed "$t0")
	t0=$(now)
	out2=$(timeout 300 env HOME="$home" "$SMBDD" verify "$(smb_url "$PROXY_PORT" "pl-$d")" \
	    4K $((MIB * 256)) -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$seed" -q 2>&1) ||
	    { capture_stop; fail "$d: smbdd 4 KiB verify through smbaccel failed: $out2"; }
	tr=$(elapsed "$t0")
	capture_stop
	info "$d: write ${tw}s ($(echo "$out" | tail -n 1)); verify ${tr}s"
	got=$(sha256 "$SHARE_DIR/pl-$d")
	[ "$got" = "$ref" ] || fail "$d: sha256 on disk ($got, $(stat -c %s "$SHARE_DIR/pl-$d") bytes) differs from the pattern's ($ref)"
	absorbed=$(( $(stat_get writes_absorbed) - a0 ))
	hits=$(( $(stat_get ra_hits) - h0 ))
	granted=$(( $(stat_get proxy_leases_granted) - g0 ))
	info "$d: absorbed $absorbed of $((MIB * 1024)) writes, $hits of $((MIB * 256)) reads from read-ahead, $granted leases/oplocks granted to smbaccel"
	assert_ge 2 "$granted" "$d: leases (oplocks) granted to smbaccel (write and read open)"
	assert_ge $((MIB * 1024 * 95 / 100)) "$absorbed" "$d: 1 KiB writes absorbed"
	assert_ge $((MIB * 256 * 9 / 10)) "$hits" "$d: 4 KiB reads served by read-ahead"
	case $d in SMB2_02) min=65536 max=65536 ;; *) min=524288 max=8388608 ;; esac
	pl_legs "$T/legs-$d.json" "$min"
	"$PY" -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))[sys.argv[2]]["sizes"], open(sys.argv[3], "w"))' \
	    "$T/legs-$d.json" "$SMBD_PORT" "$T/sizes-$d.json"
	"$PY" "$TESTS_DIR/wb_sizes.py" "$T/sizes-$d.json" write 0.95 $((MIB * 1048576)) "$max" "$d" ||
	    fail "$d: upstream WRITE sizes (above)"
	ureads=$(pl_get "$T/sizes-$d.json" read.count)
	info "$d: upstream READs $ureads for $((MIB * 256)) client reads"
	[ "$ureads" -lt $((MIB * 256 / 10)) ] || fail "$d: $ureads upstream READs for $((MIB * 256)) 4 KiB client reads"
	cli_rqls=$(pl_get "$T/legs-$d.json" "$PROXY_PORT.create_answers.ctx.RqLs")
	cli_op=$(pl_get "$T/legs-$d.json" "$PROXY_PORT.create_answers.oplock")
	cli_brk=$(pl_get "$T/legs-$d.json" "$PROXY_PORT.breaks.count")
	cli_req_rqls=$(pl_get "$T/legs-$d.json" "$PROXY_PORT.create_requests.ctx.RqLs")
	up_rqls=$(pl_get "$T/legs-$d.json" "$SMBD_PORT.create_requests.ctx.RqLs")
	up_op=$(pl_get "$T/legs-$d.json" "$SMBD_PORT.create_answers.oplock")
	info "$d: client leg: CREATE answers oplock $cli_op, lease contexts $cli_rqls, breaks $cli_brk; upstream: lease requests $up_rqls, granted oplock $up_op"
	assert_eq 0 "$cli_req_rqls" "$d: the client itself asked for leases (test premise)"
	assert_eq 0 "$cli_rqls" "$d: lease contexts in CREATE answers to the client"
	assert_eq 0 "$cli_brk" "$d: break notifications on the client leg"
	"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if set(d) <= {"0"} and d else 1)' "$cli_op" ||
	    fail "$d: OplockLevel in CREATE answers to the client: $cli_op (only 0 expected)"
	if [ "$d" = SMB2_02 ]; then
		"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if int(d.get("8", 0)) >= 1 else 1)' "$up_op" ||
		    fail "$d: no exclusive oplock granted upstream: $up_op"
	else
		assert_ge 2 "$up_rqls" "$d: upstream CREATEs with smbaccel's lease request"
	fi
	rm -f "$CAP_FILE" "$SHARE_DIR/pl-$d"
done

# smbclient (no lease, no oplock either): data intact; how it opens a
# file for put/get, from the client leg: are its CREATEs standalone?
random_file "$T/put" 8
pl_capture_start smbclient
SMBC_HOME=$home smbc "$PROXY_PORT" SMB3_11 "put $T/put smbc; get smbc $T/got" > "$T/smbc.out" 2>&1 ||
    { capture_stop; cat "$T/smbc.out"; fail "smbclient put/get through smbaccel"; }
capture_stop
assert_file_eq "$T/put" "$SHARE_DIR/smbc" "smbclient put, on disk"
assert_file_eq "$T/put" "$T/got" "smbclient get"
pl_legs "$T/legs-smbc.json"
info "smbclient: upstream CREATEs $(pl_get "$T/legs-smbc.json" "$SMBD_PORT.create_requests.count"), with smbaccel's lease $(pl_get "$T/legs-smbc.json" "$SMBD_PORT.create_requests.ctx.RqLs"); client leg lease contexts in answers $(pl_get "$T/legs-smbc.json" "$PROXY_PORT.create_answers.ctx.RqLs")"
assert_eq 0 "$(pl_get "$T/legs-smbc.json" "$PROXY_PORT.create_answers.ctx.RqLs")" "smbclient: lease contexts in CREATE answers"

# Control: proxy_lease = off, same client: nothing absorbed (leased).
PROXY_SHARE_SECTION=no write_proxy_conf "$PROXY_CONF" "" "[share share]" "proxy_lease = off" "flush_idle = 1s"
kill -HUP "$PROXY_PID"
wait_log 'reload' 10 || fail "no reload logged"
sleep 0.5
a0=$(stat_get writes_absorbed)
out=$(smbdd_run write "$PROXY_PORT" off 1K 1024 -s "$seed" -q 2>&1) || fail "proxy_lease off: smbdd write: $out"
assert_eq 0 $(( $(stat_get writes_absorbed) - a0 )) "writes absorbed with proxy_lease = off under leased"

info "stats: $(stats_line proxy_leases_asked proxy_leases_granted proxy_leases_write proxy_lease_breaks breaks_unacked creates_rewritten writes_absorbed ra_hits deferred_errors ledger_errors)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
assert_eq 0 "$(stat_get deferred_errors)" "stats deferred_errors"
assert_eq 0 "$(stat_get breaks_unacked)" "stats breaks_unacked"
proxy_alive || fail "proxy died"
info "PASS"
