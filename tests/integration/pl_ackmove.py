#!/usr/bin/python3
"""pl_ackmove.py PROXY_PORT SMBD_PORT - the acknowledgement of a break of
smbaccel's lease is owed on a connection whose opens then close, while
another connection of the same client still holds the lease.

A and B are one client (the same ClientGuid: smbaccel's lease key is per
client and path) that asks for no lease.  A creates the file (smbaccel's
RW lease; A writes nothing, so it holds no id to acknowledge with), B
opens it too (the same key) and writes 8 x 1 KiB (absorbed: B holds ids).
C opens the file directly on smbd: the server breaks the lease RW -> R on
A's connection and waits for the acknowledgement.  A closes its open,
and B writes 1 KiB more in 4 writes, whose ids pay for it.  The acknowledgement is
B's to send now (the server takes a lease's acknowledgement on any
connection of the client, MS-SMB2 3.3.5.22.2); before, it was dropped,
and C waited out the server's break timeout (35 s) while B kept its
open.

Prints "C open S seconds after A's close", then what C reads; exit 1 if
C read anything but B's 9 KiB or waited more than 10 s.
"""
import sys
import time

from wb_smb import (Client, FILE_OVERWRITE_IF, FILE_OPEN, GENERIC_READ,
                    GENERIC_WRITE, one_client)

pport, sport = int(sys.argv[1]), int(sys.argv[2])
a, b = one_client(pport, 11)
fa, _ = a.create("ackmove", disposition=FILE_OVERWRITE_IF)
fb, _ = b.create("ackmove", access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN)
data = bytes(range(256)) * 32
for i in range(8):
    b.write(fb, i * 1024, data[i * 1024:(i + 1) * 1024])
c = Client(sport, "3.0")
cm = c.create_req("ackmove", access=GENERIC_READ, disposition=FILE_OPEN)
time.sleep(1.0)
if a.close(fa) != 0:
    sys.exit("A's CLOSE failed")
# B writes on: its writes donate the id the acknowledgement needs (B
# holds none spare: what its first writes left went on ECHOs; the first
# of these pays for their data, the others are spare)
more = b"m" * 1024
for i in range(4):
    b.write(fb, 8192 + i * 256, more[i * 256:(i + 1) * 256])
data += more
t0 = time.time()
cfid, r = c.parse_create(c.wait(cm))
dt = time.time() - t0
if cfid is None:
    sys.exit("C's open failed 0x%08x" % r["status"])
got = c.read_all(cfid, 0, 65536)
print("C open %.2f seconds after A's close; read %d bytes, %s" % (
    dt, len(got), "B's" if got == data else "not B's"))
c.close(cfid)
b.close(fb)
for x in (a, b, c):
    x.logoff()
if dt > 10:
    sys.exit("C waited %.1f s: the acknowledgement was not sent (the server's "
             "break timeout let C in)" % dt)
sys.exit(0 if got == data else 1)
