#!/usr/bin/python3
"""pl_keys.py PORT SMBD_PORT DIALECT CASE - the key of the lease smbaccel
asks for a client that asks none (lease.c: one key per client, server,
share and path), where a name and a file part.  PORT is smbaccel's (or
smbd's, for the direct reference), SMBD_PORT smbd's, for a second client
that does not go through smbaccel.  Prints one line of results; the
caller compares it with the direct run and checks smbd's disk.

  elsewhere  client 1 creates kr-a and keeps it open (8 x 1 KiB of 'A');
             client 2, on smbd directly, renames it to kr-b, creates a
             new kr-a and closes it; client 1 creates kr-a again, and
             once more if that failed, and writes 1 KiB of 'D' into it.
             The lease went with kr-b: asked with its key, the CREATE is
             refused INVALID_PARAMETER (MS-SMB2 3.3.5.9.8).
             "rename=0xS open=0xS again=0xS|-"
  case       KCase is created, gets 8 x 64 KiB of 'A' (one credit each:
             no id to spare), and is opened again as "kcase" for reading
             (a share that ignores case: the same file).  With a key of
             its own the second open breaks the first's write caching,
             whose acknowledgement has no id: smbd's break timeout, 35 s.
             "open=0xS read=ok|bad"  then "secs=S" on a line of its own
  failren    kf-a is created, gets 8 x 64 KiB of 'A', is renamed to an
             existing kf-tgt without ReplaceIfExists (refused
             OBJECT_NAME_COLLISION), and opened again for reading by its
             unchanged name.  "rename=0xS open=0xS read=ok|bad", "secs=S"
  cased      on share "cased" (case sensitive = yes: two files): KCs-1
             is created (8 x 64 KiB of 'A', kept open), then kcs-1
             (64 KiB of 'B'), once more if that failed; then the same
             with KCs-2 and kcs-2.  "first=0xS again=0xS|- second=0xS"
  inflight   A and B are one client (one ClientGuid) through smbaccel,
             whose upstream the caller slows (pl_slowlink.py).  A creates
             kw-f (smbaccel's RW lease), B opens it too (the same key) and
             writes 4 KiB at 256 KiB (absorbed, written back at the idle
             flush: B's connection keeps an id to acknowledge with), then
             A writes 256 KiB (absorbed) and closes: A's data goes with
             the CLOSE in one compound (compound.c), which takes seconds
             upstream.  C, on smbd directly, opens and reads the file
             meanwhile: the break of the lease must be acknowledged only
             once A's WRITEs are answered, so that C reads all of it.
             "C read N bytes, ok|bad (A's CLOSE 0xS)" and "secs=S"; exit 1
             if bad.
"""
import struct
import sys
import time

from wb_smb import (Client, FILE_OVERWRITE_IF, FILE_OPEN, DELETE,
                    GENERIC_READ, GENERIC_WRITE, CLOSE, one_client)

INVALID_PARAMETER = 0xC000000D
port, sport, dialect, case = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                              sys.argv[4])


def rename_buf(to, replace):
    name = to.encode("utf-16-le")
    return struct.pack("<B7sQI", replace, b"\0" * 7, 0, len(name)) + name


def create_twice(c, name, **kw):
    """CREATE, and once more if it was refused INVALID_PARAMETER: (fid,
    first status, second status or None)."""
    fid, r = c.create(name, check=False, **kw)
    if fid is not None or r["status"] != INVALID_PARAMETER:
        return fid, r["status"], None
    fid, r2 = c.create(name, check=False, **kw)
    return fid, r["status"], r2["status"]


def st(s):
    return "-" if s is None else "0x%08x" % s


def elsewhere():
    c1 = Client(port, dialect)
    a, _ = c1.create("kr-a", disposition=FILE_OVERWRITE_IF)
    for i in range(8):
        c1.write(a, i * 1024, b"A" * 1024)
    c2 = Client(sport, dialect)
    x, _ = c2.create("kr-a", access=DELETE, disposition=FILE_OPEN)
    ren = c2.set_info(x, 10, rename_buf("kr-b", 1))
    c2.close(x)
    y, _ = c2.create("kr-a", disposition=FILE_OVERWRITE_IF)
    c2.close(y)
    b, s1, s2 = create_twice(c1, "kr-a", disposition=FILE_OVERWRITE_IF)
    if b is not None:
        c1.write(b, 0, b"D" * 1024)
        c1.close(b)
    c1.close(a)
    c1.logoff()
    c2.logoff()
    print("rename=0x%08x open=%s again=%s" % (ren, st(s1), st(s2)))


