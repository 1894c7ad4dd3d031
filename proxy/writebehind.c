/*
 * writebehind.c - write-behind glue (DESIGN.md section 4) over the pure
 * extent buffer and id pool of coalesce/, and the answers every absorbed
 * request gets (section 3, rules 3 and 4).
 *
 * Owns: which WRITE may be absorbed (the open, the gate, the memory
 * budgets, the ids), the flushes that send buffered data upstream as
 * multi-credit WRITEs paid with donated ids, their answers and failures
 * (the errors deferred to the next WRITE, FLUSH, SET_INFO or CLOSE are reported by
 * wberror.c), the idle/age timers, and what a closed connection loses.  Reads served from the
 * read-ahead cache are answered through px_wb_answer too: it is where the
 * zero-credit rule lives.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/writebehind.h"
#include "proxy/alter.h"
#include "proxy/emit.h"
#include "proxy/keyed.h"

/* Largest payload of one proxy WRITE. */
static size_t
max_write_unit(const struct px_conn *c, const struct px_tree *t)
{
	size_t lim = t ? t->policy.coalesce_size : 1024 * 1024;

	if (!px_large_mtu(c))
		lim = lim < SMB2_UNIT ? lim : SMB2_UNIT;
	if (c->led.max_write && lim > c->led.max_write)
		lim = c->led.max_write;
	return lim;
}

bool
px_wb_busy(const struct px_open *o)
{
	return px_open_wb_busy(o);
}

/* Here and below, "some open busy" looks at c->led.busy only, which holds
 * every busy open (openidx.c): the opens of a connection can be
 * thousands, its busy ones few. */
bool
px_wb_settled(const struct px_conn *c)
{
	const struct px_open *o;

	if (c->delayed)
		return false;
	for (o = c->led.busy; o; o = o->busy_next)
		if (px_wb_busy(o))
			return false;
	return true;
}

