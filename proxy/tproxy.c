/*
 * tproxy.c - the policy routing of mode = tproxy, through libnl-route.
 *
 * A TPROXY firewall rule (-j TPROXY --on-port P --tproxy-mark MARK, or nft
 * "tproxy to :P meta mark set MARK") hands a packet to smbaccel's
 * transparent listener, but the packet is addressed to the server, and the
 * kernel only delivers it if routing calls that address local.  Per address
 * family smbaccel therefore installs (the `ip` equivalent, -4 and -6):
 *
 *   ip rule  add pref 32000 iif lo fwmark MARK lookup main  proto 177  (a)
 *   ip rule  add pref 32001 fwmark MARK lookup TABLE        proto 177  (b)
 *   ip route add local default dev lo table TABLE           proto 177  (c)
 *
 * (b) and (c) are the classic TPROXY recipe (kernel tproxy.txt).  (a) is
 * there because smbaccel sets SO_MARK = MARK on its own upstream sockets so
 * that firewall rules can exclude them: "iif lo" matches locally generated
 * packets only, so those keep using the main table instead of being routed
 * into lo by (b).  It also covers net.ipv4.tcp_fwmark_accept = 1, where the
 * accepted sockets carry the mark too.
 *
 * Ownership.  Before adding a rule, the current rules are read; for the
 * route, the add is exclusive (NLM_F_EXCL) and the routes are read only
 * when it reports one already there.  An equivalent entry (same selectors
 * and target, any priority) that is already there is used as it is and
 * never removed -- unless it carries smbaccel's protocol tag (177), which
 * means an earlier smbaccel died without cleaning up (SIGKILL, crash):
 * such leftovers are adopted and removed at stop like our own.  A default
 * route of another kind in TABLE is a conflict and setup fails (pick
 * another tproxy_table).  Teardown removes, in reverse order, exactly the
 * entries setup added or adopted.
 *
 * IPv6: when the kernel has no IPv6 (EAFNOSUPPORT), only IPv4 is set up,
 * with a warning.  Every other failure undoes what was done and fails.
 */
#include <errno.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>

#include <netlink/netlink.h>
#include <netlink/errno.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>

#include "proxy/proxy.h"
#include "proxy/tproxy.h"

enum ent_kind { ENT_RULE = 0, ENT_ROUTE };

/* One installed (or adopted) entry: the object that deletes it. */
struct ent {
	enum ent_kind kind;
	struct nl_object *obj;
	char desc[128];
};

#define MAX_ENTS 6                 /* 3 per family */
static struct ent ents[MAX_ENTS];
static size_t nents;

static const char *
fam_flag(int family)
{
	return family == AF_INET6 ? "-6" : "-4";
}

static struct nl_sock *
nl_open(void)
{
	struct nl_sock *sk;
	int err;

	if ((sk = nl_socket_alloc()) == NULL) {
		log_warnx("tproxy: out of memory");
		return NULL;
	}
	if ((err = nl_connect(sk, NETLINK_ROUTE)) < 0) {
		log_warnx("tproxy: cannot open a route netlink socket: %s",
		    nl_geterror(err));
		nl_socket_free(sk);
		return NULL;
	}
	return sk;
}

/* Log why adding desc failed, with the hint an administrator needs. */
static void
add_failed(const char *desc, int err)
{
	if (err == -NLE_PERM)
		log_warnx("tproxy: cannot add '%s': %s (mode = tproxy needs "
		    "CAP_NET_ADMIN: run as root or grant the capability, "
		    "see smbaccel(8))", desc, nl_geterror(err));
	else
		log_warnx("tproxy: cannot add '%s': %s", desc,
		    nl_geterror(err));
}

static bool
no_af(int err)
{
	return err == -NLE_AF_NOSUPPORT || err == -NLE_OPNOTSUPP;
}

static void
remember(enum ent_kind kind, struct nl_object *obj, const char *desc)
{
	struct ent *e = &ents[nents++];

	e->kind = kind;
	nl_object_get(obj);
	e->obj = obj;
	snprintf(e->desc, sizeof(e->desc), "%s", desc);
}

