#!/usr/bin/python3
"""Malformed SMB2 for t_fault_malformed.sh: lying clients and a lying server.

usage: malformed.py client PORT [SMBD_PORT]
       malformed.py server LISTEN_PORT SMBD_PORT CASE_FILE
       malformed.py server-cases PORT CASE_FILE

client: against smbaccel in front of the real smbd (write_behind = always).
  Each case logs in with impacket at 2.1 (unsigned, unencrypted, so
  smbaccel may absorb writes), creates a file, then sends one hand-made
  request with raw bytes: WRITEs whose StructureSize, DataOffset, Length,
  offset, CreditCharge or MessageId lie, a duplicate MessageId, a compound
  whose NextCommand lies, a READ beyond MaxReadSize.  Each case connects
  from its own address (127.0.0.10, .11, ...) and is followed by a normal
  login from that address, which must work.  The request is
  invalid, so an answer of STATUS_SUCCESS means smbaccel acknowledged
  something the server would have refused: BAD.  Allowed: an error status
  (from the server), or the connection closed, or (with SMBD_PORT, where
  each case is also run directly against smbd) whatever smbd itself does
  unless that is success; not allowed: no answer and no close within
  DEADLINE seconds (a hang) where smbd answers or closes.  Every case prints
  "case NAME: OUTCOME (client port P)".

server: a fake SMB server on LISTEN_PORT.  For each connection it reads the
  scenario name from CASE_FILE: "relay" relays to the real smbd on
  SMBD_PORT; the others answer the client's NEGOTIATE (or the request
  after it) with garbage: random bytes, an SMB1 frame, a truncated SMB2
  header, a NEGOTIATE response with a security buffer pointing outside
  the message, a lying NextCommand, a 0xFFFFFF NBSS length, a huge credit
  grant, a response to a message id never sent, and a TREE_CONNECT
  response to a SESSION_SETUP request.

server-cases: the client side of the server scenarios: for each, write
  the name to CASE_FILE, connect through smbaccel, send a NEGOTIATE (and
  a SESSION_SETUP), read until closed or DEADLINE; after each, a "relay"
  connection must still negotiate through the same smbaccel.
Exit status 1 if any case was BAD.
"""
import os
import socket
import struct
import sys
import threading
import time

from relay_lib import listen

DEADLINE = float(os.environ.get("MALFORMED_DEADLINE", "5"))
SRC = None      # source address of new connections (each case its own)


class _SrcSocket(socket.socket):
    """socket.socket that binds to SRC before connecting: impacket has no
    source-address option, and a case that leaves a connection draining
    must not hold up the next case (same client address, DESIGN.md 4)."""

    def connect(self, addr):
        if SRC and self.family == socket.AF_INET:
            self.bind((SRC, 0))
        return super().connect(addr)


socket.socket = _SrcSocket
USER, PASS = "smbtest", "testpass"
SUCCESS = 0
WRITE, READ, ECHO, NEGOTIATE, SESSION_SETUP, TREE_CONNECT = 9, 8, 13, 0, 1, 3


def hdr(cmd, mid, sid=0, tid=0, charge=1, credits=32, flags=0, nxt=0, status=0):
    return struct.pack("<4sHHIHHIIQIIQ16s", b"\xfeSMB", 64, charge, status, cmd,
                       credits, flags, nxt, mid, 0xFEFF, tid, sid, b"\0" * 16)


def nbss(msg):
    return struct.pack(">I", len(msg)) + msg


def write_body(fid, data, offset=0, ssize=49, doff=64 + 48, length=None):
    if length is None:
        length = len(data)
    return struct.pack("<HHIQ16sIIHHI", ssize, doff, length, offset, fid,
                       0, 0, 0, 0, 0) + data


def read_body(fid, length, offset=0):
    return struct.pack("<HBBIQ16sIIIHHB", 49, 0x50, 0, length, offset, fid,
                       0, 0, 0, 0, 0, 0)


