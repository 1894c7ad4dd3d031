/*
 * side.c - one end of a connection: its socket's watchers, its output
 * queue and the hold queue beside it, and what may be read from it
 * (backpressure: a side is read only while its peer's output queue is
 * under queue_limit, relayd relay_read, and the client also only while
 * its own is); and the framing questions about one end's input (a frame
 * that can never be valid, SO_RCVLOWAT); and a client's previous
 * connection that a reconnect waits for, or goes ahead of.  Used by
 * conn.c only; it calls nothing above it but the relay's kick of a drain
 * it cut short (conn.c's, passed in).
 */
#include <errno.h>
#include <malloc.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/relay.h"
#include "proxy/side.h"

/* ---- watchers ------------------------------------------------------------ */

/* never hold more than one maximal frame plus a read chunk */
#define IN_MAX (FRAME_MAX + PX_NBSS_HDR + READ_CHUNK)

/*
 * Why smbaccel does not read s although it could (backpressure, a stall,
 * the bound of its input), or NULL.
 */
static const char *
read_held(const struct px_side *s)
{
	const struct px_link *l = s->link;
	const struct px_conn *c = &l->c;

	if (px_buf_len(&s->peer->out) >= pol_global(px_rt.cfg)->queue_limit)
		return "the server's queue is full (queue_limit)";
	/* a client that does not read its answers: smbaccel answers many
	 * of its requests itself, and would queue those answers unbounded */
	if (s == &l->cli && px_side_out_full(s))
		return "it did not read its answers (queue_limit)";
	/* shutting down: no new client requests, only the drain */
	if (s == &l->cli && px_rt.stopping)
		return "smbaccel is stopping";
	/* a stalled client frame blocks further client input */
	if (s == &l->cli && c->stall != PX_STALL_NONE)
		return c->stall == PX_STALL_MEMORY ? "a request of it waited for "
		    "the write-behind memory budget" : "a request of it waited "
		    "for a flush, a read-ahead or an earlier answer";
	if (px_buf_len(&s->in) >= IN_MAX)
		return "its input buffer is full";
	return NULL;
}

static bool
may_read(const struct px_side *s)
{
	const struct px_conn *c = &s->link->c;

	if (s->fd == -1 || s->rd_eof)
		return false;
	if (c->state == PX_CONN_CONNECTING || c->state == PX_CONN_WAITING ||
	    c->state == PX_CONN_CLOSED)
		return false;
	return read_held(s) == NULL;
}

bool
px_side_out_full(const struct px_side *s)
{
	return px_buf_len(&s->out) + px_buf_len(&s->hold) >=
	    pol_global(px_rt.cfg)->queue_limit;
}

void
px_side_update(struct px_side *s)
{
	struct ev_loop *loop = px_rt.loop;

	if (s->fd == -1)
		return;
	if (may_read(s)) {
		if (!ev_is_active(&s->rio))
			ev_io_start(loop, &s->rio);
	} else if (ev_is_active(&s->rio))
		ev_io_stop(loop, &s->rio);
	if (px_buf_len(&s->out) > 0 && !s->wr_shut) {
		if (!ev_is_active(&s->wio))
			ev_io_start(loop, &s->wio);
	} else if (ev_is_active(&s->wio))
		ev_io_stop(loop, &s->wio);
}

/* ---- sending ---------------------------------------------------------------- */

/*
 * Where a message for side s goes: its output queue, or, while the other
 * side is cutting a large frame through to s, a hold queue appended once
 * that frame is complete (messages must never interleave with it).
 */
struct px_buf *
px_side_outbuf(struct px_side *s)
{
	return s->peer->stream_left > 0 ? &s->hold : &s->out;
}

/*
 * Write up to len bytes of p to fd until the socket takes no more; returns
 * how many it took.  Errors (EAGAIN or worse) are left for the write
 * watcher to find.
 */
