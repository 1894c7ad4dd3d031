#!/usr/bin/python3
"""wb_mix.py PORT DIALECT FILE SEED OPS MODEL [wb|ra] [INITIAL] [NFILES]

A seeded random mix of operations on FILE of the share through PORT, the
same operations applied to the local file MODEL (os.pwrite / os.pread /
os.ftruncate); every READ, every QUERY_INFO end-of-file and the result of
every request must agree with the local file.  At the end FILE is closed;
the caller compares the server's file with MODEL (sha256).

Profile wb (issue 3 test 3): writes of 1 B - 256 KiB (sequential runs that
coalesce, overlapping rewrites, gaps past the end, bursts of pipelined
writes sent in shuffled order), reads, FLUSH, SET_INFO end-of-file (shrink
and grow), QUERY_INFO, CLOSE + reopen, and reads by a second connection
(one coherent file behind one proxy).
Profile ra (issue 4 test 5): FILE starts as a copy of INITIAL (already on
the share); runs of sequential 4 KiB - 64 KiB reads (read-ahead), small
writes into and just ahead of the region being read, truncation and
extension, reads across the end, random reads, CLOSE + reopen.

With NFILES > 1 (default 1) the same connection works on NFILES files at
once (FILE.1, FILE.2, ... and MODEL.1, ...; FILE itself when NFILES is 1),
each operation on a randomly chosen one: several opens with buffered
writes on one connection.

Prints a summary line; exit 1 with the first difference on stdout."""
import os
import random
import sys

from wb_smb import (Client, SMBError, GENERIC_READ, GENERIC_WRITE, FILE_OVERWRITE_IF,
                    FILE_OPEN, STATUS_END_OF_FILE, READ)

