#!/bin/bash
# test-timeout: 300
# Issue 3 test 6: no acknowledged byte is lost when the client dies or the
# proxy is stopped (write_behind = always; flush_idle 30s so the data is
# still buffered when it happens).
#  kill-py-3.0 / kill-py-2.0.2: wb_killwriter.py writes 1 KiB blocks (8 in
#    flight) and logs every acknowledged block; SIGKILL after 1-2 s; a new
#    connection through the proxy reads the file at once (it must wait for
#    the drain of the dead client's data): every acknowledged block is
#    there; after the drain, every acknowledged block is on disk.
#  kill-smbdd: the same with smbdd (libsmbclient) -P, killed 0.5-1.5 s
#    after its first progress line: the bytes of its last progress line (MB, rounded: less 0.05 MB) must be on disk.
#  term-py / term-smbdd: SIGTERM to smbaccel during the transfer: it exits
#    0 after draining; every acknowledged byte is on disk.
#  kill-signed / kill-sealed: kill-smbdd at 3.1.1 with smbd requiring
#    signing, then encryption, and smbaccel holding the user's secret: the
#    server's answers to what is written after the client left come
#    signed or sealed, and must be read (the drain ends at once, no
#    connection goes opaque, no bad signature).
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "write-behind drain"
export WB_SMB_TIMEOUT=30

start_smbd
PCONF=("" "[share share]" "write_behind = always" "flush_idle = 30s" "flush_max_age = 60s")
PROXY_SHARE_SECTION=no start_proxy "${PCONF[@]}"
seed=$((RANDOM + 1))

# drained: wait until the proxy holds no client connection and no data.
drained() {
	local n=200
	while [ $n -gt 0 ]; do
		[ "$(stat_get connections_active)" = 0 ] && [ "$(stat_get buffered_bytes)" = 0 ] && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}

# pause ACKLOG: wait until the writer logged 500 acknowledgements (login
# takes a while on a busy machine), then 0.5-1.5 s more.
pause() {
	local n=300
	while [ $n -gt 0 ] && [ "$(grep -c '^A ' "$1" 2>/dev/null)" -lt 500 ]; do
		grep -q '^[EX] ' "$1" && break
		sleep 0.1; n=$((n - 1))
	done
	sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 0.5 + r / 32768 }')"
}

# progress_mb FILE: the last complete progress value in bytes, minus the
# rounding of its one decimal.
progress_bytes() {
	tr '\r' '\n' < "$1" | awk '/MB\/s/ { v = $1 } END { b = int(v * 1e6 - 50000); print (b > 0 ? b : 0) }'
}
# progress_pause FILE PID: wait until smbdd (PID) reports progress in FILE
# (logon takes a while under ASan with keyed sessions; up to 30 s, or
# until smbdd has exited), then 0.5-1.5 s more, as pause does.
progress_pause() {
	local n=300
	while [ $n -gt 0 ] && [ "$(progress_bytes "$1")" -le 0 ]; do
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1; n=$((n - 1))
	done
	sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 0.5 + r / 32768 }')"
}

# python writer killed with SIGKILL
for d in 3.0 2.0.2; do
	name=kill-py-$d
	"$PY" "$TESTS_DIR/wb_killwriter.py" "$PROXY_PORT" "$d" "$name" 8 > "$T/$name.ack" 2>&1 &
	w=$!; BG_PIDS="$BG_PIDS $w"
	pause "$T/$name.ack"
	kill -KILL "$w"; wait "$w" 2>/dev/null
	grep -q '^[EX] ' "$T/$name.ack" && fail "$name: the writer failed before the kill: $(grep '^[EX] ' "$T/$name.ack")"
	out=$(timeout 60 "$PY" "$TESTS_DIR/wb_killwriter.py" --check "smb:$PROXY_PORT:3.0:$name" "$T/$name.ack" 2>&1) ||
	    fail "$name: read back through the proxy right after the kill: $out"
	info "$name: through the proxy right after the kill: $out"
	drained || fail "$name: the proxy did not drain within 20 s ($(stats_line connections_active buffered_bytes))"
	out=$("$PY" "$TESTS_DIR/wb_killwriter.py" --check "$SHARE_DIR/$name" "$T/$name.ack" 2>&1) ||
	    fail "$name: on disk after the drain: $out"
	info "$name: on disk: $out"
done

# smbdd killed with SIGKILL
HOME=$(client_home smbdd) "$SMBDD" write "$(smb_url "$PROXY_PORT" kill-smbdd)" 1K 1000000 \
    -U "$SMB_USER%$SMB_PASS" -m SMB3_11 -s "$seed" -P 2> "$T/kill-smbdd.progress" > /dev/null &
w=$!; BG_PIDS="$BG_PIDS $w"
progress_pause "$T/kill-smbdd.progress" "$w"
kill -KILL "$w"; wait "$w" 2>/dev/null
# prefix_ok NAME BYTES: the first BYTES of NAME on disk equal smbdd's
# pattern (written directly into ref-NAME in 1 MiB writes).
prefix_ok() {
	smbdd_run write "$SMBD_PORT" "ref-$1" 1M $(( $2 / 1048576 + 1 )) -s "$seed" -q > /dev/null 2>&1 ||
	    { echo "cannot write the reference"; return 1; }
	cmp -n "$2" "$SHARE_DIR/ref-$1" "$SHARE_DIR/$1"
}

