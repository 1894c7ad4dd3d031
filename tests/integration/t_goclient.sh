#!/bin/bash
# A third client implementation: tests/tools/gosmb, on Debian's go-smb2
# (neither Samba's code nor impacket's), through smbaccel.  go-smb2 signs
# every request of a session, required or not, and
# verifies the signature of every signed answer it gets; it offers
# HMAC-SHA256 and AES-CMAC signing and AES-128-CCM/GCM sealing.  Each
# case writes 2 MiB (GO_KIB) in 1 KiB writes and reads them back in 4 KiB
# reads with every byte checked; the file on smbd's disk must equal the
# pattern (sha256 against `gosmb pattern`).
#  1. smbd not requiring signing, smbaccel holding no key: go-smb2's signed
#     requests are relayed as they come (nothing absorbed), and the
#     session is counted unkeyed and logged (reason no-key, the client
#     signs its requests) instead of passing unnoticed;
#  2. the same with the user's secret in smbaccel's secrets file, at 2.1
#     (HMAC-SHA256), 3.0.2 and 3.1.1 (AES-CMAC): every session keyed, the
#     writes absorbed and sent upstream coalesced, the reads served from
#     read-ahead, every answer smbaccel made signed so that go-smb2
#     accepts it;
#     Then 16 goroutines write the 2 MiB at once (gosmb -j 16: up to 16
#     writes in flight, arriving out of order): absorbed, none waiting for
#     another (write_overlap_waits 0: only a write that overlaps one in
#     flight waits; before, any write inside the hull of those in flight
#     waited a round trip, and over 20 ms this client ran at 0.2x direct);
#     16 readers at once read it back, every byte checked.
#  3. smbd with `server signing = mandatory` at 2.1, 3.0.2 and 3.1.1, and
#     with `server smb encrypt = required` at 3.0.2 and 3.1.1 (sealed):
#     as 2.  Where signing is required, go-smb2 1.1 takes an interim
#     answer (STATUS_PENDING, which smbd sends when a READ or WRITE takes
#     over 0.5 ms, unsigned as MS-SMB2 3.3.4.2 says) for a missing
#     signature and fails: directly against smbd, 23 of 60 runs of 64 KiB
#     writes and reads here.  smbd runs those synchronously for these
#     cases (aio read size = aio write size = 0: 0 of 60), so a loaded
#     machine cannot fail them; and answers a FLUSH at once, without the
#     fsync it runs asynchronously (strict sync = no: an fsync that took
#     over 0.5 ms got the save's FLUSH an interim answer, and go-smb2
#     failed "signing required").
#  In 2 and 3 each dialect also saves as an editor does (gosave: gosmb -F,
#  64 x 1 KiB, then FLUSH, QUERY_INFO, READ, SET_INFO each after one more
#  write): each goes upstream behind its file's buffered write in one
#  compound (requests_compounded; smbd checked every element's
#  signature, go-smb2 the answer smbaccel re-signed or re-sealed), the
#  size QUERY_INFO gives counts the write before it, the READ gives back
#  the block just written, and the file on smbd's disk is the pattern cut
#  where the last SET_INFO said.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "a third client implementation"
GOSMB=${GOSMB:-$TOP/bin/gosmb}
if [ ! -x "$GOSMB" ]; then
	[ -n "${CI:-}" ] && fail "$GOSMB not built (make with golang-go installed: make deps)"
	skip "$GOSMB not built (needs golang-go and golang-github-hirochachacha-go-smb2-dev)"
fi
KIB=${GO_KIB:-2048}
seed=$((RANDOM * 32768 + RANDOM + 1))
"$GOSMB" pattern "$seed" "${KIB}K" > "$T/want" || fail "gosmb pattern"
want=$(sha256 "$T/want")
info "seed $seed, $KIB KiB a case"

# gocase LABEL DIALECT MIN_ABSORBED: write and read back through smbaccel,
# the file checked on smbd's disk, then the stats deltas
gocase() {
	local label=$1 d=$2 min=$3 out
	snap "$label.a"
	out=$("$GOSMB" write "127.0.0.1:$PROXY_PORT" share "$label.dat" 1K "$KIB" \
	    -s "$seed" -m "$d" 2>&1) || fail "$label: gosmb write: $out"
	info "$label: $out"
	assert_eq "$want" "$(sha256 "$SHARE_DIR/$label.dat")" "$label: sha256 on smbd's disk"
	out=$("$GOSMB" read "127.0.0.1:$PROXY_PORT" share "$label.dat" 4K $((KIB / 4)) \
	    -s "$seed" -m "$d" 2>&1) || fail "$label: gosmb read (every byte checked): $out"
	info "$label: $out"
	snap "$label.b"
	deltas "$label.a" "$label.b"
	info "$label: absorbed $D_writes_absorbed, upstream writes $D_upstream_writes, read-ahead hits $D_ra_hits, keyed $D_sessions_keyed, unkeyed $D_sessions_unkeyed, bad signatures $D_bad_signatures"
	assert_eq 0 "$D_bad_signatures" "$label: bad signatures"
	assert_eq 0 "$D_ledger_errors" "$label: ledger errors"
	if [ "$min" -gt 0 ]; then
		assert_ge "$min" "$D_writes_absorbed" "$label: writes absorbed"
		assert_ge 2 "$D_sessions_keyed" "$label: sessions keyed (write and read)"
		assert_eq 0 "$D_sessions_unkeyed" "$label: sessions unkeyed"
		assert_ge $((KIB / 4 / 2)) "$D_ra_hits" "$label: reads served from read-ahead"
		[ "$D_upstream_writes" -le $((KIB / 8)) ] ||
		    fail "$label: $D_upstream_writes upstream writes for $KIB 1 KiB writes (not coalesced)"
	else
		assert_eq 0 "$D_writes_absorbed" "$label: writes absorbed without a key"
		assert_eq 2 "$D_sessions_unkeyed" "$label: sessions unkeyed (write and read)"
	fi
}

