#!/usr/bin/python3
"""
signs_reads_server.py - impacket's SMB server (python3-impacket 0.10), patched
to sign only SESSION_SETUP answers and READ answers of more than 16 KiB: a
server that looks, from its TREE_CONNECT, CREATE and small READ answers, as
if it signed only what MS-SMB2 requires, and then signs a large READ answer
anyway (MS-SMB2 allows a server to sign any answer).  t_any_server_resign uses it to drive
smbaccel into the case it cannot recover from (the answer to a READ it
widened arrives signed, in a session it holds no key for) and to check what
it does then: close with reason cannot-sign, remember the server, and widen
nothing of it again.

usage: signs_reads_server.py IP PORT USER PASSWORD SHARE DIR
"""
import logging
import sys

from impacket import smbserver
from impacket import smb3structs as smb2
from impacket.ntlm import compute_lmhash, compute_nthash

BIG_READ = 16 * 1024

_sign = smbserver.SMBSERVER.signSMBv2


def sign_some(self, packet, key):
    cmd = packet['Command']
    if cmd == smb2.SMB2_SESSION_SETUP or \
            (cmd == smb2.SMB2_READ and len(packet['Data']) > BIG_READ):
        _sign(self, packet, key)


def main():
    ip, port, user, password, share, path = sys.argv[1:7]
    smbserver.SMBSERVER.signSMBv2 = sign_some
    logging.basicConfig(level=logging.INFO, format='%(asctime)s %(message)s')
    server = smbserver.SimpleSMBServer(listenAddress=ip, listenPort=int(port))
    server.addShare(share.upper(), path, '')
    server.setSMB2Support(True)
    server.addCredential(user, 0, compute_lmhash(password),
                         compute_nthash(password))
    server.setSMBChallenge('')
    server.setLogFile('')
    server.start()


if __name__ == '__main__':
    main()
