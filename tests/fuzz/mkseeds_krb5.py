#!/usr/bin/python3
"""mkseeds_krb5.py - tests/fuzz/seeds/krb5/ from the test DC's captures in
tests/unit/data/krb5/ (run by hand; see fuzz_krb5.c for the input format).

The security buffers of the captured SESSION_SETUP request and response
(target 0), and the ticket, authenticator and AP-REP parts decrypted with
the DC's keytab or, for the tickets of the two accounts limited to aes128
and rc4-hmac, svc.keytab (targets 1-4), decrypted with impacket's own Kerberos
crypto and pyasn1 (not smbaccel's code)."""
import hashlib
import os
import struct
import sys

from pyasn1.codec.der import decoder
from impacket.krb5.asn1 import AP_REQ, AP_REP, EncTicketPart, Authenticator
from impacket.krb5.crypto import Key, _enctype_table

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DATA = os.path.join(TOP, "tests", "unit", "data", "krb5")
OUT = os.path.join(TOP, "tests", "fuzz", "seeds", "krb5")


def keytab_keys(path):
    b = open(path, "rb").read()
    off, keys = 2, {}
    while off + 4 <= len(b):
        size = struct.unpack(">i", b[off:off + 4])[0]
        off += 4
        if size <= 0:
            break
        p = off
        nc = struct.unpack(">H", b[p:p + 2])[0]
        p += 2
        for _ in range(nc + 1):
            p += 2 + struct.unpack(">H", b[p:p + 2])[0]
        p += 9
        et, kl = struct.unpack(">HH", b[p:p + 4])
        keys.setdefault(et, []).append(b[p + 4:p + 4 + kl])
        off += size
    return keys


def secbuf(msg, response):
    # MS-SMB2 2.2.5 / 2.2.6: SecurityBufferOffset, Length after the header
    o, n = struct.unpack_from("<HH", msg, 64 + (4 if response else 12))
    return msg[o:o + n]


def gss_inner(tok, want):
    """the Kerberos message of an SPNEGO/GSS security buffer: find the
    RFC 4121 TOK_ID and the [APPLICATION n] tag after it"""
    i = tok.find(bytes([want]))
    while i >= 0:
        try:
            return decoder.decode(tok[i:], asn1Spec=AP_REQ() if want == 0x6e else AP_REP())[0]
        except Exception:
            i = tok.find(bytes([want]), i + 1)
    raise ValueError("no message")


def open_ticket(et, keys, cipher):
    """the ticket decrypted with the first of keys (of its enctype) that
    opens it"""
    for k in keys:
        try:
            return _enctype_table[et].decrypt(Key(et, k), 2, cipher)
        except Exception:
            continue
    raise ValueError("no key of enctype %d opens the ticket" % et)


def put(data):
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.unlink(os.path.join(OUT, f))
    dc = keytab_keys(os.path.join(DATA, "dc.keytab"))
    svc = keytab_keys(os.path.join(DATA, "svc.keytab"))
    # (case, keys of its ticket, the DC answered with an AP-REP)
    cases = [("smb210-aes256", dc, True), ("smb311-aes256", dc, True),
             ("smb311-skaes128", dc, True), ("smb311-skrc4", dc, True),
             ("tkt-aes128", svc, False), ("tkt-rc4", svc, False),
             ("smb311-tktrc4", dc, True)]
    for case, keys, answered in cases:
        req = open(os.path.join(DATA, case + ".s0.ss-req1"), "rb").read()
        qb = secbuf(req, False)
        put(b"\x00" + qb)
        apreq = gss_inner(qb, 0x6e)
        tenc = apreq["ticket"]["enc-part"]
        et = int(tenc["etype"])
        tplain = open_ticket(et, keys[et], bytes(tenc["cipher"]))
        put(b"\x01" + tplain)
        put(b"\x04" + tplain)
        etp = decoder.decode(tplain, asn1Spec=EncTicketPart())[0]
        sk = Key(int(etp["key"]["keytype"]), bytes(etp["key"]["keyvalue"]))
        aplain = _enctype_table[sk.enctype].decrypt(sk, 11, bytes(apreq["authenticator"]["cipher"]))
        put(b"\x02" + aplain)
        if answered:
            rsp = open(os.path.join(DATA, case + ".s0.ss-rsp1"), "rb").read()
            rb = secbuf(rsp, True)
            put(b"\x00" + rb)
            aprep = gss_inner(rb, 0x6f)
            rplain = _enctype_table[sk.enctype].decrypt(sk, 12, bytes(aprep["enc-part"]["cipher"]))
            put(b"\x03" + rplain)
    print("seeds in %s: %d" % (OUT, len(os.listdir(OUT))))


main()
