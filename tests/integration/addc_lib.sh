# tests/integration/addc_lib.sh - a Samba AD DC test bed for the Kerberos
# tests (issue 12; bash, source after lib.sh).
#
# The DC is provisioned into $T/addc by samba-tool and runs as `samba -F`
# in a network namespace.  Everything Samba touches is private: samba-tool
# and samba run in a private mount namespace (unshare -m) in which private
# directories are bind-mounted over /run/samba, /var/lib/samba,
# /var/cache/samba, /var/log/samba and /etc/samba.  That is needed, not
# tidiness: the DC's smbd finds its winbindd only under the compiled-in
# /run/samba/winbindd (a private "winbindd socket directory" breaks every
# session setup), and provisioning copies /etc/samba/smb.conf (SMB-NOTES,
# "Kerberos sessions").  Nothing reaches the host's Samba paths, and the
# mounts vanish with the last process of the mount namespace.
#
# Kerberos needs names: clients use the DC's FQDN, which each client
# namespace resolves through /etc/netns/NS/hosts (`ip netns exec` binds it
# over /etc/hosts), a private krb5.conf (KRB5_CONFIG) that names the KDC by
# address, and a private credential cache (KRB5CCNAME).  Kerberos by IP
# fails (NT_STATUS_ACCESS_DENIED).
#
#   addc_provision                 the domain in $T/addc (about 4-11 s;
#                                  a copy of the first test's, 0.1 s,
#                                  under run-integration.sh);
#                                  users ADDC_USER (password ADDC_PASS) and
#                                  ADDC_REPL (a second account, not in any
#                                  privileged group)
#   addc_start NS IP...            samba in namespace NS on those addresses
#   addc_stop                      stop it (cleanup does it anyway)
#   addc_tool ARGS...              samba-tool ARGS on the DC's database
#   addc_hosts NS IP               NS resolves the DC's FQDN to IP
#   addc_krb5_conf FILE KDC_IP     a private krb5.conf
#   addc_kinit NS CONF CCACHE [USER PASS]   kinit in NS
#   addc_home NAME [smb.conf lines]   a HOME for smbclient/libsmbclient with
#                                  the realm as workgroup and Kerberos on
#   addc_keytab FILE [PRINCIPAL]   samba-tool domain exportkeytab, root 0600
#   addc_rc4_only ACCOUNT          drop ACCOUNT's AES keys: its tickets
#                                  are then in its rc4-hmac key
#   addc_groups ACCOUNT N          ACCOUNT in N new groups (a large PAC)
#   addc_svc_account NAME ENCTYPES KEYTAB   a user account NAME with the SPN
#                                  cifs/NAME.<the DC's domain>, limited to
#                                  ENCTYPES (msDS-SupportedEncryptionTypes),
#                                  its keys exported to KEYTAB
#   addc_bed                       the forward-mode bed below, all of it
#   addc_member_join / addc_member_start / addc_member_stop
#                                  a Samba file server joined to the
#                                  domain (below)
#
# The forward-mode bed (addc_bed):
#
#    cli ns (clients, smbaccel)                dc ns (samba)
#    127.0.0.1:$PROXY_PORT smbaccel
#    198.51.100.1/24 kc0 ================ kd0 198.51.100.2/24
#    dir ns (direct clients)
#    203.0.113.1/24  kr0 ================ kd1 203.0.113.2/24
#
# In cli the FQDN is 127.0.0.1 (smbaccel, started by the test with
# PROXY_NETNS=$ADDC_CLI and PROXY_UPSTREAM=$ADDC_IP:445; clients pass
# -p $PROXY_PORT); in dir it is the DC itself.  Both reach the KDC on the
# DC's address on their side (krb5.conf $ADDC_CLI_KRB5 / $ADDC_DIR_KRB5);
# they share one credential cache, $ADDC_CCACHE.  The DC's [share] is
# $ADDC_SHARE_DIR.
#
# The member server ($ADDC_MEM_FQDN, netbios name FS1): smbd and winbindd
# with security = ads, joined by `net ads join` as a Windows or NAS file
# server is, in the dc ns on addresses of their own ($ADDC_MEM_IP on the
# cli side, $ADDC_MEM_DIR_IP on the dir side), with the DC as password
# server and KDC.  Its private directories are bind-mounted like the
# DC's, from $ADDC_MEM_DIR/mnt, so the two sets of winbindd sockets, tdbs
# and secrets never meet; /etc/krb5.conf is hidden by a private one.
# Its [share] is $ADDC_MEM_SHARE_DIR.  Domain users reach smbd through
# winbind (the host's nsswitch.conf names winbind; idmap rid for the
# domain).
#
# cleanup (lib.sh, through EXTRA_CLEANUP) stops the DC and the member by
# the pids of their process trees, removes /etc/netns/NS of every namespace given a hosts
# file, and lib.sh deletes the namespaces.

