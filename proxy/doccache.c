/*
 * doccache.c - document-cache glue (DESIGN.md section 5a) over the pure
 * cache of coalesce/doccache.c and the on-disk store of docstore.c.
 *
 * Owns: which opens a cached copy may serve (the read gate of
 * read_ahead, read_cache, read_cache_file_max, and the CREATE answer's
 * CreationTime, LastWriteTime, ChangeTime and EndOfFile against those the
 * copy was fetched under: close-to-open consistency, but only for an open
 * whose answer proves that no other handle of the file was open, see
 * dc_proven), the start of a copy
 * for a random reader, the reads it answers, the misses it widens to whole
 * chunks within their own credit charge, the fetches of the rest of the
 * file paid with pooled ids, their arrival, and every reason a copy is
 * dropped.  Buffered writes of the same file always go first
 * (writebehind.c).
 *
 * Funding (DESIGN.md section 3): a READ answered from a copy donates its
 * ids, and each id pays for one more 64 KiB chunk; a miss is widened
 * within its own charge.  So a random reader on a fresh connection
 * bootstraps the fetch of its file one chunk per read.  A connection
 * that reads documents also keeps pooled ids back from ECHOs for
 * DC_KEEP_MS after its last such read (emit.c), within the hoard bound,
 * so the first read of its next document starts as many fetches at once
 * as it holds ids; once unused they are spent (px_dc_timer).
 *
 * When the fetches go: the ids a served read donates are held for up to
 * DC_HOLD_MS, and sent at the reader's next miss, right behind its widened
 * READ, or when the hold ends.  A reader is served from the copy in well
 * under a millisecond, so a run of hits would otherwise put one 64 KiB
 * answer per hit on the link (5 ms each at 100 Mbit/s) ahead of the miss
 * that ends the run, and the reader, who waits for that miss, would wait
 * for them too.  Behind the miss they arrive while the reader is busy
 * with the next run.  Each fetch is one chunk, so every chunk is usable
 * as soon as its own answer is in.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>

#include "proxy/doccache.h"
#include "proxy/writebehind.h"
#include "proxy/alter.h"
#include "proxy/emit.h"
#include "proxy/docstore.h"

#define DC_WIDEN_MAX (1024 * 1024)    /* largest widened miss */
#define DC_KEEP_MS   1000.0           /* ids kept after the last read */
#define DC_HOLD_MS   4.0              /* fetches held for the next miss */
#define DC_BUSY_MS   2000             /* a copy read this recently is busy */
#define DC_KEY_MAX   1600
/* Document fetch chunks in flight per connection: enough to fill any
 * link smbaccel is made for, and a bound on what one connection asks of
 * its server at once (the hoard bound alone would allow 512 ids). */
#define DC_INFLIGHT_MAX 128

static struct co_dcache dcache;

static const char *const dc_cause_names[PX_DC_NCAUSES] = {
	"write", "setinfo", "rename", "delete", "overwrite", "break", "lock",
	"stale", "short", "corrupt",
};

const char *
px_dc_cause_name(enum px_dc_cause c)
{
	return (unsigned int)c < PX_DC_NCAUSES ? dc_cause_names[c] : "?";
}

static void
gauges(void)
{
	px_stats.dc_bytes_now = dcache.mem;
	px_stats.dc_entries_now = dcache.nentries;
	px_stats.dc_evicted = dcache.evicted;
}

void
px_dc_start(const struct pol_global *g)
{
	if (co_dc_init(&dcache, g->read_cache_memory) == -1) {
		log_warnx("document cache: no memory: off");
		return;
	}
	if (px_ds_open(g->read_cache_dir, g->read_cache_disk, &dcache) == -1)
		log_warnx("document cache: running without its store");
}

void
px_dc_stop(void)
{
	px_ds_close();
	co_dc_free(&dcache);
	gauges();
}

/* ---- keys, gates ------------------------------------------------------------------ */


/* "server|share|path", share and path folded to lower case (SMB names
 * are case-insensitive; ASCII only), no leading separator, '/' as '\',
 * without a final "::$DATA".  False for a name too long, and for another
 * stream of a file ("doc:s"): only files' data are cached. */