static bool
has_tag(struct rtnl_rule *r)
{
	uint8_t proto;

	return rtnl_rule_get_protocol(r, &proto) == 0 &&
	    proto == PX_TPROXY_PROTO;
}

/* A rule that does what ours would: same selectors, same target. */
static bool
rule_equiv(struct rtnl_rule *r, int family, uint32_t mark, const char *iif,
    uint32_t table)
{
	const char *riif = rtnl_rule_get_iif(r);
	struct nl_addr *src = rtnl_rule_get_src(r), *dst = rtnl_rule_get_dst(r);
	uint16_t a, b;
	uint8_t p;

	if (rtnl_rule_get_family(r) != family ||
	    rtnl_rule_get_action(r) != FR_ACT_TO_TBL ||
	    rtnl_rule_get_table(r) != table || rtnl_rule_get_mark(r) != mark ||
	    rtnl_rule_get_mask(r) != UINT32_MAX)
		return false;
	if ((iif == NULL) != (riif == NULL) ||
	    (iif != NULL && strcmp(iif, riif) != 0))
		return false;
	if (rtnl_rule_get_oif(r) != NULL || rtnl_rule_get_dsfield(r) != 0 ||
	    (src && nl_addr_get_prefixlen(src) != 0) ||
	    (dst && nl_addr_get_prefixlen(dst) != 0) ||
	    rtnl_rule_get_l3mdev(r) >= 0 || rtnl_rule_get_ipproto(r, &p) == 0 ||
	    rtnl_rule_get_sport(r, &a, &b) == 0 ||
	    rtnl_rule_get_dport(r, &a, &b) == 0)
		return false;
	return true;
}

/*
 * Make sure "[iif IIF] fwmark MARK lookup TABLE" is in place for family.
 * 1 = done (added, adopted or already there), 0 = family not supported,
 * -1 = error (logged).
 */
static int
ensure_rule(struct nl_sock *sk, int family, uint32_t pref, const char *iif,
    uint32_t mark, uint32_t table)
{
	struct nl_cache *cache = NULL;
	struct nl_object *o;
	struct rtnl_rule *r = NULL;
	char desc[128], tname[16];
	int err, rc = -1;

	if (table == RT_TABLE_MAIN)
		snprintf(tname, sizeof(tname), "main");
	else
		snprintf(tname, sizeof(tname), "%u", table);
	snprintf(desc, sizeof(desc), "ip %s rule pref %u %s%s%sfwmark %#x "
	    "lookup %s proto %u", fam_flag(family), pref, iif ? "iif " : "",
	    iif ? iif : "", iif ? " " : "", mark, tname, PX_TPROXY_PROTO);
	if ((err = rtnl_rule_alloc_cache(sk, family, &cache)) < 0) {
		if (no_af(err))
			return 0;
		log_warnx("tproxy: cannot read the routing rules: %s",
		    nl_geterror(err));
		return -1;
	}
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_rule *x = (struct rtnl_rule *)o;

		if (!rule_equiv(x, family, mark, iif, table))
			continue;
		if (has_tag(x)) {
			log_info("tproxy: adopting leftover rule pref %u (%s)",
			    rtnl_rule_get_prio(x), desc);
			remember(ENT_RULE, o, desc);
		} else
			log_info("tproxy: an equivalent rule is already there "
			    "(pref %u); using it, it will not be removed (%s)",
			    rtnl_rule_get_prio(x), desc);
		rc = 1;
		goto done;
	}
	if ((r = rtnl_rule_alloc()) == NULL) {
		log_warnx("tproxy: out of memory");
		goto done;
	}
	rtnl_rule_set_family(r, family);
	rtnl_rule_set_prio(r, pref);
	rtnl_rule_set_mark(r, mark);
	rtnl_rule_set_mask(r, UINT32_MAX);
	rtnl_rule_set_table(r, table);
	rtnl_rule_set_action(r, FR_ACT_TO_TBL);
	(void)rtnl_rule_set_protocol(r, PX_TPROXY_PROTO);
	if (iif != NULL && rtnl_rule_set_iif(r, iif) < 0)
		goto done;
	if ((err = rtnl_rule_add(sk, r, NLM_F_EXCL)) < 0) {
		if (no_af(err))
			rc = 0;
		else
			add_failed(desc, err);
		goto done;
	}
	remember(ENT_RULE, (struct nl_object *)r, desc);
	log_info("tproxy: added %s", desc);
	rc = 1;
