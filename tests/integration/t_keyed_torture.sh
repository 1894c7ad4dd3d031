#!/bin/bash
# exclusive: smbtorture lanes of its own (direct and proxied at once); timing-dependent results (smb2.lock) must equal the direct run's
# test-timeout: 600
# Issue 5 test 5: smbtorture suites (KT_SUITES; default smb2.connect
# smb2.read smb2.lock smb2.compound; smb2.ioctl; the durable-handle suites;
# smb2.lease but for its three tests that only wait for timers) with signing required by the client
# (--option=clientsigning=required) and, separately, with encryption
# required by the client (--option=clientsmbencrypt=required), each suite
# directly against smbd and then through the proxy, which has the user's
# secret; the per-test results (subunit success/failure/skip/error, plus
# tests that started and never finished) must be identical.  The proxy's
# stats must show the sessions keyed (and, for encryption, decrypted
# traffic) and no bad signature.  Direct and proxied runs go in parallel
# lanes, each with its own smbd (torture_lib.sh).  The share runs with write_behind =
# leased, as in t_torture_parity (under `always` smb2.lock.rw-* see the
# designed early acknowledgement).  smb2.ioctl runs in a lane of its own
# (server-side copies: smbaccel answers a copy from a locked range itself,
# signed or sealed, locks.c), with the proxies at multichannel = relay:
# under the default `hide` smbaccel answers the client's query for the
# server's network interfaces NOT_SUPPORTED by design, which two of its
# tests take for a failure.  The durable-handle suites (on the [dur]
# share) reconnect handles, which smbaccel must pass on as sent (its
# document cache asks for on-disk ids in CREATEs, which smbd refuses in a
# reconnect), and close connections with write-behind data whose sealed
# answers come after the client left.  smb2.lease (90 s, mostly smbd's
# break timers) exercises smbaccel's leases on the clients' behalf with
# the rewritten CREATEs and their answers signed or sealed by smbaccel.
# Run once and at parity but not here (2026-12-06, keyed, both modes):
# smb2.oplock, smb2.replay, smb2.session, smb2.rw, getinfo, setinfo,
# credits, create, dir, rename, streams, sharemode, deny, fileid, mkdir,
# tcon, compound_find, compound_async, timestamps, winattr, openattr
# (smb2.rw, getinfo and create 35 s slower: docs/design.md, Known
# limits); smb2.notify's valid-req and tree differ between direct runs.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "keyed sessions"

. "$TESTS_DIR/torture_lib.sh"

SUITES=${KT_SUITES:-smb2.connect smb2.read smb2.lock smb2.compound / smb2.ioctl / dur:smb2.durable-open dur:smb2.durable-v2-open / smb2.lease:except:timeout,oplock,break}
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
# one line of the proxies' [global] each (write_proxy_conf)
TORTURE_PROXY_GLOBAL="secrets = $T/secrets
multichannel = relay"
TORTURE_CONFIGS="proxy|leased|leased"
echo '{}' > "$T/zero.stats.json"

bad=0
for mode in sign seal; do
	case $mode in
	sign) opt=--option=clientsigning=required ;;
	seal) opt=--option=clientsmbencrypt=required ;;
	esac
	# shellcheck disable=SC2086
	TORTURE_OPT=$opt TORTURE_TAG=$mode torture_parity $SUITES || bad=1
	cp "$T/$mode-proxy.stats.json" "$T/$mode.stats.json"
	deltas zero "$mode"
	info "$mode: sessions_keyed +$D_sessions_keyed sessions_unkeyed +$D_sessions_unkeyed signed_out +$D_signed_out encrypted_out +$D_encrypted_out decrypted_in +$D_decrypted_in bad_signatures +$D_bad_signatures opaque.encrypted-no-key +$D_opaque_encrypted_no_key opaque.signed-no-key +$D_opaque_signed_no_key"
	assert_ge 1 "$D_sessions_keyed" "$mode: sessions_keyed"
	assert_eq 0 "$D_bad_signatures" "$mode: bad_signatures"
	[ "$mode" = seal ] && assert_ge 1 "$D_decrypted_in" "$mode: decrypted_in"
	grep -hE 'passthrough reason=|opaque reason=|bad signature' "$T"/lane-"$mode"-proxy-*/proxy.log |
	    sed 's/^/    proxy log: /' | head -n 20
done
[ "$bad" -eq 0 ] || fail "smbtorture results differ between direct and proxied runs"
info "PASS"
