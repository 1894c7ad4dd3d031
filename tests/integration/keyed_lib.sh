# tests/integration/keyed_lib.sh - helpers for the t_keyed_* tests (issue 5),
# sourced after lib.sh.
#
#   write_secrets FILE LINES...   the secrets file, root-owned, mode 0600
#   nt_hash                       smbtest's NT hash, from smbd's passdb
#   start_keyed_proxy [LINES...]  smbaccel with [share share] write_behind and
#                                 read_ahead = always (libsmbclient takes no
#                                 lease); LINES go into [global]
#   snap NAME / deltas A B        stats --json snapshots; D_key differences
#   sampler_start [FILE] / sampler_stop  poll `conns --json` while a client runs
#   sampled_sessions [FILE [auth]]  "conn=C/SESSION tree= keyed= why= absorbed=" (or auth=)
#   sampled_smbstatus FILE        "DIALECT signing=ALG encryption=ALG"
#   hold_start LABEL DIALECT HOME / hold_finish LABEL: an smbclient session
#                                 held open across a case; then the proxy's
#                                 conns and smbstatus are polled for it
#   ks_case LABEL DIALECT HOME    the keyed check of t_keyed_signing/encrypt

write_secrets() {	# write_secrets FILE LINES...
	local f=$1 l; shift
	: > "$f" || fail "cannot create $f"
	chown 0:0 "$f" && chmod 0600 "$f" || fail "cannot chown/chmod $f"
	for l in "$@"; do printf '%s\n' "$l"; done >> "$f"
}

nt_hash() {
	smbd_ns pdbedit -s "$SMBD_CONF" -L -w 2>/dev/null |
	    awk -F: -v u="$SMB_USER" '$1 == u { print $4 }'
}

start_keyed_proxy() {
	PROXY_SHARE_SECTION=no start_proxy "$@" "" "[share share]" \
	    "write_behind = always" "read_ahead = always"
}

snap() { ctl stats --json > "$T/$1.stats.json" || fail "smbaccelctl stats failed"; }

# deltas A B: sets D_<key> (non-alphanumerics as _) to B's value minus A's
# for every numeric stat, e.g. D_writes_absorbed, D_opaque_signed_no_key.
deltas() {
	eval "$("$PY" - "$T/$1.stats.json" "$T/$2.stats.json" <<'EOF'
import json, re, sys
def flat(d, pre=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat(v, pre + k + "_"))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[re.sub(r"[^A-Za-z0-9_]", "_", pre + k)] = v
    return out
a, b = (flat(json.load(open(p))) for p in sys.argv[1:3])
for k in b:
    print("D_%s=%d" % (k, b[k] - a.get(k, 0)))
EOF
)"
}

# sampler_start [FILE]: until sampler_stop, append `conns --json` every
# 0.1 s to FILE (default $T/conns.samples), one JSON document a line.
sampler_start() {
	local f=${1:-$T/conns.samples}
	: > "$f"
	(
		while :; do
			ctl conns --json 2>/dev/null | tr -d '\n' >> "$f"
			echo >> "$f"
			sleep 0.1
		done
	) &
	SAMPLER_PID=$!
	BG_PIDS="$BG_PIDS $SAMPLER_PID"
}

sampler_stop() {
	[ -n "${SAMPLER_PID:-}" ] && stop_pid "$SAMPLER_PID" 2
	SAMPLER_PID=
}

# hold_start LABEL DIALECT HOME: an smbclient session through the proxy
# (HOME's smb.conf, DIALECT forced), held open (its stdin is fd 7) until
# hold_finish LABEL, which polls `conns --json` and smbstatus until its
# session setup is over in the proxy and smbd lists it (at most 20 s),
# then closes it.  Leaves sampled_sessions output in $T/LABEL.hold.sessions
# and sampled_smbstatus output in $T/LABEL.hold.smbstatus.  Deterministic,
# unlike sampling a short smbdd run.
hold_start() {
	local label=$1 d=$2 home=$3 fifo=$T/$1.hold.fifo
	rm -f "$fifo"; mkfifo "$fifo" || fail "mkfifo $fifo"
	HOME=$home smbclient "//127.0.0.1/share" -p "$PROXY_PORT" -U "$SMB_USER%$SMB_PASS" \
	    --configfile="$home/.smb/smb.conf" --option="client min protocol=$d" \
	    --option="client max protocol=$d" < "$fifo" > "$T/$label.hold.out" 2>&1 &
	HOLD_PID=$!
	BG_PIDS="$BG_PIDS $HOLD_PID"
	exec 7> "$fifo"
}

