# tests/integration/torture_lib.sh - smbtorture parity, sourced after
# lib.sh by t_torture_parity and t_keyed_torture.
#
# torture_parity SUITES... [/ SUITES...]: every suite runs directly against
# smbd and through smbaccel in each configuration of TORTURE_CONFIGS, in
# this same test run; per-test results (subunit success/failure/skip/error,
# and "incomplete" for a test that started and never finished) must be
# identical to the direct run's.  Returns 1 on any difference.
#
# Lanes: the suites use fixed file names, so runs cannot share a share.
# Each (configuration, group of suites) pair is a lane with its own smbd,
# share directory and smbaccel, and the lanes run at the same time (the
# suites mostly wait on timers: smb2.oplock and smb2.lease spend minutes
# waiting for break timeouts, not CPU).  "/" separates groups: the suites
# of one group run one after another in the same lane.  The direct run
# ("direct") is a lane like the others.  A suite written dur:NAME runs
# on the [dur] share (durable handles need it, lib.sh).  A suite written
# NAME:only:A,B runs only NAME's tests A and B, NAME:except:A,B all its
# tests but those (smbtorture --load-list): a suite whose tests wait on
# the clock for minutes can be spread over lanes.  Every test named must
# be one of the suite's (smbtorture --list), or the call fails.
#
#   TORTURE_CONFIGS  "name|write_behind|read_ahead" entries
#   TORTURE_OPT      one extra smbtorture option for every run (e.g.
#                    --option=clientsigning=required)
#   TORTURE_TAG      prefix of the result files (several modes in one test)
#   TORTURE_PROXY_GLOBAL  extra [global] line of the proxies (e.g. secrets)
#   TORTURE_DIRECT_RACY  tests (shell patterns; default the durable-handle
#                    suites') whose direct run may fail where smbaccel's
#                    succeeds: a difference of that kind alone is reported
#                    and accepted.  smbtorture's durable tests drop a
#                    connection and reconnect its handles at once; smbd
#                    gives a handle up only when the old connection's
#                    process has torn it down, which under load comes
#                    after the reconnect (OBJECT_NAME_NOT_FOUND: seen
#                    directly in a CI run, 2026-12-06).  smbaccel holds a
#                    reconnect until the old connection has closed
#                    (t_durable_reopen), so through it they succeed.  A
#                    proxied failure still counts.
#
# After a call, $T/TAG-NAME.stats.json holds the stats of configuration
# NAME's proxies at the end of their lanes (numbers summed over groups).

command -v smbtorture >/dev/null || skip "smbtorture not installed (samba-testsuite)"

# smbtorture's own config (--configfile): without one it reads the host's
# smb.conf; its directories are private (samba_private_dirs).
{
	cat <<EOF2
[global]
	workgroup = SMBACCEL
	client use kerberos = off
	client min protocol = SMB2_02
	client max protocol = SMB3_11
EOF2
	samba_private_dirs "$T/torture-samba"
} > "$T/torture.conf"