bool
px_wb_quiet(const struct px_conn *c)
{
	const struct px_open *o;

	if (c->proxy_inflight || c->delayed || c->led.pool.count)
		return false;
	for (o = c->led.busy; o; o = o->busy_next)
		if (px_wb_busy(o))
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

/*
 * len bytes of o's acknowledged data will not reach the server: counted,
 * no longer buffered, and `status` kept on o (the first one stays) for its
 * next WRITE, FLUSH, SET_INFO or CLOSE (px_wb_deferred_error, px_wb_on_close).  The
 * caller logs where and why.
 */
/* One deferred error of len acknowledged bytes, counted globally and for
 * its share (ss, NULL when not known). */
static void
wb_count_lost(struct px_share_stats *ss, size_t len)
{
	px_stats.deferred_errors++;
	px_stats.lost_bytes += len;
	if (ss) {
		ss->deferred_errors++;
		ss->lost_bytes += len;
	}
}

static void
wb_lost(struct px_conn *c, struct px_open *o, size_t len, uint32_t status)
{
	wb_count_lost(o->share_stats, len);
	wb_account(c, -(int64_t)len);
	if (!o->failed_status)
		o->failed_status = status;
}

/*
 * The status a lost write is reported with.  One that tells the client to
 * recover and send the request again (an expired session: re-authenticate
 * and retry, MS-SMB2 3.2.5.1.6; a deleted session or tree: set it up
 * again) would have it retry the later request it came on and go on as if
 * nothing was lost: the loss is reported as what it is instead.
 */
uint32_t
px_wb_loss_status(uint32_t st)
{
	if (st == NT_STATUS_NETWORK_SESSION_EXPIRED ||
	    st == NT_STATUS_USER_SESSION_DELETED ||
	    st == NT_STATUS_NETWORK_NAME_DELETED)
		return NT_STATUS_LOST_WRITEBEHIND_DATA;
	return st;
}

/*
 * May the server expire session s without smbaccel seeing it coming?  A
 * session set up with anything but NTLM (Kerberos) whose ticket smbaccel
 * cannot read (no keytab, or no key for it): its end is known only when
 * the server refuses a request with STATUS_NETWORK_SESSION_EXPIRED
 * (MS-SMB2 3.3.5.2.9).  Its flushes keep a copy of what they carry, and
 * the pool keeps back the ids to send it again, until answered
 * (px_wb_write_done).
 */
bool
px_wb_expiry_unseen(const struct px_session *s)
{
	if (s == NULL || (s->auth != NULL && strcmp(s->auth, "ntlmssp") == 0))
		return false;
	return !(s->keyed && s->kx != NULL && s->kx->tkt_end != 0);
}

/*
 * o's session has been expired by the server and what smbaccel holds of
 * o must be written now (a CLOSE, LOCK or LOGOFF, a compound, a request
 * of another session or connection that could observe it, a lease
 * break): the server would refuse it, so it is lost.  Reported on o as
 * every lost write is (px_wb_write_done).
 */
static void
wb_lose_held(struct px_conn *c, struct px_open *o, enum co_flush_cause cause)
{
	struct co_extent *x[2] = { &o->refused, &o->wb };
	int i;

	for (i = 0; i < 2; i++) {
		if (x[i]->len == 0)
			continue;
		log_warnx("conn=%llu share=%s file=%s offset=%llu length=%zu "
		    "not written: the server has expired the session and the "
		    "client has not re-authenticated, but a %s flush needs it "
		    "written now: acknowledged data lost, error 0x%08x "
		    "deferred to the next WRITE, FLUSH, SET_INFO or CLOSE",
		    (unsigned long long)c->id, px_tree_share(c, o),
		    o->name ? o->name : "?", (unsigned long long)x[i]->off,
		    x[i]->len, co_flush_cause_name(cause),
		    NT_STATUS_LOST_WRITEBEHIND_DATA);
		wb_lost(c, o, x[i]->len, NT_STATUS_LOST_WRITEBEHIND_DATA);
		co_extent_free(x[i]);
		co_extent_init(x[i]);
	}
	o->wb_keep_ids -= o->refused_ids;
	o->refused_ids = 0;
	px_open_busy_sync(&c->led, o);
}

/*
 * Take from pool the ids of the next proxy WRITE of a buffer with `left`
 * bytes to go and return how many bytes it carries (0: the pool is empty).
 * Only the ids this write needs are taken: another open's buffer may be
 * waiting for the rest of the run.  At 2.0.2 a write is one id and at
 * most 64 KiB.
 */
static size_t
wb_take_ids(const struct px_conn *c, struct co_pool *pool, size_t unit,
    size_t left, uint64_t *lo, uint64_t *run)
{
	uint64_t r = co_pool_first_run(pool), want = 1;
	size_t n, cap;

	if (r == 0)
		return 0;
	if (px_large_mtu(c)) {
		n = left;
		if (n > (size_t)r * SMB2_UNIT)
			n = (size_t)r * SMB2_UNIT;
		if (n > unit)
			n = unit;
		want = (n + SMB2_UNIT - 1) / SMB2_UNIT;
		if (want == 0)
			want = 1;
	}
	if ((*run = co_pool_take_run(pool, want, lo)) == 0)
		return 0;
	cap = px_large_mtu(c) ? (size_t)*run * SMB2_UNIT : SMB2_UNIT;
	n = left < cap ? left : cap;
	return n < unit ? n : unit;
}

/* The header of a proxy WRITE of o with ids lo .. lo + run - 1, asking
 * for ask credits. */
static void
wb_write_hdr(const struct px_conn *c, const struct px_open *o, uint64_t lo,
    uint64_t run, uint16_t ask, struct smb2_hdr_out *h)
{
	memset(h, 0, sizeof(*h));
	h->command = SMB2_WRITE;
	h->credit_charge = px_large_mtu(c) ? (uint16_t)run : 1;
	h->credit = ask;
	h->message_id = lo;
	h->tree_id = o->tree_id;
	h->session_id = o->session_id;
	h->status = o->csn;     /* ChannelSequence */
}

/* A proxy WRITE of o (n bytes at off, ids from lo) is on its way: record
 * it in flight.  NULL when out of memory. */
static struct px_pending *
wb_write_sent(struct px_conn *c, struct px_open *o, uint64_t lo,
    uint16_t charge, uint64_t off, size_t n)
{
	struct px_pending *p;

	if ((p = px_emit_pending(c, lo, SMB2_WRITE, charge)) == NULL)
		return NULL;
	/* whose keys its answer must verify with (keyed.c) */
	p->session_id = o->session_id;
	p->tree_id = o->tree_id;
	p->fid = o->fid;
	p->u.io.offset = off;
	p->u.io.length = (uint32_t)n;
	p->u.io.open = o;
	p->u.io.open_serial = o->serial;
	p->u.io.share_stats = o->share_stats;
	if (o->wb_inflight++ == 0) {
		o->wb_inflight_lo = off;
		o->wb_inflight_hi = off + n;
	} else {
		if (off < o->wb_inflight_lo)
			o->wb_inflight_lo = off;
		if (off + n > o->wb_inflight_hi)
			o->wb_inflight_hi = off + n;
	}
	o->wb_inflight_bytes += n;
	px_open_busy_sync(&c->led, o);
	c->up_writes++;
	c->up_write_bytes += n;
	px_stats.upstream_writes++;
	px_stats.upstream_write_bytes += n;
	return p;
}

/*
 * Send len bytes of o's data at file offset off upstream as one or more
 * WRITEs, each spending a contiguous run of donated ids as its
 * CreditCharge.  Each WRITE is encoded in the server's output buffer and
 * signed or sealed there (px_emit_place).  data (malloc'd) is taken: freed,
 * or, where the server may expire the session unseen, kept until every
 * WRITE carrying it is answered (each one's pending entry references it:
 * no copy, and no fresh memory per flush).
 */
static void
wb_send(struct px_conn *c, struct px_open *o, uint64_t off,
    uint8_t *data, size_t len)
{
	struct px_tree *t = px_tree_find(&c->led, o->session_id, o->tree_id);
	size_t unit = max_write_unit(c, t), pos = 0;
	struct px_prot prot = px_emit_prot(c, o->session_id, o->tree_id);
	struct px_kept *kept = NULL;

	/* without it a refusal is a loss, as for any session */
	if (px_wb_expiry_unseen(px_session_find(&c->led, o->session_id)) &&
	    (kept = malloc(sizeof(*kept))) != NULL) {
		kept->refs = 1;      /* this function's, dropped at the end */
		kept->data = data;
	}

	while (pos < len) {
		struct px_pending *p;
		uint64_t lo = 0, run = 0;
		size_t n, need;
		uint8_t *dst;
		struct smb2_hdr_out h;
		n = wb_take_ids(c, &c->led.pool, unit, len - pos, &lo, &run);
		if (n == 0) {
			/* never expected (ids are spent on ECHOs only when no
			 * data is buffered); rather than wait forever, report
			 * the loss on the open and in the log */
			log_warnx("conn=%llu share=%s file=%s offset=%llu "
			    "length=%zu flush starved of message ids: "
			    "acknowledged data lost, error deferred to the next "
			    "WRITE, FLUSH, SET_INFO or CLOSE", (unsigned long long)c->id,
			    px_tree_share(c, o), o->name,
			    (unsigned long long)(off + pos), len - pos);
			wb_lost(c, o, len - pos, NT_STATUS_INSUFFICIENT_RESOURCES);
			break;
		}
		need = 64 + 48 + n;
		wb_write_hdr(c, o, lo, run, co_proxy_ask(&c->led.cr), &h);
		/* signed or sealed in place in a keyed session; ids of this run
		 * beyond the first stay with this request (at 2.0.2 the run is
		 * one id) */
		if ((dst = px_emit_place(c, PX_SERVER, &prot, need)) == NULL ||
		    px_smb2_write_req_encode(dst, need, &h, &o->fid, off + pos,
		    data + pos, (uint32_t)n, 0) != need ||
		    px_emit_finish(c, PX_SERVER, &prot, dst, need) == -1 ||
		    (p = wb_write_sent(c, o, lo, h.credit_charge, off + pos,
		    n)) == NULL)
			goto nomem;
		if (kept != NULL) {
			p->u.io.keep = data + pos;
			p->u.io.kept = kept;
			kept->refs++;
			o->wb_keep_ids += p->charge;
		}
		pos += n;
	}
	px_stats.pool_ids_now = c->led.pool.count;
	goto out;
nomem:
	log_warnx("conn=%llu out of memory flushing share=%s file=%s "
	    "offset=%llu length=%zu: data lost", (unsigned long long)c->id,
	    px_tree_share(c, o), o->name, (unsigned long long)(off + pos),
	    len - pos);
	wb_lost(c, o, len - pos, NT_STATUS_INSUFFICIENT_RESOURCES);
out:
	if (kept != NULL)
		px_kept_drop(kept);
	else
		free(data);
}

/* Must what is buffered be written now for this flush (something is
 * about to observe it, or nothing will write it later)?  Not for the
 * housekeeping ones: data held for an expired session waits through
 * them for its re-authentication. */
static bool
wb_cause_needs_data(enum co_flush_cause cause)
{
	switch (cause) {
	case CO_FLUSH_REQUEST: case CO_FLUSH_OBSERVE: case CO_FLUSH_PEER:
	case CO_FLUSH_BREAK: case CO_FLUSH_DISCONNECT: case CO_FLUSH_SHUTDOWN:
	case CO_FLUSH_OPAQUE:
		return true;
	default:
		return false;
	}
}

/* Send the buffered extent of o upstream (wb_send). */
void
px_wb_flush_open(struct px_conn *c, struct px_open *o, enum co_flush_cause cause)
{
	uint64_t off;
	size_t len;
	uint8_t *data;
	struct px_session *s;

	if (o->wb.len == 0 && o->refused.len == 0)
		return;
	/* expired by the server: what is held waits for the client's
	 * re-authentication while one is on its way (the server refuses a
	 * WRITE then too, 3.3.5.2.9), else it cannot be written */
	s = px_session_find(&c->led, o->session_id);
	if (s != NULL && s->srv_expired) {
		if (!s->srv_reauth && wb_cause_needs_data(cause))
			wb_lose_held(c, o, cause);
		return;
	}
	if (o->wb.len == 0)
		return;
	px_stats.flushes[cause]++;
	data = co_extent_take(&o->wb, &off, &len);
	wb_send(c, o, off, data, len);
	px_open_busy_sync(&c->led, o);
}

/* An 8-byte aligned element length (MS-SMB2 3.2.4.1.4). */
static size_t
pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

uint8_t *
px_wb_flush_elems(struct px_conn *c, struct px_open *o, size_t tail,
    bool need_spare, struct px_wb_elems *we)
{
	struct px_tree *t = px_tree_find(&c->led, o->session_id, o->tree_id);
	size_t unit = max_write_unit(c, t), pos = 0, total = 0, at = 0;
	struct co_pool pool = c->led.pool;   /* planned on a copy */
	struct px_open *x;
	uint64_t lo[PX_WB_ELEMS_MAX], run[PX_WB_ELEMS_MAX];
	size_t n[PX_WB_ELEMS_MAX];
	uint8_t *msg;
	int i, k = 0;

	memset(we, 0, sizeof(*we));
	if (o->wb.len == 0)
		return NULL;
	while (pos < o->wb.len) {
		if (k == PX_WB_ELEMS_MAX)
			return NULL;
		n[k] = wb_take_ids(c, &pool, unit, o->wb.len - pos, &lo[k],
		    &run[k]);
		if (n[k] == 0)
			return NULL;       /* the pool cannot pay for all of it */
		total += pad8(64 + 48 + n[k]);
		pos += n[k++];
	}
	/* one id kept back, if no other buffer needs it, to close the handle
	 * should the server fail the rest of the chain */
	for (x = c->led.busy; x; x = x->busy_next)
		if (x != o && x->wb.len)
			break;
	if (x == NULL && co_pool_take_run(&pool, 1, &we->spare_id) == 1)
		we->spare = true;
	if (need_spare && !we->spare)
		return NULL;
	if ((msg = malloc(total + tail)) == NULL)
		return NULL;       /* nothing taken yet */
	for (i = 0, pos = 0; i < k; i++) {
		struct smb2_hdr_out h;
		size_t len = 64 + 48 + n[i];

		/* 1: the compound's grant is split by what each request
		 * is due (co_compound_split) */
		wb_write_hdr(c, o, lo[i], run[i], 1, &h);
		if (i > 0)
			h.flags = SMB2_FLAGS_RELATED_OPERATIONS;
		memset(msg + at, 0, pad8(len));
		if (px_smb2_write_req_encode(msg + at, len, &h, &o->fid,
		    o->wb.off + pos, o->wb.data + pos, (uint32_t)n[i], 0) != len) {
			free(msg);
			return NULL;
		}
		/* NextCommand: the next WRITE, or what the caller appends */
		px_put_u32(msg + at + 20, (uint32_t)pad8(len));
		we->mid[i] = lo[i];
		we->charge[i] = h.credit_charge;
		we->off[i] = at;
		at += pad8(len);
		pos += n[i];
	}
	we->n = k;
	we->len = at;
	/* from here on it is committed: the ids, the data, the writes */
	c->led.pool = pool;
	px_stats.flushes[CO_FLUSH_REQUEST]++;
	for (i = 0, pos = 0; i < k; i++) {
		struct px_pending *p = wb_write_sent(c, o, lo[i], we->charge[i],
		    o->wb.off + pos, n[i]);

		if (p == NULL) {
			free(msg);
			we->oom = true;
			return NULL;
		}
		p->in_compound = true;
		pos += n[i];
	}
	{
		uint64_t off;
		size_t len;

		free(co_extent_take(&o->wb, &off, &len));
	}
	px_open_busy_sync(&c->led, o);
	px_stats.pool_ids_now = c->led.pool.count;
	return msg;
}

void
px_wb_flush_all(struct px_conn *c, enum co_flush_cause cause)
{
	struct px_open *o;

	for (o = c->led.opens; o; o = o->next)
		px_wb_flush_open(c, o, cause);
	/* whoever flushes everything waits for quiet: no ids kept back */
	px_emit_spend_pool(c, true);
}

/* Flush every open naming the same file as o (o included). */
void
px_wb_flush_file(struct px_conn *c, struct px_open *o, enum co_flush_cause cause)
{
	struct px_open *x;

	for (x = c->led.opens; x; x = x->next)
		if (px_open_same_file(&c->led, x, o))
			px_wb_flush_open(c, x, cause);
	px_emit_spend_pool(c, false);
}

/*
 * Is all that keeps o's file (o NULL: the connection) from being idle
 * data held for a session the server has expired, with nothing of it in
 * flight and no re-authentication on its way?  Nothing will write it
 * until the client re-authenticates, so a request waiting for it must be
 * looked at again (px_relay_stall_cleared): one the server refuses in an
 * expired session goes on, one that needs the data written finds it lost
 * (px_wb_flush_open).
 */
bool
px_wb_only_held(struct px_conn *c, const struct px_open *o)
{
	const struct px_open *x;
	const struct px_session *s;
	bool held = false;

	if (o == NULL && (c->proxy_inflight || c->delayed))
		return false;
	for (x = c->led.busy; x; x = x->busy_next) {
		if (o != NULL && !px_open_same_file(&c->led, x, o))
			continue;
		if (!px_wb_busy(x))
			continue;
		s = px_session_find(&c->led, x->session_id);
		if (x->wb_inflight || s == NULL || !s->srv_expired ||
		    s->srv_reauth)
			return false;
		held = true;
	}
	return held;
}

bool
px_wb_file_idle(struct px_conn *c, const struct px_open *o)
{
	const struct px_open *x;

	for (x = c->led.busy; x; x = x->busy_next)
		if (px_wb_busy(x) && px_open_same_file(&c->led, x, o))
			return false;
	return true;
}


/* ---- answers to absorbed requests ------------------------------------------- */

int
px_wb_answer(struct px_conn *c, uint16_t credit_request, uint8_t *msg,
    size_t len)
{
	uint16_t grant;
	int rc;

	if (c->delayed == NULL && co_synth_grant(&c->led.cr,
	    px_emit_msg_charge(c, msg), credit_request, &grant)) {
		rc = px_emit_synth(c, msg, len, credit_request, grant,
		    &c->cur_prot);
		free(msg);
		return rc;
	}
	if (px_emit_delay(c, msg, len, credit_request) == -1)
		return -1;
	/*
	 * The bank refills only from responses to proxy requests.  With some
	 * in flight their answers refill it (px_emit_send_delayed); a flush
	 * now would only cut the coalesced WRITE short (a server slowed by
	 * its disk made 8 KiB WRITEs of it).  With none, start one at once.
	 */
	if (c->proxy_inflight == 0) {
		px_wb_flush_all(c, CO_FLUSH_CREDITS);
		/* nothing went: the pool's last id became the acknowledgement
		 * reserve, and the held answer would wait for ever */
		if (c->proxy_inflight == 0)
			px_emit_release_reserve(c);
		/* still nothing to refill the bank (held for what is owed,
		 * with nothing to flush): sent with what the bank holds */
		if (c->proxy_inflight == 0)
			px_emit_send_delayed(c);
	}
	return 0;
}

int
px_wb_answer_status(struct px_conn *c, const struct smb2_hdr *rq,
    uint32_t status, uint32_t count)
{
	struct smb2_hdr_out h;
	uint8_t msg[64 + 17 + 8], *copy;
	uint16_t grant;
	size_t n;

	px_emit_rsp_hdr(&h, rq, status);
	if (status != NT_STATUS_SUCCESS)
		n = px_smb2_error_rsp_encode(msg, sizeof(msg), &h);
	else
		n = px_smb2_write_rsp_encode(msg, sizeof(msg), &h, count);
	if (n == 0)
		return -1;
	/* built on the stack; copied only if it has to wait (px_wb_answer) */
	if (c->delayed == NULL && co_synth_grant(&c->led.cr,
	    px_emit_msg_charge(c, msg), rq->credit, &grant))
		return px_emit_synth(c, msg, n, rq->credit, grant,
		    &c->cur_prot);
	if ((copy = malloc(n)) == NULL)
		return -1;
	memcpy(copy, msg, n);
	return px_wb_answer(c, rq->credit, copy, n);
}

/* h's whole CreditCharge to the id pool, h counted answered-to-be;
 * false when the pool cannot take it. */
static bool
absorb_ids(struct px_conn *c, const struct smb2_hdr *h)
{
	uint64_t charge = px_emit_charge(c, h->credit_charge);

	if (co_pool_add(&c->led.pool, h->message_id, charge) == -1)
		return false;
	co_client_sent(&c->led.cr, h->message_id, charge, h->credit);
	return true;
}

enum px_absorb
px_wb_absorb_status(struct px_conn *c, const struct smb2_hdr *h,
    uint32_t status)
{
	if (!absorb_ids(c, h))
		return PX_AB_FORWARD;
	return px_wb_answer_status(c, h, status, 0) == 0 ? PX_AB_DONE :
	    PX_AB_FAIL;
}

enum px_absorb
px_wb_absorb_msg(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t n)
{
	uint8_t *copy;

	if (!absorb_ids(c, h))
		return PX_AB_FORWARD;
	if ((copy = malloc(n)) == NULL)
		return PX_AB_FAIL;
	memcpy(copy, msg, n);
	return px_wb_answer(c, h->credit, copy, n) == 0 ? PX_AB_DONE :
	    PX_AB_FAIL;
}

int
px_wb_answer_read(struct px_conn *c, const struct smb2_hdr *rq,
    uint64_t charge, uint32_t st, const uint8_t *data, uint32_t n)
{
	uint8_t *rsp;
	size_t rlen;

	if ((rsp = px_emit_read_rsp(rq, 0, st, data, n, &rlen)) == NULL)
		return -1;
	co_client_sent(&c->led.cr, rq->message_id, charge, rq->credit);
	px_stats.requests[SMB2_READ]++;
	return px_wb_answer(c, rq->credit, rsp, rlen);
}

/* ---- write absorption ------------------------------------------------------- */

size_t
px_wb_coalesce_limit(const struct px_conn *c, const struct px_tree *t)
{
	size_t lim = (size_t)t->policy.coalesce_size;

	if (!px_large_mtu(c) && lim > SMB2_UNIT)
		lim = SMB2_UNIT;
	if (c->led.max_write && lim > c->led.max_write)
		lim = c->led.max_write;
	return lim;
}

static bool
ranges_meet(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

/* Another open of o's file on this connection holding data of the range
 * (buffered, refused for sending again, or in flight)?  Each open has its
 * own buffer, so the order the client wrote them in is kept only by
 * sending the older data first and waiting for its answer. */
static bool
range_busy_elsewhere(const struct px_conn *c, const struct px_open *o,
    uint64_t off, uint64_t len)
{
	const struct px_open *x;

	for (x = c->led.busy; x; x = x->busy_next)
		if (x != o && px_wb_busy(x) && px_open_same_file(&c->led, x, o) &&
		    (ranges_meet(x->wb.off, x->wb.len, off, len) ||
		    ranges_meet(x->refused.off, x->refused.len, off, len) ||
		    (x->wb_inflight &&
		    px_open_writes_overlap(&c->led, x, off, len))))
			return true;
	return false;
}

/*
 * Try to absorb a standalone WRITE.  PX_AB_FORWARD: forward it; PX_AB_DONE:
 * absorbed and answered (or queued); PX_AB_STALL: wait; PX_AB_FAIL: out of memory.
 */
enum px_absorb
px_wb_absorb(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const uint8_t *frame, size_t flen)
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
	bool direct;

	/* data anywhere but right after the fixed part (0x70), or channel
	 * info beside it: smbd refuses the first INVALID_PARAMETER, and
	 * neither is what a client sends; the server's to answer */
	if (px_smb2_write_req_decode(e, &w) == -1 ||
	    w.data_offset != SMB2_HDR_LEN + 48 || w.channel_info_len != 0)
		return PX_AB_FORWARD;
	/* a server gone (closed, reset, a failed write, or spent by a
	 * client that left inside a cut-through frame): what would be
	 * acknowledged could only be lost; forwarded, the client sees */
	if (!px_relay_ops->connected(c, PX_SERVER))
		return PX_AB_FORWARD;
	if ((o = px_open_find(&c->led, &w.file_id)) == NULL ||
	    o->session_id != h->session_id || o->tree_id != h->tree_id ||
	    o->closed)
		return PX_AB_FORWARD;
	s = px_session_find(&c->led, h->session_id);
	t = px_tree_find(&c->led, h->session_id, h->tree_id);
	if (s == NULL || t == NULL || !s->established)
		return PX_AB_FORWARD;
	/* a deferred error is reported on the next WRITE (DESIGN.md 4) */
	if (o->failed_status && !px_wb_busy(o))
		return PX_AB_FORWARD;
	/* a replay, or a ChannelSequence older than the open's, which the
	 * server fails FILE_NOT_AVAILABLE (MS-SMB2 3.3.5.2.10): the
	 * server's to answer.  A newer one becomes the open's, and
	 * smbaccel's WRITEs carry it */
	if ((h->flags & SMB2_FLAGS_REPLAY_OPERATION) || !px_open_csn_seen(o, h))
		return PX_AB_FORWARD;

	memset(&of, 0, sizeof(of));
	of.write_access = px_open_write_access(o);
	of.write_through = (o->create_options & FILE_WRITE_THROUGH) != 0;
	/* a directory handle: the server refuses writes on it */
	if (o->is_dir)
		return PX_AB_FORWARD;
	of.write_caching = px_open_write_caching(o);
	/* set by this or another open's LOCK, or inherited at CREATE from
	 * opens of the same file holding locks (coherence.c) */
	of.locked = o->locked;
	of.breaking = o->breaking;
	/* where the server may expire the session unseen, a flush keeps
	 * back the ids to send it again (px_wb_expiry_unseen): only writes
	 * of half a credit's worth or less leave that many spare (two ids
	 * donated at least for each one their data takes up again) */
	if (px_wb_expiry_unseen(s) && w.length > SMB2_UNIT / 2)
		return PX_AB_FORWARD;
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
	lim = px_wb_coalesce_limit(c, t);
	ab = co_write_decide((enum co_gate)t->policy.write_behind, &of, &wf, lim);
	if (ab != CO_ABSORB || !px_may_act(c, s, t, h, e))
		return PX_AB_FORWARD;
	/* the ids must be ones the client was granted and has not used,
	 * and the charge what the server demands (MS-SMB2 3.3.5.2.5) */
	if (!px_ids_fresh(c, h, w.length))
		return PX_AB_FORWARD;
	charge = px_large_mtu(c) ? h->credit_charge : 1;

	/* memory: global budget and per-open cap; wait for flushes */
	if (px_stats.wb_bytes_now + w.length > px_glob()->write_behind_memory ||
	    o->wb.len + o->wb_inflight_bytes + w.length >
	    t->policy.write_behind_per_open) {
		if (!px_wb_busy(o) && c->wb_bytes == 0)
			return PX_AB_FORWARD; /* others hold the memory: no wait */
		px_wb_flush_all(c, CO_FLUSH_MEMORY);
		c->stall = PX_STALL_MEMORY;
		c->stall_fid = o->fid;
		c->stall_mem = o->wb_inflight_bytes + o->wb.len;
		return PX_AB_STALL;
	}
	/* another open of the file wrote this range before: its data goes
	 * first, and this write waits until the server has it (found by
	 * wb_twoopens.py: flushed the other way round, the older data
	 * overwrote the newer on the server) */
	if (range_busy_elsewhere(c, o, w.offset, w.length)) {
		px_stats.wb_overlap_waits++;
		px_wb_flush_file(c, o, CO_FLUSH_NONCONTIG);
		c->stall = PX_STALL_OPEN_IDLE;
		c->stall_fid = o->fid;
		return PX_AB_STALL;
	}
	/* not contiguous: send what is buffered first */
	if (!co_extent_fits(&o->wb, w.offset, w.length, lim))
		px_wb_flush_open(c, o, o->wb.len && w.offset == o->wb.off + o->wb.len ?
		    CO_FLUSH_FULL : CO_FLUSH_NONCONTIG);
	/* never let new data race an older write in flight that it
	 * overlaps (smbd may complete writes out of order): wait until
	 * they are acknowledged, whether or not the buffer is empty.  The
	 * hull of the writes in flight answers most writes at once; one
	 * inside it (writes arriving out of order: several threads of a
	 * client writing one file) is checked against each write in flight,
	 * or it would wait a round trip for a race it does not run */
	if (o->wb_inflight > 0 && !(w.offset >= o->wb_inflight_hi ||
	    w.offset + w.length <= o->wb_inflight_lo) &&
	    px_open_writes_overlap(&c->led, o, w.offset, w.length)) {
		px_stats.wb_overlap_waits++;
		px_wb_flush_open(c, o, CO_FLUSH_NONCONTIG);
		c->stall = PX_STALL_OPEN_IDLE;
		c->stall_fid = o->fid;
		px_emit_spend_pool(c, false);
		return PX_AB_STALL;
	}
	/*
	 * A write of the whole coalesce size into an empty buffer would fill
	 * it and be flushed at once as the same WRITE (same file, offset and
	 * data) under the ids it donates: then the client's own message, as
	 * it arrived (its signature verified, or sealed by the client), is
	 * that WRITE, and goes upstream unchanged as the proxy's request
	 * without being re-encoded, re-signed or re-sealed.  Its ids never
	 * enter the pool (so the answer, which may spend the pool on ECHOs,
	 * cannot take them): the client gets its answer first.
	 */
	/* (not where the server may expire the session unseen: the write is
	 * buffered, so that its flush keeps a copy to send again) */
	direct = o->wb.len == 0 && w.length >= lim && !px_wb_expiry_unseen(s);
	/* a sealed WRITE whose data was not decrypted (relay.c,
	 * sealed_head_only: the coalesce size or more, so the buffer was
	 * flushed above) cannot be buffered; should one come here, it goes
	 * upstream as the client sealed it */
	if (!direct && c->cur_partial) {
		log_warnx("conn=%llu share=%s file=%s sealed WRITE of %u bytes "
		    "at %llu not decrypted: forwarded, not absorbed",
		    (unsigned long long)c->id, px_tree_share(c, o), o->name,
		    w.length, (unsigned long long)w.offset);
		return PX_AB_FORWARD;
	}
	if (!direct && co_pool_add(&c->led.pool, h->message_id, charge) == -1) {
		px_wb_flush_all(c, CO_FLUSH_POOL);
		return PX_AB_FORWARD;
	}
	if (!direct && co_extent_append(&o->wb, w.offset, w.data, w.length,
	    px_now_ms()) == -1)
		return PX_AB_FAIL;
	px_open_busy_sync(&c->led, o);
	/* ids beyond what the data needs may fund a break acknowledgement
	 * reserve (DESIGN.md section 3: data first, then the reserve) */
	if (!c->led.rsv.held)
		(void)px_emit_tend_reserve(c);
	if (!direct && o->wb.len == w.length)
		px_relay_ops->arm_timer(c);
	wb_account(c, (int64_t)w.length);
	co_client_sent(&c->led.cr, h->message_id, charge, h->credit);
	c->absorbed++;
	px_stats.writes_absorbed++;
	px_stats.bytes_absorbed += w.length;
	if (o->share_stats) {
		o->share_stats->writes_absorbed++;
		o->share_stats->bytes_absorbed += w.length;
	}
	px_stats.pool_ids_now = c->led.pool.count;
	/* direct: in flight from here on, so that whatever fails after the
	 * answer is logged as lost when the connection goes (px_wb_free) */
	if (direct && wb_write_sent(c, o, h->message_id, (uint16_t)charge,
	    w.offset, w.length) == NULL) {
		wb_account(c, -(int64_t)w.length);
		return PX_AB_FAIL;
	}
	if (px_wb_answer_status(c, h, NT_STATUS_SUCCESS, w.length) == -1)
		return PX_AB_FAIL;
	if (direct) {
		px_stats.flushes[CO_FLUSH_FULL]++;
		if (px_relay_ops->send_frame(c, PX_SERVER, frame, flen) == -1)
			return PX_AB_FAIL;
	}
	if (!direct && o->wb.len >= lim)
		px_wb_flush_open(c, o, CO_FLUSH_FULL);
	if (co_pool_over_bound(&c->led.pool, c->led.cr.client_next,
	    c->led.window))
		px_wb_flush_all(c, CO_FLUSH_POOL);
	return PX_AB_DONE;
}

/*
 * A flush of a session the server may expire unseen (px_wb_expiry_unseen)
 * was refused with STATUS_NETWORK_SESSION_EXPIRED: keep its data, and the
 * ids kept back for it, to send it again once the client has
 * re-authenticated (px_wb_expiry_seen).  The client is told of nothing:
 * its next request is refused by the server too, it re-authenticates and
 * sends that again (MS-SMB2 3.2.5.1.6), and smbaccel writes what was
 * refused before anything later.  A request of the connection waiting for
 * the flush is looked at again (px_wb_only_held): one the server refuses
 * in an expired session goes up, a CLOSE or LOCK of the file is answered
 * the expiry (px_wb_expired_answer), and anything else that needs the
 * data written finds it lost (wb_lose_held).  Not kept when the open is
 * going, or when the data does not follow what is kept already: then it
 * is lost and reported as before.
 */
static bool
wb_keep_refused(struct px_conn *c, struct px_open *o, struct px_pending *p)
{
	struct px_session *s;
	uint32_t n = p->u.io.length;

	/* a client that has gone can never re-authenticate */
	if (p->u.io.keep == NULL || o == NULL || o->closed || p->in_compound ||
	    c->client_gone ||
	    (s = px_session_find(&c->led, o->session_id)) == NULL ||
	    !s->srv_expired ||
	    (o->refused.len != 0 &&
	    p->u.io.offset != o->refused.off + o->refused.len) ||
	    co_extent_append(&o->refused, p->u.io.offset, p->u.io.keep, n,
	    px_now_ms()) == -1)
		return false;
	px_open_busy_sync(&c->led, o);
	wb_account(c, (int64_t)n);
	o->refused_ids += p->charge;
	o->wb_keep_ids += p->charge;
	px_stats.expiry_kept_bytes += n;
	log_info("conn=%llu share=%s file=%s offset=%llu length=%u upstream "
	    "write refused: the server expired the session (its Kerberos "
	    "ticket ended while this write was on its way); kept, to be "
	    "written again once the client re-authenticates",
	    (unsigned long long)c->id, px_tree_share(c, o),
	    o->name ? o->name : "?", (unsigned long long)p->u.io.offset, n);
	return true;
}

void
px_wb_write_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p)
{
	/* the open may have gone (session or tree torn down server-side) */
	struct px_open *o = px_pending_open(&c->led, p);
	struct px_session *s;
	const char *why;
	uint32_t st;

	wb_account(c, -(int64_t)p->u.io.length);
	if (o) {
		o->wb_inflight--;
		o->wb_inflight_bytes -= p->u.io.length;
		if (p->u.io.keep != NULL)
			o->wb_keep_ids -= p->charge;
		px_open_busy_sync(&c->led, o);
	}
	if (h->status == NT_STATUS_SUCCESS) {
		struct smb2_write_rsp wr;

		if (px_smb2_write_rsp_decode(e, &wr) == 0 &&
		    wr.count == p->u.io.length) {
			/* the ids kept back for it may go */
			if (p->u.io.keep != NULL)
				px_emit_spend_pool(c, false);
			return;
		}
	}
	if (h->status == NT_STATUS_NETWORK_SESSION_EXPIRED &&
	    wb_keep_refused(c, o, p))
		return;
	wb_count_lost(p->u.io.share_stats, p->u.io.length);
	s = px_session_find(&c->led, h->session_id);
	st = h->status == NT_STATUS_SUCCESS ? NT_STATUS_DISK_FULL : h->status;
	if (h->status != NT_STATUS_NETWORK_SESSION_EXPIRED)
		why = "";
	else if (s != NULL && s->keyed && s->kx != NULL && s->kx->tkt_end != 0)
		why = " (the server expired the session before smbaccel "
		    "stopped buffering, kerberos_expiry_margin before the "
		    "ticket's end by the server's clock: a flush took longer "
		    "than the margin, or the server's clock jumped; see "
		    "kerberos_expiry_margin in smbaccel.conf(5))";
	else
		why = " (the server expired the session: its Kerberos ticket "
		    "ended while this write was on its way; without the "
		    "server's keytab smbaccel cannot know when a ticket ends, "
		    "see keytab in smbaccel.conf(5))";
	st = px_wb_loss_status(st);
	log_warnx("conn=%llu share=%s file=%s offset=%llu length=%u upstream "
	    "write failed status=0x%08x: acknowledged data lost, error "
	    "0x%08x %s%s", (unsigned long long)c->id,
	    o ? px_tree_share(c, o) : "?", o && o->name ? o->name : "?",
	    (unsigned long long)p->u.io.offset, p->u.io.length,
	    h->status == NT_STATUS_SUCCESS ? NT_STATUS_DISK_FULL : h->status,
	    st, p->in_compound && p->with_cmd == SMB2_CLOSE ?
	    "reported on the CLOSE it was sent with" :
	    p->in_compound && p->with_cmd == SMB2_FLUSH ?
	    "reported on the FLUSH it was sent with" :
	    "deferred to the next WRITE, FLUSH, SET_INFO or CLOSE", why);
	if (o && !o->failed_status)
		o->failed_status = st;
}

