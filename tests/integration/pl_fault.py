#!/usr/bin/python3
"""pl_fault.py PROXY_PORT SMBD_PORT DIALECT CASE SEED

Breaks of smbaccel's lease (held for a client that asks for none) that it
cannot answer at once (issue 15, fault injection).  smbaccel's upstream
runs through pl_slowlink.py, whose rate the shell sets per case.

  inflight  A writes 2 MiB in 1 KiB writes (absorbed; flushes crawl
            upstream); B opens the file directly: the break arrives while
            flushes are in flight, and is acknowledged once they are done;
            B's open waits for that and B reads exactly A's data.
  late      A writes 2 MiB; upstream so slow that writing it takes longer
            than the server waits for an acknowledgement (30 s): B's open
            completes when the server gives up; what B reads is a prefix of
            A's data; A's CLOSE (after the flush) succeeds and the file is
            then all of A's data: nothing lost.
  noid      A writes 64 KiB writes only, each with one credit: the data
            needs every id the client donates, none is left for an
            acknowledgement reserve.  B's open waits for the server's
            timeout; B reads all of A's data (written before the break).
Prints "B open S seconds"; exit 0 ok, 1 failure."""
import random
import sys
import time

from wb_smb import Client, GENERIC_READ, GENERIC_WRITE, FILE_OPEN, FILE_OVERWRITE_IF

pport, sport, dialect, case, seed = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                     sys.argv[4], int(sys.argv[5]))
rnd = random.Random(seed)
path = "plf-%s" % case


def die(msg):
    print("FAIL %s: %s" % (case, msg))
    sys.exit(1)


a = Client(pport, dialect, timeout=120)
fid, r = a.create(path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OVERWRITE_IF)
if r["oplock"] != 0 or r["lease"] is not None:
    die("A's answer: oplock 0x%x lease %r" % (r["oplock"], r["lease"]))
if case == "noid":
    d = bytes(rnd.getrandbits(8) for _ in range(64 * 65536))
    for i in range(64):
        a.write(fid, i * 65536, d[i * 65536:(i + 1) * 65536], charge=1)
    time.sleep(1.5)
else:
    d = bytes(rnd.getrandbits(8) for _ in range(2 << 20))
    for off in range(0, len(d), 1024):
        a.write(fid, off, d[off:off + 1024])
b = Client(sport, dialect, timeout=120)
t0 = time.time()
bfid, _ = b.create(path, access=GENERIC_READ, disposition=FILE_OPEN)
dt = time.time() - t0
print("B open %.2f seconds" % dt)
got = b.read_all(bfid, 0, len(d) + 65536)
print("B read %d of %d bytes" % (len(got), len(d)))
if got != d[:len(got)]:
    die("B's read is not a prefix of A's data")
if case in ("inflight", "noid") and got != d:
    die("B read %d bytes, %d were written before the break was answered" % (len(got), len(d)))
if case == "inflight" and dt > 20:
    die("B's open took %.1f s: the break was not acknowledged after the flush" % dt)
if case in ("late", "noid") and dt < 20:
    die("B's open took only %.1f s: expected the server's break timeout" % dt)
a.echo()
if a.notifications:
    die("A received a break notification")
st = a.close(fid)
if st != 0:
    die("A's CLOSE answered 0x%08x" % st)
c = Client(sport, dialect)
cfid, _ = c.create(path, access=GENERIC_READ, disposition=FILE_OPEN)
if c.read_all(cfid, 0, len(d) + 65536) != d:
    die("after A's close the file is not A's data")
c.close(cfid)
b.close(bfid)
for x in (a, b, c):
    x.logoff()
print("OK %s" % case)