static size_t
write_some(int fd, const uint8_t *p, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = write(fd, p + done, len - done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	return done;
}

/*
 * Write what is queued for s now, without waiting for the event loop: a
 * synthesized response then costs one write(2) instead of two epoll_ctl
 * calls and a loop turn.
 */
static void
try_write(struct px_side *s)
{
	if (px_buf_len(&s->out) == 0)
		return;
	px_buf_consume(&s->out, write_some(s->fd, s->out.data + s->out.head,
	    px_buf_len(&s->out)));
}

/* Account n bytes just placed in px_side_outbuf(s) and start writing. */
void
px_side_out_commit(struct px_side *s, size_t n)
{
	if (s == &s->link->cli)
		px_stats.bytes_s2c += n;
	else
		px_stats.bytes_c2s += n;
	if (s->fd == -1 || ev_is_active(&s->wio) ||
	    s->link->c.state == PX_CONN_CONNECTING)
		return;
	if (s == &s->link->srv && px_buf_len(&s->out) == n)
		px_upstream_pace(&s->link->up, s->fd, n, s->link->c.id);
	try_write(s);
	if (px_buf_len(&s->out))
		ev_io_start(px_rt.loop, &s->wio);
}

/*
 * Queue len bytes for s in b.  When nothing is queued before them, they are
 * first written straight from where they are (a forwarded frame: the peer's
 * input buffer), and only what the socket did not take is copied: a large
 * frame relayed as is then crosses user space once, not twice.
 */
static int
append_to(struct px_side *s, struct px_buf *b, const uint8_t *p, size_t len)
{
	size_t done = 0;

	if (b == &s->out && px_buf_len(b) == 0 && s->fd != -1 &&
	    !ev_is_active(&s->wio) && s->link->c.state != PX_CONN_CONNECTING) {
		if (s == &s->link->srv)
			px_upstream_pace(&s->link->up, s->fd, len, s->link->c.id);
		done = write_some(s->fd, p, len);
	}
	if (done < len && px_buf_append(b, p + done, len - done) == -1)
		return -1;
	px_side_out_commit(s, len);
	return 0;
}

/* Bytes of a frame being cut through (peer -> s): straight to s->out. */
int
px_side_stream(struct px_side *s, const uint8_t *p, size_t len)
{
	if (s->fd == -1 || s->wr_shut)
		return 0;
	return append_to(s, &s->out, p, len);
}

/* The cut-through frame to s is complete: release what was held. */
int
px_side_release_hold(struct px_side *s)
{
	int rc = 0;

	if (px_buf_len(&s->hold) == 0)
		return 0;
	if (s->fd != -1 && !s->wr_shut)
		rc = px_buf_append(&s->out, s->hold.data + s->hold.head,
		    px_buf_len(&s->hold));
	px_buf_consume(&s->hold, px_buf_len(&s->hold));
	px_buf_shrink(&s->hold, 0);
	px_side_out_commit(s, 0);
	return rc;
}

int
px_side_send_frame(struct px_side *s, const uint8_t *frame, size_t len)
{
	if (s->fd == -1 || s->wr_shut)
		return 0; /* the side is gone: nothing to deliver to */
	return append_to(s, px_side_outbuf(s), frame, len);
}

int
px_side_send(struct px_side *s, const uint8_t *msg, size_t len)
{
	struct px_buf *b = px_side_outbuf(s);

	if (s->fd == -1 || s->wr_shut)
		return 0;
	if (px_buf_reserve(b, len + PX_NBSS_HDR) == -1)
		return -1;
	px_frame_put_hdr(b->data + b->tail, len);
	memcpy(b->data + b->tail + PX_NBSS_HDR, msg, len);
	b->tail += len + PX_NBSS_HDR;
	px_side_out_commit(s, len + PX_NBSS_HDR);
	return 0;
}

/* ---- the socket ------------------------------------------------------------ */

/*
 * Read what s's socket has into its input buffer; reads start at
 * READ_FIRST and double while they fill what they were given, up to
 * READ_CHUNK (side.h).  Returns the bytes read; 0 at EOF or on an error
 * (rd_eof set, rd_reset too for an error, a timeout logged and counted,
 * reading stopped); -1 when nothing is there yet; -2 out of memory.
 */
ssize_t
px_side_read(struct px_side *s)
{
	struct px_link *l = s->link;
	struct px_conn *c = &l->c;
	ssize_t n;
	size_t room;

	if (s->rd_want == 0)
		s->rd_want = READ_FIRST;
	if (px_buf_reserve(&s->in, s->lowat > 0 && (size_t)s->lowat >
	    s->rd_want ? (size_t)s->lowat : s->rd_want) == -1)
		return -2;
	room = s->in.cap - s->in.tail;
	n = read(s->fd, s->in.data + s->in.tail, room);
	if (n > 0 && (size_t)n == room && s->rd_want < READ_CHUNK)
		s->rd_want *= 2;
	else if (n > 0 && (size_t)n < s->rd_want / 8 && s->rd_want > READ_FIRST)
		s->rd_want /= 2;
	if (n > 0) {
		s->in.tail += (size_t)n;
		s->bytes_in += (uint64_t)n;
		l->last_ms = px_now_ms();
		return n;
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return -1;
	if (n == -1 && errno == ETIMEDOUT && s == &l->cli)
		px_client_timed_out(c, PX_KA_WHY);
	else if (n == -1 && errno == ETIMEDOUT)
		px_server_timed_out(c);
	else if (n == -1 && errno != ECONNRESET)
		log_warn("conn=%llu read from %s", (unsigned long long)c->id,
		    s->name);
	s->rd_eof = true;
	s->rd_reset = n == -1;
	ev_io_stop(px_rt.loop, &s->rio);
	log_debug("conn=%llu %s %s", (unsigned long long)c->id, s->name,
	    s->rd_reset ? "reset" : "closed");
	return 0;
}

/*
 * Write s's output queue until the socket takes no more.  false: the
 * socket failed (logged unless the peer reset or closed it; a timeout
 * counted), and s is lost (px_side_lost).
 */
bool
px_side_write(struct px_side *s)
{
	struct px_link *l = s->link;
	struct px_conn *c = &l->c;
	ssize_t n;
	bool ok = true;

	while (px_buf_len(&s->out) > 0) {
		n = write(s->fd, s->out.data + s->out.head, px_buf_len(&s->out));
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			if (errno == ETIMEDOUT && s == &l->cli)
				px_client_timed_out(c, PX_KA_WHY);
			else if (errno == ETIMEDOUT)
				px_server_timed_out(c);
			else if (errno != EPIPE && errno != ECONNRESET)
				log_warn("conn=%llu write to %s",
				    (unsigned long long)c->id, s->name);
			px_side_lost(s);
			ok = false;
			break;
		}
		px_buf_consume(&s->out, (size_t)n);
		l->last_ms = px_now_ms();
	}
	px_buf_shrink(&s->out, 4 * 1024 * 1024);
	return ok;
}

/* ---- framing ----------------------------------------------------------------- */

/*
 * An incomplete frame that can never become a message we would pass on:
 * an unknown protocol signature, or a length beyond anything the dialect
 * allows.  Waiting for its bytes would hold the connection (and up to
 * 16 MiB) for nothing.
 */
bool
px_side_implausible(const struct px_side *s, const uint8_t *p, size_t have)
{
	const struct px_conn *c = &s->link->c;
	size_t len = (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
	size_t limit = 1024 * 1024;

	if (c->state != PX_CONN_RELAY)
		return false;
	/* a client with no session: NEGOTIATE and SESSION_SETUP (a
	 * Kerberos ticket with a large PAC is tens of KiB); the server's
	 * sizes only once it has logged on (an unauthenticated client's
	 * partial frames held up to them for ever) */
	if (s == &s->link->cli && !px_ledger_logged_on(&c->led))
		;
	else if (c->led.negotiated) {
		size_t m = c->led.max_write;

		/* a QUERY_DIRECTORY answer (a big folder) may fill
		 * MaxTransactSize, far above MaxRead on some servers */
		if (c->led.max_read > m)
			m = c->led.max_read;
		if (c->led.max_transact > m)
			m = c->led.max_transact;
		limit = m + 1024 * 1024;   /* headers, compounds, transform */
		if (limit > FRAME_MAX)
			limit = FRAME_MAX;
	}
	if (len > limit)
		return true;
	return have >= PX_NBSS_HDR + 4 &&
	    px_classify(p + PX_NBSS_HDR, have - PX_NBSS_HDR) == PX_MAGIC_UNKNOWN;
}

/*
 * Wake for a large client frame once, when it has all arrived, not once per
 * piece the client's stack delivers (on a loaded LAN a 1 MiB WRITE comes in
 * dozens): while the input holds the start of a frame that still lacks at
 * least LOWAT_MIN bytes and is not cut through (process_input has seen its
 * head and decided), the client socket's SO_RCVLOWAT is what it lacks.
 * The kernel still wakes at EOF, an error or memory pressure (tcp_poll),
 * caps the value at half the receive buffer, and grows the buffer to hold
 * it.  Only the client's side: on the server's (a WAN) it would also
 * clamp the receive window.
 */
#define LOWAT_MIN (64 * 1024)
void
px_side_set_lowat(struct px_side *s)
{
	size_t have = px_buf_len(&s->in), full;
	int want = 0;

	if (s != &s->link->cli || s->lowat < 0)
		return;
	if (s->stream_left == 0 && have >= PX_STREAM_HEAD) {
		const uint8_t *p = s->in.data + s->in.head;

		full = PX_NBSS_HDR + ((size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3]);
		if (p[0] == PX_NBSS_MESSAGE && full > have &&
		    full - have >= LOWAT_MIN)
			want = (int)(full - have);
	}
	if (want == s->lowat)
		return;
	if (setsockopt(s->fd, SOL_SOCKET, SO_RCVLOWAT, &(int){ want ? want : 1 },
	    sizeof(int)) == -1) {
		log_warn("conn=%llu SO_RCVLOWAT %d on the client socket, not "
		    "tried again on this connection",
		    (unsigned long long)s->link->c.id, want ? want : 1);
		s->lowat = -1;
		return;
	}
	s->lowat = want;
}

/* s's empty buffers given back */
static void
trim(struct px_side *s)
{
	px_buf_shrink(&s->in, 0);
	px_buf_shrink(&s->out, 0);
	if (s->in.cap == 0)
		s->rd_want = READ_FIRST;
}

void
px_side_trim_idle(double now_ms)
{
	struct px_conn *c;

	for (c = px_rt.conns; c; c = c->next) {
		struct px_link *l = px_link_of(c);

		if (c->state == PX_CONN_CLOSED ||
		    now_ms - l->last_ms < PX_IDLE_TRIM_MS)
			continue;
		trim(&l->cli);
		trim(&l->srv);
	}
	/* large buffers come from the heap once malloc has seen some freed
	 * (its mmap threshold rises), and freed heap memory stays with the
	 * process: hand it back (a walk of the free chunks, every 5 s) */
	(void)malloc_trim(0);
}

void
px_side_init(struct px_link *l, struct px_side *s, struct px_side *peer,
    int fd, const char *name, void (*rcb)(struct ev_loop *, ev_io *, int),
    void (*wcb)(struct ev_loop *, ev_io *, int))
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->link = l;
	s->peer = peer;
	s->name = name;
	ev_io_init(&s->rio, rcb, fd, EV_READ);
	ev_io_init(&s->wio, wcb, fd, EV_WRITE);
	s->rio.data = s;
	s->wio.data = s;
}

/*
 * Why the peer counts as gone, or NULL: its kernel has acknowledged nothing
 * for ms while smbaccel waits for it to, with data in flight retransmitted
 * at least twice, or at least two window probes in a row unanswered
 * (TCP_INFO).  The kernel sends no keepalive probe in either case and
 * would give up on retransmitting only after tcp_retries2 (15 minutes or
 * more), on window probes never while it could send them.  A live peer
 * that does not read answers the window probes, so it is never taken for
 * gone.
 */
const char *
px_side_unanswered(const struct px_side *s, uint32_t ms)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	int queued = 0;

	if (s->fd == -1 || ms == 0 ||
	    getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == -1 ||
	    ti.tcpi_last_ack_recv < ms)
		return NULL;
	if (ti.tcpi_retransmits >= 2)
		return "acknowledged none of the data sent to it";
	/* probes of a closed window while data waits; keepalive probes (no
	 * data queued) are the kernel's to count: it fails the socket */
	if (ti.tcpi_probes >= 2 && ioctl(s->fd, SIOCOUTQ, &queued) == 0 &&
	    queued > 0)
		return "answered no window probe (it had stopped reading)";
	return NULL;
}

