#!/bin/bash
# test-timeout: 400
# Issue 12 (speed of keyed sessions): large WRITEs in keyed sessions take
# the paths that avoid copies and re-signing.  smbd first requires signing,
# then encryption; the proxy has the user's secret.  Per case (HMAC-SHA256
# at 2.1, AES-CMAC at 3.0, AES-GMAC at 3.1.1; AES-128-CCM, AES-128-GCM,
# AES-256-GCM sealing at 3.1.1) smbdd writes
#   - LK_MIB x 1 MiB: each WRITE fills the 1 MiB coalesce size of an empty
#     buffer and goes upstream as the client sent it (signature verified,
#     or sealed by the client), as the proxy's own request; sealed with
#     AES-GCM, it is authenticated whole but only its head is decrypted;
#   - LK_MIB x 1000 KiB: coalesced in the buffer and flushed as WRITEs the
#     proxy encodes and signs or seals in place in its output buffer;
#   - LK_MIB MiB in 1 KiB writes, also coalesced;
# then reads each file back through the proxy (64 KiB reads, pattern
# checked by smbdd).  Each file on disk must equal the pattern written
# directly; every write must be absorbed; the 1 MiB WRITEs go upstream one
# for one and are not signed or sealed again by the proxy (signed_out /
# encrypted_out grow by the answers only); no bad signature, no ledger or
# deferred error, every session keyed.  With AES-GMAC signing, 1 MiB
# WRITEs also reach smbaccel through a 100 Mbit/s leg in pieces: it must
# wake once per WRITE, not per piece (lk_slow).
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "keyed sessions"
[ -x "$SMBDD" ] || skip "$SMBDD not built"

LK_MIB=${LK_MIB:-16}
SEED=$((RANDOM * 32768 + RANDOM + 1))
info "seed $SEED, $LK_MIB MiB per write size"

