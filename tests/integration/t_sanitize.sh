#!/bin/bash
# sanitizer: no (builds and runs bin-san itself, with stricter options)
# test-timeout: 900
# ASan + UBSan: builds `make SANITIZE=1` (build-san/, bin-san/; bin/ is
# untouched) and runs, with ASAN_OPTIONS/UBSAN_OPTIONS set to abort on the
# first error and log to files under $T/san:
#  1. bin-san/unit-tests;
#  2. bin-san/smbaccel with write_behind = always and read_ahead = always:
#     smbdd 1 KiB writes + 4 KiB verified reads at SMB3_11, SMB2_10,
#     SMB2_02 (disk sha256 equal to the direct write of the same pattern);
#     smbclient put/get at SMB3_11 and SMB2_02; garbage.py (malformed
#     frames); SIGTERM: exit status 0, and LeakSanitizer at exit;
#  3. SIGTERM drain: a client with absorbed writes still buffered
#     (flush_idle = 30s) when SIGTERM comes: the daemon writes them, exits
#     0, the file on disk is what the client wrote;
#  4. other integration tests with SMBACCEL=bin-san/smbaccel
#     (SANITIZE_TESTS, default none: `make check` already runs the whole
#     suite against bin-san/smbaccel, see tests/run-integration.sh).
# Any sanitizer report (a file in $T/san, or in a nested test's) fails.
. "$(dirname "$0")/lib.sh"
require_smbaccel "sanitizer build of bin/smbaccel"

SANITIZE_TESTS=${SANITIZE_TESTS:-}
SAN=$TOP/bin-san
t0=$(now)
make -C "$TOP" SANITIZE=1 -j2 all > "$T/build.log" 2>&1 ||
    { tail -n 40 "$T/build.log"; fail "make SANITIZE=1 failed"; }
[ -x "$SAN/smbaccel" ] || fail "make SANITIZE=1 did not produce $SAN/smbaccel"
cmp -s "$SAN/smbaccel" "$TOP/bin/smbaccel" && fail "bin-san/smbaccel is bin/smbaccel"
info "sanitizer build in $(elapsed "$t0") s"

mkdir -p "$T/san"
export ASAN_OPTIONS="log_path=$T/san/asan:abort_on_error=1:halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1"
export UBSAN_OPTIONS="log_path=$T/san/ubsan:halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="log_path=$T/san/lsan"

