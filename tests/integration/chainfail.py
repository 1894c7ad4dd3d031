#!/usr/bin/python3
"""chainfail.py LISTEN_PORT SERVER_PORT - a TCP relay in front of smbd that
makes it behave like a server that fails the rest of a related chain when
one request fails (MS-SMB2 3.3.5.2.7.2: "the server SHOULD fail the current
operation with the same error code"), as Windows does, and that grants
credits on each answer of a compound instead of on the last one
(3.3.4.1.3 allows both).  smbd itself runs the rest of the chain.

A request message that is a related compound of WRITEs then a CLOSE (what
smbaccel sends for a CLOSE with its flush) is split: the WRITEs go to smbd
first, as one compound; when smbd has answered them, the CLOSE follows on
its own.  If every WRITE succeeded, it goes as it came (related flag
cleared); if one failed, its FileId is spoiled, so smbd does not close the
handle (it answers FILE_CLOSED), and that answer's status is replaced by the
WRITE's: the handle stays open on the server, as with a server that failed
the chain.  The client gets one compound answer, WRITE answers then the
CLOSE's (related flag set), each with the grant smbd gave it.

Only unsigned, unencrypted traffic is understood (anything else passes as
it is).  Every other message passes unchanged.  One line per split chain
goes to stderr: "chainfail: WRITE status 0x... CLOSE sent as is|spoiled".
"""
import socket
import struct
import sys
import threading

from relay_lib import listen, recv_msg

WRITE, CLOSE = 9, 6
RELATED = 0x4
STATUS_PENDING = 0x103


def send_msg(sock, lock, msg):
    with lock:
        sock.sendall(struct.pack(">I", len(msg)) + msg)


def elements(msg):
    """[(offset, length)] of the elements of an SMB2 message."""
    out, off = [], 0
    while True:
        if off + 64 > len(msg):
            return None
        nxt = struct.unpack_from("<I", msg, off + 20)[0]
        out.append((off, nxt if nxt else len(msg) - off))
        if not nxt:
            return out
        off += nxt


def u16(m, o):
    return struct.unpack_from("<H", m, o)[0]


def u32(m, o):
    return struct.unpack_from("<I", m, o)[0]


def u64(m, o):
    return struct.unpack_from("<Q", m, o)[0]


class Relay(object):
    def __init__(self, csock, ssock):
        self.c, self.s = csock, ssock
        self.clock, self.slock = threading.Lock(), threading.Lock()
        self.lock = threading.Lock()
        self.by_write = {}    # first WRITE mid -> state
        self.by_close = {}    # CLOSE mid -> state

    def c2s(self):
        try:
            while True:
                msg = recv_msg(self.c)
                if msg is None:
                    break
                el = elements(msg) if msg[:4] == b"\xfeSMB" else None
                if el and len(el) > 1 and all(u16(msg, o + 12) == WRITE for o, _ in el[:-1]) \
                        and u16(msg, el[-1][0] + 12) == CLOSE:
                    co = el[-1][0]
                    writes = bytearray(msg[:co])
                    lo = el[-2][0]
                    writes[lo + 20:lo + 24] = b"\0\0\0\0"      # last WRITE now
                    close = bytearray(msg[co:])
                    struct.pack_into("<I", close, 16, u32(close, 16) & ~RELATED)
                    st = {"close": close, "cmid": u64(close, 24)}
                    with self.lock:
                        self.by_write[u64(msg, 24)] = st
                    send_msg(self.s, self.slock, bytes(writes))
                    continue
                send_msg(self.s, self.slock, msg)
        except OSError:
            pass
        for s in (self.s, self.c):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def s2c(self):
        try:
            while True:
                msg = recv_msg(self.s)
                if msg is None:
                    break
                el = elements(msg) if msg[:4] == b"\xfeSMB" else None
                if el and not (u32(msg, 8) == STATUS_PENDING and u32(msg, 16) & 0x2):
                    mid = u64(msg, 24)
                    with self.lock:
                        st = self.by_write.pop(mid, None)
                        cst = self.by_close.pop(mid, None) if st is None else None
                    if st is not None:
                        self.writes_answered(st, msg, el)
                        continue
                    if cst is not None:
                        self.close_answered(cst, msg)
                        continue
                send_msg(self.c, self.clock, msg)
        except OSError:
            pass
        for s in (self.s, self.c):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def writes_answered(self, st, msg, el):
        failed = 0
        for o, _ in el:
            if u32(msg, o + 8) != 0:
                failed = u32(msg, o + 8)
                break
        st["wrsp"], st["failed"] = msg, failed
        close = st["close"]
        if failed:
            # spoil the volatile FileId: smbd answers FILE_CLOSED and keeps
            # the handle open
            struct.pack_into("<Q", close, 64 + 16, u64(close, 64 + 16) ^ 0x5A5A5A5A5A5A5A5A)
        sys.stderr.write("chainfail: WRITE status 0x%08x CLOSE sent %s\n"
                         % (failed, "spoiled" if failed else "as is"))
        sys.stderr.flush()
        with self.lock:
            self.by_close[st["cmid"]] = st
        send_msg(self.s, self.slock, bytes(close))

    def close_answered(self, st, crsp):
        crsp = bytearray(crsp)
        if st["failed"]:
            struct.pack_into("<I", crsp, 8, st["failed"])
        struct.pack_into("<I", crsp, 16, u32(crsp, 16) | RELATED)
        w = bytearray(st["wrsp"])
        w += b"\0" * (-len(w) % 8)
        last = elements(bytes(st["wrsp"]))[-1][0]
        struct.pack_into("<I", w, last + 20, len(w) - last)
        send_msg(self.c, self.clock, bytes(w) + bytes(crsp))


def main():
    lport, sport = int(sys.argv[1]), int(sys.argv[2])
    ls = listen(lport)
    while True:
        c, _ = ls.accept()
        s = socket.create_connection(("127.0.0.1", sport))
        r = Relay(c, s)
        threading.Thread(target=r.c2s, daemon=True).start()
        threading.Thread(target=r.s2c, daemon=True).start()


if __name__ == "__main__":
    main()
