/*
 * upstream.c - the upstream TCP socket: congestion control and buffers
 * from the server settings of the policy, what the kernel really gave,
 * and TCP_INFO for smbaccelctl conns (DESIGN.md section 1, "the WAN leg";
 * docs/smbaccel.conf.5, SERVER SETTINGS).
 *
 * smbaccel splits each TCP connection: the client's ends on the LAN, and
 * across the WAN only this socket sends the client's data.  On a long
 * lossy link its congestion control decides what writes get (loss-based
 * CUBIC collapses at 1 % loss on a 20 ms link, bbr does not), so it is a
 * per-server setting, and whatever the kernel does with it is logged and
 * shown, never left silent: an algorithm the kernel refuses is a logged
 * fallback here and an error at `smbaccel -t` (px_upstream_check), a
 * buffer the kernel caps likewise.
 *
 * Only conn.c (where the socket is created and connected) and control.c
 * (conns) call in here, and main.c for smbaccel -t (which also checks that
 * the upstream sockets can be marked in the transparent modes).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/inet_diag.h>
#include <linux/tcp.h>

#include "proxy/upstream.h"

#define CC_AVAILABLE "/proc/sys/net/ipv4/tcp_available_congestion_control"
#define CC_ALLOWED   "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
#define CC_DEFAULT   "/proc/sys/net/ipv4/tcp_congestion_control"

/* One line of a /proc/sys file, without its newline: 0, or -1 with errno
 * and "" if unreadable. */
static int
read_sysctl(const char *path, char *buf, size_t len)
{
	FILE *f;
	size_t n;
	int rc = 0;

	buf[0] = '\0';
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	if (fgets(buf, (int)len, f) == NULL) {
		buf[0] = '\0';
		rc = -1;
	}
	fclose(f);
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return rc;
}

/* Is name one of the blank-separated words of list? */
static bool
in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = list; (p = strstr(p, name)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' ||
		    p[n] == '\0'))
			return true;
	return false;
}

/*
 * The algorithm to ask for under setting `want`: "" for none (system, or
 * auto without bbr).
 */
static const char *
cc_target(const char *want, const char *available)
{
	if (strcmp(want, "system") == 0)
		return "";
	if (strcmp(want, "auto") == 0)
		return in_list(available, "bbr") ? "bbr" : "";
	return want;
}

static void
sock_cc(int fd, char *buf, size_t len)
{
	socklen_t l = (socklen_t)len;

	buf[0] = '\0';
	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, buf, &l) == -1)
		snprintf(buf, len, "?");
	buf[len - 1] = '\0';
}

/* The socket's pacing rate in bytes/s (TCP_INFO), 0 if unknown. */
static uint64_t
pacing_rate(int fd)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) == -1)
		return 0;
	return ti.tcpi_pacing_rate;
}

/*
 * bbr's rate at connect (0 if unknown), logged with what it came from
 * (2.885 x window / the handshake's RTT): the rate px_upstream_pace
 * starts from.
 */
static uint64_t
start_rate(int fd, uint64_t conn_id)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) == -1)
		return 0;
	if (ti.tcpi_pacing_rate != 0)
		log_debug("conn=%llu upstream bbr start-up pacing at connect: "
		    "cwnd=%u mss=%u rtt_us=%u pacing %llu B/s",
		    (unsigned long long)conn_id, ti.tcpi_snd_cwnd,
		    ti.tcpi_snd_mss, ti.tcpi_rtt,
		    (unsigned long long)ti.tcpi_pacing_rate);
	return ti.tcpi_pacing_rate;
}

/*
 * Set SO_SNDBUF or SO_RCVBUF to want bytes: the FORCE option first (with
 * CAP_NET_ADMIN it is not capped by net.core.wmem_max / rmem_max), then
 * the plain one.  Returns what the kernel holds (it doubles the value for
 * its bookkeeping, so that is 2 x want when granted), -1 on error.
 */
