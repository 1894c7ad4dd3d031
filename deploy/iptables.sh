#!/bin/sh
# deploy/iptables.sh - divert SMB connections (TCP 445, optionally 139) to a
# local smbaccel with iptables, and remove the diversion again.
#
#   iptables.sh redirect|tproxy add|del|show [options]
#
#   redirect   nat REDIRECT to smbaccel's port; smbaccel.conf "mode =
#              transparent" (smbaccel finds the server with SO_ORIGINAL_DST).
#   tproxy     mangle TPROXY with a firewall mark; "mode = tproxy" (smbaccel
#              installs the "fwmark -> local" policy routing itself).
#
#   --port P     smbaccel's listening port (listen = 0.0.0.0:P), 1 to 65535,
#                default 4445
#   --mark M     tproxy_mark of smbaccel.conf, default 0x1
#   --in IFACE   divert only connections arriving on IFACE, the clients'
#                side (repeatable; default: every interface)
#   --skip CIDR  never divert connections to CIDR, e.g. a server that
#                requires signing anyway (repeatable)
#   --netbios    divert TCP 139 as well (see docs/deploy.md before using it)
#   --local      redirect only: divert this host's own SMB clients too
#                (nat OUTPUT), except smbaccel's own upstream connections,
#                which carry the mark M (SO_MARK)
#   --ipv6       add: do the same with ip6tables.  del and show cover
#                ip6tables whenever smbaccel's chains or jumps are there,
#                with or without --ipv6
#   -n           print the commands instead of running them
#
# Everything lives in chains of its own (nat SMBACCEL, mangle SMBACCEL_TPROXY
# and SMBACCEL_DIVERT) plus jumps to them from PREROUTING (and OUTPUT), so
# "del" removes exactly what "add" made, whatever options "add" had (also
# --ipv6: "del" looks in ip6tables as well), and "add" twice is the same as
# once.
#
# Why smbaccel's own traffic never loops: in a router, PREROUTING only sees
# packets that arrive on an interface; smbaccel's upstream connections to
# the servers are made by this host and pass OUTPUT instead.  Only --local
# puts a rule in OUTPUT, and that rule skips packets with smbaccel's mark.
#
# What happens when smbaccel is not running (docs/deploy.md):
#   redirect  the connection is refused at once (RST): fail-closed.
#   tproxy    the SYN is dropped (no listening socket): clients wait until
#             their connect timeout.  nftables' tproxy lets it through
#             instead (deploy/nftables.conf).
# To fail open, run "iptables.sh ... del" when the service stops
# (ExecStopPost) and "add" when it has started (ExecStartPost).
#
# Examples:
#   iptables.sh redirect add --in eth1
#   iptables.sh tproxy add --in eth1 --port 4445 --mark 0x1 --ipv6
#   iptables.sh tproxy del
set -eu

usage() {
	sed -n '2,/^set -eu/ s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

[ $# -ge 2 ] || usage
kind=$1 action=$2
shift 2
case $kind in redirect|tproxy) ;; *) usage ;; esac
case $action in add|del|show) ;; *) usage ;; esac

port=4445 mark=0x1 ifaces= skips= ports=445 local_=no v6=no dry=no
while [ $# -gt 0 ]; do
	case $1 in
	--port)    [ $# -ge 2 ] || usage; port=$2; shift ;;
	--mark)    [ $# -ge 2 ] || usage; mark=$2; shift ;;
	--in)      [ $# -ge 2 ] || usage; ifaces="$ifaces $2"; shift ;;
	--skip)    [ $# -ge 2 ] || usage; skips="$skips $2"; shift ;;
	--netbios) ports=445,139 ;;
	--local)   local_=yes ;;
	--ipv6)    v6=yes ;;
	-n)        dry=yes ;;
	-h|--help) usage ;;
	*)         echo "iptables.sh: unknown option $1" >&2; usage ;;
	esac
	shift
done
# a port iptables would refuse halfway, after the chain is made, is
# refused here, before anything changes
case $port in
''|*[!0-9]*|??????*) echo "iptables.sh: bad --port $port (1 to 65535)" >&2; exit 2 ;;
esac
[ "$port" -ge 1 ] && [ "$port" -le 65535 ] ||
    { echo "iptables.sh: bad --port $port (1 to 65535)" >&2; exit 2; }
case $mark in ''|*[!0-9a-fA-Fx]*) echo "iptables.sh: bad --mark $mark" >&2; exit 2 ;; esac
[ "$local_" = yes ] && [ "$kind" = tproxy ] &&
    { echo "iptables.sh: --local works with redirect only" >&2; exit 2; }

# run IPT ARGS...: one iptables command (or its echo with -n).
run() {
	if [ "$dry" = yes ]; then
		echo "$*"
	else
		"$@"
	fi
}

# unhook IPT TABLE CHAIN TARGET: delete every rule of CHAIN that jumps to
# TARGET, whatever its matches (they are read back with -S).
unhook() {
	"$1" -w -t "$2" -S "$3" 2>/dev/null | grep -- "-j $4\$" |
	    sed 's/^-A //' | while read -r rule; do
		eval "run $1 -w -t $2 -D $rule"
	done
}

# drop IPT TABLE CHAIN: flush and delete CHAIN if it exists.
drop() {
	if "$1" -w -t "$2" -S "$3" >/dev/null 2>&1; then
		run "$1" -w -t "$2" -F "$3"
		run "$1" -w -t "$2" -X "$3"
	fi
}