/* Is the client looked at by client_keepalive (px_side_client_gone)? */
bool
px_side_client_checked(const struct px_link *l)
{
	const struct px_conn *c = &l->c;

	return pol_global(px_rt.cfg)->client_keepalive_ms &&
	    (c->state == PX_CONN_RELAY || c->state == PX_CONN_OPAQUE ||
	    (c->state == PX_CONN_DRAINING && !l->cli.wr_shut));
}

/*
 * Why the client counts as gone under client_keepalive, or NULL: its
 * kernel answers nothing (px_side_unanswered); or, its connection
 * draining, it closed its side and has read none of its answers for
 * client_keepalive.  That one may be alive, but while its answers hold
 * the server's back (queue_limit) the drain cannot end, and a drain
 * holds the client's reconnects.
 */
const char *
px_side_client_gone(const struct px_link *l, double now)
{
	uint32_t ka = pol_global(px_rt.cfg)->client_keepalive_ms;
	const char *why;

	if (!px_side_client_checked(l))
		return NULL;
	if ((why = px_side_unanswered(&l->cli, px_keepalive_gone_ms(ka))))
		return why;
	if (l->c.state == PX_CONN_DRAINING && l->cli.rd_eof &&
	    px_buf_len(&l->cli.out) > 0 && now - l->last_ms >= (double)ka)
		return "closed its side and read none of its answers";
	return NULL;
}