static bool
dc_key(const struct px_conn *c, const char *share, const char *name,
    char *buf, size_t len)
{
	size_t n = strlen(c->dst_str), nl;

	if (n + 1 >= len)
		return false;
	memcpy(buf, c->dst_str, n);
	buf[n++] = '|';
	for (; *share && n + 2 < len; share++)
		buf[n++] = (char)(*share >= 'A' && *share <= 'Z' ? *share + 32 :
		    *share);
	buf[n++] = '|';
	while (*name == '\\' || *name == '/')
		name++;
	nl = px_file_name_len(name);
	if (memchr(name, ':', nl) != NULL)
		return false;
	for (; nl && n + 1 < len; name++, nl--) {
		char ch = *name == '/' ? '\\' : *name;

		buf[n++] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
	}
	if (nl || *share)
		return false;
	buf[n] = '\0';
	return true;
}

/* The read gate (read_ahead) and read_cache, for one open. */
static bool
dc_gate(const struct px_tree *t, const struct px_open *o)
{
	return t->policy.read_cache && !o->is_dir && px_open_read_access(o) &&
	    px_open_read_gate(t, o);
}

/*
 * Does o's CREATE answer prove that no other handle of its file was open
 * when the server answered it?  A write-caching lease or an exclusive or
 * batch oplock (the client's, or smbaccel's own on its behalf), granted
 * and not being broken: the server grants one only to the file's sole
 * open (other opens of the same lease key are this client's, and go
 * through this smbaccel).  Only then do the times in the answer vouch for
 * a copy: smbd keeps LastWriteTime and ChangeTime still while any handle
 * is open (from 2 s after its first write until it closes; Windows defers
 * them too), so a writer still open shows the times of a copy made before
 * its last writes, and a writer gone has moved them when it closed.
 */
static bool
dc_proven(const struct px_open *o)
{
	if (o->breaking || o->pl.breaking)
		return false;
	if (o->pl.kind != PX_PL_NONE && (o->pl.state & SMB2_LEASE_WRITE))
		return true;
	if (o->oplock == SMB2_OPLOCK_LEVEL_LEASE)
		return o->has_lease && (o->lease_state & SMB2_LEASE_WRITE);
	return o->oplock == SMB2_OPLOCK_LEVEL_EXCLUSIVE ||
	    o->oplock == SMB2_OPLOCK_LEVEL_BATCH;
}

/* Does an open other than o (any connection) read copy e? */
static bool
dc_in_use(const struct co_dc_entry *e, const struct px_open *o)
{
	const struct px_conn *x;
	const struct px_open *y;

	for (x = px_rt.conns; x; x = x->next) {
		if (x->state == PX_CONN_CLOSED)
			continue;
		for (y = x->led.opens; y; y = y->next)
			if (y != o && !y->closed && y->dc_serial == e->serial)
				return true;
	}
	return false;
}

bool
px_dc_changing(struct px_conn *c, const struct px_open *o)
{
	const char *share = px_tree_share(c, o);
	struct px_conn *x;
	const struct px_open *y;

	if (o->name == NULL)
		return false;
	for (x = px_rt.conns; x; x = x->next) {
		if (x->state == PX_CONN_CLOSED || (x != c && !px_same_server(c, x)))
			continue;
		/* another connection's absorbed writes of the file not yet
		 * answered (this one's: px_wb_file_idle), through any of its
		 * opens of it: by name in the share, or by on-disk id */
		if (x != c)
			for (y = x->led.opens; y; y = y->next) {
				if (!px_wb_busy(y) || y->name == NULL ||
				    (y->name_hash != o->name_hash &&
				    !co_dc_same_file(&y->dcv, &o->dcv) &&
				    strchr(y->name, ':') == NULL &&
				    strchr(o->name, ':') == NULL))
					continue;
				if (co_dc_same_file(&y->dcv, &o->dcv) ||
				    (px_same_file_name(y->name, o->name) &&
				    strcasecmp(px_tree_share(x, y), share) == 0))
					return true;
			}
		/* a change of it forwarded and not answered: named as o is,
		 * through an open with its on-disk id, or by the CREATE of
		 * its compound (no open of it in the ledger yet) */
		if (px_ledger_changing(&x->led, share, o->name, &o->dcv))
			return true;
	}
	return false;
}

/* Connections waiting for a fetch re-decide (the copy changed). */
static void
kick_readers(struct px_conn *c)
{
	px_emit_kick_each(c, PX_STALL_READ);
}

static void
dc_drop(struct px_conn *c, struct co_dc_entry *e, enum px_dc_cause why)
{
	px_stats.dc_drops[why]++;
	co_dc_drop(&dcache, e);     /* the store's copy goes with it */
	gauges();
	kick_readers(c);
}

static void
keep_ids(struct px_conn *c)
{
	double now = px_now_ms();
	bool arm = c->dc_keep_until <= now;

	c->dc_keep_until = now + DC_KEEP_MS;
	if (arm)
		px_relay_ops->arm_timer(c);
}

