/*
 * readahead.c - read-ahead glue (DESIGN.md section 5) over the pure chunk
 * cache of coalesce/readahead.c.
 *
 * Owns: the read gate (read_ahead = leased | always | off), which READs
 * may be served from an open's cache, the widening of a first small
 * sequential read within its credit charge (its answer cut back to what
 * the client asked, re-signed or re-sealed in keyed sessions), the
 * pipelined multi-credit fetches ahead of a sequential reader paid with
 * the ids of the reads it served, and the arrival of those fetches.
 * Random readers, and any reader of a file with a valid cached copy, are
 * the document cache's (doccache.c), asked first.  Buffered writes of the
 * same file always go first (writebehind.c).
 *
 * Also owns the answer to a widened READ (of either cache) that failed:
 * the error may be about bytes the client never asked for (another
 * client's byte-range lock in the rest of the chunk), and the client's
 * own message id went with the widened READ (DESIGN.md section 3: never
 * renumbered, never reused).  So the client's READ is asked again as it
 * came, with pooled ids, and the client is answered from that, under the
 * widened answer's header (its grant, its async id).
 * Without a pooled id (a connection's first widened READ) the server's
 * answer goes on as it came, and a FILE_LOCK_CONFLICT stops caching and
 * widening for the file (ra_lock_seen).  What a client's answer needs
 * meanwhile is kept by doccache.c (struct px_dc_retry).
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/readahead.h"
#include "proxy/doccache.h"
#include "proxy/writebehind.h"
#include "proxy/alter.h"
#include "proxy/emit.h"

#define RA_CHUNK_MAX (1024 * 1024)   /* largest read-ahead READ */
#define RA_WIDEN     (64 * 1024)     /* a first sequential read grows to */
#define ST_FILE_LOCK_CONFLICT 0xC0000054u   /* MS-ERREF 2.3.1 */
#define ST_INVALID_HANDLE     0xC0000008u

static void retry_answered(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const struct px_pending *p);
static void ra_lock_seen(struct px_conn *c, struct px_open *o);

static const char *const ra_cause_names[PX_RA_NCAUSES] = {
	"write", "setinfo", "lock", "break", "close", "peer", "random", "error",
};

const char *
px_ra_cause_name(enum px_ra_cause c)
{
	return (unsigned int)c < PX_RA_NCAUSES ? ra_cause_names[c] : "?";
}

/* Drop an open's read cache (data and in-flight fetches). */
void
px_ra_drop(struct px_open *o, enum px_ra_cause why)
{
	/* a break takes the document cache's copy too (under leased the
	 * server breaks before another client may change the file) */
	if (why == PX_RA_BREAK)
		px_dc_open_lost(o, PX_DC_BREAK);
	if (o->ra.chunks == NULL && !o->ra.eof_known && !o->ra.seq)
		return;
	if (o->ra.chunks || o->ra.eof_known)
		px_stats.ra_invalidations[why]++;
	px_stats.ra_bytes_now -= o->ra.bytes;
	co_ra_invalidate(&o->ra);
}

