#!/bin/bash
# Malformed input (garbage, truncated frame + close, 0xFFFFFF length, NBSS
# type 0x42, lying NextCommand, 10-byte SMB2 frame, ...; see garbage.py):
# each connection is closed by the proxy or relayed opaquely and answered,
# within seconds; each leaves a log line; meanwhile and afterwards normal
# smbclient transfers through the same proxy stay intact; the proxy lives.
. "$(dirname "$0")/lib.sh"

start_smbd
start_proxy
random_file "$T/orig" 16
want=$(sha256 "$T/orig")
home=$(client_home bg)

# Background transfer loop until $T/stop exists; one line per round.
transfer_loop() {
	local i=0
	while [ ! -e "$T/stop" ]; do
		i=$((i + 1))
		rm -f "$T/bgback"
		if ! SMBC_HOME=$home smbc "$PROXY_PORT" SMB3_11 \
		    "put $T/orig bg$i; get bg$i $T/bgback; rm bg$i" >"$T/bg.out" 2>&1; then
			echo "round $i: smbclient failed: $(tail -3 "$T/bg.out")"; continue
		fi
		if [ "$(sha256 "$T/bgback")" = "$want" ]; then
			echo "round $i: ok"
		else
			echo "round $i: CORRUPT"
		fi
	done
}
transfer_loop > "$T/bg.log" 2>&1 &
BG_PIDS="$BG_PIDS $!"
bgpid=$!

log=
if is_smbaccel; then
	log=$PROXY_LOG
else
	export GARBAGE_ALLOW_HANG=1
fi
"$PY" "$TESTS_DIR/garbage.py" "$PROXY_PORT" "$log" || gstatus=$?
touch "$T/stop"
wait "$bgpid"
echo "background transfers during the garbage: $(grep -c ': ok$' "$T/bg.log") ok"
grep -v ': ok$' "$T/bg.log"
[ "${gstatus:-0}" -eq 0 ] || fail "garbage cases: hang or missing log line (see above)"
grep -qv ': ok$' "$T/bg.log" && fail "a background transfer failed"
grep -q ': ok$' "$T/bg.log" || fail "no background transfer completed"
proxy_alive || fail "proxy died"

# And afterwards.
SMBC_HOME=$home smbc "$PROXY_PORT" SMB3_11 "put $T/orig after; get after $T/after" \
    > "$T/after.out" 2>&1 || { cat "$T/after.out"; fail "transfer after the garbage failed"; }
assert_eq "$want" "$(sha256 "$SHARE_DIR/after")" "sha256 on disk after the garbage"
assert_eq "$want" "$(sha256 "$T/after")" "sha256 read back after the garbage"
proxy_alive || fail "proxy died"
if is_smbaccel; then
	echo "stats: $(ctl stats --json)"
fi
info "PASS"
