#!/bin/bash
# test-timeout: 600
# Issue 5 test 4: the servers of t_keyed_signing (server signing =
# mandatory; 2.0.2, 2.1, 3.0, 3.0.2, 3.1.1) and t_keyed_encrypt (server smb
# encrypt = required; 3.0, 3.0.2, 3.1.1) with a proxy that has no usable
# secret: none configured (no-key), a secret for another domain only
# (no-key), a wrong password (key-mismatch), an nthash entry with a wrong
# hash (key-mismatch).  Every smbdd transfer (1 KiB writes, 4 KiB reads
# verified) works, the file on disk is intact, each session is relayed
# unaccelerated with the right reason: `why_not_keyed` in conns --json
# (sampled during the transfers, and for an smbclient session held open),
# the proxy's "passthrough reason=" log line for every session;
# writes_absorbed and ra_hits stay 0.  All dialects without a secret; the
# lowest and highest with a wrong password or hash; the highest with the
# other domain's entry.
# Reloads refused after the new secrets file was read (a keytab that is
# not one; an upstream that does not resolve; the secrets file in use
# edited in place, with a keytab that is not one) leave the old secrets in
# force: the wrong password, so the next session is still key-mismatch.
# Then secrets files the daemon must refuse, with an error naming the
# problem: mode 0644, mode 0640, owned by a non-root user, a bad line, a
# missing file.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "keyed sessions"
[ -x "$SMBDD" ] || skip "$SMBDD not built"

MIB=${KN_MIB:-2}
SEED=$((RANDOM * 32768 + RANDOM + 1))
info "seed $SEED"

# nk_case LABEL DIALECT WHY: one write + verified read through the proxy.
nk_case() {
	local label=$1 d=$2 why=$3 home out nlog sess bad req
	home=$(client_home "nk-$d")
	snap "$label-0"
	nlog=$(wc -l < "$PROXY_LOG")
	hold_start "$label" "$d" "$home"
	sampler_start
	out=$(HOME=$home timeout 120 "$SMBDD" write "$(smb_url "$PROXY_PORT" "n-$label")" \
	    1K $((MIB * 1024)) -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$SEED" -q -f 2>&1) ||
	    { sampler_stop; fail "$label: smbdd 1 KiB write through the proxy failed: $out"; }
	info "$label: write 1K: $(echo "$out" | tail -n 1)"
	out=$(HOME=$home timeout 120 "$SMBDD" verify "$(smb_url "$PROXY_PORT" "n-$label")" \
	    4K $((MIB * 256)) -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$SEED" -q 2>&1) ||
	    { sampler_stop; fail "$label: smbdd 4 KiB read+verify through the proxy failed: $out"; }
	info "$label: read  4K: $(echo "$out" | tail -n 1)"
	sampler_stop
	# a session held open: why_not_keyed in conns --json, deterministically
	hold_finish "$label"
	grep -q " keyed=false why=$why " "$T/$label.hold.sessions" ||
	    fail "$label: the held session does not show why_not_keyed=$why in conns --json"
	snap "$label-1"
	assert_eq "$REF" "$(sha256 "$SHARE_DIR/n-$label")" "$label: sha256 on disk vs the pattern written directly"
	rm -f "$SHARE_DIR/n-$label"

	sampled_sessions > "$T/$label.sessions"
	sed "s/^/    $label: proxy session /" "$T/$label.sessions"
	bad=$(grep -v ' tree=no keyed=false why=not-needed ' "$T/$label.sessions" |
	    grep -v " keyed=false why=$why absorbed=0\$")
	[ -z "$bad" ] || fail "$label: sessions not relayed plainly with reason $why: $bad"
	# every session set up: a passthrough line with the reason
	sess=$(tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -E 'session=0x[0-9a-f]+ (keyed|passthrough)')
	echo "$sess" | sed "s/^/    $label: log: /"
	assert_ge 3 "$(echo "$sess" | grep -c "passthrough reason=$why ")" "$label: 'passthrough reason=$why' log lines (write, read, held session)"
	echo "$sess" | grep -v "passthrough reason=$why " | grep -q . &&
	    fail "$label: a session logged something other than passthrough reason=$why (above)"
	case $label in
	sign-*) req="signing required" ;;
	seal-*) req="encryption required" ;;
	esac
	echo "$sess" | grep -v "($req\|, $req)" | grep -q . &&
	    fail "$label: a passthrough line does not say '$req' (above)"
	deltas "$label-0" "$label-1"
	info "$label: sessions_unkeyed +$D_sessions_unkeyed writes_absorbed +$D_writes_absorbed ra_hits +$D_ra_hits opaque.signed-no-key +$D_opaque_signed_no_key opaque.encrypted-no-key +$D_opaque_encrypted_no_key"
	assert_eq 0 "$D_writes_absorbed" "$label: writes_absorbed delta"
	assert_eq 0 "$D_ra_hits" "$label: ra_hits delta"
	assert_eq 0 "$D_sessions_keyed" "$label: sessions_keyed delta"
	assert_ge 3 "$D_sessions_unkeyed" "$label: sessions_unkeyed delta"
}

