#!/bin/bash
# exclusive: sub-second timing: SYN retransmission against connect_timeout, queues drained within 2-4 s, a 3.5 s SIGSTOP window
# Login storm, max_connecting (smbaccel.conf(5)).  Everything runs in a
# private network namespace, so its kernel counter of connections dropped
# at a full listen backlog (TcpExt ListenOverflows) counts only this test.
# The upstream is load_idle.py's slow server: listen backlog 8 and one
# accept() every 50 ms, like a busy smbd parent.
#  1. max_connecting = 4, 60 clients connect at once: all get their
#     NEGOTIATE answered, the server's backlog never overflows (0 drops),
#     connections were queued and the queue is empty afterwards.
#  2. The same with max_connecting = 0 (reloaded): the backlog overflows
#     (the failure the limit prevents; shows part 1 could fail), and the
#     slowest client waits at least the 1 s of a SYN retransmission.
#  3. A server that accepts and never answers, max_connecting = 1,
#     connect_timeout = 1s: the queued connections are not held longer
#     than about connect_timeout (the opening one gives up its place, or
#     the queued one connects anyway), and it is logged.
#  4. The same server with connect_timeout = 30s: two connections wait in
#     the queue (smbaccelctl conns shows them queued); a reload to
#     max_connecting = 0 starts them at once.
#  5. A connect that completes while smbaccel's loop is stopped (SIGSTOP)
#     past connect_timeout is not taken for a timeout: the server's full
#     backlog drops the first SYN, the server then accepts, the kernel's
#     retransmitted SYN completes the connect, and only then does smbaccel
#     run again, with its timer and the finished connect in the same pass.
. "$(dirname "$0")/lib.sh"
require_smbaccel "max_connecting"

make_netns
PROXY_NETNS=$NETNS
nsx() { ip netns exec "$NETNS" "$@"; }
# nsx_bg CMD...: CMD in the namespace in the background, its own pid in $!
# and BG_PIDS (`nsx ... &` would record the pid of a subshell, and cleanup
# would stop that and leave the command running).
nsx_bg() {
	ip netns exec "$NETNS" "$@" &
	BG_PIDS="$BG_PIDS $!"
}

overflows() { listen_overflows "$NETNS"; }

# storm N OUT: N clients at once through the proxy, output in OUT
storm() {
	nsx "$PY" "$TESTS_DIR/load_idle.py" clients "$PROXY_PORT" "$1" "$T/storm.done" \
	    --no-wait --timeout 30 > "$2" 2>&1
}

SLOW=$(free_port)
nsx_bg "$PY" "$TESTS_DIR/load_idle.py" server "$SLOW" --backlog 8 --accept-gap 0.05 \
    > "$T/slow.out" 2>&1
wait_port "$SLOW" 10 "$!" "$NETNS" || fail "slow server not listening"

# ---- 1. with the limit
PROXY_UPSTREAM=127.0.0.1:$SLOW start_proxy "max_connecting = 4" "connect_timeout = 15s"
o0=$(overflows)
info "1. max_connecting = 4: 60 clients at once (ListenOverflows $o0)"
storm 60 "$T/s1.out" || { cat "$T/s1.out"; fail "clients failed with max_connecting = 4"; }
o1=$(overflows)
sed 's/^/  /' "$T/s1.out"
q1=$(stat_get connections_queued)
echo "STORM max_connecting=4 clients=60 listen_overflows=$((o1 - o0)) queued=$q1 slowest_s=$(awk '/^SLOWEST/ {print $2}' "$T/s1.out")"
grep -q '^NEGOTIATED 60 of 60' "$T/s1.out" || fail "not all 60 negotiated"
assert_eq 0 $((o1 - o0)) "listen overflows at the server with max_connecting = 4"
assert_ge 1 "$q1" "connections_queued"
log_has 'queued: 4 connections to 127\.0\.0\.1:[0-9]+ are opening \(max_connecting\)' ||
    fail "no 'queued' log line"
