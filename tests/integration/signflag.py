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
import socket
import struct
import sys
import threading

READ, FLAG_RESPONSE, FLAG_SIGNED = 8, 0x1, 0x8
BIG = 16 * 1024


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        b = sock.recv(n - len(buf))
        if not b:
            return None
        buf += b
    return bytes(buf)


def pump(src, dst, mark):
    try:
        while True:
            h = recv_exact(src, 4)
            if h is None:
                break
            n = struct.unpack(">I", h)[0] & 0xFFFFFF
            msg = bytearray(recv_exact(src, n) or b"") if n else bytearray()
            if len(msg) != n:
                break
            if mark and n >= 64 + 16 and msg[:4] == b"\xfeSMB":
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
            dst.sendall(h + bytes(msg))
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    lport, sport = int(sys.argv[1]), int(sys.argv[2])
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", lport))
    ls.listen(16)
    while True:
        c, _ = ls.accept()
        s = socket.create_connection(("127.0.0.1", sport))
        for a, b, m in ((c, s, False), (s, c, True)):
            threading.Thread(target=pump, args=(a, b, m), daemon=True).start()


main()