/* ---- at CREATE ----------------------------------------------------------------------- */

bool
px_dc_wants_disk_id(struct px_conn *c, const struct px_session *s,
    const struct px_tree *t, const struct smb2_create_req *cr)
{
	/* a durable reconnect (MS-SMB2 3.3.5.9.7, 3.3.5.9.12) carries its
	 * own context, a lease and for DHnC a DHnQ: smbd fails one with any
	 * other OBJECT_NAME_NOT_FOUND (smb2_create.c) */
	return dcache.nb != 0 && t->policy.read_cache &&
	    t->policy.read_ahead != POL_GATE_OFF && !cr->has_qfid &&
	    !cr->has_reconnect &&
	    !(cr->create_options & FILE_DIRECTORY_FILE) &&
	    px_may_rewrite(c, s);
}

void
px_dc_opened(struct px_conn *c, struct px_open *o)
{
	struct px_tree *t = px_tree_find(&c->led, o->session_id, o->tree_id);
	char key[DC_KEY_MAX];
	struct co_dc_entry *e;
	enum co_dc_cause why;
	bool proven;

	if (dcache.nb == 0 || t == NULL || !t->policy.read_cache ||
	    o->is_dir || o->name == NULL ||
	    !dc_key(c, t->share, o->name, key, sizeof(key)))
		return;
	/* a change of the file through this smbaccel still in flight: the
	 * answer may show the file from before it (its size too), and the
	 * change dropped the copy when it was sent */
	if (px_dc_changing(c, o)) {
		o->dc_stale = true;
		return;
	}
	/* the store's copies are read back for an open that may use them */
	proven = dc_proven(o);
	if ((e = co_dc_lookup(&dcache, key)) == NULL &&
	    (!proven || (e = px_ds_load(&dcache, key)) == NULL))
		return;
	gauges();
	why = co_dc_compare(&e->v, &o->dcv);
	if (why != CO_DC_SAME) {
		px_stats.dc_valid_failed[why]++;
		log_info("conn=%llu share=%s file=%s cached copy is stale "
		    "(%s differs): dropped", (unsigned long long)c->id,
		    t->share, o->name, co_dc_cause_name(why));
		dc_drop(c, e, PX_DC_STALE);
		return;
	}
	if (!proven) {
		/* an open that reads no data (attributes, a delete) has no
		 * use for the copy: it is left to the opens that may */
		if (!px_open_read_access(o))
			return;
		/* the same times prove nothing: another handle may have
		 * written since the copy was made (DESIGN.md section 5a) */
		px_stats.dc_valid_failed[CO_DC_UNPROVEN]++;
		if (dc_in_use(e, o)) {
			/* another open reads it: this one reads the server
			 * (one copy per file) */
			o->dc_stale = true;
			log_debug("conn=%llu share=%s file=%s no write caching "
			    "granted: not served from the copy another open "
			    "reads", (unsigned long long)c->id, t->share,
			    o->name);
			return;
		}
		log_debug("conn=%llu share=%s file=%s no write caching "
		    "granted, so another handle may have written the file "
		    "with its times held: cached copy dropped, fetched again",
		    (unsigned long long)c->id, t->share, o->name);
		dc_drop(c, e, PX_DC_STALE);
		return;
	}
	px_stats.dc_valid_ok++;
	if (!dc_gate(t, o) || o->dcv.eof > t->policy.read_cache_file_max)
		return;
	o->dc_serial = e->serial;
	co_dc_touch(&dcache, e, (uint64_t)px_now_ms());
	px_stats.dc_attached++;
	log_debug("conn=%llu share=%s file=%s served from its cached copy "
	    "(%u of %u chunks)", (unsigned long long)c->id, t->share, o->name,
	    e->present, e->nchunks);
}

/* A read that does not continue the previous one (or a first read past
 * the start): the reader is not sequential. */
static bool
random_read(const struct px_open *o, const struct smb2_read_req *r)
{
	if (o->ra.nreads == 0)
		return r->offset != 0;
	return r->offset != o->ra.next_expected;
}

