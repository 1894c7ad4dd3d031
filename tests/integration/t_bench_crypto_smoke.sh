#!/bin/bash
# sanitizer: no (performance figures; uses bin/smbaccel)
# test-timeout: 300
# tests/bench/crypto at tiny sizes, so that its code cannot rot: the
# unsigned baseline, one signing algorithm and one cipher, one round.
# Asserts only that the bench exited 0 (it exits 1 on a failed run, wrong
# data on disk or a session that was not keyed), that every row has CPU
# figures, a floor where one applies, data ok and the session keyed, the
# per-op line with its paired figure and wake-ups per op, its split into
# user and system time, and
# that bin/cryptofloor gives a number for every algorithm and for the
# plain relay.  --instructions (smbaccel under callgrind): every config
# has a count with its data checked, an unsigned session's WRITE costs
# nothing in OpenSSL, and a keyed one's costs at least 1000 instructions
# there (its bytes are verified, and signed or sealed again in the
# coalesced WRITE: about 6000 for GMAC), so the count is seen to attribute
# the keyed work to OpenSSL and no crypto to an unsigned session.  The
# bootstrap interval the bench puts on a median of 5 rounds or more
# (tests/bench/medci.awk) is checked on figures whose answer is known.
# Never asserts a speed.
. "$(dirname "$0")/lib.sh"
require_smbaccel "the keyed-session CPU bench"
[ -x "$TOP/bin/cryptofloor" ] || skip "bin/cryptofloor not built"

for a in hmac-sha256 aes-cmac aes-gmac aes128-ccm aes128-gcm aes256-ccm aes256-gcm; do
	out=$("$TOP/bin/cryptofloor" "$a" 1K 1M --mib 4 --reps 1) || fail "cryptofloor $a failed: $out"
	v=$(sed -n 's/.*floor_s_per_gib=\([0-9.]*\).*/\1/p' <<<"$out")
	awk -v v="$v" 'BEGIN { exit !(v > 0) }' || fail "cryptofloor $a: no figure in '$out'"
done
"$TOP/bin/cryptofloor" rot13 1K >/dev/null 2>&1 && fail "cryptofloor accepted an unknown algorithm"
# the relay floors: 4 MiB through each relay (its sink checks the count)
for a in relay relay-splice relay-tee; do
	out=$("$TOP/bin/cryptofloor" "$a" 1M --mib 4 --reps 1) || fail "cryptofloor $a failed: $out"
	v=$(sed -n 's/.*relay_s_per_gib=\([0-9.]*\).*/\1/p' <<<"$out")
	awk -v v="$v" 'BEGIN { exit !(v > 0) }' || fail "cryptofloor $a: no figure in '$out'"
done

# the interval the bench gives a paired median with 5 rounds or more
# (tests/bench/medci.awk): equal figures give a point, one figure none, the
# same input the same interval, a shift of every figure shifts it by as
# much, and it holds the median within the figures' range
CI=$TOP/tests/bench/medci.awk
assert_eq "5 5" "$(echo "5 5 5 5 5" | awk -f "$CI")" "interval of equal figures"
echo 7 | awk -f "$CI" >/dev/null && fail "medci.awk gave an interval of one figure"
xs="12 3 21 11 24 9 14 4 17 4"
read -r lo hi <<<"$(echo "$xs" | awk -f "$CI")"
assert_eq "$lo $hi" "$(echo "$xs" | awk -f "$CI")" "the same figures twice"
awk -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(3 <= lo && lo < 11.5 && 11.5 < hi && hi <= 24) }' ||
	fail "interval $lo .. $hi of '$xs' does not hold the median 11.5 within 3 .. 24"
read -r slo shi <<<"$(echo "$xs" | awk '{ for (i = 1; i <= NF; i++) printf "%s ", $i + 100 }' | awk -f "$CI")"
awk -v a="$lo" -v b="$hi" -v c="$slo" -v d="$shi" 'BEGIN { exit !(c - a == 100 && d - b == 100) }' ||
	fail "figures moved by 100 moved the interval from $lo .. $hi to $slo .. $shi"
read -r wlo whi <<<"$(echo "$xs" | awk -v level=50 -f "$CI")"
awk -v a="$lo" -v b="$hi" -v c="$wlo" -v d="$whi" 'BEGIN { exit !(a <= c && d <= b) }' ||
	fail "the 50% interval $wlo .. $whi is not inside the 90% one $lo .. $hi"

# 16 MiB of 1 KiB writes: the user + system split counts 1/100 s clock
# ticks, and at 2 MiB a config costing 13 ms of CPU can get none (ci24:
# no split line for gmac); 16 MiB costs 100-200 ms, 10-20 ticks.
TMPDIR=$T bash "$TOP/tests/bench/crypto" --configs unsigned,gmac,ccm128 --reps 1 \
    --kib-mib 16 --mib-mib 16 --floor-mib 8 --instructions 1024 > "$T/bench.out" 2>&1
