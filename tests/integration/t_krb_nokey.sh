#!/bin/bash
# test-timeout: 600
# Issue 12: Kerberos sessions smbaccel cannot key are relayed intact, with
# the reason.  The AD DC (signing mandatory), smbaccel in the client
# namespace with, in turn:
#   none          no keytab                              -> no-keytab
#   otheraccount  another account's keys, at the ticket's kvno (1): of
#                 the right enctype and kvno, they do not decrypt -> decrypt-failed
#   stalekvno     a key of the ticket's enctype but another
#                 kvno, not the DC's key (rotated away)   -> no-matching-key
#   noenctype     the DC's own keys but no aes256 one (the
#                 ticket's enctype)                       -> no-matching-key
# For each: smbdd -k writes KN_MIB (2) MiB in 1 KiB writes and reads them
# back in 4 KiB reads (verified), the DC's file equals the pattern written
# directly; every session sampled is relayed unkeyed with that reason in
# conns --json, an smbclient session held open shows it, the proxy logs
# "passthrough reason=R (signing required" for each session, and
# `smbaccelctl stats` counts them under unkeyed_by.R (no-matching-key: one
# warning of the stale keytab for all of them, and `smbaccelctl keytabs`
# names the ticket's service, enctype and kvno with the count of sessions);
# nothing is absorbed or read ahead.  The positive control:
#   relabelled    the DC's keys under another name (cifs/...) and kvno 7 ->
#                 keyed (every key of the enctype is tried)
# Per-server keytabs: [global]'s is stale but a [//FQDN/share] section gives
# the right one (found by the ticket's host name) -> keyed; only a
# [//198.51.100.2/share] section has it (found by the server's address) ->
# keyed; only another server's section has it -> no-keytab.
# Then key rotation without a restart: the stale keytab is replaced by the
# right one in place and SIGHUP re-reads it: new sessions are keyed.  And
# keytabs smbaccel must refuse, at start and at reload (old one kept, still
# keying): mode 0644, owner not root, truncated, not a keytab, missing.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/krb_lib.sh"
require_smbaccel "Kerberos-keyed sessions"

MIB=${KN_MIB:-2}
KTOOL=$TOP/deploy/smbaccel-keytab
krb_bed
seed=$((RANDOM * 32768 + RANDOM + 1))
info "seed $seed"
out=$(kd_smbdd write ref 1M "$MIB" -s "$seed" -q 2>&1) || fail "direct reference write failed: $out"
ref=$(sha256 "$ADDC_SHARE_DIR/ref")

# the DC's keys, as "ENCTYPE:HEX" (klist -kKe)
dckeys=$(klist -kKe "$KT" | sed -n 's/.*(\([A-Za-z0-9:-]*\))  *(0x\([0-9a-f]*\)).*/\1:\2/p' |
    sed 's/^DEPRECATED://' | tr '\n' ' ')
info "DC keys: $(echo "$dckeys" | sed 's/:[0-9a-f]*/:.../g')"
[ "$(echo $dckeys | wc -w)" = 3 ] || fail "expected 3 keys in the DC's keytab"
kopt() { local k o=; for k in $1; do o="$o --key $k"; done; echo "$o"; }

mk_keytab() {	# mk_keytab CASE FILE
	case $1 in
	otheraccount)
		addc_keytab "$T/other.raw" "$ADDC_REPL"
		# shellcheck disable=SC2046
		"$PY" "$KTOOL" keys --principal "$ADDC_REPL@$ADDC_REALM" --kvno 1 \
		    $(kopt "$(klist -kKe "$T/other.raw" | sed -n 's/.*(\([A-Za-z0-9:-]*\))  *(0x\([0-9a-f]*\)).*/\1:\2/p' |
		    sed 's/^DEPRECATED://')") -o "$2" > /dev/null ;;
	stalekvno)
		"$PY" "$KTOOL" keys --principal "DC1\$@$ADDC_REALM" --kvno 2 \
		    --key "aes256-cts-hmac-sha1-96:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
		    -o "$2" > /dev/null ;;
	noenctype)
		# shellcheck disable=SC2046
		"$PY" "$KTOOL" keys --principal "DC1\$@$ADDC_REALM" --kvno 1 \
		    $(kopt "$(echo "$dckeys" | tr ' ' '\n' | grep -v '^aes256')") -o "$2" > /dev/null ;;
	relabelled)
		# shellcheck disable=SC2046
		"$PY" "$KTOOL" keys --principal "cifs/$ADDC_FQDN@$ADDC_REALM" --kvno 7 \
		    $(kopt "$dckeys") -o "$2" > /dev/null ;;
	esac || fail "$1: cannot make the keytab"
}

