#!/usr/bin/python3
"""dc_read.py PORT FILE SEED SIZE COUNT [--lease STATE] [--seq] [--dialect D]

COUNT synchronous 4 KiB reads at seeded random 4 KiB-aligned offsets of
FILE (SIZE bytes of smbdd's pattern for SEED: `smbdd write ... -s SEED`),
or with --seq the whole file in order (COUNT ignored), every byte
checked, on one open; with --lease STATE (r, rh, rw, rwh) the
CREATE asks for that lease and fails unless all of it is granted.  The
document cache's tests use it for an open whose answer proves it the
file's sole open (an RWH lease), which smbdd (libsmbclient: no oplock)
cannot ask for.  Prints "bytes=N reads=N lease=L"; exit 0 ok, 1 error,
3 wrong data.
"""
import struct
import sys

from wb_smb import Client, GENERIC_READ, FILE_OPEN, LEASE_R, LEASE_W, LEASE_H, lease_key

M64 = (1 << 64) - 1
STATES = {"r": LEASE_R, "rh": LEASE_R | LEASE_H, "rw": LEASE_R | LEASE_W,
          "rwh": LEASE_R | LEASE_W | LEASE_H}


def mix64(seed, w):
    """smbdd's pattern (tests/tools/smbdd.c mix64)."""
    z = (w * 0x9E3779B97F4A7C15 + (seed ^ 0xD1B54A32D192ED03) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def pattern(seed, off, n):
    out = bytearray()
    w = off >> 3
    while len(out) < n + (off & 7):
        out += struct.pack("<Q", mix64(seed, w))
        w += 1
    return bytes(out[off & 7:(off & 7) + n])


def main():
    port, path, seed, size, count = (int(sys.argv[1]), sys.argv[2], int(sys.argv[3]),
                                     int(sys.argv[4]), int(sys.argv[5]))
    args = sys.argv[6:]
    state = STATES[args[args.index("--lease") + 1]] if "--lease" in args else None
    dialect = args[args.index("--dialect") + 1] if "--dialect" in args else "3.0"
    c = Client(port, dialect)
    kw = {"lease": (lease_key(), state)} if state else {}
    fid, r = c.create(path, access=GENERIC_READ, disposition=FILE_OPEN, **kw)
    if state and (r["lease"] or 0) != state:
        print("dc_read: lease 0x%x asked, 0x%x granted" % (state, r["lease"] or 0))
        return 1
    slots = (size + 4095) // 4096
    s = seed ^ 0xD0C5EED
    if "--seq" in args:
        count = slots
    for k in range(count):
        s = (s + 0x9E3779B97F4A7C15) & M64
        off = k * 4096 if "--seq" in args else mix64(1, s) % slots * 4096
        st, d = c.read(fid, off, 4096)
        if st != 0:
            print("dc_read: READ %d: status 0x%08x" % (off, st))
            return 1
        if d != pattern(seed, off, min(4096, size - off)):
            print("dc_read: wrong bytes at %d" % off)
            return 3
    c.close(fid)
    c.logoff()
    print("bytes=%d reads=%d lease=%s" % (4096 * count, count, r["lease"]))
    return 0


sys.exit(main())
