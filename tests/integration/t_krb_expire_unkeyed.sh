#!/bin/bash
# test-timeout: 600
# waits: nine clients writing 1 KiB a second past a 130 s ticket's end (180 s): about 5 % of the CPU once the DC and FS1 are up
# Issue 12: a Kerberos session smbaccel holds no key for, unsigned, whose
# ticket ends while smbaccel buffers its writes.  Without the server's
# keytab smbaccel cannot read the ticket, so it cannot know when the
# server will expire the session (MS-SMB2 3.3.5.2.9), and a flush on its
# way at that instant is refused.  smbaccel keeps a copy of each flush of
# such a session, and the ids to send it again, until it is answered: a
# refused one is written again once the client has re-authenticated (a
# client told STATUS_NETWORK_SESSION_EXPIRED re-authenticates and sends
# its request again, 3.2.5.1.6).
#
# A Samba file server joined to the test DC (addc_member_join) with
# `server signing = auto` and no encryption, as a NAS has it: signing
# not required, so
# impacket does not sign at 3.0 (at 3.1.1 it always signs; the DC itself
# requires signing whatever its smb.conf says).  smbaccel without a keytab: the session relayed
# `no-keytab`, its writes absorbed (write_behind = always, flush_max_age
# 10s).  A ticket of KE_LIFE (130) seconds; impacket (krb_impacket.py
# pace --reauth-cc) writes 1 KiB every 0.1 s and, refused with
# STATUS_NETWORK_SESSION_EXPIRED, re-authenticates with a second, longer
# ticket and sends the write again, as Windows does; through smbaccel
# and directly at the same time.
# Directly: re-authenticated, every byte written and on the server's disk.
# Through smbaccel: the log says the server expired the session, that
# smbaccel stopped acting on it, and that it took it up again after the
# re-authentication (sessions_server_expired); and the flush the server
# refused at the expiry (the client's writes are all absorbed, so a flush
# is the first request it refuses) was kept and written again after the
# re-authentication: nothing lost, no write failed, every acknowledged
# byte on the server's disk.  (Before smbaccel kept refused flushes, that
# flush was lost and reported as STATUS_LOST_WRITEBEHIND_DATA; before
# that, with the session-expired status the client retries, leaving a
# hole it was never told of.)
# A second client through smbaccel, on share [held] (flush_idle 1s,
# flush_max_age 200s, coalesce_size 4M: its buffer goes up only when the
# ids it holds reach their bound, every 512 KiB here), also sends a
# TREE_CONNECT (to IPC$) every 2 writes and takes 3 s to re-authenticate:
# smbaccel learns of the expiry from a TREE_CONNECT with up to 512 KiB
# buffered, and its idle timer comes due while the client is away.  That
# buffer must be held, not flushed into refusals, and written after the
# re-authentication: every byte on the server's disk, no loss logged, no
# write failed.  (Should one of its 512 KiB flushes be on its way at the
# expiry, about one run in 250, it is kept as the first client's.)
# A third through smbaccel closes its file right after the re-authentication (one write
# more, the one sent again): the refused 100 KiB must go before the CLOSE
# with the two ids smbaccel kept back for it (the write donates one).
# Without those ids 37 KiB of it were lost (flush starved of message ids).
# A fourth through smbaccel, on share [closing] (its buffer held all
# along: idle flush 60 s, flush_max_age 300 s), writes
# 1 KiB a second and closes its file 10 s after its ticket's end, with no
# request sent in between: the CLOSE's flush is the first request the
# server refuses.  The server would carry the CLOSE out (3.3.5.2.9) but
# not the flush before it, so smbaccel answers the CLOSE
# STATUS_NETWORK_SESSION_EXPIRED itself (expiry_answered); the client
# re-authenticates and closes again, after what was held is written:
# closed cleanly, every byte on the server's disk.  (Before, the CLOSE was
# forwarded and the held data reported lost.)  close_compound is on there
# (the default), and the CLOSE is not sent with its flush in such a
# session (closes_not_compounded.unseen-expiry): a WRITE of the compound
# refused at the expiry could not be sent again, and the server would
# still close the file (until 2026-12-07 the CLOSE got the server's
# STATUS_NETWORK_SESSION_EXPIRED, and the client's retry FILE_CLOSED, the
# data lost).  A fifth does the same but
# locks the file's first byte before closing: the LOCK is answered the
# expiry, sent again after the re-authentication, granted; then the CLOSE.
# A sixth does the same with a blocking LOCK (no FAIL_IMMEDIATELY, which
# the server may make wait, 3.3.5.14): answered the same way.
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/krb_lib.sh"
require_smbaccel "Kerberos sessions"

