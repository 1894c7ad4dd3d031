#!/usr/bin/python3
"""dc_sticky.py PORT SMBD_PORT MODE FILE [SHARE]

A reopen must not be served a cached copy while another client's writer
still has the file open (DESIGN.md section 5a): smbd holds LastWriteTime
and ChangeTime still while any handle is open (from 2 s after its first
write until it closes), so the reopen's CREATE answer shows the times the
copy was made under although the file changed.

Writer W (SMBD_PORT, directly, no oplock) writes 256 KiB of "A" to FILE and
keeps it open; after 2.5 s (its delayed write-time update has been made)
reader R (PORT, through smbaccel) opens FILE with MODE
  r      an R lease (read_ahead = leased: the reviewer's case)
  rh     an R+H lease
  none   no oplock (read_ahead = always)
reads it at random offsets (the document cache fetches it) and closes.
W, still open, writes 4 KiB of "B" at offset 0 (same size).  R reopens
(same MODE): its answer must show the same times and size as the first
(else smbd no longer holds them and the test proves nothing: exit 2), and
its READ at 0 must give "B".  Then W closes; R opens with an RWH lease,
which the server grants only to the file's sole open: its times differ,
"B" again.  R reads it at random (a copy made under that proof), closes,
and opens it again with an RWH lease: every read correct (served from the
copy: the shell checks dc_attached); again after an open for attributes
alone (no lease, no data read), which leaves the copy alone.
Prints what it saw; exit 0 ok, 1 wrong bytes, 2 scenario not reproduced.
"""
import struct
import sys
import time

from wb_smb import (Client, GENERIC_READ, GENERIC_WRITE, FILE_OPEN, FILE_OPEN_IF, LEASE_R,
                    LEASE_H, LEASE_W, READ_ATTRS, lease_key)

port, sport, mode, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
share = sys.argv[5] if len(sys.argv) > 5 else "share"
SIZE = 256 * 1024
STATES = {"r": LEASE_R, "rh": LEASE_R | LEASE_H, "none": None}
OFFS = (65536, 0, 131072, 196608, 70000, 10, 140000, 200000, 250000, 30000)


def die(code, msg):
    print("FAIL: " + msg)
    sys.exit(code)


def validators(r):
    # LastWriteTime, ChangeTime, EndOfFile (CreationTime does not move)
    b = r.body
    return struct.unpack_from("<QQ", b, 24) + struct.unpack_from("<Q", b, 48)


def open_r(c, state, what):
    kw = {"lease": (lease_key(), state)} if state else {}
    r = c.wait(c.create_req(path, access=GENERIC_READ, disposition=FILE_OPEN, **kw))
    fid, res = c.parse_create(r)
    if fid is None:
        die(1, "%s: CREATE 0x%08x" % (what, res["status"]))
    if state and (res["lease"] or 0) & state != state:
        die(2, "%s: lease 0x%x asked, 0x%x granted" % (what, state, res["lease"] or 0))
    print("%s: lease %s, LastWriteTime/ChangeTime/EndOfFile %s" % (what, res["lease"],
                                                                    validators(r)))
    return fid, validators(r)


def expect(c, fid, model, what):
    for off in OFFS:
        st, d = c.read(fid, off, 4096)
        want = bytes(model[off:off + 4096])
        if st != 0 or d != want:
            die(1, "%s: READ %d+4096: status 0x%08x, %r... (want %r...)"
                % (what, off, st, d[:4], want[:4]))


model = bytearray(b"A" * SIZE)
w = Client(sport, "3.0", share=share)
fw, _ = w.create(path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN_IF)
w.write(fw, 0, bytes(model[:65536]))
for off in range(65536, SIZE, 65536):
    w.write(fw, off, bytes(model[off:off + 65536]))
time.sleep(2.5)         # smbd's write-time update (2 s after the first write)

r = Client(port, "3.0", share=share)
fr, v1 = open_r(r, STATES[mode], "reader, first open (writer open)")
expect(r, fr, model, "first open")
r.close(fr)

w.write(fw, 0, b"B" * 4096)
model[0:4096] = b"B" * 4096
st, d = w.read(fw, 0, 8)
print("writer wrote B at 0, still open; it reads %r" % d)

fr, v2 = open_r(r, STATES[mode], "reader, reopen (writer open)")
if v1 != v2:
    die(2, "the reopen's CREATE answer differs from the first: the server did not hold the "
        "file's times while the writer was open")
expect(r, fr, model, "reopen with the writer open")
r.close(fr)
print("reopen with the writer open, same times and size: read the writer's new bytes")

w.close(fw)
rwh = LEASE_R | LEASE_W | LEASE_H
fr, v3 = open_r(r, rwh, "reader, RWH open (writer closed)")
if v3 == v2:
    die(2, "the writer's CLOSE did not move LastWriteTime")
expect(r, fr, model, "RWH open after the writer closed")
r.close(fr)
fr, v4 = open_r(r, rwh, "reader, RWH reopen")
expect(r, fr, model, "RWH reopen")
r.close(fr)
# an open for attributes alone (no lease: it proves nothing, and reads
# nothing) leaves the copy to the next RWH open
fa, _ = r.create(path, access=READ_ATTRS, disposition=FILE_OPEN)
r.close(fa)
fr, v4 = open_r(r, rwh, "reader, RWH reopen after an attributes open")
expect(r, fr, model, "RWH reopen after an attributes open")
r.close(fr)
print("RWH opens (the file's sole open): correct bytes")
r.logoff()
w.logoff()
