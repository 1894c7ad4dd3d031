#!/bin/sh
# Install the Debian 12 packages that building, testing and the demo need.
# Idempotent: when every package is already installed it only runs
# dpkg-query and exits.  Must run as root when something is missing.
set -eu

PKGS="build-essential pkg-config clang libev-dev libssl-dev libnl-3-dev
libnl-route-3-dev libcunit1-dev libinih-dev libsystemd-dev samba smbclient
libsmbclient-dev samba-testsuite tshark python3-impacket gnuplot-nox haproxy
iproute2 iptables nftables procps psmisc man-db groff-base systemd
samba-vfs-modules libkrb5-dev krb5-user samba-ad-dc winbind valgrind
faketime python3-prometheus-client golang-go
golang-github-hirochachacha-go-smb2-dev"
# samba-vfs-modules is only a Recommends of samba, but the test shares use
# its acl_xattr and streams_xattr modules; list it so it is never missed.
# libkrb5-dev: the keytab API and krb5_c_decrypt of Kerberos-keyed sessions;
# samba-ad-dc, krb5-user (kinit, klist) and winbind: the AD DC test bed of
# the t_krb_* tests (tests/integration/addc_lib.sh); samba-ad-dc and
# winbind also for t_host_samba (tests/tools/with-host-samba), which runs an
# AD DC in a private mount namespace to show the suite passes beside one.
# valgrind: callgrind counts smbaccel's instructions per 1 KiB WRITE in
# tests/bench/crypto --instructions (and t_bench_crypto_smoke).
# faketime (libfaketime): t_krb_expire runs smbaccel with its clock ten
# minutes slow, to show it judges ticket ends by the server's clock.
# python3-prometheus-client: t_metrics reads `smbaccelctl metrics` with
# the Prometheus client library's parser as well as its own.
# golang-go and go-smb2: tests/tools/gosmb, a third SMB client
# implementation (t_goclient), built offline from the packaged sources.

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = "installed" ] || missing="$missing $p"
done

if [ -z "$missing" ]; then
	echo "install-deps: all $(echo $PKGS | wc -w) packages present"
	exit 0
fi

echo "install-deps: installing:$missing"
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: must run as root to install packages" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer no, without a prompt.
echo "wireshark-common wireshark-common/install-setuid boolean false" |
    debconf-set-selections
apt-get update
# shellcheck disable=SC2086
apt-get install -y $missing
echo "install-deps: done"
