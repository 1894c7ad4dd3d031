/*
 * wanem - WAN emulator for the tests: a loopback TCP relay that adds a
 * one-way delay and a rate limit in each direction (the test kernel has no
 * netem).
 *
 *   wanem -l HOST:PORT -u HOST:PORT -d MS [-r RATE] [--delay-up MS]
 *         [--delay-down MS] [--rate-up R] [--rate-down R] [-q BYTES] [-v]
 *
 * "up" is client -> upstream, "down" is upstream -> client.
 *
 * Link model, per connection and direction: every read is stamped with its
 * arrival time and appended to a chunk queue.  A byte is written no earlier
 * than arrival + delay, and writes are paced by a token bucket of `rate`
 * bit/s whose depth is max(32 KiB, rate x 2 ms).  (2 ms rather than 1: libev
 * on epoll sleeps in whole milliseconds.)  When due bytes wait only for
 * tokens and the process is woken late (a busy test machine), the tokens of
 * the lateness are kept, up to 50 ms, so the average rate stays the link's
 * rate rather than the scheduler's.  The queue holds at most `qlimit` bytes; at the
 * limit the source socket is no longer read, so the sender is throttled by
 * its TCP window as by a real bottleneck buffer.  Bytes are never dropped or
 * reordered.  EOF is forwarded as shutdown(SHUT_WR) once the queue has
 * drained and `delay` after the FIN arrived; a reset or error on one socket
 * is forwarded the same way as a reset (SO_LINGER 0) of the other.  Bytes
 * on their way to a broken socket are discarded.
 *
 * Handshake: the kernel completes the client's connect() at once, so wanem
 * charges it instead: client bytes count as arriving no earlier than
 * accept + delay_up + delay_down (the client's SYN/SYN-ACK round trip), and
 * the upstream connect() starts at accept + 2 x delay_up + delay_down, when
 * the server would see the final ACK.  Not modelled: loss and jitter.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#define CHUNK_MAX	(256 * 1024)	/* largest single read */
#define IOV_MAX_SEND	64		/* chunks per sendmsg */
#define BUCKET_MIN	(32 * 1024)	/* 2 x 16 KiB */
#define BUCKET_TIME	0.002		/* seconds of rate in the bucket */
#define CATCHUP_MAX	0.050		/* seconds of late wake-up made up */
#define QUEUE_EXTRA	(4 * 1024 * 1024)
#define ASSUMED_BPS	125000000.0	/* for qlimit when rate is unlimited */

/* Parameters of one direction of the emulated link. */
struct link {
	double		 delay;		/* seconds */
	double		 rate;		/* bytes/s, 0 = unlimited */
	double		 bucket;	/* bytes */
	size_t		 qlimit;	/* bytes queued at most */
	uint64_t	 rate_bits;	/* as given, for the banner */
};

/* Bytes from one read(): data[off..len) are still to be written. */
struct chunk {
	struct chunk	*next;
	double		 t_arrive;
	size_t		 off;
	size_t		 len;
	uint8_t		 data[];
};

enum dir_state {
	DIR_OPEN = 0,	/* reading src, writing dst */
	DIR_EOF,	/* src sent FIN; draining the queue, then SHUT_WR dst */
	DIR_SHUT,	/* FIN forwarded; nothing more flows this way */
	DIR_RESET,	/* src broke; draining the queue, then reset dst */
	DIR_DEAD,	/* dst broke; queue discarded */
};

enum conn_state {
	CONN_CONNECTING = 0,	/* upstream connect() in progress */
	CONN_OPEN,
	CONN_CLOSED,
};

struct conn;
struct dir;

/* One socket of a connection. */
struct side {
	const char	*name;		/* "client" / "upstream" */
	int		 fd;
	ev_io		 rio;		/* readable: feeds `in` */
	ev_io		 wio;		/* writable: drains `out` */
	struct dir	*in;		/* the direction reading this socket */
	struct dir	*out;		/* the direction writing this socket */
	struct side	*peer;
	struct conn	*conn;
};

