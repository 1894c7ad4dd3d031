#!/usr/bin/python3
"""ra_cancel.py PORT NAME - a CANCEL of a READ that waits for read-ahead.

NAME holds at least 256 KiB of b"A" on the share.  A sequential reader
reads its first 68 KiB in 4 KiB READs (smbaccel widens the second to
64 KiB and fetches what follows), then asks for the next 4 KiB and,
while that READ is unanswered, sends a CANCEL of it (MS-SMB2 3.2.4.24).
smbd does not cancel a READ it has started (MS-SMB2 3.3.5.16 lets a
server finish the request), so directly the answer is SUCCESS with the
data.  Through smbaccel the READ waits for a fetch in flight
(slowfetch.py holds it) and the CANCEL is dropped (the READ is
smbaccel's to answer): the answer must still come, SUCCESS with the
data, once the fetch arrives; and reading on must work (nothing answers
the CANCEL).

Prints "key=value" lines; exits 1 when an answer is not as directly.
"""
import struct
import sys
import time

from wb_smb import CANCEL, Client, FILE_OPEN, GENERIC_READ

KB = 1024


def main():
    port, name = int(sys.argv[1]), sys.argv[2]
    c = Client(port, "3.0")
    g, _ = c.create(name, access=GENERIC_READ, disposition=FILE_OPEN)
    bad = 0
    off = 0
    while off < 68 * KB:    # 0, then 4 KiB widened to 64 KiB (to 68 KiB)
        st, d = c.read(g, off, 4 * KB)
        if st != 0 or d != b"A" * 4 * KB:
            print("read=%d status=0x%08x bad" % (off, st))
            bad = 1
        off += 4 * KB
    t0 = time.time()
    mid = c.read_req(g, off, 4 * KB)
    time.sleep(0.2)
    c.send(CANCEL, struct.pack("<HH", 4, 0), charge=0, credreq=0, mid=mid)
    st, d = c.parse_read(c.wait(mid))
    ok = st == 0 and d == b"A" * 4 * KB
    print("cancelled-read=0x%08x data=%s" % (st, "ok" if ok else "bad"))
    sys.stderr.write("info: answered after %.1f s\n" % (time.time() - t0))
    if not ok:
        bad = 1
    off += 4 * KB
    while off < 128 * KB:
        st, d = c.read(g, off, 4 * KB)
        if st != 0 or d != b"A" * 4 * KB:
            print("read=%d status=0x%08x bad" % (off, st))
            bad = 1
        off += 4 * KB
    print("close=0x%08x" % c.close(g))
    c.logoff()
    sys.exit(bad)


if __name__ == "__main__":
    main()