static int
set_buf(int fd, bool snd, uint64_t want)
{
	int v = (int)want, got = -1;
	socklen_t l = sizeof(got);

	if (setsockopt(fd, SOL_SOCKET, snd ? SO_SNDBUFFORCE : SO_RCVBUFFORCE,
	    &v, sizeof(v)) == -1 &&
	    setsockopt(fd, SOL_SOCKET, snd ? SO_SNDBUF : SO_RCVBUF, &v,
	    sizeof(v)) == -1)
		return -1;
	if (getsockopt(fd, SOL_SOCKET, snd ? SO_SNDBUF : SO_RCVBUF, &got,
	    &l) == -1)
		return -1;
	return got;
}

/* The server name the policy knows dst by: its address, or in forward
 * mode the upstream's host as written. */
static void
lookup(const struct sockaddr_storage *dst, struct pol_server *out)
{
	const struct pol_global *g = pol_global(px_rt.cfg);
	char a[INET6_ADDRSTRLEN] = "";

	if (dst->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)dst)->sin_addr,
		    a, sizeof(a));
	else if (dst->ss_family == AF_INET6)
		inet_ntop(AF_INET6,
		    &((const struct sockaddr_in6 *)dst)->sin6_addr, a, sizeof(a));
	if (pol_server_lookup(px_rt.cfg, a[0] ? a : NULL, out))
		return;
	if (g->mode == POL_MODE_FORWARD && g->upstream.host[0] != '\0')
		(void)pol_server_lookup(px_rt.cfg, g->upstream.host, out);
}

static void
fmt_buf(char *buf, size_t len, uint64_t want, int got)
{
	if (want == 0)
		snprintf(buf, len, "auto");
	else
		snprintf(buf, len, "%llu(got %d)", (unsigned long long)want,
		    got / 2);
}

/*
 * TCP keepalive on a socket: a client's (client_keepalive) or a server's
 * (upstream_keepalive).  After ms of silence the kernel probes every ms/4
 * (at least 1 s, at most 75 s as Linux's default).
 *
 * A client whose machine lost power or its network sends no FIN: without
 * probes the connection, the server connection behind it and the server's
 * handles (share modes, byte-range locks) would stay for as long as
 * smbaccel runs, since the server's own keepalives reach smbaccel, which
 * answers them.  Four probes unanswered and reads fail ETIMEDOUT.  The
 * kernel sends no keepalive while data to the peer is in flight:
 * px_side_unanswered (side.c) covers that case.  No TCP_USER_TIMEOUT: it
 * would also cut a client that is alive but not reading (its kernel answers
 * the zero-window probes, and Linux aborts on the user timeout regardless).
 *
 * Upstream (patient) the probes are there to keep the connection in the
 * tables of the firewalls and NATs on the way, which forget an idle one
 * (often after an hour): an outage of the path while the connection is
 * idle must not end it, as it would not directly.  So up to 127 probes go
 * unanswered (2 h 44 min with 5 minutes) before the kernel gives up.
 *
 * 0 turns it off.  Returns -1 with errno set if the socket refuses an
 * option.
 */
#define KA_PROBES 4
#define KA_PROBES_PATIENT 127       /* TCP_KEEPCNT's maximum */

static int
ka_interval(int idle)
{
	int i = idle / KA_PROBES;

	return i < 1 ? 1 : i > 75 ? 75 : i;
}

uint32_t
px_keepalive_gone_ms(uint32_t ms)
{
	int idle = (int)((ms + 999) / 1000);

	return ms ? (uint32_t)(idle + KA_PROBES * ka_interval(idle)) * 1000 : 0;
}

