# tests/integration/krb_lib.sh - helpers of the t_krb_* tests (issue 12;
# bash, source after lib.sh).  Builds on addc_lib.sh (the AD DC test bed)
# and keyed_lib.sh (stats snapshots and deltas, conns samplers).
#
#   krb_bed                        addc_bed, the DC's keytab in $KT, client
#                                  HOMEs $CLI_HOME (cli ns, through smbaccel)
#                                  and $DIR_HOME (dir ns, direct); one HOME a
#                                  namespace: libsmbclient caches names
#   krb_proxy [global lines]       smbaccel in the cli ns with keytab = $KT
#                                  (KRB_KEYTAB_LINE overrides, "" for none),
#                                  [share share] write_behind = read_ahead =
#                                  always (KRB_WB, KRB_RA override)
#   kc_smbclient D CMDS [args] / kd_smbclient ...   smbclient
#                                  --use-kerberos=required at dialect D,
#                                  through smbaccel / direct
#   kc_smbdd OP PATH BS COUNT [args] / kd_smbdd ...  bin/smbdd -k
#   kcap_start NAME / kcap_stop    dumpcap of the upstream leg (smbaccel <->
#                                  DC, kc0 in the cli ns) into $KCAP
#   khold_start LABEL D [args] / khold_finish LABEL: an smbclient session
#                                  through smbaccel held open while conns
#                                  --json is polled; $T/LABEL.hold.sessions
#                                  gets "id keyed=.. why=.. auth=.." lines
#   kstatus                        the DC's smbstatus --json (its sessions:
#                                  dialect, signing, encryption)
. "$TESTS_DIR/addc_lib.sh"
. "$TESTS_DIR/keyed_lib.sh"

KT=$T/dc.keytab
KCAP=

krb_bed() {
	[ -x "$SMBDD" ] || skip "$SMBDD not built"
	addc_bed
	addc_keytab "$KT"
	CLI_HOME=$(addc_home cli ${KRB_HOME_LINES:+"$KRB_HOME_LINES"})
	DIR_HOME=$(addc_home dir ${KRB_HOME_LINES:+"$KRB_HOME_LINES"})
}

krb_proxy() {
	local kl="keytab = $KT"
	[ -n "${KRB_KEYTAB_LINE+x}" ] && kl=$KRB_KEYTAB_LINE
	PROXY_SHARE_SECTION=no start_proxy ${kl:+"$kl"} "$@" "" "[share share]" \
	    "write_behind = ${KRB_WB:-always}" "read_ahead = ${KRB_RA:-always}" \
	    "flush_idle = 1s" "flush_max_age = 10s"
}

# _ksmbclient NSFUNC HOME PORT D CMDS [args]
_ksmbclient() {
	local fn=$1 home=$2 port=$3 d=$4 cmds=$5; shift 5
	$fn env HOME="$home" timeout -k 5 "${KRB_CLIENT_TIMEOUT:-300}" smbclient \
	    --configfile="$home/.smb/smb.conf" "//$ADDC_FQDN/${KSHARE:-share}" \
	    ${port:+-p "$port"} -N --use-kerberos=required -m "$d" \
	    --option="client min protocol=$d" --option="client max protocol=$d" \
	    -c "$cmds" "$@" </dev/null
}
kc_smbclient() { local d=$1 c=$2; shift 2; _ksmbclient in_cli "$CLI_HOME" "$PROXY_PORT" "$d" "$c" "$@"; }
kd_smbclient() { local d=$1 c=$2; shift 2; _ksmbclient in_dir "$DIR_HOME" "" "$d" "$c" "$@"; }

# _ksmbdd NSFUNC HOME PORT OP PATH BS COUNT [args]
_ksmbdd() {
	local fn=$1 home=$2 port=$3 op=$4 path=$5 bs=$6 count=$7; shift 7
	$fn env HOME="$home" timeout -k 5 "${KRB_CLIENT_TIMEOUT:-300}" "$SMBDD" "$op" \
	    "smb://$ADDC_FQDN/${KSHARE:-share}/$path" "$bs" "$count" -k \
	    -W "$ADDC_REALM" -U "$ADDC_USER%$ADDC_PASS" ${port:+-p "$port"} "$@"
}
kc_smbdd() { _ksmbdd in_cli "$CLI_HOME" "$PROXY_PORT" "$@"; }
kd_smbdd() { _ksmbdd in_dir "$DIR_HOME" "" "$@"; }

kcap_start() {
	command -v dumpcap >/dev/null || skip "dumpcap not installed"
	KCAP=$T/$1.pcapng
	ip netns exec "$ADDC_CLI" dumpcap -q -B 256 -i kc0 -f "tcp port 445" \
	    -w "$KCAP" > "$T/$1.dumpcap.log" 2>&1 &
	KCAP_PID=$!
	BG_PIDS="$BG_PIDS $KCAP_PID"
	local n=100 size0
	until [ -s "$KCAP" ]; do
		n=$((n - 1))
		[ $n -gt 0 ] && kill -0 "$KCAP_PID" 2>/dev/null ||
		    fail "dumpcap did not start: $(cat "$T/$1.dumpcap.log")"
		sleep 0.1
	done
	# probe connections to the DC until the file grows: from then on
	# packets are captured (dumpcap writes its header before that)
	size0=$(stat -c %s "$KCAP")
	n=50
	while [ "$(stat -c %s "$KCAP")" -le "$size0" ]; do
		n=$((n - 1))
		[ $n -gt 0 ] || fail "dumpcap captures nothing on kc0"
		ip netns exec "$ADDC_CLI" timeout 2 bash -c \
		    "exec 3<>/dev/tcp/$ADDC_IP/445" >/dev/null 2>&1
		sleep 0.2
	done
}

