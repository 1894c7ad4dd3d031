"""relay_lib - the framing the test relays in front of smbd share
(chainfail.py, tamper.py, signflag.py): whole NBSS messages read and
written, and a relay that hands each server message to an edit function
before passing it on.
"""
import socket
import struct
import threading


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        b = sock.recv(n - len(buf))
        if not b:
            return None
        buf += b
    return bytes(buf)


def recv_msg(sock):
    """One NBSS message's payload; None at EOF or in a cut frame."""
    h = recv_exact(sock, 4)
    if h is None:
        return None
    n = struct.unpack(">I", h)[0] & 0xFFFFFF
    return recv_exact(sock, n) if n else b""


def frame(msg):
    return struct.pack(">I", len(msg)) + msg


def _pump(src, dst, edit):
    try:
        while True:
            msg = recv_msg(src)
            if msg is None:
                break
            out = edit(bytearray(msg)) if edit else [msg]
            dst.sendall(b"".join(frame(bytes(m)) for m in out))
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def listen(lport, backlog=16):
    """A listening TCP socket on 127.0.0.1:lport (SO_REUSEADDR)."""
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", lport))
    ls.listen(backlog)
    return ls


def serve(lport, sport, edit_s2c):
    """Relay 127.0.0.1:lport to 127.0.0.1:sport for ever.  For each
    connection edit_s2c() makes the function every server message then
    goes through: edit(bytearray) -> the messages to send in its place;
    or a pair of such functions, (client's messages, server's)."""
    ls = listen(lport)
    while True:
        c, _ = ls.accept()
        s = socket.create_connection(("127.0.0.1", sport))
        edits = edit_s2c()
        c2s, s2c = edits if isinstance(edits, tuple) else (None, edits)
        threading.Thread(target=_pump, args=(c, s, c2s), daemon=True).start()
        threading.Thread(target=_pump, args=(s, c, s2c), daemon=True).start()
