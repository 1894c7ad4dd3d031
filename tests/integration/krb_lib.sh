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
#   kcc_smbdd OP PATH BS COUNT [args]  smbdd -k through smbaccel on the
#                                  credential cache's ticket
#   kimp OP PATH [args]            impacket (krb_impacket.py) through smbaccel
#   cached_etypes FQDN             "SKEY, TKT" of the cached cifs/FQDN ticket
#   check_deltas / keyed_lines     stats deltas and smbaccel's "keyed" lines
#   krb_sealed_big LABEL WANT      >= 95 % of WANT bytes upstream in big
#                                  TRANSFORMs ($KCAP)
#   kreload FROM                   SIGHUP, wait for "policy reloaded"
#   kput_get L D MIB               smbclient put+get of $T/orig (sha256
#                                  $want) through smbaccel at D, keyed
#   ksmbdd_cycle L D               smbdd 1 KiB writes and 4 KiB verified
#                                  reads through smbaccel at D, captured
#                                  ($KCAP), snapshots L-1 and L-2, the
#                                  DC's file against $ref, every session
#                                  keyed
#   keys_of KEYTAB                 "KVNO PRINCIPAL ENCTYPE KEYHEX" lines, sorted
#   krb_cc NSFUNC CC SECONDS       a credential cache CC of its own in that
#                                  namespace: a TGT of SECONDS and the
#                                  cifs/$KHOST ticket; klist in CC.klist
# The clients talk to //$KHOST (default $ADDC_FQDN)/$KSHARE (default share).
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
	    --configfile="$home/.smb/smb.conf" "//${KHOST:-$ADDC_FQDN}/${KSHARE:-share}" \
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
	    "smb://${KHOST:-$ADDC_FQDN}/${KSHARE:-share}/$path" "$bs" "$count" -k \
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

# ksessions FILE: sampled_sessions FILE auth, one line per session:
# "conn=C/ID tree=yes|no keyed=true|false why=R auth=A"
ksessions() { sampled_sessions "$1" auth; }

# ksample_start / ksample_stop: conns --json every 0.1 s into $T/ksample
# (sampler_start); ksample_stop prints its sessions (ksessions)
ksample_start() { sampler_start "$T/ksample"; }
ksample_stop() {
	sampler_stop
	ksessions "$T/ksample"
}