LIFE=${KE_LIFE:-130}
ADDC_MEM_EXTRA="server signing = auto
	server smb encrypt = off"
ADDC_MEM_SHARES="[held]
	path = $ADDC_MEM_SHARE_DIR/held
	read only = no
[closing]
	path = $ADDC_MEM_SHARE_DIR/closing
	read only = no"
krb_bed
addc_member_join
mkdir -p "$ADDC_MEM_SHARE_DIR/held" "$ADDC_MEM_SHARE_DIR/closing" &&
    chmod 0777 "$ADDC_MEM_SHARE_DIR/held" "$ADDC_MEM_SHARE_DIR/closing"
addc_member_start
KHOST=$ADDC_MEM_FQDN
PROXY_UPSTREAM=$ADDC_MEM_IP:445
export PROXY_UPSTREAM
# [held]: flushed before the expiry only as its ids reach their bound
# [closing]: held until the CLOSE, which is not sent with its flush
# (close_compound is on, but not for a session whose end smbaccel cannot
# see)
KRB_KEYTAB_LINE= krb_proxy "" "[share held]" "write_behind = always" \
    "read_ahead = always" "flush_idle = 1s" "flush_max_age = 200s" "coalesce_size = 4M" \
    "" "[share closing]" "write_behind = always" "read_ahead = always" \
    "flush_idle = 60s" "flush_max_age = 300s" "coalesce_size = 4M"
seed=$((RANDOM * 32768 + RANDOM + 1))
SIZE=$(((LIFE + 40) * 10 * 1024))
info "seed $seed, first ticket's lifetime $LIFE s, $SIZE bytes in 1 KiB writes"

# pace FN CC CC2 ADDR PORT PATH [options]: writes until SIZE,
# re-authenticating
pace() {
	local fn=$1 cc=$2 cc2=$3 addr=$4 port=$5 path=$6; shift 6
	$fn env KRB5CCNAME="FILE:$cc" timeout -k 5 $((LIFE + 200)) "$PY" \
	    "$TESTS_DIR/krb_impacket.py" --host "$KHOST" --addr "$addr" \
	    --port "$port" --user "$ADDC_USER" --realm "$ADDC_REALM" \
	    --dialect 3.0 --every 0.1 --reauth-cc "$cc2" "$@" pace "$path" "$SIZE" "$seed"
}
# holds PATH ACKED LOST...: the server's file PATH (under its share
# directory) holds the pattern's first ACKED bytes except in the ranges
# OFF+LEN given
holds() {
	"$PY" - "$ADDC_MEM_SHARE_DIR/$1" "$seed" "$2" "${@:3}" <<'EOF'
import random, sys
path, seed, acked = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lost = [tuple(map(int, r.split("+"))) for r in sys.argv[4:]]
want = random.Random(seed).randbytes(acked)
got = open(path, "rb").read()
bad = 0
for i in range(0, acked, 1024):
    if any(o <= i < o + n for o, n in lost):
        continue
    if got[i:i + 1024] != want[i:i + 1024]:
        bad += 1
print("differing 1 KiB blocks outside the lost ranges: %d (file %d bytes, acked %d)"
      % (bad, len(got), acked))
sys.exit(1 if bad else 0)
EOF
}

