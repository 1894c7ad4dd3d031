#!/usr/bin/python3
"""durable_reopen.py PORT SMBD_PID HOLD NAME

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
the NTSTATUS in hex) and "waited S" (seconds from the close of the first
connection to the reconnect's answer, one decimal)."""
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


port, master, hold, name = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
before = children(master)
c1 = Client(port, "3.0", share="dur")
new = children(master) - before
if len(new) != 1:
    sys.exit("cannot tell the smbd process of the first connection: %r" % sorted(new))
child = new.pop()
fid, res = c1.create(name, disposition=FILE_OPEN_IF, oplock=OPLOCK_BATCH,
                     contexts=[(b"DHnQ", b"\0" * 16)])
print("open", " ".join(res["tags"]) or "-")
if "DHnQ" not in res["tags"]:
    sys.exit("smbd granted no durable handle")
os.kill(child, signal.SIGSTOP)
timer = threading.Timer(hold, os.kill, (child, signal.SIGCONT))
try:
    c1.drop()
    t0 = time.monotonic()
    timer.start()
    c2 = Client(port, "3.0", share="dur")
    f2, res = c2.create(name, disposition=FILE_OPEN, oplock=OPLOCK_BATCH, check=False,
                        contexts=[(b"DHnC", fid)])
    waited = time.monotonic() - t0
    print("reconnect", "SUCCESS" if f2 is not None else "0x%08x" % res["status"])
    print("waited %.1f" % waited)
    if f2 is not None:
        c2.close(f2)
    c2.logoff()
finally:
    timer.cancel()
    try:
        os.kill(child, signal.SIGCONT)
    except ProcessLookupError:      # resumed, and gone with its connection
        pass
