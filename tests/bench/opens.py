"""opens.py - smbaccel's CPU time per small request while opens are held
(tests/bench/opens runs it; docs/design.md, Known limits).

One connection (the holder) opens N files and keeps them open; another
connection, or the same one (--own), then sends M requests one at a time,
each waited for: a QUERY_INFO (FileStandardInformation), a 4 KiB READ at
offset 0, and a CREATE followed by its CLOSE, all of one file.  Around
each run of M requests it reads smbaccel's CPU time twice:

  ns      the first field of /proc/PID/task/*/schedstat, summed (exact)
  ticks   utime + stime of /proc/PID/stat (clock ticks: 10 ms samples)

and prints one line per request kind:

  case=other opens=8000 op=query_info n=2000 cpu_us=170.3 tick_us=170.0 wall_us=...

cpu_us is the figure: smbaccel's CPU microseconds per request (per
CREATE+CLOSE pair for op=create_close).  Nothing is asserted.

  opens.py PORT PID --opens N [--own] [--reps M] [--perf FILE]

--perf FILE records smbaccel (perf record -g -p PID) over the timed runs
of the case only, not while the opens are being made.
"""
import argparse
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import wb_smb  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_ns(pid):
    t = 0
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
            t += int(f.read().split()[0])
    return t


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(") ", 1)[1].split()
    return int(rest[11]) + int(rest[12])


def hold(c, n, batch=64):
    """Open n files on c (held/fNNNNN), a batch of CREATEs in flight at a
    time; returns their FileIds."""
    fids = []
    i = 0
    while i < n:
        mids = [c.create_req("held\\f%05d" % j, access=wb_smb.READ_ATTRS)
                for j in range(i, min(i + batch, n))]
        for m in mids:
            fid, res = c.parse_create(c.wait(m))
            if fid is None:
                sys.exit("CREATE of a held file: status 0x%08x (after %d opens)"
                         % (res["status"], len(fids)))
            fids.append(fid)
        i += batch
    return fids


def timed(pid, what, reps, fn):
    for _ in range(min(50, reps)):      # warm-up
        fn()
    ns0, t0, w0 = cpu_ns(pid), cpu_ticks(pid), time.monotonic()
    for _ in range(reps):
        fn()
    ns1, t1, w1 = cpu_ns(pid), cpu_ticks(pid), time.monotonic()
    return ((ns1 - ns0) / 1000.0 / reps,
            (t1 - t0) * 1e6 / TICK / reps,
            (w1 - w0) * 1e6 / reps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("pid", type=int)
    ap.add_argument("--opens", type=int, default=0)
    ap.add_argument("--own", action="store_true")
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--perf")
    a = ap.parse_args()

    req = wb_smb.Client(a.port)
    holder = req if a.own else wb_smb.Client(a.port)
    hold(holder, a.opens)
    fid, _ = req.create("target", access=wb_smb.GENERIC_READ)

    def query_info():
        st, _ = req.query_eof(fid)
        if st != 0:
            sys.exit("QUERY_INFO: status 0x%08x" % st)

    def read():
        st, d = req.read(fid, 0, 4096)
        if st != 0 or len(d) != 4096:
            sys.exit("READ: status 0x%08x, %d bytes" % (st, len(d)))

    def create_close():
        f, _ = req.create("target", access=wb_smb.GENERIC_READ)
        if req.close(f) != 0:
            sys.exit("CLOSE failed")

    perf = None
    if a.perf:
        perf = subprocess.Popen(["perf", "record", "-q", "-g", "-p", str(a.pid),
                                 "-o", a.perf], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(1)
    case = "own" if a.own else ("other" if a.opens else "none")
    for what, fn in (("query_info", query_info), ("read4k", read),
                     ("create_close", create_close)):
        us, tick_us, wall_us = timed(a.pid, what, a.reps, fn)
        print("case=%s opens=%d op=%s n=%d cpu_us=%.1f tick_us=%.1f wall_us=%.1f"
              % (case, a.opens, what, a.reps, us, tick_us, wall_us), flush=True)
    if perf is not None:
        perf.send_signal(signal.SIGINT)
        perf.wait()
    req.close(fid)
    # the held opens go with the connections
    req.drop()
    if holder is not req:
        holder.drop()


if __name__ == "__main__":
    main()
