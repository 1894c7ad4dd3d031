#!/usr/bin/python3
"""server_probe.py - what an SMB2 server does at the edges a proxy must
allow for, one raw request at a time.

usage: server_probe.py PORT SHARE [USER PASS] [--dialect 0x202|0x210|0x300]

Logs in with impacket (NTLM, signing enabled but not required), then sends
its own requests (its own message ids, never signed) on that connection
and prints one line per fact, "NAME: value", for example

  dialect: 0x0202
  signed: SESSION_SETUP(final)=valid TREE_CONNECT=valid CREATE=valid ...
  grant: ECHO req=0 -> 1, req=64 -> 64

Every response the server sent is checked for SMB2_FLAGS_SIGNED and, with
the session key (HMAC-SHA256 at 2.0.2/2.1, AES-CMAC at 3.0), for a valid
signature.  A request the server answers with a dropped connection is
reported as "disconnect" and the probe reconnects for the next one.  The
probes: negotiate limits, credits granted, signing of answers to unsigned
requests, compounds (related CREATE+READ+CLOSE, unrelated ECHO+ECHO),
multi-credit READ/WRITE above 64 KiB, ECHO with CreditCharge 8, CANCEL,
batch oplock and RWH lease requests, QUERY_ON_DISK_ID (QFid), FLUSH,
LOCK, READ at EOF, a WRITE starting past EOF, an unknown FileId, a
message id used twice and one far above the window.  Exit status 0 unless
the login itself fails; the lines are facts, not verdicts.
"""
import hashlib
import hmac
import os
import struct
import sys

from impacket import nmb, ntlm
from impacket import smb3structs as s3
from impacket.smbconnection import SMBConnection

try:
    from Cryptodome.Hash import CMAC
    from Cryptodome.Cipher import AES
except ImportError:  # pragma: no cover
    CMAC = None

args = [a for a in sys.argv[1:] if not a.startswith("--")]
opts = sys.argv[1:]
if len(args) < 2:
    sys.exit(__doc__)
PORT, SHARE = int(args[0]), args[1]
USER = args[2] if len(args) > 2 else "smbtest"
PASS = args[3] if len(args) > 3 else "testpass"
DIALECT = s3.SMB2_DIALECT_002
if "--dialect" in opts:
    DIALECT = int(opts[opts.index("--dialect") + 1], 16)

CMDS = {0: "NEGOTIATE", 1: "SESSION_SETUP", 2: "LOGOFF", 3: "TREE_CONNECT",
        4: "TREE_DISCONNECT", 5: "CREATE", 6: "CLOSE", 7: "FLUSH", 8: "READ",
        9: "WRITE", 10: "LOCK", 11: "IOCTL", 12: "CANCEL", 13: "ECHO",
        14: "QUERY_DIRECTORY", 15: "CHANGE_NOTIFY", 16: "QUERY_INFO",
        17: "SET_INFO", 18: "OPLOCK_BREAK"}
STATUS = {0: "SUCCESS", 0x103: "PENDING", 0xC0000120: "CANCELLED",
          0xC0000008: "INVALID_HANDLE", 0xC0000011: "END_OF_FILE",
          0xC00000BB: "NOT_SUPPORTED", 0xC000000D: "INVALID_PARAMETER",
          0xC0000022: "ACCESS_DENIED", 0xC0000010: "INVALID_DEVICE_REQUEST",
          0xC0000128: "FILE_CLOSED", 0xC0000054: "FILE_LOCK_CONFLICT",
          0xC0000016: "MORE_PROCESSING_REQUIRED", 0xC0000034: "OBJECT_NAME_NOT_FOUND",
          0xC0000002: "NOT_IMPLEMENTED", 0x00010002: "SMB_BAD_COMMAND",
          0xC000000F: "NO_SUCH_FILE", 0xC0000184: "INVALID_DEVICE_STATE"}
FLAGS_RESPONSE, FLAGS_ASYNC, FLAGS_RELATED, FLAGS_SIGNED = 1, 2, 4, 8


def st(code):
    return STATUS.get(code, "0x%08x" % code)


def out(name, value):
    print("%s: %s" % (name, value), flush=True)


# Every SMB2 message the client side receives, login included.
TRACE = []
_orig_recv = nmb.NetBIOSTCPSession.recv_packet


def _recv(self, timeout=None):
    p = _orig_recv(self, timeout)
    TRACE.append(p.get_trailer())
    return p


nmb.NetBIOSTCPSession.recv_packet = _recv


