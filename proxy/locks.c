/*
 * locks.c - byte-range locks granted through smbaccel, and the lock check
 * smbaccel makes itself for the opens that hold its lease on a client's
 * behalf (DESIGN.md section 6; docs/design.md "Byte-range locks and
 * smbaccel's leases").
 *
 * Why: with `strict locking = auto`, Samba's default, smbd checks no
 * byte-range lock for a READ of an open whose lease or oplock caches
 * reads, nor for a WRITE of one that caches writes (source3/locking/
 * locking.c, strict_lock_check_default): a client holding such a lease is
 * trusted to know the locks.  A client that asked for none and runs on
 * smbaccel's lease knows nothing of them, so a second handle's read into
 * a range the first one locked exclusively was answered SUCCESS instead
 * of STATUS_FILE_LOCK_CONFLICT (smbtorture smb2.lock.rw-exclusive).  A
 * server that checks every I/O (MS-FSA 2.1.5.2, 2.1.5.3: Windows) answers
 * what smbaccel answers here anyway.
 *
 * Owns:
 *  - per open, the ranges the server granted through smbaccel: a LOCK
 *    request's elements are kept in its pending entry and applied when its
 *    final answer is SUCCESS (MS-SMB2 3.3.5.14: all of them or none); the
 *    table lives in struct px_open and goes with it (CLOSE, LOGOFF,
 *    TREE_DISCONNECT, the connection's end);
 *  - the check, before a READ of an open holding smbaccel's lease with R
 *    (a WRITE: with W) is forwarded, against the locks of every open of the
 *    same server, share and path through this smbaccel (MS-FSA 2.1.4.10):
 *    an exclusive lock of another open conflicts with reads and writes, a
 *    shared lock with writes of every open, its owner's included; the
 *    owner's own exclusive lock permits its own reads and writes;
 *  - the answer: STATUS_FILE_LOCK_CONFLICT, synthesized where px_may_act
 *    allows (signed or sealed as keyed sessions demand) through the
 *    answer path of absorbed requests, which donates the request's ids.
 *
 * Bounded: at most CO_BRL_MAX (64) ranges per open (coalesce/brl.c).
 * Past that the open counts the locks it could not keep, exclusive and
 * shared (an unlock that matches no kept range is one of them, since the
 * server accepted it, of a kind unknown: the counts become upper bounds),
 * and while any are lost, whatever they could refuse is refused wherever
 * they lie: a checked READ or WRITE of another open of the file while an
 * exclusive one may be lost, any checked WRITE while a shared one may be
 * (the open's own included), is answered FILE_LOCK_CONFLICT.  An error the
 * server might not have given, never an access it would have refused.
 * Logged when it starts, counted (locks_overflow).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>

#include "proxy/locks.h"
#include "proxy/writebehind.h"
#include "proxy/alter.h"
#include "proxy/emit.h"

#define STATUS_FILE_LOCK_CONFLICT 0xC0000054u   /* MS-ERREF 2.3.1 */

/* The elements of a LOCK request in flight (its pending entry's). */
struct px_brl_req {
	uint16_t n;
	struct smb2_lock_elem el[];
};

/* ---- the table ------------------------------------------------------------------- */

void
px_locks_request(struct px_conn *c, const struct smb2_elem *e,
    struct px_pending *p)
{
	struct smb2_lock_req rq;
	struct px_brl_req *k;
	uint16_t i;

	if (p == NULL || p->command != SMB2_LOCK || p->u.lock.req != NULL ||
	    px_smb2_lock_req_decode(e, &rq) == -1)
		return;     /* the server refuses what does not decode */
	/* as many as the message held, freed with the pending entry */
	k = malloc(sizeof(*k) + (size_t)rq.count * sizeof(k->el[0]));
	if (k == NULL) {
		log_warnx("conn=%llu out of memory for the elements of a LOCK: "
		    "if it is granted, this open's locks are not all known",
		    (unsigned long long)c->id);
		return;     /* px_locks_answered then counts them lost */
	}
	k->n = rq.count;
	for (i = 0; i < rq.count; i++)
		px_smb2_lock_elem_get(&rq, i, &k->el[i]);
	p->u.lock.req = k;
}