/*
 * One direction.  Invariant: queued == sum over chunks of (len - off), and
 * while the queue is non-empty and the upstream socket is connected, either
 * `timer` is active or dst->wio is active, so the queue cannot stall.
 */
struct dir {
	const char	*name;		/* "up" / "down" */
	enum dir_state	 state;
	const struct link *link;
	struct side	*src;
	struct side	*dst;
	struct chunk	*head;
	struct chunk	*tail;
	size_t		 queued;
	size_t		 rdsize;	/* read size: min(CHUNK_MAX, qlimit) */
	uint64_t	 bytes_in;
	uint64_t	 bytes_out;
	double		 t_end;		/* when src's FIN or reset arrived */
	double		 tokens;
	double		 t_refill;
	double		 t_token_wake;	/* planned wake-up for tokens, or 0 */
	ev_timer	 timer;
};

struct conn {
	unsigned	 id;
	enum conn_state	 state;
	double		 t_start;	/* accept() */
	double		 t_cli_ready;	/* first instant client bytes leave it */
	ev_timer	 connect_timer;	/* emulated handshake before connect() */
	struct side	 cli;
	struct side	 srv;
	struct dir	 up;
	struct dir	 down;
	struct conn	*prev;
	struct conn	*next;
};

static struct ev_loop *loop;
static struct link link_up, link_down;
static struct sockaddr_storage up_addr;
static socklen_t up_addrlen;
static int listen_fd = -1;
static ev_io listen_io;
static ev_timer accept_retry;
static struct conn *conns;
static unsigned next_conn_id = 1;
static int verbose;
static uint8_t rdbuf[CHUNK_MAX];

