#!/bin/bash
# test-timeout: 180
# The upstream socket's server settings against the kernel (no WAN needed:
# smbd and smbaccel on 127.0.0.1):
#  1. smbaccel -t: upstream_congestion naming an algorithm this kernel
#     lacks (one of the kernel's real algorithm names missing from
#     tcp_available_congestion_control, and a made-up name) fails with
#     FILE:LINE, the name and the available list, in [global] and in a
#     [//server/share] section; auto, system, reno pass;
#  2. run time: the daemon started with a name the kernel lacks still
#     serves (smbclient works), logs "fallback=yes ... refused by the
#     kernel" for the connection and conns shows fallback true and what
#     the socket really got;
#  3. per server: [//127.0.0.1/share] upstream_congestion = reno applies to
#     connections to 127.0.0.1 ([global] stays auto); upstream_sndbuf and
#     upstream_rcvbuf are granted (logged "got", conns);
#  4. without CAP_NET_ADMIN (setpriv): an algorithm that is available but
#     not in tcp_allowed_congestion_control, and a buffer above
#     net.core.wmem_max, fail -t with the reason; the daemon started so
#     logs the fallback and the capped buffer, and still serves.
. "$(dirname "$0")/lib.sh"

require_smbaccel "upstream_congestion"
AVAIL=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)
ALLOWED=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
DEFAULT=$(cat /proc/sys/net/ipv4/tcp_congestion_control)
WMEM_MAX=$(cat /proc/sys/net/core/wmem_max)
info "available: $AVAIL; allowed: $ALLOWED; default: $DEFAULT; wmem_max $WMEM_MAX"
in_words() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }
missing=
for a in vegas westwood htcp hybla illinois dctcp highspeed scalable lp veno yeah nv cdg; do
	in_words "$a" "$AVAIL" || { missing=$a; break; }
done

start_smbd
PROXY_PORT=$(free_port) || fail "no free port"
check() {	# check EXPECT(ok|fail) [config lines...]: smbaccel -t; output in $OUT
	local want=$1; shift
	write_proxy_conf "$T/check.conf" "$@"
	OUT=$(${CHECK_AS:-} "$SMBACCEL" -t -c "$T/check.conf" 2>&1)
	local rc=$?
	if [ "$want" = ok ]; then
		[ $rc -eq 0 ] || fail "smbaccel -t refused [$*]: $OUT"
	else
		[ $rc -ne 0 ] || fail "smbaccel -t accepted [$*]: $OUT"
	fi
}

# ---- 1. -t
info "1. smbaccel -t"
if [ -n "$missing" ]; then
	check fail "upstream_congestion = $missing"
	info "-t: $OUT"
	grep -qF "check.conf:6: upstream_congestion = $missing in [global]: this kernel has no congestion control '$missing' (/proc/sys/net/ipv4/tcp_available_congestion_control: $AVAIL)" <<<"$OUT" ||
	    fail "unclear -t message for $missing: $OUT"
else
	info "every algorithm name tried is available here; only the made-up name is checked"
fi
check fail "" "[//127.0.0.1/other]" "upstream_congestion = nosuchcc0"
grep -qF "check.conf:8: upstream_congestion = nosuchcc0 in [//127.0.0.1/other]: this kernel has no congestion control 'nosuchcc0'" <<<"$OUT" ||
    fail "unclear -t message for a section: $OUT"
check fail "upstream_congestion = BBR"
grep -qF "is not a congestion control name" <<<"$OUT" || fail "unclear -t message for BBR: $OUT"
for v in auto system reno; do
	check ok "upstream_congestion = $v"
done

# ---- 2. run time: a name the kernel lacks
info "2. the daemon with upstream_congestion = nosuchcc0"
start_proxy "upstream_congestion = nosuchcc0"
smbc "$PROXY_PORT" SMB3_11 "ls" >"$T/ls.out" 2>&1 || { cat "$T/ls.out"; fail "smbclient through smbaccel failed"; }
wait_log "upstream congestion=$DEFAULT fallback=yes upstream_congestion=nosuchcc0 refused by the kernel: " 5 ||
    fail "no fallback log line"
info "log: $(grep -m1 'fallback=yes' "$PROXY_LOG" | sed 's/^[0-9:.]* //')"
mkfifo "$T/cmd.fifo"
exec 7<>"$T/cmd.fifo"
SMBC_HOME=$(client_home live)
HOME=$SMBC_HOME smbclient //127.0.0.1/share -p "$PROXY_PORT" -U "$SMB_USER%$SMB_PASS" \
    <"$T/cmd.fifo" >"$T/live.out" 2>&1 &
