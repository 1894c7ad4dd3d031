#!/usr/bin/python3
"""conn_flood.py HOST PORT N [HOLD_FILE]

Opens N TCP connections to HOST:PORT at once and waits (5 s at most)
until the other end has closed every one (EOF or reset), as smbaccel does
with a connection it refuses.  Prints "closed K of N in S s"; exit 1 if
any was left open or could not connect.

With HOLD_FILE, holds the N connections instead: writes "HELD" to
HOLD_FILE once all are connected and keeps them until the file is
removed (or 120 s), then closes them."""
import os
import select
import socket
import sys
import time

host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
hold = sys.argv[4] if len(sys.argv) > 4 else None
socks = []
for _ in range(n):
    s = socket.socket()
    s.settimeout(5)
    s.connect((host, port))
    socks.append(s)
if hold:
    with open(hold, "w") as f:
        f.write("HELD\n")
    end = time.time() + 120
    while os.path.exists(hold) and time.time() < end:
        time.sleep(0.1)
    for s in socks:
        s.close()
    sys.exit(0)
t0 = time.time()
open_ = {s.fileno(): s for s in socks}
while open_ and time.time() - t0 < 5:
    r, _, _ = select.select(list(open_), [], [], 0.5)
    for fd in r:
        try:
            data = open_[fd].recv(1)
        except ConnectionResetError:
            data = b""
        if data == b"":
            open_.pop(fd).close()
print("closed %d of %d in %.2f s" % (n - len(open_), n, time.time() - t0))
sys.exit(1 if open_ else 0)
