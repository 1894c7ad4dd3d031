#!/usr/bin/python3
"""pl_othersave.py PORT PORT2 - user A (PORT: smbaccel, or smbd for the
direct reference; no lease asked) opens nh-r/report.docx (share read,
write, delete) and reads it; user B, on PORT2 (smbd, or smbaccel: another
client), saves it Office-style: a temp file, report.docx renamed to
report.bak, the temp file renamed to report.docx, report.bak deleted; A
opens report.docx again and reads it, closes its first handle, and opens
it once more.  Prints "reopen=0xS read=v2|v1|- again=0xS".  Before
2026-12-07 through smbaccel A's reopen was refused 0xc000000d: A's first
open held smbaccel's lease key for the name with read caching, the key
had gone with the renamed file, and the server refuses a key for another
file (MS-SMB2 3.3.5.9.8)."""
import struct
import sys

from wb_smb import (Client, DELETE, FILE_CREATE, FILE_OPEN, FILE_OPEN_IF,
                    FILE_OVERWRITE_IF, GENERIC_READ, GENERIC_WRITE)

port, port2 = int(sys.argv[1]), int(sys.argv[2])
RW = GENERIC_READ | GENERIC_WRITE


def rename_buf(to):
    nm = to.encode("utf-16le")
    return struct.pack("<B7xQI", 1, 0, len(nm)) + nm


def rename(c, path, new):
    f, _ = c.create(path, access=DELETE | 0x80, disposition=FILE_OPEN)
    s = c.set_info(f, 10, rename_buf(new))
    c.close(f)
    return s


def office_save():
    d = "nh-r"
    doc, bak, tmp = d + "\\report.docx", d + "\\report.bak", d + "\\~wrl0001.tmp"
    a = Client(port, "3.0")
    b = Client(port2, "3.0")
    f, _ = b.create(d, disposition=FILE_OPEN_IF, options=1)
    b.close(f)
    f, _ = b.create(doc, disposition=FILE_OVERWRITE_IF)
    b.write(f, 0, b"version 1 " * 5000)
    b.close(f)
    h1, _ = a.create(doc, access=RW, disposition=FILE_OPEN)
    a.read(h1, 0, 10)
    f, _ = b.create(tmp, disposition=FILE_CREATE)
    b.write(f, 0, b"version 2 " * 6000)
    b.close(f)
    s = rename(b, doc, bak) | rename(b, tmp, doc)
    f, _ = b.create(bak, access=DELETE, disposition=FILE_OPEN)
    s |= b.set_info(f, 13, b"\x01")
    b.close(f)
    if s:
        sys.exit("B's save failed: 0x%08x" % s)
    h2, r = a.create(doc, access=GENERIC_READ, disposition=FILE_OPEN, check=False)
    got = "-"
    if h2 is not None:
        _, x = a.read(h2, 0, 10)
        got = {b"version 2 ": "v2", b"version 1 ": "v1"}.get(x, repr(x))
        a.close(h2)
    a.close(h1)
    h3, r3 = a.create(doc, access=GENERIC_READ, disposition=FILE_OPEN, check=False)
    if h3 is not None:
        a.close(h3)
    a.logoff()
    b.logoff()
    print("reopen=0x%08x read=%s again=0x%08x" % (r["status"], got, r3["status"]))


office_save()