done:
	if (r != NULL)
		rtnl_rule_put(r);
	nl_cache_free(cache);
	return rc;
}

static int
nh_ifindex(struct rtnl_route *rt)
{
	struct rtnl_nexthop *nh;

	if (rtnl_route_get_nnexthops(rt) != 1 ||
	    (nh = rtnl_route_nexthop_n(rt, 0)) == NULL)
		return 0;
	return rtnl_route_nh_get_ifindex(nh);
}

/*
 * A default route is already in the table (the add said EEXIST): use it if
 * it is "local default dev lo" (adopting our own leftover), refuse
 * otherwise.  Only read on that rare path: a full route dump can be large
 * on a router.  1 = usable, -1 = conflict or error (logged).
 */
static int
existing_route(struct nl_sock *sk, int family, uint32_t table, int lo,
    const char *desc)
{
	struct nl_cache *cache = NULL;
	struct nl_object *o;
	int err, rc = -1;

	if ((err = rtnl_route_alloc_cache(sk, family, 0, &cache)) < 0) {
		log_warnx("tproxy: cannot read the routes: %s",
		    nl_geterror(err));
		return -1;
	}
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_route *x = (struct rtnl_route *)o;
		struct nl_addr *d = rtnl_route_get_dst(x);

		if (rtnl_route_get_family(x) != family ||
		    rtnl_route_get_table(x) != table ||
		    (d != NULL && nl_addr_get_prefixlen(d) != 0))
			continue;
		if (rtnl_route_get_type(x) != RTN_LOCAL ||
		    nh_ifindex(x) != lo)
			continue;
		if (rtnl_route_get_protocol(x) == PX_TPROXY_PROTO) {
			log_info("tproxy: adopting leftover route (%s)", desc);
			remember(ENT_ROUTE, o, desc);
		} else
			log_info("tproxy: 'local default dev lo' is already in "
			    "table %u; using it, it will not be removed", table);
		rc = 1;
		break;
	}
	if (rc == -1)
		log_warnx("tproxy: table %u already has a default route that "
		    "is not 'local default dev lo'; choose another "
		    "tproxy_table (see ip %s route show table %u)", table,
		    fam_flag(family), table);
	nl_cache_free(cache);
	return rc;
}

