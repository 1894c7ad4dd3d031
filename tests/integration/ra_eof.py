#!/usr/bin/python3
"""ra_eof.py PORT DIALECT PREFIX

Issue 4 test 4, one side: reads around end-of-file, printed one per line
as "case: status length sha1-prefix" so that a direct run and a proxied
run can be diffed.  Read-ahead needs sequential small reads, so each case
first reads sequentially.  Cases:
  odd: a 100000-byte file read in 4 KiB reads from 0 to well past the end,
       then reads at EOF-1, EOF, EOF+1, far past EOF, of length 0, with
       MinimumCount larger than what is left;
  empty: an empty file read sequentially;
  truncated: A reads 40 x 4 KiB of a 1 MiB file, B (a second connection)
       truncates it to 150000 bytes, A goes on reading to the end, then B
       truncates to 0 and A reads again;
  grown: A reads a 20000-byte file to the end, B appends 50000 bytes
       (WRITE) and extends with SET_INFO, A reads on past the old end;
  rewritten: A reads 64 x 4 KiB, B overwrites 8 KiB inside what A has read
       and 8 KiB just ahead of A, A re-reads both and goes on;
  minimum: a file of 64 MiB + 10000 bytes (B extends it: above the
       document cache's read_cache_file_max, so read-ahead answers the
       reads below) read [E-10000, +8192), then [E-1808, +4096) with
       MinimumCount 2000 (the sequential read smbaccel widens: END_OF_FILE,
       1808 bytes are left), then [E-1808, +1000) and [E-1000, +500) with
       none: SUCCESS (the widened READ once kept the client's
       MinimumCount, and its END_OF_FILE was cached as the file's end at
       E-1808)."""
import hashlib
import random
import sys

from wb_smb import Client, FILE_OVERWRITE_IF, FILE_OPEN, GENERIC_READ, GENERIC_WRITE

port, dialect, prefix = int(sys.argv[1]), sys.argv[2], sys.argv[3]
rnd = random.Random(4242)
KB = 1024


def blob(n):
    return bytes(rnd.getrandbits(8) for _ in range(n))


def show(label, st, data):
    print("%s: 0x%08x %d %s" % (label, st, len(data), hashlib.sha1(data).hexdigest()[:12]), flush=True)


a = Client(port, dialect)
b = Client(port, dialect)


def make(name, size):
    f, _ = b.create(prefix + name, disposition=FILE_OVERWRITE_IF)
    data = blob(size)
    for off in range(0, size, 65536):
        b.write(f, off, data[off:off + 65536])
    return f


def seq(label, fid, start, count, bs=4 * KB):
    off = start
    for i in range(count):
        st, d = a.read(fid, off, bs)
        show("%s@%d" % (label, off), st, d)
        off += bs
    return off


# odd size
fb = make("odd", 100000)
b.close(fb)
fa, _ = a.create(prefix + "odd", access=GENERIC_READ, disposition=FILE_OPEN)
seq("odd", fa, 0, 30)
for off, ln, mn in ((99999, 4 * KB, 0), (100000, 4 * KB, 0), (100001, 4 * KB, 0), (1 << 30, 4 * KB, 0),
                    (5000, 0, 0), (98000, 4 * KB, 4 * KB), (98000, 4 * KB, 2000), (0, 4 * KB, 4 * KB)):
    st, d = a.read(fa, off, ln, minimum=mn)
    show("odd-%d+%d-min%d" % (off, ln, mn), st, d)
seq("odd-again", fa, 90000, 4)
a.close(fa)

# empty
fb = make("empty", 0)
b.close(fb)
fa, _ = a.create(prefix + "empty", access=GENERIC_READ, disposition=FILE_OPEN)
seq("empty", fa, 0, 5)
a.close(fa)

# truncated by another client
fb = make("trunc", 1 << 20)
fa, _ = a.create(prefix + "trunc", access=GENERIC_READ, disposition=FILE_OPEN)
off = seq("trunc-before", fa, 0, 40)
print("B set_eof 150000: 0x%08x" % b.set_eof(fb, 150000))
seq("trunc-after", fa, off, 12)
seq("trunc-reread", fa, 140 * KB, 6)
print("B set_eof 0: 0x%08x" % b.set_eof(fb, 0))
seq("trunc-zero", fa, 0, 3)
a.close(fa)
b.close(fb)

# grown by another client
fb = make("grown", 20000)
fa, _ = a.create(prefix + "grown", access=GENERIC_READ, disposition=FILE_OPEN)
off = seq("grown-before", fa, 0, 7)
b.write(fb, 20000, blob(50000))
seq("grown-after-write", fa, 16 * KB, 16)
print("B set_eof 200000: 0x%08x" % b.set_eof(fb, 200000))
seq("grown-after-seteof", fa, 64 * KB, 40)
a.close(fa)
b.close(fb)

# rewritten by another client inside and ahead of what A read
fb = make("rewritten", 2 << 20)
fa, _ = a.create(prefix + "rewritten", access=GENERIC_READ, disposition=FILE_OPEN)
off = seq("rw-before", fa, 0, 64)
b.write(fb, 100 * KB, blob(8 * KB))
b.write(fb, off + 4 * KB, blob(8 * KB))
seq("rw-inside", fa, 96 * KB, 4)
seq("rw-ahead", fa, off, 64)
a.close(fa)
b.close(fb)
# MinimumCount on the read smbaccel widens
E = (64 << 20) + 10000
fb = make("minimum", 65536)
print("B set_eof %d: 0x%08x" % (E, b.set_eof(fb, E)))
b.close(fb)
fa, _ = a.create(prefix + "minimum", access=GENERIC_READ, disposition=FILE_OPEN)
for off, ln, mn in ((E - 10000, 8192, 0), (E - 1808, 4096, 2000), (E - 1808, 1000, 0),
                    (E - 1000, 500, 0), (E - 1808, 4096, 0)):
    st, d = a.read(fa, off, ln, minimum=mn)
    show("min-E-%d+%d-min%d" % (E - off, ln, mn), st, d)
a.close(fa)
a.logoff()
b.logoff()
print("done")
