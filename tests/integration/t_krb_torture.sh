#!/bin/bash
# test-timeout: 600
# exclusive: runs its own smbtorture lanes (direct and through smbaccel at once), like t_keyed_torture
# Issue 12: smbtorture suites (KT_SUITES; default those of t_keyed_torture:
# smb2.connect smb2.read smb2.lock smb2.compound) with Kerberos
# (--use-kerberos=required), against the AD DC (signing mandatory) directly
# and through smbaccel holding the DC's keytab, once with signing and once
# with encryption required by the client (--option=clientsmbencrypt=
# required).  Per-test results (subunit success/failure/skip/error, and
# "incomplete" for a test that started and never finished) must be
# identical.  The direct run (direct namespace, share [dshare]) and the
# proxied one (client namespace, share [share]) of a suite run at the same
# time on their own shares.  smbaccel's stats must show sessions keyed
# (and, with encryption, decrypted traffic) and no bad signature; the
# share runs with write_behind = read_ahead = leased as in t_keyed_torture.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/torture_lib.sh"
. "$TESTS_DIR/krb_lib.sh"
require_smbaccel "Kerberos-keyed sessions"

SUITES=${KT_SUITES:-smb2.connect smb2.read smb2.lock smb2.compound}
DSHARE=$T/addc-dshare
mkdir -p "$DSHARE" && chmod 0777 "$DSHARE"
ADDC_SHARES="
[dshare]
	path = $DSHARE
	read only = no"
krb_bed
KRB_WB=leased KRB_RA=leased krb_proxy

# ksuite NSFUNC HOME PORT SHARE SUITE OUT OPT: one suite's subunit stream
ksuite() {
	local fn=$1 home=$2 port=$3 share=$4 suite=$5 out=$6 opt=$7 t0 rc
	t0=$(now)
	$fn env HOME="$home" timeout "${TORTURE_SUITE_TIMEOUT:-300}" smbtorture \
	    "//$ADDC_FQDN/$share" ${port:+-p "$port"} -U "$ADDC_USER%$ADDC_PASS" \
	    --use-kerberos=required --configfile="$home/.smb/smb.conf" \
	    --format=subunit --fullname --option=torture:progress=no --target=samba3 \
	    ${opt:+"$opt"} "$suite" > "$out" 2> "$out.err" < /dev/null
	rc=$?
	echo "$rc $(elapsed "$t0")" > "$out.time"
}

bad=0
echo '{}' > "$T/zero.stats.json"
for mode in sign seal; do
	case $mode in
	sign) opt= ;;
	seal) opt=--option=clientsmbencrypt=required ;;
	esac
	snap "$mode-0"
	for s in $SUITES; do
		find "$ADDC_SHARE_DIR" "$DSHARE" -mindepth 1 -delete 2>/dev/null
		ksuite in_dir "$DIR_HOME" "" dshare "$s" "$T/$mode-direct-$s.subunit" "$opt" &
		p1=$!
		ksuite in_cli "$CLI_HOME" "$PROXY_PORT" share "$s" "$T/$mode-proxy-$s.subunit" "$opt" &
		p2=$!
		BG_PIDS="$BG_PIDS $p1 $p2"
		wait "$p1"; wait "$p2"
		results "$T/$mode-direct-$s.subunit" > "$T/$mode-direct-$s.res"
		results "$T/$mode-proxy-$s.subunit" > "$T/$mode-proxy-$s.res"
		printf '%-22s direct: %s(rc %s s)\n' "$mode $s" "$(summary "$T/$mode-direct-$s.res")" "$(cat "$T/$mode-direct-$s.subunit.time")"
		printf '%-22s proxy:  %s(rc %s s)\n' "$mode $s" "$(summary "$T/$mode-proxy-$s.res")" "$(cat "$T/$mode-proxy-$s.subunit.time")"
		if [ ! -s "$T/$mode-direct-$s.res" ]; then
			echo "  no results from the direct run:"; tail -n 20 "$T/$mode-direct-$s.subunit.err"
			bad=1; continue
		fi
		if ! diff -u "$T/$mode-direct-$s.res" "$T/$mode-proxy-$s.res" > "$T/$mode-$s.diff"; then
			echo "  DIFFERENCES $mode $s (- direct, + through smbaccel):"
			grep '^[-+][^-+]' "$T/$mode-$s.diff" | sed 's/^/    /'
			for t in $(grep '^+' "$T/$mode-$s.diff" | grep -v '^+++' | awk '$2 != "success" && $2 != "skip" {print substr($1, 2)}'); do
				awk -v t="$t" '$1 ~ /^(failure|fail|error):$/ && $2 == t { p = 1 }
				    p { print "      " $0; if (++n > 15 || $0 == "]") exit }' "$T/$mode-proxy-$s.subunit"
			done
			bad=1
		fi
		proxy_alive || fail "the proxy died during $mode $s"
	done
	snap "$mode-1"
	deltas "$mode-0" "$mode-1"
	info "$mode: sessions_keyed +$D_sessions_keyed sessions_unkeyed +$D_sessions_unkeyed signed_out +$D_signed_out encrypted_out +$D_encrypted_out decrypted_in +$D_decrypted_in bad_signatures +$D_bad_signatures ledger_errors +$D_ledger_errors"
	assert_ge 1 "$D_sessions_keyed" "$mode: sessions_keyed"
	assert_eq 0 "$D_bad_signatures" "$mode: bad_signatures"
	assert_eq 0 "$D_ledger_errors" "$mode: ledger_errors"
	[ "$mode" = seal ] && assert_ge 1 "$D_decrypted_in" "$mode: decrypted_in"
	grep -E 'passthrough reason=|opaque reason=|bad signature' "$PROXY_LOG" | sort | uniq -c |
	    sed 's/^/    proxy log: /' | cut -c1-200 | head -n 10
done
[ "$bad" -eq 0 ] || fail "smbtorture results differ between direct and proxied runs"
proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
info "PASS"