# nk_case LABEL D WHY: transfers through smbaccel, sessions relayed with WHY
# (WHY "keyed": keyed).
nk_case() {
	local label=$1 d=$2 why=$3 nlog sess bad
	snap "$label-0"
	nlog=$(wc -l < "$PROXY_LOG")
	ksample_start
	out=$(kc_smbdd write "n-$label" 1K $((MIB * 1024)) -m "$d" -s "$seed" -q -f 2>&1) ||
	    { ksample_stop >/dev/null; fail "$label: smbdd 1 KiB writes through smbaccel failed: $out"; }
	out=$(kc_smbdd verify "n-$label" 4K $((MIB * 256)) -m "$d" -s "$seed" -q 2>&1) ||
	    { ksample_stop >/dev/null; fail "$label: smbdd 4 KiB read+verify through smbaccel failed: $out"; }
	ksample_stop > "$T/$label.sessions"
	khold_start "$label" "$d"
	khold_finish "$label"
	snap "$label-1"
	assert_eq "$ref" "$(sha256 "$ADDC_SHARE_DIR/n-$label")" "$label: sha256 on the DC's disk vs the pattern written directly"
	rm -f "$ADDC_SHARE_DIR/n-$label"
	sed "s/^/    $label: smbdd session: /" "$T/$label.sessions"
	deltas "$label-0" "$label-1"
	sess=$(tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -E 'session=0x[0-9a-f]+ (keyed|passthrough)')
	echo "$sess" | sed "s/^/    $label: log: /" | cut -c1-220
	if [ "$why" = keyed ]; then
		grep -q ' keyed=true why=- auth=kerberos$' "$T/$label.hold.sessions" ||
		    fail "$label: the held session is not keyed"
		grep -v ' tree=no keyed=false why=not-needed' "$T/$label.sessions" |
		    grep -v ' keyed=true why=- auth=kerberos$' && fail "$label: a session was not keyed (above)"
		assert_ge 3 "$D_sessions_keyed" "$label: sessions_keyed"
		assert_ge 1 "$D_writes_absorbed" "$label: writes_absorbed"
		return 0
	fi
	grep -q " keyed=false why=$why auth=kerberos\$" "$T/$label.hold.sessions" ||
	    fail "$label: the held session does not show why_not_keyed=$why, auth=kerberos"
	bad=$(grep -v ' tree=no keyed=false why=not-needed' "$T/$label.sessions" |
	    grep -v " keyed=false why=$why auth=kerberos\$")
	[ -z "$bad" ] || fail "$label: sessions not relayed with reason $why: $bad"
	assert_ge 3 "$(echo "$sess" | grep -c "passthrough reason=$why (signing required, encryption off) auth=kerberos")" \
	    "$label: 'passthrough reason=$why (signing required ...) auth=kerberos' log lines"
	echo "$sess" | grep -v "passthrough reason=$why " | grep -q . &&
	    fail "$label: a session logged something else than passthrough reason=$why"
	info "$label: sessions_unkeyed +$D_sessions_unkeyed writes_absorbed +$D_writes_absorbed ra_hits +$D_ra_hits"
	assert_eq 0 "$D_sessions_keyed" "$label: sessions_keyed"
	assert_ge 3 "$D_sessions_unkeyed" "$label: sessions_unkeyed"
	assert_eq 0 "$D_writes_absorbed" "$label: writes_absorbed"
	assert_eq 0 "$D_ra_hits" "$label: ra_hits"
	assert_eq 0 "$D_bad_signatures" "$label: bad_signatures"
	# a smbaccel of its own per case: its counts are this case's
	assert_eq "$D_sessions_unkeyed" "$(stat_get "unkeyed_by.$why")" "$label: smbaccelctl stats unkeyed_by.$why"
	if [ "$why" = no-matching-key ]; then
		assert_eq 1 "$(tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -c 'kerberos: the keytab has no .* key of version [0-9]* for cifs/')" \
		    "$label: stale keytab warnings (one for all its sessions)"
		# smbaccelctl keytabs: the ticket without a key, and how many
		# sessions went unkeyed for it
		ctl keytabs > "$T/$label.keytabs" || fail "$label: smbaccelctl keytabs failed"
		sed "s/^/    $label: keytabs: /" "$T/$label.keytabs"
		assert_eq "cifs/$ADDC_FQDN@$ADDC_REALM aes256-cts-hmac-sha1-96 1 $D_sessions_unkeyed" \
		    "$(ctl keytabs --json | "$PY" -c 'import json,sys; m = json.load(sys.stdin)["no_matching_key"]; print(m["service"], m["enctype"], m["kvno"], m["sessions"])')" \
		    "$label: smbaccelctl keytabs --json no_matching_key (service, enctype, kvno, sessions)"
		grep -q "^last ticket without a key: cifs/$ADDC_FQDN@$ADDC_REALM aes256-cts-hmac-sha1-96 kvno 1 at " "$T/$label.keytabs" ||
		    fail "$label: smbaccelctl keytabs does not name the ticket without a key"
	fi
}

