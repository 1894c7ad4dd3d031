#!/bin/bash
# Config check and reload: `smbaccel -t` prints FILE:LINE: for each bad
# line and exits non-zero, 0 for a good file; SIGHUP with a bad file logs
# the error with its line and keeps serving with the old policy; SIGHUP
# with a good file logs the reload and the new policy is in force.  The
# counters say the same, so a monitoring system can alert on a refused
# reload: reloads_failed 1 and reload_ok 0 (also in `smbaccelctl
# metrics` and the stats table) after the bad file, reloads 1, reload_ok
# 1 and a new policy_loaded_time_seconds after the good one.  Then:
# SIGUSR1/SIGUSR2 are logged and ignored; -t refuses what the daemon
# would refuse at start (keytab, secrets, upstream name; the errors of
# the first two as FILE: or FILE:LINE: and the reason); a dual-stack
# listen line starts; in forward mode, a reload keeps the upstream's
# address when its unchanged name does not resolve now, and refuses a
# changed name that does not resolve; a silent nameserver holds a reload
# (and the event loop) 10 s at most; an upstream name with two addresses
# moves to the second when a connect to the first fails.
. "$(dirname "$0")/lib.sh"
require_smbaccel "config check and reload"

start_smbd
start_proxy

# --- smbaccel -t
PROXY_SHARE_SECTION=no write_proxy_conf "$T/good.conf" "" "[share share]" "write_behind = off"
out=$("$SMBACCEL" -t -c "$T/good.conf" 2>&1) || fail "-t rejects a good file: $out"
info "-t good.conf: exit 0 ${out:+($out)}"

# Line numbers: 1 [global] 2 listen 3 upstream 4 mode 5 control_socket
# 6 (empty) 7 [share share] 8 the bad value
PROXY_SHARE_SECTION=no write_proxy_conf "$T/bad.conf" "" "[share share]" "write_behind = sometimes"
assert_eq "write_behind = sometimes" "$(sed -n 8p "$T/bad.conf")" "bad.conf line 8"
if out=$("$SMBACCEL" -t -c "$T/bad.conf" 2>&1); then
	fail "-t accepts bad.conf (write_behind = sometimes): $out"
fi
echo "$out"
echo "$out" | grep -q 'bad\.conf:8:' || fail "-t output lacks 'bad.conf:8:': $out"

# A line that is not INI at all, at line 6.
PROXY_SHARE_SECTION=no write_proxy_conf "$T/bad2.conf" "this line is not ini"
if out=$("$SMBACCEL" -t -c "$T/bad2.conf" 2>&1); then
	fail "-t accepts bad2.conf (garbage line 6): $out"
fi
echo "$out"
echo "$out" | grep -q 'bad2\.conf:6:' || fail "-t output lacks 'bad2.conf:6:': $out"

# An unknown setting and an out-of-range value: non-zero exit, with lines.
PROXY_SHARE_SECTION=no write_proxy_conf "$T/bad3.conf" "no_such_setting = 1" "connect_timeout = -5s"
if out=$("$SMBACCEL" -t -c "$T/bad3.conf" 2>&1); then
	fail "-t accepts bad3.conf (unknown key line 6, bad timeout line 7): $out"
fi
echo "$out"
echo "$out" | grep -qE 'bad3\.conf:(6|7):' || fail "-t output lacks 'bad3.conf:6:' or ':7:': $out"

