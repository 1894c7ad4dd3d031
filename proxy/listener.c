/*
 * listener.c - listening sockets and accept.
 *
 * forward:     connect every client to the configured upstream;
 * transparent: iptables/nftables REDIRECT, destination from SO_ORIGINAL_DST;
 * tproxy:      TPROXY, socket with IP_TRANSPARENT, destination is the
 *              accepted socket's own local address.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/netfilter_ipv4.h>

#include <ev.h>

#include "proxy/conn.h"
#include "proxy/listener.h"

#ifndef IPV6_TRANSPARENT
#define IPV6_TRANSPARENT 75
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

struct listener {
	ev_io io;
	ev_timer pause;      /* accept paused after EMFILE/ENFILE */
	int fd;
	struct sockaddr_storage addr;
};

static struct listener listeners[POL_LISTEN_MAX];
static size_t nlisteners;
#define PX_UP_MAX 8
/* forward mode: the upstream's addresses (a name may have several), and
 * the one connections go to; a connect that fails moves to the next */
static struct sockaddr_storage ups[PX_UP_MAX], upstream;
static size_t nups, upcur;
/* the refusals a connection flood can cause, logged at a bounded rate */
static struct px_lograte refused_rate, unredirected_rate, loop_rate;

/* How long a name may take to resolve.  The event loop waits for it (at
 * start, at a reload, in -t), so it is bounded well under the systemd
 * watchdog (WatchdogSec=30s): the C library's own retries over several
 * silent nameservers and search domains take 45 s and more. */
#define RESOLVE_WAIT_S 10

/* One lookup on its own thread; the waiter and the thread each hold a
 * reference, and whoever drops the last one frees it (a lookup that
 * outlives its wait ends on its own). */
struct lookup {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;
	bool done;
	int rc;
	struct sockaddr_storage ss[PX_UP_MAX];
	size_t n;
	char host[POL_HOST_MAX + 1];
	char port[8];
};

/* The addresses of res, at most max of them, into ss; how many. */
static size_t
ai_copy(const struct addrinfo *res, struct sockaddr_storage *ss, size_t max)
{
	size_t n = 0;

	for (; res != NULL && n < max; res = res->ai_next)
		if (res->ai_addrlen <= sizeof(*ss)) {
			memset(&ss[n], 0, sizeof(ss[n]));
			memcpy(&ss[n++], res->ai_addr, res->ai_addrlen);
		}
	return n;
}

static void
lookup_put(struct lookup *k)
{
	bool last;

	pthread_mutex_lock(&k->mu);
	last = --k->refs == 0;
	pthread_mutex_unlock(&k->mu);
	if (last) {
		pthread_cond_destroy(&k->cv);
		pthread_mutex_destroy(&k->mu);
		free(k);
	}
}

static void *
lookup_run(void *arg)
{
	struct lookup *k = arg;
	struct addrinfo hints, *res = NULL;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(k->host, k->port, &hints, &res);
	pthread_mutex_lock(&k->mu);
	k->rc = rc;
	if (rc == 0 && (k->n = ai_copy(res, k->ss, PX_UP_MAX)) == 0)
		k->rc = EAI_NONAME;
	k->done = true;
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
	if (res != NULL)
		freeaddrinfo(res);
	lookup_put(k);
	return NULL;
}

/* getaddrinfo of a name, given at most RESOLVE_WAIT_S: 0 with its first
 * max addresses in ss and their number in *n, or a gai error, or EAI_AGAIN
 * with *late set when the time ran out. */
static int
lookup_name(const char *host, uint16_t port, struct sockaddr_storage *ss,
    size_t max, size_t *n, bool *late)
{
	struct lookup *k;
	struct timespec until;
	pthread_attr_t at;
	pthread_t t;
	int rc = 0;

	*late = false;
	if ((k = calloc(1, sizeof(*k))) == NULL)
		return EAI_MEMORY;
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->cv, NULL);
	k->refs = 2;
	snprintf(k->host, sizeof(k->host), "%s", host);
	snprintf(k->port, sizeof(k->port), "%u", port);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, lookup_run, k) != 0) {
		pthread_attr_destroy(&at);
		k->refs = 1;
		lookup_put(k);
		return EAI_SYSTEM;
	}
	pthread_attr_destroy(&at);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += RESOLVE_WAIT_S;
	pthread_mutex_lock(&k->mu);
	while (!k->done && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&k->cv, &k->mu, &until);
	if (k->done) {
		rc = k->rc;
		if (rc == 0) {
			*n = k->n < max ? k->n : max;
			memcpy(ss, k->ss, *n * sizeof(*ss));
		}
	} else {
		*late = true;
		rc = EAI_AGAIN;
	}
	pthread_mutex_unlock(&k->mu);
	lookup_put(k);
	return rc;
}

