# tests/integration/lib.sh - common harness for integration tests (bash).
#
# Sourced by every tests/integration/t_*.sh.  A test exits 0 (pass), 1 (fail)
# or 77 (skip).  The harness gives each test:
#   - a private temporary directory $T, removed on exit;
#   - a private smbd on 127.0.0.1:$SMBD_PORT (start_smbd), shares [share]
#     ($SHARE_DIR) and [dur] ($DUR_DIR), user smbtest%testpass;
#   - the proxy on 127.0.0.1:$PROXY_PORT (start_proxy): bin/smbaccel, or
#     haproxy in TCP mode as a stand-in when PROXY_IMPL=haproxy;
#   - client helpers (smbc, smbdd_run) that each use their own $HOME;
#   - assertions (fail, assert_eq, ...) that show the daemon logs on failure.
# Everything started here is stopped by pid in cleanup(), even on failure:
# smbd by the pid in its pid directory (it runs in its own session, never
# with --no-process-group), everything else by the pid recorded at start.

set -u

TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$TESTS_DIR/../.." && pwd)
TEST_NAME=$(basename "$0" .sh)
PY=/usr/bin/python3
SMBACCEL=${SMBACCEL:-$TOP/bin/smbaccel}
SMBACCELCTL=${SMBACCELCTL:-$TOP/bin/smbaccelctl}
SMBDD=${SMBDD:-$TOP/bin/smbdd}
PROXY_IMPL=${PROXY_IMPL:-smbaccel}
RESULTS_DIR=${RESULTS_DIR:-}
SMB_USER=smbtest
SMB_PASS=testpass
SMB_USER2=smbtest2      # a second user (add_smb_user), same password
export PROXY_IMPL

T=$(mktemp -d "${TMPDIR:-/tmp}/smbaccel-$TEST_NAME.XXXXXX") || exit 1
chmod 0755 "$T"
SMBD_DIR=$T/smbd
SMBD_CONF=$SMBD_DIR/smb.conf
SMBD_LOG=$SMBD_DIR/log/smbd.log
SHARE_DIR=$T/share
DUR_DIR=$T/dur
PROXY_CONF=$T/smbaccel.conf
PROXY_LOG=$T/proxy.log
CTL_SOCK=$T/control.sock
CTL="$SMBACCELCTL -s $CTL_SOCK"
SMBD_PORT=
PROXY_PORT=
PROXY_PID=
SMBD_PID=
BG_PIDS=
NETNS_LIST=
PROXY_NETNS=
PROXY_WRAP=
export T SHARE_DIR DUR_DIR SMBD_PORT PROXY_PORT CTL CTL_SOCK

# Let run-all.sh find our leftovers if we are killed without cleanup.
[ -n "$RESULTS_DIR" ] && [ -d "$RESULTS_DIR" ] && echo "$T" > "$RESULTS_DIR/$TEST_NAME.tmpdir"

# ---------------------------------------------------------------- messages

info() { printf '%s [%s] %s\n' "$(date +%T)" "$TEST_NAME" "$*"; }

show_logs() {
	if [ -n "$PROXY_PORT" ] && [ -f "$PROXY_LOG" ]; then
		echo "---- last 30 lines of proxy log ($PROXY_IMPL) ----"
		tail -n 30 "$PROXY_LOG"
	fi
	if [ -f "$SMBD_LOG" ]; then
		echo "---- last 30 lines of smbd log ----"
		tail -n 30 "$SMBD_LOG"
	fi
	if [ -f "$IMP_LOG" ]; then
		echo "---- last 30 lines of impacket's server log ----"
		tail -n 30 "$IMP_LOG"
	fi
}

# fail MSG: report, show the logs, exit 1 (cleanup runs from the EXIT trap).
fail() {
	echo "FAIL [$TEST_NAME]: $*"
	show_logs
	exit 1
}

# skip MSG: exit 77.
skip() {
	echo "SKIP [$TEST_NAME]: $*"
	exit 77
}

assert_eq() {	# assert_eq EXPECTED ACTUAL WHAT
	[ "$1" = "$2" ] || fail "${3:-value}: expected '$1', got '$2'"
}

assert_ge() {	# assert_ge MIN ACTUAL WHAT   (integers)
	[ "$2" -ge "$1" ] 2>/dev/null || fail "${3:-value}: expected >= $1, got '$2'"
}