/* A copy for o's file, made from what o's CREATE answer said. */
static struct co_dc_entry *
dc_start(struct px_conn *c, struct px_tree *t, struct px_open *o)
{
	char key[DC_KEY_MAX];
	struct co_dc_entry *e;

	/* a copy without the file's on-disk id could be taken for another
	 * file of the same key (co_dc_compare) */
	if (o->dc_stale || o->name == NULL || o->dcv.eof == 0 ||
	    !o->dcv.has_disk_id ||
	    o->dcv.eof > t->policy.read_cache_file_max ||
	    o->size_hint != o->dcv.eof ||
	    !dc_key(c, t->share, o->name, key, sizeof(key)))
		return NULL;
	if ((e = co_dc_lookup(&dcache, key)) != NULL) {
		/* another open's copy: the same file, or a stale one; o may
		 * read it only as px_dc_opened would have let it */
		bool same = co_dc_compare(&e->v, &o->dcv) == CO_DC_SAME;

		if (same && dc_proven(o))
			goto attach;
		if (same && dc_in_use(e, o)) {
			o->dc_stale = true;
			return NULL;
		}
		dc_drop(c, e, PX_DC_STALE);
	}
	/* no room beside what readers of the last moments hold: no copy
	 * (each would evict the others' before they are read) */
	if (co_dc_recent(&dcache, (uint64_t)px_now_ms() - DC_BUSY_MS) +
	    o->dcv.eof > dcache.limit) {
		px_stats.dc_no_room++;
		return NULL;
	}
	if ((e = co_dc_create(&dcache, key, &o->dcv, NULL)) == NULL)
		return NULL;
	px_stats.dc_started++;
	log_debug("conn=%llu share=%s file=%s random reader: fetching its "
	    "%llu bytes", (unsigned long long)c->id, t->share, o->name,
	    (unsigned long long)o->dcv.eof);
attach:
	o->dc_serial = e->serial;
	gauges();
	return e;
}

/* ---- fetching ------------------------------------------------------------------------ */

/*
 * Fetch absent chunks of o's copy with pooled ids, pipelined, one id and
 * one 64 KiB chunk per READ (a larger fetch would make a reader of its
 * first chunk wait for all of it; at 2.0.2 a READ carries one id anyway).
 */
static void
dc_plan(struct px_conn *c, struct px_open *o, struct co_dc_entry *e)
{
	const struct px_open *x;
	uint64_t keep;

	if (c->state != PX_CONN_RELAY || !px_relay_ops->connected(c, PX_SERVER) ||
	    o->closed || o->breaking || c->led.max_read < CO_DC_CHUNK)
		return;
	/* buffered write-behind data has first claim on the ids, and
	 * so has data a session's expiry may refuse (wb_keep_ids) */
	for (x = c->led.opens; x; x = x->next)
		if (x->wb.len || x->wb_keep_ids)
			return;
	/* never overtake a write of the same file in flight: smbd may
	 * complete a later read first, and the copy would keep the bytes
	 * from before it (a client's forwarded WRITE, SET_INFO or IOCTL, on
	 * any connection, too) */
	if (!px_wb_file_idle(c, o) || px_dc_changing(c, o))
		return;
	/* a break acknowledgement's id comes before the fetches', as
	 * before read-ahead's; and so do the ids a failed widened READ in
	 * flight may need to ask for its client's bytes again (readahead.c) */
	(void)px_emit_tend_reserve(c);
	keep = px_dc_retry_ids(c);
	for (;;) {
		uint64_t lo, off;
		uint32_t first, len;
		struct px_pending *p;

		if (c->led.pool.count <= keep || c->dc_inflight >= DC_INFLIGHT_MAX ||
		    co_dc_plan(e, 1, &first) == 0 ||
		    !co_dc_room(&dcache, e, CO_DC_CHUNK))
			return;
		(void)co_pool_take_run(&c->led.pool, 1, &lo);
		off = (uint64_t)first * CO_DC_CHUNK;
		len = (uint32_t)(e->v.eof - off < CO_DC_CHUNK ? e->v.eof - off :
		    CO_DC_CHUNK);
		p = px_emit_read(c, o, lo, 1, off, len);
		if (p == NULL) {
			log_warnx("conn=%llu document fetch request failed",
			    (unsigned long long)c->id);
			return;
		}
		co_dc_mark(e, first, 1);
		c->dc_inflight++;
		p->u.io.doc = true;
		p->u.io.dc_serial = e->serial;
		px_stats.dc_fetches++;
		px_stats.dc_fetch_bytes += len;
		px_stats.dc_fetch_ids++;
		if (lo < o->dc_first_mid)
			px_stats.dc_kept_ids++;
		px_stats.pool_ids_now = c->led.pool.count;
	}
}

/* Hold the pooled ids for the next miss (DC_HOLD_MS at most). */
static void
dc_hold(struct px_conn *c)
{
	if (c->dc_hold_until != 0 || c->led.pool.count == 0)
		return;
	c->dc_hold_until = px_now_ms() + DC_HOLD_MS;
	px_relay_ops->arm_timer(c);
}

