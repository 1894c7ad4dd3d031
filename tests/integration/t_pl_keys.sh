#!/bin/bash
# test-timeout: 300
# The key of the lease smbaccel asks for a client that asks none (lease.c:
# one key per client, server, share and path) where a name and a file part
# (pl_keys.py, impacket + raw SMB2, no lease asked; default policy):
#  - elsewhere (3.0, 2.1): a file the client keeps open is renamed by a
#    client that does not go through smbaccel, and a new file created at
#    its name; the lease went with the renamed file, so the client's next
#    CREATE of the name, asking that key, is refused INVALID_PARAMETER,
#    where directly it succeeds.  Known limit: that one CREATE still is
#    where the client's open held the key with write caching; the next
#    asks another key and succeeds (before 2026-12-07 every later CREATE
#    of the name was refused too).  Here the other client's open has
#    broken write caching first, and since 2026-12-07 an open whose key
#    is held with read caching only asks a key of its own: the CREATE
#    succeeds at once, as directly;
#  - case (3.0, 2.1): a file written with 64 KiB writes (no id to spare)
#    opened again by the same client under another letter case: the same
#    key, so no break (before, a key of its own: the server broke the
#    first open's write caching, the acknowledgement had no id, and the
#    open waited 35 s for smbd's break timeout);
#  - failren (3.0, 2.1): the same after a rename of the file that fails
#    (OBJECT_NAME_COLLISION): the lease stays with its name (before, the
#    forwarded rename marked it renamed: a new key, a break, 35 s);
#  - cased (3.0): on a share with `case sensitive = yes`, KCs-n and kcs-n
#    are two files: the key borrowed by case is refused once
#    (INVALID_PARAMETER, known limit), the retry succeeds, and no key is
#    borrowed by case on that share any more (the second pair succeeds at
#    once); each file has its own data on disk;
#  - inflight (3.0): two connections of one client share the lease; one's
#    CLOSE goes upstream with its buffered data in one compound over a
#    slow link (pl_slowlink.py, 64 KB/s), and another client, directly on
#    smbd, opens and reads the file meanwhile: the break is acknowledged
#    only once the compound's WRITEs are answered, and it reads all the
#    data (before, the acknowledgement went at once: it read zeros where
#    the closing open's data was still on its way).
# Each compared with a direct run where the result is smbaccel's alone;
# the files on smbd's disk are checked.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
. "$TESTS_DIR/pl_lib.sh"
require_smbaccel "lease keys of smbaccel's leases across renames and case"

CASED_DIR=$T/cased
mkdir -p "$CASED_DIR" || fail "cannot create $CASED_DIR"
start_smbd "" "[cased]" "path = $CASED_DIR" "read only = no" "case sensitive = yes"
chown "$SMB_USER" "$CASED_DIR"
pl_slowlink_proxy

pattern() {	# pattern CHAR BYTES: sha256 of BYTES bytes of CHAR
	head -c "$2" /dev/zero | tr '\0' "$1" | sha256sum | cut -d' ' -f1
}

keys() {	# keys PORT DIALECT CASE: pl_keys.py's output; fails on its failure
	local out
	out=$(WB_SMB_TIMEOUT=90 timeout 120 "$PY" "$TESTS_DIR/pl_keys.py" "$1" "$SMBD_PORT" "$2" "$3" 2>&1) ||
	    fail "pl_keys.py $3 $2 on port $1: $out"
	echo "$out"
}

# seconds a CREATE took (the line "secs=S") under 5: smbd's break timeout
# is 35 s, an open that breaks nothing is answered at once
quick() {	# quick OUTPUT WHAT
	local s
	s=$(echo "$1" | sed -n 's/^secs=//p')
	awk -v s="$s" 'BEGIN { exit !(s != "" && s < 5) }' ||
	    problem "$2: the CREATE took ${s:-?} s (smbd's break timeout?)"
}

for d in 3.0 2.1; do
	rm -f "$SHARE_DIR"/kr-*
	dir=$(keys "$SMBD_PORT" "$d" elsewhere)
	rm -f "$SHARE_DIR"/kr-*
	out=$(keys "$PROXY_PORT" "$d" elsewhere)
	info "elsewhere $d: directly $dir; through smbaccel $out"
	assert_eq "rename=0x00000000 open=0x00000000 again=-" "$dir" "elsewhere $d directly"
	[ "$out" = "$dir" ] || [ "$out" = "rename=0x00000000 open=0xc000000d again=0x00000000" ] ||
	    problem "elsewhere $d through smbaccel: '$out' (directly '$dir'; at most the first CREATE may fail)"
	[ "$out" = "$dir" ] || refused=yes
	[ "$(sha256 "$SHARE_DIR/kr-b")" = "$(pattern A 8192)" ] || problem "elsewhere $d: kr-b is not the first file's 8 KiB"
	[ "$(sha256 "$SHARE_DIR/kr-a")" = "$(pattern D 1024)" ] || problem "elsewhere $d: kr-a is not the 1 KiB written through the open that succeeded"
