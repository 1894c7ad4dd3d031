#!/usr/bin/python3
"""dc_kept.py PORT X X_COPY Y Y_COPY

One connection reads document X at random (400 x 4 KiB: most answered
from the copy, each donating its id), closes it, and opens document Y at
once: its first random read should start fetches of Y paid with the ids
the connection kept (stats dc_kept_ids, checked by the caller), not one
chunk per read.  Then 100 more random reads of Y; every byte checked.
"""
import random
import sys

from wb_smb import Client, GENERIC_READ, FILE_OPEN

port = int(sys.argv[1])
files = [(sys.argv[2], open(sys.argv[3], "rb").read()), (sys.argv[4], open(sys.argv[5], "rb").read())]
rnd = random.Random(7)
c = Client(port, "3.0")
for (path, model), count in zip(files, (400, 101)):
    fid, _ = c.create(path, access=GENERIC_READ, disposition=FILE_OPEN)
    for _ in range(count):
        off = rnd.randrange(1, len(model) // 4096) * 4096
        st, d = c.read(fid, off, 4096)
        if st != 0 or d != model[off:off + 4096]:
            print("FAIL: %s READ %d: status 0x%08x, wrong bytes" % (path, off, st))
            sys.exit(1)
    c.close(fid)
    print("%s: %d random reads correct" % (path, count))
c.logoff()
print("OK")
