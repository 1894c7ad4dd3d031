/*
 * conn.c - connection lifecycle and socket I/O.
 *
 * Each client connection has two sides (relayd's se_in/se_out).  Bytes read
 * from a side go to its input buffer; complete NBSS frames are handed to
 * relay.c, which forwards them to the peer's output buffer, absorbs them,
 * or asks to wait (a stall: the frame stays at the head of the input
 * buffer and reading stops).  Backpressure: a side is read only while the
 * peer's output queue is under queue_limit (relayd relay_read), the client
 * also only while its own is (smbaccel answers much of what it asks).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proxy/conn.h"

struct px_runtime px_rt;
static struct px_conn_hooks hooks;

/* Connection lines at a bounded rate (smbaccel(8) LOGGING): a connection
 * accepted past PX_CONN_LINES_BURST per PX_LOGRATE_MS is quiet, its
 * routine lines not logged; remote-caused warnings five a kind. */
#define PX_CONN_LINES_BURST 100
#define CONN_INFO(c, ...) do { if (!(c)->quiet) log_info(__VA_ARGS__); } while (0)
static struct px_lograte conn_lines_rate, connect_fail_rate,
    connect_timeout_rate, anyway_rate, bad_frame_rate;

static void side_read_cb(struct ev_loop *loop, ev_io *w, int revents);
static void side_write_cb(struct ev_loop *loop, ev_io *w, int revents);
static void conn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);
static void connect_cb(struct ev_loop *loop, ev_io *w, int revents);
static void process_input(struct px_side *s);
static void resume_client(struct px_link *l);
static void wake_waiters(void);
static void conn_free(struct px_conn *c) __attribute__((noinline));
static void conn_enter(struct px_conn *c);
static void conn_leave(struct px_conn *c);
static void conn_start_connect(struct px_conn *c);
static void conn_open(struct px_conn *c);
static void opening_done(struct px_conn *c);
static void queue_remove(struct px_conn *c);
static void conn_go_opaque(struct px_conn *c, enum px_opaque_reason r,
    const char *detail);
static void conn_arm_timer(struct px_conn *c);
static void conn_kick(struct px_conn *c);
static void on_client_eof(struct px_conn *c);
static void srv_spend(struct px_conn *c);
static bool spent_answered(struct px_conn *c);
static bool conn_check_done(struct px_conn *c);

static const char *const state_names[] = {
	"connecting", "waiting", "relay", "opaque", "draining", "closed",
};

const char *
px_conn_state_name(enum px_conn_state s)
{
	return (unsigned int)s < sizeof(state_names) / sizeof(state_names[0]) ?
	    state_names[s] : "?";
}

static const char *const opaque_names[PX_OPAQUE_NREASONS] = {
	"none", "smb1", "encrypted-no-key", "signed-no-key", "compressed",
	"decode-error", "unknown-magic", "ledger",
};

const char *
px_opaque_reason_name(enum px_opaque_reason r)
{
	return (unsigned int)r < PX_OPAQUE_NREASONS ? opaque_names[r] : "?";
}

static const char *const close_names[PX_CLOSE_NREASONS] = {
	"none", "bad-frame", "connect-failed", "connect-timeout", "no-memory",
	"shutdown", "idle", "server-timeout", "cannot-sign",
	"not-authentic", "server-unreadable", "bad-message-id",
};

const char *
px_close_reason_name(enum px_close_reason r)
{
	return (unsigned int)r < PX_CLOSE_NREASONS ? close_names[r] : "?";
}

static const struct pol_global *
glob(void)
{
	return pol_global(px_rt.cfg);
}

static void
conn_set_state(struct px_conn *c, enum px_conn_state st)
{
	if (c->state == st)
		return;
	log_debug("conn=%llu state %s -> %s", (unsigned long long)c->id,
	    px_conn_state_name(c->state), px_conn_state_name(st));
	c->state = st;
}

static void
conn_update(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);

	px_side_update(&l->cli);
	px_side_update(&l->srv);
}

/* ---- the services the relay calls (struct px_conn_ops, conn_state.h) ------- */

static struct px_side *
side_of(struct px_conn *c, enum px_end end)
{
	struct px_link *l = px_link_of(c);

	return end == PX_CLIENT ? &l->cli : &l->srv;
}

static int
op_send_frame(struct px_conn *c, enum px_end to, const uint8_t *frame,
    size_t len)
{
	return px_side_send_frame(side_of(c, to), frame, len);
}

static int
op_send(struct px_conn *c, enum px_end to, const uint8_t *msg, size_t len)
{
	return px_side_send(side_of(c, to), msg, len);
}

static struct px_buf *
op_outbuf(struct px_conn *c, enum px_end to)
{
	return px_side_outbuf(side_of(c, to));
}

static void
op_out_commit(struct px_conn *c, enum px_end to, size_t n)
{
	px_side_out_commit(side_of(c, to), n);
}

/* A server that closed, reset or failed a write, or that a client left
 * inside a cut-through WRITE (srv_spend), takes nothing more: what the
 * relay would send it (read-ahead, document fetches, ECHOs) is not
 * started. */
static bool
op_connected(const struct px_conn *c, enum px_end end)
{
	const struct px_link *l = px_link_of_const(c);

	if (end == PX_SERVER)
		return l->srv.fd != -1 && !l->srv.rd_eof && !l->srv.wr_shut &&
		    !l->srv_spent;
	return l->cli.fd != -1 && !l->cli.rd_eof;
}