port, dialect, path, seed, nops, model = (int(sys.argv[1]), sys.argv[2], sys.argv[3],
                                          int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
profile = sys.argv[7] if len(sys.argv) > 7 else "wb"
initial = sys.argv[8] if len(sys.argv) > 8 and sys.argv[8] != "-" else None
nfiles = int(sys.argv[9]) if len(sys.argv) > 9 else 1
rnd = random.Random(seed)
KB = 1024
stats = {}


def count(k):
    stats[k] = stats.get(k, 0) + 1


hist = []      # (op number, what, file, offset, length) of every change
bad_off = None


def note(what, off=0, ln=0):
    hist.append((opno, what, path, off, ln))


def pwrite(d, off, what="WRITE"):
    note(what, off, len(d))
    os.pwrite(lf, d, off)


def die(msg):
    print("FAIL (seed %d, op %d): %s" % (seed, opno, msg))
    print("ops so far: %s" % sorted(stats.items()))
    if bad_off is not None:
        touching = [h for h in hist if h[2] == path and (h[1] in ("SETEOF", "CLOSE", "FLUSH") or
                                                      h[3] <= bad_off < h[3] + max(h[4], 1))]
        print("changes touching offset %d of %s (op, what, file, offset, length), last 12:" % (bad_off, path))
        for h in touching[-12:]:
            print("   ", h)
    print("last 15 changes:")
    for h in hist[-15:]:
        print("   ", h)
    sys.exit(1)


def logsize(lo, hi):
    """Log-uniform integer in [lo, hi]."""
    import math
    return int(min(hi, max(lo, round(math.exp(rnd.uniform(math.log(lo), math.log(hi + 1)))))))


def payload(n):
    return rnd.getrandbits(8 * n).to_bytes(n, "little") if n else b""


def excepthook(typ, val, tb):
    """Any exception (a hung or dropped connection) fails like a mismatch."""
    import traceback
    where = traceback.extract_tb(tb)[-1]
    if typ.__name__ == "NetBIOSTimeout" or "timed out" in str(val):
        val = "no answer within %ss (the client hung waiting; %s)" % (os.environ.get("WB_SMB_TIMEOUT", "60"), val)
    try:
        die("%s: %s (at %s:%d)" % (typ.__name__, val, os.path.basename(where.filename), where.lineno))
    except SystemExit:
        sys.stdout.flush()
        os._exit(1)


sys.excepthook = excepthook
opno = 0


def open_model(mpath):
    if profile == "ra":
        with open(initial, "rb") as f:
            init = f.read()
        with open(mpath, "wb") as f:
            f.write(init)
        return os.open(mpath, os.O_RDWR)
    return os.open(mpath, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)


def msize():
    return os.fstat(lf).st_size


def check_read(c, fid, off, length, who):
    st, data = c.read(fid, off, length)
    want = os.pread(lf, length, off)
    if not want:
        if st != STATUS_END_OF_FILE:
            die("%s READ %d+%d at/after EOF %d: status 0x%08x (%d bytes), expected END_OF_FILE"
                % (who, off, length, msize(), st, len(data)))
        return
    if st != 0:
        die("%s READ %d+%d (size %d): status 0x%08x" % (who, off, length, msize(), st))
    if data != want:
        global bad_off
        first = next((i for i in range(min(len(data), len(want))) if data[i] != want[i]),
                     min(len(data), len(want)))
        bad_off = off + first
        print("got  %s\nwant %s" % (data[first:first + 16].hex(), want[first:first + 16].hex()))
        die("%s READ %d+%d (size %d): got %d bytes, expected %d; first difference at offset %d"
            % (who, off, length, msize(), len(data), len(want), off + first))


c = Client(port, dialect)
b = None      # second connection, opened on demand
names = [(path, model)] if nfiles == 1 else [("%s.%d" % (path, k), "%s.%d" % (model, k))
                                             for k in range(1, nfiles + 1)]
files = []
for fpath, mpath in names:
    lf = open_model(mpath)
    disp = FILE_OPEN if profile == "ra" else FILE_OVERWRITE_IF
    fid, _ = c.create(fpath, access=GENERIC_READ | GENERIC_WRITE, disposition=disp)
    # wpos: where the current sequential write run continues; rpos: reads
    files.append({"path": fpath, "lf": lf, "fid": fid, "wpos": 0, "rpos": 0, "bfid": None})
F = files[0]
path, lf, fid, wpos, rpos, bfid = F["path"], F["lf"], F["fid"], 0, 0, None
maxio = min(c.max_write, c.max_read, 256 * KB)

for opno in range(nops):
    if nfiles > 1:
        F = rnd.choice(files)
        path, lf, fid, wpos, rpos, bfid = F["path"], F["lf"], F["fid"], F["wpos"], F["rpos"], F["bfid"]
    try:
        size = msize()
        x = rnd.random()
        if profile == "wb":
            kinds = [(0.40, "write_seq"), (0.55, "write_rand"), (0.63, "burst"), (0.75, "read"),
                     (0.80, "flush"), (0.85, "seteof"), (0.89, "query"), (0.92, "reopen"),
                     (0.97, "peer_read"), (1.00, "seq_small")]
        else:
            kinds = [(0.45, "read_seq"), (0.55, "read_rand"), (0.65, "write_ahead"),
                     (0.70, "write_rand"), (0.75, "seteof"), (0.80, "query"),
                     (0.84, "reopen"), (0.88, "read_eof"), (0.94, "seq_small"), (1.00, "peer_read")]
        kind = next(k for p, k in kinds if x < p)
        count(kind)
        if kind in ("write_seq", "write_rand", "seq_small", "write_ahead"):
            if kind == "seq_small":
                # a run of small sequential writes: what write-behind coalesces
                n = rnd.randint(16, 300)
                bs = rnd.choice([1, 7, 512, 1024, 1024, 4096])
                off = wpos if rnd.random() < 0.7 else rnd.randint(0, size + 4096)
                for _ in range(n):
                    d = payload(bs)
                    st, cnt = c.write(fid, off, d, check=False)
                    if st != 0 or cnt != len(d):
                        die("WRITE %d+%d: status 0x%08x count %d" % (off, len(d), st, cnt))
                    pwrite(d, off)
                    off += bs
                wpos = off
                continue
            if kind == "write_seq":
                off = wpos
                ln = logsize(1, maxio)
            elif kind == "write_ahead":
                # into or just ahead of what is being read sequentially
                off = max(0, rpos + rnd.randint(-8 * KB, 256 * KB))
                ln = logsize(1, 16 * KB)
            else:
                r = rnd.random()
                if r < 0.5 and size:
                    off = rnd.randint(0, size)            # overlap existing data
                elif r < 0.8:
                    off = size + logsize(1, 512 * KB)     # a gap past the end
                else:
                    off = rnd.randint(0, size + 64 * KB)
                ln = logsize(1, maxio)
            d = payload(ln)
            st, cnt = c.write(fid, off, d, check=False)
            if st != 0 or cnt != ln:
                die("WRITE %d+%d: status 0x%08x count %d" % (off, ln, st, cnt))
            pwrite(d, off)
            wpos = off + ln
        elif kind == "burst":
            # pipelined, non-overlapping, sent in shuffled order
            n = rnd.randint(2, 24)
            bs = rnd.choice([1024, 4096, 65536, logsize(1, 64 * KB)])
            base = wpos if rnd.random() < 0.6 else rnd.randint(0, size + 128 * KB)
            chunks = [(base + i * bs, payload(bs)) for i in range(n)]
            if rnd.random() < 0.7:
                rnd.shuffle(chunks)
            mids = [(c.write_req(fid, o, d), o, d) for o, d in chunks]
            for mid, o, d in mids:
                r = c.wait(mid)
                if r.status != 0:
                    die("pipelined WRITE %d+%d: status 0x%08x" % (o, len(d), r.status))
            for o, d in chunks:
                pwrite(d, o, "BURST")
            wpos = base + n * bs
        elif kind == "read_seq":
            if rnd.random() < 0.3:
                rpos = rnd.randint(0, max(0, size - 1))
            bs = rnd.choice([4 * KB, 4 * KB, 4 * KB, 16 * KB, 64 * KB])
            for _ in range(rnd.randint(8, 200)):
                check_read(c, fid, rpos, bs, "seq")
                rpos += bs
                if rpos >= msize():
                    rpos = 0
                    break
        elif kind in ("read", "read_rand"):
            off = rnd.randint(0, size + 4096)
            check_read(c, fid, off, logsize(1, maxio), "random")
        elif kind == "read_eof":
            off = max(0, size - rnd.randint(0, 8 * KB))
            check_read(c, fid, off, rnd.choice([1, 4 * KB, 64 * KB]), "eof")
        elif kind == "flush":
            note("FLUSH")
            st = c.flush(fid)
            if st != 0:
                die("FLUSH: status 0x%08x" % st)
        elif kind == "seteof":
            if rnd.random() < 0.6:
                new = rnd.randint(0, size)                    # shrink
            else:
                new = size + logsize(1, 1 << 20)              # grow
            st = c.set_eof(fid, new)
            if st != 0:
                die("SET_INFO end-of-file %d: status 0x%08x" % (new, st))
            note("SETEOF", new)
            os.ftruncate(lf, new)
            wpos = min(wpos, new)
            rpos = min(rpos, new)
        elif kind == "query":
            st, eof = c.query_eof(fid)
            if st != 0 or eof != size:
                die("QUERY_INFO end-of-file: status 0x%08x eof %r, expected %d" % (st, eof, size))
        elif kind == "reopen":
            note("CLOSE")
            st = c.close(fid)
            if st != 0:
                die("CLOSE: status 0x%08x" % st)
            fid, r = c.create(path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN)
            if r["eof"] != size:
                die("reopen: CREATE says end-of-file %d, expected %d" % (r["eof"], size))
        elif kind == "peer_read":
            if b is None:
                b = Client(port, dialect)
            if bfid is None:
                bfid, _ = b.create(path, access=GENERIC_READ, disposition=FILE_OPEN)
            off = rnd.randint(0, size + 4096) if rnd.random() < 0.5 else max(0, wpos - 64 * KB)
            check_read(b, bfid, off, logsize(1, maxio), "second-connection")
            st, eof = b.query_eof(bfid)
            if st != 0 or eof != size:
                die("second connection QUERY_INFO end-of-file: 0x%08x %r, expected %d" % (st, eof, size))
    finally:
        F.update(path=path, lf=lf, fid=fid, wpos=wpos, rpos=rpos, bfid=bfid)

# final: read each whole file through its open, then close
for F in files:
    path, lf, fid, bfid = F["path"], F["lf"], F["fid"], F["bfid"]
    size = msize()
    got = c.read_all(fid, 0, size + 65536)
    want = os.pread(lf, size + 65536, 0)
    if got != want:
        first = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
        die("final read of %s: %d bytes, expected %d, first difference at %d" % (path, len(got), len(want), first))
    st = c.close(fid)
    if st != 0:
        die("final CLOSE of %s: status 0x%08x" % (path, st))
    if bfid is not None:
        b.close(bfid)
    os.close(lf)
if b is not None:
    b.logoff()
c.logoff()
print("OK seed %d: %d ops on %d file(s), final size %d, %s" % (seed, nops, nfiles, size,
      " ".join("%s=%d" % kv for kv in sorted(stats.items()))))