hold_finish() {
	local label=$1 n=100 pid=$HOLD_PID
	local cs=$T/$label.hold.conns ss=$T/$label.hold.smbstatus.json
	: > "$cs"; : > "$ss"
	while :; do
		ctl conns --json 2>/dev/null | tr -d '\n' >> "$cs"; echo >> "$cs"
		smbd_ns smbstatus -s "$SMBD_CONF" --json 2>/dev/null | tr -d '\n' >> "$ss"; echo >> "$ss"
		sampled_sessions "$cs" > "$T/$label.hold.sessions"
		sampled_smbstatus "$ss" > "$T/$label.hold.smbstatus"
		grep -qv ' keyed=false why=not-needed ' "$T/$label.hold.sessions" &&
		    [ -s "$T/$label.hold.smbstatus" ] && break
		n=$((n - 1))
		[ $n -gt 0 ] && kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	if [ $n -lt 100 ]; then
		# it was still being set up: one more sample of both once
		# settled (smbstatus lists a session before its signing is set)
		sleep 0.5
		ctl conns --json 2>/dev/null | tr -d '\n' >> "$cs"; echo >> "$cs"
		smbd_ns smbstatus -s "$SMBD_CONF" --json 2>/dev/null | tr -d '\n' >> "$ss"; echo >> "$ss"
		sampled_sessions "$cs" > "$T/$label.hold.sessions"
		sampled_smbstatus "$ss" > "$T/$label.hold.smbstatus"
	fi
	echo ls >&7
	exec 7>&-
	n=50
	while [ $n -gt 0 ] && kill -0 "$pid" 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	stop_pid "$pid" 2
	HOLD_PID=
	sed "s/^/    $label: held session, proxy: /" "$T/$label.hold.sessions"
	sed "s/^/    $label: held session, smbd:  /" "$T/$label.hold.smbstatus"
	grep -q 'blocks available' "$T/$label.hold.out" ||
	    fail "$label: the held smbclient session did not work: $(tail -n 3 "$T/$label.hold.out")"
}

# sampled_sessions [FILE [auth]]: one line per session seen in the conns
# samples (default $T/conns.samples), its last state seen once its
# connection had a tree (else its last state):
# "conn=C/ID tree=yes|no keyed=true|false why=REASON absorbed=N" (N: the
# most writes_absorbed seen on C), or with "auth" "... auth=A" (how it
# was keyed) in place of absorbed=N.  "tree=no keyed=false
# why=not-needed" is a session seen only while being set up; an encrypted
# session without a key stays tree=no (its TREE_CONNECT is sealed).
sampled_sessions() {
	"$PY" - "${1:-$T/conns.samples}" "${2:-absorbed}" <<'EOF'
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
            prev = seen.get(k, (None, None, "", 0, False))
            # a session being set up shows keyed=false, why=not-needed:
            # keep the last state seen once the conn has a tree
            has_tree = bool(c.get("trees"))
            st = ((s["keyed"], s["why_not_keyed"], s.get("auth", ""))
                  if has_tree or not prev[4] else prev[:3])
            seen[k] = st + (max(prev[3], c.get("writes_absorbed", 0)), prev[4] or has_tree)
for (cid, sid), (keyed, why, auth, ab, tree) in sorted(seen.items()):
    last = "auth=%s" % (auth or "-") if sys.argv[2] == "auth" else "absorbed=%d" % ab
    print("conn=%s/%s tree=%s keyed=%s why=%s %s"
          % (cid, sid, "yes" if tree else "no", str(keyed).lower(), why or "-", last))
EOF
}

# sampled_smbstatus FILE: one line per smbd session of $SMB_USER seen in
# FILE (smbstatus --json samples, one a line), in its last state sampled:
# "DIALECT signing=ALG encryption=ALG".
sampled_smbstatus() {
	"$PY" - "$1" "$SMB_USER" <<'EOF'
import json, sys
seen = {}
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    for sid, s in d.get("sessions", {}).items():
        if s.get("username") != sys.argv[2]:
            continue
        sig = s.get("signing", {}) or {}
        enc = s.get("encryption", {}) or {}
        # the last state of each session (it shows no signing while
        # being set up)
        seen[sid] = "%s signing=%s encryption=%s" % (
            s.get("session_dialect", "?"),
            sig.get("cipher") or "-", enc.get("cipher") or "-")
for x in sorted(set(seen.values())):
    print(x)
EOF
}