/*
 * The client has re-authenticated: what the server refused (o->refused)
 * goes back under o's buffer, older than anything absorbed since, and is
 * written with it as the timer comes due (it is as old as it is, so at
 * once); the ids kept back for it are in the pool.  Should it not join
 * the buffer (the client wrote elsewhere since), it is written on its
 * own now.
 */
static void
wb_resend_refused(struct px_conn *c, struct px_open *o)
{
	uint64_t off;
	size_t len;
	uint8_t *data;
	int r;

	log_info("conn=%llu share=%s file=%s offset=%llu length=%zu refused "
	    "at the session's expiry: written again", (unsigned long long)c->id,
	    px_tree_share(c, o), o->name ? o->name : "?",
	    (unsigned long long)o->refused.off, o->refused.len);
	px_stats.expiry_resent_bytes += o->refused.len;
	o->wb_keep_ids -= o->refused_ids;
	o->refused_ids = 0;
	r = co_extent_merge_under(&o->wb, o->refused.off, o->refused.data,
	    o->refused.len, o->refused.first_ms);
	if (r == 0) {
		co_extent_free(&o->refused);
		co_extent_init(&o->refused);
		px_open_busy_sync(&c->led, o);
		return;
	}
	data = co_extent_take(&o->refused, &off, &len);
	if (r == 1) {
		px_stats.flushes[CO_FLUSH_EXPIRY]++;
		wb_send(c, o, off, data, len);
		return;
	}
	log_warnx("conn=%llu out of memory writing again share=%s file=%s "
	    "offset=%llu length=%zu: data lost", (unsigned long long)c->id,
	    px_tree_share(c, o), o->name ? o->name : "?",
	    (unsigned long long)off, len);
	wb_lost(c, o, len, NT_STATUS_LOST_WRITEBEHIND_DATA);
	free(data);
	px_open_busy_sync(&c->led, o);
}

