#!/usr/bin/python3
"""wb_lease.py PORT DIALECT oplock|lease FILE KIB SEED

Issue 3 test 2 (write-behind under `leased`):
  A opens FILE with a batch oplock or an RWH lease, checks it was granted,
  writes KIB KiB in 1 KiB writes (sequential);
  B (a second connection) then opens FILE: the server breaks A;
  A receives the break, writes 8 more KiB (dirty data, allowed before the
  acknowledgement), acknowledges; B's open completes and B reads the file:
  every byte A wrote must be there.  A closes, B re-reads, closes.
A asks for WB_LEASE_CREDITS (default 8192) credits when it connects.
Exit 0 ok, 1 mismatch / protocol failure (message on stdout)."""
import os
import random
import sys

from wb_smb import (Client, OPLOCK_BATCH, LEASE_R, LEASE_H, LEASE_W, GENERIC_READ,
                    GENERIC_WRITE, FILE_OVERWRITE_IF, FILE_OPEN, lease_key)

port, dialect, mode, path, kib, seed = (int(sys.argv[1]), sys.argv[2], sys.argv[3],
                                        sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
rnd = random.Random(seed)
size = kib * 1024
extra = 8 * 1024
data = bytearray(rnd.getrandbits(8) for _ in range(size + extra))


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


# A takes the whole credit window at once, as libsmbclient does (SMB-NOTES):
# its absorbed writes are answered from smbaccel's bank, which refills only
# when the server answers the coalesced WRITEs, and only with the ids they
# spent (smbaccel asks the server for no credits beyond them, so a window
# does not grow through it as it would directly).  With the 2 K credits of
# Client's default, a server slowed down by a busy disk (answers later than
# 2,000 local write answers take) left A with no credit, and the
# zero-credit rule flushed whatever was buffered: small upstream WRITEs
# that say nothing about coalescing.  A window larger than the whole
# transfer keeps the size check about coalescing alone.
a = Client(port, dialect, want_credits=int(os.environ.get("WB_LEASE_CREDITS", "8192")))
key = lease_key()
if mode == "lease":
    fid, r = a.create(path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OVERWRITE_IF,
                      lease=(key, LEASE_R | LEASE_H | LEASE_W))
    if (r["lease"] or 0) & 7 != 7:
        die("A asked for an RWH lease, granted %r (oplock 0x%x)" % (r["lease"], r["oplock"]))
else:
    fid, r = a.create(path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OVERWRITE_IF,
                      oplock=OPLOCK_BATCH)
    if r["oplock"] != OPLOCK_BATCH:
        die("A asked for a batch oplock, granted 0x%x" % r["oplock"])
print("A: %s granted (%s), writing %d KiB in 1 KiB writes" % (mode, r["lease"] if mode == "lease" else "batch", kib))
for off in range(0, size, 1024):
    a.write(fid, off, bytes(data[off:off + 1024]))

b = Client(port, dialect)
bmid = b.create_req(path, access=GENERIC_READ, disposition=FILE_OPEN)
n = a.wait_notification(timeout=30)
if n is None:
    die("A got no break notification within 30 s after B's CREATE")
brk = Client.parse_break(n)
print("A: break %r" % (brk[:1] + brk[2:],))
# Dirty data written after the break, before the acknowledgement.
for off in range(size, size + extra, 1024):
    a.write(fid, off, bytes(data[off:off + 1024]))
if brk[0] == "oplock":
    if brk[1] != fid:
        die("oplock break for another FileId")
    ack = a.wait(a.oplock_ack(fid, brk[2]))
elif brk[0] == "lease":
    if brk[1] != key:
        die("lease break for another key")
    ack = a.wait(a.lease_ack(key, brk[3])) if brk[4] & 1 else None
else:
    die("unexpected notification %r" % (brk,))
if ack is not None and ack.status != 0:
    die("break acknowledgement answered 0x%08x" % ack.status)
bfid, br = b.parse_create(b.wait(bmid))
if bfid is None:
    die("B's CREATE failed: 0x%08x" % br["status"])
print("B: opened, eof %d (oplock 0x%x)" % (br["eof"], br["oplock"]))
got = b.read_all(bfid, 0, size + extra + 65536)
if got != bytes(data):
    first = next((i for i in range(min(len(got), len(data))) if got[i] != data[i]), min(len(got), len(data)))
    die("B read %d bytes, expected %d; first difference at %d" % (len(got), len(data), first))
print("B: read all %d bytes correctly while A holds the file open" % len(got))
st = a.close(fid)
if st != 0:
    die("A's CLOSE answered 0x%08x" % st)
got = b.read_all(bfid, 0, size + extra + 65536)
if got != bytes(data):
    die("B's second read (after A closed) differs")
b.close(bfid)
a.logoff()
b.logoff()
print("OK")
