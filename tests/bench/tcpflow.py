#!/usr/bin/python3
"""tcpflow.py - one bulk TCP stream, measured at the receiver (stdlib only).

    tcpflow.py sink --bind IP --port P [--once]
        accept connections; for each, read until EOF and answer one line
        "bytes=N seconds=S" (first byte to EOF), then close.
    tcpflow.py send --to IP --port P --seconds S [--cc ALG] [--json]
        connect (TCP_CONGESTION = ALG if given), send for S seconds,
        shut down, wait for the sink's line; print
        "bytes=N seconds=S mbit=M cc=ALG rtt_ms=R cwnd=C retrans=T mss=M"
        (TCP_INFO of the sending socket just before shutdown), or JSON.

The figure that counts is the sink's: bytes that crossed the link divided
by the time between the first byte and the end of the stream, so bytes
still in the sender's buffer when the time box ends are counted only once
they have arrived.  Used by tests/bench/tcp and tests/integration/t_wanlink.
"""
import argparse
import json
import socket
import struct
import sys
import time

CHUNK = 256 * 1024


def tcp_info(s):
    """A few fields of struct tcp_info (linux/tcp.h layout)."""
    b = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232)
    if len(b) < 104:
        return {}
    f = lambda off: struct.unpack_from("I", b, off)[0]
    return {"rtt_ms": f(68) / 1000.0, "cwnd": f(80), "mss": f(16),
            "retrans": f(100), "lost": f(32)}


def sink(args):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((args.bind, args.port))
    ls.listen(8)
    while True:
        c, _ = ls.accept()
        n, t0 = 0, None
        while True:
            d = c.recv(1 << 20)
            if not d:
                break
            if t0 is None:
                t0 = time.monotonic()
            n += len(d)
        secs = time.monotonic() - t0 if t0 else 0.0
        try:
            c.sendall(b"bytes=%d seconds=%.6f\n" % (n, secs))
        except OSError:
            pass
        c.close()
        if args.once:
            return 0


def send(args):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if args.cc:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION,
                     args.cc.encode())
    s.settimeout(args.seconds + 120)
    s.connect((args.to, args.port))
    if args.cc:     # a route's congctl replaces it at connect: set it again
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION,
                     args.cc.encode())
    buf = b"\0" * CHUNK
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        s.send(buf)
    info = tcp_info(s)
    cc = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
    s.shutdown(socket.SHUT_WR)
    line = b""
    while not line.endswith(b"\n"):
        d = s.recv(256)
        if not d:
            break
        line += d
    s.close()
    kv = dict(w.split("=", 1) for w in line.decode().split() if "=" in w)
    n, secs = int(kv.get("bytes", 0)), float(kv.get("seconds", 0))
    r = {"bytes": n, "seconds": secs,
         "mbit": n * 8 / secs / 1e6 if secs > 0 else 0.0,
         "cc": cc.split(b"\0")[0].decode()}
    r.update(info)
    if args.json:
        print(json.dumps(r))
    else:
        print(" ".join("%s=%s" % (k, ("%.3f" % v) if isinstance(v, float) else v)
                       for k, v in r.items()))
    return 0 if n > 0 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("sink")
    a.add_argument("--bind", required=True)
    a.add_argument("--port", type=int, required=True)
    a.add_argument("--once", action="store_true")
    b = sub.add_parser("send")
    b.add_argument("--to", required=True)
    b.add_argument("--port", type=int, required=True)
    b.add_argument("--seconds", type=float, default=10)
    b.add_argument("--cc")
    b.add_argument("--json", action="store_true")
    args = ap.parse_args()
    return sink(args) if args.cmd == "sink" else send(args)


if __name__ == "__main__":
    sys.exit(main())