done
# the key refused is logged (the client's open of the renamed file held it
# with read caching after the other client's open broke its write
# caching, and since 2026-12-07 a new open then asks a key of its own: the
# CREATE succeeds at once and there is nothing to log)
[ "${refused:-}" != yes ] || log_has "renamed away by a client smbaccel does not see" ||
    problem "no log line for the key refused after a rename elsewhere"

for c in case failren; do
	f=KCase
	[ $c = failren ] && f=kf-a
	for d in 3.0 2.1; do
		rm -f "$SHARE_DIR"/KCase "$SHARE_DIR"/kf-*
		dir=$(keys "$SMBD_PORT" "$d" $c)
		rm -f "$SHARE_DIR"/KCase "$SHARE_DIR"/kf-*
		b0=$(stat_get proxy_lease_breaks) u0=$(stat_get breaks_unacked)
		out=$(keys "$PROXY_PORT" "$d" $c)
		b=$(( $(stat_get proxy_lease_breaks) - b0 )) u=$(( $(stat_get breaks_unacked) - u0 ))
		info "$c $d: directly $(echo $dir); through smbaccel $(echo $out); breaks of smbaccel's lease $b, unacknowledged $u"
		[ "$(echo "$out" | head -n 1)" = "$(echo "$dir" | head -n 1)" ] ||
		    problem "$c $d through smbaccel: '$(echo "$out" | head -n 1)', directly '$(echo "$dir" | head -n 1)'"
		[ $c = case ] && assert_eq "open=0x00000000 read=ok" "$(echo "$dir" | head -n 1)" "$c $d directly"
		[ $c = failren ] && assert_eq "rename=0xc0000035 open=0x00000000 read=ok" "$(echo "$dir" | head -n 1)" "$c $d directly"
		[ "$b" = 0 ] || problem "$c $d: $b break(s) of smbaccel's lease by the client's own open (a key of its own)"
		[ "$u" = 0 ] || problem "$c $d: $u break(s) left to smbd's break timeout"
		quick "$out" "$c $d"
		[ "$(sha256 "$SHARE_DIR/$f")" = "$(pattern A 524288)" ] || problem "$c $d: $f is not the 512 KiB written"
	done
done

rm -f "$CASED_DIR"/*
dir=$(keys "$SMBD_PORT" 3.0 cased)
for n in 1 2; do
	[ "$(sha256 "$CASED_DIR/KCs-$n")" = "$(pattern A 524288)" ] && [ "$(sha256 "$CASED_DIR/kcs-$n")" = "$(pattern B 65536)" ] ||
	    fail "cased directly: KCs-$n and kcs-$n are not two files ($(ls "$CASED_DIR" | tr '\n' ' ')): case sensitive = yes not in effect?"
done
rm -f "$CASED_DIR"/*
out=$(keys "$PROXY_PORT" 3.0 cased)
info "cased 3.0: directly $dir; through smbaccel $out"
assert_eq "first=0x00000000 again=- second=0x00000000" "$dir" "cased directly"
[ "$out" = "$dir" ] || [ "$out" = "first=0xc000000d again=0x00000000 second=0x00000000" ] ||
    problem "cased through smbaccel: '$out' (directly '$dir'; at most the first CREATE may fail)"
for n in 1 2; do
	[ "$(sha256 "$CASED_DIR/KCs-$n")" = "$(pattern A 524288)" ] || problem "cased: KCs-$n is not its 512 KiB of A"
	[ "$(sha256 "$CASED_DIR/kcs-$n")" = "$(pattern B 65536)" ] || problem "cased: kcs-$n is not its 64 KiB of B"
done

# the one case on a slow link: what smbaccel sends upstream takes seconds
echo 64000 > "$T/rate"
sleep 0.5
u0=$(stat_get breaks_unacked)
out=$(WB_SMB_TIMEOUT=90 timeout 120 "$PY" "$TESTS_DIR/pl_keys.py" "$PROXY_PORT" "$SMBD_PORT" 3.0 inflight 2>&1)
rc=$?
echo 0 > "$T/rate"
info "inflight: $(echo $out)"
[ $rc -eq 0 ] || problem "inflight: the other client did not read all the data (exit $rc): the break was acknowledged before the closing open's WRITEs were answered"
line=$(grep "file=kw-f the server breaks smbaccel's lease" "$PROXY_LOG" | tail -n 1)
info "inflight: $line"
# the case is the one meant only if the break came with A's WRITEs on
# their way
n=$(echo "$line" | sed -n 's/.* \([0-9]*\) writes in flight.*/\1/p')
[ "${n:-0}" -ge 1 ] || problem "inflight: the break of smbaccel's lease of kw-f came with no write in flight: '$line'"
assert_eq 0 $(( $(stat_get breaks_unacked) - u0 )) "inflight: breaks left to smbd's break timeout"

info "stats: $(stats_line proxy_leases_asked proxy_leases_granted proxy_lease_breaks proxy_lease_breaks_acked breaks_unacked writes_absorbed deferred_errors ledger_errors)"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
assert_eq 0 "$(stat_get deferred_errors)" "stats deferred_errors"
problems_end
proxy_alive || fail "proxy died"
info "PASS"
