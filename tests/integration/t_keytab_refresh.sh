#!/bin/bash
# test-timeout: 120
# deploy/smbaccel-keytab's refresh, as smbaccel-keytab@.service runs it
# (--reload), against a running smbaccel holding the keytab; no DC needed
# (keys mode):
#  1. a new keytab: written (root, 0600), smbaccel reloaded, which reads it
#     ("policy reloaded" in its log);
#  2. the same keys again: "unchanged", the file left alone (mtime and
#     inode), no reload; the same keys in a file made 0644 and another
#     user's: "unchanged" but "secured", root and 0600 again (smbaccel
#     refuses it otherwise), the same inode, and smbaccel reloaded;
#  3. a new key version: written, reloaded, klist shows it;
#  4. smbaccel refuses the reload (its policy file broken meanwhile): exit
#     1 with "smbaccel did not take the new keytab", the file put back as
#     it was (what smbaccel still uses), smbaccel logs "reload failed" and
#     keeps running; once the policy is fixed, the next run writes the new
#     keys again and smbaccel takes them;
#  5. smbaccel not running (no socket; a socket nobody listens on): exit
#     0, "smbaccel is not running" on stderr;
#  6. an existing file that is not a keytab is replaced, not "unchanged";
#  7. an output file in a directory that does not exist: exit 1 and one
#     line on stderr naming the file, no Python traceback (keys mode, and
#     samba mode when samba-tool is installed: it fails before running it).
# After 1, 3 and 4, `smbaccelctl keytabs` must show the keys smbaccel
# holds (principal, kvno, enctype) and when it read them: the new ones
# after a reload, the old ones (and the old time) after a refused one.
. "$(dirname "$0")/lib.sh"
require_smbaccel "keytab refresh"
command -v klist >/dev/null || skip "klist not installed (krb5-user)"
KTOOL=$TOP/deploy/smbaccel-keytab
KTF=$T/fs1.keytab
K1=aes256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
K2=aes128:ffeeddccbbaa99887766554433221100

# refresh LABEL KVNO KEY [options]: the keys mode with --reload; output in
# $T/LABEL.out, exit status in RC, new "policy reloaded" lines in RELOADS
refresh() {
	local l=$1 kvno=$2 key=$3 n0; shift 3
	n0=$(grep -c "policy reloaded" "$PROXY_LOG")
	PATH=$TOP/bin:$PATH "$PY" "$KTOOL" keys --principal "FS1\$@EXAMPLE.TEST" \
	    --principal "cifs/fs1.example.test@EXAMPLE.TEST" --kvno "$kvno" --key "$key" \
	    -o "$KTF" --reload --control-socket "${SOCK:-$CTL_SOCK}" "$@" > "$T/$l.out" 2>&1
	RC=$?
	sleep 0.2
	RELOADS=$(($(grep -c "policy reloaded" "$PROXY_LOG") - n0))
	info "$l: exit $RC, $(tr '\n' ' ' < "$T/$l.out" | cut -c1-300) (policy reloaded x$RELOADS)"
}
kvnos() { klist -k "$KTF" | awk '$2 ~ /@/ {print $1}' | sort -u | tr '\n' ' '; }
# held: the keys smbaccel holds, "KVNO ENCTYPE PRINCIPAL" a line, sorted,
# from smbaccelctl keytabs --json (one keytab, $KTF; no ticket may have
# lacked a key); held_at: when smbaccel read it (seconds since the epoch)
held() {
	local j
	j=$(ctl keytabs --json) || fail "smbaccelctl keytabs failed"
	"$PY" - "$j" "$KTF" <<'EOF' || fail "smbaccelctl keytabs --json: $j"
import json, sys
d = json.loads(sys.argv[1])
assert [k["path"] for k in d["keytabs"]] == [sys.argv[2]], d
assert d["no_matching_key"] is None, d
for k in sorted(d["keytabs"][0]["keys"], key=lambda k: (k["kvno"], k["principal"])):
    print(k["kvno"], k["enctype"], k["principal"])
EOF
}
held_at() {
	ctl keytabs --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["keytabs"][0]["loaded"])' ||
	    fail "smbaccelctl keytabs --json: no read time"
}

