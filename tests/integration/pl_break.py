#!/usr/bin/python3
"""pl_break.py PROXY_PORT SMBD_PORT DIALECT CASE SEED

Breaks of the lease smbaccel holds on behalf of a client that asks for
none (issue 15).  A is such a client (wb_smb, OplockLevel none, no lease
context) through smbaccel; B (and C) open the same file directly on smbd,
or through smbaccel.  Every case checks that A's CREATE answer carries no
lease and OplockLevel 0, and that A never sees a break notification.

  paused     A writes 1000 KiB in 1 KiB writes (absorbed) and stops; B opens
             the file read-only directly: smbaccel's RW lease breaks to R,
             B's open completes once smbaccel wrote A's data and
             acknowledged; B reads exactly what A wrote.  A writes 64 KiB
             more (forwarded now) and closes; B reads it all.  Then C opens
             directly and writes 4 KiB into a range A's read-ahead has
             fetched but A not read yet: the R lease breaks to none (no
             acknowledgement), A reads on and must see C's bytes.
  concurrent A writes 4000 KiB in 1 KiB writes in a thread; meanwhile B opens
             directly and reads: what B reads is an exact prefix of A's
             data, at least as long as what A had written before B's CREATE
             was sent.  A finishes and closes; the file is all of A's data.
  proxy      as paused, but B goes through smbaccel too (a second client).
  none       A writes 1000 KiB, B opens directly with FILE_OVERWRITE_IF (the
             lease breaks RW -> none), writes 4 KiB and closes: the file is
             exactly B's 4 KiB (A's data reached the server before B's
             truncate, not after).
  reserve    A writes 4 KiB in 1 KiB writes (ids to spare: the reserve),
             then 64 writes of 64 KiB with one credit each (ids exactly
             what the data needs), then waits IDLE seconds for the flush:
             every pooled id is spent.  B opens directly: the break is
             acknowledged with the reserve (B's open is quick: not the
             server's 30 s break timeout) and B reads everything.
  own        A asks an RWH lease of its own: its answer carries its key and
             state; B's direct open breaks it and A gets the break (its
             own, forwarded), acknowledges; B reads A's data.
  joining   A creates the file and writes nothing (no id for an
             acknowledgement); B's direct open breaks smbaccel's lease and
             waits; A opens the file again, joining the lease while its
             break is in progress (BREAK_IN_PROGRESS in the answer), and
             writes 1 KiB through that open: not absorbed (the caller
             checks).  A closes both, B reads the 1 KiB.
Prints "B open S seconds" lines and "OWNKEY hex" (case own); exit 0 ok,
1 failure (message on stdout)."""
import random
import sys
import threading
import time

from wb_smb import (Client, GENERIC_READ, GENERIC_WRITE, FILE_OPEN, FILE_OVERWRITE_IF,
                    LEASE_R, LEASE_H, LEASE_W, lease_key)

pport, sport, dialect, case, seed = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                     sys.argv[4], int(sys.argv[5]))
idle = float(sys.argv[6]) if len(sys.argv) > 6 else 2.5
rnd = random.Random(seed)
path = "pl-%s-%s" % (case, dialect)


def die(msg):
    print("FAIL %s: %s" % (case, msg))
    sys.exit(1)


def data_of(n):
    return bytes(rnd.getrandbits(8) for _ in range(n))


def open_a(lease=None):
    a = Client(pport, dialect)
    kw = {}
    if lease:
        kw["lease"] = lease
    fid, r = a.create(path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OVERWRITE_IF, **kw)
    if not lease and (r["oplock"] != 0 or r["lease"] is not None):
        die("A asked for no lease and was answered oplock 0x%x lease %r" % (r["oplock"], r["lease"]))
    return a, fid, r


def no_breaks(a):
    a.echo()                    # anything the server sent A before has arrived
    if a.notifications:
        die("A (no lease) received %d break notification(s): %r" %
            (len(a.notifications), [Client.parse_break(n)[:1] for n in a.notifications]))