for c in none:no-keytab:SMB2_10 none:no-keytab:SMB3_11 otheraccount:decrypt-failed:SMB3_11 \
    stalekvno:no-matching-key:SMB3_11 noenctype:no-matching-key:SMB3_00 relabelled:keyed:SMB3_11; do
	name=${c%%:*} rest=${c#*:} why=${rest%%:*} d=${rest#*:}
	if [ "$name" = none ]; then
		KRB_KEYTAB_LINE="" krb_proxy
	else
		mk_keytab "$name" "$T/$name.keytab"
		KRB_KEYTAB_LINE="keytab = $T/$name.keytab" krb_proxy
	fi
	nk_case "$name-$d" "$d" "$why"
	proxy_alive || fail "proxy died"
	stop_proxy
	PROXY_PORT=
done

# ---- per-server keytabs
mk_keytab stalekvno "$T/stale.keytab"
KRB_KEYTAB_LINE="keytab = $T/stale.keytab" krb_proxy "[//$ADDC_FQDN/share]" "keytab = $KT"
nk_case perserver-name SMB3_11 keyed
stop_proxy; PROXY_PORT=
KRB_KEYTAB_LINE="" krb_proxy "[//$ADDC_IP/share]" "keytab = $KT"
nk_case perserver-address SMB3_11 keyed
stop_proxy; PROXY_PORT=
KRB_KEYTAB_LINE="" krb_proxy "[//fs9.krb.smbaccel.test/share]" "keytab = $KT"
nk_case perserver-other SMB3_11 no-keytab
stop_proxy; PROXY_PORT=

# ---- rotation: the file is replaced, SIGHUP re-reads it
info "key rotation: stale keytab, then the right one in its place and SIGHUP"
mk_keytab stalekvno "$T/rot.keytab"
KRB_KEYTAB_LINE="keytab = $T/rot.keytab" krb_proxy
nk_case rot-before SMB3_11 no-matching-key
cp "$KT" "$T/rot.keytab.new" && chmod 0600 "$T/rot.keytab.new" && mv "$T/rot.keytab.new" "$T/rot.keytab"
nlog=$(wc -l < "$PROXY_LOG")
kreload "$nlog"
tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -q "keytab: $T/rot.keytab: 3 keys: DC1" ||
    fail "the reload did not log the new keytab"
nk_case rot-after SMB3_11 keyed

# ---- keytabs smbaccel refuses: at start ...
refuse() {	# refuse NAME REGEX
	local name=$1 re=$2 port rc
	port=$(free_port) || fail "no free port"
	PROXY_PORT=$port write_proxy_conf "$T/refuse.conf" "keytab = $T/bad.keytab"
	timeout 10 "$SMBACCEL" -c "$T/refuse.conf" -f </dev/null >"$T/refuse-$name.log" 2>&1
	rc=$?
	info "start with $name: exit $rc: $(grep -m1 'keytab' "$T/refuse-$name.log")"
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "$name: smbaccel started (exit $rc)"
	grep -Eq -- "$re" "$T/refuse-$name.log" ||
	    fail "$name: the error does not say '$re': $(cat "$T/refuse-$name.log")"
	port_open "$port" && fail "$name: something listens on $port"
	return 0
}
bad_keytab() {	# bad_keytab KIND: $T/bad.keytab of that kind
	rm -f "$T/bad.keytab"
	case $1 in
	mode0644)	cp "$KT" "$T/bad.keytab"; chmod 0644 "$T/bad.keytab" ;;
	owner)		cp "$KT" "$T/bad.keytab"; chmod 0600 "$T/bad.keytab"; chown "$SMB_USER" "$T/bad.keytab" ;;
	truncated)	head -c 100 "$KT" > "$T/bad.keytab"; chmod 0600 "$T/bad.keytab" ;;
	garbage)	echo "not a keytab" > "$T/bad.keytab"; chmod 0600 "$T/bad.keytab" ;;
	missing)	;;
	esac
}
ensure_test_user
for k in "mode0644:keytab.*$T/bad.keytab.*mode 0644.*group or others" \
    "owner:keytab.*$T/bad.keytab.*owned by uid $(id -u "$SMB_USER").*root" \
    "truncated:keytab.*$T/bad.keytab.*truncated" "garbage:keytab.*$T/bad.keytab.*not a keytab" \
    "missing:keytab.*$T/bad.keytab.*No such file"; do
	bad_keytab "${k%%:*}"
	refuse "${k%%:*}" "${k#*:}"
done
# ... and at reload: refused, the keytab in use stays
for k in mode0644 truncated garbage missing; do
	bad_keytab "$k"
	sed -i "s|^keytab = .*|keytab = $T/bad.keytab|" "$PROXY_CONF"
	nlog=$(wc -l < "$PROXY_LOG")
	kill -HUP "$PROXY_PID"
	n=50
	until tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -q "reload failed: keytab refused; old policy kept"; do
		n=$((n - 1)); [ $n -gt 0 ] || fail "reload with a $k keytab: no 'reload failed: keytab refused' line"; sleep 0.1
	done
	info "reload with $k: $(tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -m1 'keytab:' | cut -c1-160)"
done
nk_case after-bad-reloads SMB3_11 keyed
proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
info "PASS"
