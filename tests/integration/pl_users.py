#!/usr/bin/python3
"""pl_users.py PORT USER_A USER_B PASSWORD OUTDIR - two users of one client
GUID (a terminal server: two connections made with impacket's ClientGuid
drawn alike, one per user), both on share homes2 (path = .../%U: one name,
two files), neither asking a lease.

  write: A creates w.bin (OVERWRITE_IF, so smbaccel asks RW for it) and
         writes 256 KiB; B creates its own w.bin and writes 256 KiB; A
         writes 256 KiB more; both close.
  read:  A opens r.bin (its own, 300 KiB) for reading and reads it; B
         opens its own r.bin and reads it; A reads its file again.
  same:  A creates s.bin and writes 128 KiB, and keeps it open; A on a
         third connection of the client opens s.bin and reads it.

What each user wrote is saved in OUTDIR/<user>.w.bin for the caller to
compare with smbd's disk; what each read is compared here with the
caller's copies in OUTDIR/<user>.r.bin.  Prints one line:
"a=0xS b=0xS b2=0xS aread=ok|bad bread=ok|bad a2=ok|bad same=ok|bad"."""
import os
import random
import sys

from wb_smb import Client, FILE_OPEN, FILE_OVERWRITE_IF, GENERIC_READ, GENERIC_WRITE

port, ua, ub, pw, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
RW = GENERIC_READ | GENERIC_WRITE
K = 64 * 1024


def one_guid(seed):
    random.seed(seed)
    a = Client(port, "3.0", share="homes2", user=ua, password=pw)
    random.seed(seed)
    b = Client(port, "3.0", share="homes2", user=ub, password=pw)
    if a.smb.ClientGuid != b.smb.ClientGuid:
        sys.exit("the two connections got different ClientGuids")
    return a, b


def put(c, f, off, data):
    for i in range(0, len(data), K):
        c.write(f, off + i, data[i:i + K])


def get(c, f, n):
    got = b""
    while len(got) < n:
        _, x = c.read(f, len(got), min(K, n - len(got)))
        if not x:
            break
        got += x
    return got


def main():
    a, b = one_guid(4242)
    da = [os.urandom(256 * 1024), os.urandom(256 * 1024)]
    db = os.urandom(256 * 1024)
    fa, ra = a.create("w.bin", access=RW, disposition=FILE_OVERWRITE_IF)
    put(a, fa, 0, da[0])
    fb, rb = b.create("w.bin", access=RW, disposition=FILE_OVERWRITE_IF, check=False)
    if fb is not None:
        put(b, fb, 0, db)
        b.close(fb)
    put(a, fa, len(da[0]), da[1])
    a.close(fa)
    with open(os.path.join(out, ua + ".w.bin"), "wb") as f:
        f.write(da[0] + da[1])
    with open(os.path.join(out, ub + ".w.bin"), "wb") as f:
        f.write(db if fb is not None else b"")

    want = {u: open(os.path.join(out, u + ".r.bin"), "rb").read() for u in (ua, ub)}
    fa, _ = a.create("r.bin", access=GENERIC_READ, disposition=FILE_OPEN)
    aread = get(a, fa, len(want[ua])) == want[ua]
    fb, rb2 = b.create("r.bin", access=GENERIC_READ, disposition=FILE_OPEN, check=False)
    bread = fb is not None and get(b, fb, len(want[ub])) == want[ub]
    if fb is not None:
        b.close(fb)
    a2 = get(a, fa, len(want[ua])) == want[ua]
    a.close(fa)

    # A again on a third connection of the client: the same user's key
    ds = os.urandom(128 * 1024)
    fa, _ = a.create("s.bin", access=RW, disposition=FILE_OVERWRITE_IF)
    put(a, fa, 0, ds)
    random.seed(4242)
    a3 = Client(port, "3.0", share="homes2", user=ua, password=pw)
    f3, _ = a3.create("s.bin", access=RW, disposition=FILE_OPEN)
    same = get(a3, f3, len(ds)) == ds
    a3.close(f3)
    a.close(fa)
    for c in (a, b, a3):
        c.logoff()
    ok = {True: "ok", False: "bad"}
    print("a=0x%08x b=0x%08x b2=0x%08x aread=%s bread=%s a2=%s same=%s" % (
        ra["status"], rb["status"], rb2["status"], ok[aread], ok[bread], ok[a2],
        ok[same]))


main()