class Probe:
    def __init__(self):
        TRACE.clear()
        self.conn = SMBConnection("127.0.0.1", "127.0.0.1", sess_port=PORT,
                                  preferredDialect=DIALECT, timeout=10)
        self.conn.login(USER, PASS)
        self.smb = self.conn.getSMBServer()
        self.nbss = self.smb._NetBIOSSession
        self.key = self.smb._Session["SessionKey"]
        self.dialect = self.smb._Connection["Dialect"]
        self.signkey = self.key
        if self.dialect >= s3.SMB2_DIALECT_30:
            self.signkey = self.smb._Session.get("SigningKey") or self.key
        self.login_trace = list(TRACE)
        self.tid = self.conn.connectTree(SHARE)
        self.sid = self.smb._Session["SessionID"]
        self.next_id = self.smb._Connection["SequenceWindow"]

    # ---- signatures
    def sig_state(self, msg):
        flags = struct.unpack_from("<I", msg, 16)[0]
        if not flags & FLAGS_SIGNED:
            return "unsigned"
        want = msg[48:64]
        m = msg[:48] + b"\0" * 16 + msg[64:]
        if self.dialect >= s3.SMB2_DIALECT_30:
            if CMAC is None:
                return "signed"
            c = CMAC.new(self.signkey, ciphermod=AES)
            c.update(m)
            got = c.digest()
        else:
            got = hmac.new(self.key, m, hashlib.sha256).digest()[:16]
        return "valid" if got == want else "BAD-signature"

    # ---- raw requests
    def hdr(self, cmd, mid, charge=1, credreq=1, flags=0, nxt=0, tid=None, sid=None):
        return struct.pack("<4sHHIHHIIQIIQ16s", b"\xfeSMB", 64, charge, 0, cmd, credreq,
                           flags, nxt, mid, 0, self.tid if tid is None else tid,
                           self.sid if sid is None else sid, b"\0" * 16)

    def take(self, charge=1):
        mid = self.next_id
        self.next_id += max(charge, 1)
        return mid

    def send(self, msg):
        self.nbss.send_packet(msg)

    def recv(self, timeout=5):
        """Next message from the server (raw bytes), None on timeout,
        'disconnect' if the connection closed."""
        try:
            return self.nbss.recv_packet(timeout).get_trailer()
        except Exception as e:  # timeout or closed
            text = str(e).lower()
            if "timed out" in text or "timeout" in text:
                return None
            return "disconnect"

    def request(self, cmd, body, charge=1, credreq=1, flags=0, mid=None, timeout=5):
        if mid is None:
            mid = self.take(charge)
        self.send(self.hdr(cmd, mid, charge, credreq, flags) + body)
        return self.final(timeout)

    def final(self, timeout=5):
        while True:
            r = self.recv(timeout)
            if not isinstance(r, bytes):
                return r
            status = struct.unpack_from("<I", r, 8)[0]
            flags = struct.unpack_from("<I", r, 16)[0]
            if status == 0x103 and flags & FLAGS_ASYNC:
                continue
            return r

    def desc1(self, r):
        cmd, credits = struct.unpack_from("<HH", r, 12)
        status = struct.unpack_from("<I", r, 8)[0]
        flags = struct.unpack_from("<I", r, 16)[0]
        return "%s %s grant=%d %s%s" % (CMDS.get(cmd, cmd), st(status), credits,
                                       self.sig_state(r), " related" if flags & FLAGS_RELATED else "")

    def desc(self, r):
        """One answer frame: each element of a compound, ';'-separated."""
        if not isinstance(r, bytes):
            return r or "no answer"
        parts = [self.desc1(e) for e in elements(r)]
        return parts[0] if len(parts) == 1 else \
            "%d answers in one frame: %s" % (len(parts), "; ".join(parts))

    # ---- bodies
    @staticmethod
    def echo():
        return struct.pack("<HH", 4, 0)

    @staticmethod
    def create_body(name, oplock=0, contexts=b"", disposition=3):
        n = name.encode("utf-16le")
        # StructureSize 57 .. NameOffset at 120, contexts after the name
        ctx_off = 0
        pad = b""
        if contexts:
            base = 64 + 56 + len(n)
            padn = (8 - base % 8) % 8
            pad = b"\0" * padn
            ctx_off = base + padn
        body = struct.pack("<HBBIQQIIIIIHHII", 57, 0, oplock, 2, 0, 0,
                           0x0012019F, 0x80, 7, disposition, 0x40,
                           120, len(n), ctx_off, len(contexts))
        return body + n + pad + contexts

    @staticmethod
    def context(name, data=b""):
        nm = name.encode()
        data_off = (16 + len(nm) + 7) // 8 * 8 if data else 0
        c = struct.pack("<IHHHHI", 0, 16, len(nm), 0, data_off, len(data)) + nm
        if data:
            c += b"\0" * (data_off - len(c)) + data
        return c

    @staticmethod
    def read_body(fid, off, length):
        return struct.pack("<HBBIQ16sIIIHH", 49, 0x50, 0, length, off, fid, 0, 0, 0, 0, 0) + b"\0"

    @staticmethod
    def write_body(fid, off, data):
        return struct.pack("<HHIQ16sIIHHI", 49, 0x70, len(data), off, fid, 0, 0, 0, 0, 0) + data

    @staticmethod
    def close_body(fid):
        return struct.pack("<HHI16s", 24, 0, 0, fid)

    @staticmethod
    def flush_body(fid):
        return struct.pack("<HHI16s", 24, 0, 0, fid)

    @staticmethod
    def lock_body(fid):
        return struct.pack("<HHI16s", 48, 1, 0, fid) + struct.pack("<QQII", 0, 1, 0x2 | 0x10, 0)

    def open(self, name, **kw):
        r = self.request(5, self.create_body(name, **kw))
        if not isinstance(r, bytes) or struct.unpack_from("<I", r, 8)[0] != 0:
            return None, r
        return r[64 + 64:64 + 80], r