# gosave LABEL DIALECT: gosmb -F through smbaccel; the file on smbd's disk
# and the requests sent with their flush
gosave() {
	local label=$1 d=$2 out size=$(((64 + 4) * 1024 - 512))
	snap "$label.a"
	out=$("$GOSMB" write "127.0.0.1:$PROXY_PORT" share "$label.dat" 1K 64 \
	    -s "$seed" -m "$d" -F 2>&1) || fail "$label: gosmb write -F: $out"
	snap "$label.b"
	deltas "$label.a" "$label.b"
	assert_eq "$(head -c "$size" "$T/want" | sha256sum | cut -d' ' -f1)" \
	    "$(sha256 "$SHARE_DIR/$label.dat")" "$label: sha256 on smbd's disk ($size bytes)"
	info "$label: requests compounded with their flush $D_requests_compounded, compound writes $D_compound_writes, absorbed $D_writes_absorbed, bad signatures $D_bad_signatures"
	# FLUSH, QUERY_INFO, READ, QUERY_INFO, SET_INFO EOF; the FLUSH may
	# find the writes before it still in flight and wait for them
	assert_ge 3 "$D_requests_compounded" "$label: requests sent with their flush"
	assert_eq 0 "$D_compound_write_errors" "$label: compound write errors"
	assert_eq 0 "$D_bad_signatures" "$label: bad signatures"
	assert_eq 0 "$D_ledger_errors" "$label: ledger errors"
}

# --- 1. no key
start_smbd
h=$(nt_hash)
[ ${#h} -eq 32 ] || fail "no NT hash for $SMB_USER from pdbedit: '$h'"
start_keyed_proxy
gocase nokey 3.1.1 0
n=$(grep -c 'passthrough reason=no-key (signing not required, but the client signs its requests)' "$PROXY_LOG")
assert_eq 2 "$n" "sessions logged as relayed because the client signs without a key"
stop_proxy

# --- 2. the user's secret: keyed, absorbed
write_secrets "$T/secrets" "SMBACCEL\\$SMB_USER:nthash:$h"
start_keyed_proxy "secrets = $T/secrets"
for d in 2.1 3.0.2 3.1.1; do
	gocase "plain-$d" "$d" $((KIB * 9 / 10))
	gosave "save-plain-$d" "$d"
done
snap jobs.a
out=$("$GOSMB" write "127.0.0.1:$PROXY_PORT" share jobs.dat 1K "$KIB" -s "$seed" -j 16 2>&1) ||
    fail "16 writers at once: $out"
snap jobs.b
deltas jobs.a jobs.b
assert_eq "$want" "$(sha256 "$SHARE_DIR/jobs.dat")" "16 writers at once: sha256 on smbd's disk"
info "16 writers at once: $out; absorbed $D_writes_absorbed, upstream writes $D_upstream_writes, waits for a write in flight $D_write_overlap_waits"
assert_ge $((KIB * 9 / 10)) "$D_writes_absorbed" "16 writers at once: writes absorbed"
assert_eq 0 "$D_write_overlap_waits" "16 writers at once: writes that waited for a write in flight"
out=$("$GOSMB" read "127.0.0.1:$PROXY_PORT" share jobs.dat 4K $((KIB / 4)) -s "$seed" -j 16 2>&1) ||
    fail "16 readers at once (every byte checked): $out"
info "16 readers at once: $out"
proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status"
stop_smbd

# --- 3. signing required, then encryption required
for label in sign seal; do
	if [ "$label" = sign ]; then
		start_smbd "server signing = mandatory" "aio read size = 0" \
		    "aio write size = 0" "strict sync = no"
		ds="2.1 3.0.2 3.1.1"
	else
		start_smbd "server smb encrypt = required"
		ds="3.0.2 3.1.1"
	fi
	h=$(nt_hash)
	write_secrets "$T/secrets" "SMBACCEL\\$SMB_USER:nthash:$h"
	start_keyed_proxy "secrets = $T/secrets"
	for d in $ds; do
		gocase "$label-$d" "$d" $((KIB * 9 / 10))
		gosave "save-$label-$d" "$d"
	done
	[ "$label" = seal ] && { assert_ge 1 "$(stat_get decrypted_in)" "sealed messages opened"; }
	proxy_alive || fail "proxy died"
	stop_proxy
	assert_eq 0 "$PROXY_RC" "smbaccel exit status"
	stop_smbd
done
info "PASS"