/* Did the last failed resolve() fail for want of an answer (a name server
 * silent or unreachable: EAI_AGAIN), rather than a name that is not? */
static bool resolve_unanswered;

/* Resolve a policy address (a literal, or a name) to its first max
 * addresses (*n of them; n NULL: the first only). */
static int
resolve_n(const struct pol_addr *a, struct sockaddr_storage *ss, size_t max,
    size_t *n)
{
	struct addrinfo hints, *res = NULL;
	char port[8];
	size_t one;
	bool late;
	int rc;

	if (n == NULL) {
		n = &one;
		max = 1;
	}
	resolve_unanswered = false;
	if (a->kind == POL_ADDR_NAME) {
		rc = lookup_name(a->host, a->port, ss, max, n, &late);
		resolve_unanswered = late || rc == EAI_AGAIN;
		if (late)
			log_warnx("cannot resolve %s: no answer within %d s "
			    "(are the nameservers of /etc/resolv.conf "
			    "reachable?)", a->host, RESOLVE_WAIT_S);
		else if (rc != 0)
			log_warnx("cannot resolve %s: %s", a->host,
			    rc == EAI_SYSTEM ? strerror(errno) :
			    gai_strerror(rc));
		return rc == 0 ? 0 : -1;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST;
	snprintf(port, sizeof(port), "%u", a->port);
	if ((rc = getaddrinfo(a->host, port, &hints, &res)) != 0) {
		log_warnx("cannot resolve %s: %s", a->host, gai_strerror(rc));
		return -1;
	}
	*n = ai_copy(res, ss, max);
	freeaddrinfo(res);
	return *n > 0 ? 0 : -1;
}

#define resolve(a, ss) resolve_n((a), (ss), 1, NULL)

static socklen_t
ss_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
	    sizeof(struct sockaddr_in6);
}

static bool
same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	return a->ss_family == b->ss_family && memcmp(a, b, ss_len(a)) == 0;
}

/* Is ss an address of this host (can a plain socket bind to it)? */
static bool
addr_is_local(const struct sockaddr_storage *ss)
{
	struct sockaddr_storage a = *ss;
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool local;

	if (fd == -1)
		return false;
	if (a.ss_family == AF_INET)
		((struct sockaddr_in *)&a)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&a)->sin6_port = 0;
	local = bind(fd, (struct sockaddr *)&a, ss_len(&a)) == 0;
	close(fd);
	return local;
}

/* Would connecting to dst reach this listener again (a loop)? */
static bool
loops_back(const struct listener *l, const struct sockaddr_storage *dst)
{
	in_port_t lp, dp;

	if (same_addr(dst, &l->addr))
		return true;
	if (dst->ss_family != l->addr.ss_family)
		return false;
	lp = l->addr.ss_family == AF_INET ?
	    ((const struct sockaddr_in *)&l->addr)->sin_port :
	    ((const struct sockaddr_in6 *)&l->addr)->sin6_port;
	dp = dst->ss_family == AF_INET ?
	    ((const struct sockaddr_in *)dst)->sin_port :
	    ((const struct sockaddr_in6 *)dst)->sin6_port;
	/* a wildcard listener: same port on any local address */
	return lp == dp && addr_is_local(dst);
}

/* In forward mode, is the upstream one of smbaccel's own listeners (or a
 * local address on a wildcard listener's port)?  Every connection would
 * then connect to smbaccel again, each one more, until max_connections.
 * ls: the listeners (bound, or resolved only, for -t). */
static bool
upstream_loops(const struct listener *ls, size_t n,
    const struct sockaddr_storage *up)
{
	char a[64], b[64];
	size_t i;

	for (i = 0; i < n; i++)
		if (loops_back(&ls[i], up)) {
			log_warnx("upstream %s is smbaccel's own listener %s: "
			    "every connection would come back to smbaccel",
			    px_addr_str(up, a, sizeof(a)),
			    px_addr_str(&ls[i].addr, b, sizeof(b)));
			return true;
		}
	return false;
}

/* ss, an IPv4-mapped IPv6 address given as AF_INET */
static struct sockaddr_storage
unmapped(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	struct sockaddr_storage r = *ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&r;

	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		memset(&r, 0, sizeof(r));
		s4->sin_family = AF_INET;
		s4->sin_port = s6->sin6_port;
		memcpy(&s4->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
	}
	return r;
}