# --- SIGHUP
# The policy in force is observed two ways: the write_behind that
# `smbaccelctl shares --json` shows for a tree connected after the signal,
# and whether 1 KiB writes are absorbed (stats writes_absorbed).
home=$(client_home reload)
random_file "$T/orig" 2
want=$(sha256 "$T/orig")
transfer() {	# transfer NAME: put/get intact, prints the tree's write_behind
	printf '%s\n' "put $T/orig $1" "!$CTL shares --json > $T/shares.$1 2>&1" "get $1 $T/back-$1" |
	    HOME=$home smbclient //127.0.0.1/share -p "$PROXY_PORT" -U "$SMB_USER%$SMB_PASS" \
	    -s "$home/.smb/smb.conf" > "$T/$1.out" 2>&1 || { cat "$T/$1.out"; fail "transfer $1 failed"; }
	assert_eq "$want" "$(sha256 "$SHARE_DIR/$1")" "$1: sha256 on disk"
	assert_eq "$want" "$(sha256 "$T/back-$1")" "$1: sha256 read back"
	"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(sorted({s.get("write_behind", "?") for s in d.get("shares", [])
                       if s.get("share", "").lower() == "share"})) or "none")' "$T/shares.$1" ||
	    fail "bad smbaccelctl shares --json: $(cat "$T/shares.$1")"
}
absorbed() {	# absorbed NAME: writes_absorbed gained by 256 1 KiB writes
	local a b out
	a=$(stat_get writes_absorbed)
	out=$(SMBC_HOME=$home smbdd_run write "$PROXY_PORT" "$1.dd" 1K 256 -q 2>&1) ||
	    fail "smbdd write $1 failed: $out"
	b=$(stat_get writes_absorbed)
	echo $((b - a))
}
# hup_and_wait REGEX WHAT: SIGHUP, then wait for a new log line matching.
hup_and_wait() {
	local lines n=50
	lines=$(wc -l < "$PROXY_LOG")
	kill -HUP "$PROXY_PID"
	until tail -n +$((lines + 1)) "$PROXY_LOG" | grep -E -- "$1" | grep -qviE "${3:-^$}"; do
		n=$((n - 1)); [ $n -gt 0 ] || fail "no log line matching '$1' after SIGHUP ($2)"
		sleep 0.1
	done
	tail -n +$((lines + 1)) "$PROXY_LOG"
}

# reload_state: "reloads reloads_failed reload_ok policy_loaded_time_seconds"
reload_state() {
	ctl stats --json | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["reloads"], d["reloads_failed"], d["reload_ok"], d["policy_loaded_time_seconds"])'
}
read -r r0 f0 ok0 at0 <<<"$(reload_state)"
assert_eq "0 0 1" "$r0 $f0 $ok0" "reloads, refused, reload_ok at start"
now0=$(date +%s)
[ "$at0" -ge $((now0 - 60)) ] && [ "$at0" -le "$now0" ] ||
    fail "policy_loaded_time_seconds $at0 is not the start ($now0)"

wb=$(transfer before)
assert_eq always "$wb" "write_behind of a tree before any reload"
assert_ge 1 "$(absorbed before)" "writes absorbed before any reload"

PROXY_SHARE_SECTION=no write_proxy_conf "$PROXY_CONF" "" "[share share]" "write_behind = sometimes"
hup_and_wait 'smbaccel\.conf:8:' "bad file"
proxy_alive || fail "proxy died on SIGHUP with a bad file"
wb=$(transfer after-bad)
assert_eq always "$wb" "write_behind of a tree after a rejected reload (old policy)"
assert_ge 1 "$(absorbed after-bad)" "writes absorbed after a rejected reload (old policy)"
read -r r1 f1 ok1 at1 <<<"$(reload_state)"
assert_eq "0 1 0 $at0" "$r1 $f1 $ok1 $at1" "reloads, refused, reload_ok, load time after the bad file"
ctl metrics | grep -qx 'smbaccel_reload_ok 0' || fail "metrics do not show smbaccel_reload_ok 0"
ctl metrics | grep -qx 'smbaccel_reloads_failed_total 1' || fail "metrics do not show smbaccel_reloads_failed_total 1"
ctl stats | grep -q '^policy .*THE LAST RELOAD WAS REFUSED' || fail "the stats table does not say the reload was refused"
sleep 1.1	# a later load time

PROXY_SHARE_SECTION=no write_proxy_conf "$PROXY_CONF" "" "[share share]" "write_behind = off"
hup_and_wait 'reloaded|reload.*(ok|succe|done|complete)' "good file" 'fail|error|invalid|keep|reject'
proxy_alive || fail "proxy died on SIGHUP with a good file"
wb=$(transfer after-good)
assert_eq off "$wb" "write_behind of a tree after a good reload"
assert_eq 0 "$(absorbed after-good)" "writes absorbed with write_behind = off"
read -r r2 f2 ok2 at2 <<<"$(reload_state)"
assert_eq "1 1 1" "$r2 $f2 $ok2" "reloads, refused, reload_ok after the good file"
[ "$at2" -gt "$at0" ] || fail "policy_loaded_time_seconds did not move on a good reload ($at0 -> $at2)"
ctl metrics | grep -qx 'smbaccel_reload_ok 1' || fail "metrics do not show smbaccel_reload_ok 1"
info "reloads: at start $r0/$f0/$ok0, after the bad file $r1/$f1/$ok1, after the good one $r2/$f2/$ok2 (took effect/refused/ok)"