static void dir_pump(struct dir *);
static void conn_free(struct conn *, const char *);

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fatalx(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

static void
logmsg(const char *fmt, ...)
{
	va_list ap;

	fputs("wanem: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
fatalx(const char *fmt, ...)
{
	va_list ap;

	fputs("wanem: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double
now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *
conn_state_name(enum conn_state s)
{
	switch (s) {
	case CONN_CONNECTING:
		return "connecting";
	case CONN_OPEN:
		return "open";
	case CONN_CLOSED:
		return "closed";
	}
	return "?";
}

static void
conn_set_state(struct conn *c, enum conn_state s)
{
	if (verbose)
		logmsg("conn=%u %s -> %s", c->id, conn_state_name(c->state),
		    conn_state_name(s));
	c->state = s;
}

/* ------------------------------------------------------------------ */
/* Direction queue                                                     */

/* Read src while the direction is open and a full read fits in qlimit. */
static void
dir_update_reading(struct dir *d)
{
	struct conn *c = d->src->conn;
	bool want = d->state == DIR_OPEN &&
	    (c->state == CONN_OPEN || (c->state == CONN_CONNECTING &&
	    d == &c->up)) &&
	    d->queued + d->rdsize <= d->link->qlimit;

	if (want && !ev_is_active(&d->src->rio))
		ev_io_start(loop, &d->src->rio);
	else if (!want && ev_is_active(&d->src->rio))
		ev_io_stop(loop, &d->src->rio);
}

static void
dir_discard(struct dir *d)
{
	struct chunk *ch;

	while ((ch = d->head) != NULL) {
		d->head = ch->next;
		free(ch);
	}
	d->tail = NULL;
	d->queued = 0;
	ev_timer_stop(loop, &d->timer);
	ev_io_stop(loop, &d->dst->wio);
}

static void
dir_arm(struct dir *d, double after)
{
	ev_timer_stop(loop, &d->timer);
	ev_now_update(loop);	/* the timer counts from ev_now */
	ev_timer_set(&d->timer, after > 0 ? after : 0, 0.);
	ev_timer_start(loop, &d->timer);
}

/* Drop n written bytes from the head of the queue. */
static void
dir_consume(struct dir *d, size_t n)
{
	d->queued -= n;
	d->bytes_out += n;
	while (n > 0) {
		struct chunk *ch = d->head;
		size_t k = ch->len - ch->off;

		if (k > n)
			k = n;
		ch->off += k;
		n -= k;
		if (ch->off == ch->len) {
			d->head = ch->next;
			if (d->head == NULL)
				d->tail = NULL;
			free(ch);
		}
	}
}

/* Abort the whole connection: reset `victim`, close everything. */
static void
conn_reset(struct conn *c, struct side *victim, const char *why)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (victim->fd != -1 &&
	    setsockopt(victim->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == -1)
		logmsg("conn=%u setsockopt SO_LINGER: %s", c->id,
		    strerror(errno));
	conn_free(c, why);
}

static void
conn_check_done(struct conn *c)
{
	if (c->up.state == DIR_SHUT && c->down.state == DIR_SHUT)
		conn_free(c, "eof");
}

/*
 * The queue of d is empty: forward the source's end (FIN or reset) if it
 * has come and is due.  May free the connection; the caller must not touch
 * it after.
 */
static void
dir_drained(struct dir *d)
{
	struct conn *c = d->src->conn;
	double due = d->t_end + d->link->delay, now;

	if (d->state != DIR_EOF && d->state != DIR_RESET)
		return;
	now = now_mono();
	if (due > now) {
		dir_arm(d, due - now);
		return;
	}
	if (d->state == DIR_EOF) {
		if (shutdown(d->dst->fd, SHUT_WR) == -1 && errno != ENOTCONN)
			logmsg("conn=%u %s shutdown: %s", c->id, d->name,
			    strerror(errno));
		d->state = DIR_SHUT;
		if (verbose)
			logmsg("conn=%u %s eof forwarded", c->id, d->name);
		conn_check_done(c);
	} else if (d->state == DIR_RESET) {
		conn_reset(c, d->dst, d->src == &c->cli ?
		    "reset-by-client" : "reset-by-upstream");
	}
}

static void side_broken(struct side *s, int err, const char *op);

/*
 * Write whatever the delay and the token bucket allow, then arrange to be
 * called again: by the timer when the next byte is due or enough tokens
 * have accrued, by dst->wio when the socket buffer is full.
 */
static void
dir_pump(struct dir *d)
{
	const struct link *lk = d->link;
	struct conn *c = d->src->conn;
	double now;

	if (d->state == DIR_DEAD || d->state == DIR_SHUT ||
	    (d == &c->up && c->state != CONN_OPEN))
		return;
	ev_timer_stop(loop, &d->timer);
	now = now_mono();
	if (lk->rate > 0) {
		double cap = lk->bucket;

		/*
		 * Woken late while due bytes waited only for tokens: the link
		 * would have kept sending meanwhile, so keep those tokens
		 * (up to CATCHUP_MAX) instead of losing rate to scheduling.
		 */
		if (d->t_token_wake > 0 && now > d->t_token_wake)
			cap += fmin(now - d->t_token_wake, CATCHUP_MAX) *
			    lk->rate;
		d->tokens += (now - d->t_refill) * lk->rate;
		if (d->tokens > cap)
			d->tokens = cap;
	}
	d->t_refill = now;
	d->t_token_wake = 0;

	while (d->head != NULL) {
		struct iovec iov[IOV_MAX_SEND];
		struct msghdr msg;
		struct chunk *ch = d->head;
		double due = ch->t_arrive + lk->delay;
		size_t allow = SIZE_MAX, total = 0;
		ssize_t n;
		int cnt = 0;

		if (due > now) {
			dir_arm(d, due - now);
			return;
		}
		if (lk->rate > 0) {
			/* Wait for a useful amount, not for every byte. */
			double need = (double)(ch->len - ch->off);

			if (need > lk->bucket / 2)
				need = lk->bucket / 2;
			if (d->tokens < need) {
				double wait = (need - d->tokens) / lk->rate;

				dir_arm(d, wait);
				d->t_token_wake = now + wait;
				return;
			}
			allow = (size_t)d->tokens;
		}
		for (; ch != NULL && cnt < IOV_MAX_SEND && total < allow &&
		    ch->t_arrive + lk->delay <= now; ch = ch->next) {
			size_t k = ch->len - ch->off;

			if (k > allow - total)
				k = allow - total;
			iov[cnt].iov_base = ch->data + ch->off;
			iov[cnt].iov_len = k;
			total += k;
			cnt++;
		}
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = iov;
		msg.msg_iovlen = (size_t)cnt;
		n = sendmsg(d->dst->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				ev_io_start(loop, &d->dst->wio);
				return;
			}
			side_broken(d->dst, errno, "send");
			return;
		}
		dir_consume(d, (size_t)n);
		if (lk->rate > 0)
			d->tokens -= (double)n;
		dir_update_reading(d);
		if ((size_t)n < total) {
			ev_io_start(loop, &d->dst->wio);
			return;
		}
	}
	dir_drained(d);
}

/*
 * Socket s failed (reset, refused connect, or a write error).  Bytes
 * already read from it are still delivered to the peer, then the peer is
 * reset `delay` after the failure; bytes on their way to s are discarded.
 */
static void
side_broken(struct side *s, int err, const char *op)
{
	struct conn *c = s->conn;
	struct dir *in = s->in, *out = s->out;

	if (verbose)
		logmsg("conn=%u %s %s: %s", c->id, s->name, op, strerror(err));
	ev_io_stop(loop, &s->rio);
	ev_io_stop(loop, &s->wio);
	if (in->state == DIR_DEAD) {	/* the peer broke first */
		conn_free(c, "reset-by-both");
		return;
	}
	out->state = DIR_DEAD;
	dir_discard(out);
	dir_update_reading(out);	/* stop reading the peer */
	if (in->state != DIR_RESET) {
		in->state = DIR_RESET;
		in->t_end = now_mono();
	}
	if (in->head == NULL)
		dir_pump(in);
	/* else the pending timer or wio will drain it */
}

/* ------------------------------------------------------------------ */
/* I/O callbacks                                                       */

static void
side_read_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct side *s = w->data;
	struct dir *d = s->in;
	struct chunk *ch;
	ssize_t n;

	(void)l;
	(void)revents;
	n = read(s->fd, rdbuf, d->rdsize);
	if (n == -1) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		side_broken(s, errno, "read");
		return;
	}
	if (n == 0) {
		d->state = DIR_EOF;
		d->t_end = now_mono();
		dir_update_reading(d);
		if (verbose)
			logmsg("conn=%u %s eof from %s", s->conn->id, d->name,
			    s->name);
		if (d->head == NULL)
			dir_pump(d);	/* forwards the FIN now */
		return;
	}
	ch = malloc(sizeof(*ch) + (size_t)n);
	if (ch == NULL) {
		logmsg("conn=%u malloc: %s", s->conn->id, strerror(errno));
		conn_reset(s->conn, &s->conn->cli, "no-memory");
		return;
	}
	memcpy(ch->data, rdbuf, (size_t)n);
	ch->t_arrive = now_mono();
	if (d == &s->conn->up && ch->t_arrive < s->conn->t_cli_ready)
		ch->t_arrive = s->conn->t_cli_ready;
	ch->off = 0;
	ch->len = (size_t)n;
	ch->next = NULL;
	if (d->tail != NULL)
		d->tail->next = ch;
	else
		d->head = ch;
	d->tail = ch;
	d->queued += (size_t)n;
	d->bytes_in += (size_t)n;
	dir_update_reading(d);
	if (d->head == ch)	/* was empty: nothing is scheduled yet */
		dir_pump(d);
}

static void
side_write_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct side *s = w->data;

	(void)l;
	(void)revents;
	ev_io_stop(loop, w);
	dir_pump(s->out);
}

static void
dir_timer_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)l;
	(void)revents;
	dir_pump(w->data);
}