ADDC_REALM=KRB.SMBACCEL.TEST
ADDC_DOMAIN=KRB
ADDC_HOST=dc1
ADDC_FQDN=dc1.krb.smbaccel.test
ADDC_ADMIN_PASS='Adm1n-Pass.krb'
ADDC_USER=krbuser
ADDC_PASS='Us3r-Pass.krb'
ADDC_REPL=krbother
ADDC_REPL_PASS='0ther-Pass.krb'
ADDC_DIR=$T/addc
ADDC_CONF=$ADDC_DIR/dc/etc/smb.conf
ADDC_SHARE_DIR=$T/addc-share
ADDC_LOG=$ADDC_DIR/dc/log/samba.log
ADDC_IP=198.51.100.2
ADDC_DIR_IP=203.0.113.2
ADDC_PID=
ADDC_NS=
ADDC_HOSTS_NS=
ADDC_CLI= ADDC_DIRNS= ADDC_DCNS=
ADDC_CCACHE=$T/krb5cc
ADDC_CLI_KRB5=$T/krb5-cli.conf
ADDC_DIR_KRB5=$T/krb5-dir.conf
ADDC_MEM_HOST=fs1
ADDC_MEM_FQDN=fs1.krb.smbaccel.test
ADDC_MEM_DIR=$T/member
ADDC_MEM_CONF=$ADDC_MEM_DIR/smb.conf
ADDC_MEM_SHARE_DIR=$T/member-share
ADDC_MEM_IP=198.51.100.3
ADDC_MEM_DIR_IP=203.0.113.3
ADDC_MEM_PID=

EXTRA_CLEANUP=addc_cleanup

# _addc_mnt CMD...: CMD in a private mount namespace with the private
# Samba directories over the host's.  ADDC_MNT_SH is the part that runs in
# it; CMD is exec'd, so its pid is the one of this command.
ADDC_MNT_SH='D=$1; shift
mount --bind "$D/run" /run/samba &&
mount --bind "$D/lib" /var/lib/samba &&
mount --bind "$D/cache" /var/cache/samba &&
mount --bind "$D/log" /var/log/samba &&
mount --bind "$D/etc" /etc/samba || exit 111
if [ -f "$D/krb5.conf" ] && [ -e /etc/krb5.conf ]; then mount --bind "$D/krb5.conf" /etc/krb5.conf || exit 111; fi
exec "$@"'
_addc_mnt() {
	local d
	for d in run lib cache log etc; do mkdir -p "$ADDC_DIR/mnt/$d"; done
	unshare -m --propagation private /bin/sh -c "$ADDC_MNT_SH" addc-mnt \
	    "$ADDC_DIR/mnt" "$@"
}
# _addc_mem_mnt CMD...: the same for the member server, with its own
# directories (and krb5.conf, written by addc_member_join)
_addc_mem_mnt() {
	unshare -m --propagation private /bin/sh -c "$ADDC_MNT_SH" addc-mnt \
	    "$ADDC_MEM_DIR/mnt" "$@"
}

# addc_tool ARGS...: samba-tool on the provisioned DC (its smb.conf).
addc_tool() {
	_addc_mnt samba-tool "$@" -s "$ADDC_CONF"
}

addc_provision() {
	local t0 out
	command -v samba-tool >/dev/null && command -v samba >/dev/null ||
	    skip "samba-tool/samba not installed (samba-ad-dc)"
	[ -d /run/samba ] && [ -d /var/lib/samba ] && [ -d /var/cache/samba ] &&
	    [ -d /var/log/samba ] && [ -d /etc/samba ] ||
	    skip "the Samba directories to hide (/run/samba, /var/lib/samba, ...) are missing"
	mkdir -p "$ADDC_DIR/dc" "$ADDC_SHARE_DIR"
	chmod 0777 "$ADDC_SHARE_DIR"
	t0=$(now)
	if [ -n "${TEST_SHARED_DIR:-}" ] && [ -d "$TEST_SHARED_DIR" ] && [ "${ADDC_TEMPLATE:-yes}" != no ]; then
		if _addc_from_template; then
			info "$ADDC_REALM (DC $ADDC_FQDN) copied from the domain provisioned by an earlier test of this run in $(elapsed "$t0") s"
		else
			info "provisioned $ADDC_REALM (DC $ADDC_FQDN) in $(elapsed "$t0") s, kept for the later tests of this run"
		fi
		return 0
	fi
	_addc_provision_new
	info "provisioned $ADDC_REALM (DC $ADDC_FQDN) in $(elapsed "$t0") s"
}