# --- SIGUSR1 and SIGUSR2 mean nothing: logged, not fatal (by default
# they ended the process at once, without draining acknowledged writes)
for sig in USR1 USR2; do
	l0=$(wc -l < "$PROXY_LOG")
	kill -"$sig" "$PROXY_PID"
	wait_log "signal $sig ignored" 5 "$l0" || fail "no log line for SIG$sig"
	proxy_alive || fail "SIG$sig ended the daemon"
done
wb=$(transfer after-usr)
assert_eq off "$wb" "write_behind of a tree after SIGUSR1/2 (policy unchanged)"

# --- smbaccel -t checks what the daemon reads and resolves at start: a
# missing keytab, a secrets file others can read, an upstream name that
# does not resolve (each was "ok" before, then the start failed).  An
# error of the secrets file or a keytab is printed once as the policy's
# are, FILE:LINE: or FILE: and the reason (it was a log line, with its
# time and "smbaccel[warn] secrets: secrets file FILE: line 2: ...")
printf 'alice:x\n' > "$T/secrets.open"; chmod 644 "$T/secrets.open"
printf '%s\n' "# users" "alice:nthash:1234" > "$T/secrets.line2"; chmod 600 "$T/secrets.line2"
for bad in "keytab = $T/no-such.keytab|^$T/no-such.keytab: No such file or directory$" \
    "secrets = $T/secrets.open|^$T/secrets.open: mode 0644 gives access" \
    "secrets = $T/secrets.line2|^$T/secrets.line2:2: nthash must be 32 hex digits, found 4 characters$" \
    "upstream = no-such-host.invalid:445|does not resolve"; do
	case $bad in
	upstream*) PROXY_UPSTREAM=no-such-host.invalid:445 PROXY_SHARE_SECTION=no write_proxy_conf "$T/refused.conf" ;;
	*) PROXY_SHARE_SECTION=no write_proxy_conf "$T/refused.conf" "${bad%%|*}" ;;
	esac
	if out=$(timeout 60 "$SMBACCEL" -t -c "$T/refused.conf" 2>&1); then
		fail "-t accepts '${bad%%|*}': $out"
	fi
	echo "$out" | grep -q -- "${bad#*|}" || fail "-t '${bad%%|*}': no reason '${bad#*|}' in: $out"
	echo "$out" | grep -q 'refused' || fail "-t '${bad%%|*}': no 'refused' in: $out"
	case $bad in
	secrets*|keytab*)
		f=${bad%%|*}; f=${f#* = }
		assert_eq 1 "$(echo "$out" | grep -c -F -- "$f")" "-t lines naming $f"
		! echo "$out" | grep -q 'smbaccel\[' || fail "-t '${bad%%|*}': a log line: $out" ;;
	esac
	info "-t refuses '${bad%%|*}': $(echo "$out" | head -n 1)"
done
# ... and all three at once: -t names every one (it stopped at the first
# of the upstream, listen and control_socket checks), each line FILE: why
# like the policy's errors, no log line with its time and level
echo precious > "$T/notasocket.t"
PROXY_UPSTREAM=no-such-host.invalid:445 PROXY_SHARE_SECTION=no write_proxy_conf "$T/refused3.conf" \
    "keytab = $T/no-such.keytab"
sed -i "s#^control_socket = .*#control_socket = $T/notasocket.t#" "$T/refused3.conf"
if out=$(timeout 60 "$SMBACCEL" -t -c "$T/refused3.conf" 2>&1); then
	fail "-t accepts three errors: $out"
fi
for why in "^$T/no-such.keytab: No such file or directory$" \
    "^$T/refused3.conf: upstream no-such-host.invalid:445 does not resolve$" \
    "^$T/refused3.conf: control_socket $T/notasocket.t exists and is not a socket$" \
    "^$T/refused3.conf: refused (reasons above)$"; do
	echo "$out" | grep -q -- "$why" || fail "-t with three errors: no line '$why' in: $out"
done
! echo "$out" | grep -q 'smbaccel\[' || fail "-t with three errors: a log line: $out"
assert_eq precious "$(cat "$T/notasocket.t")" "the file named by control_socket after -t"
info "-t names all three errors: $(echo "$out" | tr '\n' '|')"

# the directories the daemon would run without (read_cache_dir, state_dir):
# warnings, not refusals; nothing created, a missing one is fine
mkdir -m 0777 "$T/open.dir"
ln -s "$T/open.dir" "$T/link.dir"
PROXY_SHARE_SECTION=no write_proxy_conf "$T/dirs.conf" "read_cache_dir = $T/open.dir" \
    "state_dir = $T/link.dir"
out=$(timeout 60 "$SMBACCEL" -t -c "$T/dirs.conf" 2>&1) || fail "-t refuses a file whose directories are only warned of: $out"
for why in "^$T/dirs.conf: read_cache_dir: $T/open.dir is writable by its group or by others (mode 0777): the document cache runs without its store" \
    "^$T/dirs.conf: state_dir: cannot open $T/link.dir (it must be a directory, not a symbolic link)" \
    "^$T/dirs.conf: ok (with the warnings above)$"; do
	echo "$out" | grep -q -- "$why" || fail "-t with bad directories: no line '$why' in: $out"
done
info "-t warns of the directories: $(echo "$out" | tr '\n' '|')"
PROXY_SHARE_SECTION=no write_proxy_conf "$T/dirs2.conf" "state_dir = $T/not-yet"
out=$(timeout 60 "$SMBACCEL" -t -c "$T/dirs2.conf" 2>&1) || fail "-t refuses a state_dir still to be made: $out"
assert_eq "$T/dirs2.conf: ok" "$out" "-t with a state_dir still to be made"
[ ! -e "$T/not-yet" ] || fail "-t created the state_dir"

# --- listen on 0.0.0.0:P and [::]:P together (the dual-stack line the
# manual shows): two listeners, the IPv6 one IPv6-only (before: the
# second bind failed with EADDRINUSE and the daemon exited)
if "$PY" -c 'import socket; socket.socket(socket.AF_INET6).close()' 2>/dev/null; then
	p2=$(free_port) || fail "no free port"
	printf '%s\n' "[global]" "listen = 0.0.0.0:$p2, [::]:$p2" \
	    "upstream = 127.0.0.1:$SMBD_PORT" "mode = forward" \
	    "control_socket = $T/dual.sock" > "$T/dual.conf"
	"$SMBACCEL" -t -c "$T/dual.conf" >/dev/null 2>&1 || fail "-t refuses dual.conf"
	"$SMBACCEL" -f -c "$T/dual.conf" > "$T/dual.log" 2>&1 &
	dpid=$!
	BG_PIDS="$BG_PIDS $dpid"
	n=50
	until grep -q 'smbaccel started' "$T/dual.log"; do
		kill -0 "$dpid" 2>/dev/null || fail "dual-stack listen: the daemon exited: $(cat "$T/dual.log")"
		n=$((n - 1)); [ $n -gt 0 ] || fail "dual-stack listen: no start in 5 s: $(cat "$T/dual.log")"
		sleep 0.1
	done
	assert_eq 2 "$(grep -c "listening on .*:$p2 " "$T/dual.log")" "listeners on 0.0.0.0:$p2 and [::]:$p2"
	for a in 127.0.0.1 ::1; do
		"$PY" -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 5).close()' "$a" "$p2" ||
		    fail "no connection to $a port $p2"
	done
	kill -TERM "$dpid"
	wait "$dpid" || fail "dual-stack daemon: exit status $?"
	info "listen = 0.0.0.0:$p2, [::]:$p2: both listening, IPv4 and IPv6 clients connect"
