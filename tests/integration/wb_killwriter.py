#!/usr/bin/python3
"""wb_killwriter.py PORT DIALECT FILE [INFLIGHT]

Writes 1 KiB blocks to FILE forever (block i holds i as 8 little-endian
bytes, repeated), keeping up to INFLIGHT (default 8) WRITEs in flight, and
prints "A i" (line-buffered) for every block the server acknowledged with
success.  Meant to be killed; the caller checks every acknowledged block.
A failed WRITE or a lost connection ends it with exit 2 (after printing
what was acknowledged).

wb_killwriter.py --check PATH|smb:PORT:DIALECT:FILE ACKLOG
Checks every block named in ACKLOG (complete lines only) in the local file
PATH or, with smb:..., read back through a new connection."""
import sys


def block(i):
    return i.to_bytes(8, "little") * 128


def acked_blocks(log):
    out = set()
    with open(log, "rb") as f:
        for line in f.read().split(b"\n")[:-1]:   # the last one may be cut
            if line.startswith(b"A "):
                out.add(int(line[2:]))
    return out


if sys.argv[1] == "--check":
    src, log = sys.argv[2], sys.argv[3]
    blocks = acked_blocks(log)
    if not blocks:
        print("no acknowledged blocks in %s" % log)
        sys.exit(1)
    top = max(blocks)
    if src.startswith("smb:"):
        from wb_smb import Client, GENERIC_READ, FILE_OPEN
        _, port, dialect, path = src.split(":", 3)
        c = Client(int(port), dialect)
        fid, _ = c.create(path, access=GENERIC_READ, disposition=FILE_OPEN)
        data = c.read_all(fid, 0, (top + 1) * 1024)
        c.close(fid)
        c.logoff()
    else:
        data = open(src, "rb").read()
    bad = [i for i in sorted(blocks) if data[i * 1024:(i + 1) * 1024] != block(i)]
    print("%d blocks acknowledged (highest %d), file has %d bytes, %d acknowledged blocks missing%s"
          % (len(blocks), top, len(data), len(bad), (", first %d" % bad[0]) if bad else ""))
    sys.exit(1 if bad else 0)

from wb_smb import Client, FILE_OVERWRITE_IF
port, dialect, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
inflight = int(sys.argv[4]) if len(sys.argv) > 4 else 8
c = Client(port, dialect)
fid, _ = c.create(path, disposition=FILE_OVERWRITE_IF)
out = sys.stdout
nxt = 0
mids = {}
try:
    while True:
        while len(mids) < inflight:
            mids[c.write_req(fid, nxt * 1024, block(nxt))] = nxt
            nxt += 1
        r = c._recv_one()
        if r.mid in mids and r.mid in c.done:
            c.done.pop(r.mid)
            i = mids.pop(r.mid)
            if r.status != 0:
                print("E %d 0x%08x" % (i, r.status), flush=True)
                sys.exit(2)
            out.write("A %d\n" % i)
            out.flush()
except Exception as e:
    print("X %s" % e, flush=True)
    sys.exit(2)
