#!/bin/bash
# test-timeout: 300
# A multichannel session: a client binds a second connection to its
# session and uses the files it opened on the first from there, as Windows
# does with the channels of one session (mc_bind.py, SMB 3.0, NTLM;
# smbd with server multi channel support).  smbaccel sees the binding on a
# connection that knows none of the first one's opens, so it must leave
# the session alone everywhere from then on: what it acknowledged on the
# first channel reaches the server before the binding is answered, and
# its read cache of the session's files is not served any more.
# Checked, directly against smbd and through smbaccel (write_behind and
# read_ahead = always, flush timers long enough that only the binding can
# send the data):
#  - the first channel's query for the server's network interfaces
#    (FSCTL_QUERY_NETWORK_INTERFACE_INFO) gets a list directly and under
#    multichannel = relay, STATUS_NOT_SUPPORTED from smbaccel under
#    multichannel = hide (counted: interface_queries_hidden);
#  - before the binding, smbaccel had absorbed the first channel's 1 KiB
#    writes and served reads from read-ahead (else the test proves
#    nothing);
#  - the second channel reads every byte the first wrote; the first reads
#    the second's overwrite of a region it had read ahead; the second reads
#    the first's append; the second closes the first's handles;
#  - the file on smbd's disk is what both channels wrote (sha256);
#  - the first channel's read-ahead copy is dropped at the binding
#    (ra_invalidations peer);
#  - smbaccel logged why it stopped acting on the session, counted it
#    (sessions_multichannel), and `conns` notes both connections
#    multichannel (`conns --json`: the session's "multichannel": true);
#  - no deferred error, no ledger error.
# Twice through smbaccel: an unsigned session under multichannel = relay,
# and under hide with the first channel signing every request and
# smbaccel holding the user's secret (a keyed session: signed writes
# absorbed; the binding relayed with the reason binding).
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/wb_lib.sh"
. "$TESTS_DIR/keyed_lib.sh"
require_smbaccel "multichannel sessions"
export WB_SMB_TIMEOUT=30

start_smbd "server multi channel support = yes"
head -c $((1024 * 1024)) /dev/urandom > "$SHARE_DIR/mc-read.bin"
chown "$SMB_USER" "$SHARE_DIR/mc-read.bin"

# run_bind PORT TAG [BEFORE [BOUND]]: mc_bind.py against PORT; BEFORE runs
# while the first channel waits before the binding, BOUND while both
# channels are up after it
run_bind() {
	local port=$1 tag=$2 out=$T/$2.out go=$T/$2.go pid rc want got
	bg "$PY" "$TESTS_DIR/mc_bind.py" "$port" "mc-$tag.bin" mc-read.bin "$go" > "$out" 2>&1
	pid=$!
	await READY; ${3:-true}; touch "$go"
	await BOUND; ${4:-true}; touch "$go.2"
	timeout 120 tail --pid=$pid -f /dev/null
	wait $pid; rc=$?
	sed 's/^/    /' "$out"
	[ $rc -eq 0 ] || fail "$tag: the channels did not see each other's data (above)"
	want=$(awk '$1 == "sha256" { print $3 }' "$out")
	got=$(sha256sum "$SHARE_DIR/mc-$tag.bin" | cut -d' ' -f1)
	[ -n "$want" ] && [ "$want" = "$got" ] ||
	    fail "$tag: mc-$tag.bin on smbd's disk is not what the channels wrote ($got, want $want)"
	info "$tag: both channels saw each other's data; mc-$tag.bin on disk as written"
}

# await WORD: until mc_bind.py ($pid, $out) says WORD
await() {
	local n=0
	while ! grep -q "^$1" "$out"; do
		kill -0 $pid 2>/dev/null || { sed 's/^/    /' "$out"; fail "$tag: mc_bind.py stopped before saying $1"; }
		n=$((n + 1)); [ $n -lt 600 ] || fail "$tag: mc_bind.py did not say $1 in 60 s"
		sleep 0.1
	done
}

run_bind "$SMBD_PORT" direct