# hup_refused WHAT: SIGHUP the proxy, wait for "reload failed: WHAT".
hup_refused() {
	local nlog n=50
	nlog=$(wc -l < "$PROXY_LOG")
	kill -HUP "$PROXY_PID"
	until tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -q "reload failed: $1"; do
		n=$((n - 1)); [ $n -gt 0 ] || fail "no 'reload failed: $1' line after SIGHUP"
		sleep 0.2
	done
	info "reload refused: $(tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -m1 "reload failed: $1")"
}
# refused_reloads DIALECT: the proxy runs with the wrong password.  A
# reload naming the right one is refused by a later step (a keytab that is
# not one; an upstream that does not resolve): the wrong password must stay
# in force, the right one having been read before the refusal.  Without
# the old keys put back the next session would be keyed.
refused_reloads() {
	local d=$1 orig="$T/proxy.conf.orig"
	cp "$PROXY_CONF" "$orig"
	write_secrets "$T/secrets-good" "$SMB_USER:password:$SMB_PASS"
	echo "not a keytab" > "$T/bad.keytab"; chmod 0600 "$T/bad.keytab"
	sed "s|^secrets = .*|secrets = $T/secrets-good\nkeytab = $T/bad.keytab|" "$orig" > "$PROXY_CONF"
	hup_refused "keytab refused; old policy kept"
	nk_case "sign-refused-keytab-$d" "$d" key-mismatch
	sed -e "s|^secrets = .*|secrets = $T/secrets-good|" \
	    -e "s|^upstream = .*|upstream = nosuch-upstream.invalid:445|" "$orig" > "$PROXY_CONF"
	hup_refused "upstream does not resolve; old policy kept"
	nk_case "sign-refused-upstream-$d" "$d" key-mismatch
	# the file in use edited in place to the right password, and a keytab
	# that is not one: refused, and what the file held when it was last
	# taken stays in force (before, it was read again from disk)
	cp "$T/secrets" "$T/secrets.wrong"
	write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
	sed "s|^secrets = .*|&\nkeytab = $T/bad.keytab|" "$orig" > "$PROXY_CONF"
	hup_refused "keytab refused; old policy kept"
	nk_case "sign-refused-edited-$d" "$d" key-mismatch
	cp "$T/secrets.wrong" "$T/secrets"
	# the same file with the right password, and nothing else changed: in
	# force (the case above can fail)
	sed "s|^secrets = .*|secrets = $T/secrets-good|" "$orig" > "$PROXY_CONF"
	kill -HUP "$PROXY_PID"
	wait_log "policy reloaded" 5 || fail "the reload with the right password was not taken"
	cp "$orig" "$PROXY_CONF"
}