/*
 * The client's socket failed ETIMEDOUT (the kernel gave up its keepalive
 * probes or its retransmissions), or px_side_unanswered found it gone:
 * client_keepalive and four probe intervals after it fell silent.  Its
 * machine is off or off the network; conn.c handles it as a reset (what
 * it wrote is written, then the server connection is closed, and the
 * server lets go of its handles).  Logged and counted once per
 * connection.
 */
void
px_client_timed_out(struct px_conn *c, const char *why)
{
	struct px_link *l = px_link_of(c);
	char a[64];

	if (c->client_timed_out)
		return;
	c->client_timed_out = true;
	px_stats.clients_timed_out++;
	log_warnx("conn=%llu client %s %s for %.0f s (client_keepalive "
	    "%u ms): taken as gone", (unsigned long long)c->id,
	    px_addr_str(&c->peer_addr, a, sizeof(a)), why,
	    (px_now_ms() - l->last_ms) / 1000,
	    (unsigned int)pol_global(px_rt.cfg)->client_keepalive_ms);
}

/*
 * The server's socket failed ETIMEDOUT: the kernel gave up the keepalive
 * probes of upstream_keepalive (127 unanswered: the path or the server
 * has been gone for hours) or retransmitting what smbaccel sent (with
 * requests outstanding server_timeout usually comes first).  The
 * connection closes as for any server that went away.  Logged and counted
 * once per connection.
 */