# run_suite PORT SUITE OUT [SHARE [LIST]]: subunit stream of one suite
# (only the tests in the file LIST when given) into OUT; prints "rc
# seconds".
run_suite() {
	local t0 rc
	t0=$(now)
	HOME=$T timeout "${TORTURE_SUITE_TIMEOUT:-400}" smbtorture "//127.0.0.1/${4:-share}" -U "$SMB_USER%$SMB_PASS" -p "$1" \
	    --configfile="$T/torture.conf" --format=subunit --fullname \
	    --option=torture:progress=no --target=samba3 ${TORTURE_OPT:+"$TORTURE_OPT"} \
	    ${5:+--load-list="$5"} "$2" > "$3" 2>"$3.err" < /dev/null
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

# suite_list TOKEN: where TOKEN's load-list is (suite_select writes it).
suite_list() { echo "$T/select.$(printf '%s' "$1" | cksum | cut -d' ' -f1)"; }

# suite_key TOKEN: the token, or for one too long to name a file (a long
# NAME:only:A,B,...) NAME:only:CHECKSUM; used for result files and in the
# log.
suite_key() {
	local how=except
	[ ${#1} -le 60 ] && { echo "$1"; return; }
	case $1 in *:only:*) how=only ;; esac
	echo "${1%%:"$how":*}:$how:$(printf '%s' "$1" | cksum | cut -d' ' -f1)"
}

# suite_select TOKEN: for a NAME:only:A,B or NAME:except:A,B token, the
# full names of the tests to run, one a line, into $(suite_list TOKEN).
# smbtorture --list prints a test as NAME.CASE.TEST, and as NAME.TEST
# in subunit and --load-list when CASE and TEST are the same.  Says what
# is wrong and returns 1 on a test the suite does not have or an empty
# selection.
suite_select() {
	local tok=${1#dur:} list suite how names all n
	case $tok in
	*:only:*) suite=${tok%%:only:*} how=only names=${tok#*:only:} ;;
	*:except:*) suite=${tok%%:except:*} how=except names=${tok#*:except:} ;;
	*) return 0 ;;
	esac
	list=$(suite_list "$1")
	all=$(HOME=$T smbtorture --list "$suite" 2>/dev/null | awk -v p="$suite." '
		index($0, p) != 1 { next }
		{ n = split($0, c, "."); if (n > 2 && c[n] == c[n - 1]) sub(/\.[^.]*$/, ""); print }')
	[ -n "$all" ] || { echo "smbtorture --list $suite lists no tests"; return 1; }
	for n in ${names//,/ }; do
		grep -qxF "$suite.$n" <<< "$all" || { echo "$1: $suite has no test $n"; return 1; }
	done
	awk -v how="$how" -v p="$suite." -v names="$names" '
		BEGIN { k = split(names, a, ","); for (i = 1; i <= k; i++) sel[p a[i]] = 1 }
		(how == "only") == ($0 in sel)' <<< "$all" > "$list"
	[ -s "$list" ] || { echo "$1 selects no test"; return 1; }
}

# lane DIR CNAME WB RA SUITES...: runs in a subshell.  Its own smbd (and
# smbaccel unless CNAME is "direct") under DIR; for each suite S, results
# in DIR/S.res and "rc seconds" in DIR/S.time; problems in DIR/problems;
# the proxy's final stats in DIR/stats.json.
lane() {
	local dir=$1 cname=$2 wb=$3 ra=$4 s port rc secs; shift 4
	mkdir -p "$dir"
	SMBD_DIR=$dir/smbd SMBD_CONF=$dir/smbd/smb.conf
	SMBD_LOG=$dir/smbd/log/smbd.log SHARE_DIR=$dir/share DUR_DIR=$dir/dur
	PROXY_CONF=$dir/smbaccel.conf PROXY_LOG=$dir/proxy.log
	CTL_SOCK=$dir/control.sock SMBD_PID= PROXY_PID= PROXY_PORT=
	trap 'stop_proxy; stop_smbd' EXIT
	trap 'exit 143' TERM
	start_smbd > "$dir/start.out"
	port=$SMBD_PORT
	if [ "$cname" != direct ]; then
		PROXY_SHARE_SECTION=no start_proxy "${TORTURE_PROXY_GLOBAL:-}" \
		    "[share share]" "write_behind = $wb" "read_ahead = $ra" >> "$dir/start.out"
		port=$PROXY_PORT
		echo "$PROXY_PID" > "$dir/proxy.pid"
	fi
	for s in "$@"; do
		local sh=share sdir=$SHARE_DIR name=$s list= f
		f=$(suite_key "$s")
		case $s in dur:*) sh=dur sdir=$DUR_DIR name=${s#dur:} ;; esac
		case $name in *:only:*|*:except:*)
			list=$(suite_list "$s") name=${name%%:*} ;;
		esac
		find "$sdir" -mindepth 1 -delete 2>/dev/null
		read -r rc secs < <(run_suite "$port" "$name" "$dir/$f.subunit" "$sh" "$list")
		results "$dir/$f.subunit" > "$dir/$f.res"
		echo "$rc $secs" > "$dir/$f.time"
		if [ "$cname" != direct ] && ! proxy_alive; then
			echo "the proxy died during $s" >> "$dir/problems"
			tail -n 20 "$PROXY_LOG" >> "$dir/problems"
			return 1
		fi
	done
	if [ "$cname" != direct ]; then
		ctl stats --json > "$dir/stats.json" 2>/dev/null ||
		    echo "smbaccelctl stats failed" >> "$dir/problems"
		local le
		le=$(stat_get ledger_errors)
		[ "$le" = 0 ] || echo "ledger_errors $le" >> "$dir/problems"
		stop_proxy
		[ "$PROXY_RC" = 0 ] || echo "smbaccel exit status $PROXY_RC after SIGTERM" >> "$dir/problems"
	fi
	return 0
}

TORTURE_DIRECT_RACY=${TORTURE_DIRECT_RACY-smb2.durable-open.* smb2.durable-v2-open.*}

# racy_only DIFF: the diff holds only direct failures of racy tests that
# succeeded through smbaccel; prints their names.
racy_only() {
	local t st pat seen=
	while read -r t st; do
		case $t in
		-*) [ "$st" = failure ] || [ "$st" = error ] || return 1
		    t=${t#-}
		    grep -qx "+$t success" "$1" || return 1 ;;
		+*) [ "$st" = success ] || return 1
		    t=${t#+}
		    grep -Eqx -- "-$t (failure|error)" "$1" || return 1
		    continue ;;
		esac
		for pat in $TORTURE_DIRECT_RACY; do
			# shellcheck disable=SC2053
			[[ $t == $pat ]] && { seen="$seen $t"; continue 2; }
		done
		return 1
	done < <(grep '^[-+][^-+]' "$1")
	[ -n "$seen" ] && echo "$seen"
}

# lane_details DIR SUITE DIFF CNAME: the subunit text of the tests that
# differ (from CNAME's lane DIR), for the log.
lane_details() {
	local dir=$1 s=$2 diff=$3 cname=$4 t
	for t in $(grep '^+' "$diff" | grep -v '^+++' | awk '$2 != "success" && $2 != "skip" {print substr($1, 2)}'); do
		echo "  $cname details for $t:"
		if grep -q "^+$t incomplete\$" "$diff"; then
			tail -n 10 "$dir/$s.subunit" "$dir/$s.subunit.err" | sed 's/^/    /'
			continue
		fi
		awk -v t="$t" '$1 ~ /^(failure|fail|error):$/ && $2 == t { p = 1 }
		    p { print "    " $0; if (++n > 15 || $0 == "]") exit }' "$dir/$s.subunit"
	done
}

# torture_cleanup: a lane killed before its own cleanup leaves its smbd
# and smbaccel; stop them by their pid files (from lib.sh's cleanup).
torture_cleanup() {
	local d p
	for d in "$T"/lane-*/; do
		[ -d "$d" ] || continue
		[ -f "$d/proxy.pid" ] && stop_pid "$(cat "$d/proxy.pid")" 2
		SMBD_DIR=${d%/}/smbd SMBD_PID= stop_smbd
	done
}
EXTRA_CLEANUP=torture_cleanup

torture_parity() {
	local tag=${TORTURE_TAG:+$TORTURE_TAG-} groups=() g= a cfg cname wb ra
	local i pids=() dirs=() bad=0 s d dd t0 racy
	for a in "$@"; do
		if [ "$a" = / ]; then
			[ -n "$g" ] && groups+=("$g"); g=
		else
			g="$g $a"
		fi
	done
	[ -n "$g" ] && groups+=("$g")
	for a in "$@"; do
		[ "$a" = / ] || suite_select "$a" || return 1
	done
	t0=$(now)
	for cfg in "direct||" $TORTURE_CONFIGS; do
		IFS='|' read -r cname wb ra <<< "$cfg"
		for i in "${!groups[@]}"; do
			d=$T/lane-$tag$cname-$i
			rm -rf "$d"
			# shellcheck disable=SC2086
			( lane "$d" "$cname" "$wb" "$ra" ${groups[$i]} ) > "$d.out" 2>&1 &
			pids+=($!); dirs+=("$d")
			BG_PIDS="$BG_PIDS $!"
		done
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || { echo "  lane ${dirs[$i]##*/} failed:"; sed 's/^/    /' "${dirs[$i]}.out"; bad=1; }
		if [ -s "${dirs[$i]}/problems" ]; then
			echo "  lane ${dirs[$i]##*/}:"; sed 's/^/    /' "${dirs[$i]}/problems"; bad=1
		fi
	done
	echo "  $((${#pids[@]})) lanes in $(elapsed "$t0") s"
	for i in "${!groups[@]}"; do
		for s in ${groups[$i]}; do
			[ "$s" = "$(suite_key "$s")" ] ||
			    echo "$tag$(suite_key "$s") is $tag$s"
			s=$(suite_key "$s")
			d=$T/lane-${tag}direct-$i
			printf '%-22s %-12s %s(rc %s s)\n' "$tag$s" "direct:" \
			    "$(summary "$d/$s.res" 2>/dev/null)" "$(cat "$d/$s.time" 2>/dev/null)"
			if [ ! -s "$d/$s.res" ]; then
				echo "  no results from the direct run:"
				tail -n 20 "$d/$s.subunit.err" 2>/dev/null
				bad=1; continue
			fi
			for cfg in $TORTURE_CONFIGS; do
				IFS='|' read -r cname wb ra <<< "$cfg"
				dd=$T/lane-$tag$cname-$i
				printf '%-22s %-12s %s(rc %s s)\n' "$tag$s" "$cname:" \
				    "$(summary "$dd/$s.res" 2>/dev/null)" "$(cat "$dd/$s.time" 2>/dev/null)"
				if ! diff -u "$d/$s.res" "$dd/$s.res" > "$T/$tag$s.$cname.diff" 2>&1 &&
				    racy=$(racy_only "$T/$tag$s.$cname.diff"); then
					echo "  failed directly, succeeded through smbaccel ($cname), accepted (TORTURE_DIRECT_RACY):$racy"
				elif [ -s "$T/$tag$s.$cname.diff" ]; then
					echo "  DIFFERENCES $tag$s (- direct, + $cname):"
					grep '^[-+][^-+]' "$T/$tag$s.$cname.diff" | sed 's/^/    /'
					lane_details "$dd" "$s" "$T/$tag$s.$cname.diff" "$cname"
					bad=1
				fi
			done
		done
	done
	# each configuration's stats, summed over its lanes
	for cfg in $TORTURE_CONFIGS; do
		IFS='|' read -r cname wb ra <<< "$cfg"
		"$PY" - "$T/$tag$cname.stats.json" "$T"/lane-"$tag$cname"-*/stats.json <<'PYEOF'
import json, sys
def add(a, b):
    for k, v in b.items():
        if isinstance(v, dict):
            add(a.setdefault(k, {}), v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            a[k] = a.get(k, 0) + v
out = {}
for p in sys.argv[2:]:
    try:
        add(out, json.load(open(p)))
    except (OSError, ValueError):
        pass
json.dump(out, open(sys.argv[1], "w"))
PYEOF
	done
	return $bad
}

# torture_stat NAME KEY: one number from configuration NAME's summed stats
# (TORTURE_TAG as in the torture_parity call).
torture_stat() {
	"$PY" -c '
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k, 0) if isinstance(v, dict) else 0
print(v)' "$T/${TORTURE_TAG:+$TORTURE_TAG-}$1.stats.json" "$2"
}
