"""mc_bind - a second channel bound to a session (SMB 3.0 multichannel).

    mc_bind.py PORT FILE1 FILE2 GO_FILE

Channel A (wb_smb.Client, NTLM, SMB 3.0, asking for multichannel) asks
for the server's network interfaces (FSCTL_QUERY_NETWORK_INTERFACE_INFO;
MC_IFACES=listed, the default: a list must come back; MC_IFACES=hidden:
STATUS_NOT_SUPPORTED, smbaccel's answer under multichannel = hide), opens
FILE2 (on the server's disk already) and reads its first 256 KiB in 4 KiB
reads (read-ahead fills a cache), then opens FILE1 and writes it in 1 KiB
writes (absorbed by smbaccel under write_behind = always).
It prints "READY" and waits until GO_FILE exists (the test reads
smbaccel's counters meanwhile).  Then channel B, a connection of the same
client (same ClientGuid), binds to A's session (MS-SMB2 3.2.4.2.3: a
SESSION_SETUP with SMB2_SESSION_FLAG_BINDING, signed with the session's
signing key) and uses A's open files from there, as Windows does with the
channels of one session:
  1. B reads FILE1: every byte A had written (acknowledged) must be there;
  2. B overwrites 3000 bytes of FILE1 at offset 1000 and 4 KiB of FILE2 at
     offset 256 KiB (where A reads next: inside what smbaccel read ahead);
  3. A reads FILE2 at 256 KiB: B's bytes, not the cached ones;
  4. A appends 1 KiB to FILE1, B reads FILE1 whole: A's and B's bytes;
  5. B closes both of A's handles.
With MC_SIGN=1 channel A signs every request (a session smbaccel holds
the key of, from its secrets file, absorbs signed writes).
Prints "sha256 FILE1 HEX" (what FILE1 must hold on the disk), then
"BOUND" and waits for GO_FILE.2 with both channels up, and exits 0, or
says what differed and exits 1.
"""
import hashlib
import os
import socket
import struct
import sys
import time

from impacket import crypto, nmb, ntlm
from impacket import smb3 as smb3mod
from impacket.spnego import SPNEGO_NegTokenInit, SPNEGO_NegTokenResp, TypesMech

import wb_smb
from wb_smb import HDR, FLAG_ASYNC, FLAG_SIGNED, STATUS_PENDING

CAP_MULTI_CHANNEL, CAP_ENCRYPTION = 0x08, 0x40
GUID = "smbaccelMCbind01"          # impacket's ClientGuid is 16 letters
MORE_PROCESSING = 0xC0000016
NOT_SUPPORTED = 0xC00000BB
FSCTL_QUERY_NETWORK_INTERFACE_INFO = 0x001401FC
NEGOTIATE, SESSION_SETUP = 0, 1

# both channels must come from one client: the same ClientGuid, and ask
# for multichannel (impacket asks only for encryption)
_neg = smb3mod.SMB3.negotiateSession


def _negotiate(self, *a, **k):
    self.ClientGuid = GUID
    return _neg(self, *a, **k)


smb3mod.SMB3.negotiateSession = _negotiate
smb3mod.SMB2_GLOBAL_CAP_ENCRYPTION = CAP_ENCRYPTION | CAP_MULTI_CHANNEL

# MC_SIGN=1: channel A signs every request it sends itself (wb_smb sends
# them unsigned), with the session's signing key
SIGN = {}
_send_packet = nmb.NetBIOSTCPSession.send_packet
_client_send = wb_smb.Client.send


def _signing_send_packet(self, data):
    key = SIGN.get(id(self))
    if key is not None and data[:4] == b"\xfeSMB" and not struct.unpack_from("<I", data, 20)[0]:
        data = sign(data, key)
    return _send_packet(self, data)


def _signing_client_send(self, *a, **k):
    if id(self.nb) not in SIGN:
        SIGN[id(self.nb)] = signing_key(self.smb._Session["SessionKey"])
    return _client_send(self, *a, **k)


if os.environ.get("MC_SIGN") == "1":
    nmb.NetBIOSTCPSession.send_packet = _signing_send_packet
    wb_smb.Client.send = _signing_client_send


def signing_key(session_key):
    # SMB 3.0 (MS-SMB2 3.1.4.2): label "SMB2AESCMAC", context "SmbSign"
    return crypto.KDF_CounterMode(session_key, b"SMB2AESCMAC\x00", b"SmbSign\x00", 128)


def sign(msg, key):
    m = bytearray(msg)
    struct.pack_into("<I", m, 16, struct.unpack_from("<I", m, 16)[0] | FLAG_SIGNED)
    m[48:64] = b"\0" * 16
    m[48:64] = crypto.AES_CMAC(key, bytes(m), len(m))
    return bytes(m)


