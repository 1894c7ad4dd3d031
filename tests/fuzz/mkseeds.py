#!/usr/bin/python3
"""mkseeds.py - fuzz seeds from a loopback capture of proxied SMB sessions.

usage: mkseeds.py PCAP PROXY_PORT SMBD_PORT OUTDIR

The capture holds client <-> smbaccel (PROXY_PORT) and smbaccel <-> smbd
(SMBD_PORT) connections.  Per-packet payloads come from tshark in capture
order (loopback: each segment once, in order).  Written under OUTDIR:

  frame/   the first 16 KiB of each direction of each client connection
           (raw NBSS stream)
  smb2/    single SMB2 messages (no NBSS header), one or two per
           (direction, command, status, flags) kind, at most 16 KiB
  relay/   one file per proxied connection in fuzz_relay.c's record format:
           client->proxy chunks (op 0) and smbd->proxy chunks (op 1) in
           capture order, records of at most 65535 bytes; sessions over
           128 KiB are skipped
  ntlm/    SESSION_SETUP security buffers (SPNEGO / NTLMSSP), request and
           response, for the NTLM driver's corpus

File names are the sha1 of the content (libFuzzer's convention).
"""
import hashlib
import os
import struct
import subprocess
import sys

if len(sys.argv) != 5:
    sys.exit(__doc__)
pcap, pport, sport, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

rows = subprocess.run(
    ["tshark", "-n", "-r", pcap, "-Y", "tcp.len > 0", "-T", "fields",
     "-E", "separator=,", "-e", "tcp.stream", "-e", "tcp.srcport",
     "-e", "tcp.dstport", "-e", "tcp.payload"],
    check=True, capture_output=True, text=True).stdout.splitlines()

# every payload in capture order: (stream, srcport, dstport, bytes)
seq = []
for r in rows:
    f = r.split(",")
    if len(f) >= 4 and f[3]:
        seq.append((int(f[0]), int(f[1]), int(f[2]),
                    bytes.fromhex(f[3].replace(":", ""))))

# stream -> list of (towards the server, bytes); which leg each stream is
streams, kind, order = {}, {}, []
for st, sp, dp, data in seq:
    if st not in streams:
        streams[st] = []
        order.append(st)
        kind[st] = "client" if pport in (sp, dp) else "upstream"
    srvport = pport if kind[st] == "client" else sport
    streams[st].append((dp == srvport, data))


def save(sub, data):
    d = os.path.join(out, sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as fp:
        fp.write(data)


def frames(stream):
    """NBSS frames of a byte stream (type 0 only), up to a bad one."""
    pos = 0
    while pos + 4 <= len(stream):
        t, n = stream[pos], int.from_bytes(stream[pos + 1:pos + 4], "big")
        if pos + 4 + n > len(stream):
            return
        if t == 0:
            yield stream[pos + 4:pos + 4 + n]
        pos += 4 + n


def elems(msg):
    off = 0
    while off + 64 <= len(msg) and msg[off:off + 4] == b"\xfeSMB":
        nxt = struct.unpack_from("<I", msg, off + 20)[0]
        yield msg[off:off + nxt] if nxt else msg[off:]
        if nxt == 0:
            return
        off += nxt


# frame/ and smb2/ and ntlm/
kinds = {}
for st in order:
    for to_srv in (True, False):
        stream = b"".join(d for (ts, d) in streams[st] if ts == to_srv)
        if not stream:
            continue
        if kind[st] == "client":
            save("frame", stream[:16384])
        for msg in frames(stream):
            if msg[:4] != b"\xfeSMB" or len(msg) > 16384:
                continue
            flags = struct.unpack_from("<I", msg, 16)[0]
            cmd = struct.unpack_from("<H", msg, 12)[0]
            status = struct.unpack_from("<I", msg, 8)[0]
            nxt = struct.unpack_from("<I", msg, 20)[0]
            k = (flags & 3, cmd, status, nxt != 0)
            kinds[k] = kinds.get(k, 0) + 1
            if kinds[k] <= 2:
                save("smb2", msg)
            if cmd == 1:    # SESSION_SETUP: the security buffer
                for e in elems(msg):
                    if flags & 1 and len(e) >= 72:
                        off, ln = struct.unpack_from("<HH", e, 68)
                    elif len(e) >= 88:
                        off, ln = struct.unpack_from("<HH", e, 76)
                    else:
                        continue
                    if 0 < ln and off + ln <= len(e):
                        save("ntlm", e[off:off + ln])

# relay/: pair client legs with upstream legs in order of appearance
cl = [s for s in order if kind[s] == "client"]
up = [s for s in order if kind[s] == "upstream"]
for a, b in zip(cl, up):
    recs = []
    for st, sp, dp, data in seq:
        if st == a and dp == pport:
            op = 0
        elif st == b and sp == sport:
            op = 1
        else:
            continue
        for i in range(0, len(data), 65535):
            part = data[i:i + 65535]
            recs.append(bytes([op]) + struct.pack("<H", len(part)) + part)
    blob = b"".join(recs)
    if 0 < len(blob) <= 131072:
        save("relay", blob)
print("seeds:", {d: len(os.listdir(os.path.join(out, d)))
                 for d in sorted(os.listdir(out))})
