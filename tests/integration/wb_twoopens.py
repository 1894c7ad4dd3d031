#!/usr/bin/python3
"""wb_twoopens.py PORT SHARE_DIR DIALECT - the last acknowledged write of a
range wins, also when two opens of one file write it.

Under write_behind = always (long flush timers) every write below is
absorbed and buffered, each open with its own buffer.  The server must
end up with what the client wrote last, whatever order smbaccel flushes
its buffers in:

  one   one connection, two opens of a file: 4 KiB of 'X' at 0 through
        the first, then 4 KiB of 'Y' at 0 through the second; the second
        closed first (it was found last, so it was flushed first, and the
        older 'X' went after it: the defect this covers);
  two   the same with each open on its own connection (the second
        connection's write never waited for the first's buffer);
  far   two opens of one connection writing disjoint ranges (0 and 64 KiB):
        both land, and neither waits for the other;
  alias another connection reads the file by another name of it
        ("NAME::$DATA", "NAME::$DATA" in upper case) while the first holds 4 KiB of 'X'
        written and not closed: opened after the write, and opened
        before it and read after; each read must see the 'X' (smbaccel
        must flush the writer's buffer first, whatever the name);
  link  another connection reads the file through a hard link made on
        the server's disk (another name, the same on-disk id) while the
        first holds 4 KiB of 'L' written and not closed: the read must
        see the 'L' (smbaccel knows the two opens as one file by the
        on-disk id it asks the server for);
  shares the file through two shares of one directory ([share], and
        [alias] with the same path, as [homes] and a share of the home
        directories): 'S' written through [share] and read by another
        connection through [alias]; 'T' the same on one connection (a
        second TREE_CONNECT, of [alias]); 'X' through [share] and 'Y'
        through [alias] on one connection, [alias]'s open closed first
        (the disk must end with 'Y'); and a sequential reader through
        [alias] (read-ahead) reads 4 KiB at 96 KiB after 'B' was written
        there through [share] (must see the 'B'): smbaccel knows the file
        as one by its on-disk id, whatever the share;
  names one connection, two opens of one file by two names: "NAME::$DATA",
        and NAME through a second tree of the share (a second
        TREE_CONNECT); for each, 'X' written through the first and 'Y'
        through the second, the second closed first (the disk must end
        with 'Y'), and 'R' written through the first and read through
        the second before any close (the read must see 'R').

Prints one line of case=RESULT, RESULT the 4 KiB block(s) on the
server's disk after both closes, each as its one repeated byte ("?" if
mixed or short): "Y" is right for one and two, "XY" for far; for alias
the two reads' bytes the same way ("-" for none): "XX"; for names the
disk after the two writes by ::$DATA and by the second tree, then the
two reads: "YYRR"; for link the read's: "L"; for shares the two
reads, the disk and the read-ahead read: "STYB".
"""
import os
import struct
import sys

from wb_smb import Client, FILE_OVERWRITE_IF

port, share_dir, dialect = int(sys.argv[1]), sys.argv[2], sys.argv[3]
K4 = 4096


def disk(name, offsets):
    with open(os.path.join(share_dir, name), "rb") as f:
        data = f.read()
    out = ""
    for off in offsets:
        blk = data[off:off + K4]
        out += chr(blk[0]) if len(blk) == K4 and len(set(blk)) == 1 else "?"
    return out


def case(ca, cb, name, off_b):
    """ca opens NAME (a new file), cb opens it too; 4 KiB of 'X' at 0
    through the first, 4 KiB of 'Y' at off_b through the second; the
    second closed first.  The blocks at 0 and off_b on the disk."""
    a, _ = ca.create(name, disposition=FILE_OVERWRITE_IF)
    b, _ = cb.create(name)
    ca.write(a, 0, b"X" * K4)
    cb.write(b, off_b, b"Y" * K4)
    cb.close(b)
    ca.close(a)
    return disk(name, sorted({0, off_b}))


def alias(ca, cb, name):
    """The alias case: what cb's two reads got."""
    a, _ = ca.create(name, disposition=FILE_OVERWRITE_IF)
    early, _ = cb.create(name.upper() + "::$DATA")
    ca.write(a, 0, b"X" * K4)
    late, _ = cb.create(name + "::$DATA")
    out = ""
    for fid in (late, early):
        _, data = cb.read(fid, 0, K4)
        out += (chr(data[0]) if len(data) == K4 and len(set(data)) == 1
                else "?" if data else "-")
        cb.close(fid)
    ca.close(a)
    return out


