#!/bin/bash
# test-timeout: 200
# Two users of one client GUID (a terminal server) on a share whose path
# is the user's own directory ([homes2], path = .../%U), neither asking a
# lease (pl_users.py: impacket + raw SMB2, one connection per user with
# the same ClientGuid): one name, two files.  A writes its w.bin and
# keeps it open while B writes its own; A reads its r.bin, B reads its
# own, A reads again.  smbaccel's leases for them must be two, as for two
# clients: no break of smbaccel's leases (proxy_lease_breaks 0) and no
# CREATE refused (proxy_lease_create_failed 0), and each user's file on
# smbd's disk what that user wrote; and A on a third connection of the
# client opens its own file with A's key (no break of A's lease).  Before
# 2026-12-08 both users' opens of a name asked one lease key (client GUID,
# server, share, path): smbd broke A's RW lease to none when B opened its
# w.bin, and the other two keys with it (proxy_lease_breaks 3).
. "$(dirname "$0")/lib.sh"
require_smbaccel "two users of one client GUID"

ensure_test_user
ensure_test_user "$SMB_USER2"
for u in "$SMB_USER" "$SMB_USER2"; do
	mkdir -p "$T/h/$u"
	head -c 300000 /dev/urandom > "$T/h/$u/r.bin"
	cp "$T/h/$u/r.bin" "$T/$u.r.bin"
	chown -R "$u" "$T/h/$u"
	chmod 700 "$T/h/$u"
done
start_smbd_users "[homes2]
	path = $T/h/%U
	read only = no"
PROXY_SHARE_SECTION=no start_proxy "log_level = debug" "" "[share homes2]" \
    "write_behind = leased" "read_ahead = leased"
export PYTHONPATH=$TESTS_DIR

run() {	# run PORT: pl_users.py's line
	rm -f "$T/h/$SMB_USER/w.bin" "$T/h/$SMB_USER2/w.bin"
	local o
	o=$(WB_SMB_TIMEOUT=60 timeout 120 "$PY" "$TESTS_DIR/pl_users.py" "$1" \
	    "$SMB_USER" "$SMB_USER2" "$SMB_PASS" "$T" 2>&1) || fail "pl_users.py $1: $o"
	echo "$o"
}
disk() {	# disk WHAT: each user's w.bin on smbd's disk is what it wrote
	local u
	for u in "$SMB_USER" "$SMB_USER2"; do
		assert_eq "$(sha256sum < "$T/$u.w.bin")" "$(sha256sum < "$T/h/$u/w.bin")" \
		    "$1: $u's w.bin on smbd's disk"
	done
}
want="a=0x00000000 b=0x00000000 b2=0x00000000 aread=ok bread=ok a2=ok same=ok"
dir=$(run "$SMBD_PORT")
assert_eq "$want" "$dir" "directly"
disk directly
out=$(run "$PROXY_PORT")
info "through smbaccel: $out"
info "leases granted $(stat_get proxy_leases_granted), breaks $(stat_get proxy_lease_breaks), create failed $(stat_get proxy_lease_create_failed)"
assert_eq "$want" "$out" "through smbaccel"
disk "through smbaccel"
assert_eq 0 "$(stat_get proxy_lease_create_failed)" "CREATEs refused with smbaccel's lease"
assert_eq 0 "$(stat_get proxy_lease_breaks)" "breaks of smbaccel's leases"
assert_eq 0 "$(stat_get ledger_errors)" "ledger errors"
assert_eq 0 "$(stat_get breaks_unacked)" "breaks left to smbd's timeout"
# three sessions through smbaccel, each of a user smbaccel read (NTLM)
assert_eq 3 "$(grep -c 'user known (ntlm): smbaccel.s lease keys are the user.s' "$PROXY_LOG")" \
    "sessions whose user smbaccel read"
proxy_alive || fail "proxy died"
info "PASS"
