#!/usr/bin/python3
"""
rd_seq.py PORT USER PASS SHARE PATH OUT [SIZE]: read PATH sequentially in
4 KiB READs with impacket's client (SMB 2.0.2 and up) and write what came to
OUT.  Exit 0 when SIZE bytes (default: to end of file) were read, 1 when the
connection failed on the way (what was read is still written).
"""
import sys

from impacket.smbconnection import SMBConnection


def main():
    port, user, password, share, path, out = sys.argv[1:7]
    size = int(sys.argv[7]) if len(sys.argv) > 7 else None
    data = b''
    rc = 0
    try:
        c = SMBConnection('127.0.0.1', '127.0.0.1', sess_port=int(port))
        c.login(user, password)
        tid = c.connectTree(share)
        fid = c.openFile(tid, path)
        while size is None or len(data) < size:
            d = c.readFile(tid, fid, len(data), 4096)
            if not d:
                break
            data += d
        c.closeFile(tid, fid)
        c.logoff()
    except Exception as e:   # the test looks at what came, and why not
        print('rd_seq: failed after %d bytes: %s' % (len(data), e))
        rc = 1
    with open(out, 'wb') as f:
        f.write(data)
    print('rd_seq: %d bytes' % len(data))
    sys.exit(rc)


if __name__ == '__main__':
    main()