/* s is acted on again: what the server refused is written again, and
 * the timer writes what was held. */
static void
wb_resume(struct px_conn *c, const struct px_session *s)
{
	struct px_open *o;

	for (o = c->led.opens; o; o = o->next)
		if (o->session_id == s->id && o->refused.len)
			wb_resend_refused(c, o);
	px_relay_ops->arm_timer(c);
}

void
px_wb_expiry_seen(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p, bool interim)
{
	struct px_session *s;

	if (p == NULL || interim || p->command != h->command ||
	    (s = px_session_find(&c->led, h->session_id)) == NULL ||
	    !s->established)
		return;
	if (h->command == SMB2_SESSION_SETUP) {
		/* a client gone mid-exchange never sends the next leg */
		if (h->status != NT_STATUS_MORE_PROCESSING_REQUIRED ||
		    c->client_gone)
			s->srv_reauth = false;

		if (h->status != NT_STATUS_SUCCESS && s->srv_expired &&
		    !s->srv_reauth && c->state == PX_CONN_DRAINING) {
			/* the client has gone and its re-authentication
			 * failed: what is held can never be written, and the
			 * drain would wait for it for ever */
			struct px_open *o;

			for (o = c->led.opens; o; o = o->next)
				if (o->session_id == s->id)
					px_wb_flush_open(c, o, CO_FLUSH_DISCONNECT);
			return;
		}
		if (h->status != NT_STATUS_SUCCESS || !s->srv_expired)
			return;
		s->srv_expired = false;
		log_info("conn=%llu session=0x%llx re-authenticated after the "
		    "server expired it: acted on again, what was held is "
		    "flushed", (unsigned long long)c->id,
		    (unsigned long long)s->id);
		wb_resume(c, s);
		return;
	}
	/* an answer that shows the session alive after all (a request the
	 * server refuses in an expired session, sent after smbaccel saw the
	 * expiry, answered): not expired */
	if (s->srv_expired && h->status == NT_STATUS_SUCCESS &&
	    p->expiry_gen == c->led.expiry_gen &&
	    h->command != SMB2_CLOSE && h->command != SMB2_LOCK &&
	    h->command != SMB2_LOGOFF && h->command != SMB2_ECHO &&
	    h->command != SMB2_NEGOTIATE && h->command != SMB2_CANCEL) {
		s->srv_expired = false;
		s->srv_reauth = false;
		log_warnx("conn=%llu session=0x%llx the server answered a %s of "
		    "it: not expired after all, acted on again",
		    (unsigned long long)c->id, (unsigned long long)s->id,
		    px_smb2_cmd_name(h->command));
		wb_resume(c, s);
		return;
	}
	if (h->status != NT_STATUS_NETWORK_SESSION_EXPIRED || s->srv_expired)
		return;
	s->srv_expired = true;
	c->led.expiry_gen++;
	px_stats.sessions_server_expired++;
	log_info("conn=%llu session=0x%llx the server expired the session "
	    "(STATUS_NETWORK_SESSION_EXPIRED to a %s): not acted on, its "
	    "buffered writes held, until the client re-authenticates",
	    (unsigned long long)c->id, (unsigned long long)s->id,
	    px_smb2_cmd_name(h->command));
}

