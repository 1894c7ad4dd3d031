#!/usr/bin/python3
"""tamper.py LISTEN_PORT SERVER_PORT MINLEN [TRIGGER] - a TCP relay in front of smbd
that plays an on-path attacker: in every plain (unsealed) SMB2 READ answer
whose DataLength is at least MINLEN it flips the last data byte, leaving
the signature as the server made it.  A client checking signatures
discards such an answer; so must smbaccel before it caches or serves what
it fetched.  Everything else passes unchanged.  One line per tampered
answer goes to stderr: "tamper: READ mid=N length=L".

With TRIGGER (a file name): once that file exists, the next message of the
server on each connection is preceded by one no SMB peer can read (64
bytes of magic 0xFE 'XYZ'); stderr: "tamper: garbage before mid=N".

With TAMPER_MODE_FILE set (a file read at each new connection, "MODE
OFFSET"), only answers to READs of OFFSET or beyond are changed, whatever
their length (behind a sequential reader: smbaccel's read-ahead fetches),
and MODE says how: "flip" as above; "unflag" as flip, and the header's
SERVER_TO_REDIR flag cleared too (an answer that no longer says it is
one); "eof" the answer replaced by an unsigned STATUS_END_OF_FILE (a forged
end of the file).
"""
import os
import struct
import sys

from relay_lib import serve

READ = 8


def mode_of():
    """This connection's (mode, offset) from TAMPER_MODE_FILE, or None."""
    path = os.environ.get("TAMPER_MODE_FILE")
    try:
        mode, off = open(path).read().split()
        return mode, int(off)
    except (TypeError, OSError, ValueError):
        return None


def by_offset(body, mode, offs):
    """The READ answer body (a plain SUCCESS one, its request at a known
    offset) as MODE changes it."""
    mid = struct.unpack_from("<Q", body, 24)[0]
    off = offs.pop(mid, None)
    if off is None or off < mode[1]:
        return body
    sys.stderr.write("tamper: READ mid=%d offset=%d %s\n" % (mid, off, mode[0]))
    sys.stderr.flush()
    if mode[0] == "eof":
        hdr = bytearray(body[:64])
        struct.pack_into("<I", hdr, 8, 0xC0000011)          # END_OF_FILE
        flags = struct.unpack_from("<I", hdr, 16)[0] & ~0x8  # not signed
        struct.pack_into("<I", hdr, 16, flags)
        hdr[48:64] = b"\0" * 16
        return hdr + struct.pack("<HBBI", 9, 0, 0, 0) + b"\0"
    body[-1] ^= 0x01
    if mode[0] == "unflag":
        flags = struct.unpack_from("<I", body, 16)[0] & ~0x1
        struct.pack_into("<I", body, 16, flags)
    return body


def editor(minlen, trigger):
    """One connection's edit of the client's and the server's messages."""
    state = {"garbled": False}
    mode = mode_of()
    offs = {}

    def requests(body):
        if (mode and len(body) >= 64 + 16 and body[:4] == b"\xfeSMB" and
                struct.unpack_from("<H", body, 12)[0] == READ and
                not struct.unpack_from("<I", body, 16)[0] & 1):
            offs[struct.unpack_from("<Q", body, 24)[0]] = \
                struct.unpack_from("<Q", body, 64 + 8)[0]
        return [body]

    def edit(body):
        out = []
        if trigger and not state["garbled"] and os.path.exists(trigger):
            state["garbled"] = True
            out.append(b"\xfeXYZ" + b"\0" * 60)
            sys.stderr.write("tamper: garbage before mid=%d\n" % (
                struct.unpack_from("<Q", body, 24)[0] if len(body) >= 32 else -1))
            sys.stderr.flush()
        if (len(body) >= 64 + 16 and body[:4] == b"\xfeSMB" and
                struct.unpack_from("<H", body, 12)[0] == READ and
                struct.unpack_from("<I", body, 16)[0] & 1 and
                struct.unpack_from("<I", body, 20)[0] == 0 and
                struct.unpack_from("<I", body, 8)[0] == 0):
            dlen = struct.unpack_from("<I", body, 64 + 4)[0]
            if mode:
                body = by_offset(body, mode, offs)
            elif dlen >= minlen:
                body[-1] ^= 0x01
                sys.stderr.write("tamper: READ mid=%d length=%d\n" % (
                    struct.unpack_from("<Q", body, 24)[0], dlen))
                sys.stderr.flush()
        out.append(body)
        return out
    return requests, edit


def main():
    lport, sport, minlen = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    trigger = sys.argv[4] if len(sys.argv) > 4 else None
    serve(lport, sport, lambda: editor(minlen, trigger))


main()
