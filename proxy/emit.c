/*
 * emit.c - how the relay sends what it makes itself (DESIGN.md section 3):
 * messages signed or sealed as their session demands, proxy-originated
 * requests recorded in the ledger, the leftovers of the id pool spent on
 * ECHOs, and synthesized answers held back until the credit bank can pay
 * for them (rule 3).  Also the two questions every absorbing path asks
 * first: are the request's ids fresh, and may the proxy act on it at all.
 *
 * The lowest file of the relay layer but keyed.c: it calls only keyed.c, the
 * ledger and conn.c's services (px_relay_ops), which it holds.
 */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/emit.h"
#include "proxy/keyed.h"

const struct px_conn_ops *px_relay_ops;

int
px_relay_fail(struct px_conn *c, enum px_close_reason r)
{
	if (c->fail == PX_CLOSE_NONE)
		c->fail = r;
	return -1;
}

bool
px_large_mtu(const struct px_conn *c)
{
	return c->led.dialect >= SMB2_DIALECT_0210 &&
	    c->led.dialect != SMB2_DIALECT_WILDCARD &&
	    (c->led.capabilities & SMB2_GLOBAL_CAP_LARGE_MTU);
}

uint16_t
px_emit_charge(const struct px_conn *c, uint16_t field)
{
	return px_large_mtu(c) && field ? field : 1;
}

uint16_t
px_emit_msg_charge(const struct px_conn *c, const uint8_t *msg)
{
	return px_emit_charge(c, px_get_u16(msg + 6));  /* CreditCharge */
}

const char *
px_tree_share(struct px_conn *c, const struct px_open *o)
{
	struct px_tree *t = px_tree_find(&c->led, o->session_id, o->tree_id);

	return t ? t->share : "?";
}

bool
px_same_server(const struct px_conn *a, const struct px_conn *b)
{
	if (a->dst_addr.ss_family != b->dst_addr.ss_family)
		return false;
	return memcmp(&a->dst_addr, &b->dst_addr,
	    a->dst_addr.ss_family == AF_INET ? sizeof(struct sockaddr_in) :
	    sizeof(struct sockaddr_in6)) == 0;
}

struct px_open *
px_server_open_find(struct px_conn *c, bool (*match)(const struct px_conn *x,
    const struct px_open *o, const void *arg), const void *arg,
    struct px_conn **xp)
{
	struct px_conn *x;
	struct px_open *o;

	for (x = px_rt.conns; x; x = x->next) {
		if (x->state == PX_CONN_CLOSED || (x != c && !px_same_server(c, x)))
			continue;
		for (o = x->led.opens; o; o = o->next)
			if (match(x, o, arg)) {
				if (xp != NULL)
					*xp = x;
				return o;
			}
	}
	return NULL;
}

/* ---- proxy-originated requests ---------------------------------------------- */

struct px_pending *
px_emit_pending(struct px_conn *c, uint64_t mid, uint16_t cmd, uint16_t charge)
{
	struct px_pending *p = px_pending_add(&c->led, mid);

	if (p == NULL)
		return NULL;
	p->command = cmd;
	p->charge = charge;
	p->origin = PX_ORIGIN_PROXY;
	c->proxy_inflight++;
	return p;
}

struct px_pending *
px_emit_read(struct px_conn *c, struct px_open *o, uint64_t lo,
    uint16_t charge, uint64_t off, uint32_t len)
{
	uint8_t msg[64 + 49 + 8];
	struct smb2_hdr_out h;
	struct px_pending *p;
	struct px_prot prot;
	size_t n;

	memset(&h, 0, sizeof(h));
	h.command = SMB2_READ;
	h.credit_charge = charge;
	h.credit = co_proxy_ask(&c->led.cr);
	h.message_id = lo;
	h.tree_id = o->tree_id;
	h.session_id = o->session_id;
	h.status = o->csn;      /* ChannelSequence */
	n = px_smb2_read_req_encode(msg, sizeof(msg), &h, &o->fid, off, len, 0);
	prot = px_emit_prot(c, o->session_id, o->tree_id);
	if (n == 0 || px_emit_protected(c, PX_SERVER, &prot, msg, n) == -1 ||
	    (p = px_emit_pending(c, lo, SMB2_READ, charge)) == NULL)
		return NULL;
	/* whose keys its answer must verify with (keyed.c) */
	p->session_id = o->session_id;
	p->tree_id = o->tree_id;
	p->fid = o->fid;
	p->u.io.offset = off;
	p->u.io.length = len;
	p->u.io.open = o;
	p->u.io.open_serial = o->serial;
	return p;
}

