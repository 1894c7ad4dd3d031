#!/usr/bin/python3
"""slowwrite.py LISTEN_PORT SERVER_PORT LOW HIGH - a TCP relay in front of
smbd that holds the answer to every WRITE whose data begins with b"SLOW":
LOW seconds after its request passed for a WRITE at an offset below
1 MiB, HIGH seconds at 1 MiB or more.  Held answers go out when their
time comes, the others at once, so answers may leave in another order
than they came (as a server's may).  Only unsigned, unencrypted traffic
is understood; each WRITE passed on (offset, length, its first 4 bytes)
and each hold are logged on stderr.
"""
import socket
import struct
import sys
import threading
import time

from relay_lib import frame, listen, recv_msg

WRITE = 9
RESPONSE, ASYNC = 0x1, 0x2
STATUS_PENDING = 0x103


def relay(c, s, low, high):
    lock = threading.Lock()        # one writer on c at a time
    sent = {}                      # mid -> when its answer may go

    def to_client(msg):
        with lock:
            try:
                c.sendall(frame(msg))
            except OSError:
                pass

    def c2s():
        try:
            while True:
                msg = recv_msg(c)
                if msg is None:
                    break
                if (msg[:4] == b"\xfeSMB" and struct.unpack_from("<H", msg, 12)[0] == WRITE and
                        msg[struct.unpack_from("<H", msg, 64 + 2)[0]:][:4] == b"SLOW"):
                    mid = struct.unpack_from("<Q", msg, 24)[0]
                    length, offset = struct.unpack_from("<IQ", msg, 64 + 4)
                    hold = low if offset < (1 << 20) else high
                    sent[mid] = time.time() + hold
                    sys.stderr.write("slowwrite: %.3f WRITE mid=%d offset=%d length=%d held %.1f s\n"
                                     % (time.time(), mid, offset, length, hold))
                elif msg[:4] == b"\xfeSMB" and struct.unpack_from("<H", msg, 12)[0] == WRITE:
                    length, offset = struct.unpack_from("<IQ", msg, 64 + 4)
                    head = msg[struct.unpack_from("<H", msg, 64 + 2)[0]:][:4]
                    sys.stderr.write("slowwrite: %.3f WRITE mid=%d offset=%d length=%d data=%s\n"
                                     % (time.time(), struct.unpack_from("<Q", msg, 24)[0], offset, length,
                                        head.decode("latin-1")))
                s.sendall(frame(msg))
        except OSError:
            pass
        # the server still answers what it was sent
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def s2c():
        try:
            while True:
                msg = recv_msg(s)
                if msg is None:
                    break
                if msg[:4] == b"\xfeSMB" and struct.unpack_from("<H", msg, 12)[0] == WRITE:
                    status, _, _, flags, _, mid = struct.unpack_from("<IHHIIQ", msg, 8)
                    sys.stderr.write("slowwrite: %.3f WRITE answer mid=%d status 0x%08x\n" % (time.time(), mid, status))
                    at = None if status == STATUS_PENDING and flags & ASYNC else sent.pop(mid, None)
                    if at is not None and at > time.time():
                        threading.Timer(at - time.time(), to_client, (msg,)).start()
                        continue
                to_client(msg)
        except OSError:
            pass
        # the held answers first
        while sent and max(sent.values()) > time.time():
            time.sleep(0.1)
        time.sleep(0.1)
        for x in (c, s):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    threading.Thread(target=c2s, daemon=True).start()
    threading.Thread(target=s2c, daemon=True).start()


def main():
    lport, sport = int(sys.argv[1]), int(sys.argv[2])
    low, high = float(sys.argv[3]), float(sys.argv[4])
    ls = listen(lport)
    while True:
        c, _ = ls.accept()
        s = socket.create_connection(("127.0.0.1", sport))
        relay(c, s, low, high)


if __name__ == "__main__":
    main()
