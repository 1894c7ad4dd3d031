#!/usr/bin/python3
"""wanlink_probe.py - UDP probes for tests/integration/t_wanlink.sh (stdlib).

    echo  --bind IP --port P                 answer every datagram with itself
    rtt   --to IP --port P [--count N] [--interval S]
          N probes, one at a time; prints "sent=N lost=L min_ms= median_ms= max_ms="
    sink  --bind IP --port P [--quiet S] [--max S] [--missing FILE] [--done FILE]
          count sequence-numbered datagrams until S seconds without one
          (after the first; with --done, after FILE exists) or --max; prints "received=N bytes=B seqs=K
          missing=M span_s=T rate_bps=R user_ts=U" (rate: bytes from the
          second arrival to the last over that time, timed by the kernel's
          receive timestamps (SO_TIMESTAMPNS), not by when the sink got to
          read them: a sink kept off the CPU that then reads a backlog at
          once would see a shorter span and a higher rate; U datagrams came
          without a kernel timestamp and were timed on reading) and writes
          the missing sequence numbers, one a line, to FILE
    blast --to IP --port P --count N [--size B] [--rate BPS] [--first K]
          N datagrams of B bytes numbered K..K+N-1, paced to BPS (0: as
          fast as 1 ms batches of 64 allow); prints "sent=N seconds=S"

A sink is started first and prints "ready" on stderr once bound.
"""
import argparse
import os
import socket
import statistics
import struct
import sys
import time


def udp(bind=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # 8 MiB whatever net.core.rmem_max says (root: SO_RCVBUFFORCE), so
    # that a receiver kept off the CPU for a while loses nothing; what is
    # lost there anyway shows in the namespace's Udp RcvbufErrors
    try:
        s.setsockopt(socket.SOL_SOCKET,
                     getattr(socket, "SO_RCVBUFFORCE", 33), 8 << 20)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    if bind:
        s.bind(bind)
    return s


def echo(a):
    s = udp((a.bind, a.port))
    print("ready", file=sys.stderr, flush=True)
    while True:
        d, peer = s.recvfrom(65536)
        s.sendto(d, peer)


def rtt(a):
    s = udp()
    s.settimeout(a.timeout)
    out, lost = [], 0
    for i in range(a.count):
        t0 = time.monotonic()
        s.sendto(struct.pack("!Q", i) + b"x" * 56, (a.to, a.port))
        try:
            while True:
                d, _ = s.recvfrom(65536)
                if struct.unpack("!Q", d[:8])[0] == i:
                    break
            out.append((time.monotonic() - t0) * 1000)
        except socket.timeout:
            lost += 1
        time.sleep(a.interval)
    if not out:
        print("sent=%d lost=%d" % (a.count, lost))
        return 1
    print("sent=%d lost=%d min_ms=%.3f median_ms=%.3f max_ms=%.3f" % (
        a.count, lost, min(out), statistics.median(out), max(out)))
    return 0


# SO_TIMESTAMPNS (Linux; SCM_TIMESTAMPNS has the same value): each
# datagram carries the CLOCK_REALTIME time the kernel received it
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
TIMESPEC = struct.Struct("@ll")


def recv_stamped(s):
    """One datagram and its kernel receive time (time.time() scale), or
    (data, None) when the kernel gave no timestamp."""
    d, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(TIMESPEC.size))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and \
                len(data) >= TIMESPEC.size:
            sec, nsec = TIMESPEC.unpack(data[:TIMESPEC.size])
            return d, sec + nsec / 1e9
    return d, None


def sink(a):
    s = udp((a.bind, a.port))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    print("ready", file=sys.stderr, flush=True)
    seen = set()
    n = nbytes = 0
    t_first = t_second = t_last = None   # kernel receive times (rate)
    last_read = None                     # monotonic, when last read (--quiet)
    b_after_first = user_ts = 0
    t_done = None
    start = time.monotonic()
    s.settimeout(0.1)
    while True:
        now = time.monotonic()
        if now - start > a.max:
            break
        if a.done:
            # the sender is still sending while its done file is absent:
            # a stalled sender (a busy machine) must not end the count
            if not os.path.exists(a.done):
                t_done = None
            elif t_done is None:
                t_done = now
            if t_done is not None and now - max(t_done, last_read or t_done) > a.quiet:
                break
        elif last_read is not None and now - last_read > a.quiet:
            break
        try:
            d, t = recv_stamped(s)
        except socket.timeout:
            continue
        last_read = time.monotonic()
        if t is None:
            t = time.time()
            user_ts += 1
        n += 1
        nbytes += len(d)
        seen.add(struct.unpack("!Q", d[:8])[0])
        if t_first is None:
            t_first = t
        elif t_second is None:
            t_second = t
        else:
            b_after_first += len(d)
        t_last = t
    lo = min(seen) if seen else 0
    hi = max(seen) if seen else -1
    if a.expect is not None:
        lo, hi = a.first, a.first + a.expect - 1
    missing = [i for i in range(lo, hi + 1) if i not in seen]
    if a.missing:
        with open(a.missing, "w") as f:
            f.writelines("%d\n" % i for i in missing)
    span = (t_last - t_second) if t_second is not None and t_last > t_second else 0
    rate = b_after_first * 8 / span if span > 0 else 0
    print("received=%d bytes=%d seqs=%d missing=%d span_s=%.3f rate_bps=%.0f user_ts=%d" % (
        n, nbytes, len(seen), len(missing), span, rate, user_ts))
    return 0


def blast(a):
    s = udp()
    pad = b"\0" * max(0, a.size - 8)
    t0 = time.monotonic()
    sent = 0
    batch = 64
    while sent < a.count:
        k = min(batch, a.count - sent)
        for i in range(k):
            s.sendto(struct.pack("!Q", a.first + sent + i) + pad, (a.to, a.port))
        sent += k
        if a.rate > 0:
            due = t0 + sent * a.size * 8 / a.rate
            d = due - time.monotonic()
            if d > 0:
                time.sleep(d)
        else:
            time.sleep(0.001)
    print("sent=%d seconds=%.3f" % (sent, time.monotonic() - t0))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("echo")
    p.add_argument("--bind", required=True)
    p.add_argument("--port", type=int, required=True)
    p = sub.add_parser("rtt")
    p.add_argument("--to", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, default=50)
    p.add_argument("--interval", type=float, default=0.02)
    p.add_argument("--timeout", type=float, default=2.0)
    p = sub.add_parser("sink")
    p.add_argument("--bind", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--quiet", type=float, default=1.0)
    p.add_argument("--max", type=float, default=60.0)
    p.add_argument("--missing")
    p.add_argument("--first", type=int, default=0)
    p.add_argument("--expect", type=int)
    p.add_argument("--done", help="the sender has finished once this file exists: "
                   "stop after --quiet seconds of silence from then (not before)")
    p = sub.add_parser("blast")
    p.add_argument("--to", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--size", type=int, default=1200)
    p.add_argument("--rate", type=float, default=0)
    p.add_argument("--first", type=int, default=0)
    a = ap.parse_args()
    return {"echo": echo, "rtt": rtt, "sink": sink, "blast": blast}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