# _addc_from_template: $ADDC_DIR from the domain an earlier test of this
# run provisioned with the same names, passwords and Samba (a copy under
# TEST_SHARED_DIR, which run-integration.sh makes for each run and
# removes after it), provisioning it first when no test has.  A lock
# makes a second test wait for the first's provisioning instead of
# doing its own.  Nothing in the provisioned files but smb.conf names
# the directory (cp -a keeps sysvol's ACL xattrs).  Returns 0 after a
# copy, 1 after provisioning.
_addc_from_template() {
	local key tpl fd origin
	key=$({ samba --version; declare -f _addc_provision_new
		echo "$ADDC_REALM $ADDC_DOMAIN $ADDC_HOST $ADDC_IP $ADDC_ADMIN_PASS"
		echo "$ADDC_USER $ADDC_PASS $ADDC_REPL $ADDC_REPL_PASS"; } | cksum | cut -d' ' -f1)
	tpl=$TEST_SHARED_DIR/addc-$key
	exec {fd}>"$tpl.lock" || fail "cannot open $tpl.lock"
	flock "$fd" || fail "cannot lock $tpl.lock"
	if [ ! -f "$tpl/origin" ]; then
		_addc_provision_new
		rm -rf "$tpl.tmp" && mkdir -p "$tpl.tmp" &&
		    cp -a "$ADDC_DIR/dc" "$ADDC_DIR/mnt" "$tpl.tmp/" &&
		    echo "$ADDC_DIR" > "$tpl.tmp/origin" && mv "$tpl.tmp" "$tpl" ||
		    fail "cannot keep the provisioned domain in $tpl"
		exec {fd}>&-
		return 1
	fi
	origin=$(cat "$tpl/origin")
	cp -a "$tpl/dc" "$tpl/mnt" "$ADDC_DIR/" || fail "cannot copy the provisioned domain from $tpl"
	exec {fd}>&-
	sed -i "s|$origin/|$ADDC_DIR/|g" "$ADDC_CONF" || fail "cannot rewrite $ADDC_CONF"
	grep -qF "$origin/" "$ADDC_CONF" && fail "$ADDC_CONF still names $origin"
	return 0
}

# _addc_provision_new: samba-tool domain provision into $ADDC_DIR, the
# password rules relaxed, the two users created.
_addc_provision_new() {
	local out
	out=$(_addc_mnt samba-tool domain provision --targetdir="$ADDC_DIR/dc" \
	    --realm="$ADDC_REALM" --domain="$ADDC_DOMAIN" --host-name="$ADDC_HOST" \
	    --server-role=dc --dns-backend=NONE --host-ip="$ADDC_IP" \
	    --adminpass="$ADDC_ADMIN_PASS" 2>&1) ||
	    { echo "$out" | tail -n 20; fail "samba-tool domain provision failed"; }
	[ -f "$ADDC_CONF" ] || fail "provisioning wrote no $ADDC_CONF"
	grep -q "/etc/samba\|/var/lib/samba" "$ADDC_CONF" &&
	    fail "the provisioned smb.conf names host Samba paths: $(grep -n '/etc/samba\|/var/lib/samba' "$ADDC_CONF")"
	addc_tool domain passwordsettings set --complexity=off --history-length=0 \
	    --min-pwd-age=0 --max-pwd-age=0 >/dev/null 2>&1 ||
	    fail "samba-tool domain passwordsettings failed"
	out=$(addc_tool user create "$ADDC_USER" "$ADDC_PASS" 2>&1) ||
	    fail "samba-tool user create $ADDC_USER: $out"
	out=$(addc_tool user create "$ADDC_REPL" "$ADDC_REPL_PASS" 2>&1) ||
	    fail "samba-tool user create $ADDC_REPL: $out"
}