/* One more lock granted to o, of c. */
static void
granted(struct px_conn *c, struct px_open *o, const struct smb2_lock_elem *el)
{
	enum co_brl_kept k = co_brl_lock(&o->brl, el->offset, el->length,
	    (el->flags & SMB2_LOCKFLAG_EXCLUSIVE_LOCK) != 0);

	if (k == CO_BRL_KEPT || o->brl.lost > 1)
		return;     /* kept, or said before */
	px_stats.locks_overflow++;
	log_warnx("conn=%llu share=%s file=%s %s %d byte-range locks on one "
	    "handle: until it is closed or unlocks the ones not kept, each "
	    "READ and WRITE smbaccel checks on this file (of opens holding its "
	    "lease) that they could refuse is answered FILE_LOCK_CONFLICT",
	    (unsigned long long)c->id, px_tree_share(c, o),
	    o->name ? o->name : "?", k == CO_BRL_LOST ? "more than" :
	    "out of memory for one of", k == CO_BRL_LOST ? CO_BRL_MAX :
	    (int)o->brl.n + 1);
}

static void
unlocked(struct px_conn *c, struct px_open *o, const struct smb2_lock_elem *el)
{
	int rc = co_brl_unlock(&o->brl, el->offset, el->length);

	if (rc == 0 && o->brl.lost == 0)
		log_info("conn=%llu share=%s file=%s byte-range locks of the "
		    "handle all known again", (unsigned long long)c->id,
		    px_tree_share(c, o), o->name ? o->name : "?");
	else if (rc == -1)
		log_debug("conn=%llu share=%s file=%s unlock of [%llu,+%llu) "
		    "that smbaccel did not see locked", (unsigned long long)c->id,
		    px_tree_share(c, o), o->name ? o->name : "?",
		    (unsigned long long)el->offset,
		    (unsigned long long)el->length);
}

void
px_locks_answered(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p, const struct smb2_fileid *last_create)
{
	const struct px_brl_req *k = p->u.lock.req;
	struct smb2_fileid fid = p->fid;
	struct px_open *o;
	uint16_t i;

	/* a lock request is granted whole or not at all; an unlock request
	 * is done element by element, and one that fails (RANGE_NOT_LOCKED)
	 * keeps those before it done (smbd does not undo them, nor does
	 * MS-SMB2 3.3.5.14.1 ask it to) */
	if (h->status != NT_STATUS_SUCCESS &&
	    (h->status != NT_STATUS_RANGE_NOT_LOCKED || k == NULL || k->n == 0 ||
	    !(k->el[0].flags & SMB2_LOCKFLAG_UNLOCK)))
		return;
	if (px_fileid_is_related(&fid) && last_create)
		fid = *last_create;
	if ((o = px_open_find(&c->led, &fid)) == NULL)
		return;         /* closed meanwhile: its locks went with it */
	if (h->status != NT_STATUS_SUCCESS) {
		/* the elements up to the first smbaccel does not hold were
		 * the ones done: the server failed on one it did not hold
		 * either (what smbaccel keeps, the server granted) */
		for (i = 0; i < k->n; i++)
			if (co_brl_unlock(&o->brl, k->el[i].offset,
			    k->el[i].length) == -1)
				break;
		return;
	}
	if (k == NULL) {
		/* granted, but what is not known (no memory for it): no
		 * I/O of the file is let through unchecked */
		co_brl_lock_unknown(&o->brl);
		return;
	}
	for (i = 0; i < k->n; i++) {
		if (k->el[i].flags & SMB2_LOCKFLAG_UNLOCK)
			unlocked(c, o, &k->el[i]);
		else
			granted(c, o, &k->el[i]);
	}
}

/* ---- the check ----------------------------------------------------------------------- */

/* I/O [off, +len) of open o (on c; write or read) against every lock
 * granted through smbaccel on the same server, share and file. */
