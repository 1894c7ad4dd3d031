# tests/integration/wb_torture.sh - smbtorture parity, sourced by
# t_wb_torture.sh and t_wb_torture_long.sh after lib.sh.  Each suite runs
# directly against smbd, then through each proxy configuration in
# TORTURE_CONFIGS (sequentially: the suites use fixed file names), all in
# this same test run; per-test results (subunit success/failure/skip/
# error, and "incomplete" for a test that started and never finished) must
# be identical to the direct run's.

command -v smbtorture >/dev/null || skip "smbtorture not installed (samba-testsuite)"

cat > "$T/torture.conf" <<EOF2
[global]
	workgroup = SMBACCEL
	client use kerberos = off
	client min protocol = SMB2_02
	client max protocol = SMB3_11
EOF2

# run_suite PORT SUITE OUT: subunit stream of one suite into OUT; prints
# "rc seconds".
run_suite() {
	local t0 rc
	t0=$(now)
	HOME=$T timeout "${TORTURE_SUITE_TIMEOUT:-400}" smbtorture "//127.0.0.1/share" -U "$SMB_USER%$SMB_PASS" -p "$1" \
	    --configfile="$T/torture.conf" --format=subunit --fullname \
	    --option=torture:progress=no --target=samba3 "$2" > "$3" 2>"$3.err" < /dev/null
	rc=$?
	echo "$rc $(elapsed "$t0")"
}

# results FILE: sorted "name status" lines.
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
    res[name] = {"successful": "success", "fail": "failure"}.get(kind, kind)
for name in started:
    res.setdefault(name, "incomplete")
for name in sorted(res):
    print(name, res[name])
PYEOF
}

summary() { awk '{ n[$2]++ } END { for (k in n) printf "%s=%d ", k, n[k] }' "$1"; }

clean_share() { find "$SHARE_DIR" -mindepth 1 -delete 2>/dev/null; }

# torture_parity SUITES...: with the proxy already configured per
# TORTURE_CONFIGS ("name|wb|ra" entries), compare each suite.
torture_parity() {
	local s cfg cname wb ra rcd td rcp tp bad=0 t
	for s in "$@"; do
		clean_share
		read -r rcd td < <(run_suite "$SMBD_PORT" "$s" "$T/$s.direct.subunit")
		results "$T/$s.direct.subunit" > "$T/$s.direct"
		printf '%-18s direct:      %s(rc %s, %ss)\n' "$s" "$(summary "$T/$s.direct")" "$rcd" "$td"
		if [ ! -s "$T/$s.direct" ]; then
			echo "  no results from the direct run:"; tail -n 20 "$T/$s.direct.subunit.err"
			bad=1; continue
		fi
		for cfg in $TORTURE_CONFIGS; do
			IFS='|' read -r cname wb ra <<< "$cfg"
			restart_proxy_with "$wb" "$ra"
			clean_share
			read -r rcp tp < <(run_suite "$PROXY_PORT" "$s" "$T/$s.$cname.subunit")
			results "$T/$s.$cname.subunit" > "$T/$s.$cname"
			printf '%-18s %-12s %s(rc %s, %ss)\n' "$s" "$cname:" "$(summary "$T/$s.$cname")" "$rcp" "$tp"
			proxy_alive || { echo "  the proxy died during $s ($cname)"; bad=1; }
			if ! diff -u "$T/$s.direct" "$T/$s.$cname" > "$T/$s.$cname.diff"; then
				echo "  DIFFERENCES $s (- direct, + $cname):"
				grep '^[-+][^-+]' "$T/$s.$cname.diff" | sed 's/^/    /'
				for t in $(grep '^+' "$T/$s.$cname.diff" | grep -v '^+++' | awk '$2 != "success" && $2 != "skip" {print substr($1, 2)}'); do
					echo "  $cname details for $t:"
					if grep -q "^+$t incomplete\$" "$T/$s.$cname.diff"; then
						tail -n 10 "$T/$s.$cname.subunit" "$T/$s.$cname.subunit.err" | sed 's/^/    /'
						continue
					fi
					awk -v t="$t" '$1 ~ /^(failure|fail|error):$/ && $2 == t { p = 1 }
					    p { print "    " $0; if (++n > 15 || $0 == "]") exit }' "$T/$s.$cname.subunit"
				done
				bad=1
			fi
		done
	done
	return $bad
}

# restart_proxy_with WB RA: (re)start the proxy with that share policy,
# unless it already runs with it.
CUR_POLICY=
restart_proxy_with() {
	[ "$CUR_POLICY" = "$1|$2" ] && proxy_alive && return 0
	if proxy_alive; then
		[ "$(stat_get ledger_errors)" = 0 ] || echo "  ledger_errors $(stat_get ledger_errors) under $CUR_POLICY"
		stop_proxy
	fi
	PROXY_SHARE_SECTION=no start_proxy "" "[share share]" "write_behind = $1" "read_ahead = $2" > /dev/null
	CUR_POLICY="$1|$2"
}