int
px_tcp_keepalive(int fd, uint32_t ms, bool patient)
{
	int on = ms > 0, idle = (int)((ms + 999) / 1000);
	int cnt = patient ? KA_PROBES_PATIENT : KA_PROBES;
	int intvl = ka_interval(idle), proto = 0;
	socklen_t len = sizeof(proto);

	/* not a TCP socket: the fuzz drivers' socketpairs */
	if (fd == -1 || getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto,
	    &len) == -1 || proto != IPPROTO_TCP)
		return 0;
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) == -1)
		return -1;
	if (on && (setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle,
	    sizeof(idle)) == -1 || setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL,
	    &intvl, sizeof(intvl)) == -1 || setsockopt(fd, IPPROTO_TCP,
	    TCP_KEEPCNT, &cnt, sizeof(cnt)) == -1))
		return -1;
	return 0;
}

void
px_upstream_prepare(struct px_upstream *u, int fd,
    const struct sockaddr_storage *dst, uint64_t conn_id)
{
	/* the last list read: a read that fails (out of descriptors) uses
	 * it, instead of taking the kernel for one without bbr */
	static char avail_seen[256];
	struct pol_server ps;
	char avail[256];
	const char *cc;
	bool known = true;

	memset(u, 0, sizeof(*u));
	if (dst->ss_family != AF_INET && dst->ss_family != AF_INET6)
		return;		/* not TCP (the fuzz driver's AF_UNIX "server") */
	lookup(dst, &ps);
	if (read_sysctl(CC_AVAILABLE, avail, sizeof(avail)) == 0)
		memcpy(avail_seen, avail, sizeof(avail_seen));
	else if (avail_seen[0] != '\0')
		memcpy(avail, avail_seen, sizeof(avail));
	else {
		log_warn("conn=%llu cannot read %s: upstream_congestion "
		    "auto keeps the system default", (unsigned long long)
		    conn_id, CC_AVAILABLE);
		known = false;
	}
	cc = cc_target(ps.upstream_congestion, avail);
	snprintf(u->setting, sizeof(u->setting), "%s", ps.upstream_congestion);
	snprintf(u->want, sizeof(u->want), "%s", cc);
	u->sndbuf_want = ps.upstream_sndbuf;
	u->rcvbuf_want = ps.upstream_rcvbuf;
	u->keepalive_ms = ps.upstream_keepalive_ms;
	if (px_tcp_keepalive(fd, u->keepalive_ms, true) == -1)
		log_warn("conn=%llu upstream_keepalive", (unsigned long long)
		    conn_id);
	if (known && strcmp(ps.upstream_congestion, "auto") == 0 &&
	    cc[0] == '\0') {
		static bool said;

		if (!said)
			log_info("conn=%llu upstream_congestion auto: no bbr "
			    "in this kernel (%s), upstream sockets keep the "
			    "system default", (unsigned long long)conn_id,
			    avail);
		said = true;
	}
	if (cc[0] != '\0' && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc,
	    (socklen_t)strlen(cc)) == -1)
		u->cc_errno = errno;
	/* both before connect: the receive buffer decides the window scale
	 * offered in the SYN */
	if (u->sndbuf_want != 0) {
		u->sndbuf_got = set_buf(fd, true, u->sndbuf_want);
		if (u->sndbuf_got < 0)
			u->sndbuf_errno = errno;
	}
	if (u->rcvbuf_want != 0) {
		u->rcvbuf_got = set_buf(fd, false, u->rcvbuf_want);
		if (u->rcvbuf_got < 0)
			u->rcvbuf_errno = errno;
	}
}

/* A reload: upstream_keepalive of the server, applied to the open socket. */
void
px_upstream_reloaded(struct px_upstream *u, int fd,
    const struct sockaddr_storage *dst, uint64_t conn_id)
{
	struct pol_server ps;

	if (u->setting[0] == '\0' || fd == -1)
		return;		/* not a TCP socket, or not opened yet */
	lookup(dst, &ps);
	u->keepalive_ms = ps.upstream_keepalive_ms;
	if (px_tcp_keepalive(fd, u->keepalive_ms, true) == -1)
		log_warn("conn=%llu upstream_keepalive", (unsigned long long)
		    conn_id);
}