else
	info "no IPv6 here: dual-stack listen not checked"
fi

# refused CONF PATTERN WHAT: smbaccel -t and a start both refuse CONF,
# each saying PATTERN (the daemon's output in CONF.log)
refused() {
	local out rc=0
	if out=$("$SMBACCEL" -t -c "$1" 2>&1); then
		fail "-t accepts $3: $out"
	fi
	echo "$out" | grep -q "$2" || fail "-t does not say why it refuses $3: $out"
	timeout 20 "$SMBACCEL" -c "$1" -f > "$1.log" 2>&1 || rc=$?
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "smbaccel started with $3 (exit $rc)"
	grep -q "$2" "$1.log" || fail "the daemon does not say why it refuses $3: $(cat "$1.log")"
}

# --- control_socket naming a file that is not a socket: refused by -t
# and at start, and the file is left as it was (it was unlinked, at start
# and again at stop: a file of the administrator's, or the policy file)
echo precious > "$T/notasocket"
PROXY_SHARE_SECTION=no write_proxy_conf "$T/ns.conf" "" "[share share]" "write_behind = off"
P_NS=$(free_port) || fail "no free port"
sed -i -e "s#^control_socket = .*#control_socket = $T/notasocket#" \
    -e "s#^listen = .*#listen = 127.0.0.1:$P_NS#" "$T/ns.conf"