assert_file_eq() {	# assert_file_eq EXPECTED_FILE ACTUAL_FILE WHAT
	local a b
	[ -f "$2" ] || fail "${3:-file}: $2 does not exist"
	a=$(sha256 "$1"); b=$(sha256 "$2")
	[ "$a" = "$b" ] || fail "${3:-file}: sha256 $b of $2 differs from $a of $1"
}

sha256() { sha256sum "$1" | cut -d' ' -f1; }

# require_smbaccel WHAT: skip the rest when the stand-in relay is in use.
is_smbaccel() { [ "$PROXY_IMPL" = smbaccel ]; }
require_smbaccel() {
	is_smbaccel || skip "${1:-this test} needs bin/smbaccel (PROXY_IMPL=$PROXY_IMPL)"
}

# ---------------------------------------------------------------- cleanup

# descendants PID: the pids of PID's children, their children, and so on.
descendants() {
	ps -e -o pid=,ppid= | awk -v r="$1" '
		{ kids[$2] = kids[$2] " " $1 }
		END {
			n = split(kids[r], q, " ")
			for (i = 1; i <= n; i++) {
				print q[i]
				m = split(kids[q[i]], c, " ")
				for (j = 1; j <= m; j++) q[++n] = c[j]
			}
		}'
}

# stop_pid PID [SECONDS]: SIGTERM PID and everything below it in the
# process tree (a background subshell's command, say: `f ... &` for a
# shell function records the subshell's pid), wait, then SIGKILL.
stop_pid() {
	local pid=$1 n=$(( ${2:-5} * 10 )) tree p alive
	tree="$pid $(descendants "$pid")"
	kill -TERM $tree 2>/dev/null
	while [ $n -gt 0 ]; do
		alive=
		for p in $tree; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
		[ -n "$alive" ] || break
		sleep 0.1; n=$((n - 1))
	done
	[ -n "$alive" ] && kill -KILL $alive 2>/dev/null
	wait "$pid" 2>/dev/null
	BG_PIDS=" $BG_PIDS "
	BG_PIDS=${BG_PIDS// $pid / }
	return 0
}

smbd_pid_from_file() {
	local f
	for f in "$SMBD_DIR"/pid/*.pid; do
		[ -f "$f" ] && { tr -dc '0-9' < "$f"; return 0; }
	done
	return 1
}

# stop_smbd: SIGTERM the main smbd by its pid file; then anything left in
# its process group (children, samba-dcerpcd), again by pid.
stop_smbd() {
	local pid p n
	pid=${SMBD_PID:-$(smbd_pid_from_file)}
	[ -n "$pid" ] || return 0
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		n=100
		while [ $n -gt 0 ] && kill -0 "$pid" 2>/dev/null; do
			sleep 0.1; n=$((n - 1))
		done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	fi
	# smbd -D made itself a session (and group) leader: pgid == pid.
	for p in $(ps -e -o pid=,pgid= | awk -v g="$pid" '$2 == g && $1 != g {print $1}'); do
		kill -KILL "$p" 2>/dev/null
	done
	SMBD_PID=
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	local p
	# only a process that is still this shell's child: one that ended
	# (stopped by the test, or done) was reaped, and its pid may now be
	# anybody's
	for p in $BG_PIDS; do
		[ "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')" = "$BASHPID" ] &&
		    stop_pid "$p" 2
	done
	[ -n "${EXTRA_CLEANUP:-}" ] && $EXTRA_CLEANUP
	[ -n "$PROXY_PID" ] && stop_pid "$PROXY_PID" 5
	[ -n "$IMP_PID" ] && stop_pid "$IMP_PID" 5
	stop_smbd
	for p in $NETNS_LIST; do ip netns del "$p" 2>/dev/null; done
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -n "$RESULTS_DIR" ] && [ -d "$RESULTS_DIR" ]; then
		mkdir -p "$RESULTS_DIR/$TEST_NAME.logs"
		cp -f "$PROXY_LOG" "$PROXY_CONF" "$SMBD_CONF" "$RESULTS_DIR/$TEST_NAME.logs/" 2>/dev/null
		cp -rf "$SMBD_DIR/log" "$RESULTS_DIR/$TEST_NAME.logs/smbd-log" 2>/dev/null
		cp -f "$T"/*.log "$RESULTS_DIR/$TEST_NAME.logs/" 2>/dev/null
	fi
	if [ -n "${KEEP_TMP:-}" ]; then
		echo "kept $T"
	else
		rm -rf "$T"
	fi
	[ -n "$RESULTS_DIR" ] && rm -f "$RESULTS_DIR/$TEST_NAME.tmpdir"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# bg CMD...: run in the background, remember the pid for cleanup ($! is set).
bg() {
	"$@" &
	BG_PIDS="$BG_PIDS $!"
}

# ---------------------------------------------------------------- ports

# free_port: print an unused TCP port on 127.0.0.1 below the ephemeral
# range, never one handed out before in this test, nor one handed out to
# another test still running on this machine: tests run side by side
# (run-integration.sh's lanes, other checkouts), and a port probed free
# here can be taken by another test's smbd before ours binds it.  Every
# port handed out is recorded, with the pid of the test's shell, in
# PORT_REGISTRY (flock'ed); entries of tests that have ended are dropped.
PORT_REGISTRY=${PORT_REGISTRY:-/tmp/smbaccel-test-ports}
free_port() {
	"$PY" - "$T/.ports" "$PORT_REGISTRY" "$$" <<'EOF'
import fcntl, os, random, socket, sys
path, registry, owner = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    used = {int(x) for x in open(path).read().split()}
except FileNotFoundError:
    used = set()
fd = os.open(registry, os.O_RDWR | os.O_CREAT, 0o644)
with os.fdopen(fd, "r+") as reg:
    fcntl.flock(reg, fcntl.LOCK_EX)
    live = []
    for line in reg:
        f = line.split()
        if len(f) == 2 and f[0].isdigit() and f[1].isdigit() and os.path.exists("/proc/" + f[1]):
            live.append((int(f[0]), int(f[1])))
    taken = used | {p for p, _ in live}
    for _ in range(500):
        p = random.randint(20000, 32000)
        if p in taken:
            continue
        ok = True
        for addr in ("127.0.0.1", "0.0.0.0"):
            s = socket.socket()
            try:
                s.bind((addr, p))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok:
            break
    else:
        sys.exit(1)
    live.append((p, owner))
    reg.seek(0)
    reg.truncate()
    reg.write("".join("%d %d\n" % e for e in live))
open(path, "a").write("%d\n" % p)
print(p)
EOF
}

# port_open PORT [NETNS]: true if something accepts on 127.0.0.1:PORT.
port_open() {
	${2:+ip netns exec "$2"} timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# wait_port PORT SECONDS [PID [NETNS]]: wait until PORT accepts; false on
# timeout or when PID has died.
wait_port() {
	local port=$1 n=$(( $2 * 10 )) pid=${3:-} ns=${4:-}
	while [ $n -gt 0 ]; do
		port_open "$port" "$ns" && return 0
		[ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && return 1
		sleep 0.1; n=$((n - 1))
	done
	return 1
}

# make_netns: create a network namespace with only lo (up); its name is
# left in $NETNS.  Deleted by cleanup.  Nothing in it can reach another host.
make_netns() {
	NETNS=sa-$$-$RANDOM
	ip netns add "$NETNS" || skip "cannot create a network namespace"
	NETNS_LIST="$NETNS_LIST $NETNS"
	ip netns exec "$NETNS" ip link set lo up || fail "cannot bring up lo in $NETNS"
}

# in_netns_with_iptables: run this test again inside a namespace of
# make_netns (only lo: smbd, the proxy and the clients all run in it, so
# firewall rules touch nothing else) and exit with its status; in that run
# (NETNS_INNER set) return at once.  Skips without a working iptables.
in_netns_with_iptables() {
	[ -n "${NETNS_INNER:-}" ] && return 0
	command -v iptables >/dev/null || skip "iptables not installed"
	make_netns
	ip netns exec "$NETNS" iptables -S >/dev/null 2>&1 || skip "iptables does not work in a network namespace"
	ip netns exec "$NETNS" env NETNS_INNER=1 RESULTS_DIR= bash "$0"
	exit $?
}

# ---------------------------------------------------------------- Samba isolation
#
# A test's Samba programs must never meet a Samba daemon of the host (an AD
# DC's winbindd, say).  Two rules, both here so that every test shares them:
#  - every smb.conf a test writes, server or client, puts every directory
#    and socket Samba uses under the test's $T (samba_private_dirs);
#  - a Samba program that uses compiled-in paths whatever smb.conf says runs
#    in a private mount namespace with private directories over those paths
#    (private_samba_ns).  smbd is one: its winbind client (libwbclient, and
#    nss_winbind behind getpwuid) looks for winbindd only at
#    /run/samba/winbindd/pipe; "winbindd socket directory" moves only
#    winbindd's own socket.  With a host winbindd there, a test smbd mapped
#    smbtest's SID through the host's idmap ("getpwuid(3000017) failed",
#    NT_STATUS_LOGON_FAILURE).  tests/tools/with-host-samba simulates such a
#    host; t_host_samba runs tests under it.

# SAMBA_NS_PATHS: what private_samba_ns hides, as NAME:PATH (NAME is the
# private directory's name under the caller's DIR).
SAMBA_NS_PATHS="etc:/etc/samba run:/run/samba lib:/var/lib/samba cache:/var/cache/samba log:/var/log/samba"

# private_samba_ns DIR CMD [ARGS...]: run CMD in a private mount namespace
# (unshare -m --propagation private) in which DIR/etc, DIR/run, DIR/lib,
# DIR/cache and DIR/log (created empty if missing) are bind-mounted over
# /etc/samba, /run/samba, /var/lib/samba, /var/cache/samba and
# /var/log/samba.  A caller may put an smb.conf in DIR/etc first: it is then
# the namespace's default config.  PRIVATE_SAMBA_EXTRA="SRC:DST ..." adds
# bind mounts (absolute SRC, e.g. a krb5.conf over /etc/krb5.conf).
# CMD is exec'd in place (run in the background, $! is its pid); it sees
# the host's network namespace and every other path unchanged, and the
# namespace ends with the last process in it.  Generic: an AD DC test bed
# runs `samba` the same way.  Returns 126 if a mount fails.
private_samba_ns() {
	local dir=$1 m; shift
	for m in $SAMBA_NS_PATHS; do
		mkdir -p "$dir/${m%%:*}" || return 126
	done
	SAMBA_NS_PATHS=$SAMBA_NS_PATHS PRIVATE_SAMBA_EXTRA=${PRIVATE_SAMBA_EXTRA:-} \
	    unshare -m --propagation private -- /bin/sh -c '
		d=$1; shift
		for m in $SAMBA_NS_PATHS $PRIVATE_SAMBA_EXTRA; do
			src=${m%%:*} dst=${m#*:}
			case $src in /*) ;; *) src=$d/$src ;; esac
			# a path that does not exist holds nothing to hide
			[ -e "$dst" ] || continue
			mount --bind "$src" "$dst" ||
			    { echo "private_samba_ns: cannot bind $src over $dst" >&2; exit 126; }
		done
		unset SAMBA_NS_PATHS PRIVATE_SAMBA_EXTRA
		exec "$@"' private_samba_ns "$dir" "$@"
}

# samba_private_dirs DIR: print the smb.conf [global] lines that keep every
# state directory, socket and pid file of a Samba program (server or
# client) under DIR, creating the directories.  The one list every test
# smbd and every client config uses.
samba_private_dirs() {
	local d=$1 s
	for s in pid lock state cache private ncalrpc binddns winbindd usershares; do
		mkdir -p "$d/$s" || fail "cannot create $d/$s"
	done
	chmod 0700 "$d/private"
	cat <<EOF
	pid directory = $d/pid
	lock directory = $d/lock
	state directory = $d/state
	cache directory = $d/cache
	private dir = $d/private
	ncalrpc dir = $d/ncalrpc
	binddns dir = $d/binddns
	winbindd socket directory = $d/winbindd
	usershare path = $d/usershares
EOF
}

# smbd_ns CMD [ARGS...]: CMD inside the test smbd's private namespace
# ($SMBD_DIR/ns, whose /etc/samba/smb.conf is $SMBD_CONF).  Every Samba
# tool run on the test smbd's config (smbpasswd, pdbedit, testparm,
# smbstatus) goes through it: the same isolation as the smbd itself.
# TEST_SAMBA_ISOLATION=off runs them without it: only for t_host_samba's
# control run, which shows that the simulated host breaks a test smbd.
smbd_ns() {
	if [ "${TEST_SAMBA_ISOLATION:-on}" = off ]; then
		"$@"
		return
	fi
	mkdir -p "$SMBD_DIR/ns/etc" && ln -sf "$SMBD_CONF" "$SMBD_DIR/ns/etc/smb.conf" ||
	    fail "cannot prepare $SMBD_DIR/ns"
	private_samba_ns "$SMBD_DIR/ns" "$@"
}

# ---------------------------------------------------------------- smbd

# ensure_test_user: create smbtest once; tests starting side by side take
# turns (two useradd at once: "cannot lock /etc/passwd").
ensure_test_user() {
	local u=${1:-$SMB_USER}
	id "$u" >/dev/null 2>&1 && return 0
	flock /tmp/smbaccel-test-useradd.lock sh -c \
	    'id "$1" >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$1"' sh "$u" ||
	    id "$u" >/dev/null 2>&1 || fail "cannot create user $u"
}

# add_smb_user NAME: a Unix user NAME (ensure_test_user) in the test
# smbd's passdb, with password $SMB_PASS.
add_smb_user() {
	ensure_test_user "$1"
	printf '%s\n%s\n' "$SMB_PASS" "$SMB_PASS" |
	    smbd_ns smbpasswd -c "$SMBD_CONF" -s -a "$1" >"$SMBD_DIR/smbpasswd.$1.out" 2>&1 ||
	    { cat "$SMBD_DIR/smbpasswd.$1.out"; fail "smbpasswd -a $1 failed"; }
}

# write_smbd_conf [smb.conf lines for [global]...]: $SMBD_CONF for a
# private smbd: every directory under $SMBD_DIR (samba_private_dirs),
# tdbsam, shares [share] ($SHARE_DIR), [dur] ($DUR_DIR) and [alias]
# ($SHARE_DIR again: one directory through two shares).  It listens on
# SMBD_INTERFACES (default 127.0.0.1), port SMBD_LISTEN_PORT (default
# $SMBD_PORT), as SMBD_NETBIOS (default SMBACCELTEST).  Extra lines come
# last in [global] and override.
write_smbd_conf() {
	local l
	mkdir -p "$SMBD_DIR"/log "$SHARE_DIR" "$DUR_DIR" || fail "cannot create $SMBD_DIR"
	chown "$SMB_USER" "$SHARE_DIR" "$DUR_DIR"
	{
		cat <<EOF
[global]
	workgroup = SMBACCEL
	netbios name = ${SMBD_NETBIOS:-SMBACCELTEST}
	server role = standalone server
	interfaces = ${SMBD_INTERFACES:-127.0.0.1}
	bind interfaces only = yes
	smb ports = ${SMBD_LISTEN_PORT:-$SMBD_PORT}
	disable netbios = yes
EOF
		samba_private_dirs "$SMBD_DIR"
		cat <<EOF
	log file = $SMBD_LOG
	max log size = 0
	log level = ${SMBD_LOG_LEVEL:-1}
	passdb backend = tdbsam:$SMBD_DIR/private/passdb.tdb
	map to guest = never
	ea support = yes
	vfs objects = acl_xattr streams_xattr
	server min protocol = SMB2_02
	load printers = no
	printing = bsd
	printcap name = /dev/null
	disable spoolss = yes
	usershare max shares = 0
EOF
		for l in "$@"; do printf '\t%s\n' "$l"; done
		cat <<EOF

[share]
	path = $SHARE_DIR
	read only = no

[dur]
	path = $DUR_DIR
	read only = no
	kernel oplocks = no
	kernel share modes = no
	posix locking = no

[alias]
	path = $SHARE_DIR
	read only = no
EOF
	} > "$SMBD_CONF" || fail "cannot write $SMBD_CONF"
}

# launch_smbd [NETNS]: check $SMBD_CONF, add the test user to its passdb
# and start smbd on it in its private namespace (smbd_ns), and with NETNS
# in that network namespace.  The caller waits for the port and sets
# SMBD_PID (smbd_pid_from_file).
launch_smbd() {
	local netns=${1:-}
	smbd_ns testparm -s "$SMBD_CONF" >"$SMBD_DIR/testparm.out" 2>&1 ||
	    { cat "$SMBD_DIR/testparm.out"; fail "testparm rejects $SMBD_CONF"; }
	printf '%s\n%s\n' "$SMB_PASS" "$SMB_PASS" |
	    smbd_ns smbpasswd -c "$SMBD_CONF" -s -a "$SMB_USER" >"$SMBD_DIR/smbpasswd.out" 2>&1 ||
	    { cat "$SMBD_DIR/smbpasswd.out"; fail "smbpasswd failed"; }
	# -D: daemon in its own session.  Never --no-process-group (SMB-NOTES).
	smbd_ns ${netns:+ip netns exec "$netns"} smbd -s "$SMBD_CONF" -D \
	    </dev/null >"$SMBD_DIR/smbd.stdout" 2>&1 ||
	    fail "smbd did not start: $(cat "$SMBD_DIR/smbd.stdout")"
}

# start_smbd [smb.conf lines for [global]...]: a private smbd on
# 127.0.0.1:$SMBD_PORT (write_smbd_conf, launch_smbd).
start_smbd() {
	ensure_test_user
	SMBD_PORT=$(free_port) || fail "no free port for smbd"
	export SMBD_PORT
	write_smbd_conf "$@"
	launch_smbd
	wait_port "$SMBD_PORT" 20 || fail "smbd is not accepting on port $SMBD_PORT"
	SMBD_PID=$(smbd_pid_from_file) || fail "smbd wrote no pid file"
	info "smbd pid $SMBD_PID on 127.0.0.1:$SMBD_PORT"
}

# start_smbd_users SHARES: start_smbd's private smbd with the second user
# $SMB_USER2 in its passdb too, and the smb.conf share sections SHARES
# after the standard ones (a share whose path is the user's: path =
# DIR/%U, each user's directory made by the caller).
start_smbd_users() {
	ensure_test_user
	ensure_test_user "$SMB_USER2"
	SMBD_PORT=$(free_port) || fail "no free port for smbd"
	export SMBD_PORT
	write_smbd_conf
	printf '\n%s\n' "$1" >> "$SMBD_CONF" || fail "cannot write $SMBD_CONF"
	add_smb_user "$SMB_USER2"
	launch_smbd
	wait_port "$SMBD_PORT" 20 || fail "smbd is not accepting on port $SMBD_PORT"
	SMBD_PID=$(smbd_pid_from_file) || fail "smbd wrote no pid file"
	info "smbd pid $SMBD_PID on 127.0.0.1:$SMBD_PORT, users $SMB_USER and $SMB_USER2"
}

# ---------------------------------------------------------------- impacket's server

# start_impacket_server [SHARE]: a second SMB server implementation as the
# upstream: impacket's SMB server (Debian python3-impacket 0.10,
# examples/smbserver.py -smb2support) on 127.0.0.1:$IMP_PORT (a private
# port), share SHARE (default "share") on the private directory $IMP_DIR,
# user smbtest%testpass, debug log in $IMP_LOG (kept with a failed test's
# logs).  Stopped by cleanup (IMP_PID).  What it does differently from smbd
# (SMB 2.0.2 only with 64 KiB limits, every answer signed once the session
# has a key, ...) is listed in tests/integration/README.md.
IMP_SERVER=${IMP_SERVER:-/usr/share/doc/python3-impacket/examples/smbserver.py}
IMP_PORT= IMP_PID= IMP_DIR=$T/impacket-share IMP_LOG=$T/impacket.log
start_impacket_server() {
	[ -f "$IMP_SERVER" ] || skip "impacket's smbserver.py not found at $IMP_SERVER (python3-impacket)"
	IMP_PORT=$(free_port) || fail "no free port for impacket's server"
	export IMP_PORT
	mkdir -p "$IMP_DIR" || fail "cannot create $IMP_DIR"
	# -u: its log is complete when the test reads it
	"$PY" -u "$IMP_SERVER" -smb2support -ts -debug -ip 127.0.0.1 -port "$IMP_PORT" \
	    -username "$SMB_USER" -password "$SMB_PASS" "${1:-share}" "$IMP_DIR" \
	    </dev/null >>"$IMP_LOG" 2>&1 &
	IMP_PID=$!
	wait_port "$IMP_PORT" 20 "$IMP_PID" ||
	    { tail -n 20 "$IMP_LOG"; fail "impacket's server is not accepting on port $IMP_PORT"; }
	info "impacket smbserver pid $IMP_PID on 127.0.0.1:$IMP_PORT, share ${1:-share} = $IMP_DIR"
}

# ---------------------------------------------------------------- proxy

# write_proxy_conf FILE [lines...]: the minimal smbaccel config, then the
# extra lines; a [share share] section with write_behind = always is added
# unless PROXY_SHARE_SECTION=no.  PROXY_UPSTREAM overrides the upstream.
write_proxy_conf() {
	local f=$1 l; shift
	{
		echo "[global]"
		echo "listen = 127.0.0.1:$PROXY_PORT"
		echo "upstream = ${PROXY_UPSTREAM:-127.0.0.1:$SMBD_PORT}"
		echo "mode = forward"
		echo "control_socket = $CTL_SOCK"
		for l in "$@"; do echo "$l"; done
		if [ "${PROXY_SHARE_SECTION:-yes}" != no ]; then
			echo ""
			echo "[share share]"
			echo "write_behind = always"
		fi
	} > "$f"
}

write_haproxy_conf() {
	local up=${PROXY_UPSTREAM:-127.0.0.1:$SMBD_PORT}
	cat > "$PROXY_CONF" <<EOF
global
	log stderr format raw local0 info
	maxconn 1000
defaults
	mode tcp
	log global
	option tcplog
	timeout connect ${HAPROXY_CONNECT_TIMEOUT:-5s}
	retries 0
	timeout client 10m
	timeout server 10m
frontend smb
	bind 127.0.0.1:$PROXY_PORT
	default_backend up
backend up
	server up $up
EOF
}

# start_proxy [extra config lines...]: start the proxy (PROXY_IMPL) in the
# foreground, logging to $PROXY_LOG; waits until it accepts.  With
# PROXY_NETNS set it runs inside that network namespace; PROXY_START_WAIT:
# seconds to wait for it to accept (default 10).
start_proxy() {
	local nsx= log0=0
	[ -n "$PROXY_NETNS" ] && nsx="ip netns exec $PROXY_NETNS"
	[ -n "$PROXY_PORT" ] || PROXY_PORT=$(free_port) || fail "no free port for proxy"
	export PROXY_PORT
	case $PROXY_IMPL in
	smbaccel)
		[ -x "$SMBACCEL" ] || fail "$SMBACCEL not built (run make, or PROXY_IMPL=haproxy)"
		write_proxy_conf "$PROXY_CONF" "$@"
		[ -f "$PROXY_LOG" ] && log0=$(wc -l < "$PROXY_LOG")
		$nsx $PROXY_WRAP "$SMBACCEL" -c "$PROXY_CONF" -f </dev/null >>"$PROXY_LOG" 2>&1 &
		PROXY_PID=$!
		;;
	haproxy)
		write_haproxy_conf
		$nsx haproxy -f "$PROXY_CONF" -db </dev/null >>"$PROXY_LOG" 2>&1 &
		PROXY_PID=$!
		;;
	*)	fail "unknown PROXY_IMPL=$PROXY_IMPL" ;;
	esac
	wait_port "$PROXY_PORT" "${PROXY_START_WAIT:-10}" "$PROXY_PID" "$PROXY_NETNS" ||
	    fail "$PROXY_IMPL is not accepting on port $PROXY_PORT"
	# wait_port's probe is a connection too: smbaccel accepts and logs it
	# after the probe has returned.  Wait (5 s at most) until it has logged
	# the probe's close, so that a test counting "accepted client" lines
	# counts only its clients' connections.
	[ "$PROXY_IMPL" = smbaccel ] && { wait_log ' closed client=' 5 "$log0" || true; }
	info "$PROXY_IMPL pid $PROXY_PID on 127.0.0.1:$PROXY_PORT -> ${PROXY_UPSTREAM:-127.0.0.1:$SMBD_PORT}"
}

# stop_proxy: SIGTERM and wait; sets PROXY_RC to its exit status.
stop_proxy() {
	PROXY_RC=
	[ -n "$PROXY_PID" ] || return 0
	kill -TERM "$PROXY_PID" 2>/dev/null
	local n=100
	while [ $n -gt 0 ] && kill -0 "$PROXY_PID" 2>/dev/null; do
		sleep 0.1; n=$((n - 1))
	done
	kill -0 "$PROXY_PID" 2>/dev/null && kill -KILL "$PROXY_PID" 2>/dev/null
	wait "$PROXY_PID" 2>/dev/null
	PROXY_RC=$?
	PROXY_PID=
}

proxy_alive() { [ -n "$PROXY_PID" ] && kill -0 "$PROXY_PID" 2>/dev/null; }

# ctl ARGS...: bin/smbaccelctl on this test's control socket.
ctl() { "$SMBACCELCTL" -s "$CTL_SOCK" "$@"; }

# stat_get JSON_PATH: one number from `smbaccelctl stats --json`, e.g.
# stat_get opaque.smb1 (0 when the key is absent).
stat_get() {
	ctl stats --json | "$PY" -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v.get(k, 0) if isinstance(v, dict) else 0
print(v if v is not None else 0)' "$1"
}

# proxy_rss_kb: VmRSS of the proxy process in KiB.
proxy_rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$PROXY_PID/status"; }

# proc_wakeups PID: how often the process was put on a CPU (the third field
# of each thread's schedstat): about one per wake-up from epoll_wait.
proc_wakeups() { cat /proc/"$1"/task/*/schedstat | awk '{ t += $3 } END { printf "%.0f", t }'; }
# proc_cpu_ns PID: its CPU time in nanoseconds (schedstat's first field:
# exact, where /proc/PID/stat's utime and stime are 10 ms samples).
proc_cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ t += $1 } END { printf "%.0f", t }'; }
# proc_user_sys PID: "utime stime" of the process in clock ticks
# (/proc/PID/stat fields 14 and 15; the part after the command name, which
# ends with ") ", starts at field 3)
proc_user_sys() { sed 's/^.*) //' /proc/"$1"/stat | awk '{ print $12, $13 }'; }

