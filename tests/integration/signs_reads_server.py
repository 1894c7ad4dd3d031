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

usage: the command line of impacket's examples/smbserver.py, so that
lib.sh's start_impacket_server runs it (IMP_SERVER=...):
    signs_reads_server.py [-smb2support] [-ts] [-debug] -ip IP -port PORT
        -username USER -password PASSWORD SHARE DIR
"""
import argparse
import logging

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
    ap = argparse.ArgumentParser()
    ap.add_argument('-smb2support', action='store_true')
    ap.add_argument('-ts', action='store_true')
    ap.add_argument('-debug', action='store_true')
    ap.add_argument('-ip', default='127.0.0.1')
    ap.add_argument('-port', type=int, required=True)
    ap.add_argument('-username', required=True)
    ap.add_argument('-password', required=True)
    ap.add_argument('share')
    ap.add_argument('path')
    a = ap.parse_args()
    smbserver.SMBSERVER.signSMBv2 = sign_some
    logging.basicConfig(level=logging.DEBUG if a.debug else logging.INFO,
                        format='%(asctime)s %(message)s')
    server = smbserver.SimpleSMBServer(listenAddress=a.ip, listenPort=a.port)
    server.addShare(a.share.upper(), a.path, '')
    server.setSMB2Support(True)
    server.addCredential(a.username, 0, compute_lmhash(a.password),
                         compute_nthash(a.password))
    server.setSMBChallenge('')
    server.setLogFile('')
    server.start()


if __name__ == '__main__':
    main()