/* Send what the held ids pay for: fetches for every copy c reads. */
static void
dc_release(struct px_conn *c)
{
	struct co_dc_entry *e;
	struct px_open *o, *next;

	c->dc_hold_until = 0;
	for (o = c->led.opens; o != NULL && c->led.pool.count > 0; o = next) {
		next = o->next;
		if (o->dc_serial && (e = co_dc_find(&dcache, o->dc_serial)) !=
		    NULL)
			dc_plan(c, o, e);
	}
}

/* Data for [off, off+asked) of copy e arrived (got bytes). */
static void
dc_store(struct px_conn *c, struct co_dc_entry *e, uint64_t off,
    uint32_t asked, const uint8_t *data, uint32_t got)
{
	uint32_t first, n;
	uint64_t before = dcache.mem;
	int k = co_dc_arrive(&dcache, e, off, asked, data, got, &first, &n);

	if (k < 0) {
		log_info("conn=%llu cached copy of %s: the server has fewer "
		    "bytes than its CREATE answer said (the file changed): "
		    "dropped", (unsigned long long)c->id, e->key);
		dc_drop(c, e, PX_DC_SHORT);
		return;
	}
	if (k > 0) {
		px_stats.dc_stored_bytes += dcache.mem > before ?
		    dcache.mem - before : 0;
		if (n)
			(void)px_ds_put(e, first, n);
	}
	gauges();
}

void
px_dc_fetch_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *el, struct px_pending *p)
{
	struct co_dc_entry *e = co_dc_find(&dcache, p->u.io.dc_serial);
	struct smb2_read_rsp rr;
	struct px_open *o;
	uint32_t nch = (p->u.io.length + CO_DC_CHUNK - 1) / CO_DC_CHUNK;

	c->dc_inflight = c->dc_inflight > nch ? c->dc_inflight - nch : 0;
	if (e != NULL) {
		if (h->status == NT_STATUS_SUCCESS &&
		    px_smb2_read_rsp_decode(el, &rr) == 0)
			dc_store(c, e, p->u.io.offset, p->u.io.length, rr.data,
			    rr.data_len);
		else if (h->status == NT_STATUS_END_OF_FILE)
			dc_store(c, e, p->u.io.offset, p->u.io.length, NULL, 0);
		else {
			/* FILE_CLOSED after the client's CLOSE, and the like:
			 * what is here stays, the rest is absent again */
			co_dc_fail(e, p->u.io.offset, p->u.io.length);
			log_debug("conn=%llu document fetch %s+%u: status "
			    "0x%08x", (unsigned long long)c->id, e->key,
			    p->u.io.length, h->status);
		}
	}
	kick_readers(c);
	if ((o = px_pending_open(&c->led, p)) != NULL &&
	    o->dc_serial == p->u.io.dc_serial &&
	    (e = co_dc_find(&dcache, o->dc_serial)) != NULL)
		dc_hold(c);
}

void
px_dc_widened_data(struct px_conn *c, const struct px_pending *p,
    uint32_t status, const uint8_t *data, uint32_t got)
{
	struct co_dc_entry *e = co_dc_find(&dcache, p->u.io.dc_serial);
	struct px_open *o;

	if (e == NULL)
		return;
	if (status == NT_STATUS_SUCCESS)
		dc_store(c, e, p->u.io.offset, p->u.io.length, data, got);
	else if (status == NT_STATUS_END_OF_FILE)
		dc_store(c, e, p->u.io.offset, p->u.io.length, NULL, 0);
	else
		co_dc_fail(e, p->u.io.offset, p->u.io.length);
	kick_readers(c);
	if ((o = px_pending_open(&c->led, p)) != NULL &&
	    o->dc_serial == p->u.io.dc_serial &&
	    (e = co_dc_find(&dcache, o->dc_serial)) != NULL)
		dc_hold(c);
}

/* ---- reads -------------------------------------------------------------------------- */

bool
px_dc_read_waits(const struct px_open *o, uint64_t off, uint32_t len)
{
	struct co_dc_entry *e;
	uint32_t idx;

	return o->dc_serial && (e = co_dc_find(&dcache, o->dc_serial)) != NULL &&
	    co_dc_look(e, off, len, &idx) == CO_DC_WAIT;
}

