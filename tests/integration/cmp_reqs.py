#!/usr/bin/python3
"""cmp_reqs.py PORT DIALECT NAME N - requests that smbaccel sends with
their file's flush, checked against a local model of each file.

For each of N files NAME-i: 16 x 1 KiB writes, then, each after one more
1 KiB write, a READ of everything written so far (must equal the model),
a QUERY_INFO of the size (must count every write), a SET_INFO of the size
(cuts the last write in half), a FLUSH, then a CLOSE.  Prints "ok=K
sha256=H" where K counts the files whose every check passed and H is the
sha256 of the last file as the model has it (the caller compares smbd's
disk).  Exit 1 on the first failed check, with what differed.
"""
import hashlib
import sys

from wb_smb import Client, FILE_OVERWRITE_IF

port, dialect, name, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
c = Client(port, dialect)


def die(what):
    print("FAIL %s" % what)
    sys.exit(1)


ok, model = 0, b""
for k in range(n):
    path = "%s-%d" % (name, k)
    fid, _ = c.create(path, disposition=FILE_OVERWRITE_IF)
    model = bytearray()

    def write(data):
        c.write(fid, len(model), data)
        model.extend(data)

    for i in range(16):
        write(bytes([(k * 31 + i) & 0xFF]) * 1024)
    write(b"r" * 1024)
    st, d = c.read(fid, 0, len(model))
    if st != 0 or d != bytes(model):
        die("%s: READ after the writes: status 0x%08x, %d bytes, same=%s"
            % (path, st, len(d or b""), d == bytes(model)))
    write(b"q" * 1024)
    st, eof = c.query_eof(fid)
    if st != 0 or eof != len(model):
        die("%s: QUERY_INFO size %s, status 0x%08x, want %d" % (path, eof, st, len(model)))
    write(b"s" * 1024)
    del model[len(model) - 512:]
    st = c.set_eof(fid, len(model))
    if st != 0:
        die("%s: SET_INFO of the size: status 0x%08x" % (path, st))
    write(b"f" * 1024)
    st = c.flush(fid)
    if st != 0:
        die("%s: FLUSH: status 0x%08x" % (path, st))
    st = c.close(fid)
    if st != 0:
        die("%s: CLOSE: status 0x%08x" % (path, st))
    ok += 1
c.logoff()
print("ok=%d sha256=%s" % (ok, hashlib.sha256(bytes(model)).hexdigest()))
