"""lk_locks - byte-range locks seen from a client that asks for no lease.

Usage: lk_locks.py PORT DIALECT TAG [--only NAME[,NAME...]] [--skip NAME,...]
                   [--share SHARE] [--direct PORT] [--smbd-pid PID]
                   [--sign] [--seal]

impacket (Debian's python3-impacket, /usr/bin/python3) opens files with no
oplock and no lease, takes byte-range locks (SMB2 LOCK with
FAIL_IMMEDIATELY, built here: impacket 0.10's own lock() cannot build its
elements under Python 3) and reads and writes through two or three
handles, on one connection and on a second one.  Every step prints one
line, "SCENARIO STEP STATUS", the NTSTATUS name the server (or smbaccel)
answered: the test runs it directly against smbd and through smbaccel and
compares the transcripts line by line.  TAG makes the file names of one run
(lk-TAG-SCENARIO), so two runs on one share do not meet.  --sign asks
impacket to sign (the server requires it anyway when it is mandatory),
--seal to encrypt (SMB 3.x, the server offering it).

The scenarios (MS-FSA 2.1.5.2 / 2.1.5.3; Samba's brl_conflict_other):
  late-x   smbtorture's smb2.lock.rw-exclusive: h1 creates, writes 200
           bytes, locks [0,100) and [100,200) exclusively; h2 opens after
           that; h1 reads and writes, h2 gets FILE_LOCK_CONFLICT for both
  late-s   rw-shared: the same with shared locks; every write conflicts
           (the owner's too), reads succeed
  early-x  h2 opened BEFORE h1 locks (so smbaccel already holds its lease
           for h2): h2's reads and writes in the range conflict, outside
           it they do not; after h1's unlock they succeed
  early-s  shared locks of h1 and of h2: the owner's own write conflicts;
           each unlock frees its range
  cross    shared locks of h1 and h2 on the same range (a share with
           posix locking = no only: see s_cross)
  stack    one open locks the same range twice (shared): one unlock leaves
           the other; a third unlock is RANGE_NOT_LOCKED
  unlock2  one LOCK of two unlock elements, the second no longer locked:
           RANGE_NOT_LOCKED, the first stays unlocked (smbd does not undo
           it); h2 then reads and writes the range
  cmpd-lock  h2 opened first; one related compound opens h3 and locks
           [0,100) by the FileId its CREATE gives (all 0xFF): h2's I/O in
           the range conflicts (unsigned runs only: it is sent raw)
  multi    one LOCK request with an exclusive and a shared element
  close    h1's CLOSE drops its locks: h2 reads again
  conn2    an open on a second connection (another client GUID, another
           lease key) made before the lock: its reads and writes conflict
  conn2-async  (with --smbd-pid) conn2 where the second connection's open
           has to wait for the break of the first one's lease (its smbd
           process is stopped for 0.3 s), so the server answers it async
           (STATUS_PENDING first; the final answer carries an AsyncId where
           the tree id would be); after h1's lock the second connection's
           smbd process is stopped (3 s), so that its read is answered by
           whoever checks locks before the server breaks that open's lease.
           On standard error: whether the open was answered only after the
           first process was let go, and the read while the second one was
           still stopped
  zero     a zero-length lock (conflicts only with I/O strictly around it)
  overflow h1 holds 70 locks at once (more than smbaccel keeps per open):
           the transcript of this one differs by design (see the test)
  ext-r    (with --direct) a client that does not go through smbaccel
           locks: smbd breaks the read lease smbaccel holds, checks again
  ext-w    (with --direct) the same while a break of smbaccel's write
           caching has no id for its acknowledgement (35 s)
"""
import os
import signal
import struct
import sys
import threading
import time

from impacket.smbconnection import SMBConnection, SessionError
from impacket import smb3structs as s3
from impacket import nt_errors