static const struct px_conn_ops conn_ops = {
	.send_frame = op_send_frame,
	.send = op_send,
	.outbuf = op_outbuf,
	.out_commit = op_out_commit,
	.connected = op_connected,
	.go_opaque = conn_go_opaque,
	.kick = conn_kick,
	.hold = conn_enter,
	.release = conn_leave,
	.arm_timer = conn_arm_timer,
};

void
px_conn_init(const struct px_conn_hooks *h)
{
	if (h != NULL)
		hooks = *h;
	px_relay_init(&conn_ops);
}

/* ---- lifecycle ------------------------------------------------------------ */

void
px_conn_close(struct px_conn *c, enum px_close_reason r)
{
	struct px_link *l = px_link_of(c);
	char a[64], b[64];
	bool was_draining;

	if (c->state == PX_CONN_CLOSED)
		return;
	if (r != PX_CLOSE_NONE) {
		c->close_reason = r;
		px_stats.closed[r]++;
	}
	if ((r == PX_CLOSE_CONNECT_TIMEOUT || (r == PX_CLOSE_CONNECT_FAILED &&
	    l->opening)) && hooks.connect_failed)
		hooks.connect_failed(&c->dst_addr);
	/* a quiet one's close too when smbaccel or the server ended it */
	if (!c->quiet || PX_CLOSE_ALWAYS_LOGGED(c->close_reason))
		log_info("conn=%llu closed client=%s server=%s c2s=%llu "
		    "s2c=%llu%s%s", (unsigned long long)c->id,
		    px_addr_str(&c->peer_addr, a, sizeof(a)),
		    px_addr_str(&c->dst_addr, b, sizeof(b)),
		    (unsigned long long)l->cli.bytes_in,
		    (unsigned long long)l->srv.bytes_in,
		    r != PX_CLOSE_NONE ? " reason=" : "",
		    r != PX_CLOSE_NONE ? px_close_reason_name(r) : "");
	was_draining = c->state == PX_CONN_DRAINING;
	queue_remove(c);
	conn_set_state(c, PX_CONN_CLOSED);
	/* a client that reset its connection gets its server connection
	 * reset too, so the server sees what it would have seen */
	px_side_close(&l->srv, l->cli.rd_reset);
	px_side_close(&l->cli, l->srv.rd_reset);
	ev_timer_stop(px_rt.loop, &l->timer);
	if (c->prev)
		c->prev->next = c->next;
	else
		px_rt.conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	px_stats.conns_active--;
	opening_done(c);
	px_relay_free(c);
	/* code of this connection may still be on the stack (a close from
	 * inside a kick, say): its memory goes when the outermost entry
	 * point returns (conn_leave) */
	if (l->depth > 0)
		l->free_pending = true;
	else
		conn_free(c);
	if (was_draining)
		wake_waiters();
}

static void
conn_free(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);

	px_ledger_free(&c->led);
	px_buf_free(&l->cli.in);
	px_buf_free(&l->cli.out);
	px_buf_free(&l->srv.in);
	px_buf_free(&l->srv.out);
	px_buf_free(&l->cli.hold);
	px_buf_free(&l->srv.hold);
	free(l->await);
	free(l);
}

/* Entry points from the event loop (and kicks from other connections)
 * bracket their work with conn_enter/conn_leave. */
static void
conn_enter(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);

	l->depth++;
}

static void
conn_leave(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);

	if (--l->depth == 0 && l->free_pending)
		conn_free(c);
}

static void
conn_go_opaque(struct px_conn *c, enum px_opaque_reason r,
    const char *detail)
{
	if (c->state == PX_CONN_OPAQUE)
		return;
	c->opaque = r;
	px_stats.opaque[r]++;
	CONN_INFO(c, "conn=%llu opaque reason=%s%s%s", (unsigned long long)
	    c->id, px_opaque_reason_name(r), detail ? " " : "",
	    detail ? detail : "");
	conn_set_state(c, PX_CONN_OPAQUE);
}

static void
conn_connected(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);
	int one = 1;

	ev_io_stop(px_rt.loop, &l->srv.wio);
	(void)setsockopt(l->srv.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	l->up.quiet = c->quiet;
	px_upstream_connected(&l->up, l->srv.fd, c->id);
	conn_set_state(c, PX_CONN_RELAY);
	ev_io_set(&l->srv.wio, l->srv.fd, EV_WRITE);
	l->last_ms = l->opened_ms = px_now_ms();
	conn_arm_timer(c);
	conn_update(c);
}

static void
connect_cb_inner(struct ev_loop *loop, ev_io *w, int revents)
{
	struct px_side *s = w->data;
	struct px_link *l = s->link;
	struct px_conn *c = &l->c;
	int err = 0;
	socklen_t len = sizeof(err);
	char a[64];

	(void)loop;
	(void)revents;
	if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err != 0) {
		PX_WARN_RATED(&connect_fail_rate, "conn=%llu upstream connect "
		    "to %s failed: %s", (unsigned long long)c->id,
		    px_addr_str(&c->dst_addr, a, sizeof(a)), strerror(err));
		px_conn_close(c, PX_CLOSE_CONNECT_FAILED);
		return;
	}
	ev_io_stop(px_rt.loop, &s->wio);
	ev_io_init(&s->wio, side_write_cb, s->fd, EV_WRITE);
	s->wio.data = s;
	conn_connected(c);
}