def negotiate_req(mid=0):
    body = struct.pack("<HHHHI16sQ", 36, 2, 1, 0, 0, os.urandom(16), 0)
    body += struct.pack("<HH", 0x0202, 0x0210)
    return hdr(NEGOTIATE, mid, credits=1) + body


def recv_frame(s, timeout):
    """One NBSS frame's payload, b"" when closed; raises socket.timeout."""
    s.settimeout(timeout)
    buf = b""
    while len(buf) < 4:
        b = s.recv(4 - len(buf))
        if not b:
            return b""
        buf += b
    n = struct.unpack(">I", buf)[0] & 0xFFFFFF
    data = b""
    while len(data) < n:
        b = s.recv(n - len(data))
        if not b:
            return b""
        data += b
    return data


# ---------------------------------------------------------------- client

class Session:
    """An impacket 2.1 session with one open file; raw sends after that."""

    def __init__(self, port, name, prefill=False):
        from impacket.smbconnection import SMBConnection
        from impacket import smb3structs as s3
        self.c = SMBConnection("127.0.0.1", "127.0.0.1", sess_port=port,
                               preferredDialect=s3.SMB2_DIALECT_21, timeout=DEADLINE)
        self.c.login(USER, PASS)
        self.tid = self.c.connectTree("share")
        self.fid = self.c.createFile(self.tid, name,
                                     desiredAccess=s3.FILE_READ_DATA | s3.FILE_WRITE_DATA,
                                     creationDisposition=s3.FILE_OVERWRITE_IF)
        if prefill:
            self.c.writeFile(self.tid, self.fid, os.urandom(65536), offset=0)
        smb = self.c.getSMBServer()
        self.sid = smb._Session["SessionID"]
        self.mid = smb._Connection["SequenceWindow"]
        self.sock = smb._NetBIOSSession.get_socket()
        self.port = self.sock.getsockname()[1]

    def send(self, msg):
        self.sock.sendall(nbss(msg))

    def next_mid(self, n=1):
        m = self.mid
        self.mid += n
        return m

    def answer(self, want_mids):
        """Outcome for the requests with ids want_mids: 'closed',
        'status 0x..' (first error), 'SUCCESS', or 'hang'."""
        t0 = time.time()
        statuses = {}
        while len(statuses) < len(want_mids):
            left = DEADLINE - (time.time() - t0)
            if left <= 0:
                return "hang"
            try:
                msg = recv_frame(self.sock, left)
            except socket.timeout:
                return "hang"
            except OSError:
                return "closed"
            if not msg:
                return "closed"
            if msg[:4] != b"\xfeSMB" or len(msg) < 64:
                return "undecodable answer"
            status, flags = struct.unpack_from("<I", msg, 8)[0], struct.unpack_from("<I", msg, 16)[0]
            mid = struct.unpack_from("<Q", msg, 24)[0]
            if status == 0x103 and flags & 2:   # interim
                continue
            statuses[mid] = status
        bad = [s for s in statuses.values() if s != SUCCESS]
        if bad:
            return "status 0x%08x" % bad[0]
        return "SUCCESS"

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def client_cases(port, direct_port=None):
    K = b"k" * 1024
    cases = []

    def case(name, allowed=("closed", "error")):
        def deco(f):
            cases.append((name, f, allowed))
            return f
        return deco

    @case("write-structuresize-0x29")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid) + write_body(s.fid, K, ssize=0x29))
        return [m]

    @case("write-dataoffset-beyond-message")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid) + write_body(s.fid, K, doff=0x2000))
        return [m]

    @case("write-dataoffset-into-header")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid) + write_body(s.fid, K, doff=0x20))
        return [m]

    @case("write-length-beyond-message")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid) + write_body(s.fid, K, length=60000))
        return [m]

    @case("write-offset-overflow")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid) +
               write_body(s.fid, K, offset=0xFFFFFFFFFFFFFF00))
        return [m]

    @case("write-negative-offset")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid) +
               write_body(s.fid, K, offset=0x8000000000000000))
        return [m]

    @case("write-creditcharge-beyond-grant")
    def _(s):
        m = s.next_mid(5000)
        s.send(hdr(WRITE, m, s.sid, s.tid, charge=5000) + write_body(s.fid, K))
        return [m]

    @case("write-creditcharge-zero-64k")
    def _(s):
        # dialect 2.1 with LARGE_MTU: 64 KiB + 1 needs a charge of 2
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid, charge=1) + write_body(s.fid, b"z" * 65537))
        return [m]

    @case("write-mid-beyond-window")
    def _(s):
        m = s.mid + 100000
        s.send(hdr(WRITE, m, s.sid, s.tid) + write_body(s.fid, K))
        return [m]

    @case("write-mid-below-window")
    def _(s):
        s.send(hdr(WRITE, 1, s.sid, s.tid) + write_body(s.fid, K))
        return [1]

    @case("write-duplicate-mid")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid) + write_body(s.fid, K))
        first = s.answer([m])
        if first != "SUCCESS":
            raise RuntimeError("the first (valid) WRITE got %s" % first)
        s.send(hdr(WRITE, m, s.sid, s.tid) + write_body(s.fid, K, offset=1024))
        return [m]

    @case("read-duplicate-mid")
    def _(s):
        # sequential 4 KiB reads: read-ahead serves the later ones from its
        # cache; then one with the id of the previous, already answered
        m1 = s.next_mid()
        s.send(hdr(READ, m1, s.sid, s.tid) + read_body(s.fid, 4096, 0))
        m2 = s.next_mid()
        first = s.answer([m1])
        s.send(hdr(READ, m2, s.sid, s.tid) + read_body(s.fid, 4096, 4096))
        second = s.answer([m2])
        if first != "SUCCESS" or second != "SUCCESS":
            raise RuntimeError("valid READs got %s, %s" % (first, second))
        s.send(hdr(READ, m2, s.sid, s.tid) + read_body(s.fid, 4096, 8192))
        return [m2]

    @case("write-wrong-session-id")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid ^ 0x5555, s.tid) + write_body(s.fid, K))
        return [m]

    @case("write-wrong-tree-id")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid ^ 0x77) + write_body(s.fid, K))
        return [m]

    @case("write-unknown-fileid")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid) + write_body(os.urandom(16), K))
        return [m]

    @case("write-flagged-as-response")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid, flags=1) + write_body(s.fid, K))
        return [m]

    @case("compound-nextcommand-beyond-end")
    def _(s):
        m = s.next_mid(2)
        a = hdr(WRITE, m, s.sid, s.tid, nxt=0x1000) + write_body(s.fid, K)
        s.send(a)
        return [m]

    @case("compound-nextcommand-overlapping")
    def _(s):
        m = s.next_mid(2)
        a = hdr(WRITE, m, s.sid, s.tid, nxt=64) + write_body(s.fid, K)
        s.send(a)
        return [m]

    @case("compound-nextcommand-unaligned")
    def _(s):
        m = s.next_mid(2)
        a = hdr(ECHO, m, s.sid, s.tid, nxt=68) + struct.pack("<HH", 4, 0)
        b = hdr(ECHO, m + 1, s.sid, s.tid) + struct.pack("<HH", 4, 0)
        s.send(a + b)
        return [m, m + 1]

    @case("read-beyond-maxread", allowed=("closed", "error"))
    def _(s):
        m = s.next_mid(256)
        s.send(hdr(READ, m, s.sid, s.tid, charge=256) + read_body(s.fid, 64 << 20))
        return [m]

    @case("write-truncated-body")
    def _(s):
        m = s.next_mid()
        s.send(hdr(WRITE, m, s.sid, s.tid) + write_body(s.fid, b"")[:20])
        return [m]

    global SRC

    def run(p, name):
        try:
            s = Session(p, "mf-" + name, prefill=name.startswith("read-"))
        except Exception as e:
            return None, "could not set up the session: %s" % e
        try:
            mids = f(s)
            out = s.answer(mids)
        except Exception as e:
            out = "setup failed: %s" % e
        s.close()
        return s, out

    def kind(out):
        return ("closed" if out == "closed" else
                "error" if out.startswith("status ") else out)

    bad = 0
    for i, (name, f, allowed) in enumerate(cases):
        # what smbd itself does with the request, for comparison
        direct = None
        if direct_port:
            SRC = None
            _, direct = run(direct_port, name)
        SRC = "127.0.0.%d" % (10 + i)
        s, out = run(port, name)
        if s is None:
            print("case %s: BAD: %s" % (name, out), flush=True)
            bad += 1
            continue
        k = kind(out)
        # allowed: an error or a close; or whatever smbd does directly,
        # except success
        ok = k in allowed or (direct is not None and k == kind(direct) and k != "SUCCESS")
        if not ok:
            bad += 1
        print("case %s: %s %s (direct: %s) (client port %d)" %
              (name, "ok" if ok else "BAD", out, direct or "-", s.port), flush=True)
        # the same client can log in again at once (a connection of its
        # that never finishes draining would hold up every later one)
        time.sleep(0.2)
        try:
            t0 = time.time()
            Session(port, "mf-canary").close()
        except Exception as e:
            bad += 1
            print("case %s: BAD: a new session from the same client address %s "
                  "failed afterwards (%.1fs): %s" % (name, SRC, time.time() - t0, e), flush=True)
    SRC = None
    return 1 if bad else 0


