#!/bin/bash
# smbaccel's lines in journald keep their priority (smbaccel(8), LOGGING).
# Under systemd, stderr is journald's stream and systemd names it in
# $JOURNAL_STREAM; smbaccel then starts each line with its priority as
# sd-daemon(3) prescribes ("<4>" a warning) and leaves the time to
# journald.  Before, every line came in at the stream's default priority
# (info): `journalctl -p warning` showed none of smbaccel's warnings, and
# journald's rate limit, which keeps a pool per priority, counted them
# with the connection lines.
# The test runs in a mount namespace of its own with a private
# systemd-journald (a tmpfs over /run, volatile storage, nothing read from
# the kernel or forwarded), and smbaccel on a stream of it (systemd-cat,
# with $JOURNAL_STREAM set as systemd sets it for a unit):
#  1. `smbaccel -t` and smbaccel itself on a policy with a bad line: the
#     error lines, and "policy has errors, not starting", at priority 3;
#  2. smbaccel with max_connections = 2 relays a libsmbclient write
#     (checked on smbd's disk) while two connections are held and 20 more
#     are refused: its connection lines at priority 6, the refusals at 4
#     (at most 5 of them, the last after a quiet spell naming the rest),
#     `journalctl -p warning` gives the refusals and nothing else of it,
#     and no message carries smbaccel's own time or a "<N>" left in it.
if [ -z "${SMBACCEL_JOURNAL_NS:-}" ]; then
	command -v unshare > /dev/null || { echo "SKIP: no unshare"; exit 77; }
	exec env SMBACCEL_JOURNAL_NS=1 unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
require_smbaccel "priorities in journald"
JOURNALD=/lib/systemd/systemd-journald
[ -x "$JOURNALD" ] || skip "no $JOURNALD"
command -v systemd-cat > /dev/null && command -v journalctl > /dev/null ||
    skip "no systemd-cat or journalctl"

# --- a private journald: /run is a tmpfs of this namespace only
mount -t tmpfs -o mode=0755 tmpfs /run || fail "cannot mount a tmpfs over /run"
mkdir -p /run/systemd/journald.conf.d /run/log/journal
cat > /run/systemd/journald.conf.d/test.conf <<'CONF'
[Journal]
Storage=volatile
ReadKMsg=no
ForwardToSyslog=no
ForwardToKMsg=no
ForwardToConsole=no
ForwardToWall=no
Audit=no
CONF
bg "$JOURNALD"
for i in $(seq 1 50); do [ -S /run/systemd/journal/stdout ] && break; sleep 0.1; done
[ -S /run/systemd/journal/stdout ] || fail "the private journald did not start"
info "private systemd-journald pid $! (volatile, /run/log/journal of this namespace)"

# on_stream CMD...: CMD on a journal stream of identifier smbaccel, with
# $JOURNAL_STREAM naming that stream, as systemd sets it for a unit
on_stream() {
	systemd-cat -t smbaccel sh -c \
	    'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$@"' sh "$@"
}
# entries PRIORITY-FILTER...: smbaccel's entries as "PRIORITY MESSAGE" lines
entries() {
	journalctl -D /run/log/journal --no-pager -o json -t smbaccel "$@" |
	    "$PY" -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    m = d["MESSAGE"]
    if isinstance(m, list):
        m = "<binary %d bytes>" % len(m)
    print(d.get("PRIORITY", "?"), m)'
}
settle() { journalctl -D /run/log/journal --sync 2>/dev/null || sleep 1; }

# --- 1. a bad policy
start_smbd
PROXY_PORT=$(free_port)
write_proxy_conf "$PROXY_CONF" "max_connections = 2" "write_behind = sometimes"
on_stream "$SMBACCEL" -t -c "$PROXY_CONF" && fail "smbaccel -t accepted a bad policy"
on_stream "$SMBACCEL" -c "$PROXY_CONF" && fail "smbaccel started on a bad policy"
settle
entries > "$T/e1"
sed 's/^/    /' "$T/e1"
grep -q "^3 .*line [0-9].*write_behind\|^3 .*:[0-9]*: .*write_behind" "$T/e1" ||
    fail "no policy error at priority 3"