void
px_conn_new(int cfd, const struct sockaddr_storage *peer,
    const struct sockaddr_storage *dst)
{
	struct px_link *l;
	struct px_conn *c;
	int one = 1;
	char a[64], b[64];

	if ((l = calloc(1, sizeof(*l))) == NULL) {
		log_warn("accept: out of memory");
		close(cfd);
		return;
	}
	c = &l->c;
	c->id = ++px_rt.next_conn_id;
	c->peer_addr = *peer;
	c->dst_addr = *dst;
	px_addr_str(dst, c->dst_str, sizeof(c->dst_str));
	l->started_ms = l->last_ms = px_now_ms();
	px_ledger_init(&c->led, c->id);
	c->led.cfg = px_rt.cfg;
	c->delayed_tail = &c->delayed;
	(void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (fcntl(cfd, F_SETFL, fcntl(cfd, F_GETFL) | O_NONBLOCK) == -1)
		log_warn("conn=%llu fcntl", (unsigned long long)c->id);
	px_side_init(l, &l->cli, &l->srv, cfd, "client", side_read_cb,
	    side_write_cb);
	if (px_tcp_keepalive(cfd, glob()->client_keepalive_ms, false) == -1)
		log_warn("conn=%llu client_keepalive on the client's socket",
		    (unsigned long long)c->id);
	px_side_init(l, &l->srv, &l->cli, -1, "server", side_read_cb,
	    side_write_cb);
	ev_init(&l->timer, conn_timer_cb);
	l->timer.data = c;
	c->next = px_rt.conns;
	if (c->next)
		c->next->prev = c;
	px_rt.conns = c;
	px_stats.conns_total++;
	px_stats.conns_active++;
	c->quiet = !px_lograte_ok(&conn_lines_rate, px_now_ms(),
	    PX_CONN_LINES_BURST, PX_LOGRATE_MS);
	if (!c->quiet) {
		char more[64];

		log_info("conn=%llu accepted client=%s server=%s%s",
		    (unsigned long long)c->id, px_addr_str(peer, a, sizeof(a)),
		    px_addr_str(dst, b, sizeof(b)), px_lograte_more(
		    &conn_lines_rate, more, sizeof(more)));
	}

	px_side_find_gone(c, conn_kick);
	if (px_side_draining_peer(c)) {
		CONN_INFO(c, "conn=%llu waits for the drain of this client's "
		    "previous connection", (unsigned long long)c->id);
		conn_set_state(c, PX_CONN_WAITING);
		l->connect_deadline_ms = l->started_ms +
		    (double)glob()->connect_timeout_ms;
		conn_arm_timer(c);
		return;
	}
	conn_open(c);
}

static void
conn_start_connect(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);
	const struct sockaddr_storage *dst = &c->dst_addr;
	int sfd, rc, e;
	char b[64];

	px_addr_str(dst, b, sizeof(b));
	conn_set_state(c, PX_CONN_CONNECTING);
	l->started_ms = px_now_ms();
	sfd = socket(dst->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (sfd == -1) {
		e = errno;
		log_warn("conn=%llu upstream socket", (unsigned long long)c->id);
		if (e == EMFILE || e == ENFILE || e == ENOBUFS ||
		    e == ENOMEM) {
			errno = e;
			if (hooks.out_of_fds)
				hooks.out_of_fds("upstream socket");
		}
		px_conn_close(c, PX_CLOSE_CONNECT_FAILED);
		return;
	}
	/* without the mark the interception rules may divert our own
	 * upstream connection back to us (checked at start: daemon.c) */
	if (glob()->mode != POL_MODE_FORWARD &&
	    setsockopt(sfd, SOL_SOCKET, SO_MARK, &glob()->tproxy_mark,
	    sizeof(glob()->tproxy_mark)) == -1) {
		log_warn("conn=%llu SO_MARK 0x%x on the upstream socket, not "
		    "connecting unmarked", (unsigned long long)c->id,
		    glob()->tproxy_mark);
		close(sfd);
		px_conn_close(c, PX_CLOSE_CONNECT_FAILED);
		return;
	}
	px_upstream_prepare(&l->up, sfd, dst, c->id);
	l->srv.fd = sfd;
	l->opening = true;
	ev_io_init(&l->srv.rio, side_read_cb, sfd, EV_READ);
	l->srv.rio.data = &l->srv;
	l->connect_deadline_ms = l->started_ms + (double)glob()->connect_timeout_ms;
	rc = connect(sfd, (const struct sockaddr *)dst,
	    dst->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
	    sizeof(struct sockaddr_in6));
	e = errno;
	/* bound by the connect: should the connection come back to a
	 * listener, it is refused as a loop (listener.c) */
	if (getsockname(sfd, (struct sockaddr *)&l->up_local,
	    &(socklen_t){ sizeof(l->up_local) }) == -1)
		memset(&l->up_local, 0, sizeof(l->up_local));
	errno = e;
	if (rc == 0) {
		ev_io_init(&l->srv.wio, side_write_cb, sfd, EV_WRITE);
		l->srv.wio.data = &l->srv;
		conn_connected(c);
		return;
	}
	if (errno != EINPROGRESS) {
		PX_WARN_RATED(&connect_fail_rate, "conn=%llu upstream connect "
		    "to %s failed: %s", (unsigned long long)c->id, b,
		    strerror(e));
		px_conn_close(c, PX_CLOSE_CONNECT_FAILED);
		return;
	}
	ev_io_init(&l->srv.wio, connect_cb, sfd, EV_WRITE);
	l->srv.wio.data = &l->srv;
	ev_io_start(px_rt.loop, &l->srv.wio);
	conn_arm_timer(c);
}

/* Start the connections that waited for a drain that has now ended. */
static void
wake_waiters(void)
{
	struct px_conn *c, *next;

	for (c = px_rt.conns; c; c = next) {
		next = c->next;
		if (c->state == PX_CONN_WAITING && !px_conn_queued(c) &&
		    !px_side_draining_peer(c)) {
			CONN_INFO(c, "conn=%llu previous connection drained, "
			    "connecting", (unsigned long long)c->id);
			conn_open(c);
		}
	}
}

/* ---- max_connecting ------------------------------------------------------------ */

/*
 * A login storm (every client of an office connecting at once) must not
 * overflow the server's listen backlog (Samba's is 50): the SYNs the
 * server's kernel drops are retried only after 1, 3, 7 s, so the server
 * idles while clients wait, and connects time out.  At most
 * max_connecting connections per server are "opening" (upstream connect
 * in progress, or connected and not yet answered by the server); further
 * connections wait in arrival order (state waiting, client input left in
 * the kernel) and start as places free up.  Bounded: a queued connection
 * connects anyway after connect_timeout, and a connection stops counting
 * as opening connect_timeout after its connect (a client that sends
 * nothing never holds a place for long).
 */
static struct px_link *queue_head;
static struct px_link **queue_tail = &queue_head;
static ev_timer queue_timer;       /* runs the queue from the loop */

static unsigned int
opening_count(const struct sockaddr_storage *dst)
{
	const struct px_conn *x;
	unsigned int n = 0;

	for (x = px_rt.conns; x; x = x->next)
		if (px_link_of_const(x)->opening &&
		    memcmp(&x->dst_addr, dst, sizeof(*dst)) == 0)
			n++;
	return n;
}

static void
queue_remove(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);

	if (!px_conn_queued(c))
		return;
	if ((*l->qprev = l->qnext) != NULL)
		l->qnext->qprev = l->qprev;
	else
		queue_tail = l->qprev;
	l->qnext = NULL;
	l->qprev = NULL;
	px_stats.conns_queue_now--;
}