void
px_server_timed_out(struct px_conn *c)
{
	struct px_link *l = px_link_of(c);

	if (c->server_timed_out)
		return;
	c->server_timed_out = true;
	px_stats.servers_timed_out++;
	log_warnx("conn=%llu server %s " PX_KA_WHY " for %.0f s "
	    "(upstream_keepalive %u ms): taken as gone", (unsigned long long)
	    c->id, c->dst_str, (px_now_ms() - l->srv_rx_ms) / 1000,
	    (unsigned int)l->up.keepalive_ms);
}

/* s is gone: what it would have got is dropped (a write failed, or the
 * client was found gone) */
void
px_side_lost(struct px_side *s)
{
	px_buf_consume(&s->out, px_buf_len(&s->out));
	s->wr_shut = true;
	s->rd_eof = true;
	if (s == &s->link->cli)
		s->rd_reset = true;
}

/* ---- a client's previous connection ------------------------------------------ */

static bool
drains_for(const struct px_conn *x, const struct px_conn *c)
{
	return x != c && x->state == PX_CONN_DRAINING &&
	    memcmp(&x->dst_addr, &c->dst_addr, sizeof(c->dst_addr)) == 0 &&
	    px_same_host(&x->peer_addr, &c->peer_addr);
}

/*
 * A client reconnecting at once (a durable reopen) must not overtake the
 * drain of its previous connection (DESIGN.md section 4): same client
 * address, same server, a connection still writing buffered data.
 */
