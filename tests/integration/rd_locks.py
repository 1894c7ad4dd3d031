#!/usr/bin/python3
"""rd_locks.py PORT SMBD_PORT DIALECT PREFIX

Reads of a file another client holds byte-range locks on, one side of a
diff: every read printed as "case: status length sha1-prefix", so that a
run with PORT = SMBD_PORT (direct) and one through smbaccel (read_ahead =
always, no oplock) can be compared.  The locker W always talks to smbd
directly (SMBD_PORT): smbaccel never sees its LOCK.  A READ smbaccel widens
or sends itself may meet a lock in bytes the reader never asked for; the
reader must get what it would have had directly.
  doc: a 128 KiB file, W locks [70000, +100) exclusively; R reads
       [4096, +4096) (a random reader: the document cache fetches the 64 KiB
       chunk around it), then sends two READs at once: [8192, +4096) (served
       from the copy, its id pooled) and [90000, +4096) (a miss, widened to
       the second chunk, which holds the lock: FILE_LOCK_CONFLICT, so
       smbaccel asks for the client's 4096 bytes again with the pooled id);
       then reads across the lock, next to it and in it;
  seq: a 256 KiB file, W locks [200000, +4096); R reads it in 4 KiB reads
       from 0 to the end (read-ahead fetches run into the lock; before the
       fix every read after that was widened again and failed for the lock
       ahead of it).
Lines starting with "info:" are not compared: the first read of a
connection whose widened READ meets a lock (no pooled id to ask again).
"""
import hashlib
import struct
import sys

from wb_smb import Client, LOCK, FILE_OVERWRITE_IF, FILE_OPEN, GENERIC_READ, GENERIC_WRITE

port, sport, dialect, prefix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
LOCK_EXCL, LOCK_FAIL = 0x2, 0x10


def show(label, st, data):
    print("%s: 0x%08x %d %s" % (label, st, len(data), hashlib.sha1(data).hexdigest()[:12]),
          flush=True)


def pattern(name, size):
    h = hashlib.sha256(name.encode()).digest()
    return (h * (size // len(h) + 1))[:size]


w = Client(sport, dialect)


def make_locked(name, size, lo, n):
    f, _ = w.create(prefix + name, access=GENERIC_READ | GENERIC_WRITE,
                    disposition=FILE_OVERWRITE_IF)
    data = pattern(name, size)
    for off in range(0, size, 65536):
        w.write(f, off, data[off:off + 65536])
    body = struct.pack("<HHI16s", 48, 1, 0, f) + struct.pack("<QQII", lo, n, LOCK_EXCL | LOCK_FAIL, 0)
    st = w.wait(w.send(LOCK, body)).status
    print("W locks %s [%d, +%d): 0x%08x" % (name, lo, n, st))
    return f


# doc: a widened miss into the locked chunk, with a pooled id
fw = make_locked("doc", 128 * 1024, 70000, 100)
r = Client(port, dialect)
fr, _ = r.create(prefix + "doc", access=GENERIC_READ, disposition=FILE_OPEN)
st, d = r.read(fr, 4096, 4096)
show("doc@4096", st, d)
m1 = r.read_req(fr, 8192, 4096)
m2 = r.read_req(fr, 90000, 4096)
show("doc@8192", *Client.parse_read(r.wait(m1)))
show("doc@90000", *Client.parse_read(r.wait(m2)))
for off, ln in ((69900, 200), (69000, 1000), (70100, 4000), (65536, 4096), (120000, 4096)):
    st, d = r.read(fr, off, ln)
    show("doc@%d+%d" % (off, ln), st, d)
r.close(fr)
w.close(fw)

# seq: read-ahead runs into a lock ahead of the reader
fw = make_locked("seq", 256 * 1024, 200000, 4096)
fr, _ = r.create(prefix + "seq", access=GENERIC_READ, disposition=FILE_OPEN)
for off in range(0, 256 * 1024, 4096):
    st, d = r.read(fr, off, 4096)
    show("seq@%d" % off, st, d)
r.close(fr)
w.close(fw)

# the first widened READ of a connection meets the lock: no pooled id
fw = make_locked("first", 128 * 1024, 0, 4096)
r2 = Client(port, dialect)
fr, _ = r2.create(prefix + "first", access=GENERIC_READ, disposition=FILE_OPEN)
st, d = r2.read(fr, 8192, 4096)
print("info: first@8192: 0x%08x %d" % (st, len(d)))
st, d = r2.read(fr, 16384, 4096)
show("first@16384", st, d)
r2.close(fr)
w.close(fw)
r.logoff()
r2.logoff()
w.logoff()
print("done")
