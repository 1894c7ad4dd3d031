"""server_silent - clients for smbaccel's server watchdog (server_timeout).

    server_silent.py notify PORT SECONDS
        Opens the share's root directory, sends a CHANGE_NOTIFY that the
        server answers only with an interim STATUS_PENDING, then stays
        silent for SECONDS (longer than server_timeout) and sends an ECHO:
        the connection must still be up (an async request is allowed to
        wait).  Prints "alive after N s"; exit 1 otherwise.

    server_silent.py flush PORT FILE READYFILE
        Writes 64 KiB in 1 KiB writes (absorbed with write_behind =
        always), writes READYFILE, waits until READYFILE is removed (the
        test black-holes the server meanwhile), then sends FLUSH: that
        FLUSH must not succeed.  Prints "flush: STATUS" or "closed after
        N s: ..."; exit 0 when the flush did not report success.

    server_silent.py wait PORT READYFILE GOFILE
        Logs on, writes READYFILE, sends nothing until GOFILE exists
        (upstream_keepalive: the test black-holes the server meanwhile,
        then lifts the black hole), then sends an ECHO and waits 5 s for
        its answer.  Prints "echo answered" or "echo unanswered".

    server_silent.py quiet PORT SECONDS
        Logs on, stays silent for SECONDS, then sends an ECHO and waits 5 s
        for its answer (the test's firewall forgets idle connections).
        Prints "echo answered after N s quiet" or "echo unanswered after N
        s quiet".
"""
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wb_smb  # noqa: E402

CHANGE_NOTIFY = 15
OPT_DIRECTORY = 0x1
FILE_LIST_DIRECTORY = 0x1


def notify(port, secs):
    c = wb_smb.Client(port, "3.0", timeout=secs + 30)
    mid = c.create_req("", access=FILE_LIST_DIRECTORY | wb_smb.READ_ATTRS,
                       disposition=wb_smb.FILE_OPEN, options=OPT_DIRECTORY)
    fid, res = c.parse_create(c.wait(mid))
    if fid is None:
        print("directory open failed: %r" % res)
        return 1
    # CompletionFilter FILE_NAME | DIR_NAME | ATTRIBUTES | LAST_WRITE
    body = struct.pack("<HHI16sII", 32, 0, 4096, fid, 0x17, 0)
    c.send(CHANGE_NOTIFY, body)
    t0 = time.time()
    while c.interims == 0 and time.time() - t0 < 10:
        c._recv_one(timeout=10)
    if c.interims == 0:
        print("no interim response to CHANGE_NOTIFY")
        return 1
    time.sleep(secs)
    st = c.echo()
    print("alive after %.0f s with a CHANGE_NOTIFY pending (echo status 0x%08x)"
          % (time.time() - t0, st))
    return 0 if st == 0 else 1


def flush(port, name, ready):
    c = wb_smb.Client(port, "3.0", timeout=60)
    fid, res = c.create(name)
    if fid is None:
        print("create failed: %r" % res)
        return 1
    for i in range(64):
        c.write(fid, i * 1024, os.urandom(1024))
    open(ready, "w").close()
    while os.path.exists(ready):
        time.sleep(0.05)
    t0 = time.time()
    try:
        st = c.flush(fid)
    except Exception as e:  # the connection closed under us
        print("closed after %.1f s: %s" % (time.time() - t0, str(e)[:80]))
        return 0
    print("flush: status 0x%08x after %.1f s" % (st, time.time() - t0))
    return 0 if st != 0 else 1


def wait(port, ready, go):
    c = wb_smb.Client(port, "3.0", timeout=5)
    open(ready, "w").close()
    while not os.path.exists(go):
        time.sleep(0.05)
    try:
        c.echo()
        print("echo answered")
    except Exception:  # no answer within 5 s, or the connection closed
        print("echo unanswered")
    return 0


def quiet(port, secs):
    c = wb_smb.Client(port, "3.0", timeout=5)
    time.sleep(secs)
    try:
        c.echo()
        what = "answered"
    except Exception:  # no answer within 5 s, or the connection closed
        what = "unanswered"
    print("echo %s after %.0f s quiet" % (what, secs))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "quiet":
        sys.exit(quiet(int(sys.argv[2]), float(sys.argv[3])))
    if sys.argv[1] == "wait":
        sys.exit(wait(int(sys.argv[2]), sys.argv[3], sys.argv[4]))
    if sys.argv[1] == "notify":
        sys.exit(notify(int(sys.argv[2]), float(sys.argv[3])))
    sys.exit(flush(int(sys.argv[2]), sys.argv[3], sys.argv[4]))
