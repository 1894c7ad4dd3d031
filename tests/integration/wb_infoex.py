#!/usr/bin/python3
"""wb_infoex.py PORT SHARE_DIR DIALECT - a rename or delete in the forms
Windows 10 and later send (FileRenameInformationEx, class 65, and
FileDispositionInformationEx, class 64, MS-FSCC 2.4.37.2, 2.4.11.2) waits
for what the connection buffered, as the classic forms do.

File A gets 1 KiB (absorbed and buffered under write_behind = always with
long flush timers); a SET_INFO of class 65 (rename to ex-c), then one of
class 64 (delete), goes on a second open B of the same connection, each
after 1 KiB more to A.  Prints, per class, the SET_INFO's status (Samba
4.17 refuses both classes; Windows Server takes them) and how many bytes
of A were on the server's disk when it was answered (diskCLASS=N): all of A's when the
SET_INFO waited for the connection's buffered writes, as smbaccel's rename
and delete must.
"""
import os
import struct
import sys

from wb_smb import Client, FILE_OVERWRITE_IF

port, share_dir, dialect = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = Client(port, dialect)
a, _ = c.create("ex-a", disposition=FILE_OVERWRITE_IF)
b, _ = c.create("ex-b", disposition=FILE_OVERWRITE_IF)
name = "ex-c".encode("utf-16-le")
cases = (
    (65, struct.pack("<I4sQI", 0, b"\0" * 4, 0, len(name)) + name),
    (64, struct.pack("<I", 0)),      # Flags 0: FILE_DISPOSITION_DO_NOT_DELETE
)
out = []
for i, (cls, buf) in enumerate(cases):
    c.write(a, i * 1024, bytes([0x41 + i]) * 1024)
    st = c.set_info(b, cls, buf)
    out.append("class%d=0x%08x disk%d=%d" % (
        cls, st, cls, os.path.getsize(os.path.join(share_dir, "ex-a"))))
c.close(a)
c.close(b)
c.logoff()
print(" ".join(out))
