#!/bin/bash
# test-timeout: 300
# Issue 13: the document cache in keyed sessions.  smbd with `server
# signing = mandatory`; the proxy holds the user's secret.  At 2.0.2, 2.1,
# 3.0.2 and 3.1.1 with signing required, and at 3.1.1 with encryption
# required by the client: random reads (smbdd -R -V, every byte checked)
# are answered from a copy (signed or sealed by smbaccel: signed_out or
# encrypted_out grow, no bad signature), misses are widened and re-signed,
# fetches signed, or sealed when the client seals (none travels in
# clear); a reopen by a new connection is not served from the first
# open's copy (smbdd asks for no oplock: nothing in its CREATE answer
# proves that no other handle wrote the file since) but fetches it again.
# Then through an on-path attacker (tamper.py) that changes the data of
# large READ answers: smbaccel refuses its widened fetches (bad signature:
# the connection closes) and never serves the changed bytes; and one that
# changes only the answers to smbaccel's own read-ahead fetches (a flipped
# byte, the response flag cleared, a forged unsigned END_OF_FILE): the
# same.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "keyed sessions"
[ -x "$SMBDD" ] || skip "$SMBDD not built"

start_smbd "server signing = mandatory"
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
start_keyed_proxy "secrets = $T/secrets"
seed=$((RANDOM + 5))
size=$((3 * 1048576 + 777))
for c in SMB2_02:sign SMB2_10:sign SMB3_02:sign SMB3_11:sign SMB3_11:seal; do
	d=${c%%:*} how=${c#*:}
	f=dk-$d-$how
	out=$(smbdd_run write "$SMBD_PORT" "$f" "$size" 1 -s "$seed" -q 2>&1) || fail "cannot write $f: $out"
	if [ "$how" = seal ]; then
		home=$(client_home "$d-$how" "client signing = required" "client smb encrypt = required")
	else
		home=$(client_home "$d-$how" "client signing = required")
	fi
	snap "$c-0"
	for pass in open reopen; do
		out=$(HOME=$home timeout 120 "$SMBDD" read "$(smb_url "$PROXY_PORT" "$f")" 16K 1200 \
		    -U "$SMB_USER%$SMB_PASS" -m "$d" -s "$seed" -R "$size" -V -q 2>&1) ||
		    fail "$c $pass: random reads through the proxy saw wrong bytes: $out"
	done
	snap "$c-1"
	deltas "$c-0" "$c-1"
	info "$c: dc_hits +$D_dc_hits dc_widened +$D_dc_widened dc_fetches +$D_dc_fetches dc_started +$D_dc_started dc_attached +$D_dc_attached signed_out +$D_signed_out encrypted_out +$D_encrypted_out bad_signatures +$D_bad_signatures"
	assert_ge 1800 "$D_dc_hits" "$c: reads served from the copy (of 2400)"
	assert_ge 1 "$D_dc_widened" "$c: misses widened (re-signed)"
	assert_eq 0 "$D_dc_attached" "$c: reopens (no oplock) served by the first open's copy"
	assert_eq 2 "$D_dc_started" "$c: copies started (the reopen's again)"
	assert_eq 0 "$D_bad_signatures" "$c: bad signatures"
	assert_eq 0 "$D_sessions_unkeyed" "$c: sessions not keyed"
	if [ "$how" = seal ]; then
		assert_ge "$D_dc_hits" "$D_encrypted_out" "$c: messages smbaccel sealed"
		# the client seals: so are smbaccel's fetches of its file
		assert_eq 0 "$D_signed_out" "$c: messages smbaccel only signed (in clear)"
	else
		assert_ge "$D_dc_hits" "$D_signed_out" "$c: messages smbaccel signed"
	fi
done
assert_eq 0 "$(stat_get ledger_errors)" "stats ledger_errors"
proxy_alive || fail "proxy died"

# An on-path attacker (tamper.py) flips the last byte of every READ answer
# of 32 KiB or more, signature untouched: the client's own 16 KiB READs
# pass as the server sent them, smbaccel's widened 64 KiB fetches do not.
# smbaccel must not cache or serve those: the reader gets right bytes or a
# closed connection, never the attacker's (smbdd exit 3).  Before, the
# copy took them and served them signed with the session's key.
RELAY_PORT=$(free_port) || fail "no free port"
TAMPER_MODE_FILE=$T/tamper.mode bg "$PY" "$TESTS_DIR/tamper.py" "$RELAY_PORT" "$SMBD_PORT" 32768 2>>"$T/tamper.log"
wait_port "$RELAY_PORT" 10 || fail "tamper.py is not accepting"
P2_PORT=$(free_port) || fail "no free port"
P2_CTL=$T/control2.sock
cat > "$T/smbaccel2.conf" <<EOF
[global]
listen = 127.0.0.1:$P2_PORT
upstream = 127.0.0.1:$RELAY_PORT
mode = forward
control_socket = $P2_CTL
secrets = $T/secrets

[share share]
read_ahead = always
EOF
bg "$SMBACCEL" -c "$T/smbaccel2.conf" -f </dev/null >>"$T/proxy2.log" 2>&1
wait_port "$P2_PORT" 10 || fail "the second smbaccel is not accepting (log: $(tail -n 5 "$T/proxy2.log"))"
home=$(client_home tamper "client signing = required")
f=dk-SMB3_02-sign
out=$(HOME=$home timeout 120 "$SMBDD" read "$(smb_url "$P2_PORT" "$f")" 16K 200 \
    -U "$SMB_USER%$SMB_PASS" -m SMB3_02 -s "$seed" -R "$size" -V -q 2>&1)
rc=$?
info "tampered: smbdd exit $rc: $(echo "$out" | tail -n 1)"
info "tampered: $(grep -c '^tamper: READ' "$T/tamper.log") answers tampered with; proxy: $(grep -m1 'not authentic' "$T/proxy2.log")"
[ "$rc" -ne 3 ] || fail "tampered: smbaccel served bytes an on-path attacker changed: $out"
assert_ge 1 "$(grep -c '^tamper: READ' "$T/tamper.log")" "tampered: READ answers tamper.py changed"
n=$("$SMBACCELCTL" -s "$P2_CTL" stats --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("server_not_authentic", 0))')
assert_ge 1 "$n" "tampered: stats server_not_authentic"
grep -q "is not authentic: bad signature; closing the connection" "$T/proxy2.log" ||
    fail "tampered: no 'not authentic' log line"

# The same attacker on smbaccel's own read-ahead fetches only (answers to
# READs at 64 KiB and beyond, behind a sequential reader of 4 KiB reads):
# a flipped byte; a flipped byte in an answer that no longer says it is
# one (SERVER_TO_REDIR cleared); an unsigned END_OF_FILE in place of the
# answer (at 256 KiB).  Before, smbaccel checked the answers to its own
# READs against no session, skipped messages without the flag, and took
# error answers unchecked: the reader got the changed byte or a file cut
# short (smbdd exit 3).
for m in "flip 65536" "unflag 65536" "eof 262144"; do
	echo "$m" > "$T/tamper.mode"
	t0=$(grep -c "^tamper: READ .* ${m% *}\$" "$T/tamper.log")
	n0=$("$SMBACCELCTL" -s "$P2_CTL" stats --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d.get("server_not_authentic", 0))')
	l0=$(grep -c "reason=server-unreadable" "$T/proxy2.log")
	out=$(HOME=$home timeout 120 "$SMBDD" read "$(smb_url "$P2_PORT" "$f")" 4K 400 \
	    -U "$SMB_USER%$SMB_PASS" -m SMB3_02 -s "$seed" -q 2>&1)
	rc=$?
	t1=$(grep -c "^tamper: READ .* ${m% *}\$" "$T/tamper.log")
	n1=$("$SMBACCELCTL" -s "$P2_CTL" stats --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d.get("server_not_authentic", 0))')
	l1=$(grep -c "reason=server-unreadable" "$T/proxy2.log")
	info "fetches tampered ($m): smbdd exit $rc, $((t1 - t0)) answers changed, server_not_authentic +$((n1 - n0)), server-unreadable closes +$((l1 - l0)): $(echo "$out" | tail -n 1)"
	[ "$rc" -ne 3 ] || fail "fetches tampered ($m): smbaccel served what an on-path attacker made: $out"
	assert_ge 1 $((t1 - t0)) "fetches tampered ($m): answers tamper.py changed"
	assert_ge 1 $((n1 - n0 + l1 - l0)) "fetches tampered ($m): answers refused (not authentic or unreadable)"
done
rm -f "$T/tamper.mode"
info "PASS"