krb_cc in_cli "$T/cli.cc" "$LIFE"
krb_cc in_dir "$T/dir.cc" "$LIFE"
krb_cc in_cli "$T/cli2.cc" 3600
krb_cc in_dir "$T/dir2.cc" 3600
snap u-0
lines0=$(wc -l < "$PROXY_LOG")
t0=$(now)
pace in_cli "$T/cli.cc" "$T/cli2.cc" 127.0.0.1 "$PROXY_PORT" viaproxy > "$T/proxy.out" 2>&1 &
p1=$!
pace in_dir "$T/dir.cc" "$T/dir2.cc" "$ADDC_MEM_DIR_IP" 445 direct > "$T/direct.out" 2>&1 &
p2=$!
pace in_cli "$T/cli.cc" "$T/cli2.cc" 127.0.0.1 "$PROXY_PORT" viaheld \
    --share held --tcon-every 2 --reauth-delay 3 > "$T/held.out" 2>&1 &
p3=$!
# a fourth closes the file right after its re-authentication: what was
# refused is written before the CLOSE with the ids smbaccel kept back for
# it (the one write after the re-authentication donates one id; 100 KiB
# takes two)
pace in_cli "$T/cli.cc" "$T/cli2.cc" 127.0.0.1 "$PROXY_PORT" viastop \
    --stop-after-reauth 1 > "$T/stop.out" 2>&1 &
p4=$!
# a fifth closes its file, all of it held, 10 s after its ticket's end
pace in_cli "$T/cli.cc" "$T/cli2.cc" 127.0.0.1 "$PROXY_PORT" viaclose \
    --share closing --every 1 --until $((LIFE + 10)) > "$T/close.out" 2>&1 &
p5=$!
# a sixth locks it first
pace in_cli "$T/cli.cc" "$T/cli2.cc" 127.0.0.1 "$PROXY_PORT" vialock \
    --share closing --every 1 --until $((LIFE + 10)) --lock-last > "$T/lock.out" 2>&1 &
p6=$!
# a seventh with a blocking LOCK
pace in_cli "$T/cli.cc" "$T/cli2.cc" 127.0.0.1 "$PROXY_PORT" viawait \
    --share closing --every 1 --until $((LIFE + 10)) --lock-last --lock-wait > "$T/wait.out" 2>&1 &
p7=$!
# an eighth resets its connection 10 s after its ticket's end, all it
# wrote held: the drain's flush is refused (the session expired), and a
# client that has gone can never re-authenticate, so it is lost and
# logged, and the connection closes (before: kept for a
# re-authentication that never came, draining for as long as smbaccel
# ran, the client's next connections waiting connect_timeout behind it)
pace in_cli "$T/cli.cc" "$T/cli2.cc" 127.0.0.1 "$PROXY_PORT" viavanish \
    --share closing --every 1 --until $((LIFE + 10)) --vanish > "$T/vanish.out" 2>&1 &
p8=$!
# a ninth logs off with its file open, all it wrote held: the LOGOFF is
# answered the expiry, and after the re-authentication what was held is
# written before it (before: forwarded, the held data lost)
pace in_cli "$T/cli.cc" "$T/cli2.cc" 127.0.0.1 "$PROXY_PORT" vialogoff \
    --share closing --every 1 --until $((LIFE + 10)) --logoff-last > "$T/logoff.out" 2>&1 &
p9=$!
BG_PIDS="$BG_PIDS $p1 $p2 $p3 $p4 $p5 $p6 $p7 $p8 $p9"
# how smbaccel holds the session: unkeyed for want of a keytab, unsigned
sleep 5
ctl conns --json > "$T/conns.json"
wait "$p1"; wait "$p2"; wait "$p3"; wait "$p4"; wait "$p5"; wait "$p6"; wait "$p7"; wait "$p8"; wait "$p9"
info "the nine clients done after $(elapsed "$t0") s"
# the vanished client's connection: its held data logged lost and the
# connection gone (not draining) within 20 s
n=200
until grep -q "file=viavanish .*acknowledged data lost" "$PROXY_LOG" &&
    ! ctl conns --json | grep -q '"draining"'; do
	sleep 0.1; n=$((n - 1))
	[ $n -gt 0 ] || fail "the vanished client: no loss logged, or a connection still draining, 20 s after the clients ended: $(ctl conns --json)"