/* One ECHO spending ids [lo, lo + n) (a charge above the need is legal,
 * MS-SMB2 3.3.5.2.5); 0 sent, -1 not. */
static int
send_echo(struct px_conn *c, uint64_t lo, uint64_t n)
{
	uint8_t msg[SMB2_HDR_LEN + 4];
	struct smb2_hdr_out h;

	if (!px_relay_ops->connected(c, PX_SERVER))
		return -1;
	memset(&h, 0, sizeof(h));
	h.command = SMB2_ECHO;
	h.credit_charge = (uint16_t)n;
	h.credit = 1;
	h.message_id = lo;
	if (px_smb2_echo_req_encode(msg, sizeof(msg), &h) == 0 ||
	    px_emit_pending(c, lo, SMB2_ECHO, (uint16_t)n) == NULL)
		return -1;
	if (px_relay_ops->send(c, PX_SERVER, msg, sizeof(msg)) == -1) {
		log_warnx("conn=%llu cannot send ECHO", (unsigned long long)c->id);
		return 0;       /* recorded: the id is spent either way */
	}
	px_stats.upstream_echoes++;
	return 0;
}

/* ---- the acknowledgement reserve -------------------------------------------- */

/*
 * What one open's buffered extent costs in ids: it leaves in WRITEs of at
 * most the flush unit (writebehind.c: coalesce_size, 64 KiB without
 * multi-credit, MaxWriteSize), each charged one id per 64 KiB.
 */
static uint64_t
extent_ids(struct px_conn *c, const struct px_open *o)
{
	struct px_tree *t = px_tree_find(&c->led, o->session_id, o->tree_id);
	uint64_t unit = t ? t->policy.coalesce_size : 1024 * 1024, per, full;
	uint64_t len = o->wb.len, rem;

	if (!px_large_mtu(c) && unit > SMB2_UNIT)
		unit = SMB2_UNIT;
	if (c->led.max_write && unit > c->led.max_write)
		unit = c->led.max_write;
	if (unit == 0)
		unit = SMB2_UNIT;
	per = px_large_mtu(c) ? (unit + SMB2_UNIT - 1) / SMB2_UNIT : 1;
	full = len / unit;
	rem = len % unit;
	return full * per + (rem == 0 ? 0 : px_large_mtu(c) ?
	    (rem + SMB2_UNIT - 1) / SMB2_UNIT : 1);
}

uint64_t
px_emit_data_ids(struct px_conn *c)
{
	const struct px_open *o;
	uint64_t n = 0;

	for (o = c->led.opens; o; o = o->next) {
		if (o->wb.len)
			n += extent_ids(c, o);
		/* kept for writes a session's expiry may refuse */
		n += o->wb_keep_ids;
	}
	return n;
}

/* Is a reserve wanted: write caching held for a client (a break of it
 * needs an acknowledgement), or an acknowledgement owed? */
static bool
reserve_wanted(struct px_conn *c)
{
	const struct px_open *o;

	/* also while draining (the client gone, its data still being
	 * written): the server's breaks still want their acknowledgement */
	if (c->no_reserve || (c->state != PX_CONN_RELAY &&
	    c->state != PX_CONN_DRAINING) ||
	    !px_relay_ops->connected(c, PX_SERVER))
		return false;
	if (c->pl_owed != NULL)
		return true;
	for (o = c->led.opens; o; o = o->next)
		if (px_open_proxy_write(o) && !o->closed)
			return true;
	return false;
}