void
px_upstream_connected(struct px_upstream *u, int fd, uint64_t conn_id)
{
	char snd[48], rcv[48];

	if (u->setting[0] == '\0')
		return;		/* not a TCP socket */
	sock_cc(fd, u->got, sizeof(u->got));
	/* a route's congctl replaces the algorithm at connect: ask again */
	if (u->want[0] != '\0' && u->cc_errno == 0 &&
	    strcmp(u->got, u->want) != 0) {
		if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, u->want,
		    (socklen_t)strlen(u->want)) == -1)
			u->cc_errno = errno;
		sock_cc(fd, u->got, sizeof(u->got));
	}
	u->fallback = u->want[0] != '\0' && strcmp(u->got, u->want) != 0;
	u->pace_watch = strcmp(u->got, "bbr") == 0 &&
	    (u->pace_rate = start_rate(fd, conn_id)) != 0;
	fmt_buf(snd, sizeof(snd), u->sndbuf_want, u->sndbuf_got);
	fmt_buf(rcv, sizeof(rcv), u->rcvbuf_want, u->rcvbuf_got);
	if (u->fallback) {
		errno = u->cc_errno;
		log_warnx("conn=%llu upstream congestion=%s fallback=yes "
		    "upstream_congestion=%s refused by the kernel: %s "
		    "sndbuf=%s rcvbuf=%s", (unsigned long long)conn_id, u->got,
		    u->setting, u->cc_errno ? strerror(u->cc_errno) :
		    "not applied", snd, rcv);
	} else if (!u->quiet) {
		log_info("conn=%llu upstream congestion=%s%s sndbuf=%s "
		    "rcvbuf=%s", (unsigned long long)conn_id, u->got,
		    u->want[0] == '\0' ? " (system default)" : "", snd, rcv);
	}
	if (u->sndbuf_want != 0 && (u->sndbuf_got < 0 ||
	    (uint64_t)u->sndbuf_got < 2 * u->sndbuf_want)) {
		errno = u->sndbuf_errno;
		log_warnx("conn=%llu upstream_sndbuf=%llu: the kernel gave "
		    "%d%s%s (net.core.wmem_max caps it without "
		    "CAP_NET_ADMIN)", (unsigned long long)conn_id,
		    (unsigned long long)u->sndbuf_want, u->sndbuf_got < 0 ? 0 :
		    u->sndbuf_got / 2, u->sndbuf_got < 0 ? ": " : "",
		    u->sndbuf_got < 0 ? strerror(u->sndbuf_errno) : "");
	}
	if (u->rcvbuf_want != 0 && (u->rcvbuf_got < 0 ||
	    (uint64_t)u->rcvbuf_got < 2 * u->rcvbuf_want)) {
		log_warnx("conn=%llu upstream_rcvbuf=%llu: the kernel gave "
		    "%d%s%s (net.core.rmem_max caps it without "
		    "CAP_NET_ADMIN)", (unsigned long long)conn_id,
		    (unsigned long long)u->rcvbuf_want, u->rcvbuf_got < 0 ? 0 :
		    u->rcvbuf_got / 2, u->rcvbuf_got < 0 ? ": " : "",
		    u->rcvbuf_got < 0 ? strerror(u->rcvbuf_errno) : "");
	}
}

