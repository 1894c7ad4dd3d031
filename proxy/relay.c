/*
 * relay.c - what each SMB2 message means to the proxy, and what it does
 * with it: forward, absorb (write-behind), or wait for a flush first.
 *
 * The relay model (DESIGN.md section 3): client message ids are never
 * renumbered.  Absorbed requests are answered here and donate their ids to
 * the connection's pool; the proxy's own upstream requests (coalesced
 * writes, ECHOs) spend only those ids.  Grants of forwarded responses pass
 * through unchanged; grants of proxy requests go to the bank (S - C), from
 * which synthesized responses grant.
 *
 * A frame that cannot be handled yet (a flush must complete first) is left
 * at the head of the client's input buffer: px_relay_client_frame returns
 * PX_RC_STALL, reading from the client stops, and the frame is handled
 * again from scratch once px_relay_stall_cleared() says so.  Nothing is
 * recorded in the ledger until a frame is actually forwarded or absorbed,
 * so handling a frame twice is harmless.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>

#include "proxy/conn.h"

#define SMB2_UNIT (64 * 1024)   /* one credit's worth of payload */

static void try_send_delayed(struct px_conn *c);
static int send_protected(struct px_conn *c, struct px_side *to,
    const struct px_prot *prot, uint8_t *msg, size_t len);
static struct px_prot proxy_prot(struct px_conn *c, uint64_t sid,
    uint32_t tid);
static bool path_locked(struct px_conn *c, const struct px_open *n);
static void spend_pool(struct px_conn *c);
static void spend_pool_ex(struct px_conn *c, bool force);

/* ---- helpers ---------------------------------------------------------------- */

static bool
large_mtu(const struct px_conn *c)
{
	return c->led.dialect >= SMB2_DIALECT_0210 &&
	    c->led.dialect != SMB2_DIALECT_WILDCARD &&
	    (c->led.capabilities & SMB2_GLOBAL_CAP_LARGE_MTU);
}

/* Largest payload of one proxy WRITE. */
static size_t
max_write_unit(const struct px_conn *c, const struct px_tree *t)
{
	size_t lim = t ? t->policy.coalesce_size : 1024 * 1024;

	if (!large_mtu(c))
		lim = lim < SMB2_UNIT ? lim : SMB2_UNIT;
	if (c->led.max_write && lim > c->led.max_write)
		lim = c->led.max_write;
	return lim;
}

static const struct pol_global *
glob(void)
{
	return pol_global(px_rt.cfg);
}

static bool
open_busy(const struct px_open *o)
{
	return o->wb.len > 0 || o->wb_inflight > 0;
}

bool
px_relay_quiet(const struct px_conn *c)
{
	const struct px_open *o;

	if (c->proxy_inflight || c->delayed || c->led.pool.count)
		return false;
	for (o = c->led.opens; o; o = o->next)
		if (open_busy(o))
			return false;
	return true;
}

static void
wb_account(struct px_conn *c, int64_t delta)
{
	c->wb_bytes = (uint64_t)((int64_t)c->wb_bytes + delta);
	px_stats.wb_bytes_now = (uint64_t)((int64_t)px_stats.wb_bytes_now + delta);
	if (px_stats.wb_bytes_now > px_stats.wb_bytes_peak)
		px_stats.wb_bytes_peak = px_stats.wb_bytes_now;
}

static const char *
tree_share(struct px_conn *c, const struct px_open *o)
{
	struct px_tree *t = px_tree_find(&c->led, o->session_id, o->tree_id);

	return t ? t->share : "?";
}

/* ---- proxy-originated requests -------------------------------------------------- */

static struct px_pending *
proxy_pending(struct px_conn *c, uint64_t mid, uint16_t cmd, uint16_t charge)
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

/*
 * Send the buffered extent of o upstream as one or more WRITEs, each
 * spending a contiguous run of donated ids as its CreditCharge.
 */
static void
flush_open(struct px_conn *c, struct px_open *o, enum co_flush_cause cause)
{
	struct px_tree *t = px_tree_find(&c->led, o->session_id, o->tree_id);
	size_t unit = max_write_unit(c, t), pos = 0, len;
	uint64_t off;
	uint8_t *data;
	struct px_prot prot;

	if (o->wb.len == 0)
		return;
	prot = proxy_prot(c, o->session_id, o->tree_id);
	px_stats.flushes[cause]++;
	data = co_extent_take(&o->wb, &off, &len);
	while (pos < len) {
		uint64_t lo, run;
		size_t n, need, cap;
		uint8_t *dst;
		struct smb2_hdr_out h;
		struct px_pending *p;
		struct px_buf *ob;

		/* take only the ids this write needs: another open's buffer
		 * may be waiting for the rest of the run */
		run = co_pool_first_run(&c->led.pool);
		if (run > 0) {
			uint64_t want = large_mtu(c) ? run : 1;
			size_t n0 = len - pos;

			if (large_mtu(c)) {
				if (n0 > (size_t)run * SMB2_UNIT)
					n0 = (size_t)run * SMB2_UNIT;
				if (n0 > unit)
					n0 = unit;
				want = (n0 + SMB2_UNIT - 1) / SMB2_UNIT;
				if (want == 0)
					want = 1;
			}
			run = co_pool_take_run(&c->led.pool, want, &lo);
		}
		if (run == 0) {
			/* cannot happen while ids are only spent on data or,
			 * with no data left, on ECHOs; keep the rest buffered */
			/* never expected (ids are spent on ECHOs only when no
			 * data is buffered); rather than wait forever, report
			 * the loss on the open and in the log */
			log_warnx("conn=%llu share=%s file=%s offset=%llu "
			    "length=%zu flush starved of message ids: "
			    "acknowledged data lost, error deferred to the next "
			    "WRITE, FLUSH or CLOSE", (unsigned long long)c->id,
			    tree_share(c, o), o->name,
			    (unsigned long long)(off + pos), len - pos);
			px_stats.deferred_errors++;
			if (!o->failed_status)
				o->failed_status = NT_STATUS_INSUFFICIENT_RESOURCES;
			wb_account(c, -(int64_t)(len - pos));
			break;
		}
		cap = large_mtu(c) ? (size_t)run * SMB2_UNIT : SMB2_UNIT;
		n = len - pos;
		if (n > cap)
			n = cap;
		if (n > unit)
			n = unit;
		need = 64 + 48 + n;
		memset(&h, 0, sizeof(h));
		h.command = SMB2_WRITE;
		h.credit_charge = large_mtu(c) ? (uint16_t)run : 1;
		h.credit = 1;
		h.message_id = lo;
		h.tree_id = o->tree_id;
		h.session_id = o->session_id;
		if (prot.sign || prot.encrypt) {
			/* a keyed session: sign or seal a separate copy */
			uint8_t *tmp = malloc(need);

			if (tmp == NULL || px_smb2_write_req_encode(tmp, need, &h,
			    &o->fid, off + pos, data + pos, (uint32_t)n, 0) !=
			    need || send_protected(c, &c->srv, &prot, tmp,
			    need) == -1) {
				free(tmp);
				goto nomem;
			}
			free(tmp);
		} else {
			ob = px_conn_outbuf(&c->srv);
			if (px_buf_reserve(ob, need + PX_NBSS_HDR) == -1)
				goto nomem;
			dst = ob->data + ob->tail;
			if (px_smb2_write_req_encode(dst + PX_NBSS_HDR,
			    ob->cap - ob->tail - PX_NBSS_HDR, &h, &o->fid,
			    off + pos, data + pos, (uint32_t)n, 0) != need)
				goto nomem;
			px_frame_put_hdr(dst, need);
			ob->tail += need + PX_NBSS_HDR;
			px_conn_out_commit(&c->srv, need + PX_NBSS_HDR);
		}
		if ((p = proxy_pending(c, lo, SMB2_WRITE, h.credit_charge)) == NULL)
			goto nomem;
		p->fid = o->fid;
		p->u.io.offset = off + pos;
		p->u.io.length = (uint32_t)n;
		p->u.io.open = o;
		if (o->wb_inflight++ == 0) {
			o->wb_inflight_lo = off + pos;
			o->wb_inflight_hi = off + pos + n;
		} else {
			if (off + pos < o->wb_inflight_lo)
				o->wb_inflight_lo = off + pos;
			if (off + pos + n > o->wb_inflight_hi)
				o->wb_inflight_hi = off + pos + n;
		}
		o->wb_inflight_bytes += n;
		/* ids of this run beyond the first stay with this request; at
		 * 2.0.2 the run is one id */
		c->up_writes++;
		c->up_write_bytes += n;
		px_stats.upstream_writes++;
		px_stats.upstream_write_bytes += n;
		pos += n;
	}
	free(data);
	px_stats.pool_ids_now = c->led.pool.count;
	return;
nomem:
	log_warnx("conn=%llu out of memory flushing share=%s file=%s "
	    "offset=%llu length=%zu: data lost", (unsigned long long)c->id,
	    tree_share(c, o), o->name, (unsigned long long)(off + pos),
	    len - pos);
	o->failed_status = NT_STATUS_INSUFFICIENT_RESOURCES;
	wb_account(c, -(int64_t)(len - pos));
	free(data);
}

/* Spend leftover donated ids on ECHOs; only when no data is buffered, so
 * that buffered data always has ids to travel with. */