# ks_case LABEL DIALECT HOME WANT: smbdd writes KS_MIB MiB in 1 KiB writes
# and reads it back in 4 KiB reads (verified) through the proxy at DIALECT
# with HOME's smb.conf; the file on disk must equal $KS_REF (sha256); every
# session sampled must be keyed, and an smbclient session held open with
# the same client config must be keyed in conns --json and match WANT in
# smbstatus; the stats deltas must show absorption,
# large upstream writes, read-ahead hits and no bad signatures.  Leaves the
# whole-case stats differences in D_* (see deltas).  WANT is a
# regex the smbstatus line of the session must match (dialect and
# algorithms), e.g. 'SMB3_11 signing=AES-128-GMAC'.
ks_case() {
	local label=$1 d=$2 home=$3 want=$4 out n ab uw ub mean ra minmean
	local count1k=$((KS_MIB * 1024)) count4k=$((KS_MIB * 256))
	local t0
	t0=$(now)
	snap "$label-0"
	hold_start "$label" "$d" "$home"
	sampler_start
	out=$(HOME=$home timeout 120 "$SMBDD" write "$(smb_url "$PROXY_PORT" "k-$label")" \
	    1K "$count1k" -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$KS_SEED" -q -f 2>&1) ||
	    { sampler_stop; fail "$label: smbdd 1 KiB write through the proxy failed: $out"; }
	info "$label: write 1K: $(echo "$out" | tail -n 1)"
	snap "$label-1"
	out=$(HOME=$home timeout 120 "$SMBDD" verify "$(smb_url "$PROXY_PORT" "k-$label")" \
	    4K "$count4k" -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$KS_SEED" -q 2>&1) ||
	    { sampler_stop; fail "$label: smbdd 4 KiB read+verify through the proxy failed: $out"; }
	info "$label: read  4K: $(echo "$out" | tail -n 1)"
	sampler_stop
	hold_finish "$label"
	snap "$label-2"

	assert_eq "$(sha256 "$SHARE_DIR/k-$label")" "$KS_REF" "$label: sha256 on disk vs the pattern written directly"

	# the session held open: keyed in conns --json, and smbd negotiated
	# what was asked for
	grep -q ' keyed=true ' "$T/$label.hold.sessions" ||
	    fail "$label: the held session is not keyed in conns --json"
	[ -s "$T/$label.hold.smbstatus" ] || fail "$label: smbstatus saw no session of $SMB_USER"
	if grep -Ev "^$want" "$T/$label.hold.smbstatus"; then
		fail "$label: smbd's session (above) does not match '$want'"
	fi
	# sessions sampled while smbdd ran: none unkeyed (one in set-up aside)
	sampled_sessions > "$T/$label.sessions"
	sed "s/^/    $label: smbdd session, proxy: /" "$T/$label.sessions"
	if grep -v ' tree=no keyed=false why=not-needed ' "$T/$label.sessions" | grep -v ' keyed=true '; then
		fail "$label: a session was not keyed (above)"
	fi

	deltas "$label-0" "$label-1"
	ab=$D_writes_absorbed uw=$D_upstream_writes ub=$D_upstream_write_bytes
	deltas "$label-1" "$label-2"
	ra=$D_ra_hits
	deltas "$label-0" "$label-2"
	mean=$(( uw > 0 ? ub / uw : 0 ))
	info "$label: absorbed $ab of $count1k writes; upstream $uw WRITEs, $ub bytes, mean $mean; ra_hits $ra of $count4k reads; sessions_keyed +$D_sessions_keyed signed_out +$D_signed_out encrypted_out +$D_encrypted_out decrypted_in +$D_decrypted_in ($(elapsed "$t0") s)"
	assert_ge 3 "$D_sessions_keyed" "$label: sessions_keyed delta (write, read, held session)"
	assert_eq 0 "$D_sessions_unkeyed" "$label: sessions_unkeyed delta"
	assert_eq 0 "$D_bad_signatures" "$label: bad_signatures delta"
	assert_eq 0 "$D_ledger_errors" "$label: ledger_errors delta"
	assert_eq 0 "$D_deferred_errors" "$label: deferred_errors delta"
	assert_ge $((count1k * 9 / 10)) "$ab" "$label: writes_absorbed delta (of $count1k 1 KiB writes)"
	assert_ge $((KS_MIB * 1048576)) "$ub" "$label: upstream_write_bytes delta"
	case $d in SMB2_02) minmean=32768 ;; *) minmean=262144 ;; esac
	assert_ge "$minmean" "$mean" "$label: mean upstream WRITE size"
	assert_ge 1 "$ra" "$label: ra_hits delta"
	rm -f "$SHARE_DIR/k-$label"
}