/* ---- timers and teardown ------------------------------------------------------- */

double
px_wb_timer(struct px_conn *c, double now_ms)
{
	struct px_open *o;
	double next = 0;
	bool flushed = false;

	for (o = c->led.opens; o; o = o->next) {
		struct px_tree *t;
		struct px_session *s;
		double idle, age, due, exp = 0;

		if (o->wb.len == 0)
			continue;
		t = px_tree_find(&c->led, o->session_id, o->tree_id);
		idle = o->wb.last_ms + (t ? t->policy.flush_idle_ms : 200);
		age = o->wb.first_ms + (t ? t->policy.flush_max_age_ms : 2000);
		s = px_session_find(&c->led, o->session_id);
		/* expired by the server: every WRITE would be refused until
		 * the client re-authenticates, which re-arms this timer
		 * (px_wb_expiry_seen) */
		if (s != NULL && s->srv_expired)
			continue;
		/* a Kerberos ticket about to end: nothing may stay buffered
		 * past the margin, whatever flush_idle and flush_max_age say */
		if (s != NULL && px_keyed_expiring(c, s)) {
			px_wb_flush_open(c, o, CO_FLUSH_EXPIRY);
			flushed = true;
			continue;
		}
		if (s != NULL)
			exp = px_keyed_expiry_ms(c, s, now_ms);
		if (now_ms >= idle || now_ms >= age) {
			px_wb_flush_open(c, o, now_ms >= idle ? CO_FLUSH_IDLE :
			    CO_FLUSH_AGE);
			flushed = true;
			continue;
		}
		due = idle < age ? idle : age;
		if (exp != 0 && exp < due)
			due = exp;
		if (next == 0 || due < next)
			next = due;
	}
	if (flushed)
		px_emit_spend_pool(c, false);
	return next;
}

