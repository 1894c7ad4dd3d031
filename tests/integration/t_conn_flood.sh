#!/bin/bash
# Connection floods: refused, counted, and logged at a bounded rate
# (smbaccel.conf(5) max_connections; smbaccel(8) LOGGING).  Every refusal
# used to be logged; a flood then filled the log, and journald, past its
# own rate limit, drops every line of the service, reports of lost data
# included.
#  1. max_connections = 4, an SMB client and three idle connections
#     holding them; 300 more connect at once (conn_flood.py): smbaccel
#     closes every one within 5 s, `connections_refused` counts 300, the
#     log has at most 5 "refusing" lines per 10 s of flood; after 10 s of
#     quiet one more refusal is logged ending "(N more like it not
#     logged)", and the lines plus N equal the refusals counted.  The held
#     session still writes (checked on smbd's disk), and once the holders
#     leave a new client is served.
#  2. A second smbaccel in mode = transparent gets 100 connections made
#     straight to its listener (no REDIRECT): each refused as not
#     redirected, counted in `connections_not_redirected`, logged at the
#     same bounded rate.
#  3. A client connecting and closing 400 times, every connection relayed
#     to smbd: at most 100 connections' lines (accepted, congestion,
#     closed) per 10 s; the next accepted line says how many were not
#     logged, and lines plus those equal connections_total.
. "$(dirname "$0")/lib.sh"
require_smbaccel "refusals at a bounded rate"

FLOOD="$PY $TESTS_DIR/conn_flood.py"
start_smbd
start_proxy "max_connections = 4"

refusals() { grep -c 'refusing client=.*max_connections=4 reached' "$PROXY_LOG"; }
# told: the sum of N over "(N more like it not logged)" of refusing lines
told() {
	grep 'refusing client=.*max_connections=4 reached' "$PROXY_LOG" |
	    sed -n 's/.*(\([0-9]*\) more like it not logged)$/\1/p' |
	    awk '{ s += $1 } END { print s + 0 }'
}

# --- 1. an SMB session and three idle connections hold the four places
seed=$((RANDOM * 32768 + RANDOM + 1))
rm -f "$T/hold"
bg $FLOOD 127.0.0.1 "$PROXY_PORT" 3 "$T/hold"
holder=$!
for i in $(seq 1 50); do [ -s "$T/hold" ] && break; sleep 0.1; done
[ -s "$T/hold" ] || fail "three idle connections could not be opened"
# the SMB client (wb_smb.py): 1 MiB in 1 KiB writes, paused half way
# while the flood comes
cat > "$T/session.py" <<'PYEOF'
import os, sys, time
sys.path.insert(0, os.environ["TESTS_DIR"])
from wb_smb import Client
c = Client(int(sys.argv[1]), "3.0")
fid, _ = c.create("flood.dat")
data = bytes((i * 7 + 3) & 0xff for i in range(1 << 20))
for off in range(0, 1 << 19, 1024):
    c.write(fid, off, data[off:off + 1024])
open(sys.argv[2], "w").write("HALF\n")
while not os.path.exists(sys.argv[2] + ".go"):
    time.sleep(0.1)
for off in range(1 << 19, 1 << 20, 1024):
    c.write(fid, off, data[off:off + 1024])
c.close(fid)
open(sys.argv[2], "w").write("DONE\n")
PYEOF
TESTS_DIR=$TESTS_DIR bg "$PY" "$T/session.py" "$PROXY_PORT" "$T/session"
session=$!
for i in $(seq 1 100); do grep -q HALF "$T/session" 2>/dev/null && break; sleep 0.1; done
grep -q HALF "$T/session" || fail "the SMB client did not get its connection"
assert_eq 4 "$(ctl stats --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["connections_active"])')" \
    "connections active before the flood"

t0=$(now)
out=$($FLOOD 127.0.0.1 "$PROXY_PORT" 300 2>&1) || fail "flood of 300: $out"
t1=$(now)
info "flood of 300 at max_connections = 4: $out"
assert_eq 300 "$(stat_get connections_refused)" "connections_refused after the flood"
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", b - a }')
max=$(( 5 * (secs / 10 + 1) ))
n=$(refusals)
info "refusing lines logged for 300 refusals: $n (at most $max for a flood of ${secs}+ s)"
[ "$n" -ge 1 ] || fail "no refusal logged"
[ "$n" -le "$max" ] || fail "$n refusing lines for a flood of ${secs}+ s (at most $max)"

# a quiet spell, then one more: logged, naming those held back
sleep 10.5
out=$($FLOOD 127.0.0.1 "$PROXY_PORT" 1 2>&1) || fail "one more connection: $out"
wait_log 'more like it not logged\)$' 5 || fail "no line says how many refusals were not logged"
assert_eq 301 "$(stat_get connections_refused)" "connections_refused"
assert_eq 301 "$(( $(refusals) + $(told) ))" "refusals logged plus those the log says were not"
info "last line: $(grep 'refusing client=' "$PROXY_LOG" | tail -n 1 | sed 's/.*smbaccel\[warn\] //')"