/* Fetch ahead of a sequential reader with donated ids (pipelined). */
static void
ra_plan(struct px_conn *c, struct px_open *o)
{
	struct px_tree *t = px_tree_find(&c->led, o->session_id, o->tree_id);
	const struct px_open *x;

	/* nothing more is fetched on a handle whose CLOSE has gone */
	if (t == NULL || !px_open_read_gate(t, o) || !o->ra.seq || o->breaking ||
	    o->closed || !px_relay_ops->connected(c, PX_SERVER) ||
	    c->state != PX_CONN_RELAY)
		return;
	/* buffered write-behind data has first claim on the ids, and
	 * so has data a session's expiry may refuse (wb_keep_ids) */
	for (x = c->led.opens; x; x = x->next)
		if (x->wb.len || x->wb_keep_ids)
			return;
	/* a fetch must not overtake a write of the same file still in
	 * flight: smbd may complete them in any order, and the cache would
	 * keep what the file held before the write */
	if (!px_wb_file_idle(c, o))
		return;
	/* a break acknowledgement's id comes before read-ahead's */
	(void)px_emit_tend_reserve(c);
	for (;;) {
		uint64_t run = co_pool_first_run(&c->led.pool), lo, off;
		uint64_t budget = px_glob()->read_ahead_memory;
		uint64_t unit, mem_left;
		uint32_t len;
		struct px_pending *p;

		if (run == 0)
			return;
		if (px_large_mtu(c))
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
		/* nor while a change of the file may still land (another
		 * connection's forwarded WRITE, SET_INFO or IOCTL: smbd may
		 * complete this READ first); asked only when there is
		 * something to fetch */
		if (px_dc_changing(c, o))
			return;
		/* the chunk is recorded before its READ leaves, so a fetch
		 * is never in flight for a range the cache does not know */
		if (co_ra_add(&o->ra, off, len) == NULL) {
			log_warnx("conn=%llu read-ahead: out of memory for a "
			    "chunk, not fetching", (unsigned long long)c->id);
			return;
		}
		px_stats.ra_bytes_now += len;
		run = co_pool_take_run(&c->led.pool, px_large_mtu(c) ? 0xFFFF : 1,
		    &lo);
		p = px_emit_read(c, o, lo, px_large_mtu(c) ? (uint16_t)run : 1,
		    off, len);
		if (p == NULL) {
			/* nothing will fill the chunk: drop the cache (no read
			 * can be waiting for a chunk made just now) */
			px_ra_drop(o, PX_RA_ERROR);
			log_warnx("conn=%llu read-ahead request failed, cache "
			    "dropped", (unsigned long long)c->id);
			return;
		}
		p->u.io.gen = o->ra.gen;
		px_stats.ra_fetches++;
		px_stats.ra_fetch_bytes += len;
		px_stats.pool_ids_now = c->led.pool.count;
	}
}

/*
 * A standalone READ: serve it from the read-ahead cache, make it wait for a
 * fetch in flight, widen it, or forward it.
 */
