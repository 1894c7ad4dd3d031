#!/bin/bash
# exclusive: twelve smbtorture lanes of its own (3 configurations x 4 suite groups); oplock/lease tests wait on timers, and their results must equal the direct run's
# test-timeout: 1200
# smbtorture parity (issue 2; issue 3 test 8; issue 4 test 6; issue 15):
# each suite runs directly against smbd and through smbaccel with the
# default policy (write_behind = read_ahead = leased, proxy_lease on: the
# suites' opens that ask for no oplock get smbaccel's lease) and with
# write_behind = read_ahead = always, in this same test run; the per-test results (subunit
# success/failure/skip/error, plus tests that started and never finished)
# must be identical to the direct run's.  Differences are printed.
# Absolute pass counts are not asserted: many tests expect Windows
# behaviour.  The runs go in parallel lanes, each with its own smbd
# (torture_lib.sh): smb2.lease alone takes about three minutes of timers
# and smb2.oplock two, so each is split over two lanes, its tests that
# wait longest (lease.timeout 38 s and oplock.batch22a 36 s, smbd's 35 s
# break timeout; lease.oplock 30 s, lease.break 24 s) apart from the
# rest: the longest lane takes about 100 s, not 200.
# Every proxy must end with ledger_errors 0 and exit 0 on SIGTERM.
#
#   SMBTORTURE_SUITES  override the suites ("/" separates lanes)
#   TORTURE_CONFIGS    override the proxy configurations
. "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/torture_lib.sh"
require_smbaccel "smbtorture parity"

# durable-open and durable-v2-open on the [dur] share (lib.sh)
SUITES=${SMBTORTURE_SUITES:-smb2.connect smb2.read smb2.lock smb2.compound smb2.credits smb2.getinfo smb2.setinfo smb2.rw dur:smb2.durable-open dur:smb2.durable-v2-open smb2.oplock:only:batch22a / smb2.oplock:except:batch22a / smb2.lease:only:timeout,oplock,break / smb2.lease:except:timeout,oplock,break}
TORTURE_CONFIGS=${TORTURE_CONFIGS:-default|leased|leased always|always|always}
# shellcheck disable=SC2086
torture_parity $SUITES || fail "smbtorture results differ between direct and proxied runs"
for cfg in $TORTURE_CONFIGS; do
	n=${cfg%%|*}
	info "$n: writes_absorbed $(torture_stat "$n" writes_absorbed) writes_forwarded $(torture_stat "$n" writes_forwarded) ra_hits $(torture_stat "$n" ra_hits) ra_fetches $(torture_stat "$n" ra_fetches) deferred_errors $(torture_stat "$n" deferred_errors)"
done
case " $TORTURE_CONFIGS " in *" always|"*)
	assert_ge 1 "$(torture_stat always writes_absorbed)" "writes absorbed under always (write-behind exercised)" ;;
esac
case " $TORTURE_CONFIGS " in *" default|"*)
	info "default: leases asked for clients $(torture_stat default proxy_leases_asked), granted $(torture_stat default proxy_leases_granted) ($(torture_stat default proxy_leases_write) with write), breaks $(torture_stat default proxy_lease_breaks), acknowledged $(torture_stat default proxy_lease_breaks_acked), unacknowledged $(torture_stat default breaks_unacked)"
	assert_ge 1 "$(torture_stat default proxy_leases_granted)" "leases smbaccel held for the suites' clients (proxy_lease exercised)" ;;
esac
info "PASS"