/* Same address and port (an IPv4 one also in its IPv6-mapped form)? */
static bool
same_endpoint(const struct sockaddr_storage *a,
    const struct sockaddr_storage *b)
{
	struct sockaddr_storage x = unmapped(a), y = unmapped(b);
	const struct sockaddr_in *x4 = (const struct sockaddr_in *)&x;
	const struct sockaddr_in *y4 = (const struct sockaddr_in *)&y;
	const struct sockaddr_in6 *x6 = (const struct sockaddr_in6 *)&x;
	const struct sockaddr_in6 *y6 = (const struct sockaddr_in6 *)&y;

	if (x.ss_family != y.ss_family)
		return false;
	if (x.ss_family == AF_INET)
		return x4->sin_port == y4->sin_port &&
		    x4->sin_addr.s_addr == y4->sin_addr.s_addr;
	if (x.ss_family == AF_INET6)
		return x6->sin6_port == y6->sin6_port &&
		    memcmp(&x6->sin6_addr, &y6->sin6_addr, 16) == 0;
	return false;
}

/*
 * Is the connection from peer to dst one of smbaccel's own upstream
 * connections (by the address each upstream socket got at its connect,
 * kept with its connection: px_link up_local, and the server)?  Then the
 * interception rules diverted it back to smbaccel, which would connect
 * again, and so on; the connection's id, else 0.  Transparent modes only;
 * a walk of the connections per accept.
 */
static uint64_t
own_upstream(const struct sockaddr_storage *peer,
    const struct sockaddr_storage *dst)
{
	const struct px_conn *c;

	for (c = px_conn_first(); c; c = c->next)
		if (same_endpoint(&px_link_of_const(c)->up_local, peer) &&
		    same_endpoint(&c->dst_addr, dst))
			return c->id;
	return 0;
}

/*
 * Out of descriptors or memory (accept, or the upstream socket of a client
 * just accepted): stop accepting for a second on every listener, so the
 * clients still queued wait in the kernel backlog instead of being taken
 * and dropped, and the loop does not spin on a backlog it cannot serve.
 */
void
px_listen_pause(const char *what)
{
	size_t i;
	bool any = false;

	for (i = 0; i < nlisteners; i++) {
		struct listener *l = &listeners[i];

		if (l->fd == -1 || ev_is_active(&l->pause))
			continue;
		ev_io_stop(px_rt.loop, &l->io);
		ev_timer_set(&l->pause, 1., 0.);
		ev_timer_start(px_rt.loop, &l->pause);
		any = true;
	}
	if (any)
		log_warn("%s: pausing new connections for 1 s", what);
}

/* Are two descriptors free, one for the client and one for its server
 * connection?  Else the client is better left in the listen queue than
 * accepted and reset when its upstream socket cannot be made (errno is
 * the reason when not). */