rc=$?
cat "$T/bench.out"
assert_eq 0 "$rc" "bench exit status"
# rows: config, negotiated, | 1K cpu median floor ratio us/op median MB/s
# data | 1M cpu median floor ratio accel direct a/d data
"$PY" - "$T/bench.out" <<'EOF' || fail "the bench's table is incomplete"
import re, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"^(unsigned|gmac|ccm128) +(.*)$", line)
    if m and "|" in line:
        rows[m.group(1)] = [p.split() for p in line.split("|")[1:]]
bad = 0
for cfg in ("unsigned", "gmac", "ccm128"):
    r = rows.get(cfg)
    if r is None or len(r) != 2 or len(r[0]) != 8 or len(r[1]) != 8:
        print("row %s missing or malformed: %r" % (cfg, r)); bad += 1; continue
    k, m = r
    for what, v in (("1K cpu", k[0]), ("us/op", k[4]), ("1M cpu", m[0]),
                    ("accel MB/s", m[4]), ("direct MB/s", m[5])):
        try:
            float(v)
        except ValueError:
            print("%s: no %s figure (%r)" % (cfg, what, v)); bad += 1
    if cfg != "unsigned":
        for what, v in (("1K floor", k[2]), ("1M floor", m[2])):
            try:
                if float(v) <= 0:
                    raise ValueError
            except ValueError:
                print("%s: no %s (%r)" % (cfg, what, v)); bad += 1
    if k[7] != "ok" or m[7] != "ok":
        print("%s: data %s / %s" % (cfg, k[7], m[7])); bad += 1
print("%d rows, %d problems" % (len(rows), bad))
sys.exit(1 if bad else 0)
EOF
grep -Eq "^not looked at, [0-9.]+ s/GiB; splice \+ tee \+ read, the bytes seen, [0-9.]+ s/GiB; read/write: [0-9.]+ s/GiB$" "$T/bench.out" || fail "no relay floor line"
grep -Eq '^gmac: 1 KiB writes cost .*; paired by round: median [-+][0-9]+% \([-+][0-9]+% \.\. [-+][0-9]+%\); ' "$T/bench.out" ||
	fail "no paired per-op figure for gmac"
grep -Eq '^gmac: 1 KiB writes user \+ system us/op [0-9]+\.[0-9]+ \+ [0-9]+\.[0-9]+, unsigned [0-9]+\.[0-9]+ \+ [0-9]+\.[0-9]+ \(medians; ' "$T/bench.out" ||
	fail "no user and system split of gmac's per-op figure"
grep -Eq '^gmac: 1 KiB writes cost .*; wake-ups/op [0-9]+\.[0-9]+, unsigned [0-9]+\.[0-9]+ \(medians\)$' "$T/bench.out" ||
	fail "no wake-ups per op figure for gmac"
grep -Eq '^gmac: 1 MiB writes .* floor \+ relay [0-9.]+: [0-9.]+x$' "$T/bench.out" ||
	fail "no floor + relay figure for gmac"
grep -Eq '^  gmac: keyed\+1/' "$T/bench.out" || fail "the gmac session was not keyed"
grep -Eq '^  ccm128: keyed\+1/.* enc=[1-9]' "$T/bench.out" || fail "the ccm128 session was not keyed and sealed"
"$PY" - "$T/bench.out" <<'EOF' || fail "the instruction counts are missing or wrong"
import re, sys
rows, sec = {}, False
for line in open(sys.argv[1]):
    if line.startswith("smbaccel's own instructions per 1 KiB WRITE"):
        sec = True
    m = re.match(r"^(unsigned|gmac|ccm128) +(\d+) +\S+ +(?:\(unsigned\w*\) +)?(\d+) +(\S+)$", line)
    if sec and m:
        rows[m.group(1)] = (int(m.group(2)), int(m.group(3)), m.group(4))
bad = 0 if sec else 1
for cfg in ("unsigned", "gmac", "ccm128"):
    if cfg not in rows:
        print("no instruction count for %s" % cfg); bad += 1; continue
    op, cr, data = rows[cfg]
    print("%s: %d instructions per write, %d in libcrypto, data %s" % (cfg, op, cr, data))
    if data != "ok" or op <= 0 or cr > op:
        print("%s: implausible row" % cfg); bad += 1
    if cfg == "unsigned" and cr >= 100:
        print("unsigned: %d libcrypto instructions per write" % cr); bad += 1
    if cfg != "unsigned" and cr < 1000:
        print("%s: only %d libcrypto instructions per write" % (cfg, cr)); bad += 1
sys.exit(1 if bad else 0)
EOF
info "PASS"