def link(ca, cb, name):
    """The link case: what cb's read through the link got."""
    a, _ = ca.create(name, disposition=FILE_OVERWRITE_IF)
    other = os.path.join(share_dir, name + "-link")
    if os.path.exists(other):
        os.unlink(other)
    os.link(os.path.join(share_dir, name), other)
    b, _ = cb.create(name + "-link")
    ca.write(a, 0, b"L" * K4)
    _, data = cb.read(b, 0, K4)
    cb.close(b)
    ca.close(a)
    return (chr(data[0]) if len(data) == K4 and len(set(data)) == 1
            else "?" if data else "-")


def names(c):
    """The names case, on one connection."""
    path = "\\\\127.0.0.1\\share".encode("utf-16le")
    r = c.wait(c.send(3, struct.pack("<HHHH", 9, 0, 72, len(path)) + path, tid=0))
    if r.status != 0:
        raise SystemExit("second TREE_CONNECT: status 0x%08x" % r.status)
    tid2 = r.tid
    out = ""
    for n, (name_b, kw) in enumerate([("n-stream::$DATA", {}),
                                      ("n-tree", {"tid": tid2})]):
        name = name_b.split(":")[0]
        a, _ = c.create(name, disposition=FILE_OVERWRITE_IF)
        b, _ = c.create(name_b, **kw)
        c.write(a, 0, b"X" * K4)
        c.write(b, 0, b"Y" * K4, **kw)
        c.close(b, **kw)
        c.close(a)
        out += disk(name, [0])
    for name_b, kw in [("r-stream::$DATA", {}), ("r-tree", {"tid": tid2})]:
        name = name_b.split(":")[0]
        a, _ = c.create(name, disposition=FILE_OVERWRITE_IF)
        b, _ = c.create(name_b, **kw)
        c.write(a, 0, b"R" * K4)
        _, d = c.read(b, 0, K4, **kw)
        c.close(b, **kw)
        c.close(a)
        out += (chr(d[0]) if len(d) == K4 and len(set(d)) == 1
                else "?" if d else "-")
    return out


def one(d):
    """A 4 KiB read's bytes as its one repeated byte ("?" mixed or short,
    "-" none)."""
    return (chr(d[0]) if len(d) == K4 and len(set(d)) == 1
            else "?" if d else "-")


def shares(ca, name):
    """The shares case."""
    path = "\\\\127.0.0.1\\alias".encode("utf-16le")
    r = ca.wait(ca.send(3, struct.pack("<HHHH", 9, 0, 72, len(path)) + path, tid=0))
    if r.status != 0:
        raise SystemExit("TREE_CONNECT to alias: status 0x%08x" % r.status)
    tid2 = r.tid
    cb = Client(port, dialect, share="alias")
    out = ""
    # another connection, through [alias]
    a, _ = ca.create(name + "-1", disposition=FILE_OVERWRITE_IF)
    ca.write(a, 0, b"S" * K4)
    b, _ = cb.create(name + "-1")
    out += one(cb.read(b, 0, K4)[1])
    cb.close(b)
    ca.close(a)
    # one connection, its second tree
    a, _ = ca.create(name + "-2", disposition=FILE_OVERWRITE_IF)
    b, _ = ca.create(name + "-2", tid=tid2)
    ca.write(a, 0, b"T" * K4)
    out += one(ca.read(b, 0, K4, tid=tid2)[1])
    ca.close(b, tid=tid2)
    ca.close(a)
    # the last acknowledged write wins
    a, _ = ca.create(name + "-3", disposition=FILE_OVERWRITE_IF)
    b, _ = ca.create(name + "-3", tid=tid2)
    ca.write(a, 0, b"X" * K4)
    ca.write(b, 0, b"Y" * K4, tid=tid2)
    ca.close(b, tid=tid2)
    ca.close(a)
    out += disk(name + "-3", [0])
    # a sequential reader's read-ahead through [alias]
    a, _ = ca.create(name + "-4", disposition=FILE_OVERWRITE_IF)
    for off in range(0, 256 * 1024, 64 * 1024):
        ca.write(a, off, b"A" * (64 * 1024))
    ca.close(a)
    b, _ = cb.create(name + "-4")
    for off in range(0, 64 * 1024, K4):
        cb.read(b, off, K4)
    a, _ = ca.create(name + "-4")
    ca.write(a, 96 * 1024, b"B" * K4)
    out += one(cb.read(b, 96 * 1024, K4)[1])
    cb.close(b)
    ca.close(a)
    cb.logoff()
    return out


c = Client(port, dialect)
c2 = Client(port, dialect)
res = ["one=" + case(c, c, "two-one", 0),
       "two=" + case(c, c2, "two-two", 0),
       "far=" + case(c, c, "two-far", 65536),
       "alias=" + alias(c, c2, "two-alias"),
       "link=" + link(c, c2, "two-link"),
       "names=" + names(c),
       "shares=" + shares(c, "two-shares")]
c2.logoff()
c.logoff()
print(" ".join(res))