/* Connect now, or queue behind max_connecting opening connections. */
static void
conn_open(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);
	unsigned int lim = glob()->max_connecting, n;
	char b[64];

	if (lim == 0 || (n = opening_count(&c->dst_addr)) < lim) {
		conn_start_connect(c);
		return;
	}
	CONN_INFO(c, "conn=%llu queued: %u connections to %s are opening "
	    "(max_connecting)", (unsigned long long)c->id, n,
	    px_addr_str(&c->dst_addr, b, sizeof(b)));
	conn_set_state(c, PX_CONN_WAITING);
	l->qnext = NULL;
	l->qprev = queue_tail;
	*queue_tail = l;
	queue_tail = &l->qnext;
	px_stats.conns_queued++;
	px_stats.conns_queue_now++;
	l->connect_deadline_ms = px_now_ms() +
	    (double)glob()->connect_timeout_ms;
	conn_arm_timer(c);
}

/*
 * Start the queued connections that now have a place, oldest first.  Run
 * from the loop (queue_timer), never from inside a close or a read, so a
 * connection that fails at once cannot pull a list out from under its
 * caller.
 */
static void
queue_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct px_link *ql, *next;
	struct sockaddr_storage full;
	unsigned int lim = glob()->max_connecting;
	bool have_full = false;

	(void)loop;
	(void)w;
	(void)revents;
	if (px_rt.stopping)
		return;
	for (ql = queue_head; ql; ql = next) {
		struct px_conn *q = &ql->c;

		next = ql->qnext;
		if (lim != 0 && have_full &&
		    memcmp(&q->dst_addr, &full, sizeof(full)) == 0)
			continue;
		if (lim != 0 && opening_count(&q->dst_addr) >= lim) {
			full = q->dst_addr;
			have_full = true;
			continue;
		}
		queue_remove(q);
		CONN_INFO(q, "conn=%llu connecting (waited %.0f ms for "
		    "max_connecting)", (unsigned long long)q->id,
		    px_now_ms() - ql->started_ms);
		conn_enter(q);
		conn_start_connect(q);
		conn_leave(q);
	}
}

static void
queue_kick(void)
{
	if (queue_head == NULL || px_rt.stopping)
		return;
	if (!ev_is_active(&queue_timer)) {
		ev_init(&queue_timer, queue_cb);
		ev_timer_set(&queue_timer, 0., 0.);
		ev_timer_start(px_rt.loop, &queue_timer);
	}
}

/* The connection was answered, or is gone: its place is free. */
static void
opening_done(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);

	if (!l->opening)
		return;
	l->opening = false;
	queue_kick();
}

void
px_conn_reloaded(void)
{
	struct px_conn *c;

	queue_kick();
	/* client_keepalive and upstream_keepalive apply to the connections
	 * already open too */
	for (c = px_rt.conns; c; c = c->next) {
		struct px_link *l = px_link_of(c);

		if (px_tcp_keepalive(l->cli.fd,
		    glob()->client_keepalive_ms, false) == -1)
			log_warn("conn=%llu client_keepalive on the client's "
			    "socket", (unsigned long long)c->id);
		px_upstream_reloaded(&l->up, l->srv.fd, &c->dst_addr, c->id);
		conn_arm_timer(c);
	}
}

/* ---- timers ------------------------------------------------------------------ */

/*
 * The server watchdog (server_timeout).  Requests the proxy follows that
 * are outstanding upstream and have not gone async (an interim
 * STATUS_PENDING answer: CHANGE_NOTIFY, a blocking LOCK may wait for
 * hours) must see the server send something within server_timeout, or the
 * server is taken for gone: the connection is closed, and the write-behind
 * data it held is logged as lost (px_relay_free).  Without it a server
 * that stops answering (hung, or a path that black-holes established
 * connections) keeps a draining connection, and its memory, forever.
 * Checked on ticks of a quarter of the timeout, so it fires between 1 and
 * 1.25 times the timeout after the server's last byte.
 */
static bool
watchdog_on(const struct px_conn *c)
{
	return glob()->server_timeout_ms &&
	    (c->state == PX_CONN_RELAY || c->state == PX_CONN_DRAINING);
}

