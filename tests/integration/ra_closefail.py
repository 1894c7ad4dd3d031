#!/usr/bin/python3
"""ra_closefail.py PORT NAME tree|session|signature|flags - a CLOSE the server
fails leaves the handle open, and smbaccel must go on knowing it.

NAME is a file of at least 256 KiB of b"A" on the share.  Handle g reads
NAME sequentially in 4 KiB READs (read-ahead fetches what follows), handle
f of the same connection has it open for writing.  A CLOSE of f sent with
a TreeId that names no tree (tree) or a SessionId that names no session
(session) fails (NETWORK_NAME_DELETED, MS-SMB2 3.3.5.2.11;
USER_SESSION_DELETED, 3.3.5.2.9) and f stays open: a WRITE of b"B"
through f succeeds.  So does a CLOSE of f on its own session and tree
that the server refuses before it looks for the open: signed with a bad
signature in a session that signs (signature: ACCESS_DENIED, 3.3.5.2.4),
or with a header flag that is not defined (flags: INVALID_PARAMETER,
smbd checks the flags of every request).  g then reads on over those bytes: it must
see b"B", as directly (smbaccel once forgot f at the failed CLOSE, its
WRITE went by unseen and g was served the b"A" read-ahead held).

Prints "key=value" lines; exits 1 when a read is stale or a status is not
as directly.
"""
import struct
import sys
import time

from wb_smb import CLOSE, Client, FILE_OPEN, GENERIC_READ, GENERIC_WRITE

KB = 1024
STATUS_NETWORK_NAME_DELETED = 0xC00000C9
STATUS_USER_SESSION_DELETED = 0xC0000203
STATUS_ACCESS_DENIED = 0xC0000022
STATUS_INVALID_PARAMETER = 0xC000000D
FLAG_UNDEFINED = 0x00000100


def main():
    port, name, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    c = Client(port, "3.0", sign=mode == "signature")
    g, _ = c.create(name, access=GENERIC_READ, disposition=FILE_OPEN)
    f, _ = c.create(name, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN)
    bad = 0
    off = 0
    while off < 64 * KB:              # a sequential reader: read-ahead
        st, d = c.read(g, off, 4 * KB)
        if st != 0 or d != b"A" * 4 * KB:
            print("read-before=%d status=0x%08x stale" % (off, st))
            bad = 1
        off += 4 * KB
    time.sleep(1)                     # its fetches arrive
    # f closed naming a tree or session that does not exist, with a bad
    # signature or an undefined flag: the server fails the CLOSE before it
    # looks for the open
    if mode == "tree":
        kw, want = {"tid": c.tid ^ 0x5A5A0000}, STATUS_NETWORK_NAME_DELETED
    elif mode == "session":
        kw, want = {"sid": c.sid ^ 0x5A5A0000}, STATUS_USER_SESSION_DELETED
    elif mode == "signature":
        kw, want = {"bad_signature": True}, STATUS_ACCESS_DENIED
    else:
        kw, want = {"flags": FLAG_UNDEFINED}, STATUS_INVALID_PARAMETER
    st = c.wait(c.send(CLOSE, struct.pack("<HHI16s", 24, 0, 0, f), **kw)).status
    print("close-%s-%s=0x%08x" % ("no" if mode in ("tree", "session") else "bad", mode, st))
    if st != want:
        bad = 1
    st, n = c.write(f, 96 * KB, b"B" * 8 * KB, check=False)
    print("write-after=0x%08x" % st)
    if st != 0:
        bad = 1
    stale = 0
    while off < 128 * KB:
        st, d = c.read(g, off, 4 * KB)
        want = b"B" * 4 * KB if 96 * KB <= off < 104 * KB else b"A" * 4 * KB
        if st != 0 or d != want:
            print("read=%d status=0x%08x got=%r want=%r" % (off, st, d[:1], want[:1]))
            stale += 1
        off += 4 * KB
    print("stale-reads=%d" % stale)
    st = c.close(f)
    print("close=0x%08x" % st)
    if st != 0 or stale:
        bad = 1
    c.close(g)
    c.logoff()
    sys.exit(bad)


if __name__ == "__main__":
    main()
