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
"""
import os
import struct
import sys

from relay_lib import serve

READ = 8


def editor(minlen, trigger):
    """One connection's edit of the server's messages."""
    state = {"garbled": False}

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
            if dlen >= minlen:
                body[-1] ^= 0x01
                sys.stderr.write("tamper: READ mid=%d length=%d\n" % (
                    struct.unpack_from("<Q", body, 24)[0], dlen))
                sys.stderr.flush()
        out.append(body)
        return out
    return edit


def main():
    lport, sport, minlen = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    trigger = sys.argv[4] if len(sys.argv) > 4 else None
    serve(lport, sport, lambda: editor(minlen, trigger))


main()