/* The upstream connect() finished (wio of the upstream side). */
static void
connect_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct side *s = w->data;
	struct conn *c = s->conn;
	int err = 0;
	socklen_t len = sizeof(err);

	(void)l;
	(void)revents;
	ev_io_stop(loop, w);
	if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err != 0) {
		logmsg("conn=%u upstream connect: %s", c->id, strerror(err));
		side_broken(s, err, "connect");
		return;
	}
	ev_set_cb(w, side_write_cb);
	conn_set_state(c, CONN_OPEN);
	dir_update_reading(&c->up);
	dir_update_reading(&c->down);
	if (c->up.head != NULL)
		dir_pump(&c->up);
	else
		dir_drained(&c->up);
}

/* The emulated handshake is over: connect upstream. */
static void
connect_timer_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct conn *c = w->data;

	(void)l;
	(void)revents;
	if (connect(c->srv.fd, (struct sockaddr *)&up_addr, up_addrlen) == -1 &&
	    errno != EINPROGRESS) {
		logmsg("conn=%u upstream connect: %s", c->id, strerror(errno));
		side_broken(&c->srv, errno, "connect");
		return;
	}
	ev_io_start(loop, &c->srv.wio);		/* -> connect_cb */
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */

static void
side_init(struct side *s, struct conn *c, const char *name, int fd,
    struct dir *in, struct dir *out, struct side *peer)
{
	s->name = name;
	s->fd = fd;
	s->conn = c;
	s->in = in;
	s->out = out;
	s->peer = peer;
	ev_io_init(&s->rio, side_read_cb, fd, EV_READ);
	ev_io_init(&s->wio, side_write_cb, fd, EV_WRITE);
	s->rio.data = s;
	s->wio.data = s;
}

