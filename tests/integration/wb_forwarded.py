#!/usr/bin/python3
"""wb_forwarded.py PORT DIALECT PREFIX errors|wt

Issue 3 test 4, one side: WRITEs the server must answer itself, each
printed as "case: status ..." so the caller can diff a direct run with a
proxied one.  Every case is followed by a normal write + read on a good
open to prove the connection still works, and the data each case must not
have changed is read back.
wt: 64 WRITE_THROUGH 1 KiB writes, then 64 1 KiB writes on a
FILE_WRITE_THROUGH open (the caller counts them on the wire: 128 WRITEs of
1 KiB upstream, one for one).

Cases: unknown FileId, closed FileId, wrong TreeId, wrong SessionId, open
without write access (read-only, read+attributes, append-only at 0 and at
EOF), FileId of another connection, channel != 0, DataOffset beyond the
message, offset + length overflow, a directory handle, write after
TREE_DISCONNECT of the open's tree, MAXIMUM_ALLOWED open."""
import os
import struct
import sys

from wb_smb import *

port, dialect, prefix, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
KB = 1024
out = []


def say(s):
    print(s, flush=True)


c = Client(port, dialect)
if mode == "wt":
    KB = 1024
    f, _ = c.create(prefix + "-wt", disposition=FILE_OVERWRITE_IF)
    sts = set(c.write(f, i * KB, bytes([i]) * KB, check=False, flags=WRITEFLAG_WRITE_THROUGH)[0] for i in range(64))
    print("write-through-flag x64: status 0x%08x" % max(sts))
    c.close(f)
    f, _ = c.create(prefix + "-wto", disposition=FILE_OVERWRITE_IF, options=OPT_NON_DIRECTORY | OPT_WRITE_THROUGH)
    sts = set(c.write(f, i * KB, bytes([i]) * KB, check=False)[0] for i in range(64))
    print("write-through-open x64: status 0x%08x" % max(sts))
    c.close(f)
    c.logoff()
    sys.exit(0)
good, _ = c.create(prefix + "-good", disposition=FILE_OVERWRITE_IF)
goodpos = 0
goodmodel = bytearray()


def sanity(label):
    """A normal write + read on the good open after each case."""
    global goodpos
    d = os.urandom(KB)
    st, cnt = c.write(good, goodpos, d, check=False)
    goodmodel[goodpos:goodpos + KB] = d
    goodpos += KB
    st2, data = c.read(good, 0, goodpos)
    if st != 0 or st2 != 0 or data != bytes(goodmodel):
        say("%s: SANITY FAILED write 0x%08x read 0x%08x match %s" % (label, st, st2, data == bytes(goodmodel)))
        sys.exit(1)


def case(label, st, extra=""):
    say("%s: status 0x%08x%s" % (label, st, extra))
    sanity(label)


def wstatus(fid, off, data, **kw):
    return c.write(fid, off, data, check=False, **kw)[0]


# 1. unknown FileId
case("unknown-fileid", wstatus(b"\x11" * 16, 0, b"u" * KB))
case("unknown-fileid-volatile", wstatus(good[:8] + b"\x77" * 8, 0, b"u" * KB))

# 2. closed FileId (data written before the close stays; after it fails)
f, _ = c.create(prefix + "-closed", disposition=FILE_OVERWRITE_IF)
c.write(f, 0, b"a" * KB)
c.close(f)
case("closed-fileid", wstatus(f, KB, b"b" * KB))
case("closed-fileid-again", wstatus(f, 0, b"c" * KB))

# 3. wrong TreeId / SessionId on a live open
f, _ = c.create(prefix + "-tid", disposition=FILE_OVERWRITE_IF)
case("wrong-treeid", wstatus(f, 0, b"t" * KB, tid=c.tid + 17))
case("treeid-zero", wstatus(f, 0, b"t" * KB, tid=0))
case("wrong-sessionid", wstatus(f, 0, b"s" * KB, sid=c.sid ^ 0x5a5a0000))
st, d = c.read(f, 0, 4 * KB)
case("tid-file-after", st, " len %d" % len(d))
c.close(f)