enum co_rsv_act
px_emit_tend_reserve(struct px_conn *c)
{
	struct co_reserve *r = &c->led.rsv;
	uint64_t need, spare, gone = 0;
	enum co_rsv_act a;
	bool wanted;

	if (!r->held && c->led.pool.count == 0)
		return CO_RSV_KEEP;
	need = px_emit_data_ids(c);
	spare = c->led.pool.count > need ? c->led.pool.count - need : 0;
	wanted = reserve_wanted(c);
	a = co_reserve_tend(r, &c->led.pool, wanted, spare,
	    c->led.cr.client_next, c->led.window, &gone);
	if (a == CO_RSV_RELEASE && wanted) {
		px_stats.reserve_aged++;
		log_debug("conn=%llu acknowledgement reserve let go: as old as "
		    "the hoard bound and no newer id donated",
		    (unsigned long long)c->id);
	}
	/* an id let go is spent on its own: in the pool it would sit below
	 * the others and cut the next flush into pieces */
	if ((a == CO_RSV_REFRESH || a == CO_RSV_RELEASE) &&
	    send_echo(c, gone, 1) == -1) {
		/* not sent (no memory, server gone): the pool spends it */
		if (co_pool_add(&c->led.pool, gone, 1) == -1)
			log_warnx("conn=%llu id %llu lost: neither sent nor "
			    "pooled", (unsigned long long)c->id,
			    (unsigned long long)gone);
	}
	px_stats.pool_ids_now = c->led.pool.count;
	return a;
}

void
px_emit_release_reserve(struct px_conn *c)
{
	struct co_reserve *r = &c->led.rsv;

	if (!r->held)
		return;
	r->held = false;
	if (send_echo(c, r->id, 1) == -1 &&
	    co_pool_add(&c->led.pool, r->id, 1) == -1)
		log_warnx("conn=%llu id %llu lost: neither sent nor pooled",
		    (unsigned long long)c->id, (unsigned long long)r->id);
}

bool
px_emit_ack_id(struct px_conn *c, uint64_t *id)
{
	if (c->led.rsv.held) {
		*id = c->led.rsv.id;
		c->led.rsv.held = false;
		return true;
	}
	/* the oldest pooled id, if buffered data can do without it */
	if (c->led.pool.count > px_emit_data_ids(c) &&
	    co_pool_take_run(&c->led.pool, 1, id) == 1) {
		px_stats.pool_ids_now = c->led.pool.count;
		return true;
	}
	return false;
}

/*
 * Spend leftover donated ids on ECHOs; only when no data is buffered, so
 * that buffered data always has ids to travel with.  Kept back, even when
 * forced: as many as writes the server may refuse at a session's expiry
 * would take to be sent again (o->wb_keep_ids, writebehind.c); they go
 * when those writes are answered or given up.
 */