static void
dir_init(struct dir *d, const char *name, const struct link *lk,
    struct side *src, struct side *dst)
{
	d->name = name;
	d->state = DIR_OPEN;
	d->link = lk;
	d->src = src;
	d->dst = dst;
	d->rdsize = lk->qlimit < CHUNK_MAX ? lk->qlimit : CHUNK_MAX;
	d->tokens = lk->bucket;
	d->t_refill = now_mono();
	ev_timer_init(&d->timer, dir_timer_cb, 0., 0.);
	d->timer.data = d;
}

static void
conn_free(struct conn *c, const char *why)
{
	logmsg("conn=%u closed reason=%s up=%" PRIu64 " down=%" PRIu64
	    " up_lost=%zu down_lost=%zu secs=%.3f", c->id, why,
	    c->up.bytes_out, c->down.bytes_out, c->up.queued, c->down.queued,
	    now_mono() - c->t_start);
	conn_set_state(c, CONN_CLOSED);
	ev_timer_stop(loop, &c->connect_timer);
	dir_discard(&c->up);
	dir_discard(&c->down);
	ev_io_stop(loop, &c->cli.rio);
	ev_io_stop(loop, &c->srv.rio);
	close(c->cli.fd);
	close(c->srv.fd);
	c->cli.fd = c->srv.fd = -1;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	free(c);
}

static void
set_nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		logmsg("setsockopt TCP_NODELAY: %s", strerror(errno));
}

