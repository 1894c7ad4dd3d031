#!/bin/bash
# sanitizer: no (installs bin/ with make install)
# test-timeout: 180
# make install / uninstall into a DESTDIR, and the installed pieces:
#  1. `make install DESTDIR=$T/root PREFIX=/usr` installs exactly: sbin/smbaccel,
#     bin/smbaccelctl (0755), the three man pages, the systemd units
#     (smbaccel, the keytab refresh service and timer, the metrics
#     service and timer), the default policy and the modules-load.d entry for tcp_bbr (0644);
#     nothing else;
#  2. the unit has its paths filled in (ExecStart=/usr/sbin/smbaccel -c
#     /etc/smbaccel/smbaccel.conf, no @...@ left), Type=notify, ExecReload
#     with SIGHUP, TimeoutStopSec above drain_timeout's default; a start
#     that keeps failing ends: [Unit] StartLimitBurst starts at RestartSec
#     apart fit in StartLimitIntervalSec (else Restart=on-failure goes on
#     for ever); the keytab refresh service has a TimeoutStartSec under
#     its timer's hour (a oneshot has none by default, and a hung run
#     would stop the timer's refreshes);
#  3. `systemd-analyze verify` prints nothing for it (ExecStart mapped into
#     DESTDIR, MANPATH at the installed man pages so its Documentation=
#     entries resolve); a copy with a misspelt key is flagged, so the check
#     can fail; the fail-open drop-in of docs/deploy.md passes too;
#     `systemd-analyze security --offline` rates it (and the keytab
#     refresh service) OK or better;
#     the keytab refresh units (smbaccel-keytab@.service and .timer) pass
#     verify as an instance, run smbaccel-keytab --reload from the
#     instance's environment file, hourly; a misspelt timer key is flagged;
#     the metrics units (smbaccel-metrics.service and .timer) pass verify,
#     run `smbaccelctl metrics -o` into the node exporter's textfile
#     directory every 15 s, and the service rates OK or better too;
#  4. the man pages render without groff warnings; every why_not_keyed
#     reason the code can give (proxy/keyed.c, and the Kerberos and NTLM
#     result names it passes on) is in smbaccelctl(8) and in the reason
#     table of docs/deploy.md;
#  5. the installed default policy passes `smbaccel -t`;
#  6. the installed daemon speaks sd_notify: READY=1 and STATUS= after
#     start, WATCHDOG=1 every half WATCHDOG_USEC while its loop runs and
#     none while it is stopped (SIGSTOP), STOPPING=1 on SIGTERM, exit 0;
#     every name in its `smbaccelctl stats --json` (the figures, and the
#     causes and reasons of each breakdown) is in smbaccelctl(8);
#     run by hand (no RuntimeDirectory=), it makes the missing directory
#     of its control socket (0750 less the umask) and smbaccelctl answers
#     there; a control socket whose directory is a regular file is
#     refused: exit 1, with the reason;
#  7. a second install keeps an edited policy file;
#  8. `make uninstall` removes everything but the policy file;
#  9. deploy/iptables.sh refuses a --port outside 1 to 65535 (exit 2, the
#     reason, no iptables command even printed with -n), before it would
#     have made a chain iptables then refuses to fill; 1 and 65535 pass.
. "$(dirname "$0")/lib.sh"

command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
command -v groff >/dev/null || skip "no groff"
D=$T/root
cd "$TOP" || fail "no $TOP"

# ---- 1. install
info "1. make install DESTDIR=$D PREFIX=/usr"
make -s install DESTDIR="$D" PREFIX=/usr >"$T/install.log" 2>&1 ||
    { cat "$T/install.log"; fail "make install failed"; }
