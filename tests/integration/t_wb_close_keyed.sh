#!/bin/bash
# test-timeout: 600
# Issue 13 part 3 in keyed sessions: smbd with `server signing = mandatory`
# (then with `server smb encrypt = required`), the proxy holds the user's
# secret.  smbclient mput of a tree (cmp_tree)
# through smbaccel with signing required at 2.0.2, 2.1, 3.0, 3.0.2 and 3.1.1
# (each signing algorithm smbd offers), and with encryption required at
# 3.0, 3.0.2 and 3.1.1 (each cipher smbd offers):
#  - every file on smbd's disk equals its source (smbd verified every
#    element of each compound: a bad signature fails the session; the client
#    verified the CLOSE answers smbaccel re-signed or re-sealed);
#  - closes_compounded grows by at least 13 per run, signed_out or
#    encrypted_out grows, no bad signature, no ledger error;
#  - signed runs: the capture of the upstream leg shows the WRITE+CLOSE
#    related compounds with explicit FileIds, the client leg no compounded
#    answer and none with the related flag; sealed runs: only TRANSFORM
#    messages on both legs after the session setup, and per compounded
#    CLOSE exactly two fewer upstream than on the client leg (the client's
#    WRITE, CLOSE and their answers travelled as one message each way).
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
. "$TESTS_DIR/cmp_lib.sh"
require_smbaccel "keyed CLOSE compounds"
command -v dumpcap >/dev/null || skip "dumpcap not installed"

# phase SMBD_LINE: (re)start smbd with SMBD_LINE and the keyed proxy
phase() {
	[ -n "$PROXY_PID" ] && stop_proxy
	stop_smbd
	start_smbd "$1"
	PROXY_SHARE_SECTION=no start_proxy "secrets = $T/secrets" "" "[share share]" \
	    "write_behind = always" "flush_idle = 30s" "flush_max_age = 60s"
}
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
phase "server signing = mandatory"
src=$T/src
cmp_tree "$src"

algs=$(testparm -s -v "$SMBD_CONF" 2>/dev/null |
    sed -n 's/^[[:space:]]*server smb3 signing algorithms = //p' | tr -d ' ' | tr ',' ' ')
ciphers=$(testparm -s -v "$SMBD_CONF" 2>/dev/null |
    sed -n 's/^[[:space:]]*server smb3 encryption algorithms = //p' | tr -d ' ' | tr ',' ' ')
[ -n "$algs" ] && [ -n "$ciphers" ] || fail "testparm shows no signing algorithms or ciphers"
cases="sign:SMB2_02: sign:SMB2_10: sign:SMB3_00: sign:SMB3_02:"
for a in $algs; do cases="$cases sign:SMB3_11:$a"; done
cases="$cases seal:SMB3_00: seal:SMB3_02:"
for a in $ciphers; do cases="$cases seal:SMB3_11:$a"; done

n=0
for c in ${CMP_KEYED_CASES:-$cases}; do
	kind=${c%%:*} rest=${c#*:}
	d=${rest%%:*} alg=${rest#*:}
	n=$((n + 1))
	label=$kind-$d${alg:+-$alg}
	[ "$kind" = seal ] && [ -z "${SEALED:-}" ] && { SEALED=1; phase "server smb encrypt = required"; }
	if [ "$kind" = sign ]; then
		home=$(client_home "$label" "client signing = required" \
		    ${alg:+"client smb3 signing algorithms = $alg"})
	else
		home=$(client_home "$label" "client smb encrypt = required" \
		    ${alg:+"client smb3 encryption algorithms = $alg"})
	fi
	snap "$label-0"
	cmp_capture_both "$label"
	cmp_mput "$PROXY_PORT" "$d" "$src" "m$n" "$home" ||
	    { capture_stop; fail "$label: smbclient mput through smbaccel failed (above)"; }
	cmp_legs "$label"
	snap "$label-1"
	cmp_same "$src" "$SHARE_DIR/m$n" || fail "$label: the tree on smbd's disk differs (above)"
	deltas "$label-0" "$label-1"
	info "$label: closes_compounded +$D_closes_compounded signed_out +$D_signed_out encrypted_out +$D_encrypted_out decrypted_in +$D_decrypted_in bad_signatures +$D_bad_signatures"
	assert_ge "$CMP_FILES" "$D_closes_compounded" "$label: closes_compounded delta"
	assert_eq 0 "$D_bad_signatures" "$label: bad_signatures delta"
	assert_eq 0 "$D_ledger_errors" "$label: ledger_errors delta"
	assert_eq 0 "$D_compound_write_errors" "$label: compound_write_errors delta"
	if [ "$kind" = sign ]; then
		assert_ge "$D_closes_compounded" "$D_signed_out" "$label: signed_out delta"
		"$PY" "$TESTS_DIR/cmp_check.py" "$T/$label.up.json" "$T/$label.client.json" "$CMP_FILES" "$label" ||
		    fail "$label: the compounds on the wire (above)"
	else
		assert_ge "$D_closes_compounded" "$D_encrypted_out" "$label: encrypted_out delta"
		"$PY" - "$T/$label.up.json" "$T/$label.client.json" "$label" "$D_closes_compounded" <<'EOF' || fail "$label: sealed legs (above)"
import json, sys
ok = True
sealed = {}
for path, leg in zip(sys.argv[1:3], ("upstream", "client")):
    j = json.load(open(path))
    sealed[leg] = j["other"].get("encrypted_messages", 0)
    # NEGOTIATE and SESSION_SETUP travel in the clear
    late = {k: v for k, v in j["requests"].items() if k not in ("NEGOTIATE", "SESSION_SETUP")}
    print("%s: %s leg: %d sealed messages, plain requests after the session setup: %s"
          % (sys.argv[3], leg, sealed[leg], late or "none"))
    if sealed[leg] < 30 or late:
        ok = False
# per compounded file the client leg carries WRITE, its answer, CLOSE and
# its answer; the upstream leg one compound and its answer: 2 fewer
diff, want = sealed["client"] - sealed["upstream"], 2 * int(sys.argv[4])
print("%s: client leg - upstream leg = %d sealed messages, 2 x closes compounded = %d"
      % (sys.argv[3], diff, want))
sys.exit(0 if ok and diff == want else 1)
EOF
	fi
done
assert_eq 0 "$(stat_get sessions_unkeyed)" "stats sessions_unkeyed"
proxy_alive || fail "proxy died"
info "PASS"