live_pid=$!
BG_PIDS="$BG_PIDS $live_pid"
echo ls >&7
live_cc() {	# live_cc: "congestion setting fallback sndbuf" of the first live connection
	local r= _
	for _ in $(seq 50); do
		r=$(ctl conns --json | "$PY" -c '
import json, sys
for c in json.load(sys.stdin)["conns"]:
    u = c.get("upstream_tcp")
    if u:
        print(u["congestion"], u["congestion_setting"], str(u["fallback"]).lower(), u["sndbuf"], u["rtt_ms"]); break') &&
		    [ -n "$r" ] && break
		sleep 0.1
	done
	echo "$r"
}
set -- $(live_cc)
assert_eq "$DEFAULT nosuchcc0 true" "$1 $2 $3" "conns: congestion, setting, fallback"
ctl conns | sed 's/^/    /'
echo quit >&7
stop_pid "$live_pid" 5
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status"

# ---- 3. per server, buffers
info "3. [//127.0.0.1/share] upstream_congestion = reno; buffers"
: > "$PROXY_LOG"
start_proxy "upstream_sndbuf = 1M" "" "[//127.0.0.1/share]" "upstream_congestion = reno" \
    "upstream_rcvbuf = 2M"
smbc "$PROXY_PORT" SMB3_11 "ls" >"$T/ls.out" 2>&1 || { cat "$T/ls.out"; fail "smbclient failed"; }
wait_log "upstream congestion=reno sndbuf=1048576\(got 1048576\) rcvbuf=2097152\(got 2097152\)" 5 ||
    fail "no 'upstream congestion=reno' line with both buffers granted: $(grep upstream "$PROXY_LOG")"
log_has "smbaccel\[warn\]" && fail "warnings with granted settings: $(grep warn "$PROXY_LOG")"
stop_proxy

# ---- 4. without CAP_NET_ADMIN
refused=
for a in $AVAIL; do in_words "$a" "$ALLOWED" || { refused=$a; break; }; done
if ! command -v setpriv >/dev/null; then
	info "4. skipped: no setpriv"
else
	info "4. without CAP_NET_ADMIN (algorithm available but not allowed: ${refused:-none})"
	CHECK_AS="setpriv --bounding-set=-net_admin --"
	big=$((WMEM_MAX * 2))
	check fail "upstream_sndbuf = $big"
	grep -qF "check.conf:6: upstream_sndbuf = $big in [global]: the kernel gives smbaccel only $WMEM_MAX bytes (net.core.wmem_max = $WMEM_MAX" <<<"$OUT" ||
	    fail "unclear -t message for a capped buffer: $OUT"
	if [ -n "$refused" ]; then
		check fail "upstream_congestion = $refused"
		grep -qF "upstream_congestion = $refused in [global]: the kernel refuses it to smbaccel: Operation not permitted (without CAP_NET_ADMIN only $ALLOWED may be set" <<<"$OUT" ||
		    fail "unclear -t message for a refused algorithm: $OUT"
	fi
	check ok "upstream_congestion = auto"
	: > "$PROXY_LOG"
	SMBACCEL_REAL=$SMBACCEL
	SMBACCEL=$T/smbaccel-nocap
	printf '#!/bin/sh\nexec setpriv --bounding-set=-net_admin -- %s "$@"\n' "$SMBACCEL_REAL" > "$SMBACCEL"
	chmod +x "$SMBACCEL"
	start_proxy "upstream_sndbuf = $big" ${refused:+"upstream_congestion = $refused"}
	smbc "$PROXY_PORT" SMB3_11 "ls" >"$T/ls.out" 2>&1 || { cat "$T/ls.out"; fail "smbclient failed"; }
	wait_log "upstream_sndbuf=$big: the kernel gave $WMEM_MAX " 5 || fail "no log line for the capped buffer"
	if [ -n "$refused" ]; then
		wait_log "fallback=yes upstream_congestion=$refused refused by the kernel: Operation not permitted" 5 ||
		    fail "no fallback log line for $refused without CAP_NET_ADMIN"
	fi
	grep -E 'upstream' "$PROXY_LOG" | sed 's/^[0-9:.]* /    /'
	stop_proxy
	SMBACCEL=$SMBACCEL_REAL
fi
info "PASS"