/* Read chunk idx of e back from the store; -1: e was dropped. */
static int
dc_load(struct px_conn *c, struct co_dc_entry *e, uint32_t idx,
    const struct smb2_read_req *r)
{
	uint8_t *buf = malloc(CO_DC_CHUNK);
	uint64_t end = r->offset + r->length;
	uint32_t lo = (uint32_t)(r->offset / CO_DC_CHUNK);
	uint32_t hi = (uint32_t)((end > e->v.eof ? e->v.eof : end) - 1) /
	    CO_DC_CHUNK;
	int rc;

	if (buf == NULL)
		return 0;
	if (px_ds_read(e, idx, buf) == -1) {
		/* logged by the store; a copy that fails a check is never
		 * served, whatever of it was read before */
		free(buf);
		dc_drop(c, e, PX_DC_CORRUPT);
		return -1;
	}
	rc = co_dc_fill(&dcache, e, idx, buf, lo, (uint32_t)hi);
	free(buf);
	gauges();
	return rc == 0 ? 0 : 1;
}

enum px_absorb
px_dc_read(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *el, const uint8_t *msg, size_t mlen,
    struct px_session *s, struct px_tree *t, struct px_open *o,
    const struct smb2_read_req *r, bool *mine)
{
	struct co_dc_entry *e = NULL;
	enum co_dc_look look;
	uint64_t charge = px_large_mtu(c) ? h->credit_charge : 1;
	uint32_t idx, lo, hi, k;
	uint64_t a, w, cap, end;

	*mine = false;
	/* a byte-range lock on the file (any open through this smbaccel):
	 * the server decides every read, LOCK_CONFLICT included; a lease
	 * does not protect a copy from locks */
	if (dcache.nb == 0 || !t->policy.read_cache || o->locked)
		return PX_AB_FORWARD;
	if (o->dc_serial && (e = co_dc_find(&dcache, o->dc_serial)) == NULL)
		o->dc_serial = 0;       /* dropped meanwhile */
	if (e == NULL) {
		if (!random_read(o, r) || !dc_gate(t, o) ||
		    px_dc_changing(c, o) || (e = dc_start(c, t, o)) == NULL)
			return PX_AB_FORWARD;
	}
	*mine = true;
	if (o->dc_first_mid == 0)
		o->dc_first_mid = h->message_id;
	keep_ids(c);
	co_dc_touch(&dcache, e, (uint64_t)px_now_ms());
	for (k = 0; k < 40; k++) {
		look = co_dc_look(e, r->offset, r->length, &idx);
		if (look != CO_DC_LOAD)
			break;
		switch (dc_load(c, e, idx, r)) {
		case -1:
			o->dc_serial = 0;
			return PX_AB_FORWARD;
		case 1:
			px_stats.dc_misses++;
			return PX_AB_FORWARD;   /* no memory for it now */
		default:
			break;
		}
	}
	if (look == CO_DC_LOAD)
		return PX_AB_FORWARD;
	if (look == CO_DC_WAIT) {
		c->stall = PX_STALL_READ;
		c->stall_fid = o->fid;
		c->stall_off = r->offset;
		c->stall_len = r->length;
		px_stats.dc_waits++;
		return PX_AB_STALL;
	}
	if (look == CO_DC_HIT) {
		uint8_t *buf = malloc(r->length ? r->length : 1);
		uint32_t n, st;
		int rc;

		if (buf == NULL)
			return PX_AB_FAIL;
		if (co_pool_add(&c->led.pool, h->message_id, charge) == -1) {
			free(buf);
			px_emit_spend_pool(c, false);
			return PX_AB_FORWARD;
		}
		co_dc_copy(e, r->offset, r->length, r->minimum_count, buf, &n,
		    &st);
		rc = px_wb_answer_read(c, h, charge, st, buf, n);
		free(buf);
		if (rc == -1)
			return PX_AB_FAIL;
		px_stats.dc_hits++;
		px_stats.dc_served_bytes += n;
		if (o->share_stats)
			o->share_stats->dc_served_bytes += n;
		dc_hold(c);
		if (co_pool_over_bound(&c->led.pool, c->led.cr.client_next,
		    c->led.window))
			px_emit_spend_pool(c, false);
		return PX_AB_DONE;
	}

	/* a miss: widen it to the whole chunks it touches, within its own
	 * credit charge; the answer is cut back to what the client asked */
	end = r->offset + r->length < e->v.eof ? r->offset + r->length :
	    e->v.eof;
	lo = (uint32_t)(r->offset / CO_DC_CHUNK);
	hi = (uint32_t)((end - 1) / CO_DC_CHUNK);
	a = (uint64_t)lo * CO_DC_CHUNK;
	w = (uint64_t)(hi - lo + 1) * CO_DC_CHUNK;
	if (a + w > e->v.eof)
		w = e->v.eof - a;
	cap = px_large_mtu(c) ? charge * CO_DC_CHUNK : CO_DC_CHUNK;
	if (w > cap || w > c->led.max_read || w > DC_WIDEN_MAX ||
	    r->flags != 0 || !px_may_rewrite(c, s) ||
	    !co_dc_room(&dcache, e, w) || px_dc_changing(c, o)) {
		px_stats.dc_misses++;
		dc_release(c);
		return PX_AB_FORWARD;
	}
	{
		uint8_t *copy = malloc(mlen);
		struct px_pending *p;
		struct smb2_fileid related;
		struct px_prot up = c->cur_prot;

		if (copy == NULL)
			return PX_AB_FAIL;
		memcpy(copy, msg, mlen);
		px_put_u32(copy + SMB2_HDR_LEN + 4, (uint32_t)w);  /* Length */
		px_put_u64(copy + SMB2_HDR_LEN + 8, a);            /* Offset */
		/* MinimumCount: the client's applies to its own bytes, at
		 * the cut back (readahead.c), not to the chunks' */
		px_put_u32(copy + SMB2_HDR_LEN + 32, 0);
		memset(&related, 0xFF, sizeof(related));
		p = px_ledger_client_request(&c->led, h, el, false, &related);
		/* the rewritten request is re-signed or re-sealed */
		if (p == NULL ||
		    px_emit_protected(c, PX_SERVER, &up, copy, mlen) == -1) {
			free(copy);
			return PX_AB_FAIL;
		}
		free(copy);
		co_dc_mark(e, lo, hi - lo + 1);
		p->u.io.prot_sign = up.sign;
		p->u.io.prot_encrypt = up.encrypt;
		p->u.io.widened = true;
		p->u.io.doc = true;
		p->u.io.dc_serial = e->serial;
		p->u.io.offset = a;
		p->u.io.length = (uint32_t)w;
		p->u.io.client_off = r->offset;
		p->u.io.client_len = r->length;
		p->u.io.client_min = r->minimum_count;
		p->u.io.open = o;
		p->u.io.open_serial = o->serial;
		px_stats.requests[SMB2_READ]++;
		px_stats.dc_widened++;
		px_stats.dc_fetch_bytes += w;
	}
	dc_release(c);
	return PX_AB_DONE;
}