static void
spend_pool_ex(struct px_conn *c, bool force)
{
	struct px_open *o;

	if (c->led.pool.count == 0 || c->srv.fd == -1)
		return;
	for (o = c->led.opens; o; o = o->next)
		if (o->wb.len)
			return;
	/* a sequential reader's ids fund its next read-ahead, unless the
	 * pool is at its hoard bound, or a request waits for the
	 * connection to be quiet (force) */
	if (!force && !co_pool_over_bound(&c->led.pool, c->led.cr.client_next,
	    c->led.window) && c->state == PX_CONN_RELAY &&
	    !px_rt.stopping && c->cli.fd != -1 && !c->cli.rd_eof)
		for (o = c->led.opens; o; o = o->next)
			if (o->ra.seq && o->ra.chunks && !o->ra.eof_known)
				return;
	/*
	 * Each run goes on one ECHO (a charge above the need is legal,
	 * MS-SMB2 3.3.5.2.5).  Without multi-credit every id needs a request
	 * of its own; those ECHOs travel as unrelated compounds of up to
	 * ECHO_BATCH elements, one frame instead of one each.
	 */
	while (c->led.pool.count) {
		enum { ECHO_BATCH = 64, ECHO_ELEM = 72 };  /* 68 padded to 8 */
		uint8_t msg[ECHO_BATCH * ECHO_ELEM];
		size_t len = 0;
		int k;

		for (k = 0; k < ECHO_BATCH && c->led.pool.count; k++) {
			uint64_t lo, run;
			struct smb2_hdr_out h;

			run = co_pool_take_run(&c->led.pool,
			    large_mtu(c) ? 0xFFFF : 1, &lo);
			memset(&h, 0, sizeof(h));
			h.command = SMB2_ECHO;
			h.credit_charge = (uint16_t)run;
			h.credit = 1;
			h.message_id = lo;
			if (len)  /* NextCommand of the previous element */
				px_put_u32(msg + len - ECHO_ELEM + 20, ECHO_ELEM);
			memset(msg + len, 0, ECHO_ELEM);
			if (px_smb2_echo_req_encode(msg + len, ECHO_ELEM, &h) == 0 ||
			    proxy_pending(c, lo, SMB2_ECHO, (uint16_t)run) ==
			    NULL) {
				log_warnx("conn=%llu cannot build ECHO for ids "
				    "%llu+%llu", (unsigned long long)c->id,
				    (unsigned long long)lo, (unsigned long long)run);
				break;
			}
			len += ECHO_ELEM;
			px_stats.upstream_echoes++;
			if (large_mtu(c))
				break;      /* one run, one ECHO */
		}
		if (len == 0)
			break;
		/* the last element carries no padding */
		if (px_conn_send(&c->srv, msg, len - (ECHO_ELEM - 68)) == -1) {
			log_warnx("conn=%llu cannot send ECHO",
			    (unsigned long long)c->id);
			break;
		}
	}
	px_stats.pool_ids_now = c->led.pool.count;
}

static void
spend_pool(struct px_conn *c)
{
	spend_pool_ex(c, false);
}

void
px_relay_flush_all(struct px_conn *c, enum co_flush_cause cause)
{
	struct px_open *o;

	for (o = c->led.opens; o; o = o->next)
		flush_open(c, o, cause);
	/* whoever flushes everything waits for quiet: no ids kept back */
	spend_pool_ex(c, true);
}

/* Flush every open naming the same file as o (o included). */
static void
flush_same_file(struct px_conn *c, struct px_open *o, enum co_flush_cause cause)
{
	struct px_open *x;

	for (x = c->led.opens; x; x = x->next)
		if (x == o || (x->tree_id == o->tree_id && x->name && o->name &&
		    strcasecmp(x->name, o->name) == 0))
			flush_open(c, x, cause);
	spend_pool(c);
}

static bool
same_file_idle(struct px_conn *c, const struct px_open *o)
{
	const struct px_open *x;

	for (x = c->led.opens; x; x = x->next)
		if ((x == o || (x->tree_id == o->tree_id && x->name && o->name &&
		    strcasecmp(x->name, o->name) == 0)) && open_busy(x))
			return false;
	return true;
}

/* ---- cross-connection coherence (DESIGN.md section 4) ------------------------- */

static bool
same_server(const struct px_conn *a, const struct px_conn *b)
{
	if (a->dst_addr.ss_family != b->dst_addr.ss_family)
		return false;
	return memcmp(&a->dst_addr, &b->dst_addr,
	    a->dst_addr.ss_family == AF_INET ? sizeof(struct sockaddr_in) :
	    sizeof(struct sockaddr_in6)) == 0;
}

/* Does name lie in directory dir (or equal it when exact)? */
static bool
path_match(const char *name, const char *dir, bool in_dir)
{
	size_t n = strlen(dir);

	if (!in_dir)
		return strcasecmp(name, dir) == 0;
	if (n == 0)
		return strchr(name, '\\') == NULL;
	return strncasecmp(name, dir, n) == 0 && name[n] == '\\' &&
	    strchr(name + n + 1, '\\') == NULL;
}

/*
 * Flush opens on other connections to the same server and share whose
 * file is `name` (or lies in directory `name` when in_dir).  Returns true
 * when some were busy (the caller waits).
 */
static bool
peers_flush(struct px_conn *c, const char *share, const char *name,
    bool in_dir)
{
	struct px_conn *x;
	bool busy = false;

	for (x = px_conn_first(); x; x = x->next) {
		struct px_open *o;
		bool hit = false;

		if (x == c || x->state == PX_CONN_CLOSED || !same_server(c, x))
			continue;
		for (o = x->led.opens; o; o = o->next) {
			if (!open_busy(o) || o->name == NULL ||
			    strcasecmp(tree_share(x, o), share) != 0 ||
			    !path_match(o->name, name, in_dir))
				continue;
			flush_open(x, o, CO_FLUSH_PEER);
			hit = true;
		}
		if (hit) {
			spend_pool(x);
			busy = true;
		}
	}
	return busy;
}

static bool
peers_idle(struct px_conn *c, const char *share, const char *name, bool in_dir)
{
	struct px_conn *x;

	for (x = px_conn_first(); x; x = x->next) {
		struct px_open *o;

		if (x == c || x->state == PX_CONN_CLOSED || !same_server(c, x))
			continue;
		for (o = x->led.opens; o; o = o->next)
			if (open_busy(o) && o->name &&
			    strcasecmp(tree_share(x, o), share) == 0 &&
			    path_match(o->name, name, in_dir))
				return false;
	}
	return true;
}

/* Wake connections whose stalled frame waits on other connections. */
static void
kick_peer_waiters(struct px_conn *c)
{
	struct px_conn *x, *next;

	for (x = px_conn_first(); x; x = next) {
		next = x->next;
		if (x != c && x->stall == PX_STALL_PEERS)
			px_conn_kick(x);
	}
}

/* ---- synthesized responses ------------------------------------------------------ */

/*
 * Send msg (a complete SMB2 message) to side `to` protected as prot says:
 * signed with the session's key, or encrypted under it (DESIGN.md
 * section 7), or as is.
 */
static int
send_protected(struct px_conn *c, struct px_side *to,
    const struct px_prot *prot, uint8_t *msg, size_t len)
{
	if (prot->encrypt)
		return px_keyed_send_encrypted(c, to, prot->sid, msg, len);
	if (prot->sign && px_keyed_sign(c, prot->sid, msg, len,
	    to == &c->cli) == -1) {
		log_warnx("conn=%llu cannot sign for session 0x%llx",
		    (unsigned long long)c->id, (unsigned long long)prot->sid);
		return -1;
	}
	return px_conn_send(to, msg, len);
}

/* How a proxy request of session sid must travel to the server. */
static struct px_prot
proxy_prot(struct px_conn *c, uint64_t sid, uint32_t tid)
{
	struct px_session *s = px_session_find(&c->led, sid);
	struct px_tree *t = px_tree_find(&c->led, sid, tid);
	struct px_prot pr = { false, false, sid };

	if (s && s->keyed) {
		if (s->encrypt || (t && (t->share_flags &
		    SMB2_SHAREFLAG_ENCRYPT_DATA)))
			pr.encrypt = c->led.cipher != 0;
		else if (s->signing_required)
			pr.sign = true;
	}
	return pr;
}

/* Send a synthesized response with grant g; it answers one absorbed
 * request of the client. */
static int
send_synth(struct px_conn *c, uint8_t *msg, size_t len, uint16_t g,
    const struct px_prot *prot)
{
	px_put_u16(msg + 14, g);          /* CreditResponse (MS-SMB2 2.2.1) */
	c->led.cr.C += g;
	if (c->led.cr.client_outstanding)
		c->led.cr.client_outstanding--;
	return send_protected(c, &c->cli, prot, msg, len);
}

/*
 * Answer an absorbed request with msg (a complete response; its credit
 * field is filled here), or queue it when granting from the bank would
 * leave the client with no credits and nothing in flight (DESIGN.md
 * section 3 rule 3).  Takes ownership of msg.
 */
static int
answer_msg(struct px_conn *c, uint16_t credit_request, uint8_t *msg,
    size_t len)
{
	struct px_delayed *d;
	uint16_t grant;
	int rc;

	if (c->delayed == NULL &&
	    co_synth_grant(&c->led.cr, credit_request, &grant)) {
		rc = send_synth(c, msg, len, grant, &c->cur_prot);
		free(msg);
		return rc;
	}
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
	/* the bank refills only from responses to proxy requests */
	px_relay_flush_all(c, CO_FLUSH_CREDITS);
	return 0;
}

static void
rsp_hdr(struct smb2_hdr_out *h, const struct smb2_hdr *rq, uint32_t status)
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

