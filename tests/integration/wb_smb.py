"""wb_smb - a small raw SMB2 client for the write-behind / read-ahead tests.

impacket (system /usr/bin/python3) does NEGOTIATE, SESSION_SETUP and
TREE_CONNECT; everything after that is built here with struct, so a test
controls every field (flags, FileId, TreeId, SessionId, CreditCharge),
can pipeline requests and sees server notifications (oplock and lease
breaks, MessageId 0xFFFFFFFFFFFFFFFF).  Message ids and credits are
tracked here, not by impacket: impacket's own helpers only advance their
id window when a response arrives, so pipelined or multi-credit requests
would reuse ids (SMB-NOTES).

Typical use:
    c = Client(port, "3.0")
    fid, r = c.create("f", oplock=OPLOCK_BATCH)
    c.write(fid, 0, b"x" * 1024)
    st, data = c.read(fid, 0, 1024)
    c.close(fid)

Client(..., sign=True) signs every request it builds (HMAC-SHA256 at 2.x,
AES-CMAC at 3.x, MS-SMB2 3.1.4.1) and checks every answer it reads: a bad
signature, or an unsigned answer that is not an interim or a break
notification, raises BadSignature, as a client discards such a message
(3.2.5.1.3).  Requests sent raw (compounds) go through sign_msg and their
answers through check_msg.
"""
import hashlib
import hmac
import os
import random
import struct
import sys
import time

from impacket.smbconnection import SMBConnection
from impacket import smb3structs as s3
from impacket import nmb
from impacket import crypto

# Count every credit the server grants on a connection, from the NEGOTIATE
# response on (impacket does not track credits), so the client below knows
# exactly how many ids it may use: one past the highest = 1 + grants.
_orig_recv_packet = nmb.NetBIOSTCPSession.recv_packet


def _counting_recv_packet(self, timeout=None):
    p = _orig_recv_packet(self, timeout)
    t = p.get_trailer()
    if t[:4] == b"\xfeSMB" and len(t) >= 64:
        off = 0
        while True:      # every element of a compound response
            mid = struct.unpack_from("<Q", t, off + 24)[0]
            if mid != 0xFFFFFFFFFFFFFFFF:
                self._wb_granted = getattr(self, "_wb_granted", 0) + struct.unpack_from("<H", t, off + 14)[0]
            nxt = struct.unpack_from("<I", t, off + 20)[0]
            if not nxt or off + nxt + 64 > len(t):
                break
            off += nxt
    return p


nmb.NetBIOSTCPSession.recv_packet = _counting_recv_packet

DIALECTS = {"2.0.2": s3.SMB2_DIALECT_002, "2.1": s3.SMB2_DIALECT_21,
            "3.0": s3.SMB2_DIALECT_30, "3.0.2": s3.SMB2_DIALECT_302,
            "3.1.1": s3.SMB2_DIALECT_311,
            "SMB2_02": s3.SMB2_DIALECT_002, "SMB2_10": s3.SMB2_DIALECT_21,
            "SMB3_00": s3.SMB2_DIALECT_30, "SMB3_02": s3.SMB2_DIALECT_302,
            "SMB3_11": s3.SMB2_DIALECT_311}

# commands (MS-SMB2 2.2.1.2)
CREATE, CLOSE, FLUSH, READ, WRITE, LOCK, IOCTL, CANCEL, ECHO = 5, 6, 7, 8, 9, 10, 11, 12, 13
QUERY_INFO, SET_INFO, OPLOCK_BREAK = 16, 17, 18
NOTIFY_ID = 0xFFFFFFFFFFFFFFFF
FLAG_RESPONSE, FLAG_ASYNC, FLAG_RELATED, FLAG_SIGNED = 0x1, 0x2, 0x4, 0x8

STATUS_SUCCESS = 0
STATUS_PENDING = 0x00000103
STATUS_END_OF_FILE = 0xC0000011
STATUS_ACCESS_DENIED = 0xC0000022
STATUS_FILE_CLOSED = 0xC0000128
STATUS_DISK_FULL = 0xC000007F
STATUS_NAME_NOT_FOUND = 0xC0000034  # OBJECT_NAME_NOT_FOUND

OPLOCK_NONE, OPLOCK_II, OPLOCK_EXCLUSIVE, OPLOCK_BATCH, OPLOCK_LEASE = 0, 1, 8, 9, 0xFF
LEASE_R, LEASE_H, LEASE_W = 1, 2, 4