PROXY_SHARE_SECTION=no start_proxy "multichannel = relay" "[share share]" \
    "write_behind = always" "read_ahead = always" "flush_idle = 30s" "flush_max_age = 60s"
before_bind() {
	local ab ra
	ab=$(stat_get writes_absorbed) ra=$(stat_get ra_hits)
	[ "$ab" -ge 100 ] || fail "only $ab writes absorbed before the binding: the test would prove nothing"
	[ "$ra" -gt 0 ] || fail "no read served by read-ahead before the binding: the test would prove nothing"
	[ "$(stat_get upstream_writes)" = 0 ] ||
	    fail "smbaccel sent writes before the binding: $(ctl stats | grep 'flush causes')"
	info "before the binding: $ab writes absorbed, none sent; $ra reads served by read-ahead"
}
# both connections carry the session, and say it is left alone
bound() {
	local j
	j=$(ctl conns --json | "$PY" -c '
import json, sys
n = 0
for c in json.load(sys.stdin)["conns"]:
    n += sum(1 for s in c["sessions"] if s["multichannel"])
print(n)')
	[ "$j" = 2 ] || fail "conns --json: $j connections with the session \"multichannel\": true, want 2"
	[ "$(ctl conns | grep -c ' multichannel$')" = 2 ] || fail "conns: not two connections noted multichannel"
	[ "$(stat_get ra_invalidations.peer)" -ge 1 ] || fail "the first channel's read-ahead copy was not dropped at the binding"
	info "both channels' connections say multichannel (conns, conns --json)"
}
after_bind() {
	grep -q "session=0x[0-9a-f]* bound to a second channel" "$PROXY_LOG" ||
	    fail "$1: smbaccel did not log that it stopped acting on the bound session"
	[ "$(stat_get sessions_multichannel)" = 1 ] || fail "$1: sessions_multichannel $(stat_get sessions_multichannel), want 1"
	[ "$(stat_get deferred_errors)" = 0 ] || fail "$1: deferred_errors $(stat_get deferred_errors)"
	[ "$(stat_get ledger_errors)" = 0 ] || fail "$1: ledger_errors $(stat_get ledger_errors)"
	stop_proxy
}
run_bind "$PROXY_PORT" proxy before_bind bound
[ "$(stat_get interface_queries_hidden)" = 0 ] ||
    fail "unsigned: the interface query was answered by smbaccel under multichannel = relay"
after_bind unsigned

# the same with channel A signing everything and smbaccel holding the
# user's secret: a keyed session (the binding itself is relayed unkeyed),
# and multichannel = hide (the default): the query for the server's
# interfaces answered NOT_SUPPORTED by smbaccel, signed; mc_bind.py binds
# all the same (as smbtorture's tests do, without asking)
h=$(nt_hash)
[ ${#h} -eq 32 ] || fail "no NT hash for $SMB_USER from pdbedit: '$h'"
write_secrets "$T/secrets" "$SMB_USER:nthash:$h"
PROXY_SHARE_SECTION=no start_proxy "secrets = $T/secrets" "[share share]" \
    "write_behind = always" "read_ahead = always" "flush_idle = 30s" "flush_max_age = 60s"
keyed() {
	ctl conns --json | "$PY" -c '
import json, sys
sys.exit(not any(s["keyed"] for c in json.load(sys.stdin)["conns"] for s in c["sessions"]))' ||
	    fail "keyed: smbaccel holds no key of the session (conns --json)"
	before_bind
}
bound_keyed() {
	bound
	ctl conns --json | "$PY" -c '
import json, sys
s = sorted((s["keyed"], s["why_not_keyed"]) for c in json.load(sys.stdin)["conns"] for s in c["sessions"])
sys.exit(s != [(False, "binding"), (True, "")])' ||
	    fail "keyed: not the first channel keyed and the second relayed with the reason binding (conns --json)"
}
MC_SIGN=1 MC_IFACES=hidden run_bind "$PROXY_PORT" keyed keyed bound_keyed
[ "$(stat_get interface_queries_hidden)" = 1 ] ||
    fail "keyed: interface_queries_hidden $(stat_get interface_queries_hidden), want 1"
after_bind keyed
info "PASS"