/* WRITE success (count) or an error response for an absorbed request. */
static int
answer_absorbed(struct px_conn *c, const struct smb2_hdr *rq, uint32_t status,
    uint32_t count)
{
	struct smb2_hdr_out h;
	uint8_t *msg = malloc(64 + 17 + 8);
	size_t n;

	if (msg == NULL)
		return -1;
	rsp_hdr(&h, rq, status);
	if (status != NT_STATUS_SUCCESS)
		n = px_smb2_error_rsp_encode(msg, 64 + 17 + 8, &h);
	else
		n = px_smb2_write_rsp_encode(msg, 64 + 17 + 8, &h, count);
	if (n == 0) {
		free(msg);
		return -1;
	}
	return answer_msg(c, rq->credit, msg, n);
}

static void
try_send_delayed(struct px_conn *c)
{
	struct px_delayed *d;
	uint16_t grant;

	while ((d = c->delayed) != NULL) {
		if (!co_synth_grant(&c->led.cr, d->credit_request, &grant) &&
		    c->proxy_inflight > 0)
			return; /* more grants are on their way */
		/* with nothing in flight nothing will refill the bank: grant
		 * what there is (waiting would never end) */
		c->delayed = d->next;
		if (c->delayed == NULL)
			c->delayed_tail = &c->delayed;
		c->ndelayed--;
		if (send_synth(c, d->msg, d->len, grant, &d->prot) == -1)
			log_warnx("conn=%llu cannot send delayed response",
			    (unsigned long long)c->id);
		free(d->msg);
		free(d);
	}
}

/*
 * Would the server accept the ids of request h carrying `payload` bytes?
 * They must lie at or past every id the client used before (a reused or
 * old id makes smbd drop the connection), inside what the client was
 * granted, and the charge must cover the payload where multi-credit
 * applies (MS-SMB2 3.3.5.2.5; smbd answers INVALID_PARAMETER otherwise).
 */