def timed_open(port, access=GENERIC_READ, disposition=FILE_OPEN):
    b = Client(port, dialect)
    t0 = time.time()
    fid, r = b.create(path, access=access, disposition=disposition)
    dt = time.time() - t0
    print("B open %.2f seconds (oplock 0x%x)" % (dt, r["oplock"]))
    return b, fid, dt


def write_1k(a, fid, data, start=0):
    for off in range(0, len(data), 1024):
        a.write(fid, start + off, data[off:off + 1024])


def expect(got, want, what):
    if got != want:
        first = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                     min(len(got), len(want)))
        die("%s: %d bytes read, %d expected, first difference at %d" % (what, len(got), len(want), first))


def quick(dt):
    # the server waits 30 s for an acknowledgement that does not come
    if dt > 15:
        die("B's open took %.1f s: the break was not acknowledged (server timeout)" % dt)


if case in ("paused", "proxy"):
    a, fid, _ = open_a()
    d1 = data_of(1000 * 1024)
    write_1k(a, fid, d1)
    b, bfid, dt = timed_open(sport if case == "paused" else pport)
    quick(dt)
    expect(b.read_all(bfid, 0, len(d1) + 65536), d1, "B after A's 1000 KiB")
    d2 = data_of(64 * 1024)
    write_1k(a, fid, d2, len(d1))
    if a.close(fid) != 0:
        die("A's CLOSE failed")
    expect(b.read_all(bfid, 0, len(d1) + len(d2) + 65536), d1 + d2, "B after A's close")
    # A opens again (R lease for reading): reads twice, C writes between
    a2 = Client(pport, dialect)
    afid, r = a2.create(path, access=GENERIC_READ, disposition=FILE_OPEN)
    if r["oplock"] != 0 or r["lease"] is not None:
        die("A's second open answered oplock 0x%x lease %r" % (r["oplock"], r["lease"]))
    whole = d1 + d2
    expect(a2.read_all(afid, 0, 256 * 1024, chunk=4096), whole[:256 * 1024], "A's reads")
    # read-ahead has fetched past 300 KiB by now; C writes there
    c = Client(sport, dialect)
    cfid, _ = c.create(path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN)
    d3 = data_of(4096)
    c.write(cfid, 300 * 1024, d3)
    c.close(cfid)
    time.sleep(0.5)             # the R -> none break reaches smbaccel
    whole = whole[:300 * 1024] + d3 + whole[304 * 1024:]
    got = bytearray()
    for off in range(256 * 1024, 512 * 1024, 4096):
        st, chunk = a2.read(afid, off, 4096)
        got += chunk
    expect(bytes(got), whole[256 * 1024:512 * 1024],
           "A's reads after another client wrote (R lease broken to none)")
    no_breaks(a2)
    a2.close(afid)
    no_breaks(a)
    b.close(bfid)
    for x in (a, a2, b, c):
        x.logoff()
elif case == "concurrent":
    a, fid, _ = open_a()
    d = data_of(4000 * 1024)
    done = [0]
    err = []

    def writer():
        try:
            for off in range(0, len(d), 1024):
                a.write(fid, off, d[off:off + 1024])
                done[0] = off + 1024
        except Exception as e:      # reported below
            err.append(e)
    t = threading.Thread(target=writer)
    t.start()
    while done[0] < 600 * 1024 and t.is_alive():
        time.sleep(0.01)
    before = done[0]
    b, bfid, dt = timed_open(sport)
    quick(dt)
    got = b.read_all(bfid, 0, len(d) + 65536)
    t.join()
    if err:
        die("A's writer: %r" % err[0])
    print("B read %d bytes; A had %d acknowledged before B's CREATE, %d in all" %
          (len(got), before, len(d)))
    if len(got) < before:
        die("B read %d bytes, fewer than the %d A had written before B opened" % (len(got), before))
    expect(got, d[:len(got)], "B's read (a prefix of A's data)")
    if a.close(fid) != 0:
        die("A's CLOSE failed")
    expect(b.read_all(bfid, 0, len(d) + 65536), d, "B after A's close")
    no_breaks(a)
    b.close(bfid)
    a.logoff()
    b.logoff()