# addc_start NS IP...: the DC in network namespace NS, bound to IP...
# (plus lo), with a [share] on $ADDC_SHARE_DIR and the extra [global]
# lines in ADDC_EXTRA (newline-separated).
addc_start() {
	local ns=$1 ips; shift
	ips=$*
	mkdir -p "$ADDC_DIR/dc/log" "$ADDC_DIR/dc/pid"
	# [global] additions go right after the [global] line; the share at
	# the end.  Keep the provisioned file for restarts.  The provisioned
	# lines come after the additions and win where both set a parameter:
	# the services that run are the provisioned "server services" (all of
	# a DC's, cldap and ldap included).
	[ -f "$ADDC_CONF.orig" ] || cp "$ADDC_CONF" "$ADDC_CONF.orig"
	{
		sed -n '1,/^\[global\]/p' "$ADDC_CONF.orig"
		cat <<EOF
	interfaces = lo $ips
	bind interfaces only = yes
	pid directory = $ADDC_DIR/dc/pid
	log file = $ADDC_LOG
	max log size = 0
	log level = ${ADDC_LOG_LEVEL:-1}
	disable netbios = yes
	ea support = yes
	map to guest = never
	load printers = no
	printing = bsd
	printcap name = /dev/null
	disable spoolss = yes
EOF
		[ -n "${ADDC_EXTRA:-}" ] && printf '%s\n' "$ADDC_EXTRA" | sed 's/^/\t/'
		sed -n '/^\[global\]/,$p' "$ADDC_CONF.orig" | sed 1d
		cat <<EOF

[share]
	path = $ADDC_SHARE_DIR
	read only = no
EOF
		[ -n "${ADDC_SHARES:-}" ] && printf '%s\n' "$ADDC_SHARES"
	} > "$ADDC_CONF"
	: > "$ADDC_LOG"
	# setsid: samba leads its own session (and process group); with
	# --no-process-group it does not try to make one itself.  The pid is
	# samba's: setsid (not a group leader here), unshare, sh and ip netns
	# exec all exec.
	setsid unshare -m --propagation private /bin/sh -c "$ADDC_MNT_SH" addc-mnt \
	    "$ADDC_DIR/mnt" ip netns exec "$ns" samba -s "$ADDC_CONF" -F \
	    --no-process-group </dev/null >"$ADDC_DIR/samba.stdout" 2>&1 &
	ADDC_PID=$!
	ADDC_NS=$ns
	local n=300
	while [ $n -gt 0 ]; do
		kill -0 "$ADDC_PID" 2>/dev/null ||
		    { cat "$ADDC_DIR/samba.stdout"; tail -n 20 "$ADDC_LOG"; ADDC_PID=; fail "samba exited at start"; }
		ip netns exec "$ns" ss -Hltn 'sport = :445' 2>/dev/null | grep -q . &&
		    ip netns exec "$ns" ss -Hltn 'sport = :88' 2>/dev/null | grep -q . &&
		    ip netns exec "$ns" ss -Hltn 'sport = :135' 2>/dev/null | grep -q . && break
		sleep 0.1; n=$((n - 1))
	done
	[ $n -gt 0 ] || { tail -n 30 "$ADDC_LOG"; fail "samba is not listening on 445, 88 and 135 in $ns after 30 s"; }
	info "samba (AD DC) pid $ADDC_PID in $ns on $ips"
}

# _addc_tree PID: PID and all its descendants.
_addc_tree() {
	ps -e -o pid=,ppid= | awk -v root="$1" '
		{ par[$1] = $2; pids[NR] = $1 }
		END {
			keep[root] = 1; changed = 1
			while (changed) {
				changed = 0
				for (i in pids) { p = pids[i]
					if (!(p in keep) && (par[p] in keep)) { keep[p] = 1; changed = 1 } }
			}
			for (p in keep) print p
		}'
}

# _addc_kill_tree PID: SIGTERM to PID, then whatever of its process tree
# is left after 5 s is killed.
_addc_kill_tree() {
	local pids p n left
	pids=$(_addc_tree "$1")
	kill -TERM "$1" 2>/dev/null
	n=100
	while [ $n -gt 0 ] && kill -0 "$1" 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
	# smbd and winbindd run in sessions of their own and leave when
	# samba does; whatever of the tree is still there after 5 s goes
	n=50
	while [ $n -gt 0 ]; do
		left=
		for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
		[ -z "$left" ] && break
		sleep 0.1; n=$((n - 1))
	done
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	wait "$1" 2>/dev/null
}