static bool
ids_fresh(struct px_conn *c, const struct smb2_hdr *h, uint32_t payload)
{
	uint64_t charge = 1;

	if (large_mtu(c)) {
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

/*
 * May the proxy act on (absorb, answer, rewrite) this request of session s?
 * Plain sessions: only unsigned requests.  Signed or sealed ones: only with
 * the session's key, a good signature, and the protection the server
 * would demand.  Sets c->cur_prot to how the answer must travel.
 */
static bool
may_act(struct px_conn *c, struct px_session *s, const struct px_tree *t,
    const struct smb2_hdr *h, const struct smb2_elem *e)
{
	bool signed_rq = (h->flags & SMB2_FLAGS_SIGNED) != 0;
	bool enc_needed = s->encrypt ||
	    (t->share_flags & SMB2_SHAREFLAG_ENCRYPT_DATA);

	c->cur_prot.sid = h->session_id;
	c->cur_prot.sign = false;
	c->cur_prot.encrypt = false;
	if (c->cur_encrypted) {
		/* sealed: answered sealed under the same session's key */
		if (!s->keyed || c->cur_enc_sid != s->id)
			return false;
		c->cur_prot.encrypt = true;
		return true;
	}
	if (enc_needed)
		return false;   /* the server refuses it unsealed */
	if (!signed_rq && !s->signing_required)
		return true;
	if (!signed_rq || !s->keyed)
		return false;   /* unsigned where required, or no key */
	if (!px_keyed_verify(c, s, e->hdr, e->len, h->command))
		return false;
	c->cur_prot.sign = true;
	return true;
}

/* ---- write absorption --------------------------------------------------------- */

static size_t
coalesce_limit(const struct px_conn *c, const struct px_tree *t)
{
	size_t lim = (size_t)t->policy.coalesce_size;

	if (!large_mtu(c) && lim > SMB2_UNIT)
		lim = SMB2_UNIT;
	if (c->led.max_write && lim > c->led.max_write)
		lim = c->led.max_write;
	return lim;
}

enum absorb_rc { AB_FORWARD = 0, AB_DONE, AB_STALL, AB_FAIL };

/*
 * Try to absorb a standalone WRITE.  AB_FORWARD: forward it; AB_DONE:
 * absorbed and answered (or queued); AB_STALL: wait; AB_FAIL: out of memory.
 */
static enum absorb_rc
try_absorb_write(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct smb2_write_req w;
	struct px_session *s;
	struct px_tree *t;
	struct px_open *o;
	struct co_open_facts of;
	struct co_write_facts wf;
	enum co_absorb ab;
	uint64_t charge;
	size_t lim;

	if (px_smb2_write_req_decode(e, &w) == -1)
		return AB_FORWARD;
	if ((o = px_open_find(&c->led, &w.file_id)) == NULL ||
	    o->session_id != h->session_id || o->tree_id != h->tree_id ||
	    o->closed)
		return AB_FORWARD;
	s = px_session_find(&c->led, h->session_id);
	t = px_tree_find(&c->led, h->session_id, h->tree_id);
	if (s == NULL || t == NULL || !s->established)
		return AB_FORWARD;
	/* a deferred error is reported on the next WRITE (DESIGN.md 4) */
	if (o->failed_status && !open_busy(o))
		return AB_FORWARD;

	memset(&of, 0, sizeof(of));
	of.write_access = px_open_write_access(o);
	of.write_through = (o->create_options & FILE_WRITE_THROUGH) != 0;
	/* a directory handle: the server refuses writes on it */
	if (o->is_dir)
		return AB_FORWARD;
	of.write_caching = px_open_write_caching(o);
	if (!o->locked && !o->lock_checked) {
		/* opened after another handle locked the file */
		o->locked = path_locked(c, o);
		o->lock_checked = true;
	}
	of.locked = o->locked;
	of.breaking = o->breaking;
	/* a deferred error: stop absorbing; once the open is idle the next
	 * WRITE is answered with it (deferred_error) */
	of.failed = o->failed_status != 0;
	memset(&wf, 0, sizeof(wf));
	wf.offset = w.offset;
	wf.length = w.length;
	wf.flags = w.flags;
	wf.channel = w.channel;
	wf.standalone = true;
	wf.signed_or_sealed = false;
	lim = coalesce_limit(c, t);
	ab = co_write_decide((enum co_gate)t->policy.write_behind, &of, &wf, lim);
	if (ab != CO_ABSORB || !may_act(c, s, t, h, e))
		return AB_FORWARD;
	/* the ids must be ones the client was granted and has not used,
	 * and the charge what the server demands (MS-SMB2 3.3.5.2.5) */
	if (!ids_fresh(c, h, w.length))
		return AB_FORWARD;
	charge = large_mtu(c) ? h->credit_charge : 1;

	/* memory: global budget and per-open cap; wait for flushes */
	if (px_stats.wb_bytes_now + w.length > glob()->write_behind_memory ||
	    o->wb.len + o->wb_inflight_bytes + w.length >
	    t->policy.write_behind_per_open) {
		if (!open_busy(o) && c->wb_bytes == 0)
			return AB_FORWARD; /* others hold the memory: no wait */
		px_relay_flush_all(c, CO_FLUSH_MEMORY);
		c->stall = PX_STALL_MEMORY;
		c->stall_fid = o->fid;
		c->stall_mem = o->wb_inflight_bytes + o->wb.len;
		return AB_STALL;
	}
	/* not contiguous: send what is buffered first */
	if (!co_extent_fits(&o->wb, w.offset, w.length, lim))
		flush_open(c, o, o->wb.len && w.offset == o->wb.off + o->wb.len ?
		    CO_FLUSH_FULL : CO_FLUSH_NONCONTIG);
	/* never let new data race an older write in flight that it
	 * overlaps (smbd may complete writes out of order): wait until
	 * they are acknowledged, whether or not the buffer is empty */
	if (o->wb_inflight > 0 && !(w.offset >= o->wb_inflight_hi ||
	    w.offset + w.length <= o->wb_inflight_lo)) {
		flush_open(c, o, CO_FLUSH_NONCONTIG);
		c->stall = PX_STALL_OPEN_IDLE;
		c->stall_fid = o->fid;
		spend_pool(c);
		return AB_STALL;
	}
	if (co_pool_add(&c->led.pool, h->message_id, charge) == -1) {
		px_relay_flush_all(c, CO_FLUSH_POOL);
		return AB_FORWARD;
	}
	if (co_extent_append(&o->wb, w.offset, w.data, w.length,
	    px_now_ms()) == -1)
		return AB_FAIL;
	if (o->wb.len == w.length)
		px_conn_arm_timer(c);
	wb_account(c, (int64_t)w.length);
	if (h->message_id + charge > c->led.cr.client_next)
		c->led.cr.client_next = h->message_id + charge;
	c->led.cr.client_outstanding++;
	c->absorbed++;
	px_stats.writes_absorbed++;
	px_stats.bytes_absorbed += w.length;
	px_stats.pool_ids_now = c->led.pool.count;
	if (answer_absorbed(c, h, NT_STATUS_SUCCESS, w.length) == -1)
		return AB_FAIL;
	if (o->wb.len >= lim)
		flush_open(c, o, CO_FLUSH_FULL);
	if (co_pool_over_bound(&c->led.pool, c->led.cr.client_next,
	    c->led.window))
		px_relay_flush_all(c, CO_FLUSH_POOL);
	return AB_DONE;
}

/* ---- read-ahead (DESIGN.md section 5) ---------------------------------------- */

#define RA_CHUNK_MAX (1024 * 1024)   /* largest read-ahead READ */
#define RA_WIDEN     (64 * 1024)     /* a first sequential read grows to */

static const char *const ra_cause_names[PX_RA_NCAUSES] = {
	"write", "setinfo", "lock", "break", "close", "peer", "random", "error",
};

const char *
px_ra_cause_name(enum px_ra_cause c)
{
	return (unsigned int)c < PX_RA_NCAUSES ? ra_cause_names[c] : "?";
}

/* Drop an open's read cache (data and in-flight fetches). */
static void
ra_drop(struct px_open *o, enum px_ra_cause why)
{
	if (o->ra.chunks == NULL && !o->ra.eof_known && !o->ra.seq)
		return;
	if (o->ra.chunks || o->ra.eof_known)
		px_stats.ra_invalidations[why]++;
	px_stats.ra_bytes_now -= o->ra.bytes;
	co_ra_invalidate(&o->ra);
}

/* A change to file `name` of share `share`: every open of it through this
 * smbaccel, on this connection or another, drops its read cache. */
static void
ra_invalidate_path(struct px_conn *c, const char *share, const char *name,
    enum px_ra_cause why)
{
	struct px_conn *x, *next;

	for (x = px_conn_first(); x; x = next) {
		struct px_open *o;
		bool hit = false;

		next = x->next;
		if (x->state == PX_CONN_CLOSED || (x != c && !same_server(c, x)))
			continue;
		for (o = x->led.opens; o; o = o->next)
			if (o->name && strcasecmp(o->name, name) == 0 &&
			    strcasecmp(tree_share(x, o), share) == 0 &&
			    (o->ra.chunks || o->ra.eof_known)) {
				ra_drop(o, x == c ? why : PX_RA_PEER);
				hit = true;
			}
		/* a read of x waiting for a fetch now goes to the server */
		if (hit && x != c && x->stall == PX_STALL_READ)
			px_conn_kick(x);
	}
}

/*
 * A byte-range lock on a file stops write absorption on every open of it
 * through this smbaccel: a write into a range locked by another handle
 * must get the server's FILE_LOCK_CONFLICT, not an early success.
 */
static void
lock_path(struct px_conn *c, const char *share, const char *name)
{
	struct px_conn *x;
	struct px_open *o;

	for (x = px_conn_first(); x; x = x->next) {
		if (x->state == PX_CONN_CLOSED || (x != c && !same_server(c, x)))
			continue;
		for (o = x->led.opens; o; o = o->next)
			if (o->name && strcasecmp(o->name, name) == 0 &&
			    strcasecmp(tree_share(x, o), share) == 0)
				o->locked = true;
	}
}

/* Does another open of this file (any connection) hold locks? */
static bool
path_locked(struct px_conn *c, const struct px_open *n)
{
	struct px_conn *x;
	struct px_open *o;

	for (x = px_conn_first(); x; x = x->next) {
		if (x->state == PX_CONN_CLOSED || (x != c && !same_server(c, x)))
			continue;
		for (o = x->led.opens; o; o = o->next)
			if (o != n && o->locked && o->name && n->name &&
			    strcasecmp(o->name, n->name) == 0 &&
			    strcasecmp(tree_share(x, o), tree_share(c, n)) == 0)
				return true;
	}
	return false;
}

/* Invalidations caused by a request about to reach the server or be
 * absorbed. */
static void
ra_on_request(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct smb2_fileid fid;
	struct px_open *o;

	switch (h->command) {
	case SMB2_WRITE:
	case SMB2_SET_INFO:
		if (px_smb2_req_file_id(e, h->command, &fid) == 0 &&
		    (o = px_open_find(&c->led, &fid)) != NULL) {
			struct smb2_write_req w;

			if (h->command == SMB2_WRITE &&
			    px_smb2_write_req_decode(e, &w) == 0 &&
			    w.offset != SMB2_WRITE_APPEND_OFFSET &&
			    w.offset + w.length > o->size_hint)
				o->size_hint = w.offset + w.length;
			if (h->command == SMB2_SET_INFO)
				o->size_hint = UINT64_MAX; /* unknown now */
			ra_drop(o, h->command == SMB2_WRITE ? PX_RA_WRITE :
			    PX_RA_SETINFO);
			if (o->name)
				ra_invalidate_path(c, tree_share(c, o), o->name,
				    h->command == SMB2_WRITE ? PX_RA_WRITE :
				    PX_RA_SETINFO);
		}
		break;
	case SMB2_LOCK:
	case SMB2_CLOSE:
		if (px_smb2_req_file_id(e, h->command, &fid) == 0 &&
		    (o = px_open_find(&c->led, &fid)) != NULL) {
			ra_drop(o, h->command == SMB2_LOCK ? PX_RA_LOCK :
			    PX_RA_CLOSE);
			if (h->command == SMB2_LOCK && o->name)
				lock_path(c, tree_share(c, o), o->name);
		}
		break;
	case SMB2_CREATE: {
		struct smb2_create_req *cr = malloc(sizeof(*cr));
		struct px_tree *t = px_tree_find(&c->led, h->session_id,
		    h->tree_id);

		if (cr && t && px_smb2_create_req_decode(e, cr) == 0 &&
		    (cr->create_disposition == FILE_SUPERSEDE ||
		    cr->create_disposition == FILE_OVERWRITE ||
		    cr->create_disposition == FILE_OVERWRITE_IF ||
		    (cr->create_options & FILE_DELETE_ON_CLOSE)))
			ra_invalidate_path(c, t->share, cr->name, PX_RA_SETINFO);
		free(cr);
		break;
	}
	default:
		break;
	}
}

static bool
ra_gate(const struct px_tree *t, const struct px_open *o)
{
	switch (t->policy.read_ahead) {
	case POL_GATE_ALWAYS:
		return true;
	case POL_GATE_LEASED:
		return px_open_read_caching(o);
	default:
		return false;
	}
}

/* Fetch ahead of a sequential reader with donated ids (pipelined). */
static void
ra_plan(struct px_conn *c, struct px_open *o)
{
	struct px_tree *t = px_tree_find(&c->led, o->session_id, o->tree_id);
	const struct px_open *x;

	if (t == NULL || !ra_gate(t, o) || !o->ra.seq || o->breaking ||
	    c->srv.fd == -1 || c->state != PX_CONN_RELAY)
		return;
	/* buffered write-behind data has first claim on the ids */
	for (x = c->led.opens; x; x = x->next)
		if (x->wb.len)
			return;
	/* a fetch must not overtake a write of the same file still in
	 * flight: smbd may complete them in any order, and the cache would
	 * keep what the file held before the write */
	if (!same_file_idle(c, o))
		return;
	for (;;) {
		uint64_t run = co_pool_first_run(&c->led.pool), lo, off;
		uint64_t budget = pol_global(px_rt.cfg)->read_ahead_memory;
		uint64_t unit, mem_left;
		uint32_t len;
		uint8_t msg[64 + 49 + 8];
		struct smb2_hdr_out h;
		struct px_pending *p;
		struct px_prot prot;
		size_t n;

		if (run == 0)
			return;
		if (large_mtu(c))
			unit = run * SMB2_UNIT;
		else
			unit = SMB2_UNIT;
		if (unit > RA_CHUNK_MAX)
			unit = RA_CHUNK_MAX;
		if (c->led.max_read && unit > c->led.max_read)
			unit = c->led.max_read;
		mem_left = budget > px_stats.ra_bytes_now ?
		    budget - px_stats.ra_bytes_now : 0;
		len = co_ra_plan(&o->ra, (uint32_t)unit, mem_left, &off);
		if (len == 0)
			return;
		/* no fetching past the end the file had when opened (or was
		 * written to through us): a read beyond goes to the server */
		if (off >= o->size_hint)
			return;
		if (off + len > o->size_hint)
			len = (uint32_t)(o->size_hint - off);
		run = co_pool_take_run(&c->led.pool, large_mtu(c) ? 0xFFFF : 1,
		    &lo);
		memset(&h, 0, sizeof(h));
		h.command = SMB2_READ;
		h.credit_charge = large_mtu(c) ? (uint16_t)run : 1;
		h.credit = 1;
		h.message_id = lo;
		h.tree_id = o->tree_id;
		h.session_id = o->session_id;
		n = px_smb2_read_req_encode(msg, sizeof(msg), &h, &o->fid, off,
		    len, 0);
		prot = proxy_prot(c, o->session_id, o->tree_id);
		if (n == 0 || send_protected(c, &c->srv, &prot, msg, n) == -1 ||
		    (p = proxy_pending(c, lo, SMB2_READ, h.credit_charge)) ==
		    NULL || co_ra_add(&o->ra, off, len) == NULL) {
			log_warnx("conn=%llu read-ahead request failed",
			    (unsigned long long)c->id);
			return;
		}
		p->fid = o->fid;
		p->u.io.offset = off;
		p->u.io.length = len;
		p->u.io.open = o;
		p->u.io.gen = o->ra.gen;
		px_stats.ra_bytes_now += len;
		px_stats.ra_fetches++;
		px_stats.ra_fetch_bytes += len;
		px_stats.pool_ids_now = c->led.pool.count;
	}
}

/* Build a READ response (or END_OF_FILE error) answering rq. */
static uint8_t *
read_rsp(const struct smb2_hdr *rq, uint16_t credit, uint32_t status,
    const uint8_t *data, uint32_t n, size_t *len)
{
	struct smb2_hdr_out h;
	uint8_t *msg = malloc(64 + 16 + (size_t)n + 8);

	if (msg == NULL)
		return NULL;
	rsp_hdr(&h, rq, status);
	h.credit = credit;
	if (status != NT_STATUS_SUCCESS) {
		*len = px_smb2_error_rsp_encode(msg, 64 + 16 + 8, &h);
		return msg;
	}
	*len = px_smb2_read_rsp_encode(msg, 64 + 16 + (size_t)n + 8, &h, data,
	    n);
	return msg;
}

/*
 * A standalone READ: serve it from the read-ahead cache, make it wait for a
 * fetch in flight, widen it, or forward it.
 */
static enum absorb_rc
try_read(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const uint8_t *msg, size_t mlen)
{
	struct smb2_read_req r;
	struct px_session *s;
	struct px_tree *t;
	struct px_open *o;
	enum co_ra_look look;
	uint64_t charge;

	if (px_smb2_read_req_decode(e, &r) == -1)
		return AB_FORWARD;
	if ((o = px_open_find(&c->led, &r.file_id)) == NULL ||
	    o->session_id != h->session_id || o->tree_id != h->tree_id ||
	    o->closed)
		return AB_FORWARD;
	s = px_session_find(&c->led, h->session_id);
	t = px_tree_find(&c->led, h->session_id, h->tree_id);
	if (s == NULL || t == NULL || !s->established || !ra_gate(t, o) ||
	    !may_act(c, s, t, h, e) ||
	    (r.flags & SMB2_READFLAG_READ_UNBUFFERED) || r.channel != 0 ||
	    r.length == 0 || !px_open_read_access(o) || o->breaking ||
	    !c->led.negotiated || c->led.max_read == 0 ||
	    r.length > c->led.max_read || r.length > RA_CHUNK_MAX * 16) {
		ra_drop(o, PX_RA_RANDOM);
		return AB_FORWARD;
	}
	/* buffered writes first (the generic path flushes and waits) */
	if (!same_file_idle(c, o))
		return AB_FORWARD;
	if (!ids_fresh(c, h, r.length))
		return AB_FORWARD;
	charge = large_mtu(c) ? h->credit_charge : 1;

	look = co_ra_lookup(&o->ra, r.offset, r.length);
	if (look == CO_RA_WAIT) {
		c->stall = PX_STALL_READ;
		c->stall_fid = o->fid;
		c->stall_off = r.offset;
		c->stall_len = r.length;
		px_stats.ra_waits++;
		return AB_STALL;
	}
	if (look == CO_RA_HIT) {
		uint8_t *buf = malloc(r.length ? r.length : 1), *rsp;
		uint32_t n, st;
		size_t rlen;
		uint64_t before;

		if (buf == NULL)
			return AB_FAIL;
		if (co_pool_add(&c->led.pool, h->message_id, charge) == -1) {
			free(buf);
			spend_pool(c);
			return AB_FORWARD;
		}
		before = o->ra.bytes;
		co_ra_serve(&o->ra, r.offset, r.length, r.minimum_count, buf, &n,
		    &st);
		px_stats.ra_bytes_now -= before - o->ra.bytes;
		rsp = read_rsp(h, 0, st, buf, n, &rlen);
		free(buf);
		if (rsp == NULL)
			return AB_FAIL;
		if (h->message_id + charge > c->led.cr.client_next)
			c->led.cr.client_next = h->message_id + charge;
		c->led.cr.client_outstanding++;
		px_stats.requests[SMB2_READ]++;
		px_stats.ra_hits++;
		px_stats.ra_served_bytes += n;
		if (answer_msg(c, h->credit, rsp, rlen) == -1)
			return AB_FAIL;
		ra_plan(c, o);
		if (co_pool_over_bound(&c->led.pool, c->led.cr.client_next,
		    c->led.window))
			spend_pool(c);
		return AB_DONE;
	}
	/* a miss: a read outside what was fetched means random access */
	if (o->ra.chunks)
		ra_drop(o, PX_RA_RANDOM);
	co_ra_note_read(&o->ra, r.offset, r.length);
	if (o->ra.seq && r.length < RA_WIDEN &&
	    (!c->led.max_read || c->led.max_read >= RA_WIDEN)) {
		/* widen a small sequential read within its credit charge
		 * (one credit pays for 64 KiB); the answer is cut back to
		 * what the client asked for */
		uint8_t *copy = malloc(mlen);
		struct px_pending *p;
		struct smb2_fileid related;
		struct px_prot up = c->cur_prot;

		if (copy == NULL)
			return AB_FAIL;
		memcpy(copy, msg, mlen);
		px_put_u32(copy + SMB2_HDR_LEN + 4, RA_WIDEN);
		memset(&related, 0xFF, sizeof(related));
		p = px_ledger_client_request(&c->led, h, e, false, &related);
		/* the rewritten request is re-signed or re-sealed */
		if (p == NULL || co_ra_add(&o->ra, r.offset, RA_WIDEN) == NULL ||
		    send_protected(c, &c->srv, &up, copy, mlen) == -1) {
			free(copy);
			return AB_FAIL;
		}
		free(copy);
		p->u.io.prot_sign = up.sign;
		p->u.io.prot_encrypt = up.encrypt;
		p->u.io.widened = true;
		p->u.io.offset = r.offset;
		p->u.io.length = RA_WIDEN;
		p->u.io.client_len = r.length;
		p->u.io.client_min = r.minimum_count;
		p->u.io.open = o;
		p->u.io.gen = o->ra.gen;
		px_stats.ra_bytes_now += RA_WIDEN;
		px_stats.requests[SMB2_READ]++;
		px_stats.ra_widened++;
		return AB_DONE;
	}
	return AB_FORWARD;
}

/* Is o still one of c's opens (a pointer kept in a pending entry)? */
static struct px_open *
open_alive(struct px_conn *c, struct px_open *o)
{
	struct px_open *x;

	for (x = c->led.opens; x && x != o; x = x->next)
		;
	return x;
}

/* A read-ahead fetch answered. */
static void
ra_arrived(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p)
{
	struct px_open *o = open_alive(c, p->u.io.open);
	struct smb2_read_rsp rr;
	bool ok = false;
	uint64_t before;
	struct px_tree *t;

	if (o == NULL)
		return;
	memset(&rr, 0, sizeof(rr));
	if (h->status == NT_STATUS_SUCCESS && px_smb2_read_rsp_decode(e, &rr) == 0)
		ok = true;
	else if (h->status == NT_STATUS_END_OF_FILE)
		ok = true;
	before = o->ra.bytes;
	if (!co_ra_arrive(&o->ra, p->u.io.gen, p->u.io.offset, ok, rr.data,
	    rr.data_len)) {
		if (!ok)
			px_stats.ra_invalidations[PX_RA_ERROR]++;
		px_stats.ra_bytes_now -= before - o->ra.bytes;
		return;
	}
	px_stats.ra_bytes_now -= before - o->ra.bytes;
	t = px_tree_find(&c->led, o->session_id, o->tree_id);
	co_ra_grow(&o->ra, t ? t->policy.read_ahead_max : 8 << 20);
	if (o->ra.window > px_stats.ra_window_max)
		px_stats.ra_window_max = o->ra.window;
}

/* The answer to a widened client READ: feed the cache, then answer the
 * client with what it asked for, keeping the server's grant. */
static int
widened_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p,
    const struct px_prot *prot, bool *replaced)
{
	struct px_open *o = open_alive(c, p->u.io.open);
	struct smb2_read_rsp rr;
	struct smb2_hdr rq;
	uint32_t n, st;
	uint8_t *msg;
	size_t mlen;
	int rc;

	*replaced = false;
	if (h->status == NT_STATUS_END_OF_FILE) {
		if (o) {
			uint64_t before = o->ra.bytes;

			(void)co_ra_arrive(&o->ra, p->u.io.gen, p->u.io.offset,
			    true, NULL, 0);
			px_stats.ra_bytes_now -= before - o->ra.bytes;
		}
		return 0;
	}
	if (h->status != NT_STATUS_SUCCESS ||
	    px_smb2_read_rsp_decode(e, &rr) == -1) {
		if (o)
			ra_drop(o, PX_RA_ERROR);
		return 0;   /* forwarded as it came */
	}
	if (o) {
		uint64_t before = o->ra.bytes;

		(void)co_ra_arrive(&o->ra, p->u.io.gen, p->u.io.offset, true,
		    rr.data, rr.data_len);
		px_stats.ra_bytes_now -= before - o->ra.bytes;
	}
	n = rr.data_len < p->u.io.client_len ? rr.data_len : p->u.io.client_len;
	st = (n == 0 || n < p->u.io.client_min) ? NT_STATUS_END_OF_FILE :
	    NT_STATUS_SUCCESS;
	rq = *h;
	msg = read_rsp(&rq, h->credit, st, rr.data, st ? 0 : n, &mlen);
	if (msg == NULL)
		return -1;
	/* keep the server's header fields (flags, async id, ...) */
	memcpy(msg, e->hdr, SMB2_HDR_LEN);
	px_put_u32(msg + 8, st);
	px_put_u32(msg + 20, 0);          /* NextCommand */
	rc = send_protected(c, &c->cli, prot, msg, mlen);
	free(msg);
	*replaced = true;
	return rc;
}

/* ---- client requests ---------------------------------------------------------- */

/* Commands that name one open and observe or change only that file. */
static bool
file_scoped(uint16_t cmd)
{
	switch (cmd) {
	case SMB2_READ: case SMB2_WRITE: case SMB2_FLUSH: case SMB2_CLOSE:
	case SMB2_LOCK: case SMB2_QUERY_INFO: case SMB2_SET_INFO:
	case SMB2_OPLOCK_BREAK: case SMB2_CHANGE_NOTIFY:
		return true;
	default:
		return false;
	}
}

/* Commands that cannot observe file data at all. */
static bool
harmless(uint16_t cmd)
{
	switch (cmd) {
	case SMB2_NEGOTIATE: case SMB2_SESSION_SETUP: case SMB2_ECHO:
	case SMB2_CANCEL: case SMB2_TREE_CONNECT:
		return true;
	default:
		return false;
	}
}

/*
 * Before forwarding request h: is there absorbed state it could observe?
 * Triggers the flushes and returns true when the frame must wait.
 */
static bool
must_wait(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, bool compound)
{
	struct smb2_fileid fid;
	struct px_open *o;

	if (!compound && harmless(h->command))
		return false;
	if (!compound && file_scoped(h->command) &&
	    px_smb2_req_file_id(e, h->command, &fid) == 0 &&
	    (o = px_open_find(&c->led, &fid)) != NULL) {
		bool rename = false;

		if (h->command == SMB2_SET_INFO) {
			struct smb2_set_info_req si;

			if (px_smb2_set_info_req_decode(e, &si) == -1 ||
			    si.info_class == FILE_RENAME_INFORMATION ||
			    si.info_class == FILE_DISPOSITION_INFORMATION)
				rename = true;
		}
		if (!rename) {
			if (same_file_idle(c, o))
				return false;
			flush_same_file(c, o, CO_FLUSH_REQUEST);
			c->stall = PX_STALL_OPEN_IDLE;
			c->stall_fid = o->fid;
			return true;
		}
	}
	if (px_relay_quiet(c))
		return false;
	px_relay_flush_all(c, CO_FLUSH_OBSERVE);
	c->stall = PX_STALL_CONN_IDLE;
	return true;
}

/* Cross-connection rule for CREATE, QUERY_DIRECTORY, rename and delete. */
static bool
must_wait_peers(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct px_tree *t = px_tree_find(&c->led, h->session_id, h->tree_id);
	struct smb2_fileid fid;
	struct px_open *o;
	const char *name = NULL;
	bool in_dir = false;
	struct smb2_create_req *cr = NULL;
	bool busy = false;

	if (t == NULL || px_rt.conns == NULL || px_rt.conns->next == NULL)
		return false;
	if (h->command == SMB2_CREATE) {
		if ((cr = malloc(sizeof(*cr))) == NULL)
			return false;
		if (px_smb2_create_req_decode(e, cr) == 0)
			name = cr->name;
	} else if ((h->command == SMB2_READ || h->command == SMB2_WRITE ||
	    h->command == SMB2_QUERY_INFO || h->command == SMB2_LOCK ||
	    h->command == SMB2_FLUSH) &&
	    px_smb2_req_file_id(e, h->command, &fid) == 0 &&
	    (o = px_open_find(&c->led, &fid)) != NULL && o->name) {
		/* the file's data seen through another connection */
		name = o->name;
	} else if ((h->command == SMB2_QUERY_DIRECTORY ||
	    h->command == SMB2_SET_INFO) &&
	    px_smb2_req_file_id(e, h->command, &fid) == 0 &&
	    (o = px_open_find(&c->led, &fid)) != NULL && o->name) {
		if (h->command == SMB2_QUERY_DIRECTORY) {
			name = o->name;
			in_dir = true;
		} else {
			struct smb2_set_info_req si;

			if (px_smb2_set_info_req_decode(e, &si) == 0)
				name = o->name;
		}
	}
	if (name && !peers_idle(c, t->share, name, in_dir)) {
		peers_flush(c, t->share, name, in_dir);
		c->stall = PX_STALL_PEERS;
		busy = true;
	}
	free(cr);
	return busy;
}

bool
px_relay_stall_cleared(struct px_conn *c)
{
	struct px_open *o;
	bool ok = false;

	switch (c->stall) {
	case PX_STALL_NONE:
		return true;
	case PX_STALL_OPEN_IDLE:
		o = px_open_find(&c->led, &c->stall_fid);
		ok = o == NULL || same_file_idle(c, o);
		break;
	case PX_STALL_CONN_IDLE:
		ok = px_relay_quiet(c);
		break;
	case PX_STALL_PEERS:
		/* re-evaluated from scratch when the frame is handled again */
		ok = true;
		break;
	case PX_STALL_MEMORY:
		/* some memory was given back, or this open holds none: handle
		 * the frame again; it waits once more if still over */
		o = px_open_find(&c->led, &c->stall_fid);
		ok = o == NULL || !open_busy(o) ||
		    px_stats.wb_bytes_now < glob()->write_behind_memory / 2 ||
		    o->wb_inflight_bytes + o->wb.len < c->stall_mem;
		break;
	case PX_STALL_CREDITS:
		ok = c->delayed == NULL;
		break;
	case PX_STALL_READ:
		o = px_open_find(&c->led, &c->stall_fid);
		ok = o == NULL || co_ra_lookup(&o->ra, c->stall_off,
		    c->stall_len) != CO_RA_WAIT;
		break;
	}
	if (ok)
		c->stall = PX_STALL_NONE;
	return ok;
}

/* The client sent something the relay cannot follow: flush, spend the
 * pool, wait for quiet, then relay opaquely from this frame on. */
static enum px_rc
client_opaque(struct px_conn *c, enum px_opaque_reason r, const char *detail,
    const uint8_t *frame, size_t len)
{
	if (!px_relay_quiet(c)) {
		px_relay_flush_all(c, CO_FLUSH_OPAQUE);
		c->stall = PX_STALL_CONN_IDLE;
		return PX_RC_STALL;
	}
	px_conn_go_opaque(c, r, detail);
	return px_conn_send_frame(&c->srv, frame, len) == 0 ? PX_RC_DONE :
	    PX_RC_CLOSE;
}

/* Deferred error of an open: answer a WRITE or FLUSH with it. */
static bool
deferred_error(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, enum absorb_rc *rc)
{
	struct smb2_fileid fid;
	struct px_open *o;
	uint32_t st;

	if ((h->command != SMB2_WRITE && h->command != SMB2_FLUSH) ||
	    px_smb2_req_file_id(e, h->command, &fid) == -1 ||
	    (o = px_open_find(&c->led, &fid)) == NULL || !o->failed_status ||
	    open_busy(o) || o->session_id != h->session_id ||
	    !ids_fresh(c, h, 1) || (h->flags & SMB2_FLAGS_SIGNED))
		return false;
	st = o->failed_status;
	o->failed_status = 0;
	log_warnx("conn=%llu share=%s file=%s deferred write error 0x%08x "
	    "reported on %s", (unsigned long long)c->id, tree_share(c, o),
	    o->name, st, px_smb2_cmd_name(h->command));
	if (co_pool_add(&c->led.pool, h->message_id,
	    large_mtu(c) ? h->credit_charge : 1) == -1) {
		*rc = AB_FORWARD;
		return false;
	}
	if (h->message_id + 1 > c->led.cr.client_next)
		c->led.cr.client_next = h->message_id + 1;
	c->led.cr.client_outstanding++;
	*rc = answer_absorbed(c, h, st, 0) == 0 ? AB_DONE : AB_FAIL;
	spend_pool(c);
	return true;
}

static enum px_rc client_smb2(struct px_conn *c, const uint8_t *msg,
    size_t mlen, const uint8_t *frame, size_t len);
static enum px_rc server_smb2(struct px_conn *c, const uint8_t *msg,
    size_t mlen, const uint8_t *frame, size_t len, struct px_session *sealed);

/*
 * A frame from the client.  SMB2 is handled by client_smb2(); a sealed
 * message of a keyed session is decrypted and handled the same way (what
 * is forwarded unchanged goes on sealed as it came); SMB1 negotiate waits
 * for the server's answer; anything else turns the connection opaque.
 */
enum px_rc
px_relay_client_frame(struct px_conn *c, const uint8_t *frame, size_t len)
{
	const uint8_t *msg = frame + PX_NBSS_HDR;
	size_t mlen = len - PX_NBSS_HDR;

	switch (px_classify(msg, mlen)) {
	case PX_MAGIC_SMB2:
		c->cur_encrypted = false;
		return client_smb2(c, msg, mlen, frame, len);
	case PX_MAGIC_TRANSFORM: {
		struct px_session *s;
		size_t plen;
		uint8_t *plain = px_keyed_decrypt(c, msg, mlen, false, &plen, &s);
		enum px_rc rc;

		if (plain == NULL)
			return client_opaque(c, PX_OPAQUE_ENCRYPTED_NO_KEY, NULL,
			    frame, len);
		if (px_classify(plain, plen) != PX_MAGIC_SMB2) {
			free(plain);
			return client_opaque(c, PX_OPAQUE_DECODE_ERROR,
			    "detail=sealed-non-smb2", frame, len);
		}
		c->cur_encrypted = true;
		c->cur_enc_sid = s->id;
		rc = client_smb2(c, plain, plen, frame, len);
		c->cur_encrypted = false;
		free(plain);
		return rc;
	}
	case PX_MAGIC_SMB1:
		if (!c->smb2_seen) {
			/* multi-protocol negotiate: the server may answer in
			 * SMB2 (MS-SMB2 3.3.5.3); decide on its answer */
			c->led.smb1_negotiate = true;
			px_stats.requests[SMB2_NCMDS]++;
			return px_conn_send_frame(&c->srv, frame, len) == 0 ?
			    PX_RC_DONE : PX_RC_CLOSE;
		}
		return client_opaque(c, PX_OPAQUE_DECODE_ERROR,
		    "detail=smb1-after-smb2", frame, len);
	case PX_MAGIC_COMPRESSED:
		return client_opaque(c, PX_OPAQUE_COMPRESSED, NULL, frame, len);
	default:
		return client_opaque(c, PX_OPAQUE_UNKNOWN_MAGIC, NULL, frame, len);
	}
}

/* An SMB2 message (msg, plaintext) that arrived as `frame`. */
static enum px_rc
client_smb2(struct px_conn *c, const uint8_t *msg, size_t mlen,
    const uint8_t *frame, size_t len)
{
	struct smb2_hdr h, first;
	struct smb2_elem e;
	struct smb2_fileid related;
	size_t off;
	int n, i;
	bool compound;

	n = px_smb2_compound_count(msg, mlen);
	if (n < 1 || px_smb2_hdr_decode(msg, mlen, 0, &first) == -1)
		return client_opaque(c, PX_OPAQUE_DECODE_ERROR,
		    "detail=bad-smb2-header", frame, len);
	if (first.is_response)
		return client_opaque(c, PX_OPAQUE_DECODE_ERROR,
		    "detail=response-from-client", frame, len);
	compound = n > 1;
	c->smb2_seen = true;

	/* standalone WRITE: the absorb path */
	e.hdr = msg;
	e.len = first.elem_len;
	if (!compound && c->state == PX_CONN_RELAY) {
		enum absorb_rc ar = AB_FORWARD;

		if (deferred_error(c, &first, &e, &ar)) {
			if (ar == AB_FAIL)
				return PX_RC_CLOSE;
			px_stats.requests[first.command]++;
			return PX_RC_DONE;
		}
		if (first.command == SMB2_READ) {
			ar = try_read(c, &first, &e, msg, mlen);
			if (ar == AB_DONE)
				return PX_RC_DONE;
			if (ar == AB_STALL)
				return PX_RC_STALL;
			if (ar == AB_FAIL)
				return PX_RC_CLOSE;
		}
		if (first.command == SMB2_WRITE) {
			ar = try_absorb_write(c, &first, &e);
			if (ar == AB_DONE) {
				ra_on_request(c, &first, &e);
				px_stats.requests[SMB2_WRITE]++;
				return PX_RC_DONE;
			}
			if (ar == AB_STALL)
				return PX_RC_STALL;
			if (ar == AB_FAIL)
				return PX_RC_CLOSE;
		}
		if (first.command == SMB2_CANCEL) {
			/* CANCEL of an absorbed request: drop it (rule 6) */
			if (!(first.flags & SMB2_FLAGS_ASYNC_COMMAND) &&
			    px_pending_find(&c->led, first.message_id) == NULL &&
			    first.message_id < c->led.cr.client_next) {
				px_stats.requests[SMB2_CANCEL]++;
				return PX_RC_DONE;
			}
		}
	}

	/* anything else is forwarded, after what it could observe is flushed */
	if (c->stall == PX_STALL_NONE) {
		for (off = 0, i = 0; i < n; i++) {
			if (px_smb2_hdr_decode(msg, mlen, off, &h) == -1)
				break;
			e.hdr = msg + off;
			e.len = h.elem_len;
			if (must_wait(c, &h, &e, compound) ||
			    must_wait_peers(c, &h, &e))
				return PX_RC_STALL;
			off += h.elem_len;
		}
	}

	memset(&related, 0xFF, sizeof(related));
	for (off = 0, i = 0; i < n; i++) {
		struct px_pending *p;

		if (px_smb2_hdr_decode(msg, mlen, off, &h) == -1)
			break;
		e.hdr = msg + off;
		e.len = h.elem_len;
		px_stats.requests[h.command < SMB2_NCMDS ? h.command :
		    SMB2_NCMDS]++;
		ra_on_request(c, &h, &e);
		if (h.command == SMB2_NEGOTIATE && !compound)
			px_keyed_negotiate_req(c, e.hdr, e.len);
		p = px_ledger_client_request(&c->led, &h, &e, compound, &related);
		if (p && h.command == SMB2_SESSION_SETUP && !compound)
			px_keyed_setup_req(c, &h, e.hdr, e.len, p);
		if (p && h.command == SMB2_CLOSE) {
			struct px_open *o = px_open_find(&c->led, &p->fid);

			if (o) {
				o->closed = true;
				if (o->failed_status) {
					log_warnx("conn=%llu share=%s file=%s "
					    "deferred write error 0x%08x "
					    "reported on CLOSE",
					    (unsigned long long)c->id,
					    tree_share(c, o), o->name,
					    o->failed_status);
					p->u.io.length = o->failed_status;
					p->u.io.offset = UINT64_MAX; /* marker */
				}
			}
		}
		if (h.command == SMB2_WRITE)
			px_stats.writes_forwarded++;
		off += h.elem_len;
	}
	return px_conn_send_frame(&c->srv, frame, len) == 0 ? PX_RC_DONE :
	    PX_RC_CLOSE;
}

bool
px_relay_client_stream(struct px_conn *c, const uint8_t *frame, size_t full)
{
	const uint8_t *msg = frame + PX_NBSS_HDR;
	size_t mlen = full - PX_NBSS_HDR;
	struct smb2_hdr h;
	struct smb2_elem e;
	struct smb2_write_req w;
	struct px_open *o;
	struct px_tree *t;
	struct smb2_fileid related;

	/* only the header and the fixed part of the body are present: every
	 * decoder used here reads no further than that */
	if (px_classify(msg, mlen) != PX_MAGIC_SMB2 ||
	    px_smb2_hdr_decode(msg, mlen, 0, &h) == -1 || h.is_response ||
	    h.next_command != 0 || h.command != SMB2_WRITE)
		return false;
	e.hdr = msg;
	e.len = mlen;
	if (px_smb2_write_req_decode(&e, &w) == -1)
		return false;
	if ((o = px_open_find(&c->led, &w.file_id)) != NULL) {
		if (o->failed_status)
			return false;
		t = px_tree_find(&c->led, o->session_id, o->tree_id);
		if (t && w.length <= coalesce_limit(c, t))
			return false;   /* might be absorbed: decide on all of it */
	}
	if (must_wait(c, &h, &e, false) || must_wait_peers(c, &h, &e))
		return false;
	memset(&related, 0xFF, sizeof(related));
	(void)px_ledger_client_request(&c->led, &h, &e, false, &related);
	px_stats.requests[SMB2_WRITE]++;
	px_stats.writes_forwarded++;
	c->smb2_seen = true;
	return true;
}

bool
px_relay_server_stream(struct px_conn *c, const uint8_t *frame, size_t full)
{
	const uint8_t *msg = frame + PX_NBSS_HDR;
	size_t mlen = full - PX_NBSS_HDR;
	struct smb2_hdr h;
	struct smb2_elem e;
	struct px_pending *p;
	struct smb2_fileid last;
	bool interim;

	if (px_classify(msg, mlen) != PX_MAGIC_SMB2 ||
	    px_smb2_hdr_decode(msg, mlen, 0, &h) == -1 || !h.is_response ||
	    h.next_command != 0 || h.command != SMB2_READ ||
	    h.message_id == SMB2_NOTIFY_MESSAGE_ID)
		return false;
	p = px_pending_find(&c->led, h.message_id);
	if (p == NULL || p->origin != PX_ORIGIN_CLIENT)
		return false;
	e.hdr = msg;
	e.len = mlen;
	memset(&last, 0xFF, sizeof(last));
	px_ledger_server_response(&c->led, &h, &e, &last, &p, &interim);
	if (p && !interim)
		px_pending_free(p);
	return true;
}

/* ---- server messages ------------------------------------------------------------- */

static void
proxy_response(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p)
{
	struct px_open *o, *x;

	if (c->proxy_inflight)
		c->proxy_inflight--;
	if (p->command == SMB2_READ) {
		ra_arrived(c, h, e, p);
		if ((o = open_alive(c, p->u.io.open)) != NULL)
			ra_plan(c, o);
		return;
	}
	if (p->command != SMB2_WRITE)
		return;
	/* the open may have gone (session or tree torn down server-side) */
	for (x = c->led.opens; x && x != p->u.io.open; x = x->next)
		;
	o = x;
	wb_account(c, -(int64_t)p->u.io.length);
	if (o) {
		o->wb_inflight--;
		o->wb_inflight_bytes -= p->u.io.length;
	}
	if (h->status == NT_STATUS_SUCCESS) {
		struct smb2_write_rsp wr;

		if (px_smb2_write_rsp_decode(e, &wr) == 0 &&
		    wr.count == p->u.io.length)
			return;
	}
	px_stats.deferred_errors++;
	log_warnx("conn=%llu share=%s file=%s offset=%llu length=%u upstream "
	    "write failed status=0x%08x: acknowledged data lost, error "
	    "deferred to the next WRITE, FLUSH or CLOSE",
	    (unsigned long long)c->id, o ? tree_share(c, o) : "?",
	    o && o->name ? o->name : "?",
	    (unsigned long long)p->u.io.offset, p->u.io.length,
	    h->status == NT_STATUS_SUCCESS ? NT_STATUS_DISK_FULL : h->status);
	if (o && !o->failed_status)
		o->failed_status = h->status == NT_STATUS_SUCCESS ?
		    NT_STATUS_DISK_FULL : h->status;
}

/*
 * Rewrite a CLOSE response into an error response carrying the deferred
 * status, keeping the server's grant.  1: sent; 0: not possible (signed
 * without a key), forward the original; -1: out of memory.
 */
static int
close_with_error(struct px_conn *c, const struct smb2_hdr *h, uint32_t st,
    const struct px_prot *prot)
{
	struct smb2_hdr_out o;
	uint8_t msg[64 + 9 + 8];
	size_t n;
	struct px_session *s = px_session_find(&c->led, h->session_id);

	if ((prot->sign || prot->encrypt) && (s == NULL || !s->keyed)) {
		log_warnx("conn=%llu deferred write error 0x%08x cannot be "
		    "put on the signed CLOSE response (no key)",
		    (unsigned long long)c->id, st);
		return 0;
	}
	memset(&o, 0, sizeof(o));
	o.command = SMB2_CLOSE;
	o.credit_charge = h->credit_charge;
	o.credit = h->credit;
	o.status = st;
	o.flags = SMB2_FLAGS_SERVER_TO_REDIR;
	o.message_id = h->message_id;
	o.tree_id = h->tree_id;
	o.session_id = h->session_id;
	if ((n = px_smb2_error_rsp_encode(msg, sizeof(msg), &o)) == 0)
		return -1;
	return send_protected(c, &c->cli, prot, msg, n) == 0 ? 1 : -1;
}

enum px_rc
px_relay_server_frame(struct px_conn *c, const uint8_t *frame, size_t len)
{
	const uint8_t *msg = frame + PX_NBSS_HDR;
	size_t mlen = len - PX_NBSS_HDR;

	switch (px_classify(msg, mlen)) {
	case PX_MAGIC_SMB2:
		return server_smb2(c, msg, mlen, frame, len, NULL);
	case PX_MAGIC_TRANSFORM:
		if (c->state == PX_CONN_RELAY) {
			struct px_session *s;
			size_t plen;
			uint8_t *plain = px_keyed_decrypt(c, msg, mlen, true,
			    &plen, &s);
			enum px_rc rc;

			if (plain && px_classify(plain, plen) == PX_MAGIC_SMB2) {
				rc = server_smb2(c, plain, plen, frame, len, s);
				free(plain);
				return rc;
			}
			free(plain);
		}
		break;
	case PX_MAGIC_SMB1:
		if (c->led.smb1_negotiate && !c->smb2_seen) {
			px_conn_go_opaque(c, PX_OPAQUE_SMB1, NULL);
			return px_conn_send_frame(&c->cli, frame, len) == 0 ?
			    PX_RC_DONE : PX_RC_CLOSE;
		}
		/* FALLTHROUGH */
	default:
		if (!px_relay_quiet(c))
			log_warnx("conn=%llu server sent an undecodable message "
			    "with write-behind state outstanding",
			    (unsigned long long)c->id);
		px_conn_go_opaque(c, px_classify(msg, mlen) == PX_MAGIC_TRANSFORM ?
		    PX_OPAQUE_ENCRYPTED_NO_KEY : PX_OPAQUE_DECODE_ERROR,
		    "detail=server-message");
		return px_conn_send_frame(&c->cli, frame, len) == 0 ?
		    PX_RC_DONE : PX_RC_CLOSE;
	}
	if (!px_relay_quiet(c))
		log_warnx("conn=%llu server sent a message it cannot read "
		    "with write-behind state outstanding",
		    (unsigned long long)c->id);
	px_conn_go_opaque(c, PX_OPAQUE_ENCRYPTED_NO_KEY, "detail=server-message");
	return px_conn_send_frame(&c->cli, frame, len) == 0 ? PX_RC_DONE :
	    PX_RC_CLOSE;
}

/*
 * An SMB2 message from the server (plaintext msg) that arrived as frame;
 * sealed is the session it was sealed under, or NULL.
 */
static enum px_rc
server_smb2(struct px_conn *c, const uint8_t *msg, size_t mlen,
    const uint8_t *frame, size_t len, struct px_session *sealed)
{
	struct smb2_fileid last_create;
	bool forward = true, replaced = false, kick = false;
	struct px_prot prot;
	size_t off;
	int n, i;
	/* by id: a LOGOFF answer frees the session it was sealed under */
	uint64_t sealed_id = sealed ? sealed->id : 0;

	n = px_smb2_compound_count(msg, mlen);
	if (n < 1) {
		px_conn_go_opaque(c, PX_OPAQUE_DECODE_ERROR,
		    "detail=bad-server-header");
		return px_conn_send_frame(&c->cli, frame, len) == 0 ?
		    PX_RC_DONE : PX_RC_CLOSE;
	}
	c->smb2_seen = true;
	c->led.smb1_negotiate = false;
	memset(&last_create, 0xFF, sizeof(last_create));
	for (off = 0, i = 0; i < n; i++) {
		struct smb2_hdr h;
		struct smb2_elem e;
		struct px_pending *p;
		bool interim;

		if (px_smb2_hdr_decode(msg, mlen, off, &h) == -1)
			break;
		e.hdr = msg + off;
		e.len = h.elem_len;
		off += h.elem_len;
		if (h.message_id == SMB2_NOTIFY_MESSAGE_ID &&
		    h.command == SMB2_OPLOCK_BREAK) {
			struct smb2_oplock_break b;

			px_ledger_break(&c->led, &e);
			/* write back before the client acknowledges (3.2.5.19) */
			if (px_smb2_oplock_break_decode(&e, &b) == 0) {
				struct px_open *o;

				for (o = c->led.opens; o; o = o->next) {
					if (o->breaking)
						ra_drop(o, PX_RA_BREAK);
					if (o->breaking && o->wb.len)
						flush_open(c, o, CO_FLUSH_BREAK);
				}
				spend_pool(c);
			}
			continue;
		}
		px_ledger_server_response(&c->led, &h, &e, &last_create, &p,
		    &interim);
		prot.encrypt = sealed_id != 0;
		prot.sid = sealed_id ? sealed_id : h.session_id;
		prot.sign = !sealed_id && (h.flags & SMB2_FLAGS_SIGNED);
		if (p && !interim && n == 1 && h.command == SMB2_NEGOTIATE &&
		    p->command == h.command)
			px_keyed_negotiate_rsp(c, e.hdr, e.len);
		if (p && !interim && n == 1 && h.command == SMB2_SESSION_SETUP &&
		    p->command == h.command && p->origin == PX_ORIGIN_CLIENT)
			px_keyed_setup_rsp(c, &h, e.hdr, e.len, p);
		if (p && p->origin == PX_ORIGIN_PROXY) {
			/* proxy requests are never compounded with the
			 * client's: the whole message is ours */
			forward = false;
			if (!interim) {
				proxy_response(c, &h, &e, p);
				px_pending_free(p);
				kick = true;
			}
			continue;
		}
		if (p && !interim && p->command == SMB2_READ &&
		    h.command == SMB2_READ && p->u.io.widened && n == 1) {
			bool rep;

			if (widened_answer(c, &h, &e, p, &prot, &rep) == -1) {
				px_pending_free(p);
				return PX_RC_CLOSE;
			}
			replaced = replaced || rep;
		}
		if (p && !interim && p->command == SMB2_CLOSE &&
		    h.command == SMB2_CLOSE && p->u.io.offset == UINT64_MAX &&
		    n == 1) {
			/* deferred write error reported on CLOSE; the CLOSE
			 * itself went to the server, so no handle leaks */
			int rc = close_with_error(c, &h, p->u.io.length, &prot);

			if (rc == -1) {
				px_pending_free(p);
				return PX_RC_CLOSE;
			}
			replaced = replaced || rc == 1;
		}
		if (p && !interim)
			px_pending_free(p);
	}
	if (forward && !replaced &&
	    px_conn_send_frame(&c->cli, frame, len) == -1)
		return PX_RC_CLOSE;
	if (kick) {
		try_send_delayed(c);
		/* pool ids left over once everything is flushed */
		spend_pool(c);
		px_stats.pool_ids_now = c->led.pool.count;
		if (c->stall != PX_STALL_NONE)
			px_conn_kick(c);
		kick_peer_waiters(c);
	}
	return PX_RC_DONE;
}

/* ---- timers and teardown -------------------------------------------------------- */

double
px_relay_timer(struct px_conn *c, double now_ms)
{
	struct px_open *o;
	double next = 0;
	bool flushed = false;

	for (o = c->led.opens; o; o = o->next) {
		struct px_tree *t;
		double idle, age, due;

		if (o->wb.len == 0)
			continue;
		t = px_tree_find(&c->led, o->session_id, o->tree_id);
		idle = o->wb.last_ms + (t ? t->policy.flush_idle_ms : 200);
		age = o->wb.first_ms + (t ? t->policy.flush_max_age_ms : 2000);
		if (now_ms >= idle || now_ms >= age) {
			flush_open(c, o, now_ms >= idle ? CO_FLUSH_IDLE :
			    CO_FLUSH_AGE);
			flushed = true;
			continue;
		}
		due = idle < age ? idle : age;
		if (next == 0 || due < next)
			next = due;
	}
	if (flushed)
		spend_pool(c);
	return next;
}

void
px_relay_free(struct px_conn *c)
{
	struct px_open *o;

	for (o = c->led.opens; o; o = o->next) {
		/* name exactly what was acknowledged to the client and never
		 * acknowledged by the server: writes in flight, then the
		 * buffer not yet sent */
		if (o->wb_inflight_bytes)
			log_warnx("conn=%llu share=%s file=%s offset=%llu "
			    "length=%llu closed with write-behind data in flight, "
			    "not acknowledged by the server (range %llu-%llu)",
			    (unsigned long long)c->id, tree_share(c, o), o->name,
			    (unsigned long long)o->wb_inflight_lo,
			    (unsigned long long)(o->wb_inflight_hi -
			    o->wb_inflight_lo),
			    (unsigned long long)o->wb_inflight_lo,
			    (unsigned long long)o->wb_inflight_hi);
		if (o->wb.len)
			log_warnx("conn=%llu share=%s file=%s offset=%llu "
			    "length=%zu closed with write-behind data not "
			    "acknowledged by the server",
			    (unsigned long long)c->id, tree_share(c, o), o->name,
			    (unsigned long long)o->wb.off, o->wb.len);
		if (o->wb.len || o->wb_inflight_bytes)
			wb_account(c, -(int64_t)(o->wb.len + o->wb_inflight_bytes));
	}
	while (c->delayed) {
		struct px_delayed *d = c->delayed;

		c->delayed = d->next;
		free(d->msg);
		free(d);
	}
	c->delayed_tail = &c->delayed;
	kick_peer_waiters(c);
}