# skips_for IPT: the --skip CIDRs of that family
skips_for() {
	for c in $skips; do
		case $c in
		*:*) [ "$1" = ip6tables ] && echo "$c" ;;
		*)   [ "$1" = iptables ] && echo "$c" ;;
		esac
	done
	return 0
}

# loop over --in interfaces (or one pass with none): sets $inopt
for_ifaces() {
	if [ -z "$ifaces" ]; then
		inopt=
		"$@"
	else
		for i in $ifaces; do
			inopt="-i $i"
			"$@"
		done
	fi
}

redirect_del() {
	unhook "$1" nat PREROUTING SMBACCEL
	unhook "$1" nat OUTPUT SMBACCEL
	drop "$1" nat SMBACCEL
}

redirect_add() {
	local_ipt=$1
	redirect_del "$1"
	run "$1" -w -t nat -N SMBACCEL
	for c in $(skips_for "$1"); do
		run "$1" -w -t nat -A SMBACCEL -d "$c" -j RETURN
	done
	run "$1" -w -t nat -A SMBACCEL -p tcp -m multiport --dports "$ports" \
	    -j REDIRECT --to-ports "$port"
	# shellcheck disable=SC2086
	hook() { run "$local_ipt" -w -t nat -A PREROUTING $inopt -p tcp \
	    -m multiport --dports "$ports" -j SMBACCEL; }
	for_ifaces hook
	if [ "$local_" = yes ]; then
		if [ "$1" = ip6tables ]; then lo=::1/128; else lo=127.0.0.0/8; fi
		run "$1" -w -t nat -A OUTPUT -p tcp ! -d "$lo" \
		    -m multiport --dports "$ports" -m mark ! --mark "$mark" \
		    -j SMBACCEL
	fi
}

tproxy_del() {
	unhook "$1" mangle PREROUTING SMBACCEL_DIVERT
	unhook "$1" mangle PREROUTING SMBACCEL_TPROXY
	drop "$1" mangle SMBACCEL_TPROXY
	drop "$1" mangle SMBACCEL_DIVERT
}

tproxy_add() {
	local_ipt=$1
	tproxy_del "$1"
	# packets of connections smbaccel already holds: straight to its socket
	run "$1" -w -t mangle -N SMBACCEL_DIVERT
	run "$1" -w -t mangle -A SMBACCEL_DIVERT -j MARK --set-mark "$mark"
	run "$1" -w -t mangle -A SMBACCEL_DIVERT -j ACCEPT
	# new connections: to the transparent listener.  Only NEW ones, so that
	# connections made straight to a server while smbaccel was down (with
	# the rules removed) are not cut when the rules come back.
	run "$1" -w -t mangle -N SMBACCEL_TPROXY
	for c in $(skips_for "$1"); do
		run "$1" -w -t mangle -A SMBACCEL_TPROXY -d "$c" -j RETURN
	done
	run "$1" -w -t mangle -A SMBACCEL_TPROXY -p tcp -m multiport \
	    --dports "$ports" -m conntrack --ctstate NEW \
	    -j TPROXY --on-port "$port" --tproxy-mark "$mark"
	# shellcheck disable=SC2086
	hook() {
		run "$local_ipt" -w -t mangle -A PREROUTING $inopt -p tcp \
		    -m socket --transparent -j SMBACCEL_DIVERT
		run "$local_ipt" -w -t mangle -A PREROUTING $inopt -p tcp \
		    -m multiport --dports "$ports" -j SMBACCEL_TPROXY
	}
	for_ifaces hook
}

show() {
	if [ "$kind" = redirect ]; then
		"$1" -w -t nat -S SMBACCEL 2>/dev/null || true
		"$1" -w -t nat -S PREROUTING | grep -- '-j SMBACCEL$' || true
		"$1" -w -t nat -S OUTPUT | grep -- '-j SMBACCEL$' || true
	else
		"$1" -w -t mangle -S SMBACCEL_DIVERT 2>/dev/null || true
		"$1" -w -t mangle -S SMBACCEL_TPROXY 2>/dev/null || true
		"$1" -w -t mangle -S PREROUTING | grep -- '-j SMBACCEL_' || true
	fi
}

# ours IPT: IPT's table of this kind holds smbaccel's chains or jumps
ours() {
	if [ "$kind" = redirect ]; then t=nat; else t=mangle; fi
	"$1" -w -t "$t" -S 2>/dev/null | grep -q -- SMBACCEL
}

# add makes the IPv6 rules only with --ipv6; del and show take them
# wherever they are, so that the "del" of a fail-open drop-in written
# without --ipv6 does not leave IPv6 clients diverted to a dead port
tools=iptables
if [ "$v6" = yes ]; then
	tools="iptables ip6tables"
elif [ "$action" != add ] && command -v ip6tables >/dev/null 2>&1 &&
    ours ip6tables; then
	tools="iptables ip6tables"
fi
for ipt in $tools; do
	command -v "$ipt" >/dev/null 2>&1 || { echo "iptables.sh: $ipt not found" >&2; exit 1; }
	case $action in
	add)  "${kind}_add" "$ipt" ;;
	del)  "${kind}_del" "$ipt" ;;
	show) [ "$ipt" = ip6tables ] && echo "# ip6tables"
	      show "$ipt" ;;
	esac
done
