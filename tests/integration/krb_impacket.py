#!/usr/bin/python3
"""krb_impacket.py - a second Kerberos SMB client for the t_krb_* tests:
impacket's (Debian python3-impacket 0.10), with its own GSS/Kerberos
AP-REQ and its own SMB2/3 signing.

    krb_impacket.py [options] write PATH SIZE SEED
    krb_impacket.py [options] verify PATH SIZE SEED
    krb_impacket.py [options] --every SECS pace PATH SIZE SEED
    krb_impacket.py [options] save PATH SIZE SEED

write: PATH gets SIZE bytes of the pattern of SEED in --wsize writes
(default 1024), one request each, then closed; prints "sha256=HEX".
verify: PATH is read in --rsize reads (default 4096) and compared with the
pattern; exit 3 at the first difference.
pace: as write, one --wsize write every --every seconds, on until SIZE or
the first write that fails; prints "acked=N" (the bytes of the writes the
server side answered with success, a prefix of the pattern), then the
failure ("failed=STATUS") if one came, then closes what it can.  Exit 0
either way: the caller compares N with what landed.  With --reauth-cc
CC, a write refused with STATUS_NETWORK_SESSION_EXPIRED is handled as
MS-SMB2 3.2.5.1.6 says a client must: the session is re-authenticated
(a SESSION_SETUP on its SessionId, with the cifs/ ticket of CC; after
--reauth-delay seconds, the time a client may take to get a ticket) and
the write sent again; prints "reauth acked=N" each time.  --tcon-every K:
a TREE_CONNECT to IPC$ after every K writes (a request that reads no
file, so a proxy need not write back before it; retried the same way).
--stop-after-reauth K: K writes after a re-authentication (the one sent
again included), then close the file; "closed", or "close failed=STATUS".
--until SECS: no write after SECS seconds from the first, then close the
file; with --reauth-cc a CLOSE refused with STATUS_NETWORK_SESSION_EXPIRED
is handled as a write is and sent again ("reauth-close acked=N").
--lock-last: before that CLOSE, lock the file's first byte (exclusive,
fail at once) and unlock it, the LOCK retried in the same way
("reauth-lock acked=N"); prints "locked".  --lock-wait: that LOCK
is a blocking one (no FAIL_IMMEDIATELY: MS-SMB2 3.3.5.14 lets the server
make it wait, going async).
save: an Office-style save of the existing document PATH: write SIZE
bytes of the pattern of SEED to ~$PATH.tmp in --wsize writes, close it,
rename PATH to PATH.bak, rename the temporary file to PATH, delete PATH.bak, each
rename and the delete an open, a SET_INFO and a CLOSE on the same tree;
prints "bytes=N seconds=S MBps=M ops=N" (seconds: the whole sequence, as
tests/bench/docbench.py save counts it) and "sha256=HEX" of what it wrote.

The cifs/FQDN ticket comes from the credential cache ($KRB5CCNAME; fetch
it with kvno): impacket's own TGS-REQ is refused by Samba 4.17's KDC
(KRB_AP_ERR_INAPP_CKSUM, the checksum type of its authenticator).
impacket's AP-REQ has no authenticator subkey; without --mutual it asks
for no AP-REP, so the SMB session key is the ticket's session key (the
last choice of MS-SMB2 3.3.5.5.3); with --mutual, the AP-REP's subkey.
Options: --host FQDN, --addr IP, --port N, --share S, --user U, --realm
R, --dialect 2.1|3.0|3.1.1, --mutual.  Exit 0 ok, 2 usage/SMB error, 3
mismatch.
"""
import argparse
import hashlib
import os
import random
import socket
import struct
import sys
import time

from impacket import smb3structs as s3
from impacket.krb5.ccache import CCache
from impacket.nt_errors import STATUS_SUCCESS
from impacket.smbconnection import SMBConnection

DIALECTS = {"2.1": s3.SMB2_DIALECT_21, "3.0": s3.SMB2_DIALECT_30,
            "3.1.1": s3.SMB2_DIALECT_311}


def pattern(size, seed):
    return random.Random(seed).randbytes(size)


def set_info(conn, tid, fid, cls, blob):
    conn._SMBConnection.setInfo(tid, fid, blob, infoType=s3.SMB2_0_INFO_FILE,
                                fileInfoClass=cls)


def reopen(conn, tid, path, options=0):
    """PATH opened for DELETE and its attributes (a rename's or a delete's
    open, as Windows makes it)."""
    return conn._SMBConnection.create(
        tid, path, s3.DELETE | s3.FILE_READ_ATTRIBUTES,
        s3.FILE_SHARE_READ | s3.FILE_SHARE_WRITE | s3.FILE_SHARE_DELETE,
        options, s3.FILE_OPEN, 0)