# run_server KIND SMBD_LINE DIALECTS: smbd with that line, then each
# secrets configuration with a fresh proxy.
run_server() {
	local kind=$1 line=$2 dialects=$3 h cfg why d out
	start_smbd "$line"
	out=$(smbdd_run write "$SMBD_PORT" ref 1M "$MIB" -s "$SEED" -q 2>&1) ||
	    fail "direct reference write failed: $out"
	REF=$(sha256 "$SHARE_DIR/ref")
	h=$(nt_hash)
	[ ${#h} -eq 32 ] || fail "no NT hash for $SMB_USER from pdbedit: '$h'"
	# a hash that is not smbtest's: the real one with its digits rotated
	wrong=${h:1}${h:0:1}
	[ "$wrong" != "$h" ] || wrong=00112233445566778899aabbccddeeff
	for cfg in none otherdomain wrongpass wronghash; do
		case $cfg in
		none)		why=no-key ;;
		otherdomain)	why=no-key
				write_secrets "$T/secrets" "OTHERDOM\\$SMB_USER:password:$SMB_PASS" ;;
		wrongpass)	why=key-mismatch
				write_secrets "$T/secrets" "$SMB_USER:password:${SMB_PASS}x" ;;
		wronghash)	why=key-mismatch
				write_secrets "$T/secrets" "SMBACCEL\\$SMB_USER:nthash:$wrong" ;;
		esac
		if [ "$cfg" = none ]; then
			start_keyed_proxy
		else
			start_keyed_proxy "secrets = $T/secrets"
		fi
		# all dialects without a secret; a wrong secret is detected on
		# NTProofStr, before any dialect-specific step: the lowest and
		# highest dialect; the other domain's entry: the highest
		case $cfg in
		none)		ds=$dialects ;;
		otherdomain)	ds=${dialects##* } ;;
		*)		ds="${dialects%% *} ${dialects##* }" ;;
		esac
		for d in $ds; do
			nk_case "$kind-$cfg-$d" "$d" "$why"
		done
		[ "$kind-$cfg" = sign-wrongpass ] && refused_reloads "${dialects##* }"
		assert_eq 0 "$(stat_get bad_signatures)" "$kind-$cfg: stats bad_signatures"
		proxy_alive || fail "proxy died"
		stop_proxy
	done
	stop_smbd
}

run_server sign "server signing = mandatory" "${KN_SIGN_DIALECTS:-SMB2_02 SMB2_10 SMB3_00 SMB3_02 SMB3_11}"
run_server seal "server smb encrypt = required" "${KN_SEAL_DIALECTS:-SMB3_00 SMB3_02 SMB3_11}"

# ---- secrets files the daemon must refuse
# refuse NAME REGEX: smbaccel with secrets = $T/secrets must exit non-zero
# within 10 s, not listen, and say REGEX on its output.
refuse() {
	local name=$1 re=$2 port rc
	port=$(free_port) || fail "no free port"
	PROXY_PORT=$port write_proxy_conf "$T/refuse.conf" "secrets = $T/secrets"
	timeout 10 "$SMBACCEL" -c "$T/refuse.conf" -f </dev/null >"$T/refuse-$name.log" 2>&1
	rc=$?
	info "$name: exit $rc: $(tr '\n' ' ' < "$T/refuse-$name.log")"
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] ||
	    fail "$name: smbaccel did not refuse to start (exit $rc)"
	grep -Eq -- "$re" "$T/refuse-$name.log" ||
	    fail "$name: the error does not say '$re': $(cat "$T/refuse-$name.log")"
	port_open "$port" && fail "$name: something listens on $port"
	return 0
}
SMBD_PORT=1	# the proxy never gets as far as connecting upstream
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
chmod 0644 "$T/secrets"
refuse mode0644 "secrets.*$T/secrets.*mode 0644.*(group|others)"
chmod 0640 "$T/secrets"
refuse mode0640 "secrets.*$T/secrets.*mode 0640.*(group|others)"
chmod 0600 "$T/secrets"
chown "$SMB_USER" "$T/secrets"
refuse owner "secrets.*$T/secrets.*owned by uid $(id -u "$SMB_USER").*root"
write_secrets "$T/secrets" "# comment" "$SMB_USER:password:$SMB_PASS" "$SMB_USER:nthash:1234"
refuse badline "secrets.*$T/secrets.*line 3"
rm -f "$T/secrets"
refuse missing "secrets.*$T/secrets"
info "PASS"
