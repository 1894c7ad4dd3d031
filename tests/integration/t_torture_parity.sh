#!/bin/bash
# test-timeout: 1500
# smbtorture parity: each suite in SMBTORTURE_SUITES runs directly against
# smbd and then through the proxy, in this same test run; the per-test
# results (subunit success/failure/skip/error, plus tests that started and
# never finished) must be identical.  Differences are printed.  Absolute
# pass counts are not asserted: many tests expect Windows behaviour.
# The share runs with write_behind = leased (TORTURE_WRITE_BEHIND), the
# default: under `always` a write into a range another open has locked is
# acknowledged by design (DESIGN.md 4), which smb2.lock.rw-* detect.
. "$(dirname "$0")/lib.sh"

SUITES=${SMBTORTURE_SUITES:-smb2.connect smb2.read smb2.lock smb2.compound smb2.credits smb2.oplock}
command -v smbtorture >/dev/null || skip "smbtorture not installed (samba-testsuite)"
start_smbd
PROXY_SHARE_SECTION=no start_proxy "" "[share share]" \
    "write_behind = ${TORTURE_WRITE_BEHIND:-leased}"
cat > "$T/torture.conf" <<EOF2
[global]
	workgroup = SMBACCEL
	client use kerberos = off
	client min protocol = SMB2_02
	client max protocol = SMB3_11
EOF2

# run_suite PORT SUITE OUT: subunit stream of one suite into OUT.
run_suite() {
	local t0 rc
	t0=$(now)
	HOME=$T smbtorture "//127.0.0.1/share" -U "$SMB_USER%$SMB_PASS" -p "$1" \
	    --configfile="$T/torture.conf" --format=subunit --fullname \
	    --option=torture:progress=no --target=samba3 "$2" > "$3" 2>"$3.err"
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
for s in $SUITES; do
	rm -rf "${SHARE_DIR:?}"/* 2>/dev/null
	read -r rcd td < <(run_suite "$SMBD_PORT" "$s" "$T/$s.direct.subunit")
	rm -rf "${SHARE_DIR:?}"/* 2>/dev/null
	read -r rcp tp < <(run_suite "$PROXY_PORT" "$s" "$T/$s.proxy.subunit")
	results "$T/$s.direct.subunit" > "$T/$s.direct"
	results "$T/$s.proxy.subunit" > "$T/$s.proxy"
	printf '%-16s direct: %s(rc %s, %ss)\n' "$s" "$(summary "$T/$s.direct")" "$rcd" "$td"
	printf '%-16s proxy:  %s(rc %s, %ss)\n' "$s" "$(summary "$T/$s.proxy")" "$rcp" "$tp"
	[ "$rcd" -ge 124 ] && echo "  note: direct smbtorture exited with $rcd (killed by a signal?)"
	[ "$rcp" -ge 124 ] && echo "  note: proxied smbtorture exited with $rcp (killed by a signal?)"
	if [ ! -s "$T/$s.direct" ]; then
		echo "  no results from the direct run:"; tail -n 20 "$T/$s.direct.subunit.err"
		bad=1; continue
	fi
	if ! diff -u "$T/$s.direct" "$T/$s.proxy" > "$T/$s.diff"; then
		echo "  DIFFERENCES (- direct, + proxy):"
		grep '^[-+][^-+]' "$T/$s.diff" | sed 's/^/    /'
		# Show the proxy-side failure details of the differing tests.
		for t in $(grep '^+' "$T/$s.diff" | grep -v '^+++' | awk '$2 != "success" && $2 != "skip" {print substr($1, 2)}'); do
			echo "  proxy details for $t:"
			if grep -q "^+$t incomplete\$" "$T/$s.diff"; then
				tail -n 10 "$T/$s.proxy.subunit" "$T/$s.proxy.subunit.err" | sed 's/^/    /'
				continue
			fi
			awk -v t="$t" '$1 ~ /^(failure|fail|error):$/ && $2 == t { p = 1 }
			    p { print "    " $0; if (++n > 15 || $0 == "]") exit }' "$T/$s.proxy.subunit"
		done
		bad=1
	fi
done
proxy_alive || fail "proxy died"
[ "$bad" -eq 0 ] || fail "smbtorture results differ between direct and proxied runs"
info "PASS"