def rename(conn, tid, path, to):
    fid = reopen(conn, tid, path)
    try:
        r = s3.FILE_RENAME_INFORMATION_TYPE_2()
        r["ReplaceIfExists"] = 0
        r["RootDirectory"] = 0
        r["FileNameLength"] = len(to) * 2
        r["FileName"] = to.encode("utf-16le")
        set_info(conn, tid, fid, s3.SMB2_FILE_RENAME_INFO, r)
    finally:
        conn.closeFile(tid, fid)


def lock(conn, tid, fid, flags):
    """one LOCK of the file's first byte: impacket's own SMB3.lock joins
    its lock elements as str, which Python 3 cannot send"""
    smb = conn._SMBConnection
    packet = smb.SMB_PACKET()
    packet["Command"] = s3.SMB2_LOCK
    packet["TreeID"] = tid
    req = s3.SMB2Lock()
    req["FileID"] = fid
    req["LockCount"] = 1
    el = s3.SMB2_LOCK_ELEMENT()
    el["Offset"] = 0
    el["Length"] = 1
    el["Flags"] = flags
    req["Locks"] = el.getData()
    packet["Data"] = req
    smb.recvSMB(smb.sendSMB(packet)).isValidAnswer(STATUS_SUCCESS)


def save(conn, tid, path, data, wsize):
    tmp, bak = "~$%s.tmp" % path, "%s.bak" % path
    t0 = time.monotonic()
    fid = conn.createFile(tid, tmp, creationDisposition=s3.FILE_CREATE)
    for off in range(0, len(data), wsize):
        conn.writeFile(tid, fid, data[off:off + wsize], off)
    conn.closeFile(tid, fid)
    rename(conn, tid, path, bak)
    rename(conn, tid, tmp, path)
    conn.closeFile(tid, reopen(conn, tid, bak, s3.FILE_NON_DIRECTORY_FILE |
                                s3.FILE_DELETE_ON_CLOSE))
    secs = time.monotonic() - t0
    ops = (len(data) + wsize - 1) // wsize + 10
    print("bytes=%d seconds=%.6f MBps=%.3f ops=%d" % (len(data), secs, len(data) / secs / 1e6, ops))
    print("sha256=%s" % hashlib.sha256(data).hexdigest())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", required=True)
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, default=445)
    ap.add_argument("--share", default="share")
    ap.add_argument("--user", required=True)
    ap.add_argument("--realm", required=True)
    ap.add_argument("--dialect", choices=sorted(DIALECTS), default="3.1.1")
    ap.add_argument("--mutual", action="store_true")
    ap.add_argument("--wsize", type=int, default=1024)
    ap.add_argument("--rsize", type=int, default=4096)
    ap.add_argument("--every", type=float, default=0.1)
    ap.add_argument("--reauth-cc")
    ap.add_argument("--reauth-delay", type=float, default=0)
    ap.add_argument("--tcon-every", type=int, default=0)
    ap.add_argument("--stop-after-reauth", type=int, default=0)
    ap.add_argument("--until", type=float, default=0)
    ap.add_argument("--lock-last", action="store_true")
    ap.add_argument("--lock-wait", action="store_true")
    ap.add_argument("--logoff-last", action="store_true",
                    help="pace: after the writes, LOGOFF with the file "
                    "still open (re-authenticating if refused)")
    ap.add_argument("--vanish", action="store_true",
                    help="pace: after the writes, reset the connection "
                    "(no CLOSE, no re-authentication)")
    ap.add_argument("op", choices=("write", "verify", "pace", "save"))
    ap.add_argument("path")
    ap.add_argument("size", type=int)
    ap.add_argument("seed", type=int)
    a = ap.parse_args()

    data = pattern(a.size, a.seed)

    def reauth(conn):
        """MS-SMB2 3.2.5.1.6: re-authenticate the session with the cifs/
        ticket of --reauth-cc, after --reauth-delay seconds"""
        time.sleep(a.reauth_delay)
        os.environ["KRB5CCNAME"] = a.reauth_cc
        _, _, _, tgs2 = CCache.parseFile(a.realm, a.user, "cifs/%s" % a.host)
        # the session's SessionId stays in the header: a re-authentication,
        # not a new session
        conn._SMBConnection.kerberosLogin(a.user, "", a.realm, TGS=tgs2)

    def expired(e):
        return a.reauth_cc and "STATUS_NETWORK_SESSION_EXPIRED" in str(e)

    def retried(conn, what, acked, call):
        """call(); refused as the session expired, re-authenticate and
        call() again (printing "reauth-WHAT acked=N")"""
        try:
            call()
        except Exception as e:
            if not expired(e):
                raise
            reauth(conn)
            print("reauth-%s acked=%d" % (what, acked))
            sys.stdout.flush()
            call()

    try:
        # impacket reads a plain path, not "FILE:path"
        cc = os.environ.get("KRB5CCNAME", "")
        if cc.startswith("FILE:"):
            os.environ["KRB5CCNAME"] = cc[5:]
        _, _, _, tgs = CCache.parseFile(a.realm, a.user, "cifs/%s" % a.host)
        if tgs is None:
            print("krb_impacket: no cifs/%s ticket in the credential cache" % a.host,
                  file=sys.stderr)
            return 2
        conn = SMBConnection(a.host, a.addr, sess_port=a.port,
                             preferredDialect=DIALECTS[a.dialect], timeout=60)
        # the SMB3 object's own call: SMBConnection.kerberosLogin has no
        # mutual-authentication switch
        conn._SMBConnection.kerberosLogin(a.user, "", a.realm, TGS=tgs,
                                          mutualAuth=a.mutual)
        tid = conn.connectTree(a.share)
        if a.op == "save":
            save(conn, tid, a.path, data, a.wsize)
        elif a.op == "pace":
            fid = conn.createFile(tid, a.path, creationDisposition=s3.FILE_OVERWRITE_IF)
            acked = 0
            failed = None
            writes = 0
            since = None      # writes since the re-authentication
            start = time.monotonic()
            while acked < a.size:
                if a.stop_after_reauth and since is not None and \
                        since >= a.stop_after_reauth:
                    break
                if a.until and time.monotonic() - start >= a.until:
                    break
                try:
                    if a.tcon_every and writes and writes % a.tcon_every == 0:
                        # impacket answers a share it knows from its own
                        # table: forget IPC$ so that a request goes out
                        t = conn._SMBConnection._Session["TreeConnectTable"]
                        if "IPC$" in t:
                            t.pop(t.pop("IPC$")["TreeConnectId"], None)
                        conn.connectTree("IPC$")
                    conn.writeFile(tid, fid, data[acked:acked + a.wsize], acked)
                except Exception as e:  # SessionError: the server's status
                    if expired(e):
                        reauth(conn)
                        print("reauth acked=%d" % acked)
                        sys.stdout.flush()
                        since = 0
                        continue
                    failed = e
                    break
                writes += 1
                if since is not None:
                    since += 1
                acked += min(a.wsize, a.size - acked)
                time.sleep(a.every)
            print("acked=%d" % acked)
            if failed is not None:
                print("failed=%s" % failed)
                sys.stdout.flush()
                try:
                    conn.closeFile(tid, fid)
                except Exception as e:
                    print("close failed=%s" % e)
                return 0
            if a.vanish:
                sk = conn._SMBConnection._NetBIOSSession.get_socket()
                sk.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                              struct.pack("ii", 1, 0))
                sk.close()
                print("vanished")
                sys.stdout.flush()
                os._exit(0)
            if a.logoff_last:
                try:
                    retried(conn, "logoff", acked, conn.logoff)
                    print("loggedoff")
                except Exception as e:
                    print("logoff failed=%s" % e)
                return 0
            if a.lock_last:
                flags = s3.SMB2_LOCKFLAG_EXCLUSIVE_LOCK
                if not a.lock_wait:
                    flags |= s3.SMB2_LOCKFLAG_FAIL_IMMEDIATELY
                try:
                    retried(conn, "lock", acked,
                            lambda: lock(conn, tid, fid, flags))
                    lock(conn, tid, fid, s3.SMB2_LOCKFLAG_UNLOCK)
                    print("locked")
                except Exception as e:
                    print("lock failed=%s" % e)
            try:
                retried(conn, "close", acked, lambda: conn.closeFile(tid, fid))
            except Exception as e:
                print("close failed=%s" % e)
                return 0
            print("closed")
        elif a.op == "write":
            fid = conn.createFile(tid, a.path, creationDisposition=s3.FILE_OVERWRITE_IF)
            for off in range(0, a.size, a.wsize):
                conn.writeFile(tid, fid, data[off:off + a.wsize], off)
            conn.closeFile(tid, fid)
            print("sha256=%s" % hashlib.sha256(data).hexdigest())
        else:
            fid = conn.openFile(tid, a.path)
            for off in range(0, a.size, a.rsize):
                got = conn.readFile(tid, fid, off, min(a.rsize, a.size - off))
                if got != data[off:off + a.rsize]:
                    print("mismatch at offset %d (%d bytes read)" % (off, len(got)))
                    return 3
            conn.closeFile(tid, fid)
            print("verified %d bytes" % a.size)
        conn.logoff()
    except Exception as e:  # impacket raises SessionError and socket errors
        print("krb_impacket: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 2
    return 0


sys.exit(main())