void
px_wb_free(struct px_conn *c)
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
			    (unsigned long long)c->id, px_tree_share(c, o), o->name,
			    (unsigned long long)o->wb_inflight_lo,
			    (unsigned long long)(o->wb_inflight_hi -
			    o->wb_inflight_lo),
			    (unsigned long long)o->wb_inflight_lo,
			    (unsigned long long)o->wb_inflight_hi);
		if (o->refused.len)
			log_warnx("conn=%llu share=%s file=%s offset=%llu "
			    "length=%zu closed with write-behind data the "
			    "server refused at the session's expiry, not yet "
			    "written again", (unsigned long long)c->id,
			    px_tree_share(c, o), o->name,
			    (unsigned long long)o->refused.off,
			    o->refused.len);
		if (o->wb.len)
			log_warnx("conn=%llu share=%s file=%s offset=%llu "
			    "length=%zu closed with write-behind data not "
			    "acknowledged by the server",
			    (unsigned long long)c->id, px_tree_share(c, o), o->name,
			    (unsigned long long)o->wb.off, o->wb.len);
		if (o->share_stats)
			o->share_stats->lost_bytes += o->wb_inflight_bytes +
			    o->refused.len + o->wb.len;
	}
	/* everything the connection still accounts, including writes in
	 * flight of an open already gone (a server that answered a CLOSE
	 * before the WRITEs compounded with it) */
	px_stats.lost_bytes += c->wb_bytes;
	if (c->wb_bytes)
		wb_account(c, -(int64_t)c->wb_bytes);
}