# smbaccel with a keytab, before the file exists it cannot start: a first
# one by hand
"$PY" "$KTOOL" keys --principal "FS1\$@EXAMPLE.TEST" --kvno 1 --key "$K1" -o "$KTF" > /dev/null ||
    fail "the first keytab"
PROXY_UPSTREAM=127.0.0.1:9 start_proxy "keytab = $KTF"

info "1. a new keytab"
refresh new 1 "$K1"
assert_eq 0 "$RC" "1: exit status"
grep -q "^wrote 2 keys to $KTF\$" "$T/new.out" || fail "1: not written"
grep -q "^smbaccel reloaded" "$T/new.out" || fail "1: no reload"
assert_eq 1 "$RELOADS" "1: policy reloads"
assert_eq "0 600" "$(stat -c '%u %a' "$KTF")" "1: owner and mode"
assert_eq "1 aes256-cts-hmac-sha1-96 FS1\$@EXAMPLE.TEST
1 aes256-cts-hmac-sha1-96 cifs/fs1.example.test@EXAMPLE.TEST" "$(held)" "1: the keys smbaccel holds"
ctl keytabs > "$T/keytabs.txt" || fail "smbaccelctl keytabs failed"
sed 's/^/    keytabs: /' "$T/keytabs.txt"
grep -q "^keytab $KTF: 2 keys, read 20[0-9-]* [0-9:]* UTC\$" "$T/keytabs.txt" ||
    fail "1: smbaccelctl keytabs: no 'keytab $KTF: 2 keys, read ...' line"
grep -q "^no ticket since start lacked a key\$" "$T/keytabs.txt" || fail "1: smbaccelctl keytabs: no miss line"
at1=$(held_at)

info "2. the same keys"
m0=$(stat -c %Y.%i "$KTF")
sleep 1
refresh same 1 "$K1"
assert_eq 0 "$RC" "2: exit status"
grep -q "^unchanged: $KTF already holds these 2 keys\$" "$T/same.out" || fail "2: not 'unchanged'"
grep -q "reloaded" "$T/same.out" && fail "2: reloaded though nothing changed"
assert_eq 0 "$RELOADS" "2: policy reloads"
assert_eq "$m0" "$(stat -c %Y.%i "$KTF")" "2: mtime.inode of the keytab"
chmod 0644 "$KTF" && chown 1:1 "$KTF" || fail "2: cannot chmod/chown the keytab"
refresh loose 1 "$K1"
assert_eq 0 "$RC" "2: exit status with a 0644 keytab of uid 1"
grep -q "^unchanged: $KTF already holds these 2 keys\$" "$T/loose.out" || fail "2: 0644: not 'unchanged'"
grep -q "^secured $KTF: owner root, mode 0600 (it was uid 1, mode 0644)\$" "$T/loose.out" ||
    fail "2: 0644: not 'secured'"
assert_eq "0 600" "$(stat -c '%u %a' "$KTF")" "2: owner and mode after the run on a 0644 keytab"
assert_eq "${m0#*.}" "$(stat -c %i "$KTF")" "2: inode of the secured keytab"
assert_eq 1 "$RELOADS" "2: policy reloads after securing the keytab"

info "3. a new key version"
refresh kvno2 2 "$K2"
assert_eq 0 "$RC" "3: exit status"
assert_eq 1 "$RELOADS" "3: policy reloads"
assert_eq "2 " "$(kvnos)" "3: kvnos in the keytab"
assert_eq "2 aes128-cts-hmac-sha1-96 FS1\$@EXAMPLE.TEST
2 aes128-cts-hmac-sha1-96 cifs/fs1.example.test@EXAMPLE.TEST" "$(held)" "3: the keys smbaccel holds"
at3=$(held_at)
[ "$at3" -ge "$at1" ] || fail "3: smbaccelctl keytabs: read at $at3, before the first keytab ($at1)"