addc_stop() {
	[ -n "$ADDC_PID" ] || return 0
	_addc_kill_tree "$ADDC_PID"
	ADDC_PID=
}

# addc_hosts NS IP: the DC's FQDN resolves to IP inside NS.
addc_hosts() {
	local ns=$1 ip=$2
	mkdir -p "/etc/netns/$ns" || fail "cannot create /etc/netns/$ns"
	case " $ADDC_HOSTS_NS " in *" $ns "*) ;; *) ADDC_HOSTS_NS="$ADDC_HOSTS_NS $ns" ;; esac
	printf '127.0.0.1\tlocalhost\n%s\t%s %s\n' "$ip" "$ADDC_FQDN" "$ADDC_HOST" \
	    > "/etc/netns/$ns/hosts"
}

addc_cleanup() {
	local ns f
	addc_member_stop
	addc_stop
	for ns in $ADDC_HOSTS_NS; do
		case $ns in sa*) rm -rf "/etc/netns/$ns" ;; esac
	done
	if [ "${rc:-0}" -ne 0 ] && [ -n "$RESULTS_DIR" ] && [ -d "$RESULTS_DIR" ]; then
		mkdir -p "$RESULTS_DIR/$TEST_NAME.logs"
		cp -f "$ADDC_LOG" "$ADDC_CONF" "$RESULTS_DIR/$TEST_NAME.logs/" 2>/dev/null
		cp -f "$ADDC_DIR"/dc/log.* "$RESULTS_DIR/$TEST_NAME.logs/" 2>/dev/null
		for f in "$ADDC_MEM_DIR"/log/log.* "$ADDC_MEM_DIR"/*.out; do
			[ -f "$f" ] && cp -f "$f" "$RESULTS_DIR/$TEST_NAME.logs/member-${f##*/}"
		done
	fi
}