enum px_absorb
px_ra_read(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const uint8_t *msg, size_t mlen)
{
	struct smb2_read_req r;
	struct px_session *s;
	struct px_tree *t;
	struct px_open *o;
	enum co_ra_look look;
	uint64_t charge;

	if (px_smb2_read_req_decode(e, &r) == -1)
		return PX_AB_FORWARD;
	if ((o = px_open_find(&c->led, &r.file_id)) == NULL ||
	    o->session_id != h->session_id || o->tree_id != h->tree_id ||
	    o->closed)
		return PX_AB_FORWARD;
	/* a byte-range lock on the file (this open or another through this
	 * smbaccel): the server decides every read, LOCK_CONFLICT included,
	 * whatever lease or oplock protects the data */
	if (o->locked) {
		px_ra_drop(o, PX_RA_LOCK);
		return PX_AB_FORWARD;
	}
	s = px_session_find(&c->led, h->session_id);
	t = px_tree_find(&c->led, h->session_id, h->tree_id);
	if (s == NULL || t == NULL || !s->established || !px_open_read_gate(t, o) ||
	    !px_may_act(c, s, t, h, e) ||
	    (r.flags & SMB2_READFLAG_READ_UNBUFFERED) || r.channel != 0 ||
	    r.length == 0 || !px_open_read_access(o) || o->breaking ||
	    !c->led.negotiated || c->led.max_read == 0 ||
	    r.length > c->led.max_read || r.length > RA_CHUNK_MAX * 16) {
		px_ra_drop(o, PX_RA_RANDOM);
		return PX_AB_FORWARD;
	}
	/* buffered writes first (the generic path flushes and waits) */
	if (!px_wb_file_idle(c, o))
		return PX_AB_FORWARD;
	if (!px_ids_fresh(c, h, r.length))
		return PX_AB_FORWARD;
	charge = px_large_mtu(c) ? h->credit_charge : 1;

	/* random readers and files with a cached copy: the document cache */
	{
		bool mine;
		enum px_absorb ar = px_dc_read(c, h, e, msg, mlen, s, t, o, &r,
		    &mine);

		if (mine) {
			if (o->ra.chunks)
				px_ra_drop(o, PX_RA_RANDOM);
			return ar;
		}
	}

	look = co_ra_lookup(&o->ra, r.offset, r.length);
	if (look == CO_RA_WAIT) {
		c->stall = PX_STALL_READ;
		c->stall_fid = o->fid;
		c->stall_off = r.offset;
		c->stall_len = r.length;
		px_stats.ra_waits++;
		return PX_AB_STALL;
	}
	if (look == CO_RA_HIT) {
		uint8_t *buf = malloc(r.length ? r.length : 1);
		uint32_t n, st;
		uint64_t before;
		int rc;

		if (buf == NULL)
			return PX_AB_FAIL;
		if (co_pool_add(&c->led.pool, h->message_id, charge) == -1) {
			free(buf);
			px_emit_spend_pool(c, false);
			return PX_AB_FORWARD;
		}
		before = o->ra.bytes;
		co_ra_serve(&o->ra, r.offset, r.length, r.minimum_count, buf, &n,
		    &st);
		px_stats.ra_bytes_now -= before - o->ra.bytes;
		rc = px_wb_answer_read(c, h, charge, st, buf, n);
		free(buf);
		if (rc == -1)
			return PX_AB_FAIL;
		px_stats.ra_hits++;
		px_stats.ra_served_bytes += n;
		if (o->share_stats)
			o->share_stats->ra_served_bytes += n;
		ra_plan(c, o);
		if (co_pool_over_bound(&c->led.pool, c->led.cr.client_next,
		    c->led.window))
			px_emit_spend_pool(c, false);
		return PX_AB_DONE;
	}
	/* a miss: a read outside what was fetched means random access */
	if (o->ra.chunks)
		px_ra_drop(o, PX_RA_RANDOM);
	co_ra_note_read(&o->ra, r.offset, r.length);
	if (o->ra.seq && r.length < RA_WIDEN &&
	    (!c->led.max_read || c->led.max_read >= RA_WIDEN) &&
	    px_may_rewrite(c, s) && !px_dc_changing(c, o)) {
		/* widen a small sequential read within its credit charge
		 * (one credit pays for 64 KiB); the answer is cut back to
		 * what the client asked for */
		uint8_t *copy = malloc(mlen);
		struct px_pending *p;
		struct smb2_fileid related;
		struct px_prot up = c->cur_prot;

		if (copy == NULL)
			return PX_AB_FAIL;
		memcpy(copy, msg, mlen);
		px_put_u32(copy + SMB2_HDR_LEN + 4, RA_WIDEN);        /* Length */
		/* MinimumCount 0: the server's END_OF_FILE then means the
		 * file ends at the offset, and a short answer where it ends;
		 * the client's minimum is applied when the answer is cut
		 * back (MS-SMB2 3.3.5.12) */
		px_put_u32(copy + SMB2_HDR_LEN + 32, 0);
		memset(&related, 0xFF, sizeof(related));
		p = px_ledger_client_request(&c->led, h, e, false, &related);
		/* the rewritten request is re-signed or re-sealed */
		if (p == NULL || co_ra_add(&o->ra, r.offset, RA_WIDEN) == NULL) {
			free(copy);
			return PX_AB_FAIL;
		}
		/* counted with the chunk: the open's end takes o->ra.bytes
		 * off the gauge whatever became of the READ (the gauge must
		 * not wrap, or read-ahead stops daemon-wide) */
		px_stats.ra_bytes_now += RA_WIDEN;
		if (px_emit_protected(c, PX_SERVER, &up, copy, mlen) == -1) {
			free(copy);
			return PX_AB_FAIL;
		}
		free(copy);
		p->u.io.prot_sign = up.sign;
		p->u.io.prot_encrypt = up.encrypt;
		p->u.io.widened = true;
		p->u.io.offset = r.offset;
		p->u.io.length = RA_WIDEN;
		p->u.io.client_len = r.length;
		p->u.io.client_off = r.offset;
		p->u.io.client_min = r.minimum_count;
		p->u.io.open = o;
		p->u.io.open_serial = o->serial;
		p->u.io.gen = o->ra.gen;
		px_stats.requests[SMB2_READ]++;
		px_stats.ra_widened++;
		return PX_AB_DONE;
	}
	return PX_AB_FORWARD;
}

