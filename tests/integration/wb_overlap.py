#!/usr/bin/python3
"""wb_overlap.py PORT DIALECT FILE N

N times: write 64 KiB (absorbed under write_behind = always), then 100
bytes inside it (not contiguous: the proxy must flush the 64 KiB first and
buffer the 100 bytes), then READ the 100 bytes: they must be the second
write's.  The client got the first write's answer before sending the
second, so the server must apply them in that order; two overlapping
WRITEs in flight at once may be applied in either order by smbd (its aio
thread pool).  Prints "LOST k of N"; exit 1 if k > 0."""
import sys

from wb_smb import Client, FILE_OVERWRITE_IF

port, dialect, path, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
c = Client(port, dialect)
fid, _ = c.create(path, disposition=FILE_OVERWRITE_IF)
lost = []
for i in range(n):
    base = i * 65536
    c.write(fid, base, bytes([i & 0xFF]) * 65536)
    c.write(fid, base + 1000, b"\xee" * 100)
    st, d = c.read(fid, base + 1000, 100)
    if st != 0 or d != b"\xee" * 100:
        lost.append(base + 1000)
c.close(fid)
c.logoff()
print("LOST %d of %d overlapping rewrites%s" % (len(lost), n, (" (first at offset %d)" % lost[0]) if lost else ""))
sys.exit(1 if lost else 0)