# ---------------------------------------------------------------- clients

# client_home NAME [smb.conf lines...]: make $T/home-NAME/.smb/smb.conf and
# print the HOME path.  libsmbclient reads $HOME/.smb/smb.conf (and then
# not the system's smb.conf); smbclient and smbtorture read only the file
# given with -s / --configfile: pass them "$HOME/.smb/smb.conf" too
# (smbc does).  Its directories are private (samba_private_dirs under
# HOME/.smb/samba): a client must not use the host's gencache, lock
# directory or sockets either.
client_home() {
	local h=$T/home-$1 l; shift
	mkdir -p "$h/.smb"
	{
		echo "[global]"
		echo "	client min protocol = SMB2_02"
		echo "	client max protocol = SMB3_11"
		echo "	client use kerberos = off"
		echo "	client signing = default"
		echo "	client smb encrypt = default"
		echo "	workgroup = SMBACCEL"
		echo "	log level = 1"
		samba_private_dirs "$h/.smb/samba"
		for l in "$@"; do echo "	$l"; done
	} > "$h/.smb/smb.conf"
	echo "$h"
}

# smbc PORT PROTO COMMANDS [smbclient args...]: smbclient on //127.0.0.1/share
# (SMBC_SHARE overrides), forcing the dialect PROTO as both min and max.
smbc() {
	local port=$1 proto=$2 cmds=$3; shift 3
	local home=${SMBC_HOME:-$(client_home default)}
	# CMDS "-": the commands come on standard input, as they are written
	[ "$cmds" = - ] || set -- -c "$cmds" "$@"
	HOME=$home smbclient "//127.0.0.1/${SMBC_SHARE:-share}" -p "$port" \
	    -s "$home/.smb/smb.conf" -U "$SMB_USER%$SMB_PASS" -m "$proto" \
	    --option="client min protocol=$proto" \
	    --option="client max protocol=$proto" \
	    "$@"
}

