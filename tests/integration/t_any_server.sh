#!/bin/bash
# test-timeout: 600
# Issue 16: a second SMB server implementation as the upstream: impacket's
# SMB server (start_impacket_server; SMB 2.0.2 only, 64 KiB limits, every
# answer signed once the session has a key, even to unsigned requests).
# The same workload runs directly against it ("direct", for comparison),
# through smbaccel with the default policy ("default", no share section)
# and with write_behind = always + read_ahead = always ("always"):
#  1. smbclient put + get of 16 MiB; the dialect smbclient negotiated (it
#     offers SMB2_02 .. SMB3_11) must be SMB2_02 (smbclient -d 5:
#     "negotiated dialect[SMB2_02]"); sha256 on the server's share
#     directory and of the copy read back equal the original's;
#  2. smbdd 4 MiB as 1 KiB writes, then smbdd verify with 4 KiB reads
#     (every byte and the size); the file on the server's disk equals the
#     one the direct run wrote;
#  3. a seeded random mix (smbdd mix, libsmbclient: writes of 1 B - 64 KiB,
#     sequential 4 KiB and random reads, growing truncations, fstat, close +
#     reopen) checked against a model of the file after every read; the
#     server's file equals the model.  Never a write starting past EOF nor a
#     shrinking truncation: this server acknowledges both and does neither
#     (README, "impacket's server");
#  4. small files: smbclient mput of 50 files of 1 B - 20 KiB into a new
#     directory, mget into another; every file on the server's disk and
#     every file read back equals its original;
#  5. through smbaccel: no connection closed by smbaccel (no "closed ...
#     reason=" line in its log, every closed.* counter of `smbaccelctl
#     stats --json` 0) and ledger_errors 0.
# Every case runs to the end; the test then fails listing every problem, the
# smbaccel log lines that explain a close included.  The server's behaviour
# at the edges (server_probe.py) is printed first, for the record.
. "$(dirname "$0")/lib.sh"

MIB=${ANY_MIB:-16}
DD_KIB=${ANY_DD_KIB:-4096}
MIX_OPS=${ANY_MIX_OPS:-1500}
NSMALL=${ANY_SMALL_FILES:-50}
SEED=${ANY_SEED:-$(( $(date +%s) % 100000 ))}
PROBS=$T/problems
: > "$PROBS"
problem() { echo "  PROBLEM: $*"; echo "$*" >> "$PROBS"; }

start_impacket_server
info "seed $SEED (ANY_SEED=$SEED reproduces the mix)"

info "what the server does at the edges (server_probe.py, informational):"
"$PY" "$TESTS_DIR/server_probe.py" "$IMP_PORT" share "$SMB_USER" "$SMB_PASS" > "$T/probe.out" 2>&1 ||
    { cat "$T/probe.out"; fail "server_probe.py could not log in to impacket's server directly"; }
sed 's/^/    /' "$T/probe.out"
# The premise of the read-ahead case: answers to unsigned requests are
# signed although the session does not require signing.
grep -q '^WRITE 64 KiB (unsigned request): WRITE SUCCESS .* valid$' "$T/probe.out" ||
    info "NOTE: this server did not sign the answer to an unsigned WRITE (the premise changed)"

random_file "$T/orig" "$MIB"
want=$(sha256 "$T/orig")
mkdir -p "$T/small"
for i in $(seq 1 "$NSMALL"); do
	head -c $(( (i * 7919 + SEED) % 20480 + 1 )) /dev/urandom > "$T/small/f$i.bin"
done
home=$(client_home any)

# smbcl PORT CMDS [args]: smbclient with the client's own config, every
# dialect from SMB2_02 to SMB3_11 offered (client_home's defaults).
smbcl() {
	local port=$1 cmds=$2; shift 2
	HOME=$home timeout -k 5 300 smbclient //127.0.0.1/share -p "$port" \
	    -s "$home/.smb/smb.conf" -U "$SMB_USER%$SMB_PASS" -c "$cmds" "$@"
}

