#!/usr/bin/python3
"""conn_faults.py - clients that end or stall a connection badly, for the
t_conn_* tests of smbaccel's connection layer (conn.c).  Each prints
"port LOCALPORT" once its connection is up and waits for the files the
test creates (GO...) between its steps.

conn_faults.py servergone PORT BIG MIB READY GO1 GO2
    Writes 64 KiB in 1 KiB writes to sg.bin (absorbed and held), then
    sends MIB READs of 1 MiB of BIG and reads none of their answers;
    creates READY.  Once GO1 exists, sends a FLUSH of sg.bin (its data
    goes upstream with it), still reading nothing.  Once GO2 exists,
    reads what comes until the connection ends; prints "read N MiB".
"""
import os
import struct
import sys
import time

from wb_smb import Client, FLUSH, FILE_OPEN, FILE_OVERWRITE_IF, GENERIC_READ, GENERIC_WRITE


def wait_file(path):
    while not os.path.exists(path):
        time.sleep(0.05)


def touch(path):
    open(path, "w").close()


def say(*args):
    print(*args, flush=True)


def drain(c):
    """Read answers until the connection ends; bytes of READ data read."""
    got = 0
    try:
        while c.pending:
            r = c._recv_one()
            if r.command == 8 and r.status == 0:
                got += len(Client.parse_read(r)[1])
    except Exception as e:
        say("connection ended:", type(e).__name__)
    return got


def servergone(c, big, mib, ready, go1, go2):
    # both opened first: a CREATE flushes what is held (cause observe)
    bfid, _ = c.create(big, access=GENERIC_READ, disposition=FILE_OPEN)
    fid, _ = c.create("sg.bin", disposition=FILE_OVERWRITE_IF)
    for i in range(64):
        c.write(fid, i * 1024, bytes([i]) * 1024)
    for i in range(mib):
        c.read_req(bfid, i << 20, 1 << 20)
    say("port", c.nb.get_socket().getsockname()[1])
    touch(ready)
    wait_file(go1)
    c.send(FLUSH, struct.pack("<HHI16s", 24, 0, 0, fid))
    wait_file(go2)
    say("read %d MiB" % (drain(c) >> 20))


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    c = Client(port, "3.0")
    if mode == "servergone":
        servergone(c, sys.argv[3], int(sys.argv[4]), *sys.argv[5:8])
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