/* "local default dev lo table TABLE" for family; returns as ensure_rule. */
static int
ensure_route(struct nl_sock *sk, int family, uint32_t table)
{
	static const uint8_t zero[16];
	struct rtnl_route *rt = NULL;
	struct rtnl_nexthop *nh = NULL;
	struct nl_addr *dst = NULL;
	char desc[128];
	int err, rc = -1, lo;

	snprintf(desc, sizeof(desc), "ip %s route local default dev lo "
	    "table %u proto %u", fam_flag(family), table, PX_TPROXY_PROTO);
	if ((lo = (int)if_nametoindex("lo")) == 0) {
		log_warn("tproxy: no loopback interface");
		return -1;
	}
	if ((rt = rtnl_route_alloc()) == NULL ||
	    (nh = rtnl_route_nh_alloc()) == NULL ||
	    (dst = nl_addr_build(family, zero, family == AF_INET6 ? 16 : 4)) ==
	    NULL) {
		log_warnx("tproxy: out of memory");
		goto done;
	}
	nl_addr_set_prefixlen(dst, 0);
	(void)rtnl_route_set_family(rt, (uint8_t)family);
	rtnl_route_set_table(rt, table);
	(void)rtnl_route_set_type(rt, RTN_LOCAL);
	rtnl_route_set_scope(rt, RT_SCOPE_HOST);
	rtnl_route_set_protocol(rt, PX_TPROXY_PROTO);
	if ((err = rtnl_route_set_dst(rt, dst)) < 0) {
		log_warnx("tproxy: %s: %s", desc, nl_geterror(err));
		goto done;
	}
	rtnl_route_nh_set_ifindex(nh, lo);
	rtnl_route_add_nexthop(rt, nh);
	nh = NULL;                          /* rt owns it now */
	/* NLM_F_EXCL: EEXIST when a default route with our metric is there */
	if ((err = rtnl_route_add(sk, rt, NLM_F_EXCL)) < 0) {
		if (err == -NLE_EXIST)
			rc = existing_route(sk, family, table, lo, desc);
		else if (no_af(err))
			rc = 0;
		else
			add_failed(desc, err);
		goto done;
	}
	remember(ENT_ROUTE, (struct nl_object *)rt, desc);
	log_info("tproxy: added %s", desc);
	rc = 1;
done:
	if (nh != NULL)
		rtnl_route_nh_free(nh);
	nl_addr_put(dst);
	if (rt != NULL)
		rtnl_route_put(rt);
	return rc;
}

/*
 * Rules tagged as ours (proto 177) that this smbaccel neither added nor
 * adopted: left by one that was killed before it could remove them and
 * ran with another tproxy_mark or tproxy_table, or belonging to another
 * instance that runs now.  They are not ours to remove (the other
 * instance would lose its interception), and harmless while their mark
 * is set by no firewall rule, but they outlive every restart: each is
 * named once at setup, with the commands that remove it.  Rules only:
 * reading the routes would dump a router's whole table.
 */
static void
warn_foreign(struct nl_sock *sk, int family, uint32_t mark, uint32_t table)
{
	struct nl_cache *cache = NULL;
	struct nl_object *o;
	const char *f = fam_flag(family);

	if (rtnl_rule_alloc_cache(sk, family, &cache) < 0)
		return;
	for (o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_rule *x = (struct rtnl_rule *)o;
		uint32_t t = rtnl_rule_get_table(x), m = rtnl_rule_get_mark(x);
		char tn[16], flush[64] = "";

		if (rtnl_rule_get_family(x) != family || !has_tag(x) ||
		    (m == mark && (rule_equiv(x, family, mark, "lo",
		    RT_TABLE_MAIN) || rule_equiv(x, family, mark, NULL, table))))
			continue;
		if (t == RT_TABLE_MAIN)
			snprintf(tn, sizeof(tn), "main");
		else {
			snprintf(tn, sizeof(tn), "%u", t);
			snprintf(flush, sizeof(flush), "; ip %s route flush "
			    "table %u proto %u", f, t, PX_TPROXY_PROTO);
		}
		log_warnx("tproxy: rule pref %u fwmark %#x lookup %s proto %u "
		    "was installed by another smbaccel (another tproxy_mark or "
		    "tproxy_table, killed before it could remove it, or "
		    "running now); left as it is.  If no smbaccel uses fwmark "
		    "%#x, remove it: ip %s rule del pref %u fwmark %#x lookup "
		    "%s%s", rtnl_rule_get_prio(x), m, tn, PX_TPROXY_PROTO, m, f,
		    rtnl_rule_get_prio(x), m, tn, flush);
	}
	nl_cache_free(cache);
}

/* The local route needs lo up (IPv6 refuses it otherwise: ENETDOWN). */
static bool
lo_is_up(void)
{
	struct ifreq ifr;
	int fd, rc;

	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return true;    /* cannot tell; let the kernel answer */
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
	close(fd);
	return rc == -1 || (ifr.ifr_flags & IFF_UP) != 0;
}

