#!/bin/bash
# test-timeout: 240
# sanitizer: no (runs other tests, which get the sanitized daemon themselves)
# Issue 11, test hygiene: the suite must pass on a machine where an
# unrelated Samba AD DC (with its winbindd) runs.  tests/tools/with-host-samba
# simulates such a host in a private mount namespace (an AD DC provisioned
# and running under the compiled-in /etc/samba, /run/samba, /var/lib/samba,
# /var/cache/samba, /var/log/samba; nothing on the real host is touched) and
# runs tests/run-integration.sh inside it:
#  0. the simulated host is real: wbinfo answers and the DC's Administrator
#     resolves through nsswitch (checked inside the namespace);
#  1. control: t_smb1 with the test smbd's isolation switched off
#     (TEST_SAMBA_ISOLATION=off) must FAIL, with smbd mapping smbtest
#     through the host's winbindd ("getpwuid(...) failed") - without the
#     private namespace a test smbd breaks on such a host, so step 2 can
#     fail;
#  2. t_smbdd (libsmbclient), t_smb1 (smbclient, smbstatus) and t_reload
#     (smbclient), isolated as always, must PASS (HOST_SAMBA_TESTS
#     chooses others).
# Each inner run has its own results directory; their logs are shown when
# they do not do what is expected.
. "$(dirname "$0")/lib.sh"

for c in samba samba-tool wbinfo unshare; do
	command -v "$c" >/dev/null || skip "$c not installed (samba-ad-dc, winbind)"
done
[ "$(id -u)" -eq 0 ] || skip "needs root"
INNER=${HOST_SAMBA_TESTS:-t_smbdd t_smb1 t_reload}

cat > "$T/inner.sh" <<'EOS'
#!/bin/bash
# inside the simulated host: $1 = outer temp dir, $2... = tests
set -u
dir=$1; shift
top=$(cd "$(dirname "$0")" && pwd)
{
	wbinfo -p
	getent passwd "$WHS_DOMAIN\\administrator"
	ls -l /run/samba/winbindd/pipe
} > "$dir/host.out" 2>&1 || { echo "HOST-NOT-SIMULATED"; cat "$dir/host.out"; exit 3; }
echo "host: $(head -n 1 "$dir/host.out"); $(sed -n 2p "$dir/host.out")"
# 1. control: no isolation, must fail
env -u SUMMARY_FILE RESULTS_DIR="$dir/control" TESTS=t_smb1 TEST_SAMBA_ISOLATION=off \
    bash "$TOP_DIR/tests/run-integration.sh" > "$dir/control.out" 2>&1
echo "control rc=$?"
# 2. isolated: must pass
env -u SUMMARY_FILE RESULTS_DIR="$dir/isolated" TESTS="$*" \
    bash "$TOP_DIR/tests/run-integration.sh" > "$dir/isolated.out" 2>&1
echo "isolated rc=$?"
EOS
mkdir -p "$T/control" "$T/isolated"
TOP_DIR=$TOP "$TOP/tests/tools/with-host-samba" bash "$T/inner.sh" "$T" $INNER > "$T/whs.out" 2>&1
rc=$?
cat "$T/whs.out"
grep -q '^HOST-NOT-SIMULATED' "$T/whs.out" && fail "the simulated host has no working winbindd"
[ $rc -eq 0 ] || fail "with-host-samba failed (exit $rc)"

echo "---- 1. control (isolation off):"
sed 's/^/    /' "$T/control.out"
grep -q '^control rc=0' "$T/whs.out" &&
    fail "control: t_smb1 passed with the test smbd's isolation off: the simulated host does not bite"
grep -hq 'getpwuid([0-9]*) failed' "$T"/control/t_smb1.logs/smbd-log/* "$T/control/t_smb1.log" 2>/dev/null ||
    { tail -n 40 "$T/control/t_smb1.log"; fail "control: t_smb1 failed, but not because smbd met the host's winbindd"; }
info "control: without isolation t_smb1 fails as on a host with an AD DC: $(grep -h -m1 -o 'getpwuid([0-9]*) failed' "$T"/control/t_smb1.logs/smbd-log/* "$T/control/t_smb1.log" 2>/dev/null | head -n 1)"

echo "---- 2. isolated:"
sed 's/^/    /' "$T/isolated.out"
grep -q '^isolated rc=0' "$T/whs.out" || fail "tests failed inside the simulated host: $INNER"
info "PASS: $INNER pass on a host with a running AD DC"
