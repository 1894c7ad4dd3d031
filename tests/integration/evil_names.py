#!/usr/bin/python3
"""evil_names.py PORT HOLD [long]

Through PORT, a client that names the server in its TREE_CONNECT path
with a newline, a terminal escape (ESC [31m) and a C1 control (U+009B):
the server does not check that part of the path, so smbaccel sees it as
the client sent it.  Writes 100 bytes to evil.dat, prints READY, keeps
the connection HOLD seconds (for `smbaccelctl shares`), then closes.
With "long": the server part is 254 x 'a' and an e-acute instead, which
smbaccel's 255-byte server field cuts inside the character."""
import sys
import time

from impacket import smb3structs as s3
from impacket.smbconnection import SMBConnection

port, hold = int(sys.argv[1]), float(sys.argv[2])
c = SMBConnection("evil", "127.0.0.1", sess_port=port,
                  preferredDialect=s3.SMB2_DIALECT_30)
c.getSMBServer()._Connection["SupportsEncryption"] = False
c.login("smbtest", "testpass")
# impacket builds the path from this (smb3.py, connectTree)
c.getSMBServer()._Connection["ServerIP"] = (
    "a" * 254 + "\u00e9" if sys.argv[3:] == ["long"] else "ev\nil\x1b[31m\u009b")
tid = c.connectTree("share")
fid = c.createFile(tid, "evil.dat")
c.writeFile(tid, fid, b"x" * 100)
c.closeFile(tid, fid)
print("READY", flush=True)
time.sleep(hold)
c.logoff()
