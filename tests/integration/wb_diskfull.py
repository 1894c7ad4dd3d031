#!/usr/bin/python3
"""wb_diskfull.py PORT DIALECT FILE write|flush|close|late|setinfo|free KIB

On a share that has less free space than KIB KiB: write KIB KiB in 1 KiB
writes to FILE, then
  write: keep writing (1 KiB) until a WRITE fails;
  flush: FLUSH after the writes;
  close: CLOSE after the writes;
  late:  after the writes (which cross a flush that fails), write 1 KiB,
         wait 2 s (the failure is known by then), write 1 KiB more: that
         WRITE must get the error (run with a long flush_idle so the first
         1 KiB is still buffered);
  setinfo: after the writes, a SET_INFO of the file's basic information
         (times left as they are), as Windows' CopyFile sets the times
         after a copy, then CLOSE: the SET_INFO must get the error (most
         applications never see a CLOSE's status);
  free:  (with room for the writes) the volume's free space through a
         handle of the share's root before and after the writes; prints "free dropped by N
         KiB" instead (a client checking the space left before each file
         must see its own acknowledged writes take it).
Prints one line "acked BYTES first_error OP STATUS" (STATUS of the first
failing request, in hex) and, on its own line, "RANGES" followed by the
acknowledged ranges "off+len,..." merged.  Exit 0 if the run completed
(whatever the statuses), 1 on a protocol problem."""
import struct
import sys

from wb_smb import Client, FILE_OPEN, FILE_OVERWRITE_IF, READ_ATTRS

OPT_DIRECTORY = 0x1

port, dialect, path, mode, kib = (int(sys.argv[1]), sys.argv[2], sys.argv[3],
                                  sys.argv[4], int(sys.argv[5]))
KB = 1024
c = Client(port, dialect)
fid, _ = c.create(path, disposition=FILE_OVERWRITE_IF)
acked = 0
err = None
if mode == "free":
    # through a handle of the share's root, as Explorer asks
    root, _ = c.create("", access=READ_ATTRS, disposition=FILE_OPEN,
                       options=OPT_DIRECTORY)
    st, before = c.query_free(root)
    for off in range(0, kib * KB, KB):
        c.write(fid, off, b"F" * KB)
    st2, after = c.query_free(root)
    c.close(root)
    c.close(fid)
    c.logoff()
    if st or st2:
        raise SystemExit("QUERY_INFO of the volume: 0x%08x 0x%08x" % (st, st2))
    print("free dropped by %d KiB" % ((before - after) // KB))
    sys.exit(0)
limit = kib * KB if mode != "write" else (kib + 16384) * KB
off = 0
while off < limit:
    st, cnt = c.write(fid, off, bytes([(off // KB) & 0xFF]) * KB, check=False)
    if st != 0:
        err = ("WRITE@%d" % off, st)
        break
    acked = off + KB
    off += KB
closed = False
if err is None and mode == "late":
    import time
    st, _ = c.write(fid, off, b"L" * KB, check=False)
    if st != 0:
        err = ("WRITE@%d" % off, st)
    else:
        acked = off + KB
        off += KB
        time.sleep(2)
        st, _ = c.write(fid, off, b"M" * KB, check=False)
        if st != 0:
            err = ("WRITE-after-pause@%d" % off, st)
        else:
            acked = off + KB
if err is None and mode == "setinfo":
    st = c.set_info(fid, 4, struct.pack("<QQQQII", 0, 0, 0, 0, 0, 0))
    if st != 0:
        err = ("SETINFO", st)
if err is None and mode == "flush":
    st = c.flush(fid)
    if st != 0:
        err = ("FLUSH", st)
if err is None or mode == "close":
    st = c.close(fid)
    closed = True
    if st != 0 and err is None:
        err = ("CLOSE", st)
if not closed:
    c.close(fid)
c.logoff()
print("acked %d first_error %s 0x%08x" % (acked, err[0] if err else "none", err[1] if err else 0))