static void
conn_new(int cfd)
{
	struct conn *c;
	int sfd;

	sfd = socket(up_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (sfd == -1) {
		logmsg("socket: %s", strerror(errno));
		close(cfd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		logmsg("calloc: %s", strerror(errno));
		close(sfd);
		close(cfd);
		return;
	}
	set_nodelay(cfd);
	set_nodelay(sfd);
	c->id = next_conn_id++;
	c->t_start = now_mono();
	side_init(&c->cli, c, "client", cfd, &c->up, &c->down, &c->srv);
	side_init(&c->srv, c, "upstream", sfd, &c->down, &c->up, &c->cli);
	dir_init(&c->up, "up", &link_up, &c->cli, &c->srv);
	dir_init(&c->down, "down", &link_down, &c->srv, &c->cli);
	c->next = conns;
	if (conns != NULL)
		conns->prev = c;
	conns = c;
	if (verbose)
		logmsg("conn=%u accepted", c->id);

	c->state = CONN_CONNECTING;
	c->t_cli_ready = c->t_start + link_up.delay + link_down.delay;
	ev_set_cb(&c->srv.wio, connect_cb);
	ev_timer_init(&c->connect_timer, connect_timer_cb,
	    2 * link_up.delay + link_down.delay, 0.);
	c->connect_timer.data = c;
	ev_timer_start(loop, &c->connect_timer);
	/* Client bytes are read and stamped while the connect runs. */
	ev_io_start(loop, &c->cli.rio);
}

static void
accept_cb(struct ev_loop *l, ev_io *w, int revents)
{
	(void)l;
	(void)revents;
	for (;;) {
		int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* EMFILE and friends: back off instead of spinning. */
			logmsg("accept: %s", strerror(errno));
			ev_io_stop(loop, w);
			ev_timer_set(&accept_retry, 1., 0.);
			ev_timer_start(loop, &accept_retry);
			return;
		}
		conn_new(fd);
	}
}

static void
accept_retry_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
	ev_io_start(loop, &listen_io);
}

static void
signal_cb(struct ev_loop *l, ev_signal *w, int revents)
{
	(void)revents;
	logmsg("signal %d, exiting", w->signum);
	ev_break(l, EVBREAK_ALL);
}

/* ------------------------------------------------------------------ */
/* Configuration                                                       */

static bool
addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

		return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) &&
		    s6->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

/* "HOST:PORT" or "[V6]:PORT"; refuses anything but a loopback address. */
static void
parse_hostport(const char *what, const char *arg, struct sockaddr_storage *ss,
    socklen_t *sslen)
{
	struct addrinfo hints, *res;
	char host[256];
	const char *port, *h = arg;
	size_t hlen;
	int rc;

	if (*arg == '[') {
		const char *rb = strchr(arg, ']');

		if (rb == NULL || rb[1] != ':')
			fatalx("%s: bad address '%s' (want [V6ADDR]:PORT)",
			    what, arg);
		h = arg + 1;
		hlen = (size_t)(rb - h);
		port = rb + 2;
	} else {
		const char *colon = strrchr(arg, ':');

		if (colon == NULL)
			fatalx("%s: bad address '%s' (want HOST:PORT)", what,
			    arg);
		hlen = (size_t)(colon - arg);
		port = colon + 1;
	}
	if (hlen == 0 || hlen >= sizeof(host) || *port == '\0')
		fatalx("%s: bad address '%s' (want HOST:PORT)", what, arg);
	memcpy(host, h, hlen);
	host[hlen] = '\0';

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		fatalx("%s: %s: %s", what, arg, gai_strerror(rc));
	if (!addr_is_loopback(res->ai_addr)) {
		freeaddrinfo(res);
		fatalx("%s: %s is not a loopback address; wanem only relays "
		    "on 127.0.0.0/8 and ::1", what, arg);
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sslen = res->ai_addrlen;
	freeaddrinfo(res);
}

/* Milliseconds, fractional allowed. */
static double
parse_ms(const char *what, const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno != 0 || end == arg || *end != '\0' || !(v >= 0) || v > 1e6)
		fatalx("%s: bad delay '%s' (milliseconds)", what, arg);
	return v / 1000.0;
}

