#!/usr/bin/python3
"""slowfetch.py LISTEN_PORT SERVER_PORT DELAY - a TCP relay in front of
smbd that holds the answer to every large READ (more than 4 KiB) at an
offset of 64 KiB or more until DELAY seconds after its request passed
(DELAY "never": not passed on at all).  In front of smbaccel's upstream
leg these are its read-ahead fetches (a client reading 4 KiB at a time
asks none itself), so a client READ of their bytes waits for them.
Everything else passes as it came; later answers wait behind a held one.
Only unsigned, unencrypted traffic is understood.
"""
import struct
import sys
import threading
import time

from relay_lib import serve

READ = 8
RESPONSE, ASYNC = 0x1, 0x2
STATUS_PENDING = 0x103


def main():
    lport, sport, delay = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    never = delay == "never"
    delay = 0.0 if never else float(delay)

    def edits():
        sent = {}               # mid -> when the held READ went up
        lock = threading.Lock()

        def c2s(msg):
            if msg[:4] == b"\xfeSMB" and struct.unpack_from("<H", msg, 12)[0] == READ:
                length, offset = struct.unpack_from("<IQ", msg, 64 + 4)
                sys.stderr.write("slowfetch: %.3f READ mid=%d offset=%d length=%d\n" % (time.time(), struct.unpack_from("<Q", msg, 24)[0], offset, length))
                if length > 4096 and offset >= 65536:
                    with lock:
                        sent[struct.unpack_from("<Q", msg, 24)[0]] = time.time()
            return [msg]

        def s2c(msg):
            if msg[:4] != b"\xfeSMB" or struct.unpack_from("<H", msg, 12)[0] != READ:
                return [msg]
            status, _, _, flags, nxt, mid = struct.unpack_from("<IHHIIQ", msg, 8)
            if status == STATUS_PENDING and flags & ASYNC:
                return [msg]
            with lock:
                t = sent.pop(mid, None)
            if t is None:
                return [msg]
            sys.stderr.write("slowfetch: %.3f READ mid=%d held %.3f s after its request\n" % (time.time(), mid, time.time() - t))
            if never:
                return []
            left = t + delay - time.time()
            if left > 0:
                time.sleep(left)
            return [msg]
        return c2s, s2c

    serve(lport, sport, edits)


if __name__ == "__main__":
    main()
