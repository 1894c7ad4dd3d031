#!/usr/bin/python3
"""pl_leg.py [--min BYTES] PCAP PORT [PORT2]

What a capture shows of CREATEs, leases and breaks on the TCP streams with
PORT (or PORT2) at one end (the client leg: smbaccel's listening port; the
upstream leg: smbd's).  Streams are reassembled with tests/tools/upstream-
sizes' tshark helpers; SMB2 messages walked by hand (MS-SMB2 2.2.13,
2.2.14, 2.2.23).  Prints JSON, per port:

  create_requests    count; "oplock": requested OplockLevel histogram;
                     "ctx": create context names and how many carried them
  create_answers     successful final CREATE answers: "oplock": granted
                     OplockLevel histogram; "ctx": context names; "leases":
                     [key hex, state] of every RqLs context
  breaks             server notifications (MessageId all ones): count,
                     "lease_keys" (hex), "oplock" count
  acks               OPLOCK_BREAK requests (acknowledgements) sent
  order              per stream, the sequence of WRITE / OPLOCK_BREAK
                     requests and break notifications, run-length encoded
                     ("W*12 N A W*3"), to check what came before an ack
  sizes              what tests/tools/upstream-sizes --min BYTES prints for
                     that port (request counts, WRITE/READ histograms), from
                     the same reassembly (one tshark pass for both)
"""
import importlib.machinery
import importlib.util
import json
import os
import struct
import sys
from collections import Counter

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
_loader = importlib.machinery.SourceFileLoader(
    "upstream_sizes", os.path.join(TOP, "tests", "tools", "upstream-sizes"))
_spec = importlib.util.spec_from_loader("upstream_sizes", _loader)
us = importlib.util.module_from_spec(_spec)
_loader.exec_module(us)

NOTIFY = 0xFFFFFFFFFFFFFFFF


def contexts(msg, off, ln):
    """(name, data) of a create context chain at msg[off:off+ln]."""
    out = []
    p = off
    end = off + ln
    while ln and p + 16 <= end:
        nxt, noff, nlen, _, doff, dlen = struct.unpack_from("<IHHHHI", msg, p)
        out.append((bytes(msg[p + noff:p + noff + nlen]),
                    bytes(msg[p + doff:p + doff + dlen]) if dlen else b""))
        if not nxt:
            break
        p += nxt
    return out


class Leg:
    def __init__(self):
        self.creq = Counter()
        self.creq_oplock = Counter()
        self.creq_ctx = Counter()
        self.cans = Counter()
        self.cans_oplock = Counter()
        self.cans_ctx = Counter()
        self.leases = []
        self.breaks = 0
        self.break_keys = []
        self.oplock_breaks = 0
        self.acks = 0
        self.order = {}

    def note(self, stream, ev):
        seq = self.order.setdefault(stream, [])
        if seq and seq[-1][0] == ev:
            seq[-1][1] += 1
        else:
            seq.append([ev, 1])

    def walk(self, stream, buf, to_server):
        pos = 0
        while pos + 4 <= len(buf):
            typ = buf[pos]
            length = struct.unpack(">I", buf[pos:pos + 4])[0] & 0xFFFFFF
            if typ == 0x85:
                pos += 4
                continue
            if typ != 0 or pos + 4 + length > len(buf):
                return
            msg = buf[pos + 4:pos + 4 + length]
            pos += 4 + length
            if msg[:4] == b"\xfeSMB":
                self.smb2(stream, msg, to_server)

    def smb2(self, stream, msg, to_server):
        off = 0
        while off + 64 <= len(msg):
            status, cmd, _, flags, nxt = struct.unpack_from("<IHHII", msg, off + 8)
            mid = struct.unpack_from("<Q", msg, off + 24)[0]
            end = off + nxt if nxt else len(msg)
            el = msg[off:end]
            b = el[64:]
            if to_server:
                if cmd == 5 and len(b) >= 56:
                    self.creq["count"] += 1
                    self.creq_oplock[str(b[3])] += 1
                    coff, cln = struct.unpack_from("<II", b, 48)
                    for name, _ in contexts(el, coff, cln):
                        self.creq_ctx[name.decode("latin-1")] += 1
                elif cmd == 9:
                    self.note(stream, "W")
                elif cmd == 18:
                    self.acks += 1
                    self.note(stream, "A")
            else:
                if mid == NOTIFY and cmd == 18:
                    self.breaks += 1
                    ss = struct.unpack_from("<H", b, 0)[0] if len(b) >= 2 else 0
                    if ss == 44:
                        self.break_keys.append(b[8:24].hex())
                    else:
                        self.oplock_breaks += 1
                    self.note(stream, "N")
                elif cmd == 5 and status == 0 and len(b) >= 88:
                    self.cans["count"] += 1
                    self.cans_oplock[str(b[2])] += 1
                    coff, cln = struct.unpack_from("<II", b, 80)
                    for name, data in contexts(el, coff, cln):
                        self.cans_ctx[name.decode("latin-1")] += 1
                        if name == b"RqLs" and len(data) >= 20:
                            self.leases.append([data[:16].hex(),
                                                struct.unpack_from("<I", data, 16)[0]])
            if not nxt:
                return
            off += nxt

    def report(self):
        return {
            "create_requests": {"count": self.creq["count"],
                                "oplock": dict(self.creq_oplock),
                                "ctx": dict(self.creq_ctx)},
            "create_answers": {"count": self.cans["count"],
                               "oplock": dict(self.cans_oplock),
                               "ctx": dict(self.cans_ctx),
                               "leases": self.leases},
            "breaks": {"count": self.breaks, "lease_keys": self.break_keys,
                       "oplock": self.oplock_breaks},
            "acks": self.acks,
            "order": {str(s): " ".join("%s*%d" % (e, n) if n > 1 else e
                                       for e, n in seq)
                      for s, seq in self.order.items()},
        }


def main():
    args = sys.argv[1:]
    minsize = 1 << 20
    if args[:1] == ["--min"]:
        minsize = int(args[1])
        args = args[2:]
    pcap = args[0]
    out = {}
    for port in [int(p) for p in args[1:]]:
        streams, _ = us.streams_for_port("tshark", pcap, port)
        data = us.follow_streams("tshark", pcap, port, streams)
        leg = Leg()
        st = us.Stats()
        for s in streams:
            c2s, s2c = data.get(s, (b"", b""))
            leg.walk(s, c2s, True)
            leg.walk(s, s2c, False)
            us.walk(c2s, True, st)
            us.walk(s2c, False, st)
        out[str(port)] = leg.report()
        out[str(port)]["sizes"] = us.report(st, minsize)
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