done
snap u-1
deltas u-0 u-1
tail -n +"$((lines0 + 1))" "$PROXY_LOG" > "$T/run.log"
info "direct: $(tr '\n' ' ' < "$T/direct.out")"
info "through smbaccel: $(tr '\n' ' ' < "$T/proxy.out")"
info "through smbaccel, [held]: $(tr '\n' ' ' < "$T/held.out")"
info "through smbaccel, closing after the re-authentication: $(tr '\n' ' ' < "$T/stop.out")"
info "through smbaccel, [closing]: $(tr '\n' ' ' < "$T/close.out")"
info "through smbaccel, [closing], locking first: $(tr '\n' ' ' < "$T/lock.out")"
info "through smbaccel, [closing], a blocking LOCK first: $(tr '\n' ' ' < "$T/wait.out")"
info "through smbaccel, [closing], vanishing: $(tr '\n' ' ' < "$T/vanish.out")"
info "stats: sessions_keyed +$D_sessions_keyed writes_absorbed +$D_writes_absorbed deferred_errors +$D_deferred_errors sessions_server_expired +$D_sessions_server_expired"
grep -E 'expired|lost|re-authenticated|kept|written again|answered' "$T/run.log" | cut -c1-300 | sed 's/^/    proxy log: /'

# directly: the re-authentication works, nothing is lost
grep -q '^reauth acked=' "$T/direct.out" || fail "direct: the client never re-authenticated (no expiry seen)"
grep -q '^failed=' "$T/direct.out" && fail "direct: a write failed: $(grep '^failed=' "$T/direct.out")"
grep -qx "acked=$SIZE" "$T/direct.out" || fail "direct: not every write acknowledged"
holds direct "$SIZE" || fail "direct: the server's file is not what was written"

# through smbaccel
"$PY" - "$T/conns.json" <<'EOF' || fail "the session is not held unkeyed (no-keytab, kerberos, signing not required): $(cat "$T/conns.json")"
import json, sys
ss = [s for c in json.load(open(sys.argv[1]))["conns"] for s in c["sessions"]]
print("    sessions: %s" % [(s.get("why_not_keyed"), s.get("auth"), s.get("signing_required")) for s in ss])
sys.exit(0 if any(s.get("why_not_keyed") == "no-keytab" and s.get("auth") == "kerberos"
                  and not s.get("keyed") and not s.get("signing_required") for s in ss) else 1)
EOF
assert_eq 0 "$D_sessions_keyed" "sessions_keyed"
assert_ge 100 "$D_writes_absorbed" "writes absorbed before the expiry"
grep -q '^reauth acked=' "$T/proxy.out" || fail "through smbaccel: the client never re-authenticated"
assert_eq 8 "$D_sessions_server_expired" "sessions_server_expired"
grep -q 'the server expired the session (STATUS_NETWORK_SESSION_EXPIRED' "$T/run.log" ||
    fail "no log line saying the server expired the session"
grep -q 're-authenticated after the server expired it: acted on again' "$T/run.log" ||
    fail "no log line saying the session was taken up again"
acked=$(sed -n 's/^acked=//p' "$T/proxy.out")
[ -n "$acked" ] || fail "through smbaccel: no result from the client: $(tail -n 3 "$T/proxy.out")"
# its writes are all absorbed: the first request of the session the
# server refuses is one of smbaccel's flushes, which must be kept and
# written again after the re-authentication, not lost
lost() {
	sed -n -e "s/.* file=$1 offset=\([0-9]*\) length=\([0-9]*\) upstream write failed.*acknowledged data lost.*/\1+\2/p" \
	    -e "s/.* file=$1 offset=\([0-9]*\) length=\([0-9]*\) not written: the server has expired.*/\1+\2/p" \
	    -e "s/.* file=$1 offset=\([0-9]*\) length=\([0-9]*\) flush starved of message ids.*/\1+\2/p" "$T/run.log"
}
[ -z "$(lost viaproxy)" ] || fail "through smbaccel: acknowledged data lost at the expiry: $(grep 'file=viaproxy .*lost' "$T/run.log" | cut -c1-250)"
grep -q 'file=viaproxy offset=[0-9]* length=[0-9]* upstream write refused: the server expired the session.*kept, to be written again' "$T/run.log" ||
    fail "through smbaccel: no flush refused at the expiry and kept (the expiry was not met by a flush?)"