elif case == "none":
    a, fid, _ = open_a()
    write_1k(a, fid, data_of(1000 * 1024))
    b, bfid, dt = timed_open(sport, access=GENERIC_READ | GENERIC_WRITE,
                             disposition=FILE_OVERWRITE_IF)
    quick(dt)
    db = data_of(4096)
    b.write(bfid, 0, db)
    b.close(bfid)
    no_breaks(a)
    if a.close(fid) != 0:
        die("A's CLOSE failed")
    c = Client(sport, dialect)
    cfid, _ = c.create(path, access=GENERIC_READ, disposition=FILE_OPEN)
    expect(c.read_all(cfid, 0, 2 * 1024 * 1024), db, "the file after B's overwrite")
    c.close(cfid)
    for x in (a, b, c):
        x.logoff()
elif case == "reserve":
    a, fid, _ = open_a()
    d = data_of(4 * 1024 + 64 * 65536)
    write_1k(a, fid, d[:4096])
    for i in range(64):
        off = 4096 + i * 65536
        a.write(fid, off, d[off:off + 65536], charge=1)
    time.sleep(idle)            # flush_idle: everything goes upstream
    print("READY")
    sys.stdout.flush()
    sys.stdin.readline()        # the shell looked at pool_ids and the reserve
    b, bfid, dt = timed_open(sport)
    quick(dt)
    expect(b.read_all(bfid, 0, len(d) + 65536), d, "B after A's writes")
    no_breaks(a)
    a.close(fid)
    b.close(bfid)
    a.logoff()
    b.logoff()
elif case == "own":
    key = lease_key()
    print("OWNKEY %s" % key.hex())
    a, fid, r = open_a(lease=(key, LEASE_R | LEASE_H | LEASE_W))
    if (r["lease"] or 0) & 7 != 7:
        die("A asked an RWH lease of its own, answered %r" % r["lease"])
    d = data_of(200 * 1024)
    write_1k(a, fid, d)
    b = Client(sport, dialect)
    bmid = b.create_req(path, access=GENERIC_READ, disposition=FILE_OPEN)
    n = a.wait_notification(timeout=30)
    if n is None:
        die("A got no break of its own lease")
    brk = Client.parse_break(n)
    if brk[0] != "lease" or brk[1] != key:
        die("A's break is not for its own lease: %r" % (brk[:2],))
    if brk[4] & 1:
        ack = a.wait(a.lease_ack(key, brk[3]))
        if ack.status != 0:
            die("A's acknowledgement answered 0x%08x" % ack.status)
    bfid, br = b.parse_create(b.wait(bmid))
    if bfid is None:
        die("B's open failed 0x%08x" % br["status"])
    expect(b.read_all(bfid, 0, len(d) + 65536), d, "B after A's own break")
    a.close(fid)
    b.close(bfid)
    a.logoff()
    b.logoff()
elif case == "joining":
    # A creates the file and writes nothing: smbaccel holds RW for it and
    # has no id to acknowledge a break with.  B's direct open breaks it
    # (RW -> R, an acknowledgement owed; B waits).  A opens the file again
    # meanwhile: smbaccel's lease request names the same key, and the
    # server answers with the state from before the break, flagged
    # BREAK_IN_PROGRESS.  A writes 1 KiB through the second open, which
    # must go to the server, not into smbaccel's buffer (the caller checks
    # writes_absorbed); A closes both and B's open completes, reading it.
    a, fid, _ = open_a()
    b = Client(sport, dialect)
    bmid = b.create_req(path, access=GENERIC_READ, disposition=FILE_OPEN)
    time.sleep(0.5)
    fid2, _ = a.create(path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN)
    d = data_of(1024)
    a.write(fid2, 0, d)
    if a.close(fid2) != 0 or a.close(fid) != 0:
        die("A's CLOSEs failed")
    t0 = time.time()
    bfid, br = b.parse_create(b.wait(bmid))
    if bfid is None:
        die("B's open failed 0x%08x" % br["status"])
    quick(time.time() - t0)
    expect(b.read_all(bfid, 0, 65536), d, "B after A's write through its second open")
    b.close(bfid)
    a.logoff()
    b.logoff()
else:
    die("unknown case")
print("OK %s" % case)
