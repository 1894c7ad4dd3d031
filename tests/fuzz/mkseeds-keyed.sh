#!/bin/bash
# tests/fuzz/mkseeds-keyed.sh - relay seeds from keyed sessions, written
# to tests/fuzz/seeds/relay/keyed/ (run by hand after `make`; not part of
# make check; rerun it after mkseeds.sh, which replaces seeds/relay/).
# libFuzzer reads seeds/relay/ with its subdirectories; t_fuzz replays
# these to check that fuzz_relay reaches keyed sessions.
#
# smbd demands signing (`server signing = mandatory`); smbaccel holds the
# test user's secret, as fuzz_relay does, so it keys every session.
# dumpcap records both legs while smbdd (libsmbclient) writes 1 KiB and
# reads 4 KiB and smbclient puts, lists and gets a small file, at 3.1.1,
# 3.0 and 2.1, through write_behind and read_ahead = always.  mkseeds.py
# cuts the capture into fuzz_relay records and mkseeds_keyed.py turns every
# signed message after the SESSION_SETUP into a record that fuzz_relay
# signs itself (op 0x08/0x09), plus, at 3.0 and later, a copy of the
# session whose messages it seals instead (op 0x10/0x11): mutated, they
# still pass smbaccel's signature and tag checks.
. "$(dirname "$0")/../integration/lib.sh"
. "$TESTS_DIR/keyed_lib.sh"

SEEDS=${SEEDS_DIR:-$TOP/tests/fuzz/seeds}
command -v dumpcap >/dev/null || fail "dumpcap not installed"
start_smbd "server signing = mandatory"
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
start_keyed_proxy "secrets = $T/secrets"
head -c 3000 /dev/urandom > "$T/small"

dumpcap -q -B 64 -i lo -f "tcp port $PROXY_PORT or tcp port $SMBD_PORT" \
    -w "$T/cap.pcapng" > "$T/dumpcap.out" 2>&1 &
cap=$!
BG_PIDS="$BG_PIDS $cap"
sleep 1
for d in SMB3_11 SMB3_00 SMB2_10; do
	home=$(client_home "keyed-$d" "client signing = required")
	SMBC_HOME=$home smbdd_run write "$PROXY_PORT" "dd$d" 1K 40 -m "$d" -q > /dev/null ||
	    fail "smbdd write $d"
	SMBC_HOME=$home smbdd_run verify "$PROXY_PORT" "dd$d" 4K 10 -m "$d" -q > /dev/null ||
	    fail "smbdd verify $d"
	SMBC_HOME=$home smbc "$PROXY_PORT" "$d" "put $T/small f$d; ls; get f$d $T/back" \
	    > "$T/smbc.out" 2>&1 || { cat "$T/smbc.out"; fail "smbclient $d"; }
done
sleep 1
kill -INT "$cap"; wait "$cap"
[ "$(stat_get sessions_keyed)" -ge 9 ] || fail "not every session was keyed"
"$PY" "$TOP/tests/fuzz/mkseeds.py" "$T/cap.pcapng" "$PROXY_PORT" "$SMBD_PORT" \
    "$T/seeds" > "$T/mkseeds.out" || { cat "$T/mkseeds.out"; fail "mkseeds.py"; }
rm -rf "$SEEDS/relay/keyed"
mkdir -p "$SEEDS/relay/keyed"
"$PY" "$TOP/tests/fuzz/mkseeds_keyed.py" "$SEEDS/relay/keyed" "$T"/seeds/relay/* ||
    fail "mkseeds_keyed.py"