static bool
two_fds_free(int fd)
{
	int a, b;

	if ((a = fcntl(fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return false;
	b = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	close(a);
	if (b == -1) {
		errno = EMFILE;
		return false;
	}
	close(b);
	return true;
}

static void
accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct listener *l = w->data;
	const struct pol_global *g = pol_global(px_rt.cfg);
	int i;

	(void)loop;
	(void)revents;
	for (i = 0; i < 64; i++) {
		struct sockaddr_storage peer, dst;
		socklen_t plen = sizeof(peer), dlen = sizeof(dst);
		char a[64], b[64];
		uint64_t id;
		int fd;

		if (!two_fds_free(l->fd)) {
			px_listen_pause("accept (no descriptors for a client "
			    "and its server connection)");
			return;
		}
		fd = accept4(l->fd, (struct sockaddr *)&peer, &plen,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* the pending connection stays queued; without a
				 * pause the loop would spin on it */
				px_listen_pause("accept");
			} else if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warn("accept");
			return;
		}
		if (px_rt.stopping) {
			close(fd);
			continue;
		}
		if (px_conn_count() >= g->max_connections) {
			px_stats.conns_refused++;
			PX_WARN_RATED(&refused_rate, "refusing client=%s: "
			    "max_connections=%u reached", px_addr_str(&peer, a,
			    sizeof(a)), g->max_connections);
			close(fd);
			continue;
		}
		memset(&dst, 0, sizeof(dst));
		switch (g->mode) {
		case POL_MODE_FORWARD:
			dst = upstream;
			break;
		case POL_MODE_TRANSPARENT:
			if (getsockopt(fd, peer.ss_family == AF_INET6 ?
			    SOL_IPV6 : SOL_IP, peer.ss_family == AF_INET6 ?
			    IP6T_SO_ORIGINAL_DST : SO_ORIGINAL_DST, &dst,
			    &dlen) == -1) {
				int e = errno;

				px_stats.conns_unredirected++;
				PX_WARN_RATED(&unredirected_rate, "client=%s: no "
				    "original destination (not redirected?): %s",
				    px_addr_str(&peer, a, sizeof(a)), strerror(e));
				close(fd);
				continue;
			}
			break;
		case POL_MODE_TPROXY:
			if (getsockname(fd, (struct sockaddr *)&dst, &dlen) == -1) {
				log_warn("getsockname");
				close(fd);
				continue;
			}
			break;
		}
		if (g->mode != POL_MODE_FORWARD && (id = own_upstream(&peer, &dst))) {
			PX_WARN_RATED(&loop_rate, "refusing client=%s: it is the "
			    "upstream connection of conn=%llu, diverted back to "
			    "smbaccel: a loop (do the interception rules skip "
			    "tproxy_mark?)", px_addr_str(&peer, a, sizeof(a)),
			    (unsigned long long)id);
			close(fd);
			continue;
		}
		/* a connection made straight to the listener would loop */
		if (g->mode != POL_MODE_FORWARD && loops_back(l, &dst)) {
			px_stats.conns_unredirected++;
			PX_WARN_RATED(&unredirected_rate, "refusing client=%s: "
			    "destination %s is this listener (connection was not "
			    "redirected)", px_addr_str(&peer, a, sizeof(a)),
			    px_addr_str(&dst, b, sizeof(b)));
			close(fd);
			continue;
		}
		px_conn_new(fd, &peer, &dst);
		if (ev_is_active(&l->pause))
			return;	/* out of descriptors for its upstream */
	}
}

static void
resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct listener *l = w->data;

	(void)revents;
	if (!px_rt.stopping && l->fd != -1)
		ev_io_start(loop, &l->io);
}

/* Resolve the forward upstream and use its addresses (keep: an unchanged
 * upstream at a reload, whose addresses stay when the name does not
 * resolve now: a DNS outage must not refuse the reload). */
static int
use_upstream(const struct pol_global *g, bool keep)
{
	struct sockaddr_storage ss[PX_UP_MAX];
	char a[64], b[64];
	size_t n, i;

	if (resolve_n(&g->upstream, ss, PX_UP_MAX, &n) == -1) {
		if (!keep || nups == 0)
			return -1;
		log_warnx("upstream %s does not resolve now; %s kept",
		    g->upstream.host, px_addr_str(&upstream, a, sizeof(a)));
		return 0;
	}
	for (i = 0; i < n; i++)
		if (nlisteners > 0 &&
		    upstream_loops(listeners, nlisteners, &ss[i]))
			return -1;
	memcpy(ups, ss, n * sizeof(ss[0]));
	nups = n;
	upcur = 0;
	upstream = ups[0];
	if (n > 1)
		log_info("upstream %s: %zu addresses, %s first, then %s after "
		    "a connect that fails", g->upstream.host, n,
		    px_addr_str(&ups[0], a, sizeof(a)),
		    px_addr_str(&ups[1], b, sizeof(b)));
	return 0;
}

