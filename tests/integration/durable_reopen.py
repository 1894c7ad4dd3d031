#!/usr/bin/python3
"""durable_reopen.py PORT SMBD_PID HOLD NAME [retry]

A durable reconnect that overtakes the server's teardown of the client's
previous connection.  Opens NAME on the [dur] share with a batch oplock
and a durable handle (DHnQ, MS-SMB2 2.2.13.2.3), finds the smbd process
that serves the connection (the child of SMBD_PID that appeared with it)
and stops it (SIGSTOP), closes the TCP connection without a LOGOFF (the
client's network failed), connects again and sends the reconnect (DHnC,
2.2.13.2.4, with the FileId), resuming the old smbd process HOLD seconds
after the first connection closed.  While that process is stopped the
server still has the handle with the old connection: a reconnect that
reaches it then fails OBJECT_NAME_NOT_FOUND.

Prints "open <tags of the answer>", then "reconnect STATUS" (SUCCESS or
the NTSTATUS in hex), "waited S" (seconds from the close of the first
connection to the reconnect's answer, one decimal) and "tries N".  With
"retry" a refusal is tried again as --resume does (0.5 s apart, 3 tries):
smbd may still be tearing the old connection down when smbaccel has seen
its socket close (ci56, with another test beside it).

durable_reopen.py --resume PORT NAME N [SMBD_PID HOLD]
A client whose connection failed in the middle of writing NAME (on
[dur], batch oplock, durable handle): N writes of 1 KiB, the connection
dropped at once, a new connection, the reconnect, then N more writes of
1 KiB after the first N, and the CLOSE.  With SMBD_PID, the smbd process
of the first connection is stopped before the drop and resumed HOLD
seconds after it (what smbaccel still had to write of the first N waits
in that process's socket meanwhile).  A reconnect refused
OBJECT_NAME_NOT_FOUND is tried again after 0.5 s, 3 tries in all, as a
client retries it (smbd may still be tearing the old connection down
when its socket has closed).  Prints "reconnect STATUS", "waited S",
"tries N" and "sha256 HEX" of the 2N KiB it wrote (what the file must
hold).

durable_reopen.py --hold PORT NAME N READY
durable_reopen.py --back PORT NAME FILEID N
A client whose machine vanishes (t_client_vanish) and comes back:
--hold opens NAME on [dur] (batch oplock, durable handle), writes N KiB in
1 KiB writes, prints "port LOCALPORT" and "fileid HEX", creates READY and
sleeps until killed; --back reconnects that FileId on a new connection
(tried 3 times, 0.5 s apart), writes the next N KiB and closes, printing
"reconnect STATUS", "tries N" and "sha256 HEX" of the 2N KiB.

durable_reopen.py --lost1 PORT NAME N [hold]
durable_reopen.py --lost2 PORT NAME FILEID
A client that loses its connection after N writes of 1 KiB to NAME (on
[dur], batch oplock, durable handle): --lost1 writes them, prints
"fileid HEX" and drops the connection (with hold: keeps it, sleeping
until killed); --lost2 reconnects that FileId on
a new connection, writes 1 KiB at offset 0 and closes, printing
"reconnect STATUS", "write STATUS" and "close STATUS"."""
import os
import signal
import sys
import threading
import time

from wb_smb import Client, OPLOCK_BATCH, FILE_OPEN, FILE_OPEN_IF


def children(pid):
    out = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    st = f.read()
            except OSError:
                continue
            # the comm field may hold spaces: ppid is the second field after ')'
            if int(st[st.rindex(")") + 2:].split()[1]) == pid:
                out.add(int(d))
    return out


def open_durable(c, name):
    """NAME opened (created) with a batch oplock and a durable handle."""
    fid, res = c.create(name, disposition=FILE_OPEN_IF, oplock=OPLOCK_BATCH,
                        contexts=[(b"DHnQ", b"\0" * 16)])
    if "DHnQ" not in res["tags"]:
        sys.exit("smbd granted no durable handle")
    return fid, res


def reconnect(c, name, fid):
    """The durable reconnect of FileId fid: (FileId or None, info)."""
    return c.create(name, disposition=FILE_OPEN, oplock=OPLOCK_BATCH, check=False,
                    contexts=[(b"DHnC", fid)])


def connect(port, master):
    """A client on [dur], and the smbd process that serves it (None
    without master)."""
    before = children(master) if master else set()
    c = Client(port, "3.0", share="dur")
    if not master:
        return c, None
    new = children(master) - before
    if len(new) != 1:
        sys.exit("cannot tell the smbd process of the first connection: %r" % sorted(new))
    return c, new.pop()


def stop(child, hold):
    """Stop child now, resume it hold seconds from now (a timer)."""
    if child is None:
        return None
    os.kill(child, signal.SIGSTOP)
    t = threading.Timer(hold, os.kill, (child, signal.SIGCONT))
    t.start()
    return t


