#!/usr/bin/python3
"""vanish.py - clients for smbaccel's client_keepalive (t_client_vanish).

vanish.py hold PORT NAME N READY [GO SENT]
    Opens NAME on [share] for writing with no sharing (FILE_OVERWRITE_IF,
    share access 0: while this open lives, every other open of the file
    fails SHARING_VIOLATION), writes N KiB in 1 KiB writes (each one
    acknowledged), then prints "port LOCALPORT" and "sha256 HEX" (of the
    N KiB), creates the file READY and sleeps until killed: the test then
    makes it vanish.  With GO: once the file GO exists, sends an ECHO
    without reading its answer and creates SENT (the test drops what is
    sent to the client first, so that answer stays in flight).

vanish.py excl PORT NAME
    Tries the same exclusive open; prints "open SUCCESS" or "open 0x..."
    (the NTSTATUS), and closes what it opened.

vanish.py pause PORT NAME MIB READY GO
    A client that is alive but silent while stopped: opens NAME (MIB MiB,
    present), sends MIB READs of 1 MiB without reading their answers,
    creates READY and waits for the file GO (the test stops this process
    in between: its kernel keeps acknowledging, with a zero window once
    its buffers are full).  Then reads every answer, writes 1 KiB at
    offset 0 and closes.  Prints "port LOCALPORT" once the READs are sent,
    then "read MIB MiB" and "done"."""
import hashlib
import os
import random
import struct
import sys
import time

from wb_smb import Client, ECHO, FILE_OPEN, FILE_OVERWRITE_IF, GENERIC_READ, GENERIC_WRITE


def wait_file(path):
    while not os.path.exists(path):
        time.sleep(0.05)


def main():
    mode, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    c = Client(port, "3.0")
    if mode == "hold":
        n, ready = int(sys.argv[4]), sys.argv[5]
        data = random.Random(name).randbytes(n * 1024)
        fid, _ = c.create(name, disposition=FILE_OVERWRITE_IF, share=0)
        for i in range(n):
            c.write(fid, i * 1024, data[i * 1024:(i + 1) * 1024])
        sock = c.nb.get_socket()
        print("port", sock.getsockname()[1])
        print("sha256", hashlib.sha256(data).hexdigest(), flush=True)
        open(ready, "w").close()
        if len(sys.argv) > 7:
            wait_file(sys.argv[6])
            c.send(ECHO, struct.pack("<HH", 4, 0))
            open(sys.argv[7], "w").close()
        while True:
            time.sleep(60)
    elif mode == "excl":
        fid, res = c.create(name, disposition=FILE_OPEN, share=0, check=False)
        print("open", "SUCCESS" if fid is not None else "0x%08x" % res["status"])
        if fid is not None:
            c.close(fid)
        c.logoff()
    elif mode == "pause":
        mib, ready, go = int(sys.argv[4]), sys.argv[5], sys.argv[6]
        fid, _ = c.create(name, access=GENERIC_READ | GENERIC_WRITE, disposition=FILE_OPEN)
        mids = [c.read_req(fid, i << 20, 1 << 20) for i in range(mib)]
        print("port", c.nb.get_socket().getsockname()[1], flush=True)
        open(ready, "w").close()
        wait_file(go)
        got = 0
        for m in mids:
            st, d = c.parse_read(c.wait(m))
            if st:
                sys.exit("READ: 0x%08x" % st)
            got += len(d)
        print("read %d MiB" % (got >> 20))
        c.write(fid, 0, b"x" * 1024)
        c.close(fid)
        c.logoff()
        print("done")


if __name__ == "__main__":
    main()