def reopen_check(c, name, size):
    """Open name for reading (timed), read its first 64 KiB: (status,
    "ok"|"bad", seconds)."""
    t0 = time.time()
    b, r = c.create(name, access=GENERIC_READ, disposition=FILE_OPEN, check=False)
    dt = time.time() - t0
    ok = "bad"
    if b is not None:
        s, data = c.read(b, 0, size)
        ok = "ok" if s == 0 and data == b"A" * size else "bad"
        c.close(b)
    return r["status"], ok, dt


def case_variant():
    size = 65536
    c = Client(port, dialect)
    a, _ = c.create("KCase", disposition=FILE_OVERWRITE_IF)
    for i in range(8):
        c.write(a, i * size, b"A" * size)
    s, ok, dt = reopen_check(c, "kcase", size)
    c.close(a)
    c.logoff()
    print("open=0x%08x read=%s" % (s, ok))
    print("secs=%.1f" % dt)


def failed_rename():
    size = 65536
    c = Client(port, dialect)
    t, _ = c.create("kf-tgt", disposition=FILE_OVERWRITE_IF)
    c.close(t)
    a, _ = c.create("kf-a", disposition=FILE_OVERWRITE_IF)
    for i in range(8):
        c.write(a, i * size, b"A" * size)
    ren = c.set_info(a, 10, rename_buf("kf-tgt", 0))
    s, ok, dt = reopen_check(c, "kf-a", size)
    c.close(a)
    c.logoff()
    print("rename=0x%08x open=0x%08x read=%s" % (ren, s, ok))
    print("secs=%.1f" % dt)


def cased():
    size = 65536
    c = Client(port, dialect, share="cased")
    res = []
    for n in (1, 2):
        a, _ = c.create("KCs-%d" % n, disposition=FILE_OVERWRITE_IF)
        for i in range(8):
            c.write(a, i * size, b"A" * size)
        b, s1, s2 = create_twice(c, "kcs-%d" % n, disposition=FILE_OVERWRITE_IF)
        if b is not None:
            c.write(b, 0, b"B" * size)
            c.close(b)
        c.close(a)
        res.append((s1, s2))
    c.logoff()
    print("first=%s again=%s second=%s" % (st(res[0][0]), st(res[0][1]),
                                            st(res[1][0])))


def inflight():
    a, b = one_client(port, 12)
    fa, _ = a.create("kw-f", disposition=FILE_OVERWRITE_IF)
    fb, _ = b.create("kw-f", access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN)
    # B's writes first, written back at the idle flush: they leave B's
    # connection an id to acknowledge with (its reserve), and A's writes
    # then wait for nothing of B's (px_coh_must_wait)
    da = bytes(range(256)) * 1024
    db = b"b" * 4096
    for i in range(4):
        b.write(fb, len(da) + i * 1024, db[i * 1024:(i + 1) * 1024])
    time.sleep(1.0)
    for i in range(8):
        a.write(fa, i * 32768, da[i * 32768:(i + 1) * 32768])
    cm = a.send(CLOSE, struct.pack("<HHI16s", 24, 0, 0, fa))
    time.sleep(0.5)
    c = Client(sport, "3.0")
    t0 = time.time()
    fc, r = c.create("kw-f", access=GENERIC_READ, disposition=FILE_OPEN, check=False)
    dt = time.time() - t0
    if fc is None:
        sys.exit("C's open failed 0x%08x" % r["status"])
    got = c.read_all(fc, 0, 1 << 20)
    c.close(fc)
    ca = a.wait(cm).status
    b.close(fb)
    for x in (a, b, c):
        x.logoff()
    ok = got == da + db
    print("C read %d bytes, %s (A's CLOSE 0x%08x)" % (len(got), "ok" if ok else "bad", ca))
    print("secs=%.1f" % dt)
    sys.exit(0 if ok else 1)


{"elsewhere": elsewhere, "case": case_variant, "failren": failed_rename,
 "cased": cased, "inflight": inflight}[case]()