static enum co_brl_verdict
verdict(struct px_conn *c, const struct px_open *o, uint64_t off,
    uint64_t len, bool write)
{
	const char *share = px_tree_share(c, o);
	struct px_conn *x;
	const struct px_open *lo;
	enum co_brl_verdict v;

	if (o->name == NULL)
		return CO_BRL_OK;
	for (x = px_rt.conns; x; x = x->next) {
		if (x->state == PX_CONN_CLOSED || (x != c && !px_same_server(c, x)))
			continue;
		for (lo = x->led.opens; lo; lo = lo->next) {
			if ((lo->brl.n == 0 && lo->brl.lost == 0) ||
			    lo->name == NULL || px_open_other_file(lo, o) ||
			    (!px_open_same_id(lo, o) &&
			    (!px_same_file_name(lo->name, o->name) ||
			    strcasecmp(px_tree_share(x, lo), share) != 0)))
				continue;
			v = co_brl_check(&lo->brl, lo == o, off, len, write);
			if (v != CO_BRL_OK)
				return v;
		}
	}
	return CO_BRL_OK;
}

/* Does o hold smbaccel's lease with the caching that makes Samba skip
 * its lock check for this kind of I/O (read: R, write: W)?  The state
 * counts also while a break of it is handled: the server's lease keeps it
 * until the acknowledgement. */
static bool
unchecked_by_server(const struct px_open *o, bool write)
{
	return o->pl.kind != PX_PL_NONE &&
	    (o->pl.state & (write ? SMB2_LEASE_WRITE : SMB2_LEASE_READ));
}

/* May o do this at all?  Where the server would refuse it first
 * (ACCESS_DENIED), it is left to the server. */
static bool
may_access(const struct px_open *o, bool write)
{
	if (write ? px_open_write_access(o) : px_open_read_access(o))
		return true;
	/* MAXIMUM_ALLOWED without the server's answer: unknown, check */
	return (o->desired_access & MAXIMUM_ALLOWED) && o->maximal_access == 0;
}

bool
px_locks_blocks(struct px_conn *c, const struct px_open *o, uint64_t off,
    uint64_t len, bool write)
{
	/* o->locked: a LOCK was seen on some open of the file through this
	 * smbaccel (coherence.c), so that the walk is only for those */
	return o->locked && len > 0 && !o->closed &&
	    unchecked_by_server(o, write) && may_access(o, write) &&
	    verdict(c, o, off, len, write) != CO_BRL_OK;
}

/* The READ or WRITE element h/e: its open, range and kind (0), or -1 when
 * it names no open of c or is one the server refuses anyway. */
static int
io_of(struct px_conn *c, const struct smb2_hdr *h, const struct smb2_elem *e,
    struct px_open **op, uint64_t *off, uint32_t *len, bool *write)
{
	struct smb2_read_req r;
	struct smb2_write_req w;
	struct smb2_fileid fid;
	struct px_open *o;

	if (h->command == SMB2_READ) {
		if (px_smb2_read_req_decode(e, &r) == -1 || r.channel != 0 ||
		    (c->led.max_read && r.length > c->led.max_read))
			return -1;
		fid = r.file_id;
		*off = r.offset;
		*len = r.length;
		*write = false;
	} else if (h->command == SMB2_WRITE) {
		if (px_smb2_write_req_decode(e, &w) == -1 || w.channel != 0 ||
		    w.offset == SMB2_WRITE_APPEND_OFFSET ||
		    (c->led.max_write && w.length > c->led.max_write))
			return -1;
		fid = w.file_id;
		*off = w.offset;
		*len = w.length;
		*write = true;
	} else
		return -1;
	if ((o = px_open_find(&c->led, &fid)) == NULL ||
	    o->session_id != h->session_id || o->tree_id != h->tree_id ||
	    o->is_dir)
		return -1;
	*op = o;
	return 0;
}

static void
unchecked(struct px_conn *c, const struct px_open *o, const char *why,
    uint64_t off, uint32_t len, bool write)
{
	px_stats.locks_unchecked++;
	log_info("conn=%llu share=%s file=%s %s [%llu,+%u) conflicts with a "
	    "byte-range lock, but smbaccel may not answer it (%s): forwarded, "
	    "and the server, whose lease it holds, may not check it",
	    (unsigned long long)c->id, px_tree_share(c, o), o->name,
	    write ? "WRITE" : "READ", (unsigned long long)off, len, why);
}