int
px_listen_start(const struct pol_global *g)
{
	size_t i;
	int one = 1;

	if (g->mode == POL_MODE_FORWARD && use_upstream(g, false) == -1)
		return -1;
	for (i = 0; i < g->n_listen; i++) {
		struct listener *l = &listeners[nlisteners];
		struct sockaddr_storage two[2];
		char a[64];
		size_t n;

		if (resolve_n(&g->listen[i], two, 2, &n) == -1)
			goto fail;
		l->addr = two[0];
		if (n > 1)
			log_warnx("listen %s has more than one address: "
			    "listening on the first, %s (give each address "
			    "to listen on)", g->listen[i].host,
			    px_addr_str(&two[0], a, sizeof(a)));
		l->fd = socket(l->addr.ss_family,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (l->fd == -1) {
			log_warn("socket");
			goto fail;
		}
		(void)setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one,
		    sizeof(one));
		/* an IPv6 address is IPv6 only, whatever bindv6only says:
		 * "0.0.0.0:445, [::]:445" is then two listeners, not a
		 * conflict, and no IPv4 client arrives v4-mapped (whose
		 * original destination IP6T_SO_ORIGINAL_DST cannot give) */
		if (l->addr.ss_family == AF_INET6 && setsockopt(l->fd,
		    IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) == -1) {
			log_warn("IPV6_V6ONLY on %s",
			    px_addr_str(&l->addr, a, sizeof(a)));
			close(l->fd);
			goto fail;
		}
		if (g->mode == POL_MODE_TPROXY &&
		    setsockopt(l->fd, l->addr.ss_family == AF_INET6 ? SOL_IPV6 :
		    SOL_IP, l->addr.ss_family == AF_INET6 ? IPV6_TRANSPARENT :
		    IP_TRANSPARENT, &one, sizeof(one)) == -1) {
			log_warn("IP_TRANSPARENT on %s (needs CAP_NET_ADMIN)",
			    px_addr_str(&l->addr, a, sizeof(a)));
			close(l->fd);
			goto fail;
		}
		if (bind(l->fd, (struct sockaddr *)&l->addr, ss_len(&l->addr)) ==
		    -1 || listen(l->fd, 512) == -1) {
			log_warn("listen on %s",
			    px_addr_str(&l->addr, a, sizeof(a)));
			close(l->fd);
			goto fail;
		}
		ev_io_init(&l->io, accept_cb, l->fd, EV_READ);
		l->io.data = l;
		ev_timer_init(&l->pause, resume_cb, 1., 0.);
		l->pause.data = l;
		ev_io_start(px_rt.loop, &l->io);
		nlisteners++;
		log_info("listening on %s mode=%s", px_addr_str(&l->addr, a,
		    sizeof(a)), pol_mode_name(g->mode));
	}
	for (i = 0; g->mode == POL_MODE_FORWARD && i < nups; i++)
		if (upstream_loops(listeners, nlisteners, &ups[i]))
			goto fail;
	return 0;
fail:
	px_listen_stop();
	return -1;
}

void
px_listen_stop(void)
{
	size_t i;

	for (i = 0; i < nlisteners; i++) {
		ev_io_stop(px_rt.loop, &listeners[i].io);
		ev_timer_stop(px_rt.loop, &listeners[i].pause);
		close(listeners[i].fd);
		listeners[i].fd = -1;
	}
	nlisteners = 0;
}

int
px_listen_check(const struct pol_global *g)
{
	struct listener ls[POL_LISTEN_MAX];
	struct sockaddr_storage ss[PX_UP_MAX];
	size_t i, j, n;

	if (g->mode != POL_MODE_FORWARD)
		return 0;
	for (i = 0; i < g->n_listen && i < POL_LISTEN_MAX; i++)
		if (resolve(&g->listen[i], &ls[i].addr) == -1)
			return -1;
	if (resolve_n(&g->upstream, ss, PX_UP_MAX, &n) == -1) {
		/* a DNS outage is not an error of the file: the unit's
		 * ExecReload runs -t first, and a reload keeps an unchanged
		 * upstream's address through one (the daemon refuses a
		 * changed name that does not resolve, and a start) */
		if (resolve_unanswered) {
			log_warnx("upstream %s:%u cannot be resolved now (no "
			    "answer from the name servers): not checked",
			    g->upstream.host, g->upstream.port);
			return 0;
		}
		log_warnx("upstream %s:%u does not resolve", g->upstream.host,
		    g->upstream.port);
		return -1;
	}
	for (j = 0; j < n; j++)
		if (upstream_loops(ls, i, &ss[j]))
			return -1;
	return 0;
}

int
px_listen_reload(const struct pol_global *old, const struct pol_global *g)
{
	bool same;

	if (g->mode != POL_MODE_FORWARD)
		return 0;
	same = old->mode == POL_MODE_FORWARD &&
	    old->upstream.kind == g->upstream.kind &&
	    old->upstream.port == g->upstream.port &&
	    strcasecmp(old->upstream.host, g->upstream.host) == 0;
	return use_upstream(g, same);
}

/* A connect to dst failed or timed out: when dst is the upstream in use
 * and its name has more addresses, the next connections go to the next
 * (a name whose first address is IPv6 where the server listens on IPv4
 * only, or one of several servers down). */
void
px_listen_upstream_failed(const struct sockaddr_storage *dst)
{
	static struct px_lograte rate;
	char a[64], b[64];

	if (nups < 2 || !same_addr(dst, &upstream))
		return;
	upcur = (upcur + 1) % nups;
	upstream = ups[upcur];
	PX_WARN_RATED(&rate, "upstream %s failed: new connections go to %s "
	    "(address %zu of %zu)", px_addr_str(dst, a, sizeof(a)),
	    px_addr_str(&upstream, b, sizeof(b)), upcur + 1, nups);
}