/*
 * bbr's start-up pacing rate on a connection of small exchanges.
 *
 * Linux bbr starts at high gain (2.885) x initial window / RTT and, until
 * it has measured the link's full bandwidth, only ever raises that rate,
 * from bandwidth samples.  A connection that only carries small messages
 * (a copy of many small files: CREATE, then an 8 KiB WRITE with its CLOSE)
 * is app-limited: its samples are one message per round trip, far below
 * that rate, and it never leaves start-up.  So it keeps its initial rate,
 * 2 MB/s at 20 ms, while bbr's start-up grows its window (from 10 to 25
 * segments here): each WRITE + CLOSE compound leaves in bursts of two
 * segments 0.7-1.4 ms apart, 2 ms per file, 4 % of a file's time.
 *
 * The rate bbr would start at with today's window is set by initialising
 * bbr again (through reno: setting the algorithm a socket already has
 * does nothing).  That resets only what start-up has not used: its
 * bandwidth filter (app-limited samples below the rate), its full-
 * bandwidth detection (never reached) and its cycle; the window, the RTT
 * estimates and everything TCP holds stay.  It is done only when all of
 * this holds: the socket is bbr, nothing is in flight (an app-limited
 * pause), bbr is in start-up (pacing gain 2.885), its rate is still the
 * one it started with (at connect or at the last refresh: anything else
 * means bbr has set it from its samples), the message is more than two
 * segments (smaller ones are not paced), and the new rate is at least
 * 1.25 x the old one (so it happens a few times per connection, as the
 * window grows).  A connection that has measured its bandwidth (a bulk
 * transfer) paces from its samples and is never touched.
 */
#define PACE_HIGH_GAIN 2.885        /* bbr_high_gain */
#define PACE_STARTUP_GAIN8 739      /* its value in tcp_bbr_info (x 256) */
void
px_upstream_pace(struct px_upstream *u, int fd, size_t len, uint64_t conn_id)
{
	struct tcp_info ti;
	union tcp_cc_info ci;
	socklen_t l = sizeof(ti), cl = sizeof(ci);
	double bw, rate, want;

	if (!u->pace_watch || len <= 2 * (size_t)u->mss)
		return;
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) == -1)
		return;
	u->mss = ti.tcpi_snd_mss;
	if (ti.tcpi_pacing_rate != u->pace_rate) {
		u->pace_watch = false;	/* bbr has set it from its samples */
		return;
	}
	if (ti.tcpi_unacked != 0 || ti.tcpi_rtt == 0 || ti.tcpi_snd_mss == 0 ||
	    len <= 2 * (size_t)ti.tcpi_snd_mss)
		return;
	if (getsockopt(fd, IPPROTO_TCP, TCP_CC_INFO, &ci, &cl) == -1 ||
	    cl < sizeof(ci.bbr)) {
		u->pace_watch = false;	/* not bbr after all */
		return;
	}
	if (ci.bbr.bbr_pacing_gain != PACE_STARTUP_GAIN8) {
		u->pace_watch = false;	/* out of start-up: for good */
		return;
	}
	bw = (double)(((uint64_t)ci.bbr.bbr_bw_hi << 32) | ci.bbr.bbr_bw_lo);
	rate = (double)ti.tcpi_pacing_rate;
	want = PACE_HIGH_GAIN * ti.tcpi_snd_cwnd * ti.tcpi_snd_mss * 1e6 /
	    ti.tcpi_rtt;
	if (want < 1.25 * rate)
		return;
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "reno", 4) == -1)
		return;
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "bbr", 3) == -1) {
		log_warnx("conn=%llu upstream: bbr refused after its pacing "
		    "refresh (%s): the socket stays reno",
		    (unsigned long long)conn_id, strerror(errno));
		sock_cc(fd, u->got, sizeof(u->got));
		u->fallback = true;
		u->pace_watch = false;
		return;
	}
	u->pace_refreshes++;
	px_stats.upstream_pace_refreshes++;
	u->pace_rate = pacing_rate(fd);	/* 0: the next call stops watching */
	log_debug("conn=%llu upstream bbr start-up pacing refreshed: cwnd=%u "
	    "mss=%u rtt_us=%u bw=%.0f B/s pacing %.0f -> %llu B/s",
	    (unsigned long long)conn_id, ti.tcpi_snd_cwnd, ti.tcpi_snd_mss,
	    ti.tcpi_rtt, bw, rate, (unsigned long long)u->pace_rate);
}

