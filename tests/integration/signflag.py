#!/usr/bin/python3
"""signflag.py LISTEN_PORT SERVER_PORT - a TCP relay in front of smbd that
marks its large READ answers signed (SMB2_FLAGS_SIGNED set, the signature
left as smbd sent it: zeros), as a server that signs any answer it likes
would (MS-SMB2 allows it).  smbaccel holds no key for these sessions, so
it cannot cut such an answer to a READ it widened back to what its client
asked for, nor sign its own: it closes that connection (reason
cannot-sign) and widens nothing of the server again (alter.c).  Every
other message passes unchanged; the client side sees smbaccel, not this.

Only standalone, successful READ answers with more than 16 KiB of data
are marked; one line per marked answer goes to stderr.
"""
import struct
import sys

from relay_lib import serve

READ, FLAG_RESPONSE, FLAG_SIGNED = 8, 0x1, 0x8
BIG = 16 * 1024


def edit(msg):
    if len(msg) >= 64 + 16 and msg[:4] == b"\xfeSMB":
        cmd, = struct.unpack_from("<H", msg, 12)
        flags, nxt = struct.unpack_from("<II", msg, 16)
        status, = struct.unpack_from("<I", msg, 8)
        dlen, = struct.unpack_from("<I", msg, 64 + 4)
        if cmd == READ and (flags & FLAG_RESPONSE) and nxt == 0 and \
                status == 0 and dlen > BIG:
            struct.pack_into("<I", msg, 16, flags | FLAG_SIGNED)
            print("signflag: READ answer mid=%d (%d bytes) marked signed"
                  % (struct.unpack_from("<Q", msg, 24)[0], dlen),
                  file=sys.stderr, flush=True)
    return [msg]


serve(int(sys.argv[1]), int(sys.argv[2]), lambda: edit)
