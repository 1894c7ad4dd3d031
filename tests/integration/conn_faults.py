#!/usr/bin/python3
"""conn_faults.py - clients that end or stall a connection badly, for the
t_conn_* tests of smbaccel's connection layer (conn.c).  Each prints
"port LOCALPORT" once its connection is up and waits for the files the
test creates (GO...) between its steps.

conn_faults.py cutwrite PORT DIALECT CLOSED [READY GO]
    Writes 100 KiB in 1 KiB writes to cw-a.bin (absorbed and held),
    prints "sha256 HEX" of them, then sends 400 KiB of a 2 MiB WRITE to
    cw-b.bin (smbaccel cuts it through to the server as it comes) and
    closes the socket.  Creates CLOSED, then connects again at once and
    prints "reconnect S" (seconds its session took to set up) and "echo
    STATUS".  With READY and GO: creates READY after the writes, waits
    for GO, and sends a FLUSH of cw-a.bin (its data goes upstream with
    it) just before the 2 MiB WRITE, without waiting for its answer.

conn_faults.py servergone PORT BIG MIB READY GO1 GO2
    Writes 64 KiB in 1 KiB writes to sg.bin (absorbed and held), then
    sends MIB READs of 1 MiB of BIG and reads none of their answers;
    creates READY.  Once GO1 exists, sends a FLUSH of sg.bin (its data
    goes upstream with it), still reading nothing.  Once GO2 exists,
    reads what comes until the connection ends; prints "read N MiB".

conn_faults.py rst PORT BIG MIB READY GO
    Writes 64 KiB in 1 KiB writes to rst.bin (absorbed and held), prints
    "sha256 HEX" of them, sends MIB READs of 1 MiB of BIG and reads none
    of their answers; creates READY.  Once GO exists, resets the
    connection (SO_LINGER 0: an RST, with the answers unread).

conn_faults.py halfclose PORT BIG MIB NAME READY GO
    Writes 64 KiB in 1 KiB writes to NAME (absorbed and held), prints
    "sha256 HEX" of them, sends MIB READs of 1 MiB of BIG, and closes its
    sending side (shutdown SHUT_WR) without reading any answer; creates
    READY.  Once GO exists, reads what comes until the connection ends;
    prints "read N MiB".

conn_faults.py noread PORT NAME LOCALCOPY N READY1 GO1 READY2 GO2
    A client that does not read its answers while smbaccel makes them
    itself: 400 random 4 KiB reads of NAME (the document cache fetches
    it whole; every byte checked against LOCALCOPY), then READY1.  Once
    GO1 exists, N READs of 64 KiB of it are sent at once (from a thread:
    smbaccel may stop reading them) and none of their answers read; READY2
    once all are sent or after 5 s.  Once GO2 exists, every answer is
    read and checked; prints "sent N" and "verified N".
"""
import hashlib
import os
import random
import socket
import struct
import sys
import threading
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


def cutwrite(port, dialect, closed, ready=None, go=None):
    c = Client(port, dialect)
    bfid, _ = c.create("cw-b.bin", disposition=FILE_OVERWRITE_IF)
    fid, _ = c.create("cw-a.bin", disposition=FILE_OVERWRITE_IF)
    data = b"".join(bytes([i]) * 1024 for i in range(100))
    for i in range(100):
        c.write(fid, i * 1024, data[i * 1024:(i + 1) * 1024])
    say("sha256", hashlib.sha256(data).hexdigest())
    if go:
        touch(ready)
        wait_file(go)
        c.send(FLUSH, struct.pack("<HHI16s", 24, 0, 0, fid))
    frames, send = [], c.nb.send_packet
    c.nb.send_packet = frames.append      # build it, send part of it below
    c.write_req(bfid, 0, b"w" * (2 << 20))
    c.nb.send_packet = send
    sock = c.nb.get_socket()
    sock.sendall(struct.pack(">I", len(frames[0])) + frames[0][:400 << 10])
    time.sleep(1)
    sock.close()
    touch(closed)
    t = time.time()
    c2 = Client(port, dialect)
    say("reconnect %.2f" % (time.time() - t))
    say("echo 0x%08x" % c2.echo())
    c2.logoff()


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


