#!/usr/bin/python3
"""credits_window.py PORT PREFIX CASE...: clients that ask for no more
credits than they spend, through smbaccel or directly (t_credits.sh).

smbd grants a request its CreditCharge plus CreditRequest - 1, so such a
client keeps its credit window for ever.  Through smbaccel the answers to
absorbed requests grant at least the request's charge, from the proxy's
bank; what they could not grant is owed and paid on later answers, since
this client never asks for it again (it builds its window first, asking
64 on an ECHO and 32 on its CREATEs, before any answer was short).  What
is promised: the client is never left stuck (with fewer credits than its
next request needs and nothing in flight), its READs get sent, every
write completes.  Each case prints one line:

  CASE NAME ok|stuck|bad credits=N[ ...]

  small   N pipelined 4 KiB writes asking 1 each, then one 256 KiB READ
          (charge 4) of what they wrote
  mc128   N 128 KiB writes (charge 2) asking 1, one at a time
  mc1m    N pipelined 1 MiB writes (charge 16) asking 1, then a READ of the
          last one
  shapes  WRITEs with their data past the fixed part (DataOffset 0x78),
          and after a WriteChannelInfo of channel 0: their statuses
          (smbd refuses both: INVALID_PARAMETER)

Every written byte is read back and compared; the file on the server's
disk is checked by the caller (PREFIX-CASE, byte i of write k is k & 0xff).
"""
import struct
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from wb_smb import (Client, FILE_OVERWRITE_IF, WRITE)  # noqa: E402

KB = 1024


def out(*a):
    print(*a)
    sys.stdout.flush()


def pattern(k, size):
    return bytes([k & 0xff]) * size


def pipelined(c, fid, n, size, credreq):
    """n writes of size bytes asking credreq each, as many in flight as
    the client's credits allow; None, or why it stopped."""
    charge = c.charge_for(size)
    for k in range(n):
        while c.credits() < max(charge, 1):
            if not c.pending:
                return ("at write %d: %d credits, a write needs %d, nothing "
                        "in flight" % (k, c.credits(), charge))
            c._recv_one()
        c.write_req(fid, k * size, pattern(k, size), credreq=credreq)
    for mid, r in c.wait_all().items():
        if r.status != 0:
            return "a write failed: 0x%08x" % r.status
    return None


def read_back(c, fid, off, size):
    """READ size bytes at off in one request asking its charge: the data,
    or why not (a str)."""
    charge = c.charge_for(size)
    if c.credits() < max(charge, 1) and not c.pending:
        return ("%d credits, the %d KiB READ needs %d, nothing in flight"
                % (c.credits(), size // KB, charge))
    st, d = c.read(fid, off, size, credreq=max(charge, 1))
    if st != 0:
        return "READ status 0x%08x" % st
    return d


def case_small(c, name, n):
    fid, _ = c.create(name, disposition=FILE_OVERWRITE_IF)
    why = pipelined(c, fid, n, 4 * KB, 1)
    if why:
        return "stuck", why
    after = c.credits()
    d = read_back(c, fid, 0, 256 * KB)
    if isinstance(d, str):
        return "stuck", "after %d writes (%d credits left): %s" % (n, after, d)
    want = b"".join(pattern(k, 4 * KB) for k in range(64))
    if d != want:
        return "bad", "the READ did not return what was written"
    c.close(fid)
    return "ok", "after_writes=%d" % after


def case_mc128(c, name, n):
    fid, _ = c.create(name, disposition=FILE_OVERWRITE_IF)
    for k in range(n):
        try:
            c.write(fid, k * 128 * KB, pattern(k, 128 * KB), credreq=1)
        except RuntimeError as e:
            return "stuck", "at write %d: %s" % (k, e)
    c.close(fid)
    return "ok", ""


def case_mc1m(c, name, n):
    fid, _ = c.create(name, disposition=FILE_OVERWRITE_IF)
    if c.max_write < KB * KB:
        return "skip", "MaxWriteSize %d" % c.max_write
    why = pipelined(c, fid, n, KB * KB, 1)
    if why:
        return "stuck", why
    d = read_back(c, fid, (n - 1) * KB * KB, KB * KB)
    if isinstance(d, str):
        return "stuck", d
    if d != pattern(n - 1, KB * KB):
        return "bad", "the READ did not return what was written"
    c.close(fid)
    return "ok", ""


def case_shapes(c, name, n):
    fid, _ = c.create(name, disposition=FILE_OVERWRITE_IF)
    res = []
    for label, off, pad, choff, chlen in (("pad8", 0x78, b"\0" * 8, 0, 0),
                                          ("chan0", 0x80, b"\1" * 16, 0x70, 16)):
        data = pattern(len(res) + 1, KB)
        body = struct.pack("<HHIQ16sIIHHI", 49, off, len(data), len(res) * KB,
                           fid, 0, 0, choff, chlen, 0) + pad + data
        r = c.wait(c.send(WRITE, body, charge=c.charge_for(len(data))))
        res.append("%s=0x%08x" % (label, r.status))
    st = c.flush(fid)
    c.close(fid)
    return "ok", " ".join(res) + " flush=0x%08x" % st


CASES = {"small": case_small, "mc128": case_mc128, "mc1m": case_mc1m,
         "shapes": case_shapes}


def main():
    port, prefix = int(sys.argv[1]), sys.argv[2]
    for spec in sys.argv[3:]:
        name, _, n = spec.partition(":")
        c = Client(port, "3.0", want_credits=64)
        try:
            res, detail = CASES[name](c, "%s-%s" % (prefix, name), int(n or 0))
        except RuntimeError as e:
            res, detail = "stuck", str(e)
        out("CASE %s %s credits=%d %s" % (name, res, c.credits(), detail))
        c.drop()


if __name__ == "__main__":
    main()