refused "$T/ns.conf" "control_socket $T/notasocket exists and is not a socket" \
    "a control_socket that is a regular file"
assert_eq precious "$(cat "$T/notasocket")" "the file named by control_socket"
info "control_socket on a regular file: refused, file intact ($(grep -o 'control_socket .*' "$T/ns.conf.log" | head -n 1))"

# --- forward mode whose upstream is smbaccel's own listener: refused by
# -t, at start and at reload (it connected to itself, one connection
# more per connection, until max_connections, with no line saying why)
P_LOOP=$(free_port) || fail "no free port"
PROXY_UPSTREAM="127.0.0.1:$P_LOOP" PROXY_SHARE_SECTION=no write_proxy_conf "$T/loop.conf" "" "[share share]" "write_behind = off"
sed -i -e "s#^listen = .*#listen = 127.0.0.1:$P_LOOP#" -e "s#^control_socket = .*#control_socket = $T/loop.sock#" "$T/loop.conf"
refused "$T/loop.conf" "upstream 127.0.0.1:$P_LOOP is smbaccel's own listener" \
    "upstream = listen"
info "upstream = listen: refused by -t and at start"

# --- forward mode with an upstream name: a reload whose upstream is
# unchanged keeps the address in use when the name does not resolve now
# (a DNS outage must not refuse every reload); a changed name that does
# not resolve is refused.  The daemon runs in a mount namespace whose
# /etc/hosts and /etc/resolv.conf are this test's files (nothing of the
# host's is touched; the resolver points at a closed port: no waiting).
stop_proxy
printf '127.0.0.1 smbaccel-up.test\n' > "$T/hosts"
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' > "$T/resolv.conf"
printf '%s\n' '#!/bin/sh' \
    "mount --bind '$T/hosts' /etc/hosts && mount --bind '$T/resolv.conf' /etc/resolv.conf && exec \"\$@\"" > "$T/wrap.sh"
chmod +x "$T/wrap.sh"
PROXY_WRAP="unshare -m --propagation private $T/wrap.sh" PROXY_UPSTREAM="smbaccel-up.test:$SMBD_PORT" start_proxy
wb=$(transfer by-name)
: > "$T/hosts"	# the same file (inode) the namespace sees, now empty
PROXY_UPSTREAM="smbaccel-up.test:$SMBD_PORT" PROXY_SHARE_SECTION=no write_proxy_conf "$PROXY_CONF" "" "[share share]" "write_behind = off"
out=$(ctl reload 2>&1) || fail "reload with an unchanged upstream name that does not resolve now: $out"
grep -q "upstream smbaccel-up.test does not resolve now; 127.0.0.1:$SMBD_PORT kept" "$PROXY_LOG" ||
    fail "no log line: the unchanged upstream's address kept"
wb=$(transfer by-name-kept)
assert_eq off "$wb" "write_behind after the reload that kept the upstream's address"
PROXY_UPSTREAM="smbaccel-other.test:$SMBD_PORT" PROXY_SHARE_SECTION=no write_proxy_conf "$PROXY_CONF" "" "[share share]" "write_behind = always"
if out=$(ctl reload 2>&1); then
	fail "a reload to an upstream name that does not resolve was taken: $out"
