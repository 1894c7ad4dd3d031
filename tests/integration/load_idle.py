#!/usr/bin/python3
"""Many idle SMB2 connections, for t_load.sh and t_connect_storm.sh.

usage: load_idle.py server PORT [--backlog N --accept-gap S] [--silent]
                          [--gate FILE]
       load_idle.py clients PORT N DONEFILE [--no-wait] [--timeout S]

server: a minimal upstream on 127.0.0.1:PORT (asyncio): every NEGOTIATE it
  receives is answered with a fixed SMB2 NEGOTIATE response (dialect 2.1);
  connections stay open until the peer closes.  One process, no smbd
  child per connection, so 1,000 connections cost the host little beyond
  smbaccel itself.  --backlog N and --accept-gap S make it a slow server
  (threads instead): listen backlog N, and one accept() every S seconds,
  like a busy smbd parent.  --silent: accept, read, never answer.
  --gate FILE: accept nothing until FILE exists.
clients: open N connections to 127.0.0.1:PORT at once, send a NEGOTIATE on
  each and wait for its response (prints "NEGOTIATED n of N", "FAILED k"
  and "SLOWEST s", the longest connect-to-answer time in seconds), touch
  DONEFILE, then keep them open and idle until stdin closes (or exit at
  once with --no-wait, which leaves the connections to be closed).
  --timeout S: give up on an answer after S seconds (default 60).
Exit status 1 if a connection failed.
"""
import argparse
import socket
import threading
import time
import asyncio
import os
import struct
import sys


def hdr(cmd, mid, flags=0, credits=1):
    return struct.pack("<4sHHIHHIIQIIQ16s", b"\xfeSMB", 64, 0, 0, cmd, credits,
                       flags, 0, mid, 0xFEFF, 0, 0, b"\0" * 16)


def neg_req():
    body = struct.pack("<HHHHI16sQ", 36, 2, 1, 0, 0, os.urandom(16), 0)
    body += struct.pack("<HH", 0x0202, 0x0210)
    msg = hdr(0, 0) + body
    return struct.pack(">I", len(msg)) + msg


def neg_rsp(mid):
    body = struct.pack("<HHHH16sIIIIQQHHI", 65, 1, 0x0210, 0, b"G" * 16, 0,
                       1 << 20, 1 << 20, 1 << 20, 0, 0, 128, 0, 0)
    msg = hdr(0, mid, flags=1) + body
    return struct.pack(">I", len(msg)) + msg


def is_negotiate(msg):
    return msg[:4] == b"\xfeSMB" and len(msg) >= 64 and \
        struct.unpack_from("<H", msg, 12)[0] == 0


async def serve_conn(reader, writer):
    try:
        while True:
            h = await reader.readexactly(4)
            n = struct.unpack(">I", h)[0] & 0xFFFFFF
            msg = await reader.readexactly(n)
            if is_negotiate(msg):
                writer.write(neg_rsp(struct.unpack_from("<Q", msg, 24)[0]))
                await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()


async def server(port):
    srv = await asyncio.start_server(serve_conn, "127.0.0.1", port, backlog=2048)
    async with srv:
        await srv.serve_forever()


def slow_conn(c, silent):
    buf = b""
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            buf += d
            while len(buf) >= 4:
                n = struct.unpack(">I", buf[:4])[0] & 0xFFFFFF
                if len(buf) < 4 + n:
                    break
                msg, buf = buf[4:4 + n], buf[4 + n:]
                if is_negotiate(msg) and not silent:
                    c.sendall(neg_rsp(struct.unpack_from("<Q", msg, 24)[0]))
    except OSError:
        pass
    c.close()


def slow_server(port, backlog, gap, silent, gate):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(backlog)
    while gate and not os.path.exists(gate):
        time.sleep(0.05)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=slow_conn, args=(c, silent), daemon=True).start()
        time.sleep(gap)


async def one_client(port, sem, timeout):
    async with sem:
        t0 = time.monotonic()
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
        w.write(neg_req())
        await w.drain()
        h = await asyncio.wait_for(r.readexactly(4), timeout)
        n = struct.unpack(">I", h)[0] & 0xFFFFFF
        msg = await asyncio.wait_for(r.readexactly(n), timeout)
        if msg[:4] != b"\xfeSMB":
            raise RuntimeError("not an SMB2 answer")
        return r, w, time.monotonic() - t0


async def clients(port, n, donefile, wait, timeout):
    sem = asyncio.Semaphore(64)    # connects in flight at once
    res = await asyncio.gather(*(one_client(port, sem, timeout) for _ in range(n)),
                               return_exceptions=True)
    ok = [x for x in res if not isinstance(x, BaseException)]
    bad = [x for x in res if isinstance(x, BaseException)]
    print("NEGOTIATED %d of %d" % (len(ok), n), flush=True)
    print("FAILED %d%s" % (len(bad), (": " + repr(bad[0])) if bad else ""), flush=True)
    print("SLOWEST %.2f" % max([x[2] for x in ok] or [0]), flush=True)
    open(donefile, "w").close()
    if wait:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)
    for r, w, _ in ok:
        w.close()
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("what", choices=("server", "clients"))
    ap.add_argument("port", type=int)
    ap.add_argument("n", type=int, nargs="?")
    ap.add_argument("donefile", nargs="?")
    ap.add_argument("--no-wait", action="store_true")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--backlog", type=int)
    ap.add_argument("--accept-gap", type=float, default=0)
    ap.add_argument("--silent", action="store_true")
    ap.add_argument("--gate")
    a = ap.parse_args()
    if a.what == "server":
        if a.backlog is None and not a.silent and not a.gate:
            asyncio.run(server(a.port))
        else:
            slow_server(a.port, a.backlog or 128, a.accept_gap, a.silent, a.gate)
        return 0
    if a.n is None or a.donefile is None:
        ap.error("clients needs N and DONEFILE")
    return asyncio.run(clients(a.port, a.n, a.donefile, not a.no_wait, a.timeout))


if __name__ == "__main__":
    sys.exit(main())