void
px_upstream_dump(FILE *f, const struct px_upstream *u, int fd, bool json)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);
	bool have;
	char cc[PX_CC_LEN];

	memset(&ti, 0, sizeof(ti));
	have = fd >= 0 && u->got[0] != '\0' &&
	    getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) == 0;
	if (have)
		sock_cc(fd, cc, sizeof(cc));
	if (!json) {
		if (!have)
			fprintf(f, " %-8s %7s %6s %7s", "-", "-", "-", "-");
		else
			fprintf(f, " %-8s %7.1f %6u %7u", cc,
			    ti.tcpi_rtt / 1000.0, ti.tcpi_snd_cwnd,
			    ti.tcpi_total_retrans);
		return;
	}
	if (!have) {
		fprintf(f, ",\"upstream_tcp\":null");
		return;
	}
	fprintf(f, ",\"upstream_tcp\":{\"congestion\":\"%s\","
	    "\"congestion_setting\":\"%s\",\"fallback\":%s,"
	    "\"rtt_ms\":%.3f,\"rttvar_ms\":%.3f,\"min_rtt_ms\":%.3f,"
	    "\"cwnd\":%u,\"ssthresh\":%u,\"mss\":%u,\"retrans\":%u,"
	    "\"lost\":%u,\"unacked\":%u,\"bytes_sent\":%llu,"
	    "\"bytes_retrans\":%llu,\"delivery_rate_bps\":%llu,"
	    "\"pacing_rate_bps\":%llu,\"pace_refreshes\":%u,"
	    "\"sndbuf\":%llu,\"rcvbuf\":%llu}", cc, u->setting,
	    u->fallback ? "true" : "false", ti.tcpi_rtt / 1000.0,
	    ti.tcpi_rttvar / 1000.0, ti.tcpi_min_rtt / 1000.0,
	    ti.tcpi_snd_cwnd, ti.tcpi_snd_ssthresh, ti.tcpi_snd_mss,
	    ti.tcpi_total_retrans, ti.tcpi_lost, ti.tcpi_unacked,
	    (unsigned long long)ti.tcpi_bytes_sent,
	    (unsigned long long)ti.tcpi_bytes_retrans,
	    (unsigned long long)ti.tcpi_delivery_rate * 8,
	    ti.tcpi_pacing_rate == ~0ULL ? 0ULL :
	    (unsigned long long)ti.tcpi_pacing_rate * 8, u->pace_refreshes,
	    (unsigned long long)u->sndbuf_want,
	    (unsigned long long)u->rcvbuf_want);
}

/* ---- smbaccel -t -------------------------------------------------------- */

/*
 * Check one server setting given in the file against this kernel, as
 * this process (which, run as the unit's ExecStartPre, has the daemon's
 * capabilities and sandbox).  Returns the number of errors printed.
 */