# lk_setup SMBD_LINE: smbd (restarted) with that line, the keyed proxy in
# front of it, and the reference file written directly.
lk_setup() {
	local out
	stop_proxy
	stop_smbd
	rm -rf "${SHARE_DIR:?}"/*
	start_smbd "$1"
	write_secrets "$T/secrets" "SMBACCEL\\$SMB_USER:password:$SMB_PASS"
	start_keyed_proxy "secrets = $T/secrets"
	out=$(smbdd_run write "$SMBD_PORT" ref 1M "$LK_MIB" -s "$SEED" -q 2>&1) ||
	    fail "direct reference write failed: $out"
}

# lk_file LABEL HOME DIALECT NAME BLOCK COUNT: write through the proxy,
# compare with the reference, read back through the proxy.
lk_file() {
	local label=$1 home=$2 d=$3 name=$4 bs=$5 n=$6 out size
	out=$(HOME=$home timeout 120 "$SMBDD" write "$(smb_url "$PROXY_PORT" "$name")" "$bs" "$n" \
	    -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$SEED" -q -f 2>&1) ||
	    fail "$label: smbdd write $bs x $n through the proxy failed: $out"
	info "$label: write $bs x $n: $(tail -n 1 <<<"$out")"
	size=$(stat -c %s "$SHARE_DIR/$name")
	assert_eq "$(head -c "$size" "$SHARE_DIR/ref" | sha256sum | cut -d' ' -f1)" \
	    "$(sha256 "$SHARE_DIR/$name")" "$label: $name ($bs x $n) on disk vs the pattern written directly"
	out=$(HOME=$home timeout 120 "$SMBDD" verify "$(smb_url "$PROXY_PORT" "$name")" 64K \
	    $((size / 65536)) -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$SEED" -q 2>&1) ||
	    fail "$label: smbdd 64 KiB read back of $name through the proxy failed: $out"
}

# lk_case LABEL DIALECT WANT [CLIENT_LINE...]: one dialect and algorithm.
lk_case() {
	local label=$1 d=$2 want=$3 home n=$LK_MIB prot ans
	shift 3
	home=$(client_home "lk-$label" "$@")
	hold_start "$label" "$d" "$home"
	hold_finish "$label"
	grep -q ' keyed=true ' "$T/$label.hold.sessions" ||
	    fail "$label: the held session is not keyed in conns --json"
	if grep -Ev "^$want" "$T/$label.hold.smbstatus"; then
		fail "$label: smbd's session (above) does not match '$want'"
	fi

	snap "$label-0"
	lk_file "$label" "$home" "$d" "m-$label" 1M "$n"
	snap "$label-1"
	lk_file "$label" "$home" "$d" "k-$label" 1000K "$n"
	lk_file "$label" "$home" "$d" "s-$label" 1K $((n * 1024))
	snap "$label-2"

	deltas "$label-0" "$label-1"
	prot=$((D_signed_out + D_encrypted_out))
	info "$label: 1 MiB writes: absorbed $D_writes_absorbed, upstream $D_upstream_writes WRITEs ($D_upstream_write_bytes bytes), signed_out +$D_signed_out encrypted_out +$D_encrypted_out decrypted_in +$D_decrypted_in decrypted_head_only +$D_decrypted_head_only"
	assert_ge "$n" "$D_writes_absorbed" "$label: 1 MiB writes absorbed"
	assert_eq "$n" "$D_upstream_writes" "$label: upstream WRITEs for $n 1 MiB writes"
	assert_eq $((n * 1048576)) "$D_upstream_write_bytes" "$label: upstream bytes of the 1 MiB writes"
	# the answers (one per WRITE) are signed or sealed; the WRITEs are not
	# again: fewer than two protected messages per WRITE
	[ "$prot" -ge "$n" ] && [ "$prot" -lt $((2 * n)) ] ||
	    fail "$label: $prot messages signed or sealed by the proxy for $n absorbed 1 MiB writes (expected the answers only: $n .. $((2 * n - 1)))"
	# sealed with AES-GCM, each is authenticated whole and only its head
	# decrypted (its data goes upstream as the client sealed it); CCM's
	# tag covers the plaintext, so it is decrypted whole
	case $label in
	*GCM) assert_eq "$n" "$D_decrypted_head_only" "$label: 1 MiB WRITEs opened without decrypting their data"
	      assert_eq $((n * 1048576)) "$D_decrypt_skipped_bytes" "$label: bytes not decrypted" ;;
	*) assert_eq 0 "$D_decrypted_head_only" "$label: messages opened without decrypting their data" ;;
	esac
	deltas "$label-1" "$label-2"
	ans=$((n * 1024 + n))
	info "$label: 1000 KiB and 1 KiB writes: absorbed $D_writes_absorbed of $ans, upstream $D_upstream_writes WRITEs ($D_upstream_write_bytes bytes), signed_out +$D_signed_out encrypted_out +$D_encrypted_out"
	assert_ge "$ans" "$D_writes_absorbed" "$label: coalesced writes absorbed"
	assert_ge $((n * 1000 * 1024 + n * 1048576)) "$D_upstream_write_bytes" "$label: upstream bytes of the coalesced writes"
	# coalesced: the proxy signs or seals its own WRITEs too
	assert_ge $((ans + D_upstream_writes)) $((D_signed_out + D_encrypted_out)) "$label: messages signed or sealed"
	# below the coalesce size: buffered, so decrypted whole
	assert_eq 0 "$D_decrypted_head_only" "$label: coalesced writes opened without decrypting their data"
	deltas "$label-0" "$label-2"
	assert_eq 0 "$D_sessions_unkeyed" "$label: sessions_unkeyed delta"
	assert_eq 0 "$D_bad_signatures" "$label: bad_signatures delta"
	assert_eq 0 "$D_ledger_errors" "$label: ledger_errors delta"
	assert_eq 0 "$D_deferred_errors" "$label: deferred_errors delta"
	rm -f "$SHARE_DIR/m-$label" "$SHARE_DIR/k-$label" "$SHARE_DIR/s-$label"
}

lk_setup "server signing = mandatory"
lk_case hmac SMB2_10 "SMB2_10 signing=HMAC-SHA256 encryption=-" "client signing = required"
lk_case cmac SMB3_00 "SMB3_00 signing=AES-128-CMAC encryption=-" "client signing = required"
lk_case gmac SMB3_11 "SMB3_11 signing=AES-128-GMAC encryption=-" "client signing = required" \
    "client smb3 signing algorithms = AES-128-GMAC"
# lk_slow LABEL DIALECT CLIENT_LINE...: 1 MiB WRITEs reaching smbaccel in
# pieces (the client's leg through tests/tools/wanem, LK_SLOW_RATE, default
# 100 Mbit/s: about 64 writes of 16 KiB per WRITE over 80 ms).  smbaccel
# must wake once for the whole frame (SO_RCVLOWAT on the client's socket),
# not per piece.  Its wake-ups (schedstat's third field) are counted over a
# session of 2 and one of LK_SLOW_N (default 10, at most LK_MIB) WRITEs:
# the difference is what the extra WRITEs cost, whatever the session
# around them costs.  About 4 per WRITE (its frame, the server's answer,
# the socket to the server taking the rest); about 43 when woken per piece
# (measured before the change).  CPU per WRITE is printed, not asserted.
lk_slow_run() {
	local label=$1 d=$2 home=$3 port=$4 n=$5 w0 c0 out
	w0=$(proc_wakeups "$PROXY_PID")
	c0=$(proc_cpu_ns "$PROXY_PID")
	out=$(HOME=$home timeout 120 "$SMBDD" write "$(smb_url "$port" "w-$label")" 1M "$n" \
	    -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$SEED" -q -f 2>&1) ||
	    fail "$label: smbdd write 1M x $n through wanem and the proxy failed: $out"
	WAKES=$(( $(proc_wakeups "$PROXY_PID") - w0 ))
	CPU_NS=$(( $(proc_cpu_ns "$PROXY_PID") - c0 ))
	assert_eq "$(head -c $((n * 1048576)) "$SHARE_DIR/ref" | sha256sum | cut -d' ' -f1)" \
	    "$(sha256 "$SHARE_DIR/w-$label")" "$label: w-$label (1M x $n over the slow leg) on disk vs the pattern"
	rm -f "$SHARE_DIR/w-$label"
}
lk_slow() {
	local label=$1 d=$2 home port w2 c2 n=${LK_SLOW_N:-10}
	shift 2
	[ "$n" -gt 2 ] && [ "$n" -le "$LK_MIB" ] ||
	    fail "LK_SLOW_N=$n: must be above 2 and at most LK_MIB=$LK_MIB"
	home=$(client_home "lk-slow-$label" "$@")
	port=$(free_port)
	bg "$TOP/bin/wanem" -l "127.0.0.1:$port" -u "127.0.0.1:$PROXY_PORT" -d 0 -r "${LK_SLOW_RATE:-100M}" \
	    > "$T/wanem-$label.log" 2>&1
	wait_port "$port" 10 "$!" || fail "wanem did not start: $(cat "$T/wanem-$label.log")"
	lk_slow_run "$label" "$d" "$home" "$port" 2
	w2=$WAKES c2=$CPU_NS
	lk_slow_run "$label" "$d" "$home" "$port" "$n"
	info "$label: 1 MiB WRITEs arriving in pieces: smbaccel woke $w2 times for a session of 2, $WAKES for one of $n; $(awk -v w=$((WAKES - w2)) -v c=$((CPU_NS - c2)) -v k=$((n - 2)) 'BEGIN { printf "%.1f wake-ups and %.0f us of CPU", w / k, c / k / 1000 }') per WRITE"
	[ $((WAKES - w2)) -le $(((n - 2) * 16)) ] ||
	    fail "$label: $((n - 2)) more 1 MiB WRITEs, arriving in about 64 pieces each, cost smbaccel $((WAKES - w2)) more wake-ups: it wakes per piece, not per frame"
}
lk_slow gmac SMB3_11 "client signing = required" "client smb3 signing algorithms = AES-128-GMAC"

lk_setup "server smb encrypt = required"
for c in AES-128-CCM AES-128-GCM AES-256-GCM; do
	lk_case "$c" SMB3_11 "SMB3_11 signing=[^ ]* encryption=$c\$" "client smb encrypt = required" \
	    "client smb3 encryption algorithms = $c"
done
proxy_alive || fail "proxy died"
info "PASS"