# impacket 0.10 offers no 3.0.2 and signs 3.1.1 wrongly (smbd: bad signature)
DIALECTS = {"2.0.2": s3.SMB2_DIALECT_002, "2.1": s3.SMB2_DIALECT_21,
            "3.0": s3.SMB2_DIALECT_30}

SHARED, EXCLUSIVE, UNLOCK, FAIL_IMMEDIATELY = 0x1, 0x2, 0x4, 0x10
GENERIC_READ, GENERIC_WRITE = 0x80000000, 0x40000000
FILE_OPEN, FILE_OPEN_IF, FILE_OVERWRITE_IF = 1, 3, 5

NAMES = {0: "SUCCESS"}
for _k, _v in nt_errors.ERROR_MESSAGES.items():
    NAMES[_k] = _v[0].replace("STATUS_", "")


def status_name(st):
    return NAMES.get(st, "0x%08x" % st)


class Conn(object):
    def __init__(self, port, dialect, sign, seal, share="share",
                 user="smbtest", password="testpass"):
        self.c = SMBConnection("127.0.0.1", "127.0.0.1", sess_port=port,
                               preferredDialect=DIALECTS[dialect], timeout=60)
        smb = self.c.getSMBServer()
        if not seal:
            # impacket encrypts every 3.x session the server allows to be
            # encrypted; a real client encrypts only on demand
            smb._Connection["SupportsEncryption"] = False
        if sign:
            smb._Connection["RequireSigning"] = True
        self.c.login(user, password)
        self.tid = self.c.connectTree(share)
        self.smb = smb

    def create(self, name, disposition):
        return self.c.createFile(self.tid, name,
                                 desiredAccess=GENERIC_READ | GENERIC_WRITE,
                                 shareMode=7, creationDisposition=disposition)

    def lock(self, fid, elems):
        """LOCK with elems [(offset, length, flags)]; the status."""
        p = self.smb.SMB_PACKET()
        p["Command"] = s3.SMB2_LOCK
        p["TreeID"] = self.tid
        body = s3.SMB2Lock()
        body["FileID"] = fid
        body["LockCount"] = len(elems)
        body["LockSequence"] = 0
        body["Locks"] = b"".join(struct.pack("<QQII", o, n, f, 0)
                                 for o, n, f in elems)
        p["Data"] = body
        ans = self.smb.recvSMB(self.smb.sendSMB(p))
        return ans["Status"]

    def create_lock(self, name, elems):
        """One related compound of a CREATE of name (FILE_OPEN, read and
        write) and a LOCK with elems of the file it opens (FileId all
        0xFF), unsigned: (FileId or None, CREATE status, LOCK status)."""
        smb = self.smb
        nb = smb._NetBIOSSession
        sid = smb._Session["SessionID"]
        mid = smb._Connection["SequenceWindow"]
        smb._Connection["SequenceWindow"] += 2
        hdr = struct.Struct("<4sHHIHHIIQIIQ16s")
        nm = name.encode("utf-16le")
        cr = struct.pack("<HBBIQQIIIIIHHII", 57, 0, 0, 2, 0, 0,
                         GENERIC_READ | GENERIC_WRITE, 0x80, 7, FILE_OPEN,
                         0x40, 120, len(nm), 0, 0) + nm
        cr += b"\0" * (-(64 + len(cr)) % 8)
        lk = struct.pack("<HHI16s", 48, len(elems), 0, b"\xff" * 16) + b"".join(
            struct.pack("<QQII", o, n, f, 0) for o, n, f in elems)
        e1 = hdr.pack(b"\xfeSMB", 64, 1, 0, s3.SMB2_CREATE, 32, 0, 64 + len(cr),
                      mid, 0xFEFF, self.tid, sid, b"\0" * 16) + cr
        e2 = hdr.pack(b"\xfeSMB", 64, 1, 0, s3.SMB2_LOCK, 32, 0x4, 0,
                      mid + 1, 0xFEFF, self.tid, sid, b"\0" * 16) + lk
        nb.send_packet(e1 + e2)
        st, fid = {}, None
        while len(st) < 2:
            t = nb.recv_packet(60).get_trailer()
            off = 0
            while True:
                status, cmd, _, flags, nxt, m = struct.unpack_from("<IHHIIQ", t, off + 8)
                if m in (mid, mid + 1) and not (status == 0x103 and flags & 2):
                    st[cmd] = status
                    if cmd == s3.SMB2_CREATE and status == 0:
                        fid = t[off + 128:off + 144]
                if not nxt:
                    break
                off += nxt
        if fid is not None:
            import copy
            from impacket import smb3 as smb3mod
            o = copy.deepcopy(smb3mod.OPEN)
            o["TreeConnect"] = self.tid
            o["FileName"] = name
            smb._Session["OpenTable"][fid] = o
        return fid, st[s3.SMB2_CREATE], st[s3.SMB2_LOCK]

    def read(self, fid, off, n):
        try:
            self.c.readFile(self.tid, fid, off, n)
            return 0
        except SessionError as e:
            return e.getErrorCode()

    def write(self, fid, off, data):
        try:
            self.c.writeFile(self.tid, fid, data, off)
            return 0
        except SessionError as e:
            return e.getErrorCode()

    def close(self, fid):
        # impacket's GlobalFileTable has one entry per name: the second
        # CLOSE of a name opened twice would fail on a missing key
        o = self.smb._Session["OpenTable"].get(fid)
        if o is not None:
            self.smb.GlobalFileTable.setdefault(o["FileName"], o)
        try:
            self.c.closeFile(self.tid, fid)
            return 0
        except SessionError as e:
            return e.getErrorCode()

    def logoff(self):
        try:
            self.c.logoff()
        except Exception:
            pass
        self.c.close()


