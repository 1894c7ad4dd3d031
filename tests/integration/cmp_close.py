#!/usr/bin/python3
"""cmp_close.py PORT SMBD_CONF MODE NAME [FILLER] - a CLOSE sent with its
flush (smbaccel's close compound) on a full disk, and whether the server's
handle stays open after the client's CLOSE was answered; or a FLUSH or
QUERY_INFO sent with its flush there.

The share must be full when it starts.  Modes:
  one:    NAME gets one 8 KiB WRITE (the compound's WRITE takes its only
          id: nothing left to keep back), then CLOSE;
  many:   NAME gets 64 x 1 KiB WRITEs (64 ids for one 64 KiB WRITE: ids
          are left over), then CLOSE;
  leftover: as one, then FILLER is removed (space again), NAME.2 gets
          64 x 1 KiB WRITEs and a CLOSE (which leaves ids over), and the
          handle of NAME is watched for up to 10 s;
  flush:  NAME gets 64 x 1 KiB WRITEs, then FLUSH, then CLOSE;
  query:  the same with a QUERY_INFO (FileStandardInformation) for the
          FLUSH;
  cmpd:   as query, then the client's own related compound of a
          QUERY_INFO and the CLOSE: the deferred error must come on the
          CLOSE's answer, the compound's last ("query=0xS cquery=0xS
          cclose=0xS").
  cmpds:  cmpd in a signed session (smbaccel must hold its keys): every
          answer's signature is checked, the replaced CLOSE answer's too
          (a bad or missing one fails the run); adds " signed=N".
Prints "flush=0xSTATUS close=0xSTATUS" or "query=0xSTATUS close=0xSTATUS"
for those, else "close=0xSTATUS open=N" (N: opens of NAME smbstatus lists right after
the CLOSE was answered) and, for leftover, " close2=0xSTATUS open_later=N
data2=ok|bad" (opens of NAME once NAME.2 was closed and the wait ended).
Exit 0 when the run completed, whatever the statuses.
"""
import json
import os
import subprocess
import sys
import time

import struct

from wb_smb import Client, FILE_OVERWRITE_IF, HDR, QUERY_INFO, CLOSE, STATUS_PENDING

FLAG_RELATED = 0x4

port, conf, mode, name = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
filler = sys.argv[5] if len(sys.argv) > 5 else None


def opens_of(fname):
    out = subprocess.run(["smbstatus", "-s", conf, "-L", "--json"],
                         capture_output=True, text=True).stdout
    try:
        files = json.loads(out).get("open_files", {})
    except ValueError:
        return -1
    return sum(len(f.get("opens", {})) for f in files.values()
               if f.get("filename") == fname)


c = Client(port, "3.0", sign=(mode == "cmpds"))
fid, _ = c.create(name, disposition=FILE_OVERWRITE_IF)
if mode in ("flush", "query"):
    for i in range(64):
        c.write(fid, i * 1024, bytes([i]) * 1024, check=False)
    st = c.flush(fid) if mode == "flush" else c.query_eof(fid)[0]
    print("%s=0x%08x close=0x%08x" % (mode, st, c.close(fid)))
    c.logoff()
    sys.exit(0)
if mode in ("cmpd", "cmpds"):
    for i in range(64):
        c.write(fid, i * 1024, bytes([i]) * 1024, check=False)
    qst = c.query_eof(fid)[0]
    # the client's own related compound: QUERY_INFO, then the CLOSE
    q = struct.pack("<HBBIHHIII16sB", 41, 1, 5, 24, 0, 0, 0, 0, 0, fid, 0)
    q += b"\0" * (-(64 + len(q)) % 8)
    m = c.next_id
    e1 = HDR.pack(b"\xfeSMB", 64, 1, 0, QUERY_INFO, 32, 0, 64 + len(q), m, 0xFEFF,
                  c.tid, c.sid, b"\0" * 16) + q
    e2 = HDR.pack(b"\xfeSMB", 64, 1, 0, CLOSE, 32, FLAG_RELATED, 0, m + 1, 0xFEFF,
                  c.tid, c.sid, b"\0" * 16) + struct.pack("<HHI16s", 24, 0, 0, fid)
    c.next_id += 2
    c.nb.send_packet(c.sign_msg(e1) + c.sign_msg(e2))
    st = {}
    while len(st) < 2:
        t = c.nb.recv_packet(c.timeout).get_trailer()
        c.check_msg(t)
        off = 0
        while True:
            status, cmd = struct.unpack_from("<IH", t, off + 8)
            mid = struct.unpack_from("<Q", t, off + 24)[0]
            if mid in (m, m + 1) and status != STATUS_PENDING:
                st[cmd] = status
            nxt = struct.unpack_from("<I", t, off + 20)[0]
            if not nxt:
                break
            off += nxt
    print("query=0x%08x cquery=0x%08x cclose=0x%08x%s" % (
        qst, st[QUERY_INFO], st[CLOSE], " signed=%d" % c.signed_answers if c.sign_key else ""))
    c.logoff()
    sys.exit(0)
if mode in ("one", "leftover"):
    c.write(fid, 0, b"o" * 8192, check=False)
else:
    for i in range(64):
        c.write(fid, i * 1024, bytes([i]) * 1024, check=False)
st = c.close(fid)
line = "close=0x%08x open=%d" % (st, opens_of(name))
if mode == "leftover":
    os.remove(filler)
    fid2, _ = c.create(name + ".2", disposition=FILE_OVERWRITE_IF)
    want = b"".join(bytes([i]) * 1024 for i in range(64))
    for i in range(64):
        c.write(fid2, i * 1024, want[i * 1024:(i + 1) * 1024])
    st2 = c.close(fid2)
    end = time.time() + 10
    while opens_of(name) != 0 and time.time() < end:
        time.sleep(0.2)
    fid3, _ = c.create(name + ".2")
    got = c.read_all(fid3, 0, len(want))
    c.close(fid3)
    line += " close2=0x%08x open_later=%d data2=%s" % (
        st2, opens_of(name), "ok" if got == want else "bad")
c.logoff()
print(line)
