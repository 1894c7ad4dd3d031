#!/usr/bin/python3
"""Malformed-input client for t_garbage.sh.

usage: garbage.py PORT [PROXY_LOG]

Each case opens its own connection to 127.0.0.1:PORT, sends its bytes and
reads until the connection is closed (EOF or reset) or the upstream answers.
A connection that neither closes nor answers within --deadline seconds is a
hang: exit status 1.  With PROXY_LOG, every case must also leave a log line
for its connection (found through the 'accepted client=127.0.0.1:PORT' line)
that says what happened: any line for that conn id other than the accept,
a state change, or a close without reason=.
"""
import os, re, socket, struct, sys, time

DEADLINE = float(os.environ.get("GARBAGE_DEADLINE", "5"))
# With a plain TCP relay as stand-in, smbd waits for the rest of a frame
# that never comes: report hangs but do not count them.
ALLOW_HANG = os.environ.get("GARBAGE_ALLOW_HANG") == "1"
LOG_WAIT = float(os.environ.get("GARBAGE_LOG_WAIT", "5"))
port = int(sys.argv[1])
logpath = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else None


def nbss(payload, typ=0):
    return struct.pack(">I", (typ << 24) | len(payload)) + payload


def smb2_hdr(cmd, mid, next_cmd=0, flags=0, credit_charge=0, credits=1):
    # MS-SMB2 2.2.1.2 sync header, 64 bytes
    return struct.pack("<4sHHIHHIIQIIQ16s", b"\xfeSMB", 64, credit_charge, 0,
                       cmd, credits, flags, next_cmd, mid, 0xFEFF, 0, 0,
                       b"\0" * 16)


def negotiate_req():
    # MS-SMB2 2.2.3, dialects 2.0.2 / 2.1 / 3.0 (no contexts needed)
    dialects = [0x0202, 0x0210, 0x0300]
    body = struct.pack("<HHHHI16sQ", 36, len(dialects), 1, 0, 0,
                       os.urandom(16), 0)
    body += b"".join(struct.pack("<H", d) for d in dialects)
    return nbss(smb2_hdr(0, 0) + body)


def echo_req(mid, next_cmd):
    return smb2_hdr(0x0D, mid, next_cmd=next_cmd) + struct.pack("<HH", 4, 0)


def recv_frame(s, timeout=5):
    s.settimeout(timeout)
    hdr = b""
    while len(hdr) < 4:
        b = s.recv(4 - len(hdr))
        if not b:
            raise EOFError("closed during negotiate")
        hdr += b
    n = struct.unpack(">I", hdr)[0] & 0xFFFFFF
    data = b""
    while len(data) < n:
        b = s.recv(n - len(data))
        if not b:
            raise EOFError("closed during negotiate")
        data += b
    return data


# Each case: (name, setup-needs-negotiate, bytes to send, half-close after)
CASES = [
    ("garbage", False, b"GET / HTTP/1.0\r\n\r\n" + os.urandom(400), False),
    ("random-payload-valid-nbss", False, nbss(os.urandom(3000)), False),
    ("truncated-frame-then-close", False,
     nbss(smb2_hdr(0, 0) + b"\0" * 936)[:100], True),
    ("oversized-0xffffff", False, b"\x00\xff\xff\xff" + os.urandom(2000), False),
    ("nbss-type-0x42", False, b"\x42\x00\x00\x10" + os.urandom(16), False),
    ("lying-nextcommand-first", False,
     nbss(echo_req(0, next_cmd=0x1000)), False),
    ("lying-nextcommand-after-negotiate", True,
     nbss(echo_req(1, next_cmd=0x1000)), False),
    ("nextcommand-into-header", True,
     nbss(echo_req(1, next_cmd=8) + b"\0" * 64), False),
    ("nextcommand-unaligned", True,
     nbss(echo_req(1, next_cmd=70) + echo_req(2, 0)), False),
    ("smb2-magic-10-bytes", False, nbss(b"\xfeSMB" + b"\0" * 6), False),
    ("smb2-magic-10-bytes-after-negotiate", True,
     nbss(b"\xfeSMB" + b"\0" * 6), False),
    ("transform-header-short", True, nbss(b"\xfdSMB" + os.urandom(40)), False),
    ("compression-header-short", True, nbss(b"\xfcSMB" + os.urandom(8)), False),
    # an 8 MiB frame begun before any login: within what the server's
    # sizes allow once a session exists, but not before (each such
    # connection held its bytes, 450 MB for 50 of them, for ever)
    ("8MiB-frame-before-login", True,
     b"\x00\x80\x00\x00" + echo_req(1, 0) + os.urandom(4000), False),
]


def log_lines():
    if not logpath:
        return []
    with open(logpath, errors="replace") as f:
        return f.readlines()


def log_check(cport, start):
    """Wait for a line about the connection from client port cport."""
    end = time.time() + LOG_WAIT
    acc = re.compile(r"conn=(\d+) .*client=127\.0\.0\.1:%d\b" % cport)
    # Routine lines say nothing about what went wrong: the accept, state
    # changes, and a close without a reason.
    routine = re.compile(r"conn=\d+ (accepted |state |closed (?!.*reason=))")
    while True:
        lines = log_lines()[start:]
        ids = {m.group(1) for l in lines for m in [acc.search(l)] if m}
        for l in lines:
            m = re.search(r"conn=(\d+)\b", l)
            if m and m.group(1) in ids and not routine.search(l):
                return l.strip()
        if time.time() > end:
            return None
        time.sleep(0.1)


failed = 0
for name, need_neg, data, half in CASES:
    start = len(log_lines())
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    cport = s.getsockname()[1]
    t0 = time.time()
    outcome = None
    try:
        if need_neg:
            s.sendall(negotiate_req())
            recv_frame(s)
        s.sendall(data)
        if half:
            s.shutdown(socket.SHUT_WR)
        got = 0
        s.settimeout(0.2)
        while time.time() - t0 < DEADLINE:
            try:
                b = s.recv(65536)
            except socket.timeout:
                if got:
                    outcome = "answered %d bytes" % got
                    break
                continue
            if not b:
                outcome = "closed" + (" after %d bytes" % got if got else "")
                break
            got += len(b)
        else:
            outcome = "answered %d bytes" % got if got else None
    except socket.timeout:
        outcome = None          # the NEGOTIATE of the setup got no answer
    except (ConnectionResetError, BrokenPipeError) as e:
        outcome = "reset (%s)" % e.__class__.__name__
    except (EOFError, OSError) as e:
        outcome = "closed (%s)" % e
    finally:
        s.close()
    dt = time.time() - t0
    if outcome is None:
        print("case %-36s HANG: no answer and not closed after %.1fs%s"
              % (name, dt, " (tolerated: stand-in relay)" if ALLOW_HANG else ""))
        failed += not ALLOW_HANG
        continue
    line = log_check(cport, start) if logpath else "(log not checked)"
    if line is None:
        print("case %-36s %s in %.2fs, but NO log line for client port %d"
              % (name, outcome, dt, cport))
        failed += 1
    else:
        print("case %-36s %s in %.2fs; log: %s" % (name, outcome, dt, line))
sys.exit(1 if failed else 0)