def yesno(b):
    return "yes" if b else "no"


def proc_stat(pid):
    """/proc/PID/stat from the state on ([state, ppid, ...]), or None."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            st = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces
    return st[st.rindex(")") + 2:].split()


def smbd_children(master):
    """The pids whose parent is the smbd master: one per connection, and
    its helpers (notifyd, cleanupd, the scavenger it starts when it needs
    one), which smbd_serving() tells apart."""
    return set(int(d) for d in os.listdir("/proc") if d.isdigit() and
               (proc_stat(d) or [0, 0])[1] == str(master))


def tcp_sockets():
    """{socket inode: (local port, state)} of /proc/net/tcp and tcp6
    (state "0A" listening, "01" established)."""
    out = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for ln in lines:
            v = ln.split()
            out[v[9]] = (int(v[1].rsplit(":", 1)[1], 16), v[3])
    return out


def socket_inodes(pid):
    """The inodes of pid's sockets (empty when it is gone)."""
    out = set()
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return out
    for fd in fds:
        try:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if t.startswith("socket:["):
            out.add(t[8:-1])
    return out


def smbd_serving(master, pids):
    """Those of pids that serve a client connection: they hold an
    established socket on a port the smbd master listens on (a helper
    process holds none, an exited one nothing)."""
    socks = tcp_sockets()
    ports = set(socks[i][0] for i in socket_inodes(master)
                if i in socks and socks[i][1] == "0A")
    return set(p for p in pids
               if any(i in socks and socks[i][1] == "01" and
                      socks[i][0] in ports for i in socket_inodes(p)))


