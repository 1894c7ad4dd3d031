#!/usr/bin/python3
"""dc_coherence.py PORT SMBD_PORT DIALECT MODE FILE LOCAL_COPY SEED [SHARE]

Issue 13 test 1 (the document cache seen by a reader while others
write).  FILE on the share holds the bytes of LOCAL_COPY.  Reader A goes
through the proxy (PORT) and opens FILE with MODE:
  none    no oplock (the proxy runs read_ahead = always)
  lease   an R lease (read_ahead = leased)
  oplock2 a level II oplock (read_ahead = leased)
Each step's reads are seeded random offsets and lengths (1 .. 16 KiB,
some running past the end), every byte compared with a local model.
  1. A reads: the document cache fetches the file.
  2. B writes 8 KiB through the proxy (another connection): A's next
     read of it, at once, has the new bytes (in lease modes after the
     server's break); again with B's write in a related compound CREATE +
     WRITE + CLOSE (FileId all FF), which names the file only by its
     CREATE.
  3. A closes and reopens and reads (a copy again); then B writes 8 KiB
     directly to smbd (SMBD_PORT, bypassing the proxy): in lease modes
     the server breaks A and A's next read has the new bytes at once; with
     no oplock A may see the old bytes until it reopens (the documented
     price of always), so A closes, reopens and then must see them.
Prints what it did; exit 1 on the first wrong byte.
"""
import os
import random
import sys

import struct

from wb_smb import (Client, Response, HDR, CLOSE, FLAG_RELATED, OPLOCK_II, LEASE_R, GENERIC_READ,
                    GENERIC_WRITE, FILE_OPEN, lease_key)

port, sport, dialect, mode, path, local, seed = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                                 sys.argv[4], sys.argv[5], sys.argv[6], int(sys.argv[7]))
share = sys.argv[8] if len(sys.argv) > 8 else "share"
rnd = random.Random(seed)
model = bytearray(open(local, "rb").read())
size = len(model)
KB = 1024


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


a = Client(port, dialect, share=share)


def open_a():
    kw = {}
    if mode == "lease":
        kw["lease"] = (lease_key(), LEASE_R)
    elif mode == "oplock2":
        kw["oplock"] = OPLOCK_II
    fid, r = a.create(path, access=GENERIC_READ, disposition=FILE_OPEN, **kw)
    if mode == "lease" and not ((r["lease"] or 0) & LEASE_R):
        die("R lease asked, granted %r" % (r["lease"],))
    if mode == "oplock2" and r["oplock"] != OPLOCK_II:
        die("level II oplock asked, granted 0x%x" % r["oplock"])
    return fid, kw.get("lease", (None,))[0]


def check(fid, off, n, what):
    st, d = a.read(fid, off, n)
    want = bytes(model[off:off + n])
    if off >= size:
        if st != 0xC0000011:
            die("%s: READ %d+%d at/after EOF %d: status 0x%08x" % (what, off, n, size, st))
        return
    if st != 0 or d != want:
        k = next((i for i in range(min(len(d), len(want))) if d[i] != want[i]), min(len(d), len(want)))
        die("%s: READ %d+%d status 0x%08x, %d bytes (want %d), first difference at %d"
            % (what, off, n, st, len(d), len(want), off + k))


def random_reads(fid, count, what):
    for _ in range(count):
        off = rnd.randrange(0, size + 1024)
        check(fid, off, rnd.randint(1, 16 * KB), what)


def write_b(b_port, off, what):
    b = Client(b_port, dialect, share=share)
    fb, _ = b.create(path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN)
    d = os.urandom(8 * KB)
    st, _ = b.write(fb, off, d, check=False)
    if st != 0:
        die("%s: B's WRITE at %d: 0x%08x" % (what, off, st))
    model[off:off + len(d)] = d
    b.close(fb)
    b.logoff()
    print("B: wrote 8 KiB at %d %s" % (off, what))