# smb_url PORT PATH: URL for smbdd (libsmbclient).
smb_url() { echo "smb://127.0.0.1:$1/${SMBC_SHARE:-share}/$2"; }

# smbdd_run write|read PORT PATH BLOCK COUNT [args...]
smbdd_run() {
	local op=$1 port=$2 path=$3 bs=$4 count=$5; shift 5
	[ -x "$SMBDD" ] || fail "$SMBDD not built"
	local home=${SMBC_HOME:-$(client_home smbdd)}
	HOME=$home "$SMBDD" "$op" "$(smb_url "$port" "$path")" "$bs" "$count" \
	    -U "$SMB_USER%$SMB_PASS" "$@"
}

# random_file PATH MIB: PATH gets MIB MiB of random bytes.
random_file() {
	head -c "$(( $2 * 1048576 ))" /dev/urandom > "$1" || fail "cannot create $1"
}

# log_has REGEX: the proxy log has a matching line.
log_has() { grep -Eq -- "$1" "$PROXY_LOG"; }

# conn_of_client PORT: the smbaccel conn id of the client connection from
# 127.0.0.1:PORT (from its "conn=N accepted client=..." line), or nothing.
conn_of_client() {
	sed -n "s/.*conn=\([0-9][0-9]*\) accepted client=127\.0\.0\.1:$1\( .*\)\{0,1\}\$/\1/p" "$PROXY_LOG" | tail -n 1
}

# wait_log REGEX SECONDS [AFTER]: wait until the proxy log has a line
# matching REGEX (past its first AFTER lines, if given)
wait_log() {
	local n=$(( $2 * 10 )) after=${3:-0}
	while [ $n -gt 0 ]; do
		tail -n +"$((after + 1))" "$PROXY_LOG" | grep -Eq -- "$1" && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}

# listen_overflows [NETNS]: connections the kernel (of NETNS) dropped at a
# full listen backlog so far (TcpExt ListenOverflows)
listen_overflows() {
	${1:+ip netns exec "$1"} awk '$1 == "TcpExt:" {
		if (!h) { for (i = 2; i <= NF; i++) k[i] = $i; h = 1 }
		else for (i = 2; i <= NF; i++) if (k[i] == "ListenOverflows") print $i }' /proc/net/netstat
}

# mbps BYTES SECONDS
mbps() { awk -v b="$1" -v s="$2" 'BEGIN { if (s <= 0) s = 0.001; printf "%.1f", b / s / 1e6 }'; }

# now: seconds since the epoch with fractions.
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