class Stopped(object):
    """`with Stopped(pid, secs):` SIGSTOP pid, SIGCONT it secs later (in
    the background), and at the latest when the block is left.  fired:
    the secs had passed (the process was let go by the timer)."""
    def __init__(self, pid, secs):
        self.pid, self.secs = pid, secs
        self.done = threading.Event()
        self.fired = False

    def _cont(self):
        self.fired = not self.done.wait(self.secs)
        os.kill(self.pid, signal.SIGCONT)

    def __enter__(self):
        os.kill(self.pid, signal.SIGSTOP)
        # the signal takes effect when the process next runs: wait for
        # it, so that what follows meets a stopped server (a process that
        # is gone, or will not stop, is the test's failure, not smbaccel's)
        for _ in range(200):
            if self.held():
                break
            time.sleep(0.01)
        else:
            os.kill(self.pid, signal.SIGCONT)
            raise SystemExit("smbd process %d did not stop (state %s)" %
                             (self.pid, (proc_stat(self.pid) or ["gone"])[0]))
        self.t = threading.Thread(target=self._cont)
        self.t.start()
        return self

    def held(self):
        """Is the process still stopped?"""
        return (proc_stat(self.pid) or ["gone"])[0] in ("T", "t")

    def resume(self):
        self.done.set()
        self.t.join()

    def __exit__(self, *exc):
        self.resume()
        return False