void
px_emit_spend_pool(struct px_conn *c, bool force)
{
	struct px_open *o;
	uint64_t keep = 0;

	px_emit_tend_reserve(c);
	if (c->led.pool.count == 0 || !px_relay_ops->connected(c, PX_SERVER))
		return;
	for (o = c->led.opens; o; o = o->next) {
		const struct px_session *s;

		keep += o->wb_keep_ids;
		if (o->wb.len == 0)
			continue;
		/* held for a session the server expired: its ids are kept,
		 * the rest may go (another session's pooled ids must not
		 * pile up until that client re-authenticates) */
		s = px_session_find(&c->led, o->session_id);
		if (s == NULL || !s->srv_expired)
			return;
		keep += extent_ids(c, o);
	}
	if (c->led.pool.count <= keep)
		return;
	/* a sequential reader's ids fund its next read-ahead, unless the
	 * pool is at its hoard bound, or a request waits for the
	 * connection to be quiet (force) */
	if (!force && !co_pool_over_bound(&c->led.pool, c->led.cr.client_next,
	    c->led.window) && c->state == PX_CONN_RELAY &&
	    !px_rt.stopping && px_relay_ops->connected(c, PX_CLIENT)) {
		/* a proxy request waits for an id (a handle to close after
		 * a failed compound, compound.c): the relay hands it one;
		 * and a connection reading documents keeps them for its
		 * next fetch for a while (doccache.c; DESIGN.md 5a) */
		if (c->ids_wanted || c->dc_keep_until > px_now_ms())
			return;
		for (o = c->led.opens; o; o = o->next)
			if (o->ra.seq && o->ra.chunks && !o->ra.eof_known)
				return;
	}
	/*
	 * Each run goes on one ECHO (a charge above the need is legal,
	 * MS-SMB2 3.3.5.2.5).  Without multi-credit every id needs a request
	 * of its own; those ECHOs travel as unrelated compounds of up to
	 * ECHO_BATCH elements, one frame instead of one each.
	 */
	while (c->led.pool.count > keep) {
		enum { ECHO_BATCH = 64, ECHO_ELEM = 72 };  /* 68 padded to 8 */
		uint8_t msg[ECHO_BATCH * ECHO_ELEM];
		size_t len = 0;
		int k;

		for (k = 0; k < ECHO_BATCH && c->led.pool.count > keep; k++) {
			uint64_t lo, run, left = c->led.pool.count - keep;
			struct smb2_hdr_out h;

			run = co_pool_take_run(&c->led.pool,
			    px_large_mtu(c) ? (left < 0xFFFF ? left : 0xFFFF) : 1,
			    &lo);
			memset(&h, 0, sizeof(h));
			h.command = SMB2_ECHO;
			h.credit_charge = (uint16_t)run;
			h.credit = 1;
			h.message_id = lo;
			memset(msg + len, 0, ECHO_ELEM);
			if (px_smb2_echo_req_encode(msg + len, ECHO_ELEM, &h) == 0 ||
			    px_emit_pending(c, lo, SMB2_ECHO, (uint16_t)run) ==
			    NULL) {
				/* the elements built so far go as they are;
				 * this run is dropped, not put back: nothing
				 * would spend it again (a draining connection
				 * would wait for it until the server closed) */
				log_warnx("conn=%llu cannot build ECHO for ids "
				    "%llu+%llu: dropped", (unsigned long long)c->id,
				    (unsigned long long)lo, (unsigned long long)run);
				break;
			}
			if (len)  /* NextCommand of the previous element */
				px_put_u32(msg + len - ECHO_ELEM + 20, ECHO_ELEM);
			len += ECHO_ELEM;
			px_stats.upstream_echoes++;
			if (px_large_mtu(c))
				break;      /* one run, one ECHO */
		}
		if (len == 0)
			break;
		/* the last element carries no padding */
		if (px_relay_ops->send(c, PX_SERVER, msg, len - (ECHO_ELEM - 68)) == -1) {
			log_warnx("conn=%llu cannot send ECHO",
			    (unsigned long long)c->id);
			break;
		}
	}
	px_stats.pool_ids_now = c->led.pool.count;
}


/* ---- protected sending ------------------------------------------------------ */

/*
 * What smbaccel sends is built, signed and sealed where it is sent from:
 * the output buffer of its end (px_relay_ops->outbuf, the hold queue
 * while a frame is cut through), behind the NBSS header and, sealed,
 * behind the transform header, so that a 1 MiB WRITE is written once
 * (encoded there), signed or encrypted in place, and not copied again.
 */
static size_t
lead(const struct px_prot *prot)
{
	return PX_NBSS_HDR + (prot->encrypt ? PX_TRANSFORM_HDR_LEN : 0);
}

static int
cannot_seal(struct px_conn *c, const struct px_prot *prot)
{
	struct px_session *s = px_session_find(&c->led, prot->sid);

	log_warnx("conn=%llu cannot seal for session 0x%llx%s",
	    (unsigned long long)c->id, (unsigned long long)prot->sid,
	    s && s->keyed ? "" : " (no key)");
	/* with the key, only an allocation can fail */
	return s && s->keyed ? -1 : px_relay_fail(c, PX_CLOSE_CANNOT_SIGN);
}

static int
cannot_sign(struct px_conn *c, const struct px_prot *prot)
{
	log_warnx("conn=%llu cannot sign for session 0x%llx (no key)",
	    (unsigned long long)c->id, (unsigned long long)prot->sid);
	return px_relay_fail(c, PX_CLOSE_CANNOT_SIGN);
}

uint8_t *
px_emit_place(struct px_conn *c, enum px_end to, const struct px_prot *prot,
    size_t len)
{
	struct px_buf *ob = px_relay_ops->outbuf(c, to);

	if (len > PX_NBSS_MAX - PX_TRANSFORM_HDR_LEN ||
	    px_buf_reserve(ob, lead(prot) + len) == -1)
		return NULL;
	return ob->data + ob->tail + lead(prot);
}