bool
px_side_draining_peer(const struct px_conn *c)
{
	const struct px_conn *x;

	for (x = px_rt.conns; x; x = x->next)
		if (drains_for(x, c))
			return true;
	return false;
}

/*
 * Has the client of x closed or reset its connection (a zero-timeout poll:
 * POLLRDHUP alone is its FIN; a reset adds POLLHUP and POLLERR)?  What it
 * sent before stays readable in both cases.  0: neither; else the poll's
 * revents.
 */
static short
hung_up(const struct px_side *s)
{
	struct pollfd p = { .fd = s->fd, .events = POLLRDHUP };

	if (poll(&p, 1, 0) != 1)
		return 0;
	return p.revents & (POLLRDHUP | POLLHUP | POLLERR);
}

/*
 * A client whose input smbaccel was not reading (read_held) when it went
 * has left no trace but in the kernel: smbaccel would see its EOF only
 * once the stall cleared, and the connection would then handle the
 * requests it holds, after what the client's reconnect c wrote meanwhile.
 * Each such previous connection of c's client (same host, same server,
 * relaying, its client socket not read) is asked: one whose client has
 * hung up is read (within its input bound: what the kernel holds beyond
 * it is dropped, logged) to its end, and kicked (conn.c's kick), so that
 * it finds its client gone and drains; c then waits for that drain as for
 * any other (px_side_draining_peer).  A live connection of the same
 * client (clients hold several to one server) has not hung up and is
 * left alone.  The list is walked again after each kick, which may close
 * connections.
 */