static double
watchdog_tick(double now)
{
	return now + (double)glob()->server_timeout_ms / 4;
}

/*
 * A timeout handler asks the socket itself before it acts.  After a stall
 * of the loop (a busy machine, a paused VM) the expired timer runs before
 * the I/O that arrived meanwhile has been seen (libev may even resume
 * with a pass that polled nothing), and a socket whose reading is paused
 * holds bytes that are not silence: a connect that has completed, or data
 * that is waiting, is not a timeout.
 */
static bool
fd_ready(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	return fd != -1 && poll(&p, 1, 0) == 1;
}

/* true if the server has been silent too long (logged) */
static bool
watchdog_expired(struct px_conn *c, double now)
{
	struct px_link *l = px_link_of(c);
	/* requests gone async wait as long as they must (a CHANGE_NOTIFY, a
	 * blocking LOCK), but the client's only: smbaccel's own WRITEs are
	 * due (a drain waited for one the server left pending for ever) */
	size_t waiting = c->led.npending - c->led.cr.client_async;
	double since;

	if (!watchdog_on(c) || waiting == 0 ||
	    c->led.npending < c->led.cr.client_async) {
		l->srv_wait_ms = 0;
		return false;
	}
	if (l->srv_wait_ms == 0) {
		l->srv_wait_ms = now;
		return false;
	}
	since = l->srv_rx_ms > l->srv_wait_ms ? l->srv_rx_ms : l->srv_wait_ms;
	/* a server that closed or reset polls readable for ever: only an
	 * open socket's waiting bytes are not silence */
	if (now - since < (double)glob()->server_timeout_ms ||
	    (!l->srv.rd_eof && fd_ready(l->srv.fd, POLLIN)))
		return false;
	log_warnx("conn=%llu server sent nothing for %.0f s with %zu "
	    "request(s) outstanding (server_timeout %u ms): closing",
	    (unsigned long long)c->id, (now - since) / 1e3, waiting,
	    (unsigned int)glob()->server_timeout_ms);
	return true;
}

static void
conn_arm_timer(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);
	double now = px_now_ms(), next = 0, t;

	if (c->state == PX_CONN_CLOSED)
		return;
	if (c->state == PX_CONN_CONNECTING || c->state == PX_CONN_WAITING)
		next = l->connect_deadline_ms;
	else {
		if (l->opening)
			next = l->opened_ms + (double)glob()->connect_timeout_ms;
		if (glob()->idle_timeout_ms && c->state != PX_CONN_DRAINING) {
			t = l->last_ms + (double)glob()->idle_timeout_ms;
			if (next == 0 || t < next)
				next = t;
		}
		t = px_relay_timer(c, now);
		if (t > 0 && (next == 0 || t < next))
			next = t;
		if (watchdog_on(c)) {
			t = watchdog_tick(now);
			if (next == 0 || t < next)
				next = t;
		}
		/* client_keepalive: is a client that has data waiting gone? */
		if (px_side_client_checked(l)) {
			if (l->cli_check_ms == 0)
				l->cli_check_ms = now + (double)glob()->
				    client_keepalive_ms / 2;
			if (next == 0 || l->cli_check_ms < next)
				next = l->cli_check_ms;
		}
	}
	ev_timer_stop(px_rt.loop, &l->timer);
	if (next > 0) {
		double after = (next - now) / 1e3;

		ev_timer_set(&l->timer, after > 0.001 ? after : 0.001, 0.);
		ev_timer_start(px_rt.loop, &l->timer);
	}
}

/*
 * connect_timeout has passed for a connection that is waiting or
 * connecting (a connect found completed is completed).  Both waits are
 * bounded: a drain that does not end (server gone silent) must not lock
 * its client out, and a server that answers nobody must not hold the
 * max_connecting queue; those connect anyway.  The client requests a
 * drain they overtake has not handled are dropped (side.c).
 */
static void
connect_deadline(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);
	unsigned int ms = glob()->connect_timeout_ms;
	char a[64];

	px_addr_str(&c->dst_addr, a, sizeof(a));
	if (c->state == PX_CONN_CONNECTING && fd_ready(l->srv.fd, POLLOUT)) {
		connect_cb_inner(px_rt.loop, &l->srv.wio, EV_WRITE);
		return;
	}
	if (c->state == PX_CONN_CONNECTING) {
		PX_WARN_RATED(&connect_timeout_rate, "conn=%llu upstream "
		    "connect to %s timed out after %u ms",
		    (unsigned long long)c->id, a, ms);
		px_conn_close(c, PX_CLOSE_CONNECT_TIMEOUT);
		return;
	}
	if (px_conn_queued(c)) {
		PX_WARN_RATED(&anyway_rate, "conn=%llu waited %u ms for one "
		    "of the %u connections opening to %s (max_connecting); "
		    "connecting anyway", (unsigned long long)c->id, ms,
		    glob()->max_connecting, a);
		queue_remove(c);
	} else
		PX_WARN_RATED(&anyway_rate, "conn=%llu previous connection of "
		    "this client still draining after %u ms; connecting "
		    "anyway", (unsigned long long)c->id, ms);
	px_side_overtake_drains(c, conn_kick);
	conn_start_connect(c);
}