# ---------------------------------------------------------------- server

def neg_response(mid=0, credits=1, sec_off=128, sec_len=0, ssize=65, nxt=0,
                 cmd=NEGOTIATE, status=0):
    h = hdr(cmd, mid, credits=credits, flags=1, nxt=nxt, status=status)
    body = struct.pack("<HHHH16sIIIIQQHHI", ssize, 1, 0x0210, 0, os.urandom(16),
                       0, 1 << 20, 1 << 20, 1 << 20, 0, 0, sec_off, sec_len, 0)
    return h + body


def serve_one(conn, case, smbd_port):
    conn.settimeout(10)
    if case == "relay":
        up = socket.create_connection(("127.0.0.1", smbd_port))

        def pipe(a, b):
            try:
                while True:
                    d = a.recv(65536)
                    if not d:
                        break
                    b.sendall(d)
            except OSError:
                pass
            for x in (a, b):
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        t = threading.Thread(target=pipe, args=(up, conn), daemon=True)
        t.start()
        pipe(conn, up)
        t.join(5)
        up.close()
        return
    req = recv_frame(conn, 10)          # the NEGOTIATE
    if not req:
        return
    out = {
        "garbage": lambda: os.urandom(300),
        "smb1-answer": lambda: nbss(b"\xffSMB" + b"\x72" + b"\0" * 60),
        "truncated-header": lambda: nbss(b"\xfeSMB" + b"\0" * 20),
        "secbuf-outside": lambda: nbss(neg_response(sec_off=0x4000, sec_len=0x200)),
        "secbuf-overflow": lambda: nbss(neg_response(sec_off=0xFFFF, sec_len=0xFFFF)),
        "structuresize-wrong": lambda: nbss(neg_response(ssize=9)),
        "nextcommand-lies": lambda: nbss(neg_response(nxt=0x800)),
        "nbss-0xffffff": lambda: b"\x00\xff\xff\xff" + os.urandom(1000),
        "huge-credit-grant": lambda: nbss(neg_response(credits=65535)),
        "unknown-mid": lambda: nbss(neg_response(mid=77)),
        "async-interim-forever": lambda: nbss(hdr(NEGOTIATE, 0, flags=3, status=0x103) +
                                              struct.pack("<HBBI", 9, 0, 0, 0)),
    }
    if case in out:
        conn.sendall(out[case]())
        time.sleep(0.5)
        return
    if case == "tcon-answers-session-setup":
        # a proper-looking NEGOTIATE response, then a TREE_CONNECT response
        # with the id of the client's SESSION_SETUP
        conn.sendall(nbss(neg_response(credits=10)))
        req = recv_frame(conn, 10)
        if not req:
            return
        mid = struct.unpack_from("<Q", req, 24)[0]
        body = struct.pack("<HBBIII", 16, 1, 0, 0, 0, 0x1F01FF)
        conn.sendall(nbss(hdr(TREE_CONNECT, mid, sid=0x1234, tid=5, flags=1) + body))
        time.sleep(0.5)