FILE_READ_DATA, FILE_WRITE_DATA, FILE_APPEND_DATA = 0x1, 0x2, 0x4
READ_ATTRS = 0x80 | 0x8 | 0x20000          # attributes, EA, READ_CONTROL
GENERIC_READ, GENERIC_WRITE, GENERIC_ALL = 0x80000000, 0x40000000, 0x10000000
DELETE = 0x10000
SHARE_ALL = 7
FILE_SUPERSEDE, FILE_OPEN, FILE_CREATE, FILE_OPEN_IF, FILE_OVERWRITE, FILE_OVERWRITE_IF = 0, 1, 2, 3, 4, 5
OPT_NON_DIRECTORY = 0x40
OPT_WRITE_THROUGH = 0x2

WRITEFLAG_WRITE_THROUGH, WRITEFLAG_UNBUFFERED = 0x1, 0x2
READFLAG_UNBUFFERED = 0x1

HDR = struct.Struct("<4sHHIHHIIQIIQ16s")  # 64 bytes
ASYNC_HDR = struct.Struct("<4sHHIHHIIQQQ16s")


class SMBError(Exception):
    def __init__(self, what, status):
        Exception.__init__(self, "%s: status 0x%08x" % (what, status))
        self.status = status


class BadSignature(RuntimeError):
    pass


class Response(object):
    def __init__(self, raw):
        self.raw = raw
        (_, _, self.charge, self.status, self.command, self.credits, self.flags,
         self.next, self.mid, self.pid, self.tid, self.sid, _) = HDR.unpack_from(raw, 0)
        self.body = raw[64:self.next] if self.next else raw[64:]

    def __repr__(self):
        return "<resp cmd=%d mid=%d status=0x%08x>" % (self.command, self.mid, self.status)


