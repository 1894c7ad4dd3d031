#!/usr/bin/python3
"""mkseeds_keyed.py - fuzz_relay seeds whose signed messages fuzz_relay signs.

usage: mkseeds_keyed.py OUTDIR SEED...

Each SEED is a fuzz_relay input cut by mkseeds.py from a capture of a
keyed session (records of op 0, bytes from the client, and op 1, bytes
from the server, in capture order).  The records are re-cut at NBSS frame
boundaries.  A frame holding an SMB2 message flagged SIGNED, other than a
SESSION_SETUP (whose answer's signature is what keys the session, and must
stay the server's), becomes a record of op 0x08 (client) or 0x09 (server):
the message without its NBSS header or signatures, which fuzz_relay signs
with the session's key.  Every other frame stays as it came (op 0 or 1).

At 3.0 and later a second seed is written from the same session with those
messages unsigned and sealed by fuzz_relay instead (op 0x10/0x11), as a
client and server that encrypt would send them.  And of each, one more
whose first WRITE says it carries 64 KiB (fuzz_relay's coalesce size),
which fuzz_relay completes with zeros: a large signed or sealed WRITE
that goes upstream as the client sent it (AES-GCM: authenticated without
being decrypted).

Written as OUTDIR/<sha1 of the content>; prints what it wrote.
"""
import hashlib
import os
import struct
import sys

SIGNED = 0x8
SESSION_SETUP = 1


def records(blob):
    """(op, bytes) of each record; ops other than 0 and 1 (mod 8) carry
    no length and no bytes."""
    pos = 0
    while pos < len(blob):
        op = blob[pos]
        if op % 8 > 1:
            yield op, b""
            pos += 1
            continue
        if pos + 3 > len(blob):
            return
        n = struct.unpack_from("<H", blob, pos + 1)[0]
        yield op, blob[pos + 3:pos + 3 + n]
        pos += 3 + n


def rec(op, data):
    return b"".join(bytes([op]) + struct.pack("<H", len(data[i:i + 65535])) +
                    data[i:i + 65535] for i in range(0, len(data), 65535))


def elements(msg):
    """(offset, length) of each element of an SMB2 message."""
    off = 0
    while off + 64 <= len(msg) and msg[off:off + 4] == b"\xfeSMB":
        nxt = struct.unpack_from("<I", msg, off + 20)[0]
        if nxt == 0 or off + nxt > len(msg):
            yield off, len(msg) - off
            return
        yield off, nxt
        off += nxt


def unsigned(msg, keep_flag):
    """msg with its signatures zeroed (and the SIGNED flag cleared unless
    keep_flag)."""
    m = bytearray(msg)
    for off, _ in elements(msg):
        m[off + 48:off + 64] = bytes(16)
        if not keep_flag:
            flags = struct.unpack_from("<I", m, off + 16)[0]
            struct.pack_into("<I", m, off + 16, flags & ~SIGNED)
    return bytes(m)


BIG_WRITE = 65536


def convert(blob, seal, big):
    """The records of blob re-cut as above; with big, its first signed
    WRITE says BIG_WRITE.  Returns (records, dialect, whether a WRITE was
    made big)."""
    out, buf, dialect, grown = [], {0: b"", 1: b""}, 0, False
    for op, data in records(blob):
        if op not in (0, 1):
            out.append(bytes([op]))
            continue
        buf[op] += data
        b = buf[op]
        while len(b) >= 4:
            n = int.from_bytes(b[1:4], "big")
            if len(b) < 4 + n:
                break
            frame, b = b[:4 + n], b[4 + n:]
            msg = frame[4:]
            if frame[0] == 0 and msg[:4] == b"\xfeSMB" and len(msg) >= 64:
                cmd = struct.unpack_from("<H", msg, 12)[0]
                flags = struct.unpack_from("<I", msg, 16)[0]
                if op == 1 and cmd == 0 and len(msg) >= 70:
                    dialect = struct.unpack_from("<H", msg, 68)[0]
                if flags & SIGNED and cmd != SESSION_SETUP and len(msg) <= 65535:
                    if big and not grown and op == 0 and cmd == 9 and len(msg) >= 72:
                        msg = msg[:68] + struct.pack("<I", BIG_WRITE) + msg[72:]
                        grown = True
                    if seal and dialect >= 0x300:
                        out.append(rec(0x10 | op, unsigned(msg, False)))
                    else:
                        out.append(rec(0x08 | op, unsigned(msg, True)))
                    continue
            out.append(rec(op, frame))
        buf[op] = b
    for op in (0, 1):
        if buf[op]:
            out.append(rec(op, buf[op]))
    return b"".join(out), dialect, grown


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    outdir, wrote = sys.argv[1], 0
    for path in sys.argv[2:]:
        blob = open(path, "rb").read()
        for seal, big in ((False, False), (True, False), (False, True),
                          (True, True)):
            data, dialect, grown = convert(blob, seal, big)
            n = sum(1 for op, _ in records(data) if op >= 0x08)
            if n == 0 or (seal and dialect < 0x300) or (big and not grown):
                continue
            name = hashlib.sha1(data).hexdigest()
            with open(os.path.join(outdir, name), "wb") as fp:
                fp.write(data)
            wrote += 1
            print("%s: dialect 0x%03x, %d %s records%s, %d bytes" % (
                name, dialect, n, "sealed" if seal else "signed",
                ", first WRITE 64 KiB" if big else "", len(data)))
    print("keyed relay seeds:", wrote)
    return 0 if wrote else 1


if __name__ == "__main__":
    sys.exit(main())