static void
conn_timer_cb_inner(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct px_conn *c = w->data;
	struct px_link *l = px_link_of(c);
	double now = px_now_ms();

	(void)loop;
	(void)revents;
	/* connected, and no answer yet: give up the max_connecting place */
	if (l->opening && c->state != PX_CONN_CONNECTING &&
	    now >= l->opened_ms + (double)glob()->connect_timeout_ms - 1)
		opening_done(c);
	if (c->state == PX_CONN_WAITING || c->state == PX_CONN_CONNECTING) {
		if (now >= l->connect_deadline_ms - 1) {
			connect_deadline(c);
			return;
		}
	} else if (watchdog_expired(c, now)) {
		px_conn_close(c, PX_CLOSE_SERVER_TIMEOUT);
		return;
	} else if (glob()->idle_timeout_ms && c->state != PX_CONN_DRAINING &&
	    now >= l->last_ms + (double)glob()->idle_timeout_ms &&
	    px_relay_quiet(c) && !fd_ready(l->cli.fd, POLLIN) &&
	    !fd_ready(l->srv.fd, POLLIN)) {
		CONN_INFO(c, "conn=%llu idle for %u ms", (unsigned long long)
		    c->id, (unsigned int)glob()->idle_timeout_ms);
		px_conn_close(c, PX_CLOSE_IDLE);
		return;
	} else if (l->cli_check_ms && now >= l->cli_check_ms - 1) {
		const char *why = px_side_client_gone(l, now);

		l->cli_check_ms = 0;
		if (why != NULL) {
			px_client_timed_out(c, why);
			px_side_lost(&l->cli);
			on_client_eof(c);
			if (c->state == PX_CONN_CLOSED || conn_check_done(c))
				return;
		}
	}
	conn_arm_timer(c);
	conn_kick(c);
}

/* ---- reading and framing -------------------------------------------------------- */

/*
 * Decide whether the connection is finished: both directions shut, or a
 * side gone with nothing left to deliver to the other.
 */
static bool
conn_check_done(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);
	struct px_side *cl = &l->cli, *sv = &l->srv;

	if (l->srv_spent && spent_answered(c)) {
		log_info("conn=%llu the answers awaited have come: closing",
		    (unsigned long long)c->id);
		px_conn_close(c, PX_CLOSE_NONE);
		return true;
	}
	/* client gone: once write-behind has drained, pass the EOF on */
	if (cl->rd_eof && px_buf_len(&cl->in) == 0 && px_relay_quiet(c) &&
	    px_buf_len(&sv->out) == 0 && !sv->wr_shut && sv->fd != -1) {
		if (cl->rd_reset) {
			px_conn_close(c, PX_CLOSE_NONE);
			return true;
		}
		(void)shutdown(sv->fd, SHUT_WR);
		sv->wr_shut = true;
	}
	/* server gone: pass its EOF to the client once delivered */
	if (sv->rd_eof && px_buf_len(&sv->in) == 0 &&
	    px_buf_len(&cl->out) == 0 && !cl->wr_shut && cl->fd != -1) {
		(void)shutdown(cl->fd, SHUT_WR);
		cl->wr_shut = true;
	}
	if ((cl->rd_eof || cl->wr_shut) && sv->rd_eof &&
	    px_buf_len(&cl->out) == 0) {
		px_conn_close(c, PX_CLOSE_NONE);
		return true;
	}
	if (sv->rd_eof && sv->wr_shut && cl->rd_eof) {
		px_conn_close(c, PX_CLOSE_NONE);
		return true;
	}
	return false;
}

static void
on_client_eof(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);
	struct px_session *s;

	c->client_gone = true;
	if (c->state == PX_CONN_DRAINING || c->state == PX_CONN_CLOSED)
		return;
	if (l->cli.stream_left > 0) {
		srv_spend(c);
		return;
	}
	/* a re-authentication the client left in the middle (its next leg
	 * was due) never ends: what an expired session holds cannot be
	 * written, and the drain below reports it lost instead of waiting
	 * for ever */
	for (s = c->led.sessions; s; s = s->next)
		if (s->srv_reauth && !px_ledger_setup_pending(&c->led, s->id))
			s->srv_reauth = false;
	if (!px_relay_quiet(c) || px_buf_len(&l->cli.in) > 0) {
		log_info("conn=%llu client %s with %llu bytes buffered: writing "
		    "them before closing the server connection",
		    (unsigned long long)c->id, l->cli.rd_reset ? "reset" :
		    "closed", (unsigned long long)c->wb_bytes);
		conn_set_state(c, PX_CONN_DRAINING);
		px_relay_flush_all(c, CO_FLUSH_DISCONNECT);
	}
}

/*
 * The client left inside a WRITE being cut through to the server
 * (stream_left): the rest of that frame will never come, and the server
 * would read whatever followed as its continuation, so the server
 * connection can take nothing more (what is held for it stays held,
 * px_side_outbuf).  Buffered data is not flushed.  The connection waits
 * (draining: the client's reconnects wait behind it) for the answers to
 * the requests sent before, then closes (at once if none is awaited), and
 * what it still holds is logged as lost (px_relay_free).  Left to the
 * watchdog, it waited server_timeout for an answer the server could never
 * give, then blamed a silent server.
 */
static void
srv_spend(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);
	const struct px_ledger *led = &c->led;
	size_t i;

	log_warnx("conn=%llu client %s inside a WRITE being forwarded: %zu "
	    "bytes of it never sent; the server connection cannot be used "
	    "further", (unsigned long long)c->id, l->cli.rd_reset ? "reset" :
	    "closed", l->cli.stream_left);
	l->srv_spent = true;
	px_buf_consume(&l->cli.in, px_buf_len(&l->cli.in));
	/* the answers awaited: requests in flight but the cut WRITE, and
	 * not those gone async (a CHANGE_NOTIFY may never complete) */
	if (led->npending && (l->await = calloc(led->npending,
	    sizeof(*l->await))) != NULL)
		for (i = 0; i < led->tab_cap; i++)
			if (led->tab[i] && !led->tab[i]->async_id &&
			    led->tab[i]->mid != l->cut_mid)
				l->await[l->nawait++] = led->tab[i]->mid;
	if (l->nawait == 0) {
		px_conn_close(c, PX_CLOSE_NONE);
		return;
	}
	log_info("conn=%llu waits for the answers to %zu request(s) sent "
	    "before, then closes", (unsigned long long)c->id, l->nawait);
	conn_set_state(c, PX_CONN_DRAINING);
}