class Run(object):
    def __init__(self, a, tag):
        self.a = a
        self.tag = tag
        self.scen = None
        self.c, self.c_smbd = self.connect()
        # smbaccel alters nothing of a session until its server's signing
        # habits are known (the first CREATE's answer tells): open one file
        # first, as any client does before it gets to its documents
        fid = self.c.create("lk-%s-warmup" % tag, FILE_OVERWRITE_IF)
        self.c.close(fid)

    def connect(self):
        """A new connection, and the smbd process that serves it (None
        without --smbd-pid, or when it cannot be told)."""
        before = smbd_children(self.a.smbd_pid) if self.a.smbd_pid else set()
        c = Conn(self.a.port, self.a.dialect, self.a.sign, self.a.seal,
                 self.a.share)
        if not self.a.smbd_pid:
            return c, None
        new = smbd_serving(self.a.smbd_pid,
                           smbd_children(self.a.smbd_pid) - before)
        return c, (new.pop() if len(new) == 1 else None)

    def second_conn(self):
        """conn2's second connection (another client GUID, another lease
        key), one file opened first, and its smbd process as connect()."""
        c2, pid = self.connect()
        w = c2.create("lk-%s-warmup2" % self.tag, FILE_OVERWRITE_IF)
        c2.close(w)
        return c2, pid

    def say(self, step, st):
        print("%s %s %s" % (self.scen, step, status_name(st)))
        sys.stdout.flush()

    def name(self):
        return "lk-%s-%s" % (self.tag, self.scen)

    def h1_file(self):
        """h1: the creating open, 200 bytes written."""
        h1 = self.c.create(self.name(), FILE_OVERWRITE_IF)
        # the same bytes in every run: the test compares the files on disk
        # in two writes: under smbaccel's lease the second one's id is
        # spare and pays for the acknowledgement of a break (conn2)
        data = (self.scen.encode() * 200)[:200]
        self.say("h1-write-200", self.c.write(h1, 0, data[:100]) or
                 self.c.write(h1, 100, data[100:]))
        return h1

    def rw(self, who, c, fid, off, n):
        self.say("%s-read-%d+%d" % (who, off, n), c.read(fid, off, n))
        self.say("%s-write-%d+%d" % (who, off, n),
                 c.write(fid, off, b"w" * n))

    # ---- scenarios ----------------------------------------------------------
    def late(self, flag):
        c = self.c
        h1 = self.h1_file()
        self.say("h1-lock-0+100", c.lock(h1, [(0, 100, flag | FAIL_IMMEDIATELY)]))
        self.say("h1-lock-100+100", c.lock(h1, [(100, 100, flag | FAIL_IMMEDIATELY)]))
        h2 = c.create(self.name(), FILE_OPEN_IF)
        self.rw("h1", c, h1, 0, 10)
        self.rw("h1", c, h1, 150, 10)
        self.rw("h2", c, h2, 0, 10)
        self.rw("h2", c, h2, 150, 10)
        self.rw("h2", c, h2, 250, 10)
        self.say("h2-close", c.close(h2))
        self.say("h1-close", c.close(h1))

    def s_late_x(self):
        self.late(EXCLUSIVE)

    def s_late_s(self):
        self.late(SHARED)

    def s_early_x(self):
        c = self.c
        h1 = self.h1_file()
        h2 = c.create(self.name(), FILE_OPEN)
        self.rw("h2", c, h2, 0, 10)
        self.say("h1-lock-0+100", c.lock(h1, [(0, 100, EXCLUSIVE | FAIL_IMMEDIATELY)]))
        self.rw("h2", c, h2, 0, 10)
        self.rw("h2", c, h2, 90, 20)
        self.rw("h2", c, h2, 99, 1)
        self.rw("h2", c, h2, 100, 10)
        self.rw("h1", c, h1, 0, 10)
        self.rw("h1", c, h1, 95, 10)
        self.say("h2-lock-50+10", c.lock(h2, [(50, 10, SHARED | FAIL_IMMEDIATELY)]))
        self.say("h1-unlock-0+100", c.lock(h1, [(0, 100, UNLOCK)]))
        self.rw("h2", c, h2, 0, 10)
        self.rw("h1", c, h1, 0, 10)
        self.say("h2-close", c.close(h2))
        self.say("h1-close", c.close(h1))

    def s_early_s(self):
        c = self.c
        h1 = self.h1_file()
        h2 = c.create(self.name(), FILE_OPEN)
        self.say("h1-lock-0+100", c.lock(h1, [(0, 100, SHARED | FAIL_IMMEDIATELY)]))
        self.rw("h1", c, h1, 0, 10)
        self.rw("h2", c, h2, 0, 10)
        self.rw("h2", c, h2, 100, 10)
        self.say("h2-lock-100+50", c.lock(h2, [(100, 50, SHARED | FAIL_IMMEDIATELY)]))
        self.rw("h1", c, h1, 95, 10)
        self.rw("h1", c, h1, 120, 10)
        self.rw("h2", c, h2, 120, 10)
        self.say("h1-unlock-0+100", c.lock(h1, [(0, 100, UNLOCK)]))
        self.rw("h1", c, h1, 0, 10)
        self.rw("h2", c, h2, 0, 10)
        self.rw("h1", c, h1, 120, 10)
        self.say("h2-unlock-100+50", c.lock(h2, [(100, 50, UNLOCK)]))
        self.rw("h1", c, h1, 120, 10)
        self.rw("h2", c, h2, 120, 10)
        self.say("h2-close", c.close(h2))
        self.say("h1-close", c.close(h1))

    def s_cross(self):
        """Shared locks of two opens on the same range, unlocked one by one.
        Only on a share with `posix locking = no`: with POSIX locking smbd
        keeps the first unlocker's fcntl (OFD) lock while another open's
        Windows lock covers the range, and then refuses the other open's
        writes after both unlocks (Samba 4.17; the Windows locks say
        nothing is locked)."""
        c = self.c
        h1 = self.h1_file()
        h2 = c.create(self.name(), FILE_OPEN)
        self.say("h1-lock-0+100", c.lock(h1, [(0, 100, SHARED | FAIL_IMMEDIATELY)]))
        self.say("h2-lock-0+100", c.lock(h2, [(0, 100, SHARED | FAIL_IMMEDIATELY)]))
        self.say("h1-unlock-0+100", c.lock(h1, [(0, 100, UNLOCK)]))
        self.rw("h1", c, h1, 0, 10)
        self.rw("h2", c, h2, 0, 10)
        self.say("h2-unlock-0+100", c.lock(h2, [(0, 100, UNLOCK)]))
        self.rw("h1", c, h1, 0, 10)
        self.rw("h2", c, h2, 0, 10)
        self.say("h2-close", c.close(h2))
        self.say("h1-close", c.close(h1))

    def s_stack(self):
        c = self.c
        h1 = self.h1_file()
        h2 = c.create(self.name(), FILE_OPEN)
        for i in (1, 2):
            self.say("h1-lock-0+10-%d" % i,
                     c.lock(h1, [(0, 10, SHARED | FAIL_IMMEDIATELY)]))
        self.say("h1-unlock-0+10-1", c.lock(h1, [(0, 10, UNLOCK)]))
        self.rw("h1", c, h1, 0, 10)
        self.rw("h2", c, h2, 5, 10)
        self.say("h1-unlock-0+10-2", c.lock(h1, [(0, 10, UNLOCK)]))
        self.rw("h1", c, h1, 0, 10)
        self.rw("h2", c, h2, 5, 10)
        self.say("h1-unlock-0+10-3", c.lock(h1, [(0, 10, UNLOCK)]))
        self.say("h2-close", c.close(h2))
        self.say("h1-close", c.close(h1))

    def s_unlock2(self):
        """One LOCK of two unlock elements, the second of a range no longer
        locked: smbd unlocks the first and answers RANGE_NOT_LOCKED for the
        request without undoing it; h2 (opened before, so under smbaccel's
        lease) then reads and writes the range as directly."""
        c = self.c
        h1 = self.h1_file()
        h2 = c.create(self.name(), FILE_OPEN)
        self.rw("h2", c, h2, 0, 10)
        self.say("h1-lock-0+10", c.lock(h1, [(0, 10, EXCLUSIVE | FAIL_IMMEDIATELY)]))
        self.rw("h2", c, h2, 0, 10)
        self.say("h1-unlock-0+10-twice", c.lock(h1, [(0, 10, UNLOCK), (0, 10, UNLOCK)]))
        self.rw("h2", c, h2, 0, 10)
        self.rw("h1", c, h1, 0, 10)
        self.say("h2-close", c.close(h2))
        self.say("h1-close", c.close(h1))

    def s_cmpd_lock(self):
        """h2 opened first (under smbaccel's lease); then one related
        compound opens h3 and locks [0,100) by the FileId its CREATE gives:
        h2's reads and writes in the range conflict as directly."""
        c = self.c
        h1 = self.h1_file()
        h2 = c.create(self.name(), FILE_OPEN)
        self.rw("h2", c, h2, 0, 10)
        h3, cst, lst = c.create_lock(self.name(), [(0, 100, EXCLUSIVE | FAIL_IMMEDIATELY)])
        self.say("h3-create", cst)
        self.say("h3-lock-0+100", lst)
        self.rw("h2", c, h2, 0, 10)
        self.rw("h2", c, h2, 150, 10)
        if h3 is not None:
            self.say("h3-unlock-0+100", c.lock(h3, [(0, 100, UNLOCK)]))
            self.rw("h2", c, h2, 0, 10)
            self.say("h3-close", c.close(h3))
        self.say("h2-close", c.close(h2))
        self.say("h1-close", c.close(h1))

    def s_multi(self):
        c = self.c
        h1 = self.h1_file()
        h2 = c.create(self.name(), FILE_OPEN)
        self.say("h1-lock-x0+10-s20+10", c.lock(h1, [
            (0, 10, EXCLUSIVE | FAIL_IMMEDIATELY),
            (20, 10, SHARED | FAIL_IMMEDIATELY)]))
        for off in (5, 12, 25):
            self.rw("h1", c, h1, off, 3)
            self.rw("h2", c, h2, off, 3)
        self.say("h1-unlock-both", c.lock(h1, [(0, 10, UNLOCK), (20, 10, UNLOCK)]))
        self.rw("h2", c, h2, 5, 3)
        self.rw("h2", c, h2, 25, 3)
        self.say("h2-close", c.close(h2))
        self.say("h1-close", c.close(h1))

    def s_close(self):
        c = self.c
        h1 = self.h1_file()
        h2 = c.create(self.name(), FILE_OPEN)
        self.say("h1-lock-0+200", c.lock(h1, [(0, 200, EXCLUSIVE | FAIL_IMMEDIATELY)]))
        self.rw("h2", c, h2, 20, 10)
        self.say("h1-close", c.close(h1))
        self.rw("h2", c, h2, 20, 10)
        self.say("h2-close", c.close(h2))

    def s_conn2(self):
        c = self.c
        h1 = self.h1_file()
        c2, _ = self.second_conn()
        h3 = c2.create(self.name(), FILE_OPEN)
        self.rw("h3", c2, h3, 10, 10)
        self.say("h1-lock-0+100", c.lock(h1, [(0, 100, EXCLUSIVE | FAIL_IMMEDIATELY)]))
        self.rw("h3", c2, h3, 10, 10)
        self.rw("h3", c2, h3, 110, 10)
        self.say("h3-lock-150+10", c2.lock(h3, [(150, 10, SHARED | FAIL_IMMEDIATELY)]))
        self.rw("h1", c, h1, 10, 10)
        self.rw("h1", c, h1, 155, 10)
        self.say("h3-close", c2.close(h3))
        self.rw("h1", c, h1, 155, 10)
        c2.logoff()
        self.say("h1-close", c.close(h1))

    def s_conn2_async(self):
        c = self.c
        h1 = self.h1_file()
        c2, p3 = self.second_conn()
        if self.c_smbd is None or p3 is None:
            raise SystemExit("conn2-async: cannot tell the smbd processes "
                             "of the two connections")
        # h1's writes on the server first (a FLUSH): else smbaccel holds
        # h3's open back until it has written them, and the break it waits
        # for comes while the open is still with smbaccel.  Then through
        # smbaccel h1's file carries its lease: h3's open waits for its
        # break, which h1's smbd process, stopped, sends 0.3 s late
        c.smb.flush(c.tid, h1)
        with Stopped(self.c_smbd, 0.3) as st:
            h3 = c2.create(self.name(), FILE_OPEN)
            st.resume()
        sys.stderr.write("conn2-async: h3's open answered after h1's smbd "
                         "process was let go: %s\n" % yesno(st.fired))
        self.rw("h3", c2, h3, 10, 10)
        # h3's smbd process stopped: h1's lock cannot break h3's lease yet,
        # so that process would read under it, unchecked; smbaccel checks
        # (a read forwarded waits the 3 s, then that process goes on)
        with Stopped(p3, 3) as st:
            self.say("h1-lock-0+100",
                     c.lock(h1, [(0, 100, EXCLUSIVE | FAIL_IMMEDIATELY)]))
            self.say("h3-read-10+10", c2.read(h3, 10, 10))
            sys.stderr.write("conn2-async: h3's read after the lock answered "
                             "while h3's smbd process was stopped: %s\n" %
                             yesno(st.held()))
            st.resume()
            self.say("h3-write-10+10", c2.write(h3, 10, b"w" * 10))
        self.rw("h3", c2, h3, 110, 10)
        self.say("h3-close", c2.close(h3))
        c2.logoff()
        self.say("h1-close", c.close(h1))

    def s_zero(self):
        c = self.c
        h1 = self.h1_file()
        h2 = c.create(self.name(), FILE_OPEN)
        self.say("h1-lock-50+0", c.lock(h1, [(50, 0, EXCLUSIVE | FAIL_IMMEDIATELY)]))
        self.rw("h2", c, h2, 40, 20)
        self.rw("h2", c, h2, 50, 10)
        self.rw("h2", c, h2, 40, 10)
        self.say("h2-close", c.close(h2))
        self.say("h1-close", c.close(h1))

    def ext_conn(self):
        c2 = Conn(self.a.direct, self.a.dialect, self.a.sign, self.a.seal,
                  self.a.share)
        w = c2.create("lk-%s-warmup3" % self.tag, FILE_OVERWRITE_IF)
        c2.close(w)
        return c2

    def s_ext_r(self):
        """A lock taken by a client that does not go through smbaccel
        (--direct): it breaks smbaccel's read lease (smbd breaks R leases of
        other lease keys on a lock), then the server checks again."""
        c = self.c
        c2 = self.ext_conn()
        h2 = c2.create(self.name(), FILE_OVERWRITE_IF)
        self.say("e-write-200", c2.write(h2, 0, (b"ext-r" * 40)))
        h1 = c.create(self.name(), FILE_OPEN)
        self.say("h1-read-0+10", c.read(h1, 0, 10))
        self.say("e-lock-0+100", c2.lock(h2, [(0, 100, EXCLUSIVE | FAIL_IMMEDIATELY)]))
        self.rw("h1", c, h1, 0, 10)
        self.rw("h1", c, h1, 150, 10)
        self.say("h1-close", c.close(h1))
        self.say("e-close", c2.close(h2))
        c2.logoff()

    def s_ext_w(self):
        """The same while smbaccel holds write caching it cannot give back:
        h1's one 200-byte write leaves no id for the acknowledgement of the
        break the other client's open causes, so that open waits for the
        server's break timeout (35 s); smbaccel must not absorb writes under
        a write caching the server has taken away by then."""
        c = self.c
        h1 = c.create(self.name(), FILE_OVERWRITE_IF)
        self.say("h1-write-200", c.write(h1, 0, (b"ext-w" * 40)))
        h1b = c.create(self.name(), FILE_OPEN)
        c2 = self.ext_conn()
        h2 = c2.create(self.name(), FILE_OPEN)
        self.say("e-lock-0+100", c2.lock(h2, [(0, 100, EXCLUSIVE | FAIL_IMMEDIATELY)]))
        for n, h in (("h1", h1), ("h1b", h1b)):
            self.rw(n, c, h, 0, 10)
            self.rw(n, c, h, 150, 10)
        self.say("h1b-close", c.close(h1b))
        self.say("h1-close", c.close(h1))
        self.say("e-close", c2.close(h2))
        c2.logoff()

    def s_overflow(self):
        c = self.c
        h1 = self.h1_file()
        h2 = c.create(self.name(), FILE_OPEN)
        st = 0
        for i in range(70):
            st = st or c.lock(h1, [(1000 + 2 * i, 1, EXCLUSIVE | FAIL_IMMEDIATELY)])
        self.say("h1-lock-70", st)
        self.rw("h2", c, h2, 0, 10)
        self.rw("h2", c, h2, 1000, 1)
        self.rw("h1", c, h1, 0, 10)
        self.say("h1-close", c.close(h1))
        self.rw("h2", c, h2, 0, 10)
        self.say("h2-close", c.close(h2))