def elements(r):
    """The elements of a (possibly compound) SMB2 message."""
    off = 0
    while off + 64 <= len(r):
        nxt = struct.unpack_from("<I", r, off + 20)[0]
        yield r[off:off + nxt] if nxt else r[off:]
        if not nxt:
            return
        off += nxt


def ctx_names(r):
    """Create context names of a CREATE response."""
    off, ln = struct.unpack_from("<II", r, 64 + 80)
    names = []
    pos = off
    while ln and pos and pos + 16 <= len(r):
        nxt, noff, nlen = struct.unpack_from("<IHH", r, pos)
        names.append(r[pos + noff:pos + noff + nlen].decode(errors="replace"))
        if not nxt:
            break
        pos += nxt
    return names


def main():
    p = Probe()
    out("dialect", "0x%04x" % p.dialect)
    for m in p.login_trace:
        if len(m) >= 64 + 40 and m[:4] == b"\xfeSMB" and struct.unpack_from("<H", m, 12)[0] == 0:
            sec, dial = struct.unpack_from("<HH", m, 64 + 2)
            caps, mt, mr, mw = struct.unpack_from("<IIII", m, 64 + 24)
            out("negotiate", "SecurityMode=0x%x Capabilities=0x%x MaxTransact=%d MaxRead=%d MaxWrite=%d" % (
                sec, caps, mt, mr, mw))
    login = []
    for m in p.login_trace:
        if len(m) >= 64 and m[:4] == b"\xfeSMB":
            cmd, credits = struct.unpack_from("<HH", m, 12)
            status = struct.unpack_from("<I", m, 8)[0]
            login.append("%s(%s)=%s grant=%d" % (CMDS.get(cmd), st(status), p.sig_state(m), credits))
    out("login answers", " ".join(login))

    # credits granted for what is asked
    g = []
    for req in (0, 1, 8, 64, 1000):
        r = p.request(13, p.echo(), credreq=req)
        g.append("req=%d->%s" % (req, struct.unpack_from("<H", r, 14)[0] if isinstance(r, bytes) else r))
    out("grant ECHO", " ".join(g))

    name = "probe-%d" % os.getpid()
    fid, r = p.open(name, disposition=5)
    out("CREATE (no oplock) of a new file", p.desc(r))
    data = os.urandom(200000)
    r = p.request(9, p.write_body(fid, 0, data[:65536]))
    out("WRITE 64 KiB (unsigned request)", p.desc(r))
    r = p.request(9, p.write_body(fid, 65536, data[65536:65536 + 131072]), charge=2)
    out("WRITE 128 KiB CreditCharge=2", p.desc(r))
    r = p.request(8, p.read_body(fid, 0, 131072), charge=2)
    got = struct.unpack_from("<I", r, 64 + 4)[0] if isinstance(r, bytes) and len(r) >= 72 else "-"
    out("READ 128 KiB CreditCharge=2", "%s bytes=%s" % (p.desc(r), got))
    r = p.request(8, p.read_body(fid, 0, 131072), charge=1)
    got = struct.unpack_from("<I", r, 64 + 4)[0] if isinstance(r, bytes) and len(r) >= 72 else "-"
    out("READ 128 KiB CreditCharge=1", "%s bytes=%s" % (p.desc(r), got))
    r = p.request(8, p.read_body(fid, 10 ** 7, 4096))
    out("READ at offset past EOF", p.desc(r))
    r = p.request(9, p.write_body(fid, 10 ** 6, b"X" * 4096))
    out("WRITE starting past EOF (1 MB, file is 192 KiB)", p.desc(r))
    r = p.request(8, p.read_body(fid, 10 ** 6, 4096))
    got = struct.unpack_from("<I", r, 64 + 4)[0] if isinstance(r, bytes) and len(r) >= 72 else "-"
    out("  READ back at 1 MB", "%s bytes=%s" % (p.desc(r), got))
    r = p.request(7, p.flush_body(fid))
    out("FLUSH", p.desc(r))
    r = p.request(10, p.lock_body(fid))
    out("LOCK", p.desc(r))
    r = p.request(13, p.echo(), charge=8)
    out("ECHO CreditCharge=8", p.desc(r))

    # compounds
    n = name.encode("utf-16le")
    e1 = p.hdr(13, p.take(), nxt=72) + p.echo() + b"\0" * 4
    e2 = p.hdr(13, p.take()) + p.echo()
    p.send(e1 + e2)
    r = p.recv()
    extra = p.recv(1)
    out("compound ECHO+ECHO (unrelated)", p.desc(r) + (
        "; then another frame: " + p.desc(extra) if isinstance(extra, bytes) else ""))
    cbody = p.create_body(name)
    clen = 64 + len(cbody)
    cpad = (8 - clen % 8) % 8
    rbody = p.read_body(b"\xff" * 16, 0, 4096)
    rlen = 64 + len(rbody)
    rpad = (8 - rlen % 8) % 8
    msg = (p.hdr(5, p.take(), nxt=clen + cpad) + cbody + b"\0" * cpad +
           p.hdr(8, p.take(), flags=FLAGS_RELATED, nxt=rlen + rpad) + rbody + b"\0" * rpad +
           p.hdr(6, p.take(), flags=FLAGS_RELATED) + p.close_body(b"\xff" * 16))
    p.send(msg)
    r = p.recv()
    extra = p.recv(1)
    out("compound CREATE+READ+CLOSE (related)", p.desc(r) + (
        "; then another frame: " + p.desc(extra) if isinstance(extra, bytes) else ""))

    # oplock / lease / QFid
    fid2, r = p.open(name, oplock=9)
    out("CREATE oplock=batch", "%s granted oplock=0x%02x" % (p.desc(r), r[66] if isinstance(r, bytes) else 0))
    if fid2:
        p.request(6, p.close_body(fid2))
    lease = p.context("RqLs", os.urandom(16) + struct.pack("<IIQ", 7, 0, 0))
    fid2, r = p.open(name, oplock=0xFF, contexts=lease)
    out("CREATE lease RWH", "%s oplock=0x%02x contexts=%s" % (
        p.desc(r), r[66] if isinstance(r, bytes) else 0, ctx_names(r) if isinstance(r, bytes) else "-"))
    if fid2:
        p.request(6, p.close_body(fid2))
    fid2, r = p.open(name, contexts=p.context("QFid"))
    out("CREATE QUERY_ON_DISK_ID (QFid)", "%s contexts=%s" % (
        p.desc(r), ctx_names(r) if isinstance(r, bytes) else "-"))
    if fid2:
        p.request(6, p.close_body(fid2))

    # CANCEL of nothing in flight: must get no answer (MS-SMB2 3.3.5.16)
    mid = p.next_id
    p.send(p.hdr(12, mid, charge=0, credreq=0) + struct.pack("<HH", 4, 0))
    r = p.recv(2)
    out("CANCEL (nothing in flight)", "answered: " + p.desc(r) if isinstance(r, bytes) else "no answer")
    if isinstance(r, bytes):
        p.next_id = mid + 1

    # unknown FileId
    r = p.request(8, p.read_body(b"\x11" * 16, 0, 10))
    out("READ on an unknown FileId", p.desc(r))
    r = p.request(6, p.close_body(fid))
    out("CLOSE", p.desc(r))

    # message ids: reuse, then far above the window
    used = p.next_id - 1
    r = p.request(13, p.echo(), mid=used)
    out("ECHO with a message id already used", p.desc(r))
    if r == "disconnect":
        p = Probe()
    r = p.request(13, p.echo(), mid=p.next_id + 100000)
    out("ECHO with a message id 100000 above the window", p.desc(r))
    if r == "disconnect":
        p = Probe()
    r = p.request(13, p.echo())
    out("ECHO afterwards", p.desc(r))
    # a request with the SIGNED flag and a wrong signature
    mid = p.take()
    m = bytearray(p.hdr(13, mid, flags=FLAGS_SIGNED) + p.echo())
    m[48:64] = b"\x5a" * 16
    p.send(bytes(m))
    r = p.final()
    out("ECHO signed with a wrong signature", p.desc(r))
    try:
        p.conn.deleteFile(SHARE, name)
    except Exception:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