/* ---- client READs asked again (readahead.c) ----------------------------------------- */

static struct px_dc_retry *retries;

uint64_t
px_dc_retry_ids(const struct px_conn *c)
{
	const struct px_pending *p;
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < c->led.tab_cap; i++)
		if ((p = c->led.tab[i]) != NULL && p->origin == PX_ORIGIN_CLIENT &&
		    p->command == SMB2_READ && p->u.io.widened)
			n++;
	return n;
}

void
px_dc_retry_add(struct px_dc_retry *r)
{
	r->next = retries;
	retries = r;
}

struct px_dc_retry *
px_dc_retry_take(const struct px_conn *c, uint64_t mid)
{
	struct px_dc_retry **pp, *r;

	for (pp = &retries; (r = *pp) != NULL; pp = &r->next)
		if (r->c == c && r->mid == mid) {
			*pp = r->next;
			return r;
		}
	return NULL;
}

static void
dc_retry_free(const struct px_conn *c)
{
	struct px_dc_retry **pp = &retries, *r;

	while ((r = *pp) != NULL) {
		if (r->c == c) {
			*pp = r->next;
			free(r);
		} else
			pp = &r->next;
	}
}

/* ---- what drops a copy ------------------------------------------------------------- */

/* The CREATE answer of an open of file `name` of share `share` on c that
 * carried the file's on-disk id, or NULL. */
static const struct co_dc_valid *
changer_id(struct px_conn *c, const char *share, const char *name)
{
	const struct px_open *o;

	for (o = c->led.opens; o; o = o->next)
		if (o->dcv.has_disk_id && o->name != NULL &&
		    px_same_file_name(o->name, name) &&
		    strcasecmp(px_tree_share(c, o), share) == 0)
			return &o->dcv;
	return NULL;
}

/* Drop every copy of c's server whose file has on-disk id `id`. */
static void
dc_drop_id(struct px_conn *c, const struct co_dc_valid *id,
    enum px_dc_cause why)
{
	struct co_dc_entry *e, *next;
	size_t n = strlen(c->dst_str);

	/* by the id's index: a walk of every copy cost each WRITE 0.7-4 ms
	 * with 30,000 copies */
	for (e = co_dc_first_id(&dcache, id); e; e = next) {
		next = co_dc_next_id(e, id);
		if (strncmp(e->key, c->dst_str, n) == 0 && e->key[n] == '|')
			dc_drop(c, e, why);
	}
}

