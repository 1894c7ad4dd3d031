#!/bin/bash
# sanitizer: no (performance figures; uses bin/smbaccel)
# test-timeout: 240
# tests/bench/krb at tiny sizes, so that its code cannot rot: the AD DC
# bed behind two wanlinks (20 ms / 100 Mbit/s), signed and sealed at
# SMB3_11, 20 x 1 KiB direct and 4 MiB in 1 KiB writes through smbaccel
# holding the DC's keytab.  Asserts only that the bench exited 0 (it exits
# 1 on a failed run, wrong data on the DC's disk or a session that was not
# keyed with Kerberos and signed/sealed), and that every row has its
# figures, data ok, the DC's view of the session (AES-128-GMAC signing;
# sealed: a cipher) and, through smbaccel, the session keyed with
# auth=kerberos.  Never asserts a speed.
. "$(dirname "$0")/lib.sh"
require_smbaccel "the Kerberos WAN bench"

TMPDIR=$T bash "$TOP/tests/bench/krb" --configs signed,sealed --mib 4 --direct-count 20 \
    > "$T/bench.out" 2>&1
rc=$?
grep -v '^[0-9:.]* smbaccel\[' "$T/bench.out"
[ "$rc" -eq 77 ] && skip "the bench skipped: $(grep '^SKIP' "$T/bench.out")"
assert_eq 0 "$rc" "bench exit status"
"$PY" - "$T/bench.out" <<'EOF' || fail "the bench's table is incomplete"
import re, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"^(signed|sealed) +SMB3_11 +1 +(direct|smbaccel) +(SMB3_11 signing=\S+ encryption=\S+) +(.*)$", line)
    if m:
        rows[(m.group(1), m.group(2))] = (m.group(3), m.group(4).split())
bad = 0
for cfg in ("signed", "sealed"):
    for via in ("direct", "smbaccel"):
        r = rows.get((cfg, via))
        if r is None:
            print("row %s %s missing" % (cfg, via)); bad += 1; continue
        dc, f = r
        # MiB s MB/s link cpu_s cpu_s/GiB drops load ...
        for what, v in (("MiB", f[0]), ("s", f[1]), ("MB/s", f[2])):
            try:
                if float(v) <= 0:
                    raise ValueError
            except ValueError:
                print("%s %s: no %s figure (%r)" % (cfg, via, what, v)); bad += 1
        if not f[3].endswith("%"):
            print("%s %s: no link fraction (%r)" % (cfg, via, f[3])); bad += 1
        if "signing=AES-128-GMAC" not in dc:
            print("%s %s: the DC shows %r" % (cfg, via, dc)); bad += 1
        if (cfg == "sealed") == dc.endswith("encryption=-"):
            print("%s %s: encryption on the DC: %r" % (cfg, via, dc)); bad += 1
        rest = " ".join(f)
        if not rest.endswith("(ok)"):
            print("%s %s: data %r" % (cfg, via, rest)); bad += 1
        if via == "smbaccel":
            for v in (f[4], f[5]):
                try:
                    float(v)
                except ValueError:
                    print("%s smbaccel: no CPU figure (%r)" % (cfg, v)); bad += 1
            if "keyed=true why=- auth=kerberos;" not in rest or "keyed+1/unkeyed+0" not in rest:
                print("%s smbaccel: not keyed with Kerberos: %r" % (cfg, rest)); bad += 1
            if cfg == "sealed" and not re.search(r" enc\+[1-9]", rest):
                print("sealed smbaccel: nothing encrypted: %r" % rest); bad += 1
print("%d rows, %d problems" % (len(rows), bad))
sys.exit(1 if bad else 0)
EOF
grep -q '^signed SMB3_11: through smbaccel [0-9.]* MB/s .*smbaccel / direct = [0-9]*x' "$T/bench.out" ||
    fail "no summary line for signed SMB3_11"
grep -q 'keyed dialect=3.1.1 .*auth=kerberos .*ticket=' "$T/bench.out" ||
    fail "the bench did not list smbaccel's keyed Kerberos sessions"
info "PASS"