# san_check WHAT: fail if a sanitizer wrote a report
san_check() {
	local f found=
	for f in "$T"/san/*; do
		[ -f "$f" ] || continue
		found=1
		echo "==== sanitizer report $f"
		head -n 60 "$f"
	done
	[ -z "$found" ] || fail "sanitizer report during: $1"
}

# 1. unit tests
# (without detect_stack_use_after_return, which makes them 7 times slower)
ASAN_OPTIONS=${ASAN_OPTIONS/:detect_stack_use_after_return=1/} \
    "$SAN/unit-tests" > "$T/unit.log" 2>&1 || { tail -n 30 "$T/unit.log"; fail "bin-san/unit-tests failed"; }
san_check "unit tests"
info "1. unit tests clean under ASan+UBSan"

# 2. data paths with write-behind and read-ahead
SMBACCEL=$SAN/smbaccel
start_smbd
start_proxy "read_ahead = always"
seed=$((RANDOM * 32768 + RANDOM + 1))
for d in SMB3_11 SMB2_10 SMB2_02; do
	out=$(smbdd_run write "$PROXY_PORT" "p-$d" 1K 4096 -m "$d" -s "$seed" -q -f 2>&1) ||
	    fail "smbdd write via the sanitized proxy ($d): $out"
	out=$(smbdd_run write "$SMBD_PORT" "d-$d" 1K 4096 -m "$d" -s "$seed" -q 2>&1) ||
	    fail "smbdd write direct ($d): $out"
	assert_eq "$(sha256 "$SHARE_DIR/d-$d")" "$(sha256 "$SHARE_DIR/p-$d")" "$d: disk sha256, proxied vs direct"
	out=$(smbdd_run verify "$PROXY_PORT" "p-$d" 4K 1024 -m "$d" -s "$seed" -q 2>&1) ||
	    fail "smbdd 4 KiB verify via the sanitized proxy ($d): $out"
	echo "  $d: 4 MiB in 1 KiB writes and 4 KiB reads: ok"
done
absorbed=$(stat_get writes_absorbed)
hits=$(stat_get ra_hits)
info "writes absorbed $absorbed, read-ahead hits $hits"
assert_ge 1 "$absorbed" "writes absorbed (write-behind path exercised)"
assert_ge 1 "$hits" "read-ahead hits (read-ahead path exercised)"
random_file "$T/orig" 8
for d in SMB3_11 SMB2_02; do
	rm -f "$T/back"
	smbc "$PROXY_PORT" "$d" "put $T/orig c-$d; get c-$d $T/back" > "$T/smbc.out" 2>&1 ||
	    { cat "$T/smbc.out"; fail "smbclient put/get $d via the sanitized proxy"; }
	assert_eq "$(sha256 "$T/orig")" "$(sha256 "$SHARE_DIR/c-$d")" "smbclient $d: disk"
	assert_eq "$(sha256 "$T/orig")" "$(sha256 "$T/back")" "smbclient $d: read back"
	echo "  $d: smbclient put/get 8 MiB: ok"
done
"$PY" "$TESTS_DIR/garbage.py" "$PROXY_PORT" "$PROXY_LOG" > "$T/garbage.out" 2>&1 ||
    { cat "$T/garbage.out"; fail "garbage.py against the sanitized proxy"; }
echo "  garbage.py: $(grep -c . "$T/garbage.out") lines, all cases closed or answered"
proxy_alive || { san_check "data paths"; fail "sanitized proxy died"; }
stop_proxy
san_check "data paths, garbage frames, SIGTERM"
assert_eq 0 "$PROXY_RC" "sanitized daemon exit status after SIGTERM"
info "2. data paths, garbage and SIGTERM clean"

# 3. SIGTERM drain with buffered writes
: > "$PROXY_LOG"
start_proxy "read_ahead = always" "flush_idle = 30s" "flush_max_age = 60s"
"$PY" - "$PROXY_PORT" "$T/drain.data" > "$T/drain.out" 2>&1 <<'PYEOF' &
import os, sys, time
from impacket.smbconnection import SMBConnection
from impacket import smb3structs as s3
port, dump = int(sys.argv[1]), sys.argv[2]
data = os.urandom(65536)
open(dump, "wb").write(data)
c = SMBConnection("127.0.0.1", "127.0.0.1", sess_port=port,
                  preferredDialect=s3.SMB2_DIALECT_21, timeout=60)
c.login("smbtest", "testpass")
tid = c.connectTree("share")
fid = c.createFile(tid, "drain", desiredAccess=s3.FILE_READ_DATA | s3.FILE_WRITE_DATA,
                   creationDisposition=s3.FILE_OVERWRITE_IF)
for i in range(64):
    c.writeFile(tid, fid, data[i * 1024:(i + 1) * 1024], offset=i * 1024)
print("WRITTEN", flush=True)
# wait, sending nothing (any request could trigger a flush), until the
# daemon closes the connection
sock = c.getSMBServer()._NetBIOSSession.get_socket()
sock.settimeout(120)
try:
    while sock.recv(65536):
        pass
    print("closed by the daemon", flush=True)
except Exception as e:
    print("closed:", str(e)[:100], flush=True)
PYEOF
client=$!
BG_PIDS="$BG_PIDS $client"
n=200
until grep -q WRITTEN "$T/drain.out"; do
	kill -0 "$client" 2>/dev/null || { cat "$T/drain.out"; fail "drain client failed"; }
	n=$((n - 1)); [ $n -gt 0 ] || fail "drain client did not write in 20 s"
	sleep 0.1
done
buffered=$(stat_get buffered_bytes)
info "buffered before SIGTERM: $buffered bytes; on disk: $(stat -c %s "$SHARE_DIR/drain") bytes"
assert_ge 1 "$buffered" "write-behind bytes buffered before SIGTERM"
stop_proxy
assert_eq 0 "$PROXY_RC" "exit status of the drain"
assert_eq "$(sha256 "$T/drain.data")" "$(sha256 "$SHARE_DIR/drain")" "file on disk after the SIGTERM drain"
grep -E 'signal 15|drain|stopped' "$PROXY_LOG" | sed 's/^/  /'
wait "$client" 2>/dev/null
san_check "SIGTERM drain"
info "3. SIGTERM drain clean: $buffered buffered bytes reached the disk"
stop_smbd

# 4. other integration tests with the sanitized daemon
if [ "$SANITIZE_TESTS" = all ]; then
	SANITIZE_TESTS=$(cd "$TESTS_DIR" && ls t_*.sh | sed 's/\.sh$//' |
	    grep -vE '^t_(sanitize|fuzz|fault_.*|load)$' | tr '\n' ' ')
fi
if [ -n "$SANITIZE_TESTS" ]; then
	info "4. with bin-san/smbaccel: $SANITIZE_TESTS"
	SMBACCEL=$SAN/smbaccel RESULTS_DIR=$T/results TESTS="$SANITIZE_TESTS" \
	    bash "$TOP/tests/run-integration.sh" 2>&1 | sed 's/^/  /' | tee "$T/nested.out"
	grep -q '^  [0-9]* passed, 0 failed' "$T/nested.out" ||
	    { san_check "nested tests"; fail "an integration test failed with the sanitized daemon"; }
	san_check "nested integration tests"
fi
info "PASS in $(elapsed "$t0") s"
