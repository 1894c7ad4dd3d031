#!/bin/bash
# test-timeout: 400
# Issue 15 in keyed sessions: smbaccel holds the session key (a secrets
# file), the server requires signing (3.1.1, 2.1), then encryption (3.1.1);
# default policy.  smbdd (no lease) writes PL_MIB (32) MiB in 1 KiB writes
# through smbaccel: its CREATE went upstream with smbaccel's lease
# (rewritten, re-signed or re-sealed; the answer restored and re-signed or
# re-sealed), the writes are absorbed, the file on disk is the pattern.
# Mid-write a second client (smbclient, signing or sealing itself) opens
# and reads the file directly: the break is acknowledged by smbaccel with a signed or
# sealed acknowledgement (the open completes in well under the server's
# break timeout), and it reads a prefix of the pattern.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
. "$TESTS_DIR/wb_lib.sh"
require_smbaccel "leases for clients in keyed sessions"

MIB=${PL_MIB:-48}
seed=$((RANDOM * 3 + 7))

run_phase() {	# run_phase SMBD_LINE CASES...
	local line=$1 c d home out bout rc pid n
	shift
	[ -n "$SMBD_PID" ] && stop_smbd
	stop_proxy
	start_smbd "$line"
	write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
	PROXY_SHARE_SECTION=no start_proxy "secrets = $T/secrets" ${PL_PROXY_LINE:+"$PL_PROXY_LINE"} "[share share]" "flush_idle = 1s"
	out=$(smbdd_run write "$SMBD_PORT" ref 1M "$MIB" -s "$seed" -q 2>&1) || fail "reference: $out"
	cp "$SHARE_DIR/ref" "$T/ref"
	for c in "$@"; do
		d=${c%%:*} mode=${c#*:}
		case $mode in
		sign) home=$(client_home "k$d" "client signing = required") ;;
		seal) home=$(client_home "k$d" "client smb encrypt = required") ;;
		esac
		snap before
		HOME=$home "$SMBDD" write "$(smb_url "$PROXY_PORT" "k-${c/:/-}")" 1K $((MIB * 1024)) \
		    -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$seed" -q -f > "$T/smbdd.out" 2>&1 &
		pid=$!
		BG_PIDS="$BG_PIDS $pid"
		# the second client opens once some data is on disk, well
		# before smbdd is done
		n=400
		until [ "$(stat -c %s "$SHARE_DIR/k-${c/:/-}" 2>/dev/null || echo 0)" -ge 1048576 ]; do
			n=$((n - 1)); [ $n -gt 0 ] && kill -0 $pid 2>/dev/null || break
			sleep 0.02
		done
		kill -0 $pid 2>/dev/null || fail "$c: smbdd finished before the second client could open (raise PL_MIB)"
		# the second client: smbclient, straight to smbd, signing or
		# sealing as the session requires
		t0=$(now)
		SMBC_HOME=$home smbc "$SMBD_PORT" SMB3_00 "get k-${c/:/-} $T/bget" > "$T/bget.out" 2>&1
		rc=$?
		bsecs=$(elapsed "$t0")
		wait $pid || fail "$c: smbdd failed: $(cat "$T/smbdd.out")"
		[ $rc -eq 0 ] || fail "$c: the second client's get: $(cat "$T/bget.out")"
		bsize=$(stat -c %s "$T/bget")
		info "$c: the second client's open and read took $bsecs s, $bsize bytes of $((MIB * 1048576))"
		cmp -s "$T/bget" <(head -c "$bsize" "$T/ref") || fail "$c: what the second client read is not a prefix of the pattern"
		awk -v s="$bsecs" 'BEGIN { exit !(s < 15) }' || fail "$c: the second client took $bsecs s (a break smbaccel did not acknowledge)"
		assert_file_eq "$T/ref" "$SHARE_DIR/k-${c/:/-}" "$c: the file on disk"
		snap after
		deltas before after
		info "$c: absorbed $D_writes_absorbed, creates rewritten $D_creates_rewritten, leases granted $D_proxy_leases_granted (write $D_proxy_leases_write), breaks $D_proxy_lease_breaks, acked $D_proxy_lease_breaks_acked, signed_out $D_signed_out, encrypted_out $D_encrypted_out, bad signatures $D_bad_signatures"
		assert_ge 1 "$D_proxy_leases_write" "$c: RW leases smbaccel held for smbdd"
		assert_ge 512 "$D_writes_absorbed" "$c: writes absorbed (before the break; forwarded after it)"
		assert_ge 1 "$D_proxy_lease_breaks_acked" "$c: break acknowledged by smbaccel"
		assert_eq 0 "$D_bad_signatures" "$c: bad signatures"
		assert_eq 0 "$D_proxy_lease_acks_refused" "$c: acknowledgements refused"
		case $mode in
		sign) assert_ge 1 "$D_signed_out" "$c: messages smbaccel signed" ;;
		seal) assert_ge 1 "$D_encrypted_out" "$c: messages smbaccel sealed" ;;
		esac
		assert_eq 0 "$(stat_get sessions_unkeyed)" "$c: unkeyed sessions"
	done
}

run_phase "server signing = mandatory" SMB3_11:sign SMB2_10:sign
run_phase "server smb encrypt = required" SMB3_11:seal
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
info "PASS"
