#!/usr/bin/python3
"""dc_signed.py PORT FILE LOCAL_COPY

The document cache when smbaccel's widened READ cannot be answered: PORT
is an smbaccel whose server marks its large READ answers signed
(signflag.py) in sessions smbaccel holds no key for.  Reader A opens FILE
(the bytes of LOCAL_COPY) with an RWH lease and reads 4 KiB at 200000: a
miss of a new copy, widened to its 64 KiB chunk, whose answer comes back
signed: smbaccel closes A's connection (cannot-sign).  Reader B, a new
connection, then opens FILE with an RWH lease (the file's sole open: it
may use A's copy) and reads the same 4 KiB: it must get them (smbaccel
widens nothing of that server any more, so it forwards the read).  When
the copy's chunk stayed "in flight" after A's connection went, B waited
for it for ever (WB_SMB_TIMEOUT).
Prints what happened; exit 0 ok, 1 wrong or no answer.
"""
import sys
import time

from wb_smb import Client, GENERIC_READ, FILE_OPEN, LEASE_R, LEASE_W, LEASE_H, lease_key

port, path, local = int(sys.argv[1]), sys.argv[2], sys.argv[3]
model = open(local, "rb").read()
RWH = LEASE_R | LEASE_W | LEASE_H
OFF = 200000

a = Client(port, "3.0")
fa, r = a.create(path, access=GENERIC_READ, disposition=FILE_OPEN, lease=(lease_key(), RWH))
print("A: lease %s" % r["lease"])
try:
    st, d = a.read(fa, OFF, 4096)
    print("A: READ %d: status 0x%08x, %d bytes%s" % (OFF, st, len(d),
          "" if st or d == model[OFF:OFF + 4096] else " (WRONG)"))
    if st == 0 and d != model[OFF:OFF + 4096]:
        sys.exit(1)
except Exception as e:      # the connection closed under it: expected
    print("A: READ %d failed: %s" % (OFF, type(e).__name__))
a.drop()
time.sleep(1)               # smbd has closed A's handle

b = Client(port, "3.0")
fb, r = b.create(path, access=GENERIC_READ, disposition=FILE_OPEN, lease=(lease_key(), RWH))
print("B: lease %s" % r["lease"])
if (r["lease"] or 0) != RWH:
    print("FAIL: B was not granted RWH: the test proves nothing")
    sys.exit(1)
try:
    st, d = b.read(fb, OFF, 4096)
except Exception as e:
    print("FAIL: B's READ %d got no answer: %s" % (OFF, type(e).__name__))
    sys.exit(1)
if st != 0 or d != model[OFF:OFF + 4096]:
    print("FAIL: B's READ %d: status 0x%08x, %d bytes" % (OFF, st, len(d)))
    sys.exit(1)
print("B: READ %d: the right bytes" % OFF)
b.close(fb)
b.logoff()
