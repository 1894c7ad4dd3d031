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
import socket
import struct
import sys
import threading

READ = 8


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        b = sock.recv(n - len(buf))
        if not b:
            return None
        buf += b
    return bytes(buf)


def pump(src, dst, tamper, minlen, trigger=None):
    garbled = False
    try:
        while True:
            h = recv_exact(src, 4)
            if h is None:
                break
            n = struct.unpack(">I", h)[0] & 0xFFFFFF
            body = recv_exact(src, n) if n else b""
            if body is None:
                break
            if (tamper and len(body) >= 64 + 16 and body[:4] == b"\xfeSMB" and
                    struct.unpack_from("<H", body, 12)[0] == READ and
                    struct.unpack_from("<I", body, 16)[0] & 1 and
                    struct.unpack_from("<I", body, 20)[0] == 0 and
                    struct.unpack_from("<I", body, 8)[0] == 0):
                dlen = struct.unpack_from("<I", body, 64 + 4)[0]
                if dlen >= minlen:
                    b = bytearray(body)
                    b[-1] ^= 0x01
                    body = bytes(b)
                    sys.stderr.write("tamper: READ mid=%d length=%d\n" % (
                        struct.unpack_from("<Q", body, 24)[0], dlen))
                    sys.stderr.flush()
            if tamper and trigger and not garbled and os.path.exists(trigger):
                garbled = True
                dst.sendall(struct.pack(">I", 64) + b"\xfeXYZ" + b"\0" * 60)
                sys.stderr.write("tamper: garbage before mid=%d\n" % (
                    struct.unpack_from("<Q", body, 24)[0] if len(body) >= 32 else -1))
                sys.stderr.flush()
            dst.sendall(h + body)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    lport, sport, minlen = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    trigger = sys.argv[4] if len(sys.argv) > 4 else None
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", lport))
    ls.listen(16)
    while True:
        c, _ = ls.accept()
        s = socket.create_connection(("127.0.0.1", sport))
        threading.Thread(target=pump, args=(c, s, False, minlen), daemon=True).start()
        threading.Thread(target=pump, args=(s, c, True, minlen, trigger), daemon=True).start()


main()
