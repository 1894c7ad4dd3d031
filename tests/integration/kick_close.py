#!/usr/bin/python3
"""kick_close.py PORT - connections kicked together, each closing when
kicked: none may touch another's freed memory.

Under write_behind = always with long flush timers, W writes 1 KiB to a
file (absorbed, buffered).  Then B and A (A connected last: first in
smbaccel's list of connections), each in one send, send a CREATE of the
same file followed by 4 bytes no SMB frame starts with.  Their CREATEs
wait for W's buffer (another connection's data of the file), which
smbaccel flushes; its answer kicks both.  Each kick forwards the CREATE,
then finds the bad frame and closes its connection, and closing one
connection kicks the others waiting.  Before smbaccel held every
connection it kicks, the second one closed inside the first's kick was
freed while the loop over connections still had to read it (ASan:
heap-use-after-free).

Prints "closed=N" (how many of A and B smbaccel closed) and exits 0; the
caller checks smbaccel is alive and its log clean.
"""
import struct
import sys
import time

from wb_smb import Client, FILE_OVERWRITE_IF

port = int(sys.argv[1])
w = Client(port, "3.0")
fid, _ = w.create("kick-f", disposition=FILE_OVERWRITE_IF)
w.write(fid, 0, b"w" * 1024)

clients = [Client(port, "3.0") for _ in range(2)]     # B, then A
for c in clients:
    sent = []
    real = c.nb.send_packet
    c.nb.send_packet = sent.append
    c.create_req("kick-f")
    c.nb.send_packet = real
    msg = sent[0]
    c.nb._sock.sendall(struct.pack(">I", len(msg)) + msg + b"\xfe\x00\x00\x01")
time.sleep(2)
closed = 0
for c in clients:
    c.nb._sock.settimeout(5)
    try:
        while c.nb._sock.recv(65536):
            pass
        closed += 1
    except OSError:
        pass
w.close(fid)
w.logoff()
print("closed=%d" % closed)