expected="etc/smbaccel/smbaccel.conf 644
lib/systemd/system/smbaccel-keytab@.service 644
lib/systemd/system/smbaccel-keytab@.timer 644
lib/systemd/system/smbaccel-metrics.service 644
lib/systemd/system/smbaccel-metrics.timer 644
lib/systemd/system/smbaccel.service 644
usr/bin/smbaccelctl 755
usr/lib/modules-load.d/smbaccel.conf 644
usr/sbin/smbaccel 755
usr/sbin/smbaccel-keytab 755
usr/share/man/man5/smbaccel.conf.5 644
usr/share/man/man8/smbaccel-keytab.8 644
usr/share/man/man8/smbaccel.8 644
usr/share/man/man8/smbaccelctl.8 644"
# extra files a later Makefile may add (example firewall rules) are allowed
got=$(cd "$D" && find . -type f -printf '%P %m\n' | sort | grep -v '^usr/share/smbaccel/')
[ "$got" = "$expected" ] || { echo "expected:"; echo "$expected"; echo "got:"; echo "$got"; fail "installed tree differs"; }
cmp -s bin/smbaccel "$D/usr/sbin/smbaccel" || fail "installed smbaccel differs from bin/smbaccel"

# ---- 2. unit contents
info "2. unit contents"
U=$D/lib/systemd/system/smbaccel.service
grep -q '@[A-Z]*@' "$U" && fail "unsubstituted @...@ left in the unit"
grep -qx 'ExecStart=/usr/sbin/smbaccel -c /etc/smbaccel/smbaccel.conf' "$U" || fail "ExecStart line"
grep -qx 'Type=notify' "$U" || fail "Type=notify"
grep -qx 'WatchdogSec=30s' "$U" || fail "WatchdogSec=30s"
# unit_sec FILE SECTION KEY: KEY's last value in SECTION, in seconds
# (systemd's s, min and h suffixes; a bare number is seconds); empty if
# absent, "inf" for infinity
unit_sec() {
	awk -v sec="[$2]" -v key="$3" '
	    /^\[/ { in_sec = ($0 == sec) }
	    in_sec && index($0, key "=") == 1 { v = substr($0, length(key) + 2) }
	    END {
		if (v == "") exit
		if (v == "infinity") { print "inf"; exit }
		n = v + 0; u = v; sub(/^[0-9.]+ */, "", u)
		if (u == "min") n *= 60; else if (u == "h") n *= 3600
		else if (u != "" && u != "s") { print "bad:" v; exit }
		print n
	    }' "$1"
}
burst=$(unit_sec "$U" Unit StartLimitBurst)
window=$(unit_sec "$U" Unit StartLimitIntervalSec)
rsec=$(unit_sec "$U" Service RestartSec)
info "StartLimitBurst=$burst StartLimitIntervalSec=${window}s RestartSec=${rsec}s"
[ -n "$burst" ] && [ -n "$window" ] && [ -n "$rsec" ] ||
    fail "smbaccel.service: no StartLimitBurst/StartLimitIntervalSec in [Unit] or no RestartSec: a failing start is retried for ever"
awk -v b="$burst" -v w="$window" -v r="$rsec" 'BEGIN { exit !(b >= 1 && w != "inf" && (b - 1) * r < w) }' ||
    fail "smbaccel.service: $burst starts ${rsec}s apart do not fit in StartLimitIntervalSec=${window}s: the start limit is never hit"
grep -qx 'ExecReload=/usr/bin/smbaccelctl reload' "$U" || fail "ExecReload with smbaccelctl reload (waits for the daemon's answer)"
grep -qx 'RuntimeDirectory=smbaccel' "$U" || fail "RuntimeDirectory=smbaccel"
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s$/\1/p' "$U")
assert_ge 61 "${stop:-0}" "TimeoutStopSec (seconds) must exceed the default drain_timeout of 60s"

# ---- 3. systemd-analyze
info "3. systemd-analyze verify"
mkdir -p "$T/units"
sed "s|=/usr/sbin/|=$D/usr/sbin/|g; s|=/usr/bin/smbaccelctl|=$D/usr/bin/smbaccelctl|g; s| /usr/sbin/| $D/usr/sbin/|g" "$U" > "$T/units/smbaccel.service"
grep -q "^ExecStart=$D/usr/sbin/smbaccel " "$T/units/smbaccel.service" || fail "could not map ExecStart into $D"
out=$(cd "$T" && MANPATH=$D/usr/share/man systemd-analyze verify "$T/units/smbaccel.service" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] || { echo "$out"; fail "systemd-analyze verify: exit $rc, output above"; }
sed 's/^ProtectSystem=/ProtectSytem=/' "$T/units/smbaccel.service" > "$T/units/smbaccel-bad.service"
out=$(cd "$T" && MANPATH=$D/usr/share/man systemd-analyze verify "$T/units/smbaccel-bad.service" 2>&1)
echo "$out" | grep -q "Unknown key" || { echo "$out"; fail "systemd-analyze verify did not flag a misspelt key"; }
# the fail-open drop-in of docs/deploy.md section 5 (nftables variant)
if [ -x /usr/sbin/nft ]; then
	{
		cat "$T/units/smbaccel.service"
		echo "[Service]"
		echo "ExecStartPost=+/usr/sbin/nft -f /etc/smbaccel/nftables.conf"
		echo "ExecStop=-+/usr/sbin/nft delete table inet smbaccel"
		echo "ExecStopPost=-+/usr/sbin/nft delete table inet smbaccel"
	} > "$T/units/smbaccel-failopen.service"
	out=$(cd "$T" && MANPATH=$D/usr/share/man systemd-analyze verify "$T/units/smbaccel-failopen.service" 2>&1)
	[ -z "$out" ] || { echo "$out"; fail "systemd-analyze verify of the unit with the fail-open drop-in"; }
fi
# the keytab refresh service and its timer, as the instance fs1
KU=$D/lib/systemd/system/smbaccel-keytab@.service
grep -q '@[A-Z]*@' "$KU" && fail "unsubstituted @...@ left in smbaccel-keytab@.service"
grep -qx 'ExecStart=/usr/sbin/smbaccel-keytab $SMBACCEL_KEYTAB_ARGS --reload' "$KU" ||
    fail "smbaccel-keytab@.service: ExecStart line"
grep -qx 'EnvironmentFile=/etc/smbaccel/keytab-%i.env' "$KU" || fail "smbaccel-keytab@.service: EnvironmentFile"
grep -qx 'Type=oneshot' "$KU" || fail "smbaccel-keytab@.service: Type=oneshot"
kto=$(unit_sec "$KU" Service TimeoutStartSec)
info "smbaccel-keytab@.service: TimeoutStartSec=${kto}s"
[ -n "$kto" ] && [ "$kto" != inf ] && awk -v t="$kto" 'BEGIN { exit !(t > 0 && t < 3600) }' ||
    fail "smbaccel-keytab@.service: TimeoutStartSec '$kto' is not under an hour (a hung run stops the hourly refresh)"
grep -qx 'OnUnitActiveSec=1h' "$D/lib/systemd/system/smbaccel-keytab@.timer" || fail "the timer is not hourly"
sed "s|=/usr/sbin/|=$D/usr/sbin/|g" "$KU" > "$T/units/smbaccel-keytab@fs1.service"
cp "$D/lib/systemd/system/smbaccel-keytab@.timer" "$T/units/smbaccel-keytab@fs1.timer"
out=$(cd "$T/units" && MANPATH=$D/usr/share/man systemd-analyze verify smbaccel-keytab@fs1.service smbaccel-keytab@fs1.timer 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] || { echo "$out"; fail "systemd-analyze verify of the keytab units: exit $rc, output above"; }
sed 's/^OnUnitActiveSec=/OnUnitActivSec=/' "$T/units/smbaccel-keytab@fs1.timer" > "$T/units/smbaccel-keytab@bad.timer"
cp "$T/units/smbaccel-keytab@fs1.service" "$T/units/smbaccel-keytab@bad.service"
out=$(cd "$T/units" && MANPATH=$D/usr/share/man systemd-analyze verify smbaccel-keytab@bad.timer 2>&1)
echo "$out" | grep -q "Unknown key" || { echo "$out"; fail "systemd-analyze verify did not flag a misspelt timer key"; }
# the metrics service and its timer
MU=$D/lib/systemd/system/smbaccel-metrics.service
grep -q '@[A-Z]*@' "$MU" && fail "unsubstituted @...@ left in smbaccel-metrics.service"
grep -qx 'ExecStart=/usr/bin/smbaccelctl metrics -o /var/lib/prometheus/node-exporter/smbaccel.prom' "$MU" ||
    fail "smbaccel-metrics.service: ExecStart line"
grep -qx 'Type=oneshot' "$MU" || fail "smbaccel-metrics.service: Type=oneshot"
grep -qx 'SuccessExitStatus=3' "$MU" || fail "smbaccel-metrics.service: SuccessExitStatus=3 (smbaccel not running)"
grep -qx 'OnUnitActiveSec=15s' "$D/lib/systemd/system/smbaccel-metrics.timer" ||
    fail "the metrics timer is not every 15 s"
sed "s|=/usr/bin/|=$D/usr/bin/|g" "$MU" > "$T/units/smbaccel-metrics.service"
cp "$D/lib/systemd/system/smbaccel-metrics.timer" "$T/units/smbaccel-metrics.timer"
out=$(cd "$T/units" && MANPATH=$D/usr/share/man systemd-analyze verify smbaccel-metrics.service smbaccel-metrics.timer 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] || { echo "$out"; fail "systemd-analyze verify of the metrics units: exit $rc, output above"; }
if systemd-analyze security --help 2>&1 | grep -q -- '--offline'; then
	for u in smbaccel.service smbaccel-keytab@fs1.service smbaccel-metrics.service; do
		out=$(systemd-analyze security --offline=yes "$T/units/$u" 2>&1 | tail -n 1)
		info "$out"
		echo "$out" | grep -Eq 'Overall exposure level .* (SAFE|OK)' ||
		    fail "systemd-analyze security of $u: $out"
	done
fi

# ---- 4. man pages
info "4. man pages render without warnings"
for m in man8/smbaccel.8 man8/smbaccelctl.8 man8/smbaccel-keytab.8 man5/smbaccel.conf.5; do
	w=$(groff -ww -man -Tutf8 "$D/usr/share/man/$m" 2>&1 >/dev/null)
	[ -z "$w" ] || { echo "$w"; fail "groff warnings in $m"; }
	[ "$(groff -man -Tutf8 "$D/usr/share/man/$m" 2>/dev/null | wc -l)" -gt 20 ] ||
	    fail "$m renders to almost nothing"
done

# the names the code reports, in the documentation: smbaccelctl.8 with its
# "\-" read as "-", a name standing alone (not part of a longer one)
man_text() { sed 's/\\-/-/g' "$1"; }
in_text() {	# in_text NAME FILE: NAME as a word of its own in FILE
	grep -qE "(^|[^A-Za-z0-9_-])$1([^A-Za-z0-9_-]|\$)" "$2"
}
man_text docs/smbaccelctl.8 > "$T/smbaccelctl.8.txt"
reasons=$( {
	grep -oE '(return|why =) ([a-z_>.-]+ \? )?"[a-z][a-z-]*"( : "[a-z][a-z-]*")?;' proxy/keyed.c |
	    grep -oE '"[a-z][a-z-]*"'
	grep -hoE 'case PX_(KRB_R|KEY)_[A-Z_]+: return "[a-z-]+"' proxy/auth/krb5.c proxy/auth/ntlm.c |
	    grep -oE '"[a-z-]+"' | grep -vx '"ok"'
} | tr -d '"' | sort -u)
assert_ge 15 "$(echo "$reasons" | wc -l)" "why_not_keyed reasons found in the code"
for r in $reasons; do
	in_text "$r" "$T/smbaccelctl.8.txt" || fail "why_not_keyed reason $r (proxy/keyed.c) is not in smbaccelctl.8"
	grep -qE '^\| ([^|]*, )?`'"$r"'`' docs/deploy.md ||
	    fail "why_not_keyed reason $r (proxy/keyed.c) is not in docs/deploy.md's reason table"
done
info "why_not_keyed reasons documented: $(echo $reasons)"

# ---- 5. default policy
info "5. the installed default policy passes smbaccel -t"
out=$("$D/usr/sbin/smbaccel" -t -c "$D/etc/smbaccel/smbaccel.conf" 2>&1) ||
    { echo "$out"; fail "smbaccel -t rejects the installed default policy"; }

# ---- 6. sd_notify
info "6. sd_notify from the installed daemon"
PROXY_PORT=$(free_port) || fail "no free port"
# in a directory that does not exist yet, as /run/smbaccel when the
# service is not running
CTL_SOCK=$T/run/control.sock
PROXY_UPSTREAM=127.0.0.1:9 write_proxy_conf "$PROXY_CONF"   # never connected to
NOTIFY=$T/notify.sock
# notify.log.t: each line with the kernel's timestamp of its datagram
# (SO_TIMESTAMPNS; on an AF_UNIX socket, when the daemon sent it, in
# CLOCK_REALTIME), not when this listener got to read it
"$PY" - "$NOTIFY" "$T/notify.log" <<'EOF' &
import socket, struct, sys, time
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
TS = struct.Struct("@ll")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
s.bind(sys.argv[1])
s.settimeout(30)
with open(sys.argv[2], "a", buffering=1) as log, \
        open(sys.argv[2] + ".t", "a", buffering=1) as tlog:
    try:
        while True:
            d, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(TS.size))
            t = None
            for lvl, kind, data in anc:
                if lvl == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = TS.unpack(data[:TS.size])
                    t = sec + nsec / 1e9
            for line in d.decode().splitlines():
                print(line, file=log)
                # "-" when the kernel gave no timestamp: counted nowhere
                print("%s %s" % ("%.3f" % t if t is not None else "-", line), file=tlog)
                if line == "STOPPING=1":
                    sys.exit(0)
    except socket.timeout:
        pass