# 4. opens without write access
for name, access in (("read-only", FILE_READ_DATA),
                     ("read-attrs", FILE_READ_DATA | READ_ATTRS),
                     ("generic-read", GENERIC_READ),
                     ("append-only", FILE_APPEND_DATA | FILE_READ_DATA)):
    path = prefix + "-" + name
    f0, _ = c.create(path, disposition=FILE_OVERWRITE_IF)
    c.write(f0, 0, b"o" * (4 * KB))
    c.close(f0)
    f, r = c.create(path, access=access, disposition=FILE_OPEN)
    case("%s-write-at-0" % name, wstatus(f, 0, b"w" * KB))
    case("%s-write-at-eof" % name, wstatus(f, 4 * KB, b"w" * KB))
    case("%s-write-small-run" % name,
         max([wstatus(f, 8 * KB + i * KB, b"r" * KB) for i in range(8)]))
    st, d = c.read(f, 0, 64 * KB)
    case("%s-readback" % name, st, " len %d first %r last %r" % (len(d), d[:1], d[-1:]))
    c.close(f)

# 5. FileId of another connection's open
c2 = Client(port, dialect)
f2, _ = c2.create(prefix + "-other", disposition=FILE_OVERWRITE_IF)
case("other-connection-fileid", wstatus(f2, 0, b"x" * KB))
c2.close(f2)
c2.logoff()

# 6. malformed: channel, DataOffset, overflow
f, _ = c.create(prefix + "-malformed", disposition=FILE_OVERWRITE_IF)
body = struct.pack("<HHIQ16sIIHHI", 49, 0x70, KB, 0, f, 1, 0, 0, 0, 0) + b"m" * KB
case("channel-1", c.wait(c.send(WRITE, body, charge=c.charge_for(KB))).status)
body = struct.pack("<HHIQ16sIIHHI", 49, 0x70 + 64, KB, 0, f, 0, 0, 0, 0, 0) + b"m" * KB
case("dataoffset-past-end", c.wait(c.send(WRITE, body, charge=c.charge_for(KB))).status)
body = struct.pack("<HHIQ16sIIHHI", 49, 0x70, 2 * KB, 0, f, 0, 0, 0, 0, 0) + b"m" * KB
case("length-past-end", c.wait(c.send(WRITE, body, charge=c.charge_for(2 * KB))).status)
case("offset-overflow", wstatus(f, (1 << 64) - 512, b"v" * KB))
case("offset-2^63", wstatus(f, 1 << 63, b"v" * KB))
case("offset-huge", wstatus(f, (1 << 44), b"v" * KB))
st, d = c.read(f, 0, 64 * KB)
case("malformed-readback", st, " len %d" % len(d))
c.close(f)

# 7. directory handle
f, _ = c.create(prefix + "-dir", access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN_IF,
                options=0x1)
case("directory-write", wstatus(f, 0, b"d" * KB))
c.close(f)

# 8. MAXIMUM_ALLOWED open: write allowed for the owner
f, _ = c.create(prefix + "-max", access=0x02000000, disposition=FILE_OVERWRITE_IF)
case("maximum-allowed", wstatus(f, 0, b"M" * KB))
st, d = c.read(f, 0, 2 * KB)
case("maximum-allowed-readback", st, " %r" % (d[:1], ))
c.close(f)

# 9. write after the open's tree was disconnected (second tree)
c.smb._Connection["SequenceWindow"] = c.next_id
tid2 = c.conn.connectTree("share")
c.next_id = c.smb._Connection["SequenceWindow"]
f, _ = c.create(prefix + "-tree2", disposition=FILE_OVERWRITE_IF, tid=tid2)
c.write(f, 0, b"1" * KB, tid=tid2)
c.smb._Connection["SequenceWindow"] = c.next_id
c.conn.disconnectTree(tid2)
c.next_id = c.smb._Connection["SequenceWindow"]
case("after-tree-disconnect", wstatus(f, KB, b"2" * KB, tid=tid2))

c.close(good)
c.logoff()
say("done")