grep -q "^3 smbaccel: .*policy has errors, not starting" "$T/e1" ||
    fail "\"policy has errors, not starting\" not at priority 3"
grep -qv "^3 " "$T/e1" && fail "a line of a refused policy is not at priority 3"

# --- 2. a working smbaccel
write_proxy_conf "$PROXY_CONF" "max_connections = 2"
cursor=$(journalctl -D /run/log/journal -n 1 -o json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["__CURSOR"])')
# (exec ...) &: $! is smbaccel itself (systemd-cat and sh exec it)
(exec systemd-cat -t smbaccel sh -c \
    'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$@"' sh \
    "$SMBACCEL" -c "$PROXY_CONF") &
PROXY_PID=$!
BG_PIDS="$BG_PIDS $PROXY_PID"
wait_port "$PROXY_PORT" 10 "$PROXY_PID" || fail "smbaccel is not accepting"
seed=$((RANDOM * 32768 + RANDOM + 1))
out=$(smbdd_run write "$PROXY_PORT" j.dat 1K 512 -s "$seed" -q 2>&1) ||
    fail "smbdd write through smbaccel: $out"
out=$(smbdd_run write "$SMBD_PORT" j-direct.dat 1K 512 -s "$seed" -q 2>&1) ||
    fail "smbdd write direct: $out"
assert_eq "$(sha256 "$SHARE_DIR/j-direct.dat")" "$(sha256 "$SHARE_DIR/j.dat")" \
    "sha256 on smbd's disk of the file written through smbaccel and directly"
rm -f "$T/hold"
bg "$PY" "$TESTS_DIR/conn_flood.py" 127.0.0.1 "$PROXY_PORT" 2 "$T/hold"
for i in $(seq 1 50); do [ -s "$T/hold" ] && break; sleep 0.1; done
[ -s "$T/hold" ] || fail "could not hold two connections"
out=$("$PY" "$TESTS_DIR/conn_flood.py" 127.0.0.1 "$PROXY_PORT" 20 2>&1) || fail "flood: $out"
sleep 10.5
out=$("$PY" "$TESTS_DIR/conn_flood.py" 127.0.0.1 "$PROXY_PORT" 1 2>&1) || fail "one more: $out"
rm -f "$T/hold"
kill -TERM "$PROXY_PID"; wait "$PROXY_PID"
assert_eq 0 "$?" "smbaccel's exit status at SIGTERM"
settle
entries --after-cursor="$cursor" > "$T/e2"
entries --after-cursor="$cursor" -p warning > "$T/e3"
info "$(wc -l < "$T/e2") entries of smbaccel, $(wc -l < "$T/e3") at warning or above; a few:"
grep -m 3 "accepted client" "$T/e2" | sed 's/^/    /'
grep "refusing" "$T/e2" | sed 's/^/    /'
grep -q "^6 smbaccel started" "$T/e2" || fail "start line not at priority 6"
[ "$(grep -c '^6 conn=[0-9]* accepted client=' "$T/e2")" -ge 2 ] ||
    fail "connection lines not at priority 6"
grep -v '^6 ' "$T/e2" | grep -q 'accepted client=' && fail "a connection line not at priority 6"
n=$(grep -c '^4 refusing client=.*max_connections=2 reached' "$T/e2")
[ "$n" -ge 2 ] && [ "$n" -le 6 ] || fail "$n refusals at priority 4 (want 2-6)"
grep -q '^4 refusing client=.*(1[0-9] more like it not logged)$' "$T/e2" ||
    fail "no refusal line naming the ones not logged"
# -p warning: the refusals, and nothing else of smbaccel's
grep -v 'refusing client=' "$T/e3" && fail "journalctl -p warning shows more than the refusals"
assert_eq "$n" "$(wc -l < "$T/e3")" "entries of journalctl -p warning"
grep -E '^[0-9] ([0-9]{2}:){2}[0-9]{2}\.[0-9]{3} smbaccel\[|^[0-9] <[0-9]>|<binary' "$T/e2" &&
    fail "a message still carries smbaccel's own time, a priority prefix, or is binary"
info "PASS"
