"""csn_writes - writes of a client that raised its ChannelSequence.

Usage: csn_writes.py PORT FILE SEED CSN COUNT [--sign]

A client that reconnects after a network failure raises the
ChannelSequence of its session (MS-SMB2 3.2.4.1, 3.2.7.1; Windows, and
Linux since 5.16), and the server takes the newest one a request naming
an open carries as the open's, failing a later WRITE, SET_INFO or IOCTL
with an older one STATUS_FILE_NOT_AVAILABLE (3.3.5.2.10).

impacket (Debian's python3-impacket, /usr/bin/python3) at SMB 3.0, no
oplock, no lease: every request after the session set-up carries
ChannelSequence CSN.  It creates FILE and writes COUNT writes of 1 KiB,
in order, of the pattern of SEED (random bytes of Python's generator with
that seed), the first half with CSN, the second with CSN + 1 (the
client moved on again); then one more 1 KiB WRITE at offset COUNT KiB
with CSN (older now: the server fails it), one at the same offset with
CSN + 1, and closes.  Each step prints "STEP STATUS" (the NTSTATUS name answered), so
a run directly against smbd and one through smbaccel can be compared
line by line; the file on disk must then hold COUNT + 1 KiB of the
pattern.  --sign: a signed session (the ChannelSequence is under the
signature, so smbaccel, holding the key, signs its WRITEs with it).
"""
import random
import sys

from impacket import smb3structs as s3
from impacket.smbconnection import SMBConnection, SessionError
from impacket.nt_errors import ERROR_MESSAGES

USER, PASS = "smbtest", "testpass"


def status_name(e):
    code = e.getErrorCode() & 0xFFFFFFFF
    return ERROR_MESSAGES.get(code, ("0x%08x" % code,))[0]


def main():
    port, fname, seed, csn, count = (int(sys.argv[1]), sys.argv[2],
                                     int(sys.argv[3]), int(sys.argv[4]),
                                     int(sys.argv[5]))
    data = random.Random(seed).randbytes(1024 * (count + 1))
    conn = SMBConnection("127.0.0.1", "127.0.0.1", sess_port=port,
                         preferredDialect=s3.SMB2_DIALECT_30)
    smb = conn.getSMBServer()
    # impacket encrypts every 3.x session the server allows to be
    # encrypted; a real client encrypts only on demand
    smb._Connection["SupportsEncryption"] = False
    if "--sign" in sys.argv[6:]:
        smb._Connection["RequireSigning"] = True
    conn.login(USER, PASS)
    send = smb.sendSMB
    now = {"csn": 0}

    def send_csn(p):
        if p["Command"] not in (s3.SMB2_NEGOTIATE, s3.SMB2_SESSION_SETUP):
            # SMB3Packet at 3.x: ChannelSequence and Reserved
            p["ChannelSequence"] = now["csn"] & 0xFFFF
        return send(p)
    smb.sendSMB = send_csn

    tid = conn.connectTree("share")
    now["csn"] = csn
    fid = conn.createFile(tid, fname, desiredAccess=0x0012019F,
                          shareMode=7, creationDisposition=s3.FILE_OVERWRITE_IF,
                          creationOption=0x40)
    print("create STATUS_SUCCESS")
    for i in range(count):
        if i == count // 2:
            now["csn"] = csn + 1
        conn.writeFile(tid, fid, data[i * 1024:(i + 1) * 1024], i * 1024)
    print("writes(%d) STATUS_SUCCESS" % count)
    last = data[count * 1024:]
    for step, c in (("write-older", csn), ("write-same", csn + 1)):
        now["csn"] = c
        try:
            conn.writeFile(tid, fid, last, count * 1024)
            print(step, "STATUS_SUCCESS")
        except SessionError as e:
            print(step, status_name(e))
    now["csn"] = csn + 1
    conn.closeFile(tid, fid)
    print("close STATUS_SUCCESS")
    conn.disconnectTree(tid)
    conn.logoff()
    return 0


if __name__ == "__main__":
    sys.exit(main())