class Client(object):
    def __init__(self, port, dialect="3.0", share="share", user="smbtest",
                 password="testpass", host="127.0.0.1", timeout=None,
                 want_credits=2048, sign=False):
        self.port = port
        if timeout is None:
            timeout = float(os.environ.get("WB_SMB_TIMEOUT", "60"))
        self.conn = SMBConnection(host, host, sess_port=port,
                                  preferredDialect=DIALECTS[dialect], timeout=timeout)
        # impacket encrypts every 3.x session the server allows to be
        # encrypted; a real client (and these tests) encrypt only on demand.
        self.conn.getSMBServer()._Connection["SupportsEncryption"] = False
        if sign:
            self.conn.getSMBServer()._Connection["RequireSigning"] = True
        self.conn.login(user, password)
        self.tid = self.conn.connectTree(share)
        self.smb = self.conn.getSMBServer()
        self.nb = self.smb._NetBIOSSession
        self.sid = self.smb._Session["SessionID"]
        self.dialect = self.smb._Connection["Dialect"]
        self.multicredit = (self.dialect != s3.SMB2_DIALECT_002 and
                            self.smb._Connection.get("SupportsMultiCredit", True))
        self.max_write = self.smb._Connection["MaxWriteSize"]
        self.max_read = self.smb._Connection["MaxReadSize"]
        if not self.multicredit:
            self.max_write = min(self.max_write, 65536)
            self.max_read = min(self.max_read, 65536)
        self.timeout = timeout
        self.sign_key = None
        if sign:
            if not self.smb._Session["SigningActivated"]:
                raise RuntimeError("signing was asked for and is not active")
            self.sign_key = (self.smb._Session["SessionKey"] if self.dialect < s3.SMB2_DIALECT_30
                             else self.smb._Session["SigningKey"])
        self.signed_answers = 0
        self.next_id = self.smb._Connection["SequenceWindow"]
        self.pending = {}       # mid -> command
        self.done = {}          # mid -> Response
        self.notifications = []
        self.interims = 0
        self.max_in_flight = 0
        self.wait(self.send(ECHO, struct.pack("<HH", 4, 0), credreq=want_credits))

    # ------------------------------------------------------------ signing
    def _mac(self, msg):
        if self.dialect < s3.SMB2_DIALECT_30:
            return hmac.new(self.sign_key, msg, hashlib.sha256).digest()[:16]
        return crypto.AES_CMAC(self.sign_key, msg, len(msg))

    def sign_msg(self, msg):
        """One request (a compound element with its padding) signed when
        the client signs; unchanged otherwise."""
        if self.sign_key is None:
            return msg
        m = bytearray(msg)
        struct.pack_into("<I", m, 16, struct.unpack_from("<I", m, 16)[0] | FLAG_SIGNED)
        m[48:64] = b"\0" * 16
        m[48:64] = self._mac(bytes(m))
        return bytes(m)

    def check_msg(self, raw):
        """Check the signature of every element of an answer read raw."""
        if self.sign_key is None:
            return
        off = 0
        while True:
            flags, nxt, mid = struct.unpack_from("<IIQ", raw, off + 16)
            status = struct.unpack_from("<I", raw, off + 8)[0]
            el = raw[off:off + nxt] if nxt else raw[off:]
            if flags & FLAG_SIGNED:
                m = bytearray(el)
                m[48:64] = b"\0" * 16
                if self._mac(bytes(m)) != el[48:64]:
                    raise BadSignature("bad signature on the answer to message id %d (cmd %d status 0x%08x)"
                                       % (mid, struct.unpack_from("<H", el, 12)[0], status))
                self.signed_answers += 1
            elif mid != NOTIFY_ID and status != STATUS_PENDING:
                raise BadSignature("unsigned answer to message id %d (cmd %d status 0x%08x) in a signed session"
                                   % (mid, struct.unpack_from("<H", el, 12)[0], status))
            if not nxt:
                return
            off += nxt

    # ------------------------------------------------------------ transport
    def charge_for(self, nbytes):
        if not self.multicredit:
            return 0 if self.dialect == s3.SMB2_DIALECT_002 else 1
        return max(1, (max(nbytes, 1) - 1) // 65536 + 1)

    @property
    def limit(self):
        """One past the highest message id the client was granted."""
        return 1 + getattr(self.nb, "_wb_granted", 0)

    def credits(self):
        return self.limit - self.next_id

    def send(self, cmd, body, charge=None, credreq=None, tid=None, sid=None,
             flags=0, mid=None, bad_signature=False):
        """Send one request; returns its MessageId.  Waits for credits if
        none are available and responses are outstanding.  bad_signature:
        signed, then one bit of the signature flipped."""
        if charge is None:
            charge = 0 if self.dialect == s3.SMB2_DIALECT_002 else 1
        need = max(charge, 1)
        while mid is None and self.next_id + need > self.limit:
            if not self.pending:
                raise RuntimeError("credit starvation: next id %d, limit %d, nothing in flight"
                                   % (self.next_id, self.limit))
            self._recv_one()
        if credreq is None:
            credreq = max(need, 32)
        m = self.next_id if mid is None else mid
        hdr = HDR.pack(b"\xfeSMB", 64, charge, 0, cmd, credreq, flags, 0, m, 0xFEFF,
                       self.tid if tid is None else tid,
                       self.sid if sid is None else sid, b"\0" * 16)
        msg = bytearray(self.sign_msg(hdr + body))
        if bad_signature:
            msg[63] ^= 0x01
        self.nb.send_packet(bytes(msg))
        if mid is None:
            self.next_id += need
        if cmd != CANCEL:
            self.pending[m] = cmd
            self.max_in_flight = max(self.max_in_flight, len(self.pending))
        return m

    def _recv_one(self, timeout=None):
        raw = self.nb.recv_packet(timeout or self.timeout).get_trailer()
        if raw[:4] != b"\xfeSMB":
            raise RuntimeError("unexpected frame %r" % raw[:4])
        self.check_msg(raw)
        r = Response(raw)
        if r.mid == NOTIFY_ID:
            self.notifications.append(r)
            return r
        if r.status == STATUS_PENDING and r.flags & FLAG_ASYNC:
            self.interims += 1
            return r
        if r.mid not in self.pending:
            raise RuntimeError("response to unknown message id %d (cmd %d status 0x%08x)"
                               % (r.mid, r.command, r.status))
        del self.pending[r.mid]
        self.done[r.mid] = r
        return r

    def wait(self, mid):
        while mid not in self.done:
            self._recv_one()
        return self.done.pop(mid)

    def wait_all(self):
        while self.pending:
            self._recv_one()
        d, self.done = self.done, {}
        return d

    def wait_notification(self, timeout=30):
        """Next server notification (reads the socket until one arrives)."""
        end = time.time() + timeout
        while not self.notifications:
            left = end - time.time()
            if left <= 0:
                return None
            try:
                self._recv_one(timeout=left)
            except Exception as e:   # impacket raises on timeout
                if "timed out" in str(e).lower() or "timeout" in type(e).__name__.lower():
                    return None
                raise
        return self.notifications.pop(0)

    # ------------------------------------------------------------ requests
    def create_req(self, path, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN_IF,
                   options=OPT_NON_DIRECTORY, oplock=OPLOCK_NONE, lease=None, share=SHARE_ALL,
                   lease_v2=None, contexts=(), **kw):
        """contexts: more create contexts, (4-byte tag, data) each."""
        name = path.replace("/", "\\").encode("utf-16le")
        items = list(contexts)
        if lease is not None:
            key, state = lease
            if lease_v2 is None:
                lease_v2 = self.dialect >= s3.SMB2_DIALECT_30
            if lease_v2:
                data = struct.pack("<16sIIQ16sHH", key, state, 0, 0, b"\0" * 16, 0, 0)
            else:
                data = struct.pack("<16sIIQ", key, state, 0, 0)
            items.insert(0, (b"RqLs", data))
            oplock = OPLOCK_LEASE
        ctx = b""
        for i, (tag, data) in enumerate(items):   # 2.2.13.2, 8-byte aligned
            one = struct.pack("<IHHHHI", 0, 16, 4, 0, 24 if data else 0, len(data)) + tag + b"\0" * 4 + data
            one += b"\0" * ((-len(one)) % 8 if i + 1 < len(items) else 0)
            if i + 1 < len(items):
                one = struct.pack("<I", len(one)) + one[4:]
            ctx += one
        buf = name if name else b"\0"
        ctxoff = 0
        if ctx:
            pad = (-(64 + 56 + len(buf))) % 8
            buf += b"\0" * pad
            ctxoff = 64 + 56 + len(buf)
            buf += ctx
        body = struct.pack("<HBBIQQIIIIIHHII", 57, 0, oplock, 2, 0, 0, access, 0x80, share,
                           disposition, options, 120, len(name), ctxoff, len(ctx)) + buf
        return self.send(CREATE, body, **kw)

    def parse_create(self, r):
        res = {"status": r.status}
        if r.status != 0:
            return None, res
        b = r.body
        res["oplock"] = b[2]
        res["action"] = struct.unpack_from("<I", b, 4)[0]
        res["eof"] = struct.unpack_from("<Q", b, 48)[0]
        fid = b[64:80]
        ctxoff, ctxlen = struct.unpack_from("<II", b, 80)
        res["lease"] = None
        res["tags"] = []        # the answer's create contexts
        if ctxlen:
            ctx = r.raw[ctxoff:ctxoff + ctxlen]
            p = 0
            while True:
                nxt, noff, nlen, _, doff, dlen = struct.unpack_from("<IHHHHI", ctx, p)
                res["tags"].append(ctx[p + noff:p + noff + nlen].decode("latin-1"))
                if ctx[p + noff:p + noff + nlen] == b"RqLs":
                    res["lease"] = struct.unpack_from("<I", ctx, p + doff + 16)[0]
                if not nxt:
                    break
                p += nxt
        return fid, res

    def create(self, path, **kw):
        """(FileId, info); raises SMBError on failure unless check=False."""
        check = kw.pop("check", True)
        fid, res = self.parse_create(self.wait(self.create_req(path, **kw)))
        if check and fid is None:
            raise SMBError("CREATE %s" % path, res["status"])
        return fid, res

    def write_req(self, fid, offset, data, flags=0, charge=None, **kw):
        body = struct.pack("<HHIQ16sIIHHI", 49, 0x70, len(data), offset, fid, 0, 0, 0, 0, flags) + data
        if charge is None:
            charge = self.charge_for(len(data))
        return self.send(WRITE, body, charge=charge, **kw)

    def write(self, fid, offset, data, flags=0, check=True, **kw):
        """Returns (status, count)."""
        r = self.wait(self.write_req(fid, offset, data, flags, **kw))
        count = struct.unpack_from("<I", r.body, 4)[0] if r.status == 0 else 0
        if check and r.status != 0:
            raise SMBError("WRITE %d+%d" % (offset, len(data)), r.status)
        return r.status, count

    def read_req(self, fid, offset, length, flags=0, minimum=0, charge=None, **kw):
        body = struct.pack("<HBBIQ16sIIIHHB", 49, 0x50, flags, length, offset, fid, minimum, 0, 0, 0, 0, 0)
        if charge is None:
            charge = self.charge_for(length)
        return self.send(READ, body, charge=charge, **kw)

    @staticmethod
    def parse_read(r):
        if r.status != 0:
            return r.status, b""
        doff, _, dlen = struct.unpack_from("<BBI", r.body, 2)
        return r.status, r.raw[doff:doff + dlen]

    def read(self, fid, offset, length, flags=0, minimum=0, **kw):
        """(status, data) of one READ request."""
        return self.parse_read(self.wait(self.read_req(fid, offset, length, flags, minimum, **kw)))

    def read_all(self, fid, offset, length, chunk=None):
        """Read [offset, offset+length) in chunks, stopping at EOF."""
        chunk = chunk or min(self.max_read, 1 << 20)
        out = bytearray()
        while len(out) < length:
            st, d = self.read(fid, offset + len(out), min(chunk, length - len(out)))
            if st == STATUS_END_OF_FILE or (st == 0 and not d):
                break
            if st != 0:
                raise SMBError("READ", st)
            out += d
        return bytes(out)

    def flush(self, fid, **kw):
        return self.wait(self.send(FLUSH, struct.pack("<HHI16s", 24, 0, 0, fid), **kw)).status

    def close(self, fid, **kw):
        return self.wait(self.send(CLOSE, struct.pack("<HHI16s", 24, 0, 0, fid), **kw)).status

    def set_eof(self, fid, size, **kw):
        body = struct.pack("<HBBIHHI16s", 33, 1, 20, 8, 96, 0, 0, fid) + struct.pack("<Q", size)
        return self.wait(self.send(SET_INFO, body, **kw)).status

    def set_info(self, fid, info_class, data, info_type=1, **kw):
        """SET_INFO of any class with the buffer data; its status."""
        body = struct.pack("<HBBIHHI16s", 33, info_type, info_class, len(data), 96, 0, 0,
                           fid) + data
        return self.wait(self.send(SET_INFO, body, **kw)).status

    def query_eof(self, fid, **kw):
        """(status, EndOfFile) from FileStandardInformation."""
        body = struct.pack("<HBBIHHIII16sB", 41, 1, 5, 24, 0, 0, 0, 0, 0, fid, 0)
        r = self.wait(self.send(QUERY_INFO, body, **kw))
        if r.status != 0:
            return r.status, None
        off, ln = struct.unpack_from("<HI", r.body, 2)
        return 0, struct.unpack_from("<Q", r.raw, off + 8)[0]

    def query_free(self, fid, **kw):
        """(status, bytes free to the caller) from FileFsFullSizeInformation
        (a QUERY_INFO of the volume through handle fid)."""
        body = struct.pack("<HBBIHHIII16sB", 41, 2, 7, 32, 0, 0, 0, 0, 0, fid, 0)
        r = self.wait(self.send(QUERY_INFO, body, **kw))
        if r.status != 0:
            return r.status, None
        off, ln = struct.unpack_from("<HI", r.body, 2)
        _, avail, _, spu, bps = struct.unpack_from("<QQQII", r.raw, off)
        return 0, avail * spu * bps

    def echo(self, **kw):
        return self.wait(self.send(ECHO, struct.pack("<HH", 4, 0), **kw)).status

    def oplock_ack(self, fid, level, **kw):
        body = struct.pack("<HBBI16s", 24, level, 0, 0, fid)
        return self.send(OPLOCK_BREAK, body, **kw)

    def lease_ack(self, key, state, **kw):
        body = struct.pack("<HHI16sIQ", 36, 0, 0, key, state, 0)
        return self.send(OPLOCK_BREAK, body, **kw)

    @staticmethod
    def parse_break(n):
        """('oplock', fid, level) or ('lease', key, current, new, flags)."""
        b = n.body
        size = struct.unpack_from("<H", b, 0)[0]
        if size == 24:
            return ("oplock", b[8:24], b[2])
        if size == 44:
            _, epoch, flags, key, cur, new = struct.unpack_from("<HHI16sII", b, 0)
            return ("lease", key, cur, new, flags)
        return ("unknown", size)

    def logoff(self):
        """Hand the id window back to impacket and log off."""
        self.smb._Connection["SequenceWindow"] = self.next_id
        try:
            self.conn.logoff()
        except Exception:
            pass
        try:
            self.conn.close()
        except Exception:
            pass

    def drop(self):
        """Close the TCP connection without LOGOFF."""
        try:
            self.nb.close()
        except Exception:
            pass


def one_client(port, seed, dialect="3.0"):
    """Two connections of one client: impacket draws its ClientGuid from
    random, so both are made after seeding it alike."""
    random.seed(seed)
    a = Client(port, dialect)
    random.seed(seed)
    b = Client(port, dialect)
    if a.smb.ClientGuid != b.smb.ClientGuid:
        sys.exit("the two connections got different ClientGuids")
    return a, b


def lease_key():
    return os.urandom(16)