def server(listen_port, smbd_port, case_file):
    ls = listen(listen_port, 64)
    while True:
        conn, _ = ls.accept()
        try:
            case = open(case_file).read().strip()
        except OSError:
            case = "relay"
        threading.Thread(target=lambda c=conn, k=case: (serve_one(c, k, smbd_port), c.close()),
                         daemon=True).start()


SERVER_CASES = ["garbage", "smb1-answer", "truncated-header", "secbuf-outside",
                "secbuf-overflow", "structuresize-wrong", "nextcommand-lies",
                "nbss-0xffffff", "huge-credit-grant", "unknown-mid",
                "async-interim-forever", "tcon-answers-session-setup"]


def session_setup_req(mid=1):
    blob = b"NTLMSSP\0" + struct.pack("<I", 1) + b"\0" * 24
    body = struct.pack("<HBBIIHHQ", 25, 0, 1, 0, 0, 64 + 24, len(blob), 0) + blob
    return hdr(SESSION_SETUP, mid) + body


def server_cases(port, case_file):
    bad = 0

    def one(case):
        with open(case_file, "w") as fp:
            fp.write(case)
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        cport = s.getsockname()[1]
        s.sendall(nbss(negotiate_req()))
        if case == "tcon-answers-session-setup":
            first = recv_frame(s, DEADLINE)
            if first:
                s.sendall(nbss(session_setup_req()))
        t0 = time.time()
        got, outcome = 0, None
        while time.time() - t0 < DEADLINE:
            try:
                s.settimeout(max(0.1, DEADLINE - (time.time() - t0)))
                b = s.recv(65536)
            except socket.timeout:
                break
            except OSError:
                b = b""
            if not b:
                outcome = "closed"
                break
            got += len(b)
        s.close()
        if outcome is None:
            outcome = "open, %d bytes relayed" % got
        return cport, outcome, time.time() - t0

    for case in SERVER_CASES:
        cport, outcome, dt = one(case)
        print("server case %s: %s after %.1fs (client port %d)" % (case, outcome, dt, cport),
              flush=True)
        # a good connection through the same smbaccel still works
        with open(case_file, "w") as fp:
            fp.write("relay")
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(nbss(negotiate_req()))
        try:
            r = recv_frame(s, DEADLINE)
        except OSError:
            r = b""
        s.close()
        if len(r) < 64 or r[:4] != b"\xfeSMB" or struct.unpack_from("<I", r, 8)[0] != 0:
            print("server case %s: BAD: a normal NEGOTIATE afterwards failed" % case, flush=True)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "client":
        sys.exit(client_cases(int(sys.argv[2]),
                              int(sys.argv[3]) if len(sys.argv) > 3 else None))
    if len(sys.argv) >= 5 and sys.argv[1] == "server":
        server(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    if len(sys.argv) >= 4 and sys.argv[1] == "server-cases":
        sys.exit(server_cases(int(sys.argv[2]), sys.argv[3]))
    sys.exit(__doc__)