grep -q 'file=viaproxy offset=[0-9]* length=[0-9]* refused at the session.s expiry: written again' "$T/run.log" ||
    fail "through smbaccel: what the server refused was not written again"
assert_ge 1 "$D_expiry_kept_bytes" "expiry_kept_bytes"
assert_eq "$D_expiry_kept_bytes" "$D_expiry_resent_bytes" "expiry_resent_bytes (all that was kept)"
grep -q '^failed=' "$T/proxy.out" && fail "through smbaccel: a write failed: $(grep '^failed=' "$T/proxy.out")"
assert_eq "$SIZE" "$acked" "bytes acknowledged through smbaccel"
holds viaproxy "$SIZE" || fail "through smbaccel: the server's file does not hold every acknowledged byte"
info "through smbaccel: the flush refused at the expiry was kept and written after the re-authentication"

# the fourth: closed right after the re-authentication
sacked=$(sed -n 's/^acked=//p' "$T/stop.out")
grep -q '^reauth acked=' "$T/stop.out" || fail "closing client: it never re-authenticated"
grep -qx closed "$T/stop.out" || fail "closing client: the file was not closed cleanly: $(tr '\n' ' ' < "$T/stop.out")"
[ -z "$(lost viastop)" ] || fail "closing client: acknowledged data lost: $(grep 'file=viastop .*lost' "$T/run.log" | cut -c1-250)"
grep -q 'file=viastop offset=[0-9]* length=[0-9]* refused at the session.s expiry: written again' "$T/run.log" ||
    fail "closing client: no flush of it refused at the expiry and written again"
holds viastop "$sacked" || fail "closing client: the server's file does not hold every acknowledged byte"
info "closing client: $sacked bytes acknowledged, the refused flush written before its CLOSE"