int
px_emit_finish(struct px_conn *c, enum px_end to, const struct px_prot *prot,
    uint8_t *msg, size_t len)
{
	struct px_buf *ob = px_relay_ops->outbuf(c, to);
	uint8_t *f = ob->data + ob->tail;
	size_t n = len;

	/* only what px_emit_place gave, with nothing queued since */
	if (msg != f + lead(prot) || ob->cap - ob->tail < lead(prot) + len)
		return -1;
	if (prot->encrypt) {
		if (px_keyed_seal(c, to, prot->sid, msg, len,
		    f + PX_NBSS_HDR) == -1)
			return cannot_seal(c, prot);
		n += PX_TRANSFORM_HDR_LEN;
	} else if (prot->sign && px_keyed_sign(c, prot->sid, msg, len,
	    to == PX_CLIENT) == -1)
		return cannot_sign(c, prot);
	px_frame_put_hdr(f, n);
	ob->tail += PX_NBSS_HDR + n;
	px_relay_ops->out_commit(c, to, PX_NBSS_HDR + n);
	return 0;
}

void
px_emit_kick_each(struct px_conn *except, enum px_stall stall)
{
	struct px_conn *x, **v;
	size_t n = 0, k = 0, i;

	for (x = px_rt.conns; x; x = x->next)
		if (x != except && x->stall == stall)
			n++;
	if (n == 0)
		return;
	if ((v = malloc(n * sizeof(*v))) == NULL) {
		log_warnx("out of memory kicking %zu waiting connections: they "
		    "are looked at again on their next event", n);
		return;
	}
	/* taken first, then kicked: a kick may close any of them (its frame
	 * bad, its server gone), which unlinks it from px_rt.conns and, held
	 * by no one, frees it */
	for (x = px_rt.conns; x && k < n; x = x->next)
		if (x != except && x->stall == stall) {
			px_relay_ops->hold(x);
			v[k++] = x;
		}
	for (i = 0; i < k; i++)
		if (v[i]->state != PX_CONN_CLOSED && v[i]->stall == stall)
			px_relay_ops->kick(v[i]);
	for (i = 0; i < k; i++)
		px_relay_ops->release(v[i]);
	free(v);
}

int
px_emit_protected(struct px_conn *c, enum px_end to,
    const struct px_prot *prot, uint8_t *msg, size_t len)
{
	if (prot->encrypt) {
		/* sealed from msg straight into the output buffer */
		struct px_buf *ob;
		uint8_t *f;

		if (px_emit_place(c, to, prot, len) == NULL)
			return -1;
		ob = px_relay_ops->outbuf(c, to);
		f = ob->data + ob->tail;
		if (px_keyed_seal(c, to, prot->sid, msg, len,
		    f + PX_NBSS_HDR) == -1)
			return cannot_seal(c, prot);
		px_frame_put_hdr(f, PX_TRANSFORM_HDR_LEN + len);
		ob->tail += lead(prot) + len;
		px_relay_ops->out_commit(c, to, lead(prot) + len);
		return 0;
	}
	if (prot->sign && px_keyed_sign(c, prot->sid, msg, len,
	    to == PX_CLIENT) == -1)
		return cannot_sign(c, prot);
	return px_relay_ops->send(c, to, msg, len);
}

struct px_prot
px_emit_prot(struct px_conn *c, uint64_t sid, uint32_t tid)
{
	struct px_session *s = px_session_find(&c->led, sid);
	struct px_tree *t = px_tree_find(&c->led, sid, tid);
	struct px_prot pr = { false, false, sid };

	if (s && s->keyed) {
		/* sealed where the server demands it, and where the client
		 * chose to seal: its data must not cross the WAN in clear */
		if (s->encrypt || s->client_seals || (t && (t->share_flags &
		    SMB2_SHAREFLAG_ENCRYPT_DATA)))
			pr.encrypt = c->led.cipher != 0;
		else if (s->signing_required)
			pr.sign = true;
	}
	return pr;
}

/* ---- synthesized responses ---------------------------------------------------- */