kcap_stop() {
	sleep 0.3
	kill -INT "$KCAP_PID" 2>/dev/null
	wait "$KCAP_PID" 2>/dev/null
	KCAP_PID=
}

# ksizes MIN OUT.json: tests/tools/upstream-sizes on $KCAP (port 445).
ksizes() {
	timeout 300 "$TOP/tests/tools/upstream-sizes" --min "$1" "$KCAP" 445 > "$2" ||
	    timeout 300 "$TOP/tests/tools/upstream-sizes" --min "$1" "$KCAP" 445 > "$2" ||
	    fail "upstream-sizes failed on $KCAP"
}

# ksessions FILE: one line per session in conns --json samples (one JSON
# document a line), its last state once its connection had a tree:
# "conn=C/ID tree=yes|no keyed=true|false why=R auth=A".
ksessions() {
	"$PY" - "$1" <<'EOF'
import json, sys
seen = {}
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    for c in d.get("conns", []):
        for s in c.get("sessions", []):
            k = (c["id"], s["id"])
            tree = bool(c.get("trees"))
            prev = seen.get(k)
            if prev is None or tree or not prev[3]:
                seen[k] = (s["keyed"], s["why_not_keyed"], s.get("auth", ""), tree or (prev or (0, 0, 0, False))[3])
for (cid, sid), (keyed, why, auth, tree) in sorted(seen.items()):
    print("conn=%s/%s tree=%s keyed=%s why=%s auth=%s"
          % (cid, sid, "yes" if tree else "no", str(keyed).lower(), why or "-", auth or "-"))
EOF
}

# ksample_start / ksample_stop: conns --json every 0.1 s into $T/ksample
ksample_start() {
	: > "$T/ksample"
	(
		while :; do
			ctl conns --json 2>/dev/null | tr -d '\n' >> "$T/ksample"
			echo >> "$T/ksample"
			sleep 0.1
		done
	) &
	KSAMPLE_PID=$!
	BG_PIDS="$BG_PIDS $KSAMPLE_PID"
}
ksample_stop() {
	[ -n "${KSAMPLE_PID:-}" ] && stop_pid "$KSAMPLE_PID" 2
	KSAMPLE_PID=
	ksessions "$T/ksample"
}

# khold_start LABEL D [smbclient args]: an smbclient session through
# smbaccel, its commands from fifo fd 7.
khold_start() {
	local label=$1 d=$2 fifo=$T/$1.hold.fifo; shift 2
	rm -f "$fifo"; mkfifo "$fifo" || fail "mkfifo $fifo"
	in_cli env HOME="$CLI_HOME" smbclient --configfile="$CLI_HOME/.smb/smb.conf" \
	    "//$ADDC_FQDN/${KSHARE:-share}" -p "$PROXY_PORT" -N --use-kerberos=required \
	    --option="client min protocol=$d" --option="client max protocol=$d" "$@" \
	    < "$fifo" > "$T/$label.hold.out" 2>&1 &
	KHOLD_PID=$!
	BG_PIDS="$BG_PIDS $KHOLD_PID"
	exec 7> "$fifo"
	echo "ls" >&7
}

# khold_finish LABEL: poll conns --json (and the DC's smbstatus into
# $T/LABEL.hold.status) until the held session has a tree connect and its
# setup is over (at most 20 s), then close it.
khold_finish() {
	local label=$1 n=100 cs=$T/$1.hold.conns
	: > "$cs"
	while [ $n -gt 0 ]; do
		ctl conns --json 2>/dev/null | tr -d '\n' >> "$cs"; echo >> "$cs"
		ksessions "$cs" > "$T/$label.hold.sessions"
		grep -q ' tree=yes ' "$T/$label.hold.sessions" &&
		    ! grep -q ' tree=yes keyed=false why=not-needed' "$T/$label.hold.sessions" &&
		    break
		kill -0 "$KHOLD_PID" 2>/dev/null || break
		n=$((n - 1))
		sleep 0.2
	done
	kstatus > "$T/$label.hold.status"
	echo "quit" >&7
	exec 7>&-
	n=50
	while [ $n -gt 0 ] && kill -0 "$KHOLD_PID" 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	stop_pid "$KHOLD_PID" 2
	KHOLD_PID=
	sed "s/^/    $label: held session: /" "$T/$label.hold.sessions"
}

# kstatus: "DIALECT signing=ALG encryption=ALG" per session of ADDC_USER
# on the DC (smbstatus --json in the DC's mount namespace).
kstatus() {
	_addc_mnt smbstatus -s "$ADDC_CONF" --json 2>/dev/null | "$PY" -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
for sid, s in sorted(d.get("sessions", {}).items()):
    if not s.get("username", "").lower().endswith(sys.argv[1].lower()):
        continue
    sig = s.get("signing", {}) or {}
    enc = s.get("encryption", {}) or {}
    print("%s signing=%s encryption=%s" % (s.get("session_dialect", "?"),
          sig.get("cipher") or "-", enc.get("cipher") or "-"))' "$ADDC_USER"
}

# krb_sealed_sizes OUT.json: client-to-server TRANSFORM messages of $KCAP
# by OriginalMessageSize (the WRITEs of an encrypted session are inside).
krb_sealed_sizes() {
	"$PY" "$TESTS_DIR/krb_sealed_sizes.py" "$KCAP" 445 > "$1" ||
	    fail "krb_sealed_sizes.py failed on $KCAP"
}