fi
wb=$(transfer by-name-refused)
assert_eq off "$wb" "write_behind after the refused reload (old policy)"
info "upstream by name: unchanged and unresolvable kept its address; changed and unresolvable refused ($out)"

# --- a nameserver that never answers: the C library would wait 24 s and
# more (timeout:12 attempts:2), and the event loop waited with it: no I/O,
# no control answers, no watchdog ping (WatchdogSec=30s kills at 30 s, and
# with it every acknowledged write still buffered).  A lookup is given
# 10 s; the reload then keeps the unchanged upstream's address.  The
# silent server is on 127.77.0.53:53 of the host's loopback (resolv.conf
# cannot name a port); if that is taken, this part is skipped.
if python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.77.0.53", 53))' 2>/dev/null; then
	bg python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.77.0.53", 53))
while True:
    s.recv(4096)'
	for _ in $(seq 50); do
		ss -Hlun 'src 127.77.0.53' | grep -q . && break
		sleep 0.1
	done
	printf 'nameserver 127.77.0.53\noptions timeout:12 attempts:2\n' > "$T/resolv.conf"
	PROXY_UPSTREAM="smbaccel-up.test:$SMBD_PORT" PROXY_SHARE_SECTION=no write_proxy_conf "$PROXY_CONF" "" "[share share]" "write_behind = always"
	t0=$(date +%s%N)
	out=$(ctl reload 2>&1) || fail "reload while the nameserver is silent: $out"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	info "reload with a silent nameserver answered after $ms ms"
	[ "$ms" -lt 18000 ] || fail "the reload waited $ms ms for a silent nameserver (bound: 10 s)"
	grep -q "cannot resolve smbaccel-up.test: no answer within 10 s" "$PROXY_LOG" ||
	    fail "no log line naming the unanswered lookup"
	wb=$(transfer by-name-silent)
	assert_eq always "$wb" "write_behind after the reload with a silent nameserver"
	# -t (the unit's ExecReload runs it first) takes a DNS outage for
	# what it is: not checked, not an error of the file (it refused the
	# file, so systemctl reload failed where the reload itself goes on)
	out=$(unshare -m --propagation private "$T/wrap.sh" "$SMBACCEL" -t -c "$PROXY_CONF" 2>&1) ||
	    fail "-t refuses the file while the name server is silent: $out"
	echo "$out" | grep -q "upstream smbaccel-up.test:$SMBD_PORT cannot be resolved now" ||
	    fail "-t does not say the upstream could not be checked: $out"
else
	info "127.77.0.53:53 is taken: the silent nameserver is not checked"
fi

# --- an upstream name with two addresses, the first where smbd does not
# listen (::1; smbd listens on 127.0.0.1 only): a connect that fails moves
# the next connections to the second (before: only the first address was
# ever used, every connection reset)
printf '::1 smbaccel-two.test\n127.0.0.1 smbaccel-two.test\n' > "$T/hosts"
PROXY_UPSTREAM="smbaccel-two.test:$SMBD_PORT" PROXY_SHARE_SECTION=no write_proxy_conf "$PROXY_CONF" "" "[share share]" "write_behind = always"
out=$(ctl reload 2>&1) || fail "reload to a name with two addresses: $out"
log_has "upstream smbaccel-two.test: 2 addresses, \[::1\]:$SMBD_PORT first" ||
    fail "no log line naming the two addresses: $(grep -i upstream "$PROXY_LOG" | tail -n 3)"
"$PY" -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)
s.settimeout(10)
try:
    s.recv(1)      # closed: its connect to [::1] failed
except OSError:
    pass' "$PROXY_PORT"
wait_log "upstream \[::1\]:$SMBD_PORT failed: new connections go to 127.0.0.1:$SMBD_PORT" 5 ||
    fail "no move to the second address"
wb=$(transfer by-second-address)
assert_eq always "$wb" "write_behind through the second address"
info "upstream with two addresses: the first failed once, the next connections went to the second"
info "PASS"
