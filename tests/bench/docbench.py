#!/usr/bin/python3
"""docbench.py - the bench's impacket clients for documents (issue 13).

    docbench.py read HOST:PORT SHARE FILE SIZE COUNT SEED [--lease] [--open N]
        COUNT synchronous 4 KiB reads at seeded 4 KiB-aligned offsets of
        FILE (SIZE bytes of smbdd's pattern for SEED), each a separate
        request, with an R+H lease when --lease (the lease-holding client of
        the default policy; fails unless R is granted); --open N: open,
        read, close N times on one connection (the last pass is timed:
        "reopen it").  Every byte of every pass is checked after the
        timed part against smbdd's pattern.
    docbench.py save HOST:PORT SHARE NAME SIZE LOCAL [--lease]
        an Office-style save of document NAME: write ~$NAME.tmp in 4 KiB
        writes (with an RWH lease when --lease), rename NAME to NAME.bak,
        rename the temporary file to NAME, delete NAME.bak.  The bytes
        written are also put in LOCAL, for the caller to compare with the
        server's disk; NAME is read back through HOST:PORT too (untimed).

Prints, like smbdd, "bytes=N seconds=S MBps=M ops=N cpu_user=U cpu_sys=Y
cpu_per_op_us=Z" (seconds: from the CREATE's answer to the CLOSE's of the
timed pass, as smbdd counts from its open to its close; for save, the
whole sequence).  Exit 0 ok, 1 error, 3 wrong data.
"""
import os
import resource
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from wb_smb import (Client, LEASE_R, LEASE_W, LEASE_H, GENERIC_READ, GENERIC_WRITE, DELETE,  # noqa: E402
                    FILE_OPEN, FILE_CREATE, SET_INFO, lease_key)

M64 = (1 << 64) - 1


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


def endpoint(hp):
    """(host, port) of "HOST:PORT" (a bare PORT: 127.0.0.1)."""
    host, _, port = hp.rpartition(":")
    return host or "127.0.0.1", int(port)


def result(nbytes, secs, ops):
    ru = resource.getrusage(resource.RUSAGE_SELF)
    cpu = ru.ru_utime + ru.ru_stime
    print("bytes=%d seconds=%.6f MBps=%.3f ops=%d cpu_user=%.3f cpu_sys=%.3f cpu_per_op_us=%.3f"
          % (nbytes, secs, nbytes / 1e6 / secs if secs > 0 else 0, ops, ru.ru_utime, ru.ru_stime,
             cpu * 1e6 / ops if ops else 0))


def offsets(seed, size, count):
    slots = size // 4096
    state, out = seed ^ 0xD0C5EED, []
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & M64
        out.append(mix64(1, state) % slots * 4096)
    return out


def do_read(args):
    (host, port), share, path, size, count, seed = (endpoint(args[0]), args[1], args[2],
                                                    int(args[3]), int(args[4]), int(args[5]))
    lease = "--lease" in args
    passes = int(args[args.index("--open") + 1]) if "--open" in args else 1
    c = Client(port, "3.0", share=share, host=host)
    offs = offsets(seed, size, count)
    key = lease_key()     # one lease key for the file, as a client keeps it
    got = []
    secs = 0.0
    for _ in range(passes):
        kw = {"lease": (key, LEASE_R | LEASE_H)} if lease else {}
        fid, r = c.create(path, access=GENERIC_READ, disposition=FILE_OPEN, **kw)
        if lease and not ((r["lease"] or 0) & LEASE_R):
            print("docbench: R lease asked, granted %r" % (r["lease"],), file=sys.stderr)
            return 1
        t0 = time.monotonic()
        data = []
        for off in offs:
            st, d = c.read(fid, off, 4096)
            if st != 0:
                print("docbench: READ %d: status 0x%08x" % (off, st), file=sys.stderr)
                return 1
            data.append(d)
        c.close(fid)
        secs = time.monotonic() - t0
        got.append(data)
    c.logoff()
    for k, data in enumerate(got):
        for off, d in zip(offs, data):
            if d != pattern(seed, off, 4096):
                print("docbench: pass %d: wrong bytes at %d" % (k + 1, off), file=sys.stderr)
                return 3
    result(4096 * count, secs, count)
    return 0


def set_info_file(c, fid, cls, data):
    body = struct.pack("<HBBIHHI16s", 33, 1, cls, len(data), 96, 0, 0, fid) + data
    return c.wait(c.send(SET_INFO, body)).status


def rename(c, fid, to):
    name = to.encode("utf-16le")
    return set_info_file(c, fid, 10, struct.pack("<B7xQI", 1, 0, len(name)) + name)


def do_save(args):
    (host, port), share, name, size, local = (endpoint(args[0]), args[1], args[2], int(args[3]),
                                              args[4])
    tmp, bak = "~$" + name + ".tmp", name + ".bak"
    data = os.urandom(size)
    with open(local, "wb") as f:
        f.write(data)
    kw = {"lease": (lease_key(), LEASE_R | LEASE_W | LEASE_H)} if "--lease" in args else {}
    c = Client(port, "3.0", share=share, host=host)
    t0 = time.monotonic()
    fid, _ = c.create(tmp, access=GENERIC_READ | GENERIC_WRITE | DELETE, disposition=FILE_CREATE,
                      **kw)
    for off in range(0, size, 4096):
        c.write(fid, off, data[off:off + 4096])
    c.close(fid)
    fo, _ = c.create(name, access=DELETE | 0x80, disposition=FILE_OPEN)
    st = rename(c, fo, bak)
    c.close(fo)
    if st != 0:
        print("docbench: rename %s -> %s: 0x%08x" % (name, bak, st), file=sys.stderr)
        return 1
    ft, _ = c.create(tmp, access=DELETE | 0x80, disposition=FILE_OPEN)
    st = rename(c, ft, name)
    c.close(ft)
    if st != 0:
        print("docbench: rename %s -> %s: 0x%08x" % (tmp, name, st), file=sys.stderr)
        return 1
    fb, _ = c.create(bak, access=DELETE | 0x80, disposition=FILE_OPEN)
    st = set_info_file(c, fb, 13, b"\x01")
    c.close(fb)
    secs = time.monotonic() - t0
    if st != 0:
        print("docbench: delete %s: 0x%08x" % (bak, st), file=sys.stderr)
        return 1
    fid, _ = c.create(name, access=GENERIC_READ, disposition=FILE_OPEN)
    back = c.read_all(fid, 0, size + 1)
    c.close(fid)
    c.logoff()
    if back != data:
        print("docbench: %s after the save: %d bytes, not what was written" % (name, len(back)),
              file=sys.stderr)
        return 3
    result(size, secs, size // 4096 + 10)
    return 0


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("read", "save"):
        print(__doc__, file=sys.stderr)
        return 2
    return (do_read if sys.argv[1] == "read" else do_save)(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