# addc_krb5_conf FILE KDC_IP
addc_krb5_conf() {
	cat > "$1" <<EOF
[libdefaults]
	default_realm = $ADDC_REALM
	dns_lookup_realm = false
	dns_lookup_kdc = false
	rdns = false
	dns_canonicalize_hostname = false
	${ADDC_KRB5_EXTRA:-}
[realms]
	$ADDC_REALM = {
		kdc = $2
	}
[domain_realm]
	.${ADDC_FQDN#*.} = $ADDC_REALM
	${ADDC_FQDN#*.} = $ADDC_REALM
EOF
}

# addc_kinit NS KRB5_CONF CCACHE [USER PASS]
addc_kinit() {
	local ns=$1 conf=$2 cc=$3 user=${4:-$ADDC_USER} pass=${5:-$ADDC_PASS} out
	out=$(printf '%s\n' "$pass" | ip netns exec "$ns" env KRB5_CONFIG="$conf" \
	    KRB5CCNAME="FILE:$cc" kinit "$user@$ADDC_REALM" 2>&1) ||
	    fail "kinit $user@$ADDC_REALM in $ns failed: $out"
}

# addc_home NAME [smb.conf lines]: HOME for smbclient and libsmbclient:
# the realm as workgroup (libsmbclient asks for user@SHORTDOMAIN
# otherwise), Kerberos required.
addc_home() {
	local h=$T/home-$1 l; shift
	mkdir -p "$h/.smb"
	{
		echo "[global]"
		echo "	client min protocol = SMB2_02"
		echo "	client max protocol = SMB3_11"
		echo "	workgroup = $ADDC_REALM"
		echo "	realm = $ADDC_REALM"
		echo "	client use kerberos = required"
		echo "	client signing = default"
		echo "	client smb encrypt = default"
		echo "	log level = 1"
		# libsmbclient caches name lookups (gencache) in the cache
		# directory: a private one, or a stale address from another
		# run or test is used
		echo "	cache directory = $h/cache"
		echo "	lock directory = $h/lock"
		echo "	state directory = $h/state"
		echo "	private dir = $h/private"
		for l in "$@"; do echo "	$l"; done
	} > "$h/.smb/smb.conf"
	mkdir -p "$h/cache" "$h/lock" "$h/state" "$h/private"
	echo "$h"
}

# addc_keytab FILE [PRINCIPAL]: export the DC's keys (default: DC1$) as
# root-owned 0600 file.
addc_keytab() {
	local f=$1 p=${2:-${ADDC_HOST^^}\$} out
	rm -f "$f"
	out=$(addc_tool domain exportkeytab "$f" --principal="$p" 2>&1) ||
	    fail "samba-tool domain exportkeytab $p: $out"
	[ -s "$f" ] || fail "exportkeytab wrote nothing to $f: $out"
	chown 0:0 "$f" && chmod 0600 "$f" || fail "cannot chown/chmod $f"
}

addc_svc_account() {
	local acct=$1 out
	out=$(addc_tool user create "$acct" "Svc-$RANDOM-pw-$RANDOM!" 2>&1) ||
	    fail "samba-tool user create $acct: $out"
	out=$(addc_tool spn add "cifs/$acct.${ADDC_FQDN#*.}" "$acct" 2>&1) ||
	    fail "samba-tool spn add cifs/$acct.${ADDC_FQDN#*.}: $out"
	addc_enctypes "$acct" "$2"
	addc_keytab "$3" "$acct"
}

# addc_rc4_only ACCOUNT: remove ACCOUNT's AES keys from the database
# (addc_account.py rc4-only).  The KDC then encrypts ACCOUNT's tickets in
# its rc4-hmac key (the NT hash), which the DC's smbd, reading the same
# database, also has.  The only way to get a DC's own tickets in another
# enctype: Samba 4.17 uses the AES keys of a DC whatever its
# msDS-SupportedEncryptionTypes says.
addc_rc4_only() {
	_addc_mnt /usr/bin/python3 "$TESTS_DIR/addc_account.py" "$ADDC_CONF" "$1" rc4-only ||
	    fail "cannot drop the AES keys of $1"
}

# addc_enctypes ACCOUNT VALUE: msDS-SupportedEncryptionTypes of ACCOUNT
# (sAMAccountName, e.g. DC1$) := VALUE (4 rc4-hmac, 8 aes128, 16 aes256,
# 28 all three; "" removes it): the enctypes the KDC issues its service
# tickets and session keys in (for a user or service account: a DC's own
# tickets stay aes256).
addc_enctypes() {
	_addc_mnt /usr/bin/python3 "$TESTS_DIR/addc_account.py" "$ADDC_CONF" "$1" enctypes "$2" ||
	    fail "cannot set msDS-SupportedEncryptionTypes of $1"
}

# addc_groups ACCOUNT N: ACCOUNT made a member of N new global groups
# (ACCOUNT-g0 ..): a PAC of about 8 bytes a group in its tickets
addc_groups() {
	_addc_mnt /usr/bin/python3 "$TESTS_DIR/addc_account.py" "$ADDC_CONF" "$1" groups "$2" ||
	    fail "cannot put $1 in $2 groups"
}

# addc_bed: namespaces, the DC, the users, krb5.conf files and one TGT.
addc_bed() {
	local base=sa$$k$RANDOM
	command -v kinit >/dev/null || skip "kinit not installed (krb5-user)"
	ADDC_CLI=$base-cli ADDC_DIRNS=$base-dir ADDC_DCNS=$base-dc
	local ns
	for ns in "$ADDC_CLI" "$ADDC_DIRNS" "$ADDC_DCNS"; do
		ip netns add "$ns" 2>/dev/null || skip "cannot create network namespaces (not root?)"
		NETNS_LIST="$NETNS_LIST $ns"
		ip netns exec "$ns" ip link set lo up || fail "lo in $ns"
	done
	ip link add kc0 netns "$ADDC_CLI" type veth peer name kd0 netns "$ADDC_DCNS" &&
	ip link add kr0 netns "$ADDC_DIRNS" type veth peer name kd1 netns "$ADDC_DCNS" ||
	    skip "cannot create veth pairs"
	ip netns exec "$ADDC_CLI" ip addr add 198.51.100.1/24 dev kc0 &&
	ip netns exec "$ADDC_DCNS" ip addr add "$ADDC_IP/24" dev kd0 &&
	ip netns exec "$ADDC_DIRNS" ip addr add 203.0.113.1/24 dev kr0 &&
	ip netns exec "$ADDC_DCNS" ip addr add "$ADDC_DIR_IP/24" dev kd1 &&
	ip netns exec "$ADDC_CLI" ip link set kc0 up &&
	ip netns exec "$ADDC_DCNS" ip link set kd0 up &&
	ip netns exec "$ADDC_DIRNS" ip link set kr0 up &&
	ip netns exec "$ADDC_DCNS" ip link set kd1 up || fail "cannot configure the namespaces"
	addc_hosts "$ADDC_CLI" 127.0.0.1
	addc_hosts "$ADDC_DIRNS" "$ADDC_DIR_IP"
	addc_hosts "$ADDC_DCNS" "$ADDC_IP"
	addc_provision
	addc_start "$ADDC_DCNS" "$ADDC_IP" "$ADDC_DIR_IP"
	addc_krb5_conf "$ADDC_CLI_KRB5" "$ADDC_IP"
	addc_krb5_conf "$ADDC_DIR_KRB5" "$ADDC_DIR_IP"
	addc_kinit "$ADDC_CLI" "$ADDC_CLI_KRB5" "$ADDC_CCACHE"
	PROXY_NETNS=$ADDC_CLI
	PROXY_UPSTREAM=$ADDC_IP:445
	export PROXY_UPSTREAM
}

# in_cli CMD... / in_dir CMD...: CMD in the client (via smbaccel) or the
# direct namespace with its krb5.conf and the shared credential cache.
in_cli() {
	ip netns exec "$ADDC_CLI" env KRB5_CONFIG="$ADDC_CLI_KRB5" \
	    KRB5CCNAME="FILE:$ADDC_CCACHE" "$@"
}
in_dir() {
	ip netns exec "$ADDC_DIRNS" env KRB5_CONFIG="$ADDC_DIR_KRB5" \
	    KRB5CCNAME="FILE:$ADDC_CCACHE" "$@"
}

# addc_member_join: the member server's smb.conf, krb5.conf and
# directories, its addresses in the dc ns, its name in every namespace's
# hosts file (in the cli ns 127.0.0.1, smbaccel), and `net ads join` as
# the domain's Administrator, once the DC (addc_bed) listens for LDAP; it
# finds the DC by a CLDAP ping.  ADDC_MEM_EXTRA: more [global] lines;
# ADDC_JOIN_DEBUG: options for net (-d 5), its output in join.out;
# ADDC_MEM_SHARES: more shares.
addc_member_join() {
	local d t0 out
	command -v smbd >/dev/null && command -v winbindd >/dev/null && command -v net >/dev/null ||
	    skip "smbd, winbindd or net not installed (samba, winbind)"
	for d in run lib cache log etc; do mkdir -p "$ADDC_MEM_DIR/mnt/$d"; done
	mkdir -p "$ADDC_MEM_DIR/log" "$ADDC_MEM_SHARE_DIR"
	chmod 0777 "$ADDC_MEM_SHARE_DIR"
	addc_krb5_conf "$ADDC_MEM_DIR/mnt/krb5.conf" "$ADDC_IP"
	cat > "$ADDC_MEM_CONF" <<EOF
[global]
	netbios name = ${ADDC_MEM_HOST^^}
	workgroup = $ADDC_DOMAIN
	realm = $ADDC_REALM
	security = ads
	password server = $ADDC_FQDN
	kerberos method = secrets only
	interfaces = $ADDC_MEM_IP $ADDC_MEM_DIR_IP
	bind interfaces only = yes
	smb ports = 445
	disable netbios = yes
$(samba_private_dirs "$ADDC_MEM_DIR")
	# winbindd's socket where the NSS module and smbd look for it: the
	# compiled-in directory, under the private /run/samba
	winbindd socket directory = /run/samba/winbindd
	log file = $ADDC_MEM_DIR/log/log.%m
	max log size = 0
	log level = ${ADDC_LOG_LEVEL:-1}
	idmap config * : backend = tdb
	idmap config * : range = 3000-7999
	idmap config $ADDC_DOMAIN : backend = rid
	idmap config $ADDC_DOMAIN : range = 10000-999999
	winbind use default domain = yes
	map to guest = never
	ea support = yes
	load printers = no
	printing = bsd
	printcap name = /dev/null
	disable spoolss = yes
	${ADDC_MEM_EXTRA:-}

[share]
	path = $ADDC_MEM_SHARE_DIR
	read only = no
${ADDC_MEM_SHARES:-}
EOF
	ip netns exec "$ADDC_DCNS" ip addr add "$ADDC_MEM_IP/24" dev kd0 &&
	ip netns exec "$ADDC_DCNS" ip addr add "$ADDC_MEM_DIR_IP/24" dev kd1 ||
	    fail "cannot give the member server its addresses"
	printf '127.0.0.1\t%s %s\n' "$ADDC_MEM_FQDN" "$ADDC_MEM_HOST" >> "/etc/netns/$ADDC_CLI/hosts"
	printf '%s\t%s %s\n' "$ADDC_MEM_DIR_IP" "$ADDC_MEM_FQDN" "$ADDC_MEM_HOST" >> "/etc/netns/$ADDC_DIRNS/hosts"
	printf '%s\t%s %s\n' "$ADDC_MEM_IP" "$ADDC_MEM_FQDN" "$ADDC_MEM_HOST" >> "/etc/netns/$ADDC_DCNS/hosts"
	# the DC's LDAP server comes up after its smbd and KDC (it makes its
	# TLS key first): join once it listens
	t0=$(now)
	n=600
	until ip netns exec "$ADDC_DCNS" ss -Hltn "src $ADDC_IP and sport = :389" 2>/dev/null | grep -q .; do
		n=$((n - 1)); [ $n -gt 0 ] || fail "the DC's LDAP server is not listening on $ADDC_IP:389 after 60 s"
		sleep 0.1
	done
	info "the DC's LDAP server listens after $(elapsed "$t0") s"
	out=$(_addc_mem_mnt ip netns exec "$ADDC_DCNS" net ads join -s "$ADDC_MEM_CONF" \
	    -S "$ADDC_FQDN" -U "Administrator%$ADDC_ADMIN_PASS" --no-dns-updates ${ADDC_JOIN_DEBUG:-} 2>&1) ||
	    { echo "$out" > "$ADDC_MEM_DIR/join.out"; echo "$out" | tail -n 20; fail "net ads join failed"; }
	echo "$out" > "$ADDC_MEM_DIR/join.out"
	info "${ADDC_MEM_HOST^^} joined $ADDC_REALM in $(elapsed "$t0") s: $(echo "$out" | tail -n 1)"
}

# addc_member_start: winbindd and smbd of the member, in one private
# mount namespace in the dc ns; ready when smbd listens and winbindd
# reaches the DC (wbinfo -P).
addc_member_start() {
	local n=300
	setsid unshare -m --propagation private /bin/sh -c "$ADDC_MNT_SH" addc-mnt \
	    "$ADDC_MEM_DIR/mnt" ip netns exec "$ADDC_DCNS" /bin/sh -c '
		winbindd -s "$1" -F --no-process-group </dev/null >"$2/winbindd.out" 2>&1 &
		smbd -s "$1" -F --no-process-group </dev/null >"$2/smbd.out" 2>&1 &
		wait' member-sh "$ADDC_MEM_CONF" "$ADDC_MEM_DIR" </dev/null >/dev/null 2>&1 &
	ADDC_MEM_PID=$!
	while [ $n -gt 0 ]; do
		kill -0 "$ADDC_MEM_PID" 2>/dev/null ||
		    { cat "$ADDC_MEM_DIR"/*.out; ADDC_MEM_PID=; fail "the member's smbd and winbindd exited at start"; }
		ip netns exec "$ADDC_DCNS" ss -Hltn "src $ADDC_MEM_IP and sport = :445" 2>/dev/null | grep -q . &&
		    _addc_mem_mnt ip netns exec "$ADDC_DCNS" wbinfo -P >/dev/null 2>&1 && break
		sleep 0.1; n=$((n - 1))
	done
	[ $n -gt 0 ] || { cat "$ADDC_MEM_DIR"/*.out; tail -n 20 "$ADDC_MEM_DIR/log/log.winbindd";
	    fail "the member's smbd is not listening on $ADDC_MEM_IP:445, or its winbindd does not reach the DC, after 30 s"; }
	info "member server ${ADDC_MEM_HOST^^} (smbd, winbindd) pid $ADDC_MEM_PID on $ADDC_MEM_IP $ADDC_MEM_DIR_IP"
}

# smbd starts samba-dcerpcd on demand, and it leaves the tree (it becomes
# a daemon): it and its rpcd_* workers go by the member's smb.conf in
# their command lines, a path of this test's own.
addc_member_stop() {
	local n=50
	[ -n "$ADDC_MEM_PID" ] || return 0
	_addc_kill_tree "$ADDC_MEM_PID"
	ADDC_MEM_PID=
	pkill -TERM -f -- "--configfile=$ADDC_MEM_CONF( |\$)"
	while [ $n -gt 0 ] && pgrep -f -- "--configfile=$ADDC_MEM_CONF( |\$)" >/dev/null; do
		sleep 0.1; n=$((n - 1))
	done
	pkill -KILL -f -- "--configfile=$ADDC_MEM_CONF( |\$)"
}