def compound_write_b(b_port, off, what):
    """B writes 8 KiB as one related compound CREATE + WRITE + CLOSE (FileId
    all FF in the WRITE and the CLOSE), as Windows clients do."""
    b = Client(b_port, dialect, share=share)
    parts = []

    def grab(cmd, body, **kw):
        parts.append((cmd, body, kw.get("charge", 0 if b.dialect == 0x0202 else 1)))
        return 0
    send, b.send = b.send, grab
    b.create_req(path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN)
    d = os.urandom(8 * KB)
    b.write_req(b"\xff" * 16, off, d)
    b.send(CLOSE, struct.pack("<HHI16s", 24, 0, 0, b"\xff" * 16))
    b.send = send
    msg, mids = b"", []
    for i, (cmd, body, charge) in enumerate(parts):
        elem = HDR.pack(b"\xfeSMB", 64, charge, 0, cmd, 32, FLAG_RELATED if i else 0, 0,
                        b.next_id, 0xFEFF, b.tid, b.sid, b"\0" * 16) + body
        mids.append(b.next_id)
        b.next_id += max(charge, 1)
        if i < len(parts) - 1:
            elem += b"\0" * (-len(elem) % 8)
            elem = elem[:20] + struct.pack("<I", len(elem)) + elem[24:]
        msg += elem
    b.nb.send_packet(msg)
    got = {}
    while len(got) < len(mids):
        raw = b.nb.recv_packet(30).get_trailer()
        o = 0
        while True:
            r = Response(raw[o:])
            if r.mid in mids and not (r.status == 0x103 and r.flags & 2):
                got[r.mid] = r.status
            if not r.next:
                break
            o += r.next
    if any(got[m] != 0 for m in mids):
        die("%s: B's compound: statuses %r" % (what, [hex(got[m]) for m in mids]))
    model[off:off + len(d)] = d
    b.logoff()
    print("B: wrote 8 KiB at %d %s" % (off, what))


def await_break(lkey, what):
    n = a.wait_notification(timeout=10)
    if n is None:
        die("%s: A got no break within 10 s" % what)
    brk = Client.parse_break(n)
    print("A: break %r" % (brk[:1] + brk[2:],))
    if brk[0] == "lease" and brk[4] & 1:
        ack = a.wait(a.lease_ack(lkey, brk[3]))
        if ack.status != 0:
            die("lease break ack: 0x%08x" % ack.status)


# 1: a random reader; the proxy fetches the file
fa, key = open_a()
random_reads(fa, 300, "first open")
print("A: 300 random reads correct")

# 2: another client writes through the proxy
off1 = rnd.randrange(0, max(1, size - 8 * KB))
write_b(port, off1, "through the proxy")
if mode != "none":
    await_break(key, "write through the proxy")
check(fa, off1, 8 * KB, "B's write through the proxy, read at once")
random_reads(fa, 100, "after B's write through the proxy")
a.close(fa)
print("A: sees the write through the proxy at once")

# 2b: the same as one related compound CREATE + WRITE + CLOSE
fa, key = open_a()
random_reads(fa, 200, "open before the compound")
offc = rnd.randrange(0, max(1, size - 8 * KB))
compound_write_b(port, offc, "through the proxy in a related compound")
if mode != "none":
    await_break(key, "compound write through the proxy")
check(fa, offc, 8 * KB, "B's compound write through the proxy, read at once")
a.close(fa)
print("A: sees the compound write through the proxy at once")

# 3: a write on the server, bypassing the proxy
fa, key = open_a()
random_reads(fa, 300, "second open")
off2 = rnd.randrange(0, max(1, size - 8 * KB))
write_b(sport, off2, "directly to smbd")
if mode != "none":
    await_break(key, "write directly to smbd")
    check(fa, off2, 8 * KB, "B's direct write, read at once after the break")
    print("A: sees the direct write at once (break)")
a.close(fa)
fa, key = open_a()
check(fa, off2, 8 * KB, "B's direct write, after reopening")
random_reads(fa, 200, "after reopening")
a.close(fa)
print("A: sees the direct write after reopening")
a.logoff()
print("OK")