/* Is IPv6 switched off on lo (net.ipv6.conf.lo.disable_ipv6 = 1, which
 * net.ipv6.conf.all.disable_ipv6 = 1 sets too, a common hardening of
 * routers)?  The kernel then refuses the IPv6 local route with EACCES. */
static bool
ipv6_off_on_lo(void)
{
	FILE *f = fopen("/proc/sys/net/ipv6/conf/lo/disable_ipv6", "re");
	int c;

	if (f == NULL)
		return false;   /* no IPv6 at all: ensure_route says so */
	c = fgetc(f);
	fclose(f);
	return c == '1';
}

/* Delete ents[] from the last to the first; the list ends up empty. */
static void
remove_all(struct nl_sock *sk)
{
	while (nents > 0) {
		struct ent *e = &ents[--nents];
		int err;

		err = e->kind == ENT_RULE ?
		    rtnl_rule_delete(sk, (struct rtnl_rule *)e->obj, 0) :
		    rtnl_route_delete(sk, (struct rtnl_route *)e->obj, 0);
		if (err < 0 && err != -NLE_OBJ_NOTFOUND)
			log_warnx("tproxy: cannot undo '%s': %s", e->desc,
			    nl_geterror(err));
		else if (err == 0)
			log_info("tproxy: removed %s", e->desc);
		nl_object_put(e->obj);
		e->obj = NULL;
	}
}

int
px_tproxy_setup(uint32_t mark, uint32_t table)
{
	static const int fams[] = { AF_INET, AF_INET6 };
	struct nl_sock *sk;
	size_t i;

	if (mark == 0 || table == 0 ||
	    (table >= RT_TABLE_DEFAULT && table <= RT_TABLE_LOCAL)) {
		/* fwmark 0 would match every packet: never install that */
		log_warnx("tproxy: invalid tproxy_mark %#x or tproxy_table %u",
		    mark, table);
		return -1;
	}
	if (nents > 0)
		return 0;
	if (!lo_is_up()) {
		log_warnx("tproxy: the loopback interface is down; TPROXY'd "
		    "packets are delivered through it (ip link set lo up)");
		return -1;
	}
	if ((sk = nl_open()) == NULL)
		return -1;
	for (i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		int f = fams[i], rc;

		if (f == AF_INET6 && ipv6_off_on_lo()) {
			log_warnx("tproxy: IPv6 is disabled on lo "
			    "(net.ipv6.conf.lo.disable_ipv6 = 1); TPROXY "
			    "routing installed for IPv4 only, IPv6 clients are "
			    "not intercepted");
			continue;
		}
		rc = ensure_route(sk, f, table);
		if (rc == 1)
			rc = ensure_rule(sk, f, PX_TPROXY_PREF_SELF, "lo", mark,
			    RT_TABLE_MAIN);
		if (rc == 1)
			rc = ensure_rule(sk, f, PX_TPROXY_PREF_DIVERT, NULL,
			    mark, table);
		if (rc == 0 && f == AF_INET6) {
			log_warnx("tproxy: no IPv6 in this kernel; TPROXY "
			    "routing installed for IPv4 only");
			continue;
		}
		if (rc != 1) {
			if (rc == 0)
				log_warnx("tproxy: IPv4 routing not supported");
			remove_all(sk);
			nl_socket_free(sk);
			return -1;
		}
		warn_foreign(sk, f, mark, table);
	}
	nl_socket_free(sk);
	log_info("tproxy: policy routing in place (fwmark %#x -> table %u)",
	    mark, table);
	return 0;
}

void
px_tproxy_teardown(void)
{
	struct nl_sock *sk;
	size_t i;

	if (nents == 0)
		return;
	if ((sk = nl_open()) == NULL) {
		for (i = 0; i < nents; i++) {
			log_warnx("tproxy: left in place: %s", ents[i].desc);
			nl_object_put(ents[i].obj);
		}
		nents = 0;
		return;
	}
	remove_all(sk);
	nl_socket_free(sk);
}