# workload LABEL PORT: steps 1-4 against PORT; problems are recorded.
workload() {
	local l=$1 port=$2 t0 d out i
	info "$l: 1. smbclient put + get of $MIB MiB"
	t0=$(now)
	smbcl "$port" "put $T/orig $l-big; get $l-big $T/back-$l" -d 5 > "$T/$l.copy.out" 2>&1 ||
	    problem "$l: smbclient put/get failed: $(grep -m3 -E 'NT_STATUS|failed|error' "$T/$l.copy.out" | tr '\n' ' ')"
	info "  $(mbps $((2 * MIB * 1048576)) "$(elapsed "$t0")") MB/s"
	d=$(sed -n 's/.*negotiated dialect\[\([^]]*\)\].*/\1/p' "$T/$l.copy.out" | head -n 1)
	info "  smbclient negotiated dialect ${d:-?}"
	[ "$d" = SMB2_02 ] || problem "$l: smbclient negotiated dialect '${d:-none}', expected SMB2_02"
	[ "$(sha256 "$IMP_DIR/$l-big" 2>/dev/null)" = "$want" ] ||
	    problem "$l: sha256 of $l-big on the server's disk differs from the original"
	[ "$(sha256 "$T/back-$l" 2>/dev/null)" = "$want" ] ||
	    problem "$l: sha256 of $l-big read back differs from the original"

	info "$l: 2. smbdd $DD_KIB x 1 KiB writes, verify with 4 KiB reads"
	t0=$(now)
	if out=$(SMBC_HOME=$home smbdd_run write "$port" "$l-dd" 1K "$DD_KIB" -s "$SEED" -q -f -T 60 2>&1); then
		info "  writes: $(echo "$out" | tail -n 1 | cut -d' ' -f1-3)"
	else
		problem "$l: smbdd 1 KiB writes failed: $out"
	fi
	if out=$(SMBC_HOME=$home smbdd_run verify "$port" "$l-dd" 4K $((DD_KIB / 4)) -s "$SEED" -q -T 60 2>&1); then
		info "  reads:  $(echo "$out" | tail -n 1 | cut -d' ' -f1-3)"
	else
		problem "$l: smbdd verify (4 KiB reads) failed: $out"
	fi
	if [ "$l" != direct ] && [ -f "$IMP_DIR/direct-dd" ]; then
		cmp -s "$IMP_DIR/direct-dd" "$IMP_DIR/$l-dd" ||
		    problem "$l: $l-dd on the server's disk differs from direct-dd (the same pattern written directly)"
	fi

	info "$l: 3. seeded random mix, $MIX_OPS operations, against a model"
	out=$(SMBC_HOME=$home smbdd_run mix "$port" "$l-mix" 64K "$MIX_OPS" -s "$SEED" -G 0 -t grow \
	    -o "$T/$l.model" -T 60 2>&1) || problem "$l: mix failed: $(echo "$out" | grep -v '^bytes=' | tail -n 2)"
	echo "$out" | grep '^smbdd: mix' | sed 's/^/  /'
	[ -f "$T/$l.model" ] && { cmp -s "$T/$l.model" "$IMP_DIR/$l-mix" ||
	    problem "$l: $l-mix on the server's disk differs from the model"; }

	info "$l: 4. mput of $NSMALL small files, mget back"
	rm -rf "$T/small-back-$l"; mkdir -p "$T/small-back-$l"
	smbcl "$port" "prompt off; mkdir $l-small; cd $l-small; lcd $T/small; mput *; lcd $T/small-back-$l; mget *" \
	    > "$T/$l.small.out" 2>&1 ||
	    problem "$l: smbclient mput/mget failed: $(grep -m3 -E 'NT_STATUS|failed|error' "$T/$l.small.out" | tr '\n' ' ')"
	local bad_disk=0 bad_back=0
	for i in $(seq 1 "$NSMALL"); do
		cmp -s "$T/small/f$i.bin" "$IMP_DIR/$l-small/f$i.bin" || bad_disk=$((bad_disk + 1))
		cmp -s "$T/small/f$i.bin" "$T/small-back-$l/f$i.bin" || bad_back=$((bad_back + 1))
	done
	[ $bad_disk -eq 0 ] || problem "$l: $bad_disk of $NSMALL small files differ on the server's disk"
	[ $bad_back -eq 0 ] || problem "$l: $bad_back of $NSMALL small files read back differ"
}

# proxy_case LABEL [config lines...]: a fresh smbaccel to the server, the
# workload through it, then its closes.
proxy_case() {
	local l=$1 closes reasons n; shift
	PROXY_PORT= PROXY_LOG=$T/proxy-$l.log
	PROXY_SHARE_SECTION=no PROXY_UPSTREAM=127.0.0.1:$IMP_PORT start_proxy "$@"
	workload "$l" "$PROXY_PORT"
	is_smbaccel || { stop_proxy; return 0; }
	ctl stats --json > "$T/$l.stats.json" || problem "$l: smbaccelctl stats failed"
	closes=$("$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s=%d" % kv for kv in sorted(d.get("closed", {}).items()) if kv[1]))' "$T/$l.stats.json")
	reasons=$(grep -E 'closed client=.* reason=' "$PROXY_LOG")
	info "$l: closed.* counters: ${closes:-all 0}; ra_widened $(stat_get ra_widened), writes_absorbed $(stat_get writes_absorbed), upstream_writes $(stat_get upstream_writes), upstream_echoes $(stat_get upstream_echoes)"
	if [ -n "$closes" ] || [ -n "$reasons" ]; then
		n=$(echo "$reasons" | grep -c .)
		problem "$l: smbaccel closed $n connection(s) itself (stats closed: ${closes:-none})"
		echo "  smbaccel's log around those closes:"
		grep -E 'closed client=.* reason=|cannot sign|cannot-sign|passthrough|signed' "$PROXY_LOG" |
		    head -n 20 | sed 's/^/    /'
	fi
	n=$(stat_get ledger_errors)
	[ "$n" = 0 ] || problem "$l: ledger_errors $n"
	stop_proxy
	[ "${PROXY_RC:-0}" = 0 ] || problem "$l: smbaccel exit status $PROXY_RC after SIGTERM"
}

workload direct "$IMP_PORT"
proxy_case default
proxy_case always "[share share]" "write_behind = always" "read_ahead = always"

if [ -s "$PROBS" ]; then
	echo "---- $(wc -l < "$PROBS") problem(s):"
	sed 's/^/  /' "$PROBS"
	fail "$(wc -l < "$PROBS") problem(s) against impacket's server (listed above)"
fi
info "PASS"