EOF
listener=$!
BG_PIDS="$BG_PIDS $listener"
n=50; while [ $n -gt 0 ] && [ ! -S "$NOTIFY" ]; do sleep 0.1; n=$((n - 1)); done
# WatchdogSec=0.4s, as systemd passes it: a WATCHDOG=1 every 0.2 s
NOTIFY_SOCKET=$NOTIFY WATCHDOG_USEC=400000 "$D/usr/sbin/smbaccel" -c "$PROXY_CONF" -f </dev/null >>"$PROXY_LOG" 2>&1 &
PROXY_PID=$!
n=100; while [ $n -gt 0 ] && ! grep -q '^STATUS=' "$T/notify.log" 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
grep -qx 'READY=1' "$T/notify.log" 2>/dev/null || { cat "$T/notify.log"; fail "no READY=1"; }
port_open "$PROXY_PORT" || fail "READY=1 sent but not accepting on $PROXY_PORT"
grep -Eq '^STATUS=.*[0-9]+ connections' "$T/notify.log" || { cat "$T/notify.log"; fail "no STATUS= with connections"; }
[ -d "$T/run" ] || fail "no directory $T/run made for the control socket"
assert_eq "$(printf '%o' $((0750 & ~$(umask))))" "$(stat -c %a "$T/run")" "mode of the control socket's directory"
out=$(ctl stats --json 2>&1) || fail "smbaccelctl on $CTL_SOCK: $out"
echo "$out" | grep -q '"connections_total"' || fail "smbaccelctl stats --json on $CTL_SOCK: $out"
# every figure and breakdown entry of stats --json is described (commands
# are SMB2's names; shares and unkeyed_by have none on an idle smbaccel)
names=$(echo "$out" | "$PY" -c '
import json, sys
for k, v in json.load(sys.stdin).items():
    print(k)
    if isinstance(v, dict) and k != "commands":
        print("\n".join(v))')
assert_ge 100 "$(echo "$names" | wc -l)" "names in stats --json"
for n in $names; do
	in_text "$n" "$T/smbaccelctl.8.txt" || fail "stats --json name $n is not in smbaccelctl.8"
done
# the watchdog: signs of life while the loop runs, none while it is
# stopped (SIGSTOP for 1.2 s, three watchdog periods), again after.  The
# pings are timed by their kernel timestamps (when sent), the stop and
# the resume by the clock just after SIGSTOP and just before SIGCONT
# (CLOCK_REALTIME, as the timestamps)
sleep 1.2
kill -STOP "$PROXY_PID"
# the stop takes effect when the daemon next leaves the kernel (later on a
# loaded machine, or after a write that blocked): the window starts once
# /proc shows it stopped
n=200
while [ $n -gt 0 ] && [ "$(awk '{print $3}' "/proc/$PROXY_PID/stat" 2>/dev/null)" != T ]; do
	sleep 0.01; n=$((n - 1))
done
[ $n -gt 0 ] || { kill -CONT "$PROXY_PID"; fail "smbaccel not stopped 2 s after SIGSTOP"; }
s0=$(date +%s.%N)
sleep 1.2
s1=$(date +%s.%N)
kill -CONT "$PROXY_PID"
sleep 1.5
# a grace of 0.6 s after the stop (SIGSTOP takes effect when the daemon
# next enters the kernel: a ping being sent may still go out); the window
# left spans three periods
wd=$(awk -v a="$s0" -v b="$s1" '$2 == "WATCHDOG=1" && $1 != "-" {
	if ($1 < a) before++; else if ($1 < a + 0.6) ; else if ($1 <= b) during++; else after++ }
	$1 == "-" { nots++ }
	END { printf "%d %d %d %d", before, during, after, nots }' "$T/notify.log.t")
read -r wd_before wd_during wd_after wd_nots <<< "$wd"
info "watchdog pings: $wd_before before the stop, $wd_during in its last 0.6 s, $wd_after in the 1.5 s after"
assert_eq 0 "$wd_nots" "notifications without a kernel timestamp"
assert_ge 3 "$wd_before" "WATCHDOG=1 in the 1.2 s before the stop"
assert_eq 0 "$wd_during" "WATCHDOG=1 while smbaccel was stopped"
assert_ge 2 "$wd_after" "WATCHDOG=1 in the 1.5 s after SIGCONT"
log_has 'systemd watchdog: a sign of life every 0\.20 s' || fail "no log line for the watchdog"
stop_proxy
assert_eq 0 "$PROXY_RC" "exit status after SIGTERM"
wait "$listener"
grep -qx 'STOPPING=1' "$T/notify.log" || { cat "$T/notify.log"; fail "no STOPPING=1 on SIGTERM"; }
info "notifications: $(tr '\n' ' ' < "$T/notify.log")"
# the control socket's directory is a regular file: refused at start
: > "$T/notadir"
CTL_SOCK=$T/notadir/control.sock PROXY_UPSTREAM=127.0.0.1:9 write_proxy_conf "$T/notadir.conf"
timeout 20 "$D/usr/sbin/smbaccel" -c "$T/notadir.conf" -f </dev/null >"$T/notadir.log" 2>&1
rc=$?
cat "$T/notadir.log"
assert_eq 1 "$rc" "exit status with the control socket's directory a regular file"
grep -q "$T/notadir exists and is not a directory" "$T/notadir.log" ||
    fail "no reason given for the control socket's directory being a regular file"

# ---- 7. reinstall keeps the policy
info "7. a second install keeps an edited policy"
echo "# edited by the administrator" >> "$D/etc/smbaccel/smbaccel.conf"
make -s install DESTDIR="$D" PREFIX=/usr >>"$T/install.log" 2>&1 || fail "second make install failed"
tail -n 1 "$D/etc/smbaccel/smbaccel.conf" | grep -q "edited by the administrator" ||
    fail "make install overwrote the edited policy file"

# ---- 8. uninstall
info "8. make uninstall"
make -s uninstall DESTDIR="$D" PREFIX=/usr >"$T/uninstall.log" 2>&1 ||
    { cat "$T/uninstall.log"; fail "make uninstall failed"; }
left=$(cd "$D" && find . -type f -printf '%P\n' | sort | grep -v '^usr/share/smbaccel/')
assert_eq "etc/smbaccel/smbaccel.conf" "$left" "files left after make uninstall (only the policy)"

# ---- 9. iptables.sh --port
info "9. deploy/iptables.sh checks --port (dry run, -n)"
for p in 0 65536 99999 123456 4x5; do
	for k in redirect tproxy; do
		out=$(sh deploy/iptables.sh $k add --port "$p" -n 2>&1)
		rc=$?
		assert_eq 2 "$rc" "iptables.sh $k add --port $p: exit status"
		echo "$out" | grep -q "bad --port $p" || fail "iptables.sh $k add --port $p: no reason given: $out"
		echo "$out" | grep -q 'tables ' && fail "iptables.sh $k add --port $p went on: $out"
	done
done
for p in 1 65535; do
	out=$(sh deploy/iptables.sh redirect add --port "$p" -n 2>&1) ||
	    fail "iptables.sh redirect add --port $p -n: $out"
	echo "$out" | grep -q -- "--to-ports $p\$" || fail "iptables.sh redirect add --port $p -n: $out"
done
info "PASS"
