#!/usr/bin/python3
"""keyed_reauth.py PORT CASE [SMBACCELCTL ARGS...] - re-authentication of an
established session (impacket, SMB 3.0).

  fail   reads the first 64 KiB of "big" in 4 KiB reads (read-ahead under
         way through smbaccel), writes 1 KiB of 'A' and 1 KiB of 'B' into
         a new "reauth.txt" (absorbed through smbaccel), then
         re-authenticates with a wrong password: the server refuses it and
         deletes the session (MS-SMB2 3.3.5.5.3).  Then a READ of "big" at
         64 KiB and a WRITE of 'Z' at 2 KiB, with the session's old keys.
         Prints "reauth=R read=R write=W", each OK, the NT status in hex,
         or DROPPED (the server ended the connection): the same through smbaccel as directly (before the fix
         smbaccel answered both from its caches: the READ from read-ahead,
         the WRITE acknowledged and then lost).  The two writes made
         before the re-authentication must be on the server's disk.
  flags  a session of a server that requires encryption re-authenticates
         (with the right password); prints the session's "encrypt" as
         `smbaccelctl conns --json` shows it before and after:
         "encrypt=True,True" (before the fix the re-authentication's
         answer, whose SessionFlags smbd leaves 0, cleared it).
"""
import json
import subprocess
import sys

from impacket import smb3, smb3structs as s3
from impacket.nmb import NetBIOSError
from impacket.smbconnection import SMBConnection, SessionError

port, case, ctl = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
K = 1024
KEYS = ("EncryptionKey", "DecryptionKey", "SigningKey", "SessionID",
        "SessionFlags", "SessionKey", "SigningActivated")


def status(fn):
    try:
        fn()
        return "OK"
    except (SessionError, smb3.SessionError) as e:
        code = e.getErrorCode() if hasattr(e, "getErrorCode") else e.get_error_code()
        return "%08x" % code
    except (NetBIOSError, OSError):
        return "DROPPED"   # smbd ends the connection


def encrypt_flag():
    out = json.loads(subprocess.check_output(ctl + ["conns", "--json"]))
    return [s.get("encrypt") for c in out["conns"] for s in c["sessions"]]


c = SMBConnection("*SMBSERVER", "127.0.0.1", sess_port=port,
                  preferredDialect=s3.SMB2_DIALECT_30)
c.login("smbtest", "testpass")
s = c._SMBConnection
tid = c.connectTree("share")
if case == "fail":
    big = c.openFile(tid, "big", desiredAccess=0x12019f, creationDisposition=1)
    for off in range(0, 64 * K, 4 * K):
        c.readFile(tid, big, off, 4 * K)
    w = c.openFile(tid, "reauth.txt", desiredAccess=0x12019f,
                   creationDisposition=5)
    c.writeFile(tid, w, b"A" * K, 0)
    c.writeFile(tid, w, b"B" * K, K)
    saved = {k: s._Session[k] for k in KEYS}
    r = status(lambda: s.login("smbtest", "wrong-password"))
    for k, v in saved.items():
        s._Session[k] = v
    rd = status(lambda: c.readFile(tid, big, 64 * K, 4 * K))
    wr = status(lambda: c.writeFile(tid, w, b"Z" * K, 2 * K))
    print("reauth=%s read=%s write=%s" % (r, rd, wr))
elif case == "flags":
    w = c.openFile(tid, "reauth-flags.txt", desiredAccess=0x12019f,
                   creationDisposition=5)
    c.writeFile(tid, w, b"A" * K, 0)
    before = encrypt_flag()
    saved = {k: s._Session[k] for k in KEYS}
    s.login("smbtest", "testpass")
    # the server keeps the session's keys (MS-SMB2 3.3.5.5.3); impacket
    # derives new ones from the new exchange, which smbd could not open
    for k, v in saved.items():
        s._Session[k] = v
    after = encrypt_flag()
    c.writeFile(tid, w, b"B" * K, K)
    c.closeFile(tid, w)
    print("encrypt=%s,%s" % (",".join(map(str, before)),
                             ",".join(map(str, after))))