/* Have the answers srv_spend waits for come (or gone async)? */
static bool
spent_answered(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);
	const struct px_pending *p;
	size_t i, n = 0;

	for (i = 0; i < l->nawait; i++)
		if ((p = px_pending_find(&c->led, l->await[i])) != NULL &&
		    !p->async_id)
			l->await[n++] = l->await[i];
	l->nawait = n;
	return n == 0;
}

/*
 * Hand complete frames to the relay.  Stops at a stall (the frame stays
 * buffered) and when the peer's queue is full.
 */
static void
process_input(struct px_side *s)
{
	struct px_link *l = s->link;
	struct px_conn *c = &l->c;
	const struct pol_global *g = glob();
	size_t largest = 0;              /* largest frame handled here */

	s->out_stopped = false;
	while (c->state != PX_CONN_CLOSED && px_buf_len(&s->in) > 0) {
		size_t flen;
		uint8_t type;
		enum px_frame_rc fr;
		enum px_rc rc;
		uint8_t *p = s->in.data + s->in.head;

		if (c->state == PX_CONN_OPAQUE) {
			if (px_side_send_frame(s->peer, p, px_buf_len(&s->in)) == -1)
				goto nomem;
			px_buf_consume(&s->in, px_buf_len(&s->in));
			break;
		}
		if (s->stream_left > 0) {
			/* the rest of a large frame already decided on */
			size_t n = px_buf_len(&s->in) < s->stream_left ?
			    px_buf_len(&s->in) : s->stream_left;

			if (px_buf_len(&s->peer->out) >= g->queue_limit)
				break;
			if (px_side_stream(s->peer, p, n) == -1)
				goto nomem;
			px_buf_consume(&s->in, n);
			s->stream_left -= n;
			if (s->stream_left == 0 && px_side_release_hold(s->peer) == -1)
				goto nomem;
			continue;
		}
		if (s == &l->cli && c->stall != PX_STALL_NONE &&
		    !px_relay_stall_cleared(c))
			break;
		if (px_buf_len(&s->peer->out) >= g->queue_limit)
			break;
		if (s == &l->cli && px_side_out_full(s)) {
			s->out_stopped = true;   /* resume_client */
			break;
		}
		fr = px_frame_parse(p, px_buf_len(&s->in), FRAME_MAX, &flen,
		    &type);
		if (fr == PX_FRAME_NEED) {
			size_t have = px_buf_len(&s->in), full;

			/* a large WRITE or READ response that is forwarded as
			 * is goes through as it arrives (cut-through) instead
			 * of being held until complete */
			if (p[0] == PX_NBSS_MESSAGE && have >= PX_NBSS_HDR &&
			    px_side_implausible(s, p, have)) {
				PX_WARN_RATED(&bad_frame_rate, "conn=%llu %s "
				    "sent a frame that cannot be SMB (length "
				    "%u, magic %02x%02x%02x%02x), closing",
				    (unsigned long long)c->id, s->name,
				    (unsigned int)(p[1] << 16 | p[2] << 8 |
				    p[3]), have > 4 ? p[4] : 0, have > 5 ?
				    p[5] : 0, have > 6 ? p[6] : 0, have > 7 ?
				    p[7] : 0);
				px_conn_close(c, PX_CLOSE_BAD_FRAME);
				return;
			}
			if (have < PX_STREAM_HEAD || p[0] != PX_NBSS_MESSAGE)
				break;
			full = PX_NBSS_HDR + ((size_t)p[1] << 16 |
			    (size_t)p[2] << 8 | p[3]);
			if (full < PX_STREAM_MIN || c->state != PX_CONN_RELAY ||
			    !(s == &l->cli ? px_relay_client_stream(c, p, full) :
			    px_relay_server_stream(c, p, full)))
				break;
			if (s == &l->cli)
				l->cut_mid = px_get_u64(p + PX_NBSS_HDR + 24);
			if (px_side_stream(s->peer, p, have) == -1)
				goto nomem;
			px_buf_consume(&s->in, have);
			s->stream_left = full - have;
			continue;
		}
		if (fr == PX_FRAME_BAD) {
			PX_WARN_RATED(&bad_frame_rate, "conn=%llu bad NBSS frame "
			    "from %s (type 0x%02x length %u), closing",
			    (unsigned long long)c->id, s->name, p[0],
			    (unsigned int)(p[1] << 16 | p[2] << 8 | p[3]));
			px_conn_close(c, PX_CLOSE_BAD_FRAME);
			return;
		}
		if (type == PX_NBSS_KEEPALIVE)
			rc = px_side_send_frame(s->peer, p, flen) == 0 ?
			    PX_RC_DONE : PX_RC_CLOSE;
		else if (s == &l->cli)
			rc = px_relay_client_frame(c, p, flen);
		else
			rc = px_relay_server_frame(c, p, flen);
		if (c->state == PX_CONN_CLOSED)
			return;
		if (rc == PX_RC_STALL)
			break;
		if (rc == PX_RC_CLOSE) {
			/* the relay says why; what it does not name is a
			 * failed allocation */
			px_conn_close(c, c->fail != PX_CLOSE_NONE ? c->fail :
			    PX_CLOSE_NO_MEMORY);
			return;
		}
		px_buf_consume(&s->in, flen);
		if (flen > largest)
			largest = flen;
	}
	if (s->rd_eof && px_buf_len(&s->in) > 0 && c->state != PX_CONN_OPAQUE &&
	    !(s == &l->cli && s->stream_left > 0)) {   /* srv_spend's */
		size_t flen;
		uint8_t type;

		/* the peer went away in the middle of a frame: it can never
		 * be completed, so it is dropped (a whole stalled frame
		 * stays to be handled) */
		if (px_frame_parse(s->in.data + s->in.head, px_buf_len(&s->in),
		    FRAME_MAX, &flen, &type) != PX_FRAME_OK) {
			PX_WARN_RATED(&bad_frame_rate, "conn=%llu %s closed "
			    "inside a frame; %zu bytes dropped",
			    (unsigned long long)c->id, s->name,
			    px_buf_len(&s->in));
			px_buf_consume(&s->in, px_buf_len(&s->in));
		}
	}
	/* a buffer that just held a large frame is kept (up to 4 MiB, as
	 * the output queue), not grown again from 16 KiB, copying, for the
	 * next one of a stream of 1 MiB WRITEs; it was that large anyway */
	px_buf_shrink(&s->in, s->rd_want < READ_CHUNK && largest <= READ_CHUNK ?
	    READ_IDLE_KEEP : 4 * 1024 * 1024);
	if (s->rd_eof && s == &l->cli && c->state != PX_CONN_CLOSED)
		on_client_eof(c);
	if (c->state != PX_CONN_CLOSED && !conn_check_done(c))
		conn_update(c);
	if (s == &l->srv)
		resume_client(l);       /* a cut-through READ released its hold */
	return;
nomem:
	px_conn_close(c, PX_CLOSE_NO_MEMORY);
}

