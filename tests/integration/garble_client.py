#!/usr/bin/python3
"""garble_client.py PORT TRIGGER NAME - 16 x 1 KiB WRITEs to NAME (absorbed
by smbaccel under write_behind = always and long flush timers), then the
file TRIGGER is created (tamper.py then puts a message no peer can read
before the server's next one) and an ECHO is sent.  Prints "echo=ok" or
"echo=error (...)": smbaccel must not relay opaquely while it holds the
acknowledged writes.  Exit 0 when the writes were acknowledged.
"""
import sys

from wb_smb import Client, FILE_OVERWRITE_IF

port, trigger, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = Client(port, "2.1", timeout=10)
fid, _ = c.create(name, disposition=FILE_OVERWRITE_IF)
for i in range(16):
    c.write(fid, i * 1024, bytes([65 + i]) * 1024)
open(trigger, "w").close()
try:
    c.echo()
    print("echo=ok")
except Exception as e:
    print("echo=error (%s)" % str(e).splitlines()[0][:80])
