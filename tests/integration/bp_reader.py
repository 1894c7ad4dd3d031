#!/usr/bin/python3
"""Slow consumer with many reads in flight, for t_backpressure.sh.

usage: bp_reader.py PORT SHARE FILE SIZE GOFILE [USER PASS]

Logs in with impacket (dialect 3.0), opens FILE, sends as many 1 MiB READs
as it has credits for (up to SIZE bytes) without reading any response,
prints "SENT n", waits until GOFILE exists, then reads every response and
prints "SHA256 <hex>" of the data reassembled by offset.

Message ids are assigned here, not by impacket: impacket's own read() only
advances its id window by the CreditCharge when a response arrives, so
pipelined multi-credit requests would reuse ids (SMB-NOTES).
"""
import hashlib, os, struct, sys, time
from impacket.smbconnection import SMBConnection
from impacket import smb3structs as s3

port, share, path, size, gofile = (int(sys.argv[1]), sys.argv[2], sys.argv[3],
                                   int(sys.argv[4]), sys.argv[5])
user = sys.argv[6] if len(sys.argv) > 6 else "smbtest"
password = sys.argv[7] if len(sys.argv) > 7 else "testpass"
CHUNK = 1 << 20
STATUS_PENDING = 0x00000103

conn = SMBConnection("127.0.0.1", "127.0.0.1", sess_port=port,
                     preferredDialect=s3.SMB2_DIALECT_30, timeout=120)
conn.login(user, password)
tid = conn.connectTree(share)
fid = conn.openFile(tid, path, desiredAccess=s3.FILE_READ_DATA,
                    shareMode=s3.FILE_SHARE_READ)
smb = conn.getSMBServer()
nbss = smb._NetBIOSSession
next_id = smb._Connection["SequenceWindow"]
signing = smb._Session["SigningActivated"]


def send(cmd, data, charge, credreq):
    global next_id
    p = smb.SMB_PACKET()
    p["Command"] = cmd
    p["TreeID"] = tid
    p["SessionID"] = smb._Session["SessionID"]
    p["MessageID"] = next_id
    p["CreditCharge"] = charge
    p["CreditRequestResponse"] = credreq
    p["Data"] = data
    if signing:
        p["Flags"] = s3.SMB2_FLAGS_SIGNED
        smb.signSMB(p)
    nbss.send_packet(p.getData())
    mid = next_id
    next_id += max(charge, 1)
    return mid


def recv():
    """Next final (non-interim) response."""
    while True:
        p = s3.SMB2Packet(nbss.recv_packet(120).get_trailer())
        if p["Status"] == STATUS_PENDING and p["Flags"] & s3.SMB2_FLAGS_ASYNC_COMMAND:
            continue
        return p


# Ask for a large credit grant first (smbd caps it at its window).
echo = s3.SMB2Echo()
send(s3.SMB2_ECHO, echo, 1, 4096)
r = recv()
granted = r["CreditRequestResponse"]
charge = CHUNK // 65536
n = min((size + CHUNK - 1) // CHUNK, max(granted - 1, 0) // charge)
if n < 1:
    sys.exit("only %d credits granted" % granted)

ids = {}
for i in range(n):
    rd = s3.SMB2Read()
    rd["Padding"] = 0x50
    rd["FileID"] = fid
    rd["Length"] = min(CHUNK, size - i * CHUNK)
    rd["Offset"] = i * CHUNK
    ids[send(s3.SMB2_READ, rd, charge, charge)] = i * CHUNK
print("SENT %d reads of %d bytes (%d credits granted)" % (n, CHUNK, granted),
      flush=True)

while not os.path.exists(gofile):
    time.sleep(0.1)

data = {}
t0 = time.time()
while len(data) < n:
    p = recv()
    off = ids.get(p["MessageID"])
    if off is None:
        sys.exit("unexpected response id %d" % p["MessageID"])
    if p["Status"] != 0:
        sys.exit("READ at %d failed: status 0x%08x" % (off, p["Status"]))
    data[off] = s3.SMB2Read_Response(p["Data"])["Buffer"]
h = hashlib.sha256()
total = 0
for off in sorted(data):
    h.update(data[off])
    total += len(data[off])
print("READ %d bytes in %.2fs" % (total, time.time() - t0))
print("SHA256 %s" % h.hexdigest(), flush=True)
smb._Connection["SequenceWindow"] = next_id   # hand the id window back
conn.closeFile(tid, fid)
conn.logoff()