pb=$(progress_bytes "$T/kill-smbdd.progress")
[ "$pb" -gt 0 ] || fail "kill-smbdd: no progress before the kill: $(tr '\r' '\n' < "$T/kill-smbdd.progress" | tail -n 3)"
drained || fail "kill-smbdd: the proxy did not drain"
size=$(stat -c %s "$SHARE_DIR/kill-smbdd")
[ "$size" -ge "$pb" ] || fail "kill-smbdd: smbdd reported $pb bytes written, the file has $size"
out=$(prefix_ok kill-smbdd "$pb" 2>&1) ||
    fail "kill-smbdd: the first $pb acknowledged bytes do not verify on the server: $out"
info "kill-smbdd: $pb acknowledged bytes (progress) verified, file $size bytes"

# SIGTERM of smbaccel during a transfer (python writer)
"$PY" "$TESTS_DIR/wb_killwriter.py" "$PROXY_PORT" 3.0 term-py 8 > "$T/term-py.ack" 2>&1 &
w=$!; BG_PIDS="$BG_PIDS $w"
pause "$T/term-py.ack"
stop_proxy
[ "$PROXY_RC" = 0 ] || fail "term-py: smbaccel exited with $PROXY_RC after SIGTERM"
wait "$w" 2>/dev/null
out=$("$PY" "$TESTS_DIR/wb_killwriter.py" --check "$SHARE_DIR/term-py" "$T/term-py.ack" 2>&1) ||
    fail "term-py: on disk after SIGTERM of smbaccel: $out"
info "term-py: $out"

# SIGTERM of smbaccel during a transfer (smbdd)
PROXY_SHARE_SECTION=no start_proxy "${PCONF[@]}"
HOME=$(client_home smbdd) "$SMBDD" write "$(smb_url "$PROXY_PORT" term-smbdd)" 1K 1000000 \
    -U "$SMB_USER%$SMB_PASS" -m SMB2_10 -s "$seed" -P 2> "$T/term-smbdd.progress" > /dev/null &
w=$!; BG_PIDS="$BG_PIDS $w"
progress_pause "$T/term-smbdd.progress" "$w"
stop_proxy
[ "$PROXY_RC" = 0 ] || fail "term-smbdd: smbaccel exited with $PROXY_RC after SIGTERM"
wait "$w" 2>/dev/null
pb=$(progress_bytes "$T/term-smbdd.progress")
[ "$pb" -gt 0 ] || fail "term-smbdd: no progress before SIGTERM"
out=$(prefix_ok term-smbdd "$pb" 2>&1) ||
    fail "term-smbdd: the first $pb acknowledged bytes do not verify on the server: $out"
info "term-smbdd: $pb acknowledged bytes verified, file $(stat -c %s "$SHARE_DIR/term-smbdd") bytes"
grep -E 'stopp|drain|shutdown' "$PROXY_LOG" | tail -n 3 | sed 's/^/    log: /'

# kill_keyed NAME SMBD_LINE COUNTERS: smbdd killed with SIGKILL in a
# keyed session (smbaccel holds the user's secret); COUNTERS must grow
kill_keyed() {
	local n=$1 pb size out k
	[ -n "$PROXY_PID" ] && stop_proxy
	stop_smbd
	start_smbd "$2"
	PROXY_SHARE_SECTION=no start_proxy "secrets = $T/secrets" "${PCONF[@]}"
	HOME=$(client_home smbdd) "$SMBDD" write "$(smb_url "$PROXY_PORT" "$n")" 1K 1000000 \
	    -U "$SMB_USER%$SMB_PASS" -m SMB3_11 -s "$seed" -P 2> "$T/$n.progress" > /dev/null &
	w=$!; BG_PIDS="$BG_PIDS $w"
	progress_pause "$T/$n.progress" "$w"
	kill -KILL "$w"; wait "$w" 2>/dev/null
	pb=$(progress_bytes "$T/$n.progress")
	[ "$pb" -gt 0 ] || fail "$n: no progress before the kill: $(tr '\r' '\n' < "$T/$n.progress" | tail -n 3)"
	drained || fail "$n: the proxy did not drain within 20 s ($(stats_line connections_active buffered_bytes)); log: $(grep -E 'opaque|cannot read|draining' "$PROXY_LOG" | tail -n 3)"
	size=$(stat -c %s "$SHARE_DIR/$n")
	[ "$size" -ge "$pb" ] || fail "$n: smbdd reported $pb bytes written, the file has $size"
	out=$(prefix_ok "$n" "$pb" 2>&1) ||
	    fail "$n: the first $pb acknowledged bytes do not verify on the server: $out"
	for k in sessions_keyed writes_absorbed $3; do
		assert_ge 1 "$(stat_get "$k")" "$n: $k"
	done
	assert_eq 0 "$(stat_get bad_signatures)" "$n: bad_signatures"
	! grep -E 'opaque reason|cannot read|acknowledged data lost' "$PROXY_LOG" ||
	    fail "$n: a connection went opaque or lost data (log above)"
	info "$n: $pb acknowledged bytes (progress) verified, file $size bytes, $(stats_line writes_absorbed $3)"
}
write_secrets "$T/secrets" "$SMB_USER:password:$SMB_PASS"
kill_keyed kill-signed "server signing = mandatory" signed_out
kill_keyed kill-sealed "server smb encrypt = required" "decrypted_in encrypted_out"
stop_proxy
info "PASS"