ORDER = ["late-x", "late-s", "early-x", "early-s", "cross", "stack", "unlock2", "cmpd-lock", "multi",
         "close", "conn2", "conn2-async", "zero", "overflow", "ext-r",
         "ext-w"]
NEEDS_DIRECT = ("ext-r", "ext-w")
NEEDS_SMBD_PID = ("conn2-async",)


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("dialect", choices=sorted(DIALECTS))
    ap.add_argument("tag")
    ap.add_argument("--only", default="")
    ap.add_argument("--skip", default="")
    ap.add_argument("--share", default="share")
    ap.add_argument("--direct", type=int, default=0,
                    help="port of the server itself, for ext-r and ext-w")
    ap.add_argument("--smbd-pid", type=int, default=0,
                    help="the smbd master's pid, for conn2-async (its "
                    "per-connection processes are stopped a while)")
    ap.add_argument("--sign", action="store_true")
    ap.add_argument("--seal", action="store_true")
    a = ap.parse_args()
    only = [x for x in a.only.split(",") if x] or ORDER
    skip = set(x for x in a.skip.split(",") if x)
    r = Run(a, a.tag)
    for s in ORDER:
        if s not in only or s in skip or (s in NEEDS_DIRECT and not a.direct) or \
                (s in NEEDS_SMBD_PID and not a.smbd_pid):
            continue
        r.scen = s
        getattr(r, "s_" + s.replace("-", "_"))()
    r.c.logoff()


if __name__ == "__main__":
    main()