/*
 * The client's frames waited for its own output queue (out_stopped,
 * px_side_out_full): once that is under queue_limit again, handle them.
 * Its queue shrinks only as it is written, or when a frame cut through
 * from the server ends and what was held moves behind it.
 */
static void
resume_client(struct px_link *l)
{
	if (l->cli.out_stopped && l->c.state != PX_CONN_CLOSED &&
	    !px_side_out_full(&l->cli))
		process_input(&l->cli);
}

static void
conn_kick(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);

	if (c->state == PX_CONN_CLOSED)
		return;
	conn_enter(c);
	process_input(&l->cli);
	conn_leave(c);
}

static void
side_read_cb_inner(struct ev_loop *loop, ev_io *w, int revents)
{
	struct px_side *s = w->data;
	struct px_link *l = s->link;
	struct px_conn *c = &l->c;
	ssize_t n;

	(void)loop;
	(void)revents;
	if ((n = px_side_read(s)) == -2) {
		px_conn_close(c, PX_CLOSE_NO_MEMORY);
		return;
	}
	if (n == -1)
		return;
	if (n > 0 && s == &l->srv) {
		l->srv_rx_ms = l->last_ms;
		opening_done(c);
	}
	if (s->rd_eof && s == &l->srv && !px_relay_quiet(c))
		log_warnx("conn=%llu server closed with write-behind data "
		    "outstanding", (unsigned long long)c->id);
	process_input(s);
	if (c->state != PX_CONN_CLOSED && s->fd != -1 && !s->rd_eof)
		px_side_set_lowat(s);
}

static void
side_write_cb_inner(struct ev_loop *loop, ev_io *w, int revents)
{
	struct px_side *s = w->data;
	struct px_link *l = s->link;
	struct px_conn *c = &l->c;
	bool was_full, lost;

	(void)loop;
	(void)revents;
	was_full = px_buf_len(&s->out) >= glob()->queue_limit;
	lost = !px_side_write(s);
	/* a client whose socket failed is gone, as at its EOF: the drain
	 * starts now, and its reconnects wait behind it */
	if (lost && s == &l->cli) {
		on_client_eof(c);
		if (c->state == PX_CONN_CLOSED)
			return;
	}
	/* the peer may read again; its buffered input may now move */
	if (was_full && px_buf_len(&s->out) < glob()->queue_limit)
		process_input(s->peer);
	else if (c->state != PX_CONN_CLOSED && !conn_check_done(c))
		conn_update(c);
	if (s == &l->cli)
		resume_client(l);
}

/* ---- shutdown ----------------------------------------------------------------- */

void
px_conn_shutdown_all(void)
{
	struct px_conn *c, *next;

	for (c = px_rt.conns; c; c = next) {
		next = c->next;
		if (!px_relay_quiet(c)) {
			if (!px_link_of(c)->srv_spent)
				px_relay_flush_all(c, CO_FLUSH_SHUTDOWN);
			continue;
		}
		px_conn_close(c, PX_CLOSE_SHUTDOWN);
	}
}

/* ---- event-loop entry points ------------------------------------------------ */

static void
side_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct px_conn *c = &((struct px_side *)w->data)->link->c;

	conn_enter(c);
	side_read_cb_inner(loop, w, revents);
	conn_leave(c);
}

static void
side_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct px_conn *c = &((struct px_side *)w->data)->link->c;

	conn_enter(c);
	side_write_cb_inner(loop, w, revents);
	conn_leave(c);
}

static void
connect_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct px_conn *c = &((struct px_side *)w->data)->link->c;

	conn_enter(c);
	connect_cb_inner(loop, w, revents);
	conn_leave(c);
}

static void
conn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct px_conn *c = w->data;

	conn_enter(c);
	conn_timer_cb_inner(loop, w, revents);
	conn_leave(c);
}
