#!/usr/bin/python3
"""Many idle SMB2 connections, for t_load.sh.

usage: load_idle.py server PORT
       load_idle.py clients PORT N DONEFILE [--no-wait]

server: a minimal upstream on 127.0.0.1:PORT (asyncio): every NEGOTIATE it
  receives is answered with a fixed SMB2 NEGOTIATE response (dialect 2.1);
  connections stay open until the peer closes.  One process, no smbd
  child per connection, so 1,000 connections cost the host little beyond
  smbaccel itself.
clients: open N connections to 127.0.0.1:PORT, send a NEGOTIATE on each and
  wait for its response (prints "NEGOTIATED n of N" and "FAILED k"), touch
  DONEFILE, then keep them open and idle until stdin closes (or exit at
  once with --no-wait, which leaves the connections to be closed).
Exit status 1 if a connection failed.
"""
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


async def serve_conn(reader, writer):
    try:
        while True:
            h = await reader.readexactly(4)
            n = struct.unpack(">I", h)[0] & 0xFFFFFF
            msg = await reader.readexactly(n)
            if msg[:4] == b"\xfeSMB" and len(msg) >= 64 and \
                    struct.unpack_from("<H", msg, 12)[0] == 0:
                writer.write(neg_rsp(struct.unpack_from("<Q", msg, 24)[0]))
                await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()


async def server(port):
    srv = await asyncio.start_server(serve_conn, "127.0.0.1", port, backlog=2048)
    async with srv:
        await srv.serve_forever()


async def one_client(port, sem):
    async with sem:
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
        w.write(neg_req())
        await w.drain()
        h = await asyncio.wait_for(r.readexactly(4), 60)
        n = struct.unpack(">I", h)[0] & 0xFFFFFF
        msg = await asyncio.wait_for(r.readexactly(n), 60)
        if msg[:4] != b"\xfeSMB":
            raise RuntimeError("not an SMB2 answer")
        return r, w


async def clients(port, n, donefile, wait):
    sem = asyncio.Semaphore(64)    # connects in flight at once
    res = await asyncio.gather(*(one_client(port, sem) for _ in range(n)),
                               return_exceptions=True)
    ok = [x for x in res if not isinstance(x, BaseException)]
    bad = [x for x in res if isinstance(x, BaseException)]
    print("NEGOTIATED %d of %d" % (len(ok), n), flush=True)
    print("FAILED %d%s" % (len(bad), (": " + repr(bad[0])) if bad else ""), flush=True)
    open(donefile, "w").close()
    if wait:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)
    for r, w in ok:
        w.close()
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "server":
        asyncio.run(server(int(sys.argv[2])))
    elif len(sys.argv) >= 5 and sys.argv[1] == "clients":
        sys.exit(asyncio.run(clients(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4],
                                     "--no-wait" not in sys.argv)))
    else:
        sys.exit(__doc__)