class Channel(object):
    """A raw SMB 3.0 connection: NEGOTIATE, then a binding SESSION_SETUP."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.mid = 0
        self.granted = 1
        self.key = None

    def _recv(self):
        def exact(n):
            b = b""
            while len(b) < n:
                c = self.s.recv(n - len(b))
                if not c:
                    raise RuntimeError("channel B: connection closed")
                b += c
            return b
        while True:
            n = struct.unpack(">I", exact(4))[0] & 0xFFFFFF
            raw = exact(n)
            r = wb_smb.Response(raw)
            if r.status == STATUS_PENDING and r.flags & FLAG_ASYNC:
                continue
            self.granted += r.credits
            return r

    def call(self, cmd, body, sid=0, tid=0, key=None):
        if self.mid >= self.granted:
            raise RuntimeError("channel B: no credit")
        msg = HDR.pack(b"\xfeSMB", 64, 1, 0, cmd, 64, 0, 0, self.mid, 0xFEFF,
                       tid, sid, b"\0" * 16) + body
        if key is not None:
            msg = sign(msg, key)
        self.mid += 1
        self.s.sendall(struct.pack(">I", len(msg)) + msg)
        r = self._recv()
        if r.mid != self.mid - 1:
            raise RuntimeError("channel B: answer to id %d, asked %d" % (r.mid, self.mid - 1))
        return r

    def negotiate(self):
        body = struct.pack("<HHHHI16sQH", 36, 1, 1, 0, CAP_ENCRYPTION | CAP_MULTI_CHANNEL,
                           GUID.encode(), 0, 0x0300)
        r = self.call(NEGOTIATE, body)
        if r.status != 0:
            raise RuntimeError("channel B: NEGOTIATE status 0x%08x" % r.status)
        caps = struct.unpack_from("<I", r.body, 24)[0]
        if not caps & CAP_MULTI_CHANNEL:
            raise RuntimeError("channel B: the server grants no multichannel")

    def bind(self, sid, session_key, user, password):
        """Bind this connection to session sid; keeps its signing key."""
        def setup(token):
            body = struct.pack("<HBBIIHHQ", 25, 1, 1, 0, 0, 64 + 24, len(token), 0) + token
            return self.call(SESSION_SETUP, body, sid=sid, key=signing_key(session_key))

        t1 = ntlm.getNTLMSSPType1("", "", True)
        init = SPNEGO_NegTokenInit()
        init["MechTypes"] = [TypesMech["NTLMSSP - Microsoft NTLM Security Support Provider"]]
        init["MechToken"] = t1.getData()
        r = setup(init.getData())
        if r.status != MORE_PROCESSING:
            raise RuntimeError("binding, first leg: status 0x%08x" % r.status)
        off, ln = struct.unpack_from("<HH", r.body, 4)
        chal = SPNEGO_NegTokenResp(r.raw[off:off + ln])["ResponseToken"]
        t3, key = ntlm.getNTLMSSPType3(t1, chal, user, password, "", "", "")
        resp = SPNEGO_NegTokenResp()
        resp["ResponseToken"] = t3.getData()
        r = setup(resp.getData())
        if r.status != 0:
            raise RuntimeError("binding: status 0x%08x" % r.status)
        # the channel's own key comes from this exchange (3.3.5.5.3); the
        # server signed its answer with it
        self.key = signing_key(key)
        if not r.flags & FLAG_SIGNED or sign(r.raw, self.key)[48:64] != r.raw[48:64]:
            raise RuntimeError("binding: the answer is not signed with the channel's key")

    def read(self, sid, tid, fid, off, length):
        out = b""
        while len(out) < length:
            n = min(65536, length - len(out))
            body = struct.pack("<HBBIQ16sIIIHHB", 49, 0x50, 0, n, off + len(out), fid,
                               0, 0, 0, 0, 0, 0)
            r = self.call(wb_smb.READ, body, sid, tid, self.key)
            st, d = wb_smb.Client.parse_read(r)
            if st == wb_smb.STATUS_END_OF_FILE or (st == 0 and not d):
                break
            if st != 0:
                raise RuntimeError("channel B: READ status 0x%08x" % st)
            out += d
        return out

    def write(self, sid, tid, fid, off, data):
        body = struct.pack("<HHIQ16sIIHHI", 49, 0x70, len(data), off, fid, 0, 0, 0, 0, 0) + data
        r = self.call(wb_smb.WRITE, body, sid, tid, self.key)
        if r.status != 0:
            raise RuntimeError("channel B: WRITE status 0x%08x" % r.status)

    def close(self, sid, tid, fid):
        r = self.call(wb_smb.CLOSE, struct.pack("<HHI16s", 24, 0, 0, fid), sid, tid, self.key)
        if r.status != 0:
            raise RuntimeError("channel B: CLOSE status 0x%08x" % r.status)


def query_interfaces(a):
    """FSCTL_QUERY_NETWORK_INTERFACE_INFO on A's tree: (status, bytes listed)."""
    body = struct.pack("<HHI16sIIIIIIII", 57, 0, FSCTL_QUERY_NETWORK_INTERFACE_INFO,
                       b"\xff" * 16, 120, 0, 0, 120, 0, 65536, 1, 0) + b"\0" * 8
    r = a.wait(a.send(wb_smb.IOCTL, body))
    key = SIGN.get(id(a.nb))
    if key is not None and (not r.flags & FLAG_SIGNED or sign(r.raw, key)[48:64] != r.raw[48:64]):
        raise RuntimeError("the answer to the signed interface query is not signed with the session's key")
    return r.status, struct.unpack_from("<I", r.body, 36)[0] if r.status == 0 else 0