enum px_absorb
px_locks_check(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct px_session *s;
	struct px_tree *t;
	struct px_open *o;
	uint64_t off;
	uint32_t len;
	bool write;
	enum co_brl_verdict v;
	enum px_absorb ab;

	if (io_of(c, h, e, &o, &off, &len, &write) == -1 || !o->locked ||
	    len == 0 || o->closed || !unchecked_by_server(o, write) ||
	    !may_access(o, write))
		return PX_AB_FORWARD;
	if ((v = verdict(c, o, off, len, write)) == CO_BRL_OK)
		return PX_AB_FORWARD;
	s = px_session_find(&c->led, h->session_id);
	t = px_tree_find(&c->led, h->session_id, h->tree_id);
	if (s == NULL || t == NULL || !s->established ||
	    !px_may_act(c, s, t, h, e)) {
		unchecked(c, o, "session", off, len, write);
		return PX_AB_FORWARD;
	}
	/* ids the server would take: else it fails the request itself */
	if (!px_ids_fresh(c, h, len))
		return PX_AB_FORWARD;
	if ((ab = px_wb_absorb_status(c, h, STATUS_FILE_LOCK_CONFLICT)) ==
	    PX_AB_FORWARD) {
		unchecked(c, o, "id pool full", off, len, write);
		px_emit_spend_pool(c, false);
		return PX_AB_FORWARD;
	}
	px_stats.requests[h->command]++;
	px_stats.lock_conflicts++;
	log_debug("conn=%llu share=%s file=%s %s [%llu,+%u) answered "
	    "FILE_LOCK_CONFLICT by smbaccel (%s)", (unsigned long long)c->id,
	    px_tree_share(c, o), o->name, write ? "WRITE" : "READ",
	    (unsigned long long)off, len, v == CO_BRL_LOCKED ? "a lock granted "
	    "through smbaccel" : "locks past the per-open bound");
	if (ab == PX_AB_FAIL)
		return PX_AB_FAIL;
	if (co_pool_over_bound(&c->led.pool, c->led.cr.client_next,
	    c->led.window))
		px_emit_spend_pool(c, false);
	return PX_AB_DONE;
}

/* ---- server-side copies -------------------------------------------------------- */

/* The open the client was given this resume key (arg) for. */
static bool
has_resume_key(const struct px_conn *x, const struct px_open *o,
    const void *key)
{
	(void)x;
	return o->has_resume_key && !o->closed &&
	    memcmp(o->resume_key, key, SMB2_RESUME_KEY_LEN) == 0;
}

/* Samba's limits (smb2_ioctl_network_fs.c, as MS-SMB2 3.3.3 suggests):
 * past them the server answers INVALID_PARAMETER before any lock check */
#define CC_MAX_CHUNKS 256
#define CC_MAX_CHUNK  (1024u * 1024u)
#define CC_MAX_TOTAL  (16u * 1024u * 1024u)