/* A read-ahead fetch answered. */
static void
ra_arrived(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p)
{
	struct px_open *o = px_pending_open(&c->led, p);
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
	if (h->status == ST_FILE_LOCK_CONFLICT)
		ra_lock_seen(c, o);
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

bool
px_ra_read_waits(struct px_conn *c, const struct smb2_fileid *fid,
    uint64_t off, uint32_t len)
{
	struct px_open *o = px_open_find(&c->led, fid);

	return o != NULL && (co_ra_lookup(&o->ra, off, len) == CO_RA_WAIT ||
	    px_dc_read_waits(o, off, len));
}

void
px_ra_fetch_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p)
{
	struct px_open *o;

	if (p->u.io.widened) {
		retry_answered(c, h, e, p);
		return;
	}
	if (p->u.io.doc) {
		px_dc_fetch_done(c, h, e, p);
		if (h->status == ST_FILE_LOCK_CONFLICT &&
		    (o = px_pending_open(&c->led, p)) != NULL)
			ra_lock_seen(c, o);
		return;
	}

	ra_arrived(c, h, e, p);
	if ((o = px_pending_open(&c->led, p)) != NULL)
		ra_plan(c, o);
}

/* Errors that do not depend on the range read: the client's own READ
 * would have had them too. */
static bool
range_independent(uint32_t st)
{
	switch (st) {
	case NT_STATUS_CANCELLED:           /* the client cancelled it */
	case NT_STATUS_FILE_CLOSED:
	case ST_INVALID_HANDLE:
	case NT_STATUS_ACCESS_DENIED:
	case NT_STATUS_NETWORK_SESSION_EXPIRED:
	case NT_STATUS_USER_SESSION_DELETED:
	case NT_STATUS_NETWORK_NAME_DELETED:
		return true;
	default:
		return false;
	}
}

/* The server refused one of smbaccel's READs on o for a lock it did not
 * see: o is treated as locked (as for a LOCK seen on it, coherence.c):
 * its reads go to the server as they come, no write of it is absorbed,
 * and its caches go. */
static void
ra_lock_seen(struct px_conn *c, struct px_open *o)
{
	if (o->locked)
		return;
	log_info("conn=%llu share=%s file=%s the server refused a READ of "
	    "smbaccel's for a byte-range lock it did not see taken: the "
	    "file's reads are no longer cached or widened on this open",
	    (unsigned long long)c->id, px_tree_share(c, o),
	    o->name ? o->name : "?");
	px_open_lock(&c->led, o);
	px_ra_drop(o, PX_RA_LOCK);
	px_dc_open_lost(o, PX_DC_LOCK);
}

/*
 * Widened READ p failed with neither SUCCESS nor END_OF_FILE (answer h,
 * e): give the caches their chunks back and, where the error may be
 * about bytes the client did not ask for, ask for the client's READ again
 * with pooled ids; the answer to the client waits for that one's
 * (*replaced: nothing is forwarded now).
 */