def wait_go(say, go):
    print(say, flush=True)
    end = time.time() + 60
    while not os.path.exists(go):
        if time.time() > end:
            print("no go")
            return False
        time.sleep(0.05)
    return True


def main():
    port, f1, f2, go = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    a = wb_smb.Client(port, "3.0")
    if not a.smb._Connection["ServerCapabilities"] & CAP_MULTI_CHANNEL:
        print("the server grants no multichannel on channel A")
        return 1
    st, n = query_interfaces(a)
    print("interfaces: status 0x%08x, %d bytes listed" % (st, n))
    want = os.environ.get("MC_IFACES", "listed")
    if (st != 0 or n == 0) if want == "listed" else st != NOT_SUPPORTED:
        print("0. the query for the server's interfaces: want them %s" % want)
        return 1
    fid2, _ = a.create(f2, disposition=wb_smb.FILE_OPEN)
    for off in range(0, 256 * 1024, 4096):
        st, d = a.read(fid2, off, 4096)
        if st != 0 or len(d) != 4096:
            print("channel A: READ of %s at %d: status 0x%08x" % (f2, off, st))
            return 1
    with open(os.path.join(os.environ["SHARE_DIR"], f2), "rb") as f:
        f.seek(256 * 1024)
        c2 = f.read(4096)       # what was there before B's write
    # last, so that no request of A's makes smbaccel send them (a CREATE
    # would: it could observe them)
    d1 = bytearray(os.urandom(128 * 1024))
    fid1, _ = a.create(f1, disposition=wb_smb.FILE_OVERWRITE_IF)
    for off in range(0, len(d1), 1024):
        a.write(fid1, off, bytes(d1[off:off + 1024]))
    if not wait_go("READY", go):
        return 1

    b = Channel(port)
    b.negotiate()
    b.bind(a.sid, a.smb._Session["SessionKey"], "smbtest", "testpass")
    bad = 0
    # 1. what A had written, read through B
    got = b.read(a.sid, a.tid, fid1, 0, len(d1))
    if got != bytes(d1):
        first = next((i for i in range(min(len(got), len(d1))) if got[i] != d1[i]), min(len(got), len(d1)))
        print("1. channel B read %d bytes of %s, not the %d channel A wrote; first difference at %d"
              % (len(got), f1, len(d1), first))
        bad = 1
    # 2. B overwrites part of each file
    p1 = os.urandom(3000)
    b.write(a.sid, a.tid, fid1, 1000, p1)
    d1[1000:4000] = p1
    p2 = os.urandom(4096)
    b.write(a.sid, a.tid, fid2, 256 * 1024, p2)
    # 3. A reads FILE2 where B wrote
    st, got = a.read(fid2, 256 * 1024, 4096)
    if st != 0 or got != p2:
        same = got == c2
        print("3. channel A read %s at 256 KiB: status 0x%08x, %d bytes, %s"
              % (f2, st, len(got), "the bytes from before channel B's write" if same else
                 "not channel B's bytes"))
        bad = 1
    # 4. A appends, B reads it all
    tail = os.urandom(1024)
    a.write(fid1, len(d1), tail)
    d1 += tail
    got = b.read(a.sid, a.tid, fid1, 0, len(d1) + 4096)
    if got != bytes(d1):
        print("4. channel B read %d bytes of %s, want %d (A's and B's writes)" % (len(got), f1, len(d1)))
        bad = 1
    # 5. B closes A's handles
    b.close(a.sid, a.tid, fid1)
    b.close(a.sid, a.tid, fid2)
    print("sha256 %s %s" % (f1, hashlib.sha256(bytes(d1)).hexdigest()))
    if not wait_go("BOUND", go + ".2"):
        return 1
    a.logoff()
    return bad


if __name__ == "__main__":
    sys.exit(main())