int
px_emit_synth(struct px_conn *c, uint8_t *msg, size_t len, uint16_t requested,
    uint16_t g, const struct px_prot *prot)
{
	px_put_u16(msg + 14, g);          /* CreditResponse (MS-SMB2 2.2.1) */
	co_synth_granted(&c->led.cr, px_emit_msg_charge(c, msg), requested, g);
	if (c->led.cr.client_outstanding)
		c->led.cr.client_outstanding--;
	return px_emit_protected(c, PX_CLIENT, prot, msg, len);
}

int
px_emit_delay(struct px_conn *c, uint8_t *msg, size_t len,
    uint16_t credit_request)
{
	struct px_delayed *d;

	if ((d = calloc(1, sizeof(*d))) == NULL) {
		free(msg);
		return -1;
	}
	d->msg = msg;
	d->len = len;
	d->credit_request = credit_request;
	d->prot = c->cur_prot;
	*c->delayed_tail = d;
	c->delayed_tail = &d->next;
	c->ndelayed++;
	px_stats.delayed_responses++;
	return 0;
}

void
px_emit_send_delayed(struct px_conn *c)
{
	struct px_delayed *d;
	uint16_t grant;

	while ((d = c->delayed) != NULL) {
		if (!co_synth_grant(&c->led.cr, px_emit_msg_charge(c, d->msg),
		    d->credit_request, &grant) &&
		    c->proxy_inflight > 0)
			return; /* more grants are on their way */
		/* with nothing in flight nothing will refill the bank: grant
		 * what there is (waiting would never end) */
		c->delayed = d->next;
		if (c->delayed == NULL)
			c->delayed_tail = &c->delayed;
		c->ndelayed--;
		if (px_emit_synth(c, d->msg, d->len, d->credit_request, grant,
		    &d->prot) == -1)
			log_warnx("conn=%llu cannot send delayed response",
			    (unsigned long long)c->id);
		free(d->msg);
		free(d);
	}
}

void
px_emit_free(struct px_conn *c)
{
	while (c->delayed) {
		struct px_delayed *d = c->delayed;

		c->delayed = d->next;
		free(d->msg);
		free(d);
	}
	c->delayed_tail = &c->delayed;
}

uint8_t *
px_emit_read_rsp(const struct smb2_hdr *rq, uint16_t credit, uint32_t status,
    const uint8_t *data, uint32_t n, size_t *len)
{
	struct smb2_hdr_out h;
	uint8_t *msg = malloc(64 + 16 + (size_t)n + 8);

	if (msg == NULL)
		return NULL;
	px_emit_rsp_hdr(&h, rq, status);
	h.credit = credit;
	if (status != NT_STATUS_SUCCESS) {
		*len = px_smb2_error_rsp_encode(msg, 64 + 16 + 8, &h);
		return msg;
	}
	*len = px_smb2_read_rsp_encode(msg, 64 + 16 + (size_t)n + 8, &h, data,
	    n);
	return msg;
}

void
px_emit_rsp_hdr(struct smb2_hdr_out *h, const struct smb2_hdr *rq,
    uint32_t status)
{
	memset(h, 0, sizeof(*h));
	h->command = rq->command;
	h->credit_charge = rq->credit_charge;
	h->status = status;
	h->flags = SMB2_FLAGS_SERVER_TO_REDIR;
	h->message_id = rq->message_id;
	h->tree_id = rq->tree_id;
	h->session_id = rq->session_id;
}

/* ---- what the proxy may answer itself ------------------------------------------ */

/*
 * Would the server accept the ids of request h carrying `payload` bytes?
 * They must lie at or past every id the client used before (a reused or
 * old id makes smbd drop the connection), inside what the client was
 * granted, and the charge must cover the payload where multi-credit
 * applies (MS-SMB2 3.3.5.2.5; smbd answers INVALID_PARAMETER otherwise).
 */
bool
px_ids_fresh(struct px_conn *c, const struct smb2_hdr *h, uint32_t payload)
{
	uint64_t charge = 1;

	if (px_large_mtu(c)) {
		uint64_t need = payload ? (payload - 1) / SMB2_UNIT + 1 : 1;

		if (h->credit_charge < need)
			return false;
		charge = h->credit_charge;
	}
	return h->message_id >= c->led.cr.client_next &&
	    h->message_id + charge > h->message_id &&
	    h->message_id + charge <= c->led.cr.C &&
	    px_pending_find(&c->led, h->message_id) == NULL;
}
