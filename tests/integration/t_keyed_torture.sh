#!/bin/bash
# test-timeout: 400
# Issue 5 test 5: smbtorture suites (KT_SUITES; default smb2.connect
# smb2.read smb2.lock smb2.compound) with signing required by the client
# (--option=clientsigning=required) and, separately, with encryption
# required by the client (--option=clientsmbencrypt=required), each suite
# directly against smbd and then through the proxy, which has the user's
# secret; the per-test results (subunit success/failure/skip/error, plus
# tests that started and never finished) must be identical.  The proxy's
# stats must show the sessions keyed (and, for encryption, decrypted
# traffic) and no bad signature.  The share runs with write_behind =
# leased, as in t_torture_parity (under `always` smb2.lock.rw-* see the
# designed early acknowledgement).
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "keyed sessions"
command -v smbtorture >/dev/null || skip "smbtorture not installed (samba-testsuite)"

SUITES=${KT_SUITES:-smb2.connect smb2.read smb2.lock smb2.compound}
start_smbd
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
PROXY_SHARE_SECTION=no start_proxy "secrets = $T/secrets" "" "[share share]" \
    "write_behind = leased"
cat > "$T/torture.conf" <<EOF2
[global]
	workgroup = SMBACCEL
	client use kerberos = off
	client min protocol = SMB2_02
	client max protocol = SMB3_11
EOF2

# run_suite PORT SUITE OUT OPTION: subunit stream of one suite into OUT.
run_suite() {
	local t0 rc
	t0=$(now)
	HOME=$T timeout 300 smbtorture "//127.0.0.1/share" -U "$SMB_USER%$SMB_PASS" -p "$1" \
	    --configfile="$T/torture.conf" --format=subunit --fullname \
	    --option=torture:progress=no --target=samba3 "$4" "$2" > "$3" 2>"$3.err"
	rc=$?
	echo "$rc $(elapsed "$t0")"
}

# results FILE: "name status" lines, sorted; a test that started but has
# no result is "incomplete".
results() {
	"$PY" - "$1" <<'PYEOF'
import re, sys
res, started = {}, []
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^(test|testing|success|successful|failure|fail|skip|error|xfail|uxsuccess):\s+(\S+)", line)
    if not m:
        continue
    kind, name = m.groups()
    if kind in ("test", "testing"):
        started.append(name)
        continue
    kind = {"successful": "success", "fail": "failure"}.get(kind, kind)
    res[name] = kind
for name in started:
    res.setdefault(name, "incomplete")
for name in sorted(res):
    print(name, res[name])
PYEOF
}

summary() { awk '{ n[$2]++ } END { for (k in n) printf "%s=%d ", k, n[k] }' "$1"; }

bad=0
for mode in sign seal; do
	case $mode in
	sign) opt=--option=clientsigning=required ;;
	seal) opt=--option=clientsmbencrypt=required ;;
	esac
	snap "$mode-0"
	for s in $SUITES; do
		n=$mode-$s
		rm -rf "${SHARE_DIR:?}"/* 2>/dev/null
		read -r rcd td < <(run_suite "$SMBD_PORT" "$s" "$T/$n.direct.subunit" "$opt")
		rm -rf "${SHARE_DIR:?}"/* 2>/dev/null
		read -r rcp tp < <(run_suite "$PROXY_PORT" "$s" "$T/$n.proxy.subunit" "$opt")
		results "$T/$n.direct.subunit" > "$T/$n.direct"
		results "$T/$n.proxy.subunit" > "$T/$n.proxy"
		printf '%-4s %-16s direct: %s(rc %s, %ss)\n' "$mode" "$s" "$(summary "$T/$n.direct")" "$rcd" "$td"
		printf '%-4s %-16s proxy:  %s(rc %s, %ss)\n' "$mode" "$s" "$(summary "$T/$n.proxy")" "$rcp" "$tp"
		grep -E ' (failure|error|incomplete)$' "$T/$n.direct" | sed 's/^/    direct: /'
		if [ ! -s "$T/$n.direct" ]; then
			echo "  no results from the direct run:"; tail -n 20 "$T/$n.direct.subunit.err"
			bad=1; continue
		fi
		if ! diff -u "$T/$n.direct" "$T/$n.proxy" > "$T/$n.diff"; then
			echo "  DIFFERENCES (- direct, + proxy):"
			grep '^[-+][^-+]' "$T/$n.diff" | sed 's/^/    /'
			for t in $(grep '^+' "$T/$n.diff" | grep -v '^+++' | awk '$2 != "success" && $2 != "skip" {print substr($1, 2)}'); do
				echo "  proxy details for $t:"
				if grep -q "^+$t incomplete\$" "$T/$n.diff"; then
					tail -n 10 "$T/$n.proxy.subunit" "$T/$n.proxy.subunit.err" | sed 's/^/    /'
					continue
				fi
				awk -v t="$t" '$1 ~ /^(failure|fail|error):$/ && $2 == t { p = 1 }
				    p { print "    " $0; if (++k > 15 || $0 == "]") exit }' "$T/$n.proxy.subunit"
			done
			bad=1
		fi
	done
	snap "$mode-1"
	deltas "$mode-0" "$mode-1"
	info "$mode: sessions_keyed +$D_sessions_keyed sessions_unkeyed +$D_sessions_unkeyed signed_out +$D_signed_out encrypted_out +$D_encrypted_out decrypted_in +$D_decrypted_in bad_signatures +$D_bad_signatures opaque.encrypted-no-key +$D_opaque_encrypted_no_key opaque.signed-no-key +$D_opaque_signed_no_key"
	assert_ge 1 "$D_sessions_keyed" "$mode: sessions_keyed delta"
	assert_eq 0 "$D_bad_signatures" "$mode: bad_signatures delta"
	[ "$mode" = seal ] && assert_ge 1 "$D_decrypted_in" "$mode: decrypted_in delta"
done
grep -E 'passthrough reason=|opaque reason=|bad signature' "$PROXY_LOG" | sed 's/^/    proxy log: /' | head -n 20
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"
[ "$bad" -eq 0 ] || fail "smbtorture results differ between direct and proxied runs"
info "PASS"