# khold_start LABEL D [smbclient args]: an smbclient session through
# smbaccel, its commands from fifo fd 7.
khold_start() {
	local label=$1 d=$2 fifo=$T/$1.hold.fifo; shift 2
	rm -f "$fifo"; mkfifo "$fifo" || fail "mkfifo $fifo"
	in_cli env HOME="$CLI_HOME" smbclient --configfile="$CLI_HOME/.smb/smb.conf" \
	    "//${KHOST:-$ADDC_FQDN}/${KSHARE:-share}" -p "$PROXY_PORT" -N --use-kerberos=required \
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

# kcc_smbdd OP PATH BS COUNT [args]: smbdd -k through smbaccel with an
# empty password, so that libsmbclient takes the ticket of the credential
# cache (with a password it gets a TGT and tickets of its own)
kcc_smbdd() {
	local op=$1 path=$2 bs=$3 count=$4; shift 4
	in_cli env HOME="$CLI_HOME" timeout -k 5 300 "$SMBDD" "$op" \
	    "smb://${KHOST:-$ADDC_FQDN}/${KSHARE:-share}/$path" "$bs" "$count" -k \
	    -W "$ADDC_REALM" -U "$ADDC_USER%" -p "$PROXY_PORT" "$@"
}
# cached_etypes FQDN: "SKEY, TKT", the enctypes of the cached cifs/FQDN
# ticket (klist -e; rc4-hmac for MIT's DEPRECATED:arcfour-hmac)
cached_etypes() {
	in_cli klist -e | grep -A1 "cifs/$1" | sed -n 's/.*Etype (skey, tkt): \(.*\)/\1/p' |
	    sed 's/DEPRECATED://g; s/arcfour-hmac/rc4-hmac/g; s/ *$//'
}
# check_deltas LABEL FROM TO KEYED ABSORBED: the stats between snapshots
# FROM and TO (deltas: D_*): at least KEYED sessions keyed and ABSORBED
# writes absorbed, none unkeyed, no bad signature, no ledger error
check_deltas() {
	deltas "$2" "$3"
	info "$1: sessions_keyed +$D_sessions_keyed writes_absorbed +$D_writes_absorbed upstream_writes +$D_upstream_writes ra_hits +$D_ra_hits signed_out +$D_signed_out bad_signatures +$D_bad_signatures"
	assert_ge "$4" "$D_sessions_keyed" "$1: sessions_keyed"
	assert_eq 0 "$D_sessions_unkeyed" "$1: sessions_unkeyed"
	assert_eq 0 "$D_bad_signatures" "$1: bad_signatures"
	assert_eq 0 "$D_ledger_errors" "$1: ledger_errors"
	assert_ge "$5" "$D_writes_absorbed" "$1: writes_absorbed"
}

# keyed_lines FROM LABEL E [TICKET [KVNO]]: smbaccel's "keyed" lines since
# line FROM into $T/LABEL.keyed, each with a TICKET (default aes256)
# ticket of kvno KVNO (default 1) and session key E
keyed_lines() {
	tail -n +"$(($1 + 1))" "$PROXY_LOG" | grep ' keyed dialect=' > "$T/$2.keyed" ||
	    fail "$2: no keyed session in smbaccel's log"
	grep -v "auth=kerberos .* ticket=${4:-aes256-cts-hmac-sha1-96}/kvno=${5:-1} session_key=$3\$" "$T/$2.keyed" &&
	    fail "$2: a session keyed with another ticket or session key (above)"
	info "$2: $(wc -l < "$T/$2.keyed") sessions keyed, e.g.: $(head -n 1 "$T/$2.keyed" | sed 's/.* auth=/auth=/')"
}
# kimp OP PATH [args]: impacket through smbaccel, KIB KiB of the pattern
kimp() {
	local op=$1 path=$2; shift 2
	in_cli timeout -k 5 300 "$PY" "$TESTS_DIR/krb_impacket.py" --host "${KHOST:-$ADDC_FQDN}" \
	    --addr 127.0.0.1 --port "$PROXY_PORT" --user "$ADDC_USER" --realm "$ADDC_REALM" \
	    "$@" "$op" "$path" $((KIB * 1024)) "$seed" 2>&1
}
# keys_of KEYTAB: its keys as "KVNO PRINCIPAL ENCTYPE KEYHEX", sorted
keys_of() { klist -kKe "$1" | sed -n 's/^ *\([0-9]*\) \(.*\) (\([A-Za-z0-9:-]*\))  *(0x\([0-9a-f]*\)).*/\1 \2 \3 \4/p' | sed 's/DEPRECATED://' | sort; }
# krb_sealed_big LABEL WANT: krb_sealed_sizes on $KCAP into
# $T/sealed-LABEL.json; fails unless >= 95 % of WANT bytes of WRITE data
# went upstream in TRANSFORM messages of >= 512 KiB of data
krb_sealed_big() {
	krb_sealed_sizes "$T/sealed-$1.json"
	"$PY" - "$T/sealed-$1.json" "$2" "$1" <<'EOF' || fail "$1: upstream sizes of the encrypted WRITEs (above)"
import json, sys
j = json.load(open(sys.argv[1]))
want, label = int(sys.argv[2]), sys.argv[3]
hdr = 64 + 48            # SMB2 header + WRITE request before the data
big = sum((int(k) - hdr) * v for k, v in j["histogram"].items() if int(k) - hdr >= 524288)
print("%s: upstream %d encrypted messages, %d plaintext bytes; %d data bytes (%.1f%% of %d written) in messages of >= 512 KiB of data"
      % (label, j["count"], j["bytes"], big, 100.0 * big / want, want))
sys.exit(0 if big >= 0.95 * want else 1)
EOF
}
# kreload FROM: SIGHUP to smbaccel, and wait (10 s at most) for "policy
# reloaded" in its log after line FROM
kreload() {
	local n=100
	kill -HUP "$PROXY_PID"
	until tail -n +"$(($1 + 1))" "$PROXY_LOG" | grep -q "policy reloaded"; do
		n=$((n - 1)); [ $n -gt 0 ] || fail "no 'policy reloaded' after SIGHUP"; sleep 0.1
	done
}

# kput_get L D MIB: smbclient put of $T/orig (MIB MiB, sha256 $want) as
# big-L and get of it back, through smbaccel at dialect D, conns --json
# sampled meanwhile into $T/L.smbclient.sessions: both copies must be
# $want and the session keyed with auth=kerberos
kput_get() {
	local l=$1 d=$2 t0 secs
	ksample_start
	t0=$(now)
	kc_smbclient "$d" "put $T/orig big-$l; get big-$l $T/back-$l" > "$T/smbclient-$l.out" 2>&1 ||
	    { ksample_stop >/dev/null; cat "$T/smbclient-$l.out"; fail "$l: smbclient put/get through smbaccel failed"; }
	secs=$(elapsed "$t0")
	ksample_stop > "$T/$l.smbclient.sessions"
	grep -qiE 'NT_STATUS|error' "$T/smbclient-$l.out" &&
	    { cat "$T/smbclient-$l.out"; fail "$l: smbclient reported an error"; }
	assert_eq "$want" "$(sha256 "$ADDC_SHARE_DIR/big-$l")" "$l: sha256 on the DC's disk after put"
	assert_eq "$want" "$(sha256 "$T/back-$l")" "$l: sha256 of the copy read back"
	info "$l: smbclient put+get of $3 MiB through smbaccel in $secs s"
	sed "s/^/    $l: smbclient session: /" "$T/$l.smbclient.sessions"
	grep -q ' tree=yes keyed=true why=- auth=kerberos$' "$T/$l.smbclient.sessions" ||
	    fail "$l: the smbclient session was not seen keyed with auth=kerberos"
	grep -v ' tree=no keyed=false why=not-needed' "$T/$l.smbclient.sessions" |
	    grep -v ' keyed=true why=- auth=kerberos$' && fail "$l: a session was not keyed (above)"
	rm -f "$ADDC_SHARE_DIR/big-$l" "$T/back-$l"
}

# ksmbdd_cycle L D: smbdd -k writes k-L in 1 KiB writes ($KS_MIB MiB of
# pattern $seed; the upstream leg captured into $KCAP, which the caller
# removes), snapshot L-1, reads it back in verified 4 KiB reads, snapshot
# L-2; the DC's file must be $ref (the same pattern written directly) and
# every smbdd session keyed with auth=kerberos
ksmbdd_cycle() {
	local l=$1 d=$2 t0 out
	kcap_start "up-$l"
	ksample_start
	t0=$(now)
	out=$(kc_smbdd write "k-$l" 1K $((KS_MIB * 1024)) -m "$d" -s "$seed" -q -f 2>&1) ||
	    { ksample_stop >/dev/null; kcap_stop; fail "$l: smbdd 1 KiB writes through smbaccel failed: $out"; }
	info "$l: write 1K: $(echo "$out" | tail -n 1) ($(elapsed "$t0") s)"
	kcap_stop
	snap "$l-1"
	out=$(kc_smbdd verify "k-$l" 4K $((KS_MIB * 256)) -m "$d" -s "$seed" -q 2>&1) ||
	    { ksample_stop >/dev/null; fail "$l: smbdd 4 KiB read+verify through smbaccel failed: $out"; }
	info "$l: read  4K: $(echo "$out" | tail -n 1)"
	ksample_stop > "$T/$l.smbdd.sessions"
	snap "$l-2"
	assert_eq "$ref" "$(sha256 "$ADDC_SHARE_DIR/k-$l")" "$l: sha256 on the DC's disk vs the pattern written directly"
	sed "s/^/    $l: smbdd session: /" "$T/$l.smbdd.sessions"
	grep -v ' tree=no keyed=false why=not-needed' "$T/$l.smbdd.sessions" |
	    grep -v ' keyed=true why=- auth=kerberos$' && fail "$l: an smbdd session was not keyed (above)"
	return 0
}

krb_cc() {
	local fn=$1 cc=$2 life=$3 out
	out=$(printf '%s\n' "$ADDC_PASS" | $fn env KRB5CCNAME="FILE:$cc" \
	    kinit -l "${life}s" "$ADDC_USER@$ADDC_REALM" 2>&1) || fail "kinit -l ${life}s: $out"
	out=$($fn env KRB5CCNAME="FILE:$cc" kvno "cifs/${KHOST:-$ADDC_FQDN}" 2>&1) ||
	    fail "kvno cifs/${KHOST:-$ADDC_FQDN}: $out; $(date); $($fn env KRB5CCNAME="FILE:$cc" klist 2>&1)"
	$fn env KRB5CCNAME="FILE:$cc" klist > "$cc.klist"
}
