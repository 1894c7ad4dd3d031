#!/usr/bin/python3
"""ra_bigwrite.py PORT DIALECT NAME - a WRITE larger than the coalesce size,
and an IOCTL that zeroes a range, drop what read-ahead and the document
cache hold of the file.

Such a WRITE is not absorbed; smbaccel forwards it as it streams in
(relay.c, px_relay_client_stream), before the whole of it has arrived.
NAME (8 MiB on the server, the caller's pattern) is opened twice, on two
connections: the first reads 4 x 16 KiB at 0 (sequential: read-ahead
fetches ahead of it), the second reads at scattered offsets (a document
copy).  After a pause for their fetches, the first open writes 2 MiB of
'Z' at 64 KiB; then both read 64 KiB at 64 KiB and at 1 MiB.  Every read
must give the 'Z's: before the fix the streamed WRITE invalidated
nothing, and both reads came from the caches with the old bytes.  Then
FSCTL_SET_ZERO_DATA (MS-FSCC 2.3.85) of 128 KiB through the writer, read
back by it and by a third open with its own copy: zeros (before the fix
an IOCTL invalidated nothing).

Prints ok, or what differed, and exits 1 then.
"""
import struct
import sys
import time

from wb_smb import Client, IOCTL

FSCTL_SET_ZERO_DATA = 0x000980C8

port, dialect, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
K = 1024
a = Client(port, dialect)
b = Client(port, dialect)
fa, _ = a.create(name)
fb, _ = b.create(name)
for i in range(4):
    a.read(fa, i * 16 * K, 16 * K)
for off in (5 << 20, 3 << 20, 7 << 20, 1 << 20, 100 * K):
    b.read(fb, off, 4 * K)
time.sleep(1.0)
st, n = a.write(fa, 64 * K, b"Z" * (2 << 20))
bad = []
if n != 2 << 20:
    bad.append("WRITE count %d" % n)
for who, c, fid in (("writer", a, fa), ("other connection", b, fb)):
    for off in (64 * K, 1 << 20):
        st, d = c.read(fid, off, 64 * K)
        if st != 0 or d != b"Z" * (64 * K):
            bad.append("%s READ at %d: status 0x%08x, %d of %d bytes 'Z'" % (
                who, off, st, d.count(b"Z"), 64 * K))

# FSCTL_SET_ZERO_DATA: the same, by an IOCTL.  The writer reads on at
# 4 MiB (read-ahead again), a third open (a new CREATE: its own document
# copy) reads at scattered offsets; then 128 KiB at 4 MiB + 64 KiB are
# zeroed through the writer, and both read them back.
fc, _ = b.create(name)
for i in range(4):
    a.read(fa, (4 << 20) + i * 16 * K, 16 * K)
for off in (6 << 20, (4 << 20) + 100 * K, 2 << 20, 7 << 20):
    b.read(fc, off, 4 * K)
time.sleep(1.0)
zoff = (4 << 20) + 64 * K
body = struct.pack("<HHI16sIIIIIIII", 57, 0, FSCTL_SET_ZERO_DATA, fa,
                   120, 16, 0, 120, 0, 0, 1, 0) + struct.pack("<QQ", zoff, zoff + 128 * K)
r = a.wait(a.send(IOCTL, body))
if r.status != 0:
    bad.append("SET_ZERO_DATA status 0x%08x" % r.status)
for who, c, fid in (("zeroing open", a, fa), ("third open", b, fc)):
    st, d = c.read(fid, zoff, 64 * K)
    if st != 0 or d != bytes(64 * K):
        bad.append("%s READ of the zeroed range: status 0x%08x, %d of %d bytes 0" % (
            who, st, d.count(0), 64 * K))
a.close(fa)
b.close(fb)
b.close(fc)
a.logoff()
b.logoff()
print("ok" if not bad else "; ".join(bad))
sys.exit(1 if bad else 0)
