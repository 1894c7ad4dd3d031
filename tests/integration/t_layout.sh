#!/bin/bash
# sanitizer: no (reads the source tree, runs no daemon)
# test-timeout: 60
# The layout rules of docs/design.md ("Layers"): pure folders include no
# libev and no engine header, includes point down the engine's layers,
# the relay layer's files include and call one way, relay.c stays under 1,000 lines
# and no file under proxy/ or coalesce/ passes 1,300 (tests/check-layout.sh).
# Then the check is shown to fail: a copy of the tree with one violation
# of each kind must be refused, naming each.
. "$(dirname "$0")/lib.sh"

bash "$TOP/tests/check-layout.sh" "$TOP" || fail "the tree breaks its layout rules (above)"

# the check itself must be able to fail
mkdir -p "$T/tree"
(cd "$TOP" && tar cf - proxy coalesce policy) | (cd "$T/tree" && tar xf -) ||
    fail "cannot copy the tree"
sed -i '0,/#include "proxy\/smb2\/smb2.h"/s||#include "proxy/smb2/smb2.h"\n#include <ev.h>\n#include "proxy/conn.h"|' \
    "$T/tree/proxy/auth/ntlm.c"
printf 'static void\nf(struct px_conn *c)\n{\n\tpx_wb_flush_all(c, 0);\n}\n' >> "$T/tree/proxy/emit.c"
sed -i 's|#include "proxy/keyed.h"|#include "proxy/keyed.h"\n#include "proxy/writebehind.h"|' "$T/tree/proxy/emit.c"
for i in $(seq 1 1000); do echo "/* */"; done >> "$T/tree/proxy/relay.c"
for i in $(seq 1 1400); do echo "/* */"; done >> "$T/tree/coalesce/extent.c"
bash "$TOP/tests/check-layout.sh" "$T/tree" > "$T/neg.out" 2>&1
rc=$?
cat "$T/neg.out"
assert_eq 1 "$rc" "exit status of the check on a broken tree"
for want in 'ntlm.c:.*includes libev' 'ntlm.c:.*includes proxy/conn.h' \
    'emit.c:.*calls into writebehind.c' 'emit.c:.*includes proxy/writebehind.h, a file above it' \
    'relay.c: .* lines' 'extent.c: .* lines'; do
	grep -q -- "$want" "$T/neg.out" || fail "the check did not report: $want"
done
info "layout rules hold; a tree breaking each of them is refused"
