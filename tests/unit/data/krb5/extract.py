#!/usr/bin/python3
"""extract.py PCAP PORT OUTDIR PREFIX - cut the SMB2 messages of the
session set-up out of a capture, for tests/unit/test_krb5.c.

Every TCP stream to PORT is reassembled with tshark (-z follow,tcp,raw),
split on the 4-byte NBSS framing, and for each stream the first NEGOTIATE
request and response and every SESSION_SETUP request and response are
written as raw SMB2 messages (no NBSS header):
    OUTDIR/PREFIX.sN.neg-req, .neg-rsp, .ss-req1, .ss-rsp1, .ss-req2, ...
Messages that are not SMB2 (0xFE 'SMB') are skipped; a stream holding an
encrypted message before its SESSION_SETUP ends is an error.
"""
import os
import subprocess
import sys


def streams(pcap, port):
    out = subprocess.run(["tshark", "-r", pcap, "-T", "fields", "-e", "tcp.stream",
                          "-Y", "tcp.port == %d" % port], check=True,
                         capture_output=True, text=True).stdout
    return sorted({int(x) for x in out.split()})


def follow(pcap, n):
    out = subprocess.run(["tshark", "-r", pcap, "-q", "-z", "follow,tcp,raw,%d" % n],
                         check=True, capture_output=True, text=True).stdout
    c2s, s2c = bytearray(), bytearray()
    body = out.split("=" * 66)[1] if "=" * 66 in out else out
    for line in body.splitlines():
        if not line or line.startswith(("Follow:", "Filter:", "Node ")):
            continue
        data = line.strip()
        try:
            b = bytes.fromhex(data)
        except ValueError:
            continue
        (s2c if line.startswith("\t") else c2s).extend(b)
    return bytes(c2s), bytes(s2c)


def frames(buf):
    off = 0
    while off + 4 <= len(buf):
        n = int.from_bytes(buf[off + 1:off + 4], "big")
        if off + 4 + n > len(buf):
            break
        yield buf[off + 4:off + 4 + n]
        off += 4 + n


def main():
    pcap, port, outdir, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    os.makedirs(outdir, exist_ok=True)
    for sn in streams(pcap, port):
        c2s, s2c = follow(pcap, sn)
        out = {}
        for side, buf in (("req", c2s), ("rsp", s2c)):
            ss = 0
            for m in frames(buf):
                if m[:4] != b"\xfeSMB":
                    continue
                cmd = int.from_bytes(m[12:14], "little")
                if cmd == 0 and ("neg-" + side) not in out:
                    out["neg-" + side] = m
                elif cmd == 1:
                    ss += 1
                    out["ss-%s%d" % (side, ss)] = m
        if "ss-req1" not in out:
            continue
        for k, m in out.items():
            with open(os.path.join(outdir, "%s.s%d.%s" % (prefix, sn, k)), "wb") as f:
                f.write(m)
        print("%s stream %d: %s" % (prefix, sn, " ".join(sorted(out))))


main()
