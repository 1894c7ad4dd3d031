#!/usr/bin/python3
"""drain_overtake.py - clients for t_drain_overtake: a client that resets
with requests smbaccel has not handled, and its reconnect.

drain_overtake.py old PORT F X READY GO [fin|rst]
    Opens F and X (created empty), writes 64 KiB at offset 0 of F and
    4 KiB at offset 1 MiB of X (data beginning "SLOW", which slowwrite.py
    holds), each acknowledged, prints "port LOCALPORT", creates READY and
    waits for the file GO.  Then sends at once, without reading answers:
    a WRITE of 1 KiB to X after its data, a CREATE of y.bin (it waits
    until the connection's buffered data is written), a WRITE of 4 KiB
    "old" at offset 0 of F (never answered: it comes after the CREATE), and
    resets its connection (SO_LINGER 0).  Prints "sent".  With "fin" or
    "rst" smbaccel is not stopped: 0.3 s after the requests (smbaccel has
    read them and stalled on the CREATE, its client socket no longer read)
    the client closes: "fin" reads the answers that came (a close with
    unread data would reset) and closes with a FIN, "rst" resets.

drain_overtake.py new PORT F
    The same client again: opens F, writes 4 KiB "new" at offset 0, closes
    it (each answered SUCCESS) and logs off.  Prints "done"."""
import os
import socket
import struct
import sys
import time

from wb_smb import Client, FILE_OPEN, FILE_OVERWRITE_IF

KIB = 1024


def main():
    mode, port, f = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    c = Client(port, "3.0")
    if mode == "old":
        x, ready, go = sys.argv[4], sys.argv[5], sys.argv[6]
        ff, _ = c.create(f, disposition=FILE_OVERWRITE_IF)
        fx, _ = c.create(x, disposition=FILE_OVERWRITE_IF)
        c.write(ff, 0, b"SLOW" + b"a" * (64 * KIB - 4))
        c.write(fx, 1 << 20, b"SLOW" + b"x" * (4 * KIB - 4))
        sock = c.nb.get_socket()
        print("port", sock.getsockname()[1], flush=True)
        open(ready, "w").close()
        while not os.path.exists(go):
            time.sleep(0.05)
        # every request in smbaccel's socket before the reset (no Nagle
        # delay: a reset drops what is not sent)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.write_req(fx, (1 << 20) + 4 * KIB, b"y" * KIB)
        c.create_req("y.bin", disposition=FILE_OVERWRITE_IF)
        c.write_req(ff, 0, b"o" * 4 * KIB)
        time.sleep(0.3)
        if sys.argv[7:] == ["fin"]:
            sock.setblocking(False)
            try:
                while sock.recv(65536):
                    pass
            except BlockingIOError:
                pass
        else:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        print("sent", flush=True)
    elif mode == "new":
        fid, _ = c.create(f, disposition=FILE_OPEN)
        c.write(fid, 0, b"n" * 4 * KIB)
        c.close(fid)
        c.logoff()
        print("done")


if __name__ == "__main__":
    main()
