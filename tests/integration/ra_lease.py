#!/usr/bin/python3
"""ra_lease.py PORT DIALECT MODE FILE WRITER_PORT LOCAL_COPY

Issue 4 test 2 (read-ahead under read_ahead = leased).  FILE (on the
share, written before by the caller; LOCAL_COPY has the same bytes) is
opened by A with MODE:
  oplock2   level II oplock            lease-r   R lease
  lease-rh  RH lease                   none      no oplock (no read-ahead)
A reads the first half in 4 KiB reads (each checked).  Then B, connected
to WRITER_PORT (the proxy, or smbd directly), overwrites 8 KiB that A
has read, 8 KiB just ahead of A and 8 KiB near the end.  A waits for the
break notification (oplock/lease modes; a lease break is acknowledged if
the server asks), then reads the three regions and the rest of the file
in 4 KiB reads: every byte must be the new content.  Finally A closes,
opens the file again with the same MODE and reads all of it in 4 KiB
reads (read-ahead again).
Prints "OK hits-expected" lines; exit 1 on a difference."""
import os
import sys

from wb_smb import (Client, OPLOCK_II, LEASE_R, LEASE_H, GENERIC_READ, GENERIC_WRITE, FILE_OPEN,
                    lease_key)

port, dialect, mode, path, wport, local = (int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4],
                                           int(sys.argv[5]), sys.argv[6])
KB = 1024


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


b = Client(wport, dialect)
fb, _ = b.create(path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN)
model = bytearray(open(local, "rb").read())
size = len(model)

a = Client(port, dialect)
key = lease_key()
kw = {}
if mode == "oplock2":
    kw["oplock"] = OPLOCK_II
elif mode == "lease-r":
    kw["lease"] = (key, LEASE_R)
elif mode == "lease-rh":
    kw["lease"] = (key, LEASE_R | LEASE_H)


def open_a():
    fa, r = a.create(path, access=GENERIC_READ, disposition=FILE_OPEN, **kw)
    if mode == "oplock2" and r["oplock"] != OPLOCK_II:
        die("level II oplock asked, granted 0x%x" % r["oplock"])
    if mode.startswith("lease") and not ((r["lease"] or 0) & LEASE_R):
        die("lease %s asked, granted %r" % (mode, r["lease"]))
    print("A: %s granted (oplock 0x%x lease %r)" % (mode, r["oplock"], r["lease"]))
    return fa


fa = open_a()


def check(off, n, what):
    st, d = a.read(fa, off, n)
    want = bytes(model[off:off + n])
    if st != 0 or d != want:
        first = next((i for i in range(min(len(d), len(want))) if d[i] != want[i]), min(len(d), len(want)))
        die("%s: READ %d+%d status 0x%08x, %d bytes, first difference at %d" % (what, off, n, st, len(d), off + first))


half = size // 2
for off in range(0, half, 4 * KB):
    check(off, 4 * KB, "first half")
# B writes: behind A, just ahead of A, near the end
regions = [(half // 3, 8 * KB), (half + 4 * KB, 8 * KB), (size - 12 * KB, 8 * KB)]
for off, n in regions:
    d = os.urandom(n)
    st, _ = b.write(fb, off, d, check=False)
    if st != 0:
        die("B's WRITE at %d: 0x%08x" % (off, st))
    model[off:off + n] = d
print("B: wrote %s through port %d" % (regions, wport))
if mode != "none":
    n = a.wait_notification(timeout=10)
    if n is None:
        die("A got no break notification within 10 s")
    brk = Client.parse_break(n)
    print("A: break %r" % (brk[:1] + brk[2:],))
    if brk[0] == "lease" and brk[4] & 1:
        ack = a.wait(a.lease_ack(key, brk[3]))
        if ack.status != 0:
            die("lease break ack: 0x%08x" % ack.status)
for off, n in regions:
    check(off, n, "B's region")
for off in range(half, size, 4 * KB):
    check(off, 4 * KB, "second half")
a.close(fa)
if mode != "none":
    key = lease_key()
    if "lease" in kw:
        kw["lease"] = (key, kw["lease"][1])
    fa = open_a()
    for off in range(0, size, 4 * KB):
        check(off, 4 * KB, "after reopening")
    a.close(fa)
b.close(fb)
a.logoff()
b.logoff()
print("OK")