def cont(child, timer):
    if timer is not None:
        timer.cancel()
    try:
        if child is not None:
            os.kill(child, signal.SIGCONT)
    except ProcessLookupError:      # resumed, and gone with its connection
        pass


def reconnect_retrying(c, name, fid):
    """reconnect, tried again 0.5 s after a refusal, 3 tries in all (a
    client retries: smbd may still be tearing the old connection down
    after its socket closed): (FileId or None, info, tries)."""
    for tries in range(1, 4):
        f2, res = reconnect(c, name, fid)
        if f2 is not None or res["status"] != 0xC0000034:
            break
        time.sleep(0.5)
    return f2, res, tries


def halves(name, n):
    """The 2N KiB a resuming client writes, N before and N after."""
    import random
    return random.Random(name).randbytes(2 * n * 1024)


def write_kib(c, fid, data, first, end):
    for i in range(first, end):
        c.write(fid, i * 1024, data[i * 1024:(i + 1) * 1024])


def resume(port, name, n, master=0, hold=0.0):
    import hashlib
    data = halves(name, n)
    c1, child = connect(port, master)
    fid, res = open_durable(c1, name)
    write_kib(c1, fid, data, 0, n)
    timer = stop(child, hold)
    try:
        c1.drop()
        t0 = time.monotonic()
        c2 = Client(port, "3.0", share="dur")
        f2, res, tries = reconnect_retrying(c2, name, fid)
        print("reconnect", "SUCCESS" if f2 is not None else "0x%08x" % res["status"])
        print("waited %.1f" % (time.monotonic() - t0))
        print("tries", tries)
        if f2 is not None:
            write_kib(c2, f2, data, n, 2 * n)
            c2.close(f2)
        c2.logoff()
    finally:
        cont(child, timer)
    print("sha256", hashlib.sha256(data).hexdigest())


def status(r):
    return "SUCCESS" if r == 0 else "0x%08x" % r


if sys.argv[1] == "--hold":
    port, name, n, ready = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    data = halves(name, n)
    c1 = Client(port, "3.0", share="dur")
    fid, res = open_durable(c1, name)
    write_kib(c1, fid, data, 0, n)
    print("port", c1.nb.get_socket().getsockname()[1])
    print("fileid", fid.hex(), flush=True)
    open(ready, "w").close()
    while True:
        time.sleep(60)
if sys.argv[1] == "--back":
    import hashlib
    port, name, fid, n = int(sys.argv[2]), sys.argv[3], bytes.fromhex(sys.argv[4]), int(sys.argv[5])
    data = halves(name, n)
    c2 = Client(port, "3.0", share="dur")
    f2, res, tries = reconnect_retrying(c2, name, fid)
    print("reconnect", status(res["status"]))
    print("tries", tries)
    if f2 is not None:
        write_kib(c2, f2, data, n, 2 * n)
        c2.close(f2)
    c2.logoff()
    print("sha256", hashlib.sha256(data).hexdigest())
    sys.exit(0)
if sys.argv[1] == "--lost1":
    port, name, n = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    c1 = Client(port, "3.0", share="dur")
    fid, res = open_durable(c1, name)
    for i in range(n):
        c1.write(fid, i * 1024, bytes([i & 0xFF]) * 1024)
    print("fileid", fid.hex(), flush=True)
    if sys.argv[5:] == ["hold"]:
        time.sleep(600)     # the connection stays; the test kills this
    c1.drop()
    sys.exit(0)
if sys.argv[1] == "--lost2":
    port, name, fid = int(sys.argv[2]), sys.argv[3], bytes.fromhex(sys.argv[4])
    c2 = Client(port, "3.0", share="dur")
    f2, res = reconnect(c2, name, fid)
    print("reconnect", status(res["status"]))
    if f2 is not None:
        st, _ = c2.write(f2, 0, b"x" * 1024, check=False)
        print("write", status(st))
        print("close", status(c2.close(f2)))
    c2.logoff()
    sys.exit(0)
if sys.argv[1] == "--resume":
    a = sys.argv[2:]
    resume(int(a[0]), a[1], int(a[2]), *([int(a[3]), float(a[4])] if len(a) > 3 else []))
    sys.exit(0)
port, master, hold, name = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
retry = sys.argv[5:] == ["retry"]
c1, child = connect(port, master)
fid, res = open_durable(c1, name)
print("open", " ".join(res["tags"]) or "-")
timer = stop(child, hold)
try:
    c1.drop()
    t0 = time.monotonic()
    c2 = Client(port, "3.0", share="dur")
    if retry:
        f2, res, tries = reconnect_retrying(c2, name, fid)
    else:
        (f2, res), tries = reconnect(c2, name, fid), 1
    waited = time.monotonic() - t0
    print("reconnect", "SUCCESS" if f2 is not None else "0x%08x" % res["status"])
    print("waited %.1f" % waited)
    print("tries", tries)
    if f2 is not None:
        c2.close(f2)
    c2.logoff()
finally:
    cont(child, timer)