static int
check_one(const char *file, const char *name, const char *section, int line,
    const struct pol_server *v, FILE *f)
{
	char avail[256], allowed[256], def[64];
	const char *cc;
	uint64_t want;
	int fd, got, rc = 0;
	bool snd;

	if (strcmp(name, "upstream_congestion") != 0 &&
	    strcmp(name, "upstream_sndbuf") != 0 &&
	    strcmp(name, "upstream_rcvbuf") != 0)
		return 0;	/* nothing the kernel could refuse */
	read_sysctl(CC_AVAILABLE, avail, sizeof(avail));
	if (strcmp(name, "upstream_congestion") == 0) {
		read_sysctl(CC_ALLOWED, allowed, sizeof(allowed));
		read_sysctl(CC_DEFAULT, def, sizeof(def));
		cc = cc_target(v->upstream_congestion, avail);
		if (strcmp(v->upstream_congestion, "auto") == 0 &&
		    cc[0] == '\0') {
			fprintf(f, "%s:%d: note: upstream_congestion = auto in "
			    "[%s]: this kernel has no bbr (%s: %s), so upstream "
			    "sockets keep the system default %s; load tcp_bbr "
			    "(modprobe tcp_bbr; make install ships "
			    "modules-load.d/smbaccel.conf for it)\n", file, line,
			    section, CC_AVAILABLE, avail, def);
			return 0;
		}
		if (cc[0] == '\0')
			return 0;
		if (!in_list(avail, cc)) {
			fprintf(f, "%s:%d: upstream_congestion = %s in [%s]: "
			    "this kernel has no congestion control '%s' (%s: "
			    "%s); load its module (modprobe tcp_%s) or choose "
			    "one of those, auto or system\n", file, line, cc,
			    section, cc, CC_AVAILABLE, avail, cc);
			return 1;
		}
		if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
			return 0;
		if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc,
		    (socklen_t)strlen(cc)) == -1) {
			fprintf(f, "%s:%d: upstream_congestion = %s in [%s]: "
			    "the kernel refuses it to smbaccel: %s (without "
			    "CAP_NET_ADMIN only %s may be set: "
			    "net.ipv4.tcp_allowed_congestion_control)\n", file,
			    line, cc, section, strerror(errno), allowed);
			rc = 1;
		}
		close(fd);
		return rc;
	}
	snd = strcmp(name, "upstream_sndbuf") == 0;
	want = snd ? v->upstream_sndbuf : v->upstream_rcvbuf;
	if (want == 0 || (fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
	    0)) == -1)
		return 0;
	got = set_buf(fd, snd, want);
	if (got < 0 || (uint64_t)got < 2 * want) {
		read_sysctl(snd ? "/proc/sys/net/core/wmem_max" :
		    "/proc/sys/net/core/rmem_max", def, sizeof(def));
		fprintf(f, "%s:%d: %s = %llu in [%s]: the kernel gives smbaccel "
		    "only %d bytes (net.core.%s = %s; SO_%sBUFFORCE, which is "
		    "not capped, needs CAP_NET_ADMIN); raise net.core.%s or "
		    "lower the value\n", file, line, name,
		    (unsigned long long)want, section, got < 0 ? 0 : got / 2,
		    snd ? "wmem_max" : "rmem_max", def, snd ? "SND" : "RCV",
		    snd ? "wmem_max" : "rmem_max");
		rc = 1;
	}
	close(fd);
	return rc;
}

/*
 * transparent and tproxy: the upstream sockets must get SO_MARK =
 * tproxy_mark (CAP_NET_ADMIN or CAP_NET_RAW), or the interception rules may send
 * smbaccel's own connections back to it; the daemon refuses to start
 * without it (daemon.c), and so does this check.  Returns 1 if refused.
 */
static int
check_mark(const struct pol_config *cfg, FILE *f)
{
	const struct pol_global *g = pol_global(cfg);
	int fd, rc = 0;

	if (g->mode == POL_MODE_FORWARD ||
	    (fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	if (setsockopt(fd, SOL_SOCKET, SO_MARK, &g->tproxy_mark,
	    sizeof(g->tproxy_mark)) == -1) {
		fprintf(f, "%s: mode = %s: the kernel refuses SO_MARK 0x%x "
		    "(tproxy_mark) to smbaccel: %s (needs CAP_NET_ADMIN or "
		    "CAP_NET_RAW); "
		    "unmarked, its own upstream connections could be diverted "
		    "back to it, so smbaccel will not start\n", pol_name(cfg),
		    pol_mode_name(g->mode), g->tproxy_mark, strerror(errno));
		rc = 1;
	}
	close(fd);
	return rc;
}

int
px_upstream_check(const struct pol_config *cfg, FILE *f)
{
	const char *name, *section;
	struct pol_server v;
	size_t i;
	int line, bad = check_mark(cfg, f);
	bool cc_given = false;

	for (i = 0; pol_server_setting_at(cfg, i, &name, &section, &line, &v);
	    i++) {
		if (strcmp(name, "upstream_congestion") == 0)
			cc_given = true;
		bad += check_one(pol_name(cfg), name, section, line, &v, f);
	}
	if (!cc_given) {	/* the built-in auto */
		(void)pol_server_lookup(cfg, NULL, &v);
		(void)check_one(pol_name(cfg), "upstream_congestion",
		    "built-in default", 0, &v, f);
	}
	return bad;
}
