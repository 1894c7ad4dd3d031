#!/bin/bash
# A big folder listed through smbaccel from a server whose MaxRead and
# MaxWrite are small (64 KiB, as on some NAS firmware) while its
# MaxTransactSize is the default 8 MiB: smbclient asks QUERY_DIRECTORY
# for up to MaxTransactSize bytes at a time, so one answer holds far more
# than MaxRead.  smbaccel's bound on a frame's length follows all three
# negotiated sizes (before: MaxRead + 1 MiB, and the answer closed the
# connection as a bad frame).  Every name is listed, the same as directly
# (smbclient), and by impacket.
. "$(dirname "$0")/lib.sh"
require_smbaccel "a big folder"

start_smbd "smb2 max read = 65536" "smb2 max write = 65536"
start_proxy
home=$(client_home bigdir)
mkdir -p "$SHARE_DIR/big"
N=12000
# names of 60 characters: an entry of FileIdBothDirectoryInformation is
# about 224 bytes, so the folder lists as about 2.7 MiB
"$PY" - "$SHARE_DIR/big" "$N" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    open(os.path.join(d, "document-with-a-rather-long-name-of-the-branch-office-%05d.txt" % i), "w").close()
EOF
list() {	# list PORT: the names smbclient lists in big/, sorted
	HOME=$home timeout 120 smbclient //127.0.0.1/share -p "$1" -U "$SMB_USER%$SMB_PASS" \
	    -s "$home/.smb/smb.conf" -c 'cd big; ls' 2>&1 |
	    sed -n 's/^  \(document-[^ ]*\.txt\) .*/\1/p' | sort
}
list "$SMBD_PORT" > "$T/direct"
list "$PROXY_PORT" > "$T/proxied"
assert_eq "$N" "$(wc -l < "$T/direct")" "names listed directly"
assert_eq "$N" "$(wc -l < "$T/proxied")" "names listed through smbaccel"
cmp -s "$T/direct" "$T/proxied" || fail "the listings differ"
# a second client: impacket lists with its own buffer size
n=$(timeout 120 "$PY" - "$PROXY_PORT" "$SMB_USER" "$SMB_PASS" <<'EOF'
import sys
from impacket.smbconnection import SMBConnection
port, user, pw = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = SMBConnection("127.0.0.1", "127.0.0.1", sess_port=port)
c.login(user, pw)
print(sum(1 for f in c.listPath("share", "big\\*") if f.get_longname().startswith("document-")))
c.logoff()
EOF
) || fail "impacket listPath through smbaccel failed: $n"
assert_eq "$N" "$n" "names impacket lists through smbaccel"
grep -q 'bad frame\|implausible' "$PROXY_LOG" && fail "smbaccel refused a frame: $(grep -m1 'bad frame\|implausible' "$PROXY_LOG")"
info "$N names listed through smbaccel, as directly (server MaxRead 64 KiB)"
info "PASS"
