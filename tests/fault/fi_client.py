#!/usr/bin/python3
"""fi_client.py - client sessions for t_fault_inject.sh, one fault each.

usage: fi_client.py PORT SHARE_DIR CTL_FILE PROXY_PID KIND:FIRST:LAST:STEP[:sticky]...

For every N of every KIND:FIRST:LAST:STEP range, write "KIND N" to CTL_FILE
(the failinject.so shim in the daemon reads it at the next accept), then run
one session through the proxy with impacket: negotiate, session setup, tree
connect, create, 64 x 1 KiB writes, 16 x 4 KiB reads of what was written,
close, logoff.  KIND "none" runs a session without a fault.

Each session ends in one of:
  ok      everything succeeded, the data read back and the file on the
          server's disk equal what was written
  error   the client got an error status or a closed connection: allowed
  BAD     wrong data read back, wrong data on disk after a successful close,
          a hang (no answer and no close within --timeout seconds), or the
          daemon died
One line per session: "KIND N outcome seconds detail".  When the daemon
died, the run stops after "RESUME SPEC..." (the ranges not yet run) with
exit status 2; otherwise exit status 1 if any session was BAD.
"""
import os
import socket
import sys
import time

from impacket.smbconnection import SMBConnection, SessionError
from impacket import smb3structs as s3

TIMEOUT = float(os.environ.get("FI_TIMEOUT", "10"))
USER, PASS = "smbtest", "testpass"


def session(port, share_dir, name):
    data = os.urandom(65536)
    # 2.1: impacket encrypts every 3.x session smbd allows it to, and an
    # encrypted session is relayed opaquely (no write-behind to test)
    c = SMBConnection("127.0.0.1", "127.0.0.1", sess_port=port,
                      preferredDialect=s3.SMB2_DIALECT_21, timeout=TIMEOUT)
    try:
        c.login(USER, PASS)
        tid = c.connectTree("share")
        fid = c.createFile(tid, name,
                           desiredAccess=s3.FILE_READ_DATA | s3.FILE_WRITE_DATA,
                           creationDisposition=s3.FILE_OVERWRITE_IF)
        for i in range(64):
            c.writeFile(tid, fid, data[i * 1024:(i + 1) * 1024], offset=i * 1024)
        for i in range(16):
            got = c.readFile(tid, fid, offset=i * 4096, bytesToRead=4096)
            if got != data[i * 4096:(i + 1) * 4096]:
                return "BAD", "wrong data read back at offset %d" % (i * 4096)
        c.closeFile(tid, fid)
    finally:
        try:
            c.close()
        except Exception:
            pass
    with open(os.path.join(share_dir, name), "rb") as fp:
        disk = fp.read()
    if disk != data:
        return "BAD", "file on disk differs after a successful close (%d bytes)" % len(disk)
    return "ok", ""


def classify(exc):
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "BAD", "hang: no answer within %.0fs (%s)" % (TIMEOUT, exc)
    s = str(exc) or type(exc).__name__
    if "timed out" in s.lower():
        return "BAD", "hang: " + s
    return "error", s.replace("\n", " ")[:160]


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    port, share_dir, ctl, pid = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    bad = 0
    counts = {}
    specs = sys.argv[5:]
    for si, spec in enumerate(specs):
        kind, first, last, step = spec.split(":")[:4]
        mode = " sticky" if spec.endswith(":sticky") else ""
        for n in range(int(first), int(last) + 1, int(step)):
            with open(ctl, "w") as fp:
                if kind != "none":
                    fp.write("%s %d%s\n" % (kind, n, mode))
            t0 = time.time()
            try:
                outcome, detail = session(port, share_dir, "fi-%s-%d" % (kind, n))
            except Exception as e:      # impacket raises many kinds
                outcome, detail = classify(e)
            try:
                os.kill(pid, 0)
            except OSError:
                outcome, detail = "BAD", "daemon died (" + detail + ")"
            counts[outcome] = counts.get(outcome, 0) + 1
            print("%s %d %s %.2fs %s" % (kind, n, outcome, time.time() - t0, detail),
                  flush=True)
            if outcome == "BAD":
                bad += 1
            if "daemon died" in detail:
                rest = ["%s:%d:%s:%s%s" % (kind, n + int(step), last, step,
                                           mode.replace(" ", ":"))] + specs[si + 1:]
                print("SUMMARY", counts, flush=True)
                print("RESUME", " ".join(r for r in rest
                                         if int(r.split(":")[1]) <= int(r.split(":")[2])),
                      flush=True)
                return 2
    with open(ctl, "w"):
        pass
    print("SUMMARY", counts, flush=True)
    return 1 if bad else 0


sys.exit(main())