/* Bits per second: 100M, 1G, 100mbit, 1gbit, 500k, 64000; 0 = unlimited. */
static uint64_t
parse_rate(const char *what, const char *arg)
{
	char *end;
	double v, mul = 1;

	errno = 0;
	v = strtod(arg, &end);
	if (errno != 0 || end == arg || !(v >= 0))
		fatalx("%s: bad rate '%s'", what, arg);
	if (*end == 'k' || *end == 'K')
		mul = 1e3;
	else if (*end == 'm' || *end == 'M')
		mul = 1e6;
	else if (*end == 'g' || *end == 'G')
		mul = 1e9;
	if (mul != 1)
		end++;
	if (strcasecmp(end, "bit") == 0 || strcasecmp(end, "bps") == 0 ||
	    strcasecmp(end, "bit/s") == 0)
		end += strlen(end);
	if (*end != '\0' || v * mul > 1e12)
		fatalx("%s: bad rate '%s' (e.g. 100M, 1G, 100mbit)", what, arg);
	return (uint64_t)llround(v * mul);
}

/* Bytes with K/M/G (1024-based). */
static size_t
parse_bytes(const char *what, const char *arg)
{
	char *end;
	unsigned long long v;
	size_t mul = 1;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno != 0 || end == arg || *arg == '-')
		fatalx("%s: bad size '%s'", what, arg);
	switch (*end) {
	case 'k': case 'K':
		mul = 1024;
		end++;
		break;
	case 'm': case 'M':
		mul = 1024 * 1024;
		end++;
		break;
	case 'g': case 'G':
		mul = 1024 * 1024 * 1024;
		end++;
		break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end != '\0' || v == 0 || v > SIZE_MAX / mul / 2)
		fatalx("%s: bad size '%s'", what, arg);
	return (size_t)v * mul;
}

static void
link_finish(struct link *lk, size_t qlimit)
{
	double bps;

	lk->rate = (double)lk->rate_bits / 8.0;
	lk->bucket = lk->rate * BUCKET_TIME;
	if (lk->bucket < BUCKET_MIN)
		lk->bucket = BUCKET_MIN;
	if (qlimit != 0) {
		lk->qlimit = qlimit;
		return;
	}
	/* Twice the bandwidth-delay product plus slack, as a router buffer. */
	bps = lk->rate > 0 ? lk->rate : ASSUMED_BPS;
	lk->qlimit = (size_t)(2 * bps * lk->delay) + QUEUE_EXTRA;
}

static void
fmt_rate(char *buf, size_t len, uint64_t bits)
{
	if (bits == 0)
		snprintf(buf, len, "unlimited");
	else if (bits >= 1000000000 && bits % 1000000000 == 0)
		snprintf(buf, len, "%" PRIu64 "Gbit", bits / 1000000000);
	else if (bits >= 1000000)
		snprintf(buf, len, "%gMbit", (double)bits / 1e6);
	else
		snprintf(buf, len, "%gkbit", (double)bits / 1e3);
}