# the held session goes on; then the holders leave and a new client is served
touch "$T/session.go"
for i in $(seq 1 300); do grep -q DONE "$T/session" && break; sleep 0.1; done
grep -q DONE "$T/session" || fail "the SMB session holding a place did not finish"
"$PY" -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) & 0xff for i in range(1 << 20)))' > "$T/want"
assert_eq "$(sha256 "$T/want")" "$(sha256 "$SHARE_DIR/flood.dat")" "sha256 on smbd's disk of the file written during the flood"
rm -f "$T/hold"
wait "$holder" "$session"
out=$(smbdd_run write "$PROXY_PORT" after.dat 1K 256 -s "$seed" -q 2>&1) ||
    fail "a client after the flood: $out"
out=$(smbdd_run read "$SMBD_PORT" after.dat 1K 256 -s "$seed" -q 2>&1) ||
    fail "the file of the client after the flood, read directly: $out"
proxy_alive || fail "proxy died"

# --- 2. mode = transparent, connections not redirected
P2=$(free_port) || fail "no free port"
cat > "$T/tr.conf" <<CONF
[global]
listen = 127.0.0.1:$P2
mode = transparent
control_socket = $T/tr.sock
CONF
"$SMBACCEL" -c "$T/tr.conf" -f > "$T/tr.log" 2>&1 &
tr=$!
BG_PIDS="$BG_PIDS $tr"
wait_port "$P2" 10 "$tr" || fail "transparent smbaccel did not listen: $(cat "$T/tr.log")"
out=$($FLOOD 127.0.0.1 "$P2" 100 2>&1) || fail "100 connections not redirected: $out"
n=$(grep -cE 'not redirected|no original destination' "$T/tr.log")
got=$("$SMBACCELCTL" -s "$T/tr.sock" stats --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["connections_not_redirected"])')
info "100 connections straight to a transparent listener: $out; $got counted, $n logged"
# wait_port's probe connection is one of them too
[ "$got" -ge 100 ] && [ "$got" -le 101 ] || fail "connections_not_redirected is $got, want 100 (101 with the port probe)"
[ "$n" -ge 1 ] && [ "$n" -le 10 ] || fail "$n lines for $got unredirected connections (want 1-10)"
kill -TERM "$tr"; wait "$tr"

# --- 3. a client connecting and closing in a loop, each connection
# accepted and relayed: at most 100 connections' lines (accepted,
# upstream congestion, closed) per 10 s; the next one logged says how
# many were not.  (Before: three or more lines per connection, 12,000 in
# 30 s from one client, past journald's 10,000 per 30 s, after which it
# drops every line of the service, reports of lost data included.)
P3=$(free_port) || fail "no free port"
cat > "$T/fw.conf" <<CONF
[global]
listen = 127.0.0.1:$P3
upstream = 127.0.0.1:$SMBD_PORT
control_socket = $T/fw.sock
CONF
t0=$(date +%s%N)	# before the first connection (wait_port's probe)
"$SMBACCEL" -c "$T/fw.conf" -f > "$T/fw.log" 2>&1 &
fw=$!
BG_PIDS="$BG_PIDS $fw"
wait_port "$P3" 10 "$fw" || fail "third smbaccel did not listen: $(cat "$T/fw.log")"
"$PY" - "$P3" <<'PYEND' || fail "connect/close loop failed"
import socket, sys
for _ in range(400):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)
    s.close()
PYEND
fwstat() { "$SMBACCELCTL" -s "$T/fw.sock" stats --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
for _ in $(seq 100); do [ "$(fwstat connections_active)" = 0 ] && break; sleep 0.1; done
acc=$(grep -c ' accepted client=' "$T/fw.log")
cong=$(grep -c ' upstream congestion=' "$T/fw.log")
clo=$(grep -c ' closed client=' "$T/fw.log")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
secs=$(( ms / 1000 + 1 ))
max=$(( (ms / 10000 + 1) * 100 ))
info "401 connections in ${secs} s: $acc accepted, $cong congestion, $clo closed lines (at most $max each)"
[ "$acc" -ge 100 ] && [ "$acc" -le "$max" ] || fail "$acc accepted lines for 401 connections in ${secs} s (want 100..$max)"
[ "$cong" -le "$acc" ] && [ "$clo" -le "$acc" ] || fail "lines of connections whose accept was not logged"
# a quiet spell, then one more: logged with the count of those not logged
# (the window of 10 s began with the first connection, after t0)
sleep $(( 11 - (ms % 10000) / 1000 ))
"$PY" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5).close()' "$P3"
for _ in $(seq 50); do grep -q 'accepted client=.*more like it not logged)$' "$T/fw.log" && break; sleep 0.1; done
told=$(sed -n 's/.* accepted client=.*(\([0-9]*\) more like it not logged)$/\1/p' "$T/fw.log" | awk '{ s += $1 } END { print s + 0 }')
acc=$(grep -c ' accepted client=' "$T/fw.log")
assert_eq "$(fwstat connections_total)" "$((acc + told))" "connections accepted: lines logged plus those the log says were not"
kill -TERM "$fw"; wait "$fw"
info "PASS"
