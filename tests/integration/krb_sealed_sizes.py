#!/usr/bin/python3
"""krb_sealed_sizes.py PCAP SERVER_PORT - sizes of the encrypted messages a
client side sent to SERVER_PORT.

An encrypted session's WRITEs travel inside TRANSFORM messages (MS-SMB2
2.2.41: 0xFD 'SMB', Signature, Nonce, OriginalMessageSize at offset 36),
so tests/tools/upstream-sizes cannot see them; their plaintext sizes can
be read from the header.  Every TCP stream with SERVER_PORT at one end is
reassembled with tshark (-z follow,tcp,raw) and its NBSS framing walked in
the client-to-server direction.  Prints JSON: count, bytes (sum of
OriginalMessageSize), histogram {size: count}, other (frames that are not
TRANSFORM).  Exit 1 if tshark fails.
"""
import json
import subprocess
import sys
from collections import Counter


def main():
    pcap, port = sys.argv[1], int(sys.argv[2])
    out = subprocess.run(["tshark", "-n", "-r", pcap, "-T", "fields", "-e", "tcp.stream",
                          "-Y", "tcp.port == %d" % port], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(1)
    hist, other = Counter(), 0
    for sn in sorted({int(x) for x in out.stdout.split()}):
        r = subprocess.run(["tshark", "-n", "-r", pcap, "-q", "-z", "follow,tcp,raw,%d" % sn],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(1)
        c2s = bytearray()
        lines = r.stdout.split("=" * 66)[1].splitlines() if "=" * 66 in r.stdout else []
        for line in lines:
            if not line or line.startswith(("Follow:", "Filter:", "Node ")):
                continue
            try:
                b = bytes.fromhex(line.strip())
            except ValueError:
                continue
            # tshark indents the second node's data; node 0 is the side
            # that sent first, the client here
            if not line.startswith("\t"):
                c2s.extend(b)
        off = 0
        while off + 4 <= len(c2s):
            n = int.from_bytes(c2s[off + 1:off + 4], "big")
            if c2s[off] != 0 or off + 4 + n > len(c2s):
                break
            m = c2s[off + 4:off + 4 + n]
            off += 4 + n
            if m[:4] == b"\xfdSMB" and len(m) >= 52:
                hist[int.from_bytes(m[36:40], "little")] += 1
            else:
                other += 1
    print(json.dumps({"count": sum(hist.values()),
                      "bytes": sum(k * v for k, v in hist.items()),
                      "histogram": {str(k): v for k, v in sorted(hist.items())},
                      "other": other}, indent=1))


main()