def rst(c, big, mib, ready, go):
    bfid, _ = c.create(big, access=GENERIC_READ, disposition=FILE_OPEN)
    fid, _ = c.create("rst.bin", disposition=FILE_OVERWRITE_IF)
    data = b"".join(bytes([i]) * 1024 for i in range(64))
    for i in range(64):
        c.write(fid, i * 1024, data[i * 1024:(i + 1) * 1024])
    say("sha256", hashlib.sha256(data).hexdigest())
    for i in range(mib):
        c.read_req(bfid, i << 20, 1 << 20)
    sock = c.nb.get_socket()
    say("port", sock.getsockname()[1])
    touch(ready)
    wait_file(go)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    say("reset")


def halfclose(c, big, mib, name, ready, go):
    bfid, _ = c.create(big, access=GENERIC_READ, disposition=FILE_OPEN)
    fid, _ = c.create(name, disposition=FILE_OVERWRITE_IF)
    data = b"".join(bytes([i]) * 1024 for i in range(64))
    for i in range(64):
        c.write(fid, i * 1024, data[i * 1024:(i + 1) * 1024])
    say("sha256", hashlib.sha256(data).hexdigest())
    for i in range(mib):
        c.read_req(bfid, i << 20, 1 << 20)
    sock = c.nb.get_socket()
    say("port", sock.getsockname()[1])
    sock.shutdown(socket.SHUT_WR)
    touch(ready)
    wait_file(go)
    say("read %d MiB" % (drain(c) >> 20))


def noread(c, name, copy, n, ready1, go1, ready2, go2):
    model = open(copy, "rb").read()
    fid, _ = c.create(name, access=GENERIC_READ, disposition=FILE_OPEN)
    rnd = random.Random(5)
    for _ in range(400):
        off = rnd.randrange(0, len(model) // 4096) * 4096
        st, d = c.read(fid, off, 4096)
        if st != 0 or d != model[off:off + 4096]:
            sys.exit("random READ at %d: status 0x%08x or wrong bytes" % (off, st))
    say("port", c.nb.get_socket().getsockname()[1])
    touch(ready1)
    wait_file(go1)
    n = min(n, c.credits() - 8)
    frames, send = [], c.nb.send_packet
    c.nb.send_packet = frames.append      # build them, send below
    offs = [(i * 65536) % (len(model) - 65536) for i in range(n)]
    mids = [c.read_req(fid, off, 65536) for off in offs]
    c.nb.send_packet = send
    blob = b"".join(struct.pack(">I", len(f)) + f for f in frames)
    t = threading.Thread(target=c.nb.get_socket().sendall, args=(blob,))
    t.start()
    t.join(5)
    say("sent", n, "all" if not t.is_alive() else "partly (smbaccel stopped reading)")
    touch(ready2)
    wait_file(go2)
    for m, off in zip(mids, offs):
        st, d = Client.parse_read(c.wait(m))
        if st != 0 or d != model[off:off + 65536]:
            sys.exit("pipelined READ at %d: status 0x%08x or wrong bytes" % (off, st))
    t.join()
    say("verified", n)
    c.close(fid)
    c.logoff()


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "cutwrite":
        return cutwrite(port, *sys.argv[3:8])
    c = Client(port, "3.0")
    if mode == "servergone":
        servergone(c, sys.argv[3], int(sys.argv[4]), *sys.argv[5:8])
    elif mode == "rst":
        rst(c, sys.argv[3], int(sys.argv[4]), *sys.argv[5:7])
    elif mode == "halfclose":
        halfclose(c, sys.argv[3], int(sys.argv[4]), *sys.argv[5:8])
    elif mode == "noread":
        noread(c, sys.argv[3], sys.argv[4], int(sys.argv[5]), *sys.argv[6:10])
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
