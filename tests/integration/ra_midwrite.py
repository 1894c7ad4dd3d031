#!/usr/bin/python3
"""ra_midwrite.py PORT DIALECT NAME [READER_NAME] - an open whose CREATE answer arrives
while another connection's WRITE of the file is still on its way must not
read the file into a copy: the copy would keep the bytes from before the
WRITE.

NAME holds 1 MiB of 'A' on the server.  X (a connection through smbaccel)
opens it and sends a 2 MiB WRITE of 'B' at 0 (larger than the coalesce
size: smbaccel forwards it as it streams in), but only its first 64 KiB:
smbaccel has forwarded the header (and dropped what the caches held of the
file), smbd has not got the WRITE yet.  Meanwhile R (another connection)
opens NAME and reads it at scattered offsets (a random reader: the
document cache would fetch the whole file now, the old bytes; R is
rightly answered 'A' for these, the WRITE has not happened).  S, a
sequential reader on a third connection that opened NAME before the
WRITE, reads on in 4 KiB reads from 256 KiB meanwhile (read-ahead would
widen them and fetch ahead now).  Then X sends the rest of its WRITE and
gets its answer; R reads the same offsets again, and S reads on: 'B'
(before the fix the copy and the read-ahead fetched while the WRITE was
in flight answered 'A').

R and S open the file as READER_NAME when given: another name of it (a
hard link), which smbaccel knows as the same file by its on-disk id; X's
WRITE in flight must hold their fetches back all the same.

Prints ok, or what differed, and exits 1 then.
"""
import struct
import sys
import time

from wb_smb import Client, WRITE

port, dialect, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
other = sys.argv[4] if len(sys.argv) > 4 else name
K = 1024
OFFS = (200 * K, 500 * K, 10 * K, 800 * K, 300 * K, 1000 * K, 600 * K)

s = Client(port, dialect)
fs, _ = s.create(other)
for off in range(0, 64 * K, 4 * K):        # read-ahead under way
    s.read(fs, off, 4 * K)
x = Client(port, dialect)
fx, _ = x.create(name)
# build the WRITE, send it in two parts
parts = []
send = x.nb.send_packet
x.nb.send_packet = parts.append
size = 2 << 20
mid = x.write_req(fx, 0, b"B" * size)
x.nb.send_packet = send
msg = parts[0]
frame = struct.pack(">I", len(msg)) + msg
sock = x.nb.get_socket()
head = 4 + 64 + 48 + 64 * K
sock.sendall(frame[:head])
time.sleep(0.5)

r = Client(port, dialect)
fr, _ = r.create(other)
bad = []
for off in OFFS:
    st, d = r.read(fr, off, 4 * K)
    if st != 0 or d != b"A" * (4 * K):
        bad.append("before the WRITE landed: READ at %d: status 0x%08x, %d of %d 'A'"
                   % (off, st, d.count(b"A"), 4 * K))
for off in range(256 * K, 320 * K, 4 * K):
    st, d = s.read(fs, off, 4 * K)
    if st != 0 or d != b"A" * (4 * K):
        bad.append("sequential, before the WRITE landed: READ at %d: status 0x%08x" % (off, st))
time.sleep(0.5)             # the caches' fetches (before the fix)

sock.sendall(frame[head:])
resp = x.wait(mid)
n = struct.unpack_from("<I", resp.body, 4)[0] if resp.status == 0 else 0
if resp.status != 0 or n != size:
    bad.append("WRITE: status 0x%08x count %d" % (resp.status, n))
for off in OFFS:
    st, d = r.read(fr, off, 4 * K)
    if st != 0 or d != b"B" * (4 * K):
        bad.append("after the WRITE: READ at %d: status 0x%08x, %d of %d 'B'"
                   % (off, st, d.count(b"B"), 4 * K))
for off in range(320 * K, 512 * K, 4 * K):
    st, d = s.read(fs, off, 4 * K)
    if st != 0 or d != b"B" * (4 * K):
        bad.append("sequential, after the WRITE: READ at %d: status 0x%08x, %d of %d 'B'"
                   % (off, st, d.count(b"B"), 4 * K))
        break
r.close(fr)
s.close(fs)
x.close(fx)
if bad:
    print("; ".join(bad))
    sys.exit(1)
print("ok")
