#!/bin/bash
# test-timeout: 200
# Two users' files under one name must stay two files in smbaccel's
# caches and locks (dc_users.py; a second user, $SMB_USER2):
#  - a case-sensitive share ([cs]): A's private Secret.bin and B's own
#    secret.bin, B's given A's times and size (which B may read); after A
#    read its file at scattered offsets (the document cache copies it), B
#    reads its own file whole, its CREATE alone and in a compound: B must
#    get its own bytes (before the fix, in a compound, all of A's file,
#    which the server refuses B directly);
#  - a share whose path is the user's own directory ([homes2], %U): the
#    same with doc.bin in each;
#  - [homes2]: A's byte-range lock on its own f.bin must not refuse B's
#    read of B's f.bin (before: FILE_LOCK_CONFLICT through smbaccel).
# smbaccel tells files apart by the server's on-disk id (QFid): a copy is
# made and served only with the id on both sides.
. "$(dirname "$0")/lib.sh"
require_smbaccel "the document cache between users"

ensure_test_user
ensure_test_user "$SMB_USER2"
mkdir -p "$T/cs" "$T/h/$SMB_USER" "$T/h/$SMB_USER2"
chmod 1777 "$T/cs"
for u in "$SMB_USER" "$SMB_USER2"; do
	head -c 20000 /dev/urandom > "$T/h/$u/f.bin"
	chown -R "$u" "$T/h/$u"
	chmod 700 "$T/h/$u"
done
head -c 200000 /dev/urandom > "$T/cs/Secret.bin"
head -c 200000 /dev/urandom > "$T/h/$SMB_USER/doc.bin"
chown "$SMB_USER" "$T/cs/Secret.bin" "$T/h/$SMB_USER/doc.bin"
chmod 600 "$T/cs/Secret.bin" "$T/h/$SMB_USER/doc.bin"
start_smbd_users "[cs]
	path = $T/cs
	read only = no
	case sensitive = yes

[homes2]
	path = $T/h/%U
	read only = no"
PROXY_SHARE_SECTION=no start_proxy "" "[share cs]" "read_ahead = leased" \
    "[share homes2]" "read_ahead = leased"

run() {	# run PORT ARGS...
	timeout 60 "$PY" "$TESTS_DIR/dc_users.py" "$1" "${@:2:1}" "$SMB_USER" "$SMB_USER2" "$SMB_PASS" "${@:3}" 2>&1
}
for c in "cs compound" "cs standalone" "homes compound" "homes standalone"; do
	rm -f "$T/cs/secret.bin" "$T/h/$SMB_USER2/doc.bin"
	# shellcheck disable=SC2086
	out=$(run "$PROXY_PORT" $c) || fail "$c: dc_users.py: $out"
	info "$c: $out"
	assert_eq "RESULT own" "$out" "$c: what B read of its own file"
done
dir=$(run "$SMBD_PORT" lock) || fail "lock directly: $dir"
out=$(run "$PROXY_PORT" lock) || fail "lock through smbaccel: $out"
info "lock: directly $dir, through smbaccel $out"
assert_eq "read=00000000" "$dir" "lock directly"
assert_eq "$dir" "$out" "lock through smbaccel, as directly"
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
