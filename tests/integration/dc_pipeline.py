#!/usr/bin/python3
"""dc_pipeline.py PORT FILE LOCAL_COPY

A reader that pipelines (as libsmbclient and Windows do): 20 times, two
READs sent at once into the same 64 KiB chunk of FILE that nothing has
fetched yet.  smbaccel widens the first (the chunk is then in flight) and
makes the second wait for it; the second must be answered as soon as the
first's answer arrives, not when a timer happens to wake the connection
(that took up to 30 s).  Every byte is checked.  Exit 1 on wrong bytes or
when the 20 pairs take longer than 10 s (needless stalls).
"""
import socket
import sys
import time

from wb_smb import Client, GENERIC_READ, FILE_OPEN

port, path, local = int(sys.argv[1]), sys.argv[2], sys.argv[3]
model = open(local, "rb").read()
CH = 65536
c = Client(port, "3.0")
# as real clients do: no Nagle delay for the second of two small requests
c.nb._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
fid, _ = c.create(path, access=GENERIC_READ, disposition=FILE_OPEN)
# a first read past the start: a random reader, the copy starts
st, d = c.read(fid, 5 * CH + 100, 100)
if st != 0 or d != model[5 * CH + 100:5 * CH + 200]:
    print("FAIL: first read")
    sys.exit(1)
t0 = time.monotonic()
for k in range(20):
    base = (7 + 3 * k) * CH
    m1 = c.read_req(fid, base + 1000, 4096)
    m2 = c.read_req(fid, base + 30000, 4096)
    for m, off in ((m1, base + 1000), (m2, base + 30000)):
        st, d = Client.parse_read(c.wait(m))
        if st != 0 or d != model[off:off + 4096]:
            print("FAIL: pipelined READ at %d: status 0x%08x, wrong bytes" % (off, st))
            sys.exit(1)
secs = time.monotonic() - t0
c.close(fid)
c.logoff()
print("20 pipelined pairs in %.3f s" % secs)
if secs > 10:
    print("FAIL: the second READ of a pair waited for a timer, not for the first's answer")
    sys.exit(1)
print("OK")