void
px_side_find_gone(const struct px_conn *c, void (*kick)(struct px_conn *))
{
	struct px_conn *x;
	struct px_side *s;
	const char *why;
	int left;
	short hup = 0;
	char a[64];

again:
	for (x = px_rt.conns; x; x = x->next) {
		s = &px_link_of(x)->cli;
		if (x == c || x->state != PX_CONN_RELAY || s->fd == -1 ||
		    s->rd_eof || ev_is_active(&s->rio) ||
		    (why = read_held(s)) == NULL ||
		    memcmp(&x->dst_addr, &c->dst_addr, sizeof(c->dst_addr)) ||
		    !px_same_host(&x->peer_addr, &c->peer_addr) ||
		    (hup = hung_up(s)) == 0)
			continue;
		log_warnx("conn=%llu client %s went while smbaccel was not "
		    "reading it (%s): found at its reconnect (conn=%llu), "
		    "reading what it sent and draining",
		    (unsigned long long)x->id, px_addr_str(&x->peer_addr, a,
		    sizeof(a)), why, (unsigned long long)c->id);
		while (!s->rd_eof && px_buf_len(&s->in) < IN_MAX &&
		    px_side_read(s) > 0)
			;
		if (!s->rd_eof) {
			if (ioctl(s->fd, FIONREAD, &left) == -1)
				left = -1;
			if (left != 0)
				log_warnx("conn=%llu %d bytes the client sent "
				    "that smbaccel could not hold (its input "
				    "bound, or out of memory) dropped unread",
				    (unsigned long long)x->id, left);
			/* not read to its ECONNRESET: a reset stays one
			 * towards the server (px_side_close) */
			s->rd_eof = true;
			s->rd_reset = (hup & (POLLHUP | POLLERR)) != 0;
		}
		kick(x);
		goto again;
	}
}

/*
 * Drop what x's client sent and smbaccel had not handled: frames stalled
 * behind a flush, the memory budget or the client's output queue, never
 * answered; counted (a compound is one frame) and logged.
 */
static void
drop_unhandled(struct px_conn *x, const struct px_conn *by)
{
	struct px_side *s = &px_link_of(x)->cli;
	size_t len = px_buf_len(&s->in), off = 0, n = 0, flen;
	uint8_t type;

	while (off < len && px_frame_parse(s->in.data + s->in.head + off,
	    len - off, FRAME_MAX, &flen, &type) == PX_FRAME_OK) {
		if (type != PX_NBSS_KEEPALIVE)
			n++;
		off += flen;
	}
	px_buf_consume(&s->in, len);
	x->stall = PX_STALL_NONE;
	px_stats.client_requests_dropped += n;
	log_warnx("conn=%llu this client's reconnect (conn=%llu) goes ahead of "
	    "the drain: %zu request frame(s), %zu bytes, that the client sent "
	    "and smbaccel had not handled (never answered) dropped; what "
	    "smbaccel acknowledged is still written first",
	    (unsigned long long)x->id, (unsigned long long)by->id, n, len);
}

/*
 * c, a new connection of a client, goes ahead of the drain of the
 * client's previous connections after connect_timeout (conn.c).  Their
 * requests that smbaccel had not handled yet, handled by the drain now,
 * could reach the server after what c writes: a WRITE the client never
 * saw answered landing over newer data the server acknowledged to c.
 * Directly the server would have handled them before the reconnect.
 * Their outcome is unknown to the client (never answered), so they are
 * dropped; what smbaccel acknowledged is still written, and c's
 * requests on the same files wait for it (the coherence rule of
 * coherence.c).  A WRITE being cut through (stream_left) has already
 * ended its server connection (conn.c srv_spend).  Each drain is kicked (conn.c's kick), so that it
 * closes if it was waiting for nothing else; the list is walked again
 * after each kick, which may close connections.
 */
void
px_side_overtake_drains(struct px_conn *c, void (*kick)(struct px_conn *))
{
	struct px_conn *x;

again:
	for (x = px_rt.conns; x; x = x->next) {
		struct px_side *s = &px_link_of(x)->cli;

		if (!drains_for(x, c) || px_buf_len(&s->in) == 0 ||
		    s->stream_left > 0)
			continue;
		drop_unhandled(x, c);
		kick(x);
		goto again;
	}
}

void
px_side_close(struct px_side *s, bool reset)
{
	if (s->fd == -1)
		return;
	ev_io_stop(px_rt.loop, &s->rio);
	ev_io_stop(px_rt.loop, &s->wio);
	if (reset) {
		struct linger lg = { 1, 0 };

		(void)setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(s->fd);
	s->fd = -1;
}
