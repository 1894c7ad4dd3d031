#!/usr/bin/python3
"""pl_rename.py PORT DIALECT - a file renamed while open, and a new file
created at its old name, by a client that asks for no lease (smbaccel
asks its own, keyed by the client, server, share and path).

  1. ren-a is created (smbaccel's RW lease), gets 1 KiB of 'A', and is
     renamed to ren-b through the same handle, which stays open;
  2. ren-a is created again and gets 1 KiB of 'B';
  3. that one is renamed to ren-c through a second handle opened only
     for it (DELETE access), as libsmbclient renames, and closed; ren-a
     is created a third time, and everything is closed.

The lease stays with its file: the key of the first open belongs to
ren-b now, and a CREATE of ren-a asking it would be refused
STATUS_INVALID_PARAMETER by the server (MS-SMB2 3.3.5.9.8; through
smbaccel until 2026-12-07, where directly it succeeds).  Prints the
statuses: "rename1=0xS create2=0xS rename2=0xS create3=0xS".  The
caller checks the files on the server's disk.
"""
import struct
import sys

from wb_smb import Client, FILE_OVERWRITE_IF, FILE_OPEN, DELETE

port, dialect = int(sys.argv[1]), sys.argv[2]


def rename_buf(to):
    name = to.encode("utf-16-le")
    return struct.pack("<B7sQI", 1, b"\0" * 7, 0, len(name)) + name


c = Client(port, dialect)
a, _ = c.create("ren-a", disposition=FILE_OVERWRITE_IF)
c.write(a, 0, b"A" * 1024)
st1 = c.set_info(a, 10, rename_buf("ren-b"))
b, r2 = c.create("ren-a", disposition=FILE_OVERWRITE_IF, check=False)
st3 = 0xFFFFFFFF
r4 = {"status": 0xFFFFFFFF}
if b is not None:
    c.write(b, 0, b"B" * 1024)
    d, _ = c.create("ren-a", access=DELETE, disposition=FILE_OPEN)
    st3 = c.set_info(d, 10, rename_buf("ren-c"))
    c.close(d)
    e, r4 = c.create("ren-a", disposition=FILE_OVERWRITE_IF, check=False)
    if e is not None:
        c.close(e)
    c.close(b)
c.close(a)
c.logoff()
print("rename1=0x%08x create2=0x%08x rename2=0x%08x create3=0x%08x" % (
    st1, r2["status"], st3, r4["status"]))