info "4. smbaccel refuses the reload"
cp "$PROXY_CONF" "$T/good.conf"
sleep 1     # a reload now would show in smbaccelctl keytabs' read time
echo "no_such_setting = 1" >> "$PROXY_CONF"
nlog=$(wc -l < "$PROXY_LOG")
refresh refused 3 "$K1"
assert_eq 1 "$RC" "4: exit status when smbaccel refuses the reload"
grep -q "smbaccel did not take the new keytab" "$T/refused.out" || fail "4: no 'did not take' message"
assert_eq 0 "$RELOADS" "4: policy reloads"
tail -n +"$((nlog + 1))" "$PROXY_LOG" | grep -q "reload failed" || fail "4: smbaccel logged no 'reload failed'"
proxy_alive || fail "4: smbaccel died on the refused reload"
grep -q "the file was put back as it was" "$T/refused.out" || fail "4: no 'put back' message"
assert_eq "2 " "$(kvnos)" "4: kvnos in the keytab put back (what smbaccel uses)"
assert_eq "2 aes128-cts-hmac-sha1-96 FS1\$@EXAMPLE.TEST
2 aes128-cts-hmac-sha1-96 cifs/fs1.example.test@EXAMPLE.TEST" "$(held)" "4: the keys smbaccel still holds"
assert_eq "$at3" "$(held_at)" "4: when smbaccel read its keytab"
cp "$T/good.conf" "$PROXY_CONF"
# the next run sees the change again, and smbaccel takes it now
refresh retried 3 "$K1"
assert_eq 0 "$RC" "4: exit status of the next run"
assert_eq 1 "$RELOADS" "4: policy reloads of the next run"
assert_eq "3 " "$(kvnos)" "4: kvnos after the next run"
assert_eq "3 aes256-cts-hmac-sha1-96 FS1\$@EXAMPLE.TEST
3 aes256-cts-hmac-sha1-96 cifs/fs1.example.test@EXAMPLE.TEST" "$(held)" "4: the keys smbaccel holds after the next run"

info "5. smbaccel not running"
SOCK=$T/none.sock refresh none 4 "$K2"
assert_eq 0 "$RC" "5: exit status without a socket"
grep -q "smbaccel is not running" "$T/none.out" || fail "5: no 'not running' message"
"$PY" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/stale.sock" ||
    fail "cannot make a stale socket"
SOCK=$T/stale.sock refresh stale 5 "$K1"
assert_eq 0 "$RC" "5: exit status with a socket nobody listens on"
grep -q "smbaccel is not running" "$T/stale.out" || fail "5: no 'not running' message (stale socket)"
assert_eq "5 " "$(kvnos)" "5: the keytab written all the same"

info "6. a file that is not a keytab"
head -c 100 /dev/urandom > "$KTF"
refresh garbage 5 "$K1"
assert_eq 0 "$RC" "6: exit status"
grep -q "^wrote 2 keys to $KTF\$" "$T/garbage.out" || fail "6: the garbage was not replaced"
assert_eq "5 " "$(kvnos)" "6: kvnos"
assert_eq 1 "$RELOADS" "6: policy reloads"

info "7. an output file in a directory that does not exist"
for mode in keys samba; do
	if [ $mode = keys ]; then
		set -- keys --principal "FS1\$@EXAMPLE.TEST" --key "$K1"
	else
		command -v samba-tool >/dev/null || { info "7: no samba-tool, samba mode not tried"; continue; }
		set -- samba --principal 'FS1$'
	fi
	"$PY" "$KTOOL" "$@" -o "$T/nodir/fs1.keytab" > "$T/nodir-$mode.out" 2> "$T/nodir-$mode.err"
	RC=$?
	info "7: $mode: exit $RC, stderr: $(cat "$T/nodir-$mode.err")"
	assert_eq 1 "$RC" "7: $mode: exit status"
	grep -q Traceback "$T/nodir-$mode.err" && fail "7: $mode: a Python traceback"
	assert_eq 1 "$(wc -l < "$T/nodir-$mode.err")" "7: $mode: lines on stderr"
	grep -q "^smbaccel-keytab: cannot write $T/nodir/fs1.keytab: " "$T/nodir-$mode.err" ||
	    fail "7: $mode: stderr does not name the file"
done

proxy_alive || fail "proxy died"
stop_proxy
assert_eq 0 "$PROXY_RC" "smbaccel exit status after SIGTERM"
info "PASS"
