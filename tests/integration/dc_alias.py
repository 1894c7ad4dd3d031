#!/usr/bin/python3
"""dc_alias.py PORT DIALECT NAME

Another name of the same file changes it: a reader's document copy must
go.  Through smbaccel (read_ahead = always: the reader has no oplock, its
open keeps reading its copy until something through smbaccel changes the
file), on a share that is not case sensitive:
  data: reader R opens NAME and reads it at scattered offsets (a copy);
        writer X, another connection, opens NAME + "::$DATA" (the file's
        data stream, named: the same file) and writes 8 KiB of 'Z' at
        70000; R's next read there must give the 'Z's;
  case: the same with a name whose first letter is not ASCII: R opens
        "\u00c4" + NAME, X opens "\u00e4" + NAME (smbd folds the case of
        every letter; smbaccel folds ASCII, and knows the file by its
        on-disk id).
Each file is 256 KiB of 'A', made by the script (directly through PORT,
then closed).  Prints what it saw; exit 1 on old bytes.
"""
import sys

from wb_smb import Client, GENERIC_READ, GENERIC_WRITE, FILE_OPEN, FILE_OVERWRITE_IF

port, dialect, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
SIZE, K = 256 * 1024, 1024
OFFS = (200 * K, 10 * K, 130 * K, 70000, 250 * K, 100 * K)
bad = []

x = Client(port, dialect)
r = Client(port, dialect)
for case, rname, xname in (("data", name, name + "::$DATA"),
                           ("case", "\u00c4" + name, "\u00e4" + name)):
    f, _ = x.create(rname, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OVERWRITE_IF)
    for off in range(0, SIZE, 64 * K):
        x.write(f, off, b"A" * (64 * K))
    x.close(f)
    fr, _ = r.create(rname, access=GENERIC_READ, disposition=FILE_OPEN)
    for off in OFFS:
        st, d = r.read(fr, off, 4 * K)
        if st != 0 or d != b"A" * (4 * K):
            bad.append("%s: first read at %d: status 0x%08x" % (case, off, st))
    fx, _ = x.create(xname, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN)
    x.write(fx, 70000, b"Z" * (8 * K))
    x.flush(fx)
    x.close(fx)
    st, d = r.read(fr, 70000, 8 * K)
    if st != 0 or d != b"Z" * (8 * K):
        bad.append("%s: read after %r wrote through %r: status 0x%08x, %d of %d 'Z'"
                   % (case, rname, xname, st, d.count(b"Z"), 8 * K))
    else:
        print("%s: %r read what %r wrote" % (case, rname, xname))
    r.close(fr)
r.logoff()
x.logoff()
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