void
px_dc_changed(struct px_conn *c, const char *share, const char *name,
    bool dir, enum px_dc_cause why)
{
	char key[DC_KEY_MAX];
	struct co_dc_entry *e;
	struct px_conn *x;
	const struct co_dc_valid *id;
	bool colon;
	size_t nlen;
	uint32_t nh;

	if (dcache.nb == 0 || name == NULL ||
	    !dc_key(c, share, name, key, sizeof(key)))
		return;
	if ((e = co_dc_lookup(&dcache, key)) != NULL)
		dc_drop(c, e, why);
	/* the file by other names (letters whose case smbaccel does not
	 * fold, short names, hard links): by the on-disk id of an open of it
	 * on c (the open the change comes through), where there is one */
	if ((id = changer_id(c, share, name)) != NULL)
		dc_drop_id(c, id, why);
	/* also when the copy in memory was made afresh beside one in the
	 * store (evicted from memory after its open loaded it) */
	px_ds_remove_key(key);
	if (dir) {
		size_t kl = strlen(key), k;

		if (kl + 2 < sizeof(key) && key[kl - 1] != '|') {
			key[kl] = '\\';
			key[kl + 1] = '\0';
		}
		if ((k = co_dc_drop_prefix(&dcache, key)) > 0) {
			px_stats.dc_drops[why] += k;
			gauges();
			kick_readers(c);
		}
		/* and the store's copies below it that are not in memory */
		px_stats.dc_drops[why] += px_ds_drop_prefix(key);
	}
	/* opens of it, through this smbaccel: their CREATE answer is no
	 * longer what the file is */
	while (*name == '\\' || *name == '/')
		name++;
	nlen = strlen(name);
	nh = px_name_hash(name);
	colon = strchr(name, ':') != NULL;
	for (x = px_rt.conns; x; x = x->next) {
		struct px_open *o;

		if (x->state == PX_CONN_CLOSED || (x != c && !px_same_server(c, x)))
			continue;
		for (o = x->led.opens; o; o = o->next) {
			const char *on = o->name;

			if (on == NULL)
				continue;
			if (id != NULL && co_dc_same_file(&o->dcv, id)) {
				o->dc_stale = true;
				o->dc_serial = 0;
				continue;
			}
			/* the hash rules out most opens of other files without
			 * a string compare (not the ones below a directory,
			 * nor names with a stream part) */
			if (!dir && o->name_hash != nh && !colon &&
			    strchr(on, ':') == NULL)
				continue;
			while (*on == '\\' || *on == '/')
				on++;
			if (strcasecmp(px_tree_share(x, o), share) != 0)
				continue;
			if (px_same_file_name(on, name) ||
			    (dir && (nlen == 0 || (strncasecmp(on, name, nlen) ==
			    0 && on[nlen] == '\\')))) {
				o->dc_stale = true;
				o->dc_serial = 0;
			}
		}
	}
}

void
px_dc_open_lost(struct px_open *o, enum px_dc_cause why)
{
	struct co_dc_entry *e;

	/* what the server may let others change now */
	o->dc_stale = true;
	if (o->dc_serial && (e = co_dc_find(&dcache, o->dc_serial)) != NULL)
		dc_drop(NULL, e, why);
	o->dc_serial = 0;
}

double
px_dc_timer(struct px_conn *c, double now_ms)
{
	if (c->dc_hold_until != 0 && now_ms >= c->dc_hold_until)
		dc_release(c);
	if (c->dc_hold_until != 0)
		return c->dc_hold_until;   /* before dc_keep_until */
	if (c->dc_keep_until == 0)
		return 0;
	if (now_ms < c->dc_keep_until)
		return c->led.pool.count ? c->dc_keep_until : 0;
	c->dc_keep_until = 0;
	if (c->led.pool.count)
		px_emit_spend_pool(c, false);
	return 0;
}

void
px_dc_free(struct px_conn *c)
{
	size_t i;
	bool any = false;

	dc_retry_free(c);
	if (dcache.nb == 0)
		return;
	for (i = 0; i < c->led.tab_cap; i++) {
		struct px_pending *p = c->led.tab[i];
		struct co_dc_entry *e;

		if (p == NULL || p->command != SMB2_READ || !p->u.io.doc ||
		    (e = co_dc_find(&dcache, p->u.io.dc_serial)) == NULL)
			continue;
		co_dc_fail(e, p->u.io.offset, p->u.io.length);
		any = true;
	}
	if (any)
		kick_readers(c);
}