# answered_expiry FILE OUT CMD WHAT: the client of FILE (output OUT) sent
# CMD (CLOSE or LOCK) first after its ticket's end, with data held: CMD
# answered the expiry by smbaccel, sent again after the re-authentication
# and carried out (WHAT: the line the client then prints), nothing lost,
# every acknowledged byte on the server's disk
answered_expiry() {
	local f=$1 out=$2 cmd=$3 what=$4 n lc
	lc=$(echo "$cmd" | tr 'A-Z' 'a-z')
	n=$(sed -n 's/^acked=//p' "$out")
	[ -n "$n" ] || fail "[closing] $f: no result from the client: $(tail -n 3 "$out")"
	grep -q '^failed=' "$out" && fail "[closing] $f: a write failed: $(grep '^failed=' "$out")"
	grep -q '^reauth acked=' "$out" &&
	    fail "[closing] $f: a write met the expiry (its buffer was flushed before the $cmd?)"
	grep -q "^reauth-$lc acked=" "$out" ||
	    fail "[closing] $f: the $cmd was not answered STATUS_NETWORK_SESSION_EXPIRED: $(tr '\n' ' ' < "$out")"
	grep -qx "$what" "$out" || fail "[closing] $f: no '$what' after the $cmd: $(tr '\n' ' ' < "$out")"
	grep -q "file=$f $cmd answered STATUS_NETWORK_SESSION_EXPIRED by smbaccel" "$T/run.log" ||
	    fail "[closing] $f: no log line saying smbaccel answered the $cmd the expiry"
	[ -z "$(lost "$f")" ] || fail "[closing] $f: acknowledged data lost: $(grep "file=$f .*lost" "$T/run.log" | cut -c1-250)"
	grep -q "file=$f offset=[0-9]* length=[0-9]* refused at the session.s expiry: written again" "$T/run.log" ||
	    fail "[closing] $f: what the server refused was not written again"
	holds "closing/$f" "$n" || fail "[closing] $f: the server's file does not hold every acknowledged byte"
	assert_ge 102400 "$n" "[closing] $f: bytes acknowledged before the $cmd"
	info "[closing] $f: $n bytes held to the $cmd; it was answered the expiry, sent again after the re-authentication and carried out, the data written before it"
}
# the CLOSE, first to meet the expiry, answered it; closed again after
# the re-authentication, what was held written first
answered_expiry viaclose "$T/close.out" CLOSE closed
assert_ge 1 "$(stat_get closes_not_compounded.unseen-expiry)" "closes_not_compounded.unseen-expiry (viaclose's CLOSE)"
# the same with a LOCK first (vialock; viawait: a blocking one); its
# CLOSE then meets nothing
for lk in vialock:lock viawait:wait; do
	f=${lk%:*} out=$T/${lk#*:}.out
	answered_expiry "$f" "$out" LOCK locked
	grep -q '^reauth-close' "$out" && fail "[closing] $f: its CLOSE met the expiry again"
	grep -qx closed "$out" || fail "[closing] $f: the file was not closed cleanly: $(tr '\n' ' ' < "$out")"
done
# the LOGOFF (vialogoff), the whole session's held data written before it
lacked=$(sed -n 's/^acked=//p' "$T/logoff.out")
grep -q '^reauth-logoff acked=' "$T/logoff.out" ||
    fail "[closing] vialogoff: the LOGOFF was not answered STATUS_NETWORK_SESSION_EXPIRED: $(tr '\n' ' ' < "$T/logoff.out")"
grep -qx loggedoff "$T/logoff.out" || fail "[closing] vialogoff: no LOGOFF after the re-authentication: $(tr '\n' ' ' < "$T/logoff.out")"
grep -q "LOGOFF answered STATUS_NETWORK_SESSION_EXPIRED by smbaccel" "$T/run.log" ||
    fail "[closing] vialogoff: no log line saying smbaccel answered the LOGOFF the expiry"
[ -z "$(lost vialogoff)" ] || fail "[closing] vialogoff: acknowledged data lost: $(grep "file=vialogoff .*lost" "$T/run.log" | cut -c1-250)"
holds closing/vialogoff "$lacked" || fail "[closing] vialogoff: the server's file does not hold every acknowledged byte"
info "[closing] vialogoff: $lacked bytes held to the LOGOFF; it was answered the expiry, sent again after the re-authentication, the data written before it"
assert_eq 4 "$D_expiry_answered" "expiry_answered (the CLOSE, the two LOCKs, the LOGOFF)"

# [held]: the server's expiry seen on a TREE_CONNECT with data buffered
# (or, about one run in 250, on one of its flushes: kept as the first
# client's), the client taking 3 s to re-authenticate, the idle timer due
# meanwhile: held, and written after the re-authentication
grep -q '^reauth acked=' "$T/held.out" || fail "[held]: the client never re-authenticated"
hacked=$(sed -n 's/^acked=//p' "$T/held.out")
[ -z "$(lost viaheld)" ] || fail "[held]: buffered data was lost: $(grep 'file=viaheld .*lost' "$T/run.log" | cut -c1-250)"
grep -q '^failed=' "$T/held.out" && fail "[held]: a write failed: $(grep '^failed=' "$T/held.out")"
assert_eq "$SIZE" "$hacked" "[held]: bytes acknowledged"
holds held/viaheld "$SIZE" || fail "[held]: the server's file does not hold every acknowledged byte"
if grep -q 'the server expired the session (STATUS_NETWORK_SESSION_EXPIRED to a TREE_CONNECT)' "$T/run.log"; then
	info "[held]: the expiry seen on a TREE_CONNECT; what was buffered was held through the re-authentication and written"
else
	info "[held]: the expiry met one of its flushes this run; kept and written again"
fi
proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
# the vanished client: what it was acknowledged is on the server's disk
# but for the ranges logged lost (what was held when it went; its
# connection closed above)
vacked=$(sed -n 's/^acked=//p' "$T/vanish.out")
grep -q '^vanished' "$T/vanish.out" || fail "the eighth client did not vanish: $(cat "$T/vanish.out")"
vlost=$(lost viavanish)
[ -n "$vlost" ] || fail "the vanished client: nothing logged lost"
holds closing/viavanish "$vacked" $vlost ||
    fail "the vanished client: acknowledged bytes neither on the server's disk nor logged lost"
info "vanishing client: $vacked bytes acknowledged, lost and logged: $vlost, the connection closed"

info "PASS"
