#!/bin/bash
# tests/fuzz/mkseeds-signed.sh - relay seeds with signed answers in an
# unkeyed session (issue 16), added to tests/fuzz/seeds/relay/ (run by hand
# after `make`; not part of make check; mkseeds.sh leaves these alone only
# if you rerun this script after it).
#
# The upstream is impacket's SMB server (start_impacket_server), which signs
# every answer once the session has a key although neither side requires
# signing; smbaccel holds no key for the session.  dumpcap records the
# client <-> smbaccel and smbaccel <-> server legs while libsmbclient (smbdd)
# and smbclient run short sessions (NEGOTIATE, SESSION_SETUP, TREE_CONNECT,
# CREATE, 1 KiB WRITEs, 4 KiB READs, CLOSE) through smbaccel with
# write_behind and read_ahead = always, and once with the default policy;
# mkseeds.py cuts the capture into fuzz_relay records.  Kept: the relay
# seeds in which the server's answers to CREATE and to READ or WRITE are
# signed.
. "$(dirname "$0")/../integration/lib.sh"

SEEDS=${SEEDS_DIR:-$TOP/tests/fuzz/seeds}
command -v dumpcap >/dev/null || fail "dumpcap not installed"
start_impacket_server
home=$(client_home seeds)
head -c 3000 /dev/urandom > "$T/small"

for pol in always default; do
	PROXY_PORT=$(free_port) PROXY_LOG=$T/proxy-$pol.log
	dumpcap -q -B 64 -i lo -f "tcp port $IMP_PORT or tcp port $PROXY_PORT" \
	    -w "$T/cap-$pol.pcapng" > "$T/dumpcap-$pol.out" 2>&1 &
	cap=$!
	BG_PIDS="$BG_PIDS $cap"
	sleep 1
	if [ $pol = always ]; then
		PROXY_SHARE_SECTION=no PROXY_UPSTREAM=127.0.0.1:$IMP_PORT start_proxy \
		    "[share share]" "write_behind = always" "read_ahead = always"
	else
		PROXY_SHARE_SECTION=no PROXY_UPSTREAM=127.0.0.1:$IMP_PORT start_proxy
	fi
	# a failed session (read-ahead with signed answers, today) is a seed too
	SMBC_HOME=$home smbdd_run write "$PROXY_PORT" "dd-$pol" 1K 40 -q > /dev/null ||
	    info "smbdd write through $pol failed"
	SMBC_HOME=$home smbdd_run verify "$PROXY_PORT" "dd-$pol" 4K 10 -q > /dev/null ||
	    info "smbdd verify through $pol failed"
	SMBC_HOME=$home smbc "$PROXY_PORT" SMB2_02 "put $T/small f-$pol; ls; get f-$pol $T/back" \
	    > "$T/smbc-$pol.out" 2>&1 || info "smbclient through $pol failed"
	stop_proxy
	sleep 1
	kill -INT "$cap"; wait "$cap"
	"$PY" "$TOP/tests/fuzz/mkseeds.py" "$T/cap-$pol.pcapng" "$PROXY_PORT" "$IMP_PORT" \
	    "$T/seeds-$pol" > "$T/mkseeds-$pol.out" || { cat "$T/mkseeds-$pol.out"; fail "mkseeds.py"; }
done

# Keep the relay seeds whose server records hold signed CREATE and READ or
# WRITE answers (SMB2_FLAGS_SIGNED, 0x8): the unkeyed session with a server that
# signs everything.
mkdir -p "$SEEDS/relay"
"$PY" - "$SEEDS/relay" "$T"/seeds-*/relay/* <<'PYEOF2'
import os, shutil, struct, sys
out, kept = sys.argv[1], 0
for path in sys.argv[2:]:
    blob = open(path, "rb").read()
    pos, srv = 0, b""
    while pos + 3 <= len(blob):
        op, n = blob[pos], struct.unpack_from("<H", blob, pos + 1)[0]
        if op % 8 == 1:
            srv += blob[pos + 3:pos + 3 + n]
        pos += 3 + (n if op % 8 in (0, 1) else 0)
    signed = set()
    p = 0
    while p + 4 <= len(srv):
        ln = int.from_bytes(srv[p + 1:p + 4], "big")
        msg = srv[p + 4:p + 4 + ln]
        off = 0
        while off + 64 <= len(msg) and msg[off:off + 4] == b"\xfeSMB":
            cmd = struct.unpack_from("<H", msg, off + 12)[0]
            flags, nxt = struct.unpack_from("<II", msg, off + 16)
            if flags & 8:
                signed.add(cmd)
            if not nxt:
                break
            off += nxt
        p += 4 + ln
    if 5 in signed and signed & {8, 9}:   # CREATE and READ or WRITE answers signed
        shutil.copy(path, os.path.join(out, os.path.basename(path)))
        kept += 1
        print("kept %s (%d bytes; signed answers to commands %s)" % (
            os.path.basename(path), len(blob), sorted(signed)))
print("relay seeds with signed answers:", kept)
sys.exit(0 if kept else 1)
PYEOF2
[ $? -eq 0 ] || fail "no relay seed with signed CREATE and READ or WRITE answers"