enum px_absorb
px_locks_copychunk(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct smb2_ioctl_req io;
	struct smb2_copychunk cc;
	struct smb2_hdr_out ho;
	struct px_session *s;
	struct px_tree *t;
	struct px_open *dst, *src;
	struct px_conn *sx = NULL;
	uint8_t msg[SMB2_HDR_LEN + 48 + 12], none[12];
	uint64_t so, to, total = 0;
	uint32_t i, len;
	size_t n;
	bool blocked = false;
	enum px_absorb ab;

	if (px_smb2_ioctl_req_decode(e, &io) == -1 ||
	    (io.ctl_code != FSCTL_SRV_COPYCHUNK &&
	    io.ctl_code != FSCTL_SRV_COPYCHUNK_WRITE) ||
	    !(io.flags & SMB2_0_IOCTL_IS_FSCTL) ||
	    px_smb2_copychunk_decode(io.in, io.in_len, &cc) == -1 ||
	    cc.count == 0 || cc.count > CC_MAX_CHUNKS)
		return PX_AB_FORWARD;
	if ((dst = px_open_find(&c->led, &io.file_id)) == NULL ||
	    dst->session_id != h->session_id || dst->tree_id != h->tree_id ||
	    dst->is_dir || dst->closed || !px_open_write_access(dst) ||
	    (io.ctl_code == FSCTL_SRV_COPYCHUNK && !px_open_read_access(dst)))
		return PX_AB_FORWARD;    /* the server refuses it first */
	/* a key smbaccel did not see given out: the server's to judge */
	if ((src = px_server_open_find(c, has_resume_key, cc.key, &sx)) ==
	    NULL ||
	    !px_open_read_access(src))
		return PX_AB_FORWARD;
	for (i = 0; i < cc.count; i++) {
		px_smb2_copychunk_chunk(&cc, i, &so, &to, &len);
		total += len;
		if (len == 0 || len > CC_MAX_CHUNK || total > CC_MAX_TOTAL)
			return PX_AB_FORWARD;
	}
	/* chunk by chunk, as the server copies them: the source read, then
	 * the target write */
	for (i = 0; i < cc.count && !blocked; i++) {
		px_smb2_copychunk_chunk(&cc, i, &so, &to, &len);
		blocked = px_locks_blocks(sx, src, so, len, false) ||
		    px_locks_blocks(c, dst, to, len, true);
	}
	if (!blocked)
		return PX_AB_FORWARD;
	s = px_session_find(&c->led, h->session_id);
	t = px_tree_find(&c->led, h->session_id, h->tree_id);
	if (s == NULL || t == NULL || !s->established ||
	    !px_may_act(c, s, t, h, e)) {
		unchecked(c, dst, "session", to, len, true);
		return PX_AB_FORWARD;
	}
	if (!px_ids_fresh(c, h, io.in_len))
		return PX_AB_FORWARD;
	/*
	 * The server stops at the first chunk it cannot copy and reports
	 * the chunks before it as written; here none is sent, so none is
	 * written: chunks, chunk bytes and total written all 0 (2.2.32.1),
	 * in an IOCTL response of the error status (3.3.4.4).
	 */
	memset(none, 0, sizeof(none));
	px_emit_rsp_hdr(&ho, h, STATUS_FILE_LOCK_CONFLICT);
	if ((n = px_smb2_ioctl_rsp_encode(msg, sizeof(msg), &ho, io.ctl_code,
	    &io.file_id, none, sizeof(none))) == 0)
		return PX_AB_FORWARD;
	if ((ab = px_wb_absorb_msg(c, h, msg, n)) == PX_AB_FORWARD) {
		unchecked(c, dst, "id pool full", to, len, true);
		px_emit_spend_pool(c, false);
		return PX_AB_FORWARD;
	}
	px_stats.requests[SMB2_IOCTL]++;
	px_stats.lock_conflicts++;
	log_debug("conn=%llu share=%s file=%s server-side copy of %u chunk(s) "
	    "from %s answered FILE_LOCK_CONFLICT by smbaccel (chunk %u: "
	    "[%llu,+%u) -> [%llu,+%u))", (unsigned long long)c->id,
	    px_tree_share(c, dst), dst->name ? dst->name : "?", cc.count,
	    src->name ? src->name : "?", i, (unsigned long long)so, len,
	    (unsigned long long)to, len);
	if (ab == PX_AB_FAIL)
		return PX_AB_FAIL;
	if (co_pool_over_bound(&c->led.pool, c->led.cr.client_next,
	    c->led.window))
		px_emit_spend_pool(c, false);
	return PX_AB_DONE;
}

void
px_locks_forwarded(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct px_open *o;
	uint64_t off;
	uint32_t len;
	bool write;

	if ((h->command == SMB2_READ || h->command == SMB2_WRITE) &&
	    io_of(c, h, e, &o, &off, &len, &write) == 0 &&
	    px_locks_blocks(c, o, off, len, write))
		unchecked(c, o, "in a compound", off, len, write);
}