static void
addr_str(const struct sockaddr_storage *ss, socklen_t len, char *buf,
    size_t buflen)
{
	char h[INET6_ADDRSTRLEN], p[16];

	if (getnameinfo((const struct sockaddr *)ss, len, h, sizeof(h), p,
	    sizeof(p), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		snprintf(buf, buflen, "?");
	else if (ss->ss_family == AF_INET6)
		snprintf(buf, buflen, "[%s]:%s", h, p);
	else
		snprintf(buf, buflen, "%s:%s", h, p);
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: wanem -l HOST:PORT -u HOST:PORT -d MS [-r RATE] [-q BYTES] [-v]\n"
	    "             [--delay-up MS] [--delay-down MS] [--rate-up R] [--rate-down R]\n"
	    "  -l  listen address (loopback only)      -u  upstream address (loopback only)\n"
	    "  -d  one-way delay in ms, each direction  -r  rate in bit/s each direction:\n"
	    "      100M, 1G, 100mbit, 1gbit, 0 = unlimited (default)\n"
	    "  -q  queue limit per direction in bytes (K/M/G), default 2*BDP + 4M\n"
	    "  -v  log connection events\n"
	    "  up = client -> upstream, down = upstream -> client\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	enum { OPT_DUP = 256, OPT_DDOWN, OPT_RUP, OPT_RDOWN };
	static const struct option longopts[] = {
		{ "delay-up", required_argument, NULL, OPT_DUP },
		{ "delay-down", required_argument, NULL, OPT_DDOWN },
		{ "rate-up", required_argument, NULL, OPT_RUP },
		{ "rate-down", required_argument, NULL, OPT_RDOWN },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_storage laddr;
	socklen_t laddrlen = 0;
	const char *larg = NULL, *uarg = NULL;
	bool have_delay = false;
	size_t qlimit = 0;
	char lstr[80], ustr[80], rup[32], rdown[32];
	ev_signal sigint_w, sigterm_w;
	int c, one = 1;

	while ((c = getopt_long(argc, argv, "l:u:d:r:q:vh", longopts,
	    NULL)) != -1) {
		switch (c) {
		case 'l':
			larg = optarg;
			break;
		case 'u':
			uarg = optarg;
			break;
		case 'd':
			link_up.delay = link_down.delay = parse_ms("-d", optarg);
			have_delay = true;
			break;
		case 'r':
			link_up.rate_bits = link_down.rate_bits =
			    parse_rate("-r", optarg);
			break;
		case 'q':
			qlimit = parse_bytes("-q", optarg);
			break;
		case 'v':
			verbose = 1;
			break;
		case OPT_DUP:
			link_up.delay = parse_ms("--delay-up", optarg);
			have_delay = true;
			break;
		case OPT_DDOWN:
			link_down.delay = parse_ms("--delay-down", optarg);
			have_delay = true;
			break;
		case OPT_RUP:
			link_up.rate_bits = parse_rate("--rate-up", optarg);
			break;
		case OPT_RDOWN:
			link_down.rate_bits = parse_rate("--rate-down", optarg);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || larg == NULL || uarg == NULL || !have_delay)
		usage();
	parse_hostport("-l", larg, &laddr, &laddrlen);
	parse_hostport("-u", uarg, &up_addr, &up_addrlen);
	link_finish(&link_up, qlimit);
	link_finish(&link_down, qlimit);

	signal(SIGPIPE, SIG_IGN);
	listen_fd = socket(laddr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (listen_fd == -1)
		fatalx("socket: %s", strerror(errno));
	if (setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof(one)) == -1)
		fatalx("setsockopt SO_REUSEADDR: %s", strerror(errno));
	if (bind(listen_fd, (struct sockaddr *)&laddr, laddrlen) == -1)
		fatalx("bind %s: %s", larg, strerror(errno));
	if (listen(listen_fd, 128) == -1)
		fatalx("listen %s: %s", larg, strerror(errno));

	loop = ev_default_loop(EVFLAG_AUTO);
	if (loop == NULL)
		fatalx("ev_default_loop failed");
	ev_io_init(&listen_io, accept_cb, listen_fd, EV_READ);
	ev_io_start(loop, &listen_io);
	ev_timer_init(&accept_retry, accept_retry_cb, 1., 0.);
	ev_signal_init(&sigint_w, signal_cb, SIGINT);
	ev_signal_init(&sigterm_w, signal_cb, SIGTERM);
	ev_signal_start(loop, &sigint_w);
	ev_signal_start(loop, &sigterm_w);

	addr_str(&laddr, laddrlen, lstr, sizeof(lstr));
	addr_str(&up_addr, up_addrlen, ustr, sizeof(ustr));
	fmt_rate(rup, sizeof(rup), link_up.rate_bits);
	fmt_rate(rdown, sizeof(rdown), link_down.rate_bits);
	fprintf(stderr, "wanem listening on %s -> %s delay up/down %g/%g ms "
	    "rate up/down %s/%s queue up/down %zu/%zu bytes\n", lstr, ustr,
	    link_up.delay * 1e3, link_down.delay * 1e3, rup, rdown,
	    link_up.qlimit, link_down.qlimit);

	ev_run(loop, 0);

	while (conns != NULL)
		conn_free(conns, "shutdown");
	close(listen_fd);
	listen_fd = -1;
	ev_loop_destroy(loop);
	return 0;
}