n=50
while [ "$(stat_get connect_queue)" != 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
assert_eq 0 "$(stat_get connect_queue)" "connect_queue after the storm"

# ---- 2. without it (the control run)
sed -i 's/^max_connecting = 4$/max_connecting = 0/' "$PROXY_CONF"
kill -HUP "$PROXY_PID"
wait_log 'policy reloaded' 5 || fail "reload not logged"
info "2. max_connecting = 0: 60 clients at once"
storm 60 "$T/s2.out" || { cat "$T/s2.out"; fail "clients failed with max_connecting = 0"; }
o2=$(overflows)
sed 's/^/  /' "$T/s2.out"
slow2=$(awk '/^SLOWEST/ {print $2}' "$T/s2.out")
echo "STORM max_connecting=0 clients=60 listen_overflows=$((o2 - o1)) queued=$(( $(stat_get connections_queued) - q1 )) slowest_s=$slow2"
assert_ge 1 $((o2 - o1)) "listen overflows without the limit (this set-up must overflow)"
assert_eq "$q1" "$(stat_get connections_queued)" "connections_queued with no limit"
awk -v s="$slow2" 'BEGIN { exit !(s >= 0.9) }' ||
    fail "slowest client answered in $slow2 s without the limit: no SYN was retried?"
stop_proxy

# silent_three CONNECT_TIMEOUT CLIENT_TIMEOUT: a fresh proxy (max_connecting
# = 1) to the silent server, and 3 clients at once in the background ($!)
silent_three() {
	: > "$PROXY_LOG"
	PROXY_UPSTREAM=127.0.0.1:$SILENT start_proxy "max_connecting = 1" \
	    "connect_timeout = $1" "server_timeout = 20s"
	nsx_bg "$PY" "$TESTS_DIR/load_idle.py" clients "$PROXY_PORT" 3 "$T/silent.done" \
	    --no-wait --timeout "$2" > "$T/silent-clients.out" 2>&1
}

# ---- 3. a server that never answers: the queue is bounded
SILENT=$(free_port)
nsx_bg "$PY" "$TESTS_DIR/load_idle.py" server "$SILENT" --silent > "$T/silent.out" 2>&1
wait_port "$SILENT" 10 "$!" "$NETNS" || fail "silent server not listening"
info "3. silent server, max_connecting = 1, connect_timeout = 1s: 3 clients"
silent_three 1s 4
c3=$!
n=30
while [ "$(stat_get connections_queued)" -lt 2 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
assert_eq 2 "$(stat_get connections_queued)" "connections queued behind the one opening"
t0=$(now)
n=40
while [ "$(stat_get connect_queue)" != 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
info "  queue empty $(elapsed "$t0") s after the second client was queued"
assert_eq 0 "$(stat_get connect_queue)" "connect_queue 4 s later (connect_timeout 1s)"
grep -E 'connecting anyway|waited [0-9]+ ms for max_connecting' "$PROXY_LOG" | cut -c14- | sed 's/^/  log: /'
[ "$(grep -cE 'connecting anyway|connecting \(waited [0-9]+ ms for max_connecting\)' "$PROXY_LOG")" = 2 ] ||
    fail "the two queued connections did not both log how they left the queue"
wait "$c3"
stop_proxy

# ---- 4. a reload that lifts the limit starts the queued connections
info "4. silent server, max_connecting = 1, connect_timeout = 30s: 3 clients, then a reload"
silent_three 30s 5
c4=$!
n=30
while [ "$(stat_get connect_queue)" != 2 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
assert_eq 2 "$(stat_get connect_queue)" "connections waiting before the reload"
sleep 1
assert_eq 2 "$(stat_get connect_queue)" "connections still waiting 1 s later"
assert_eq 2 "$(ctl conns --json | "$PY" -c 'import json, sys
print(sum(c["state"] == "queued" for c in json.load(sys.stdin)["conns"]))')" \
    "connections shown as queued by smbaccelctl conns"
sed -i 's/^max_connecting = 1$/max_connecting = 0/' "$PROXY_CONF"
kill -HUP "$PROXY_PID"
t0=$(now)
n=20
while [ "$(stat_get connect_queue)" != 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
info "  queue empty $(elapsed "$t0") s after the reload"
assert_eq 0 "$(stat_get connect_queue)" "connect_queue 2 s after the reload"
assert_eq 2 "$(grep -c 'connecting (waited [0-9]* ms for max_connecting)' "$PROXY_LOG")" \
    "connections started by the reload"
wait "$c4"
proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "exit status after SIGTERM"

# ---- 5. the loop stalls past connect_timeout while the connect finishes
GATE=$(free_port)
nsx_bg "$PY" "$TESTS_DIR/load_idle.py" server "$GATE" --backlog 1 --gate "$T/gate.open" \
    > "$T/gate.out" 2>&1
# accept queue length of the gate server (ss: Recv-Q of a listener)
acceptq() { nsx ss -Hltn "sport = :$GATE" | awk '{ print $2 }'; }
n=50
while [ -z "$(acceptq)" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
[ -n "$(acceptq)" ] || fail "gate server not listening"
: > "$PROXY_LOG"
PROXY_UPSTREAM=127.0.0.1:$GATE start_proxy "connect_timeout = 2s" "max_connecting = 0"
info "5. server backlog full, smbaccel stopped past connect_timeout (2s) while its connect completes"
# fill the gate server's accept queue (backlog 1 holds 2)
nsx_bg "$PY" -c 'import socket, sys, time
s = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(int(sys.argv[2]))]
time.sleep(60)' "$GATE" $((2 - $(acceptq))) > /dev/null 2>&1
n=50
while [ "$(acceptq)" -lt 2 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
assert_eq 2 "$(acceptq)" "gate server's accept queue"
o0=$(overflows)
nsx_bg "$PY" "$TESTS_DIR/load_idle.py" clients "$PROXY_PORT" 1 "$T/gate.done" --no-wait \
    --timeout 15 > "$T/s5.out" 2>&1
c5=$!
n=50
while [ "$(overflows)" = "$o0" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
[ "$(overflows)" != "$o0" ] || fail "smbaccel's SYN to the full backlog was not dropped"
kill -STOP "$PROXY_PID"
touch "$T/gate.open"
sleep 3.5	# the SYN is sent again 1 s after the first; deadline 2 s
kill -CONT "$PROXY_PID"
wait "$c5" || { cat "$T/s5.out"; fail "client not answered after the stall"; }
sed 's/^/  /' "$T/s5.out"
log_has 'timed out' && { grep 'timed out' "$PROXY_LOG"; fail "a completed connect was taken for a timeout"; }
proxy_alive || fail "proxy died"
stop_proxy
info "PASS"