static int
widened_failed(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p,
    const struct px_prot *prot, bool *replaced)
{
	struct px_open *o = px_pending_open(&c->led, p);
	uint64_t charge = 1, lo;
	struct px_pending *q;
	struct px_dc_retry *r;

	if (p->u.io.doc)
		px_dc_widened_data(c, p, h->status, NULL, 0);
	else if (o)
		px_ra_drop(o, PX_RA_ERROR);
	if (o && h->status == ST_FILE_LOCK_CONFLICT)
		ra_lock_seen(c, o);
	if (o == NULL || o->closed || range_independent(h->status) ||
	    (p->u.io.offset == p->u.io.client_off &&
	    p->u.io.length == p->u.io.client_len) ||
	    c->state != PX_CONN_RELAY || !px_relay_ops->connected(c, PX_SERVER))
		return 0;
	/* an answer the server signed where smbaccel holds no key cannot be
	 * replaced; the client accepts it as it is */
	if (prot->sign && !px_session_keyed(c, h->session_id))
		return 0;
	if (px_large_mtu(c) && p->u.io.client_len > SMB2_UNIT)
		charge = (p->u.io.client_len - 1) / SMB2_UNIT + 1;
	/* buffered data has first claim on the pool, as everywhere: its
	 * flush must not find its ids spent on this */
	if (co_pool_first_run(&c->led.pool) < charge ||
	    c->led.pool.count < px_emit_data_ids(c) + charge) {
		log_info("conn=%llu share=%s file=%s a READ widened to %u bytes "
		    "at %llu failed (0x%08x), and no pooled id can pay for the "
		    "client's %u bytes at %llu alone: the server's answer is "
		    "passed on", (unsigned long long)c->id, px_tree_share(c, o),
		    o->name ? o->name : "?", p->u.io.length,
		    (unsigned long long)p->u.io.offset, h->status,
		    p->u.io.client_len, (unsigned long long)p->u.io.client_off);
		return 0;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return 0;
	(void)co_pool_take_run(&c->led.pool, charge, &lo);
	px_stats.pool_ids_now = c->led.pool.count;
	if ((q = px_emit_read(c, o, lo, (uint16_t)charge, p->u.io.client_off,
	    p->u.io.client_len)) == NULL) {
		free(r);
		return -1;
	}
	q->u.io.widened = true;         /* a proxy READ: this kind */
	q->u.io.client_off = p->u.io.client_off;
	q->u.io.client_len = p->u.io.client_len;
	q->u.io.client_min = p->u.io.client_min;
	r->c = c;
	r->mid = lo;
	r->h = *h;
	memcpy(r->hdr, e->hdr, SMB2_HDR_LEN);
	r->prot = *prot;
	r->client_len = p->u.io.client_len;
	r->client_min = p->u.io.client_min;
	px_dc_retry_add(r);
	*replaced = true;
	log_info("conn=%llu share=%s file=%s a READ widened to %u bytes at "
	    "%llu failed (0x%08x): the client's %u bytes at %llu asked again "
	    "(mid %llu)", (unsigned long long)c->id, px_tree_share(c, o),
	    o->name ? o->name : "?", p->u.io.length,
	    (unsigned long long)p->u.io.offset, h->status, p->u.io.client_len,
	    (unsigned long long)p->u.io.client_off, (unsigned long long)lo);
	return 0;
}

/* The READ asked again for a client (p, answer h and e): the client's
 * answer, under the widened READ's header. */
static void
retry_answered(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const struct px_pending *p)
{
	struct px_dc_retry *r = px_dc_retry_take(c, p->mid);
	struct smb2_read_rsp rr;
	struct smb2_hdr rq;
	const uint8_t *data = NULL;
	uint32_t st = h->status, n = 0;
	struct px_open *o;
	uint8_t *msg;
	size_t mlen;

	if (r == NULL)
		return;
	if (st == NT_STATUS_SUCCESS) {
		if (px_smb2_read_rsp_decode(e, &rr) == 0) {
			data = rr.data;
			n = rr.data_len < r->client_len ? rr.data_len :
			    r->client_len;
			/* MS-SMB2 3.3.5.12: it went with MinimumCount 0 */
			if (n == 0 || n < r->client_min)
				st = NT_STATUS_END_OF_FILE;
		} else
			st = NT_STATUS_UNEXPECTED_IO_ERROR;
	}
	if (st == ST_FILE_LOCK_CONFLICT &&
	    (o = px_pending_open(&c->led, p)) != NULL)
		ra_lock_seen(c, o);
	rq = r->h;
	msg = px_emit_read_rsp(&rq, r->h.credit, st, data,
	    st == NT_STATUS_SUCCESS ? n : 0, &mlen);
	if (msg == NULL) {
		free(r);
		(void)px_relay_fail(c, PX_CLOSE_NO_MEMORY);
		return;
	}
	/* keep the server's header fields (flags, async id, grant, ...) */
	memcpy(msg, r->hdr, SMB2_HDR_LEN);
	px_put_u32(msg + 8, st);
	px_put_u32(msg + 20, 0);        /* NextCommand */
	if (px_emit_protected(c, PX_CLIENT, &r->prot, msg, mlen) == -1)
		(void)px_relay_fail(c, PX_CLOSE_NO_MEMORY);
	free(msg);
	free(r);
}

int
px_ra_widened_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p,
    const struct px_prot *prot, bool *replaced)
{
	struct px_open *o = px_pending_open(&c->led, p);
	struct smb2_read_rsp rr;
	struct smb2_hdr rq;
	uint32_t n, st;
	uint8_t *msg;
	size_t mlen;
	int rc;

	uint64_t skip;

	*replaced = false;
	if (h->status != NT_STATUS_SUCCESS && h->status != NT_STATUS_END_OF_FILE)
		return widened_failed(c, h, e, p, prot, replaced);
	if (p->u.io.doc && (h->status != NT_STATUS_SUCCESS ||
	    px_smb2_read_rsp_decode(e, &rr) == -1)) {
		/* END_OF_FILE where the copy expects bytes (the file shrank;
		 * with MinimumCount 0 the chunk, and so the client's read,
		 * starts at or past the end), or an answer that does not
		 * decode: the client gets the server's answer as it came */
		px_dc_widened_data(c, p, h->status == NT_STATUS_SUCCESS ?
		    NT_STATUS_INVALID_PARAMETER : h->status, NULL, 0);
		return 0;
	}
	if (p->u.io.doc)
		o = NULL;       /* the copy is fed below, not the open's cache */
	else if (h->status == NT_STATUS_END_OF_FILE) {
		if (o) {
			uint64_t before = o->ra.bytes;

			(void)co_ra_arrive(&o->ra, p->u.io.gen, p->u.io.offset,
			    true, NULL, 0);
			px_stats.ra_bytes_now -= before - o->ra.bytes;
		}
		return 0;
	}
	if (!p->u.io.doc && (h->status != NT_STATUS_SUCCESS ||
	    px_smb2_read_rsp_decode(e, &rr) == -1)) {
		if (o)
			px_ra_drop(o, PX_RA_ERROR);
		return 0;   /* forwarded as it came */
	}
	if (prot->sign && !px_session_keyed(c, h->session_id)) {
		/* cannot be cut back: the connection goes, and the chunks
		 * this READ was to bring are absent again, or readers of the
		 * copy on other connections would wait for them */
		if (p->u.io.doc)
			px_dc_widened_data(c, p, NT_STATUS_INVALID_PARAMETER,
			    NULL, 0);
		else if (o)
			px_ra_drop(o, PX_RA_ERROR);
		return px_alter_signed_answer(c, h);
	}
	if (p->u.io.doc)
		px_dc_widened_data(c, p, NT_STATUS_SUCCESS, rr.data, rr.data_len);
	else if (o) {
		uint64_t before = o->ra.bytes;

		(void)co_ra_arrive(&o->ra, p->u.io.gen, p->u.io.offset, true,
		    rr.data, rr.data_len);
		px_stats.ra_bytes_now -= before - o->ra.bytes;
	}
	/* what the client asked for: from client_off (the widened read may
	 * start before it, at its chunk) */
	skip = p->u.io.client_off - p->u.io.offset;
	if (skip > rr.data_len)
		skip = rr.data_len;
	n = rr.data_len - (uint32_t)skip < p->u.io.client_len ?
	    rr.data_len - (uint32_t)skip : p->u.io.client_len;
	st = (n == 0 || n < p->u.io.client_min) ? NT_STATUS_END_OF_FILE :
	    NT_STATUS_SUCCESS;
	rq = *h;
	msg = px_emit_read_rsp(&rq, h->credit, st, rr.data + skip,
	    st ? 0 : n, &mlen);
	if (msg == NULL)
		return -1;
	/* keep the server's header fields (flags, async id, ...) */
	memcpy(msg, e->hdr, SMB2_HDR_LEN);
	px_put_u32(msg + 8, st);
	px_put_u32(msg + 20, 0);          /* NextCommand */
	rc = px_emit_protected(c, PX_CLIENT, prot, msg, mlen);
	free(msg);
	*replaced = true;
	return rc;
}
