/*
 * ledger.c - the per-connection message ledger of DESIGN.md section 3.
 *
 * It follows every message of an SMB2 connection: the credit limits S
 * (server) and C (client), the requests in flight, and the sessions,
 * trees and opens the connection has.  It never changes a byte; it only
 * records, and logs an inconsistency (with the connection id) when what it
 * sees contradicts what it recorded.  The relay and the write-behind logic
 * read it to decide what they may do.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/ledger.h"

struct px_stats px_stats;

/* An inconsistency: counted, and logged at a bounded rate (a client can
 * cause them at any rate). */
static struct px_lograte ledger_rate;

#define LEDGER_ERR(l, ...) do {						\
	(l)->errors++;							\
	px_stats.ledger_errors++;					\
	if (px_lograte_ok(&ledger_rate, px_now_ms(), PX_LOGRATE_BURST,	\
	    PX_LOGRATE_MS))						\
		log_warnx(__VA_ARGS__);					\
} while (0)

void
px_ledger_init(struct px_ledger *l, uint64_t conn_id)
{
	memset(l, 0, sizeof(*l));
	co_credits_init(&l->cr);
	co_pool_init(&l->pool);
	co_reserve_init(&l->rsv);
	l->conn_id = conn_id;
}

void
px_pending_free(struct px_pending *p)
{
	if (p == NULL)
		return;
	if (p->command == SMB2_CREATE)
		free(p->u.create.name);
	else if (p->command == SMB2_TREE_CONNECT)
		free(p->u.tcon.path);
	else if (p->command == SMB2_SESSION_SETUP &&
	    p->origin == PX_ORIGIN_CLIENT && p->u.sess.auth_free != NULL)
		p->u.sess.auth_free(p->u.sess.auth);
	else if (p->command == SMB2_SESSION_SETUP && p->origin == PX_ORIGIN_CLIENT)
		free(p->u.sess.auth);
	else if (p->command == SMB2_LOCK)
		free(p->u.lock.req);
	else if (p->command == SMB2_WRITE)
		px_kept_drop(p->u.io.kept);
	free(p);
}

void
px_kept_drop(struct px_kept *k)
{
	if (k == NULL || --k->refs > 0)
		return;
	free(k->data);
	free(k);
}

void
px_session_free(struct px_session *s)
{
	if (s == NULL)
		return;
	if (s->kx) {
		/* the session's keys do not outlive it */
		px_smb_ctx_free(s->kx->ctx);
		explicit_bzero(s->kx, sizeof(*s->kx));
		free(s->kx);
	}
	free(s);
}

void
px_open_free(struct px_open *o)
{
	px_stats.ra_bytes_now -= o->ra.bytes;
	co_ra_invalidate(&o->ra);
	co_extent_free(&o->wb);
	co_extent_free(&o->refused);
	co_brl_free(&o->brl);       /* its byte-range locks go with it */
	free(o->name);
	free(o);
}

void
px_ledger_free(struct px_ledger *l)
{
	size_t i;

	for (i = 0; i < l->tab_cap; i++)
		px_pending_free(l->tab[i]);
	free(l->tab); l->tab = NULL;
	while (l->sessions) {
		struct px_session *s = l->sessions;
		l->sessions = s->next;
		px_session_free(s);
	}
	while (l->trees) {
		struct px_tree *t = l->trees;
		l->trees = t->next;
		free(t);
	}
	px_opens_free(l);
}

/* ---- pending table: open addressing, linear probing, backward shift ---- */

/* px_open.serial: the last given (never 0 for an open) */
static uint64_t open_serial;

static size_t
slot_of(uint64_t mid, size_t cap)
{
	uint64_t h = mid * UINT64_C(0x9E3779B97F4A7C15);

	return (size_t)(h >> 32) & (cap - 1);
}

static int
tab_grow(struct px_ledger *l)
{
	size_t ncap = l->tab_cap ? l->tab_cap * 2 : 64, i;
	struct px_pending **nt = calloc(ncap, sizeof(*nt));

	if (nt == NULL)
		return -1;
	for (i = 0; i < l->tab_cap; i++) {
		struct px_pending *p = l->tab[i];
		size_t s;

		if (p == NULL)
			continue;
		for (s = slot_of(p->mid, ncap); nt[s]; s = (s + 1) & (ncap - 1))
			;
		nt[s] = p;
	}
	free(l->tab);
	l->tab = nt;
	l->tab_cap = ncap;
	return 0;
}

struct px_pending *
px_pending_find(struct px_ledger *l, uint64_t mid)
{
	size_t s;

	if (l->tab_cap == 0)
		return NULL;
	for (s = slot_of(mid, l->tab_cap); l->tab[s];
	    s = (s + 1) & (l->tab_cap - 1))
		if (l->tab[s]->mid == mid)
			return l->tab[s];
	return NULL;
}

struct px_pending *
px_pending_find_async(struct px_ledger *l, uint64_t async_id)
{
	size_t i;

	for (i = 0; i < l->tab_cap; i++)
		if (l->tab[i] && l->tab[i]->async_id == async_id)
			return l->tab[i];
	return NULL;
}

bool
px_ledger_read_compressed(struct px_ledger *l, const uint8_t *msg,
    size_t mlen)
{
	struct smb2_hdr h;
	const struct px_tree *t;
	size_t off = 0;
	uint64_t sid = 0;
	uint32_t tid = 0;

	if (!l->compression)
		return false;
	while (off < mlen && px_smb2_hdr_decode(msg, mlen, off, &h) == 0) {
		if (!(h.flags & SMB2_FLAGS_RELATED_OPERATIONS)) {
			sid = h.session_id;
			tid = h.tree_id;
		}
		if (h.command == SMB2_READ) {
			if (h.elem_len >= SMB2_HDR_LEN + 4 &&
			    (msg[off + SMB2_HDR_LEN + 3] &
			    SMB2_READFLAG_REQUEST_COMPRESSED))
				return true;
			t = px_tree_find(l, sid, tid);
			if (t && (t->share_flags & SMB2_SHAREFLAG_COMPRESS_DATA))
				return true;
		}
		if (h.next_command == 0)
			break;
		off += h.elem_len;
	}
	return false;
}

bool
px_ledger_widened_pending(const struct px_ledger *l)
{
	size_t i;

	for (i = 0; i < l->tab_cap; i++)
		if (l->tab[i] && l->tab[i]->origin == PX_ORIGIN_CLIENT &&
		    l->tab[i]->command == SMB2_READ && l->tab[i]->u.io.widened)
			return true;
	return false;
}

bool
px_open_writes_overlap(const struct px_ledger *l, const struct px_open *o,
    uint64_t off, uint64_t len)
{
	const struct px_pending *p;
	size_t i;

	for (i = 0; i < l->tab_cap; i++)
		if ((p = l->tab[i]) != NULL && p->origin == PX_ORIGIN_PROXY &&
		    p->command == SMB2_WRITE && p->u.io.open == o &&
		    off < p->u.io.offset + p->u.io.length &&
		    p->u.io.offset < off + len)
			return true;
	return false;
}

bool
px_ledger_changing(struct px_ledger *l, const char *share, const char *name,
    const struct co_dc_valid *id)
{
	const struct px_pending *p, *q;
	const struct px_open *o;
	const struct px_tree *t;
	size_t i, j;

	if (l->npending == 0 || name == NULL || share == NULL)
		return false;
	for (i = 0; i < l->tab_cap; i++) {
		if ((p = l->tab[i]) == NULL || p->origin != PX_ORIGIN_CLIENT ||
		    (p->command != SMB2_WRITE && p->command != SMB2_SET_INFO &&
		    p->command != SMB2_IOCTL))
			continue;
		if (px_fileid_is_related(&p->fid)) {
			for (j = 0; j < l->tab_cap; j++)
				if ((q = l->tab[j]) != NULL &&
				    q->origin == PX_ORIGIN_CLIENT &&
				    q->command == SMB2_CREATE && q->mid < p->mid &&
				    q->session_id == p->session_id &&
				    q->tree_id == p->tree_id &&
				    q->u.create.name != NULL &&
				    px_same_file_name(q->u.create.name, name) &&
				    (t = px_tree_find(l, q->session_id,
				    q->tree_id)) != NULL &&
				    strcasecmp(t->share, share) == 0)
					return true;
			continue;
		}
		if ((o = px_opens_get(l, &p->fid)) == NULL)
			continue;
		if (id != NULL && co_dc_same_file(id, &o->dcv))
			return true;
		if (o->name == NULL || !px_same_file_name(o->name, name))
			continue;
		if ((t = px_tree_find(l, o->session_id, o->tree_id)) != NULL &&
		    strcasecmp(t->share, share) == 0)
			return true;
	}
	return false;
}

struct px_pending *
px_pending_add(struct px_ledger *l, uint64_t mid)
{
	struct px_pending *p;
	size_t s;

	if ((l->npending + 1) * 2 > l->tab_cap && tab_grow(l) == -1)
		return NULL;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->mid = mid;
	p->expiry_gen = l->expiry_gen;
	for (s = slot_of(mid, l->tab_cap); l->tab[s];
	    s = (s + 1) & (l->tab_cap - 1))
		;
	l->tab[s] = p;
	l->npending++;
	return p;
}

void
px_pending_del(struct px_ledger *l, struct px_pending *p)
{
	size_t s, j, mask = l->tab_cap - 1;

	for (s = slot_of(p->mid, l->tab_cap); l->tab[s] != p; s = (s + 1) & mask)
		if (l->tab[s] == NULL)
			return;
	l->tab[s] = NULL;
	l->npending--;
	if (p->async_id && l->nasync)
		l->nasync--;
	if (p->async_id && p->origin == PX_ORIGIN_CLIENT && l->cr.client_async)
		l->cr.client_async--;
	/* backward-shift the cluster after s so lookups never stop early */
	for (j = (s + 1) & mask; l->tab[j]; j = (j + 1) & mask) {
		size_t home = slot_of(l->tab[j]->mid, l->tab_cap);

		/* move j into the hole if its home is not in (s, j] */
		if ((j > s && (home <= s || home > j)) ||
		    (j < s && (home <= s && home > j))) {
			l->tab[s] = l->tab[j];
			l->tab[j] = NULL;
			s = j;
		}
	}
}

/* ---- sessions, trees, opens ------------------------------------------- */

bool
px_ledger_setup_pending(const struct px_ledger *l, uint64_t sid)
{
	size_t i;

	for (i = 0; i < l->tab_cap; i++)
		if (l->tab[i] != NULL && l->tab[i]->command == SMB2_SESSION_SETUP &&
		    l->tab[i]->session_id == sid)
			return true;
	return false;
}

bool
px_ledger_logged_on(const struct px_ledger *l)
{
	const struct px_session *s;

	for (s = l->sessions; s; s = s->next)
		if (s->established)
			return true;
	return false;
}

struct px_session *
px_session_find(struct px_ledger *l, uint64_t id)
{
	struct px_session *s;

	for (s = l->sessions; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

struct px_tree *
px_tree_find(struct px_ledger *l, uint64_t sid, uint32_t tid)
{
	struct px_tree *t;

	for (t = l->trees; t; t = t->next)
		if (t->session_id == sid && t->tree_id == tid)
			return t;
	return NULL;
}

struct px_open *
px_open_find(struct px_ledger *l, const struct smb2_fileid *fid)
{
	struct px_open *o = px_opens_get(l, fid);

	/* move to front: I/O comes in runs on one open */
	if (o != NULL)
		px_opens_front(l, o);
	return o;
}

bool
px_open_csn_seen(struct px_open *o, const struct smb2_hdr *h)
{
	uint16_t csn = (uint16_t)h->status;

	if ((uint16_t)(csn - o->csn) > 0x7FFF)
		return false;           /* older: the server refuses a WRITE */
	o->csn = csn;
	return true;
}

static const struct px_tree *
tree_of(const struct px_ledger *l, const struct px_open *o)
{
	const struct px_tree *t;

	for (t = l->trees; t; t = t->next)
		if (t->session_id == o->session_id && t->tree_id == o->tree_id)
			return t;
	return NULL;
}

/*
 * Two opens of one connection are of one file when they are in one share
 * (one tree, or two trees of the share: two sessions, or a client that
 * connected it twice) and name it alike (px_same_file_name: "f" and
 * "F::$DATA"), or the server gave both the same on-disk id (a hard link,
 * a case variant beyond ASCII).
 */
bool
px_open_same_file(const struct px_ledger *l, const struct px_open *x,
    const struct px_open *o)
{
	const struct px_tree *a, *b;

	if (x == o)
		return true;
	/* the on-disk id names the volume too: the same file through any
	 * share of the server */
	if (px_open_same_id(x, o))
		return true;
	if (px_open_other_file(x, o))
		return false;
	if (x->session_id != o->session_id || x->tree_id != o->tree_id) {
		if ((a = tree_of(l, x)) == NULL || (b = tree_of(l, o)) == NULL ||
		    strcasecmp(a->share, b->share) != 0)
			return false;
	}
	return x->name != NULL && o->name != NULL &&
	    px_same_file_name(x->name, o->name);
}

struct px_open *
px_open_find_lease(struct px_ledger *l, const uint8_t *key)
{
	struct px_open *o;

	for (o = l->opens; o; o = o->next)
		if (o->has_lease && memcmp(o->lease_key, key, 16) == 0)
			return o;
	return NULL;
}

/* Drop the opens of a tree (tid set) or of a whole session. */
static void
drop_opens(struct px_ledger *l, uint64_t sid, bool all_trees, uint32_t tid)
{
	struct px_open *o, *next;

	for (o = l->opens; o != NULL; o = next) {
		next = o->next;
		if (o->session_id == sid && (all_trees || o->tree_id == tid)) {
			px_opens_unlink(l, o);
			/* the server closed it with the session or tree: no
			 * request of it is left to carry the error */
			if (o->failed_status) {
				px_stats.deferred_unreported++;
				log_warnx("conn=%llu file=%s deferred write error "
				    "0x%08x not reported: its %s ended first",
				    (unsigned long long)l->conn_id,
				    o->name ? o->name : "?", o->failed_status,
				    all_trees ? "session" : "tree");
			}
			px_open_free(o);
		}
	}
}

static void
drop_trees(struct px_ledger *l, uint64_t sid, bool all, uint32_t tid)
{
	struct px_tree *t, **pp = &l->trees;

	while ((t = *pp) != NULL) {
		if (t->session_id == sid && (all || t->tree_id == tid)) {
			*pp = t->next;
			free(t);
		} else
			pp = &t->next;
	}
	drop_opens(l, sid, all, tid);
}

bool
px_open_read_access(const struct px_open *o)
{
	uint32_t a = o->desired_access;

	if (a & (FILE_READ_DATA | GENERIC_READ | GENERIC_ALL))
		return true;
	return (a & MAXIMUM_ALLOWED) && (o->maximal_access & FILE_READ_DATA);
}

bool
px_open_write_access(const struct px_open *o)
{
	uint32_t a = o->desired_access;

	if (a & (FILE_WRITE_DATA | GENERIC_WRITE | GENERIC_ALL))
		return true;
	/* MAXIMUM_ALLOWED only if the server's maximal access grants write */
	return (a & MAXIMUM_ALLOWED) && (o->maximal_access & FILE_WRITE_DATA);
}

/* smbaccel's own right on o (struct px_plock): bits of `bit` held and
 * no break of it in progress. */
static bool
proxy_caching(const struct px_open *o, uint32_t bit)
{
	if (o->pl.kind == PX_PL_NONE || !(o->pl.state & bit))
		return false;
	return !o->pl.breaking || (bit == SMB2_LEASE_WRITE && o->pl.starved);
}

bool
px_open_write_caching(const struct px_open *o)
{
	if (proxy_caching(o, SMB2_LEASE_WRITE))
		return true;
	if (o->oplock == SMB2_OPLOCK_LEVEL_LEASE)
		return o->has_lease && (o->lease_state & SMB2_LEASE_WRITE);
	return o->oplock == SMB2_OPLOCK_LEVEL_EXCLUSIVE ||
	    o->oplock == SMB2_OPLOCK_LEVEL_BATCH;
}

bool
px_open_read_caching(const struct px_open *o)
{
	if (proxy_caching(o, SMB2_LEASE_READ))
		return true;
	if (o->oplock == SMB2_OPLOCK_LEVEL_LEASE)
		return o->has_lease && (o->lease_state & SMB2_LEASE_READ);
	return o->oplock == SMB2_OPLOCK_LEVEL_II ||
	    o->oplock == SMB2_OPLOCK_LEVEL_EXCLUSIVE ||
	    o->oplock == SMB2_OPLOCK_LEVEL_BATCH;
}

bool
px_open_read_gate(const struct px_tree *t, const struct px_open *o)
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

bool
px_open_proxy_write(const struct px_open *o)
{
	return o->pl.kind != PX_PL_NONE && (o->pl.state & SMB2_LEASE_WRITE);
}

/* ---- requests ----------------------------------------------------------- */

/* Ids a request consumes: CreditCharge, with 0 meaning 1 (MS-SMB2 3.3.5.2.3:
 * 2.0.2 and NEGOTIATE have charge 0). */
static uint64_t
charge_of(const struct px_ledger *l, const struct smb2_hdr *h)
{
	if (h->credit_charge == 0)
		return 1;
	if (l->dialect == SMB2_DIALECT_0202)
		return 1;
	return h->credit_charge;
}

void
px_ledger_smb1_negotiate(struct px_ledger *l)
{
	struct px_pending *p;

	if (l->cr.client_next > 0 || px_pending_find(l, 0) != NULL ||
	    (p = px_pending_add(l, 0)) == NULL)
		return;
	p->command = SMB2_NEGOTIATE;
	p->charge = 1;
	p->origin = PX_ORIGIN_CLIENT;
	l->cr.client_next = 1;
	l->cr.client_outstanding++;
}

/* Some clients put 0 or all-FF in a related element's SessionId and
 * TreeId; the server takes the previous element's either way. */
void
px_ledger_req_ids(const struct px_ledger *l, const struct smb2_hdr *h,
    uint64_t *sid, uint32_t *tid)
{
	bool related = (h->flags & SMB2_FLAGS_RELATED_OPERATIONS) != 0;

	*sid = related ? l->chain_session_id : h->session_id;
	*tid = related ? l->chain_tree_id : h->tree_id;
}

const char *
px_ledger_bad_ids(struct px_ledger *l, const struct smb2_hdr *h)
{
	uint64_t charge;

	if (h->command == SMB2_CANCEL)
		return NULL;    /* the id of the request it cancels */
	charge = charge_of(l, h);
	if (h->message_id + charge < h->message_id)
		return "wrapping around";
	/* beyond the credits granted only counts (LEDGER_ERR): servers
	 * differ (impacket's takes them), and the pending bound below
	 * holds the state it makes */
	if (px_pending_find(l, h->message_id) != NULL)
		return "already in use";
	if (l->npending >= PX_PENDING_MAX)
		return "one too many in flight";
	return NULL;
}

bool
px_ledger_frame_bad_ids(struct px_ledger *l, const uint8_t *msg, size_t mlen,
    int n)
{
	static struct px_lograte rate;
	struct smb2_hdr h;
	const char *why;
	size_t off = 0;
	char more[64];
	int i;

	for (i = 0; i < n; i++) {
		if (px_smb2_hdr_decode(msg, mlen, off, &h) == -1)
			return false;   /* the relay judges what does not decode */
		off += h.elem_len;
		if ((why = px_ledger_bad_ids(l, &h)) == NULL)
			continue;
		px_stats.bad_message_ids++;
		if (px_lograte_ok(&rate, px_now_ms(), PX_LOGRATE_BURST,
		    PX_LOGRATE_MS))
			log_warnx("conn=%llu the client sent a %s with message "
			    "id %llu, %s (the client holds ids below %llu): "
			    "smbaccel closes the connection "
			    "(reason=bad-message-id)%s",
			    (unsigned long long)l->conn_id,
			    px_smb2_cmd_name(h.command),
			    (unsigned long long)h.message_id, why,
			    (unsigned long long)l->cr.C,
			    px_lograte_more(&rate, more, sizeof(more)));
		return true;
	}
	return false;
}

struct px_pending *
px_ledger_client_request(struct px_ledger *l, const struct smb2_hdr *h,
    const struct smb2_elem *e, bool in_compound,
    const struct smb2_fileid *related_fid)
{
	struct px_pending *p;
	uint64_t charge;

	if (h->command == SMB2_CANCEL)
		return NULL; /* no credit, no response (MS-SMB2 3.2.4.24) */
	charge = charge_of(l, h);
	if (h->message_id + charge < h->message_id ||
	    h->message_id + charge > l->cr.C)
		LEDGER_ERR(l, "conn=%llu ledger=inconsistent request mid=%llu "
		    "charge=%llu beyond client limit C=%llu",
		    (unsigned long long)l->conn_id,
		    (unsigned long long)h->message_id,
		    (unsigned long long)charge, (unsigned long long)l->cr.C);
	if (px_pending_find(l, h->message_id) != NULL) {
		LEDGER_ERR(l, "conn=%llu ledger=inconsistent duplicate mid=%llu",
		    (unsigned long long)l->conn_id,
		    (unsigned long long)h->message_id);
		return NULL;
	}
	if ((p = px_pending_add(l, h->message_id)) == NULL)
		return NULL;
	p->command = h->command;
	p->charge = (uint16_t)charge;
	p->origin = PX_ORIGIN_CLIENT;
	p->in_compound = in_compound;
	p->related = (h->flags & SMB2_FLAGS_RELATED_OPERATIONS) != 0;
	p->signed_rq = (h->flags & SMB2_FLAGS_SIGNED) != 0;
	p->replay = (h->flags & SMB2_FLAGS_REPLAY_OPERATION) != 0;
	px_ledger_req_ids(l, h, &p->session_id, &p->tree_id);
	l->chain_session_id = p->session_id;
	l->chain_tree_id = p->tree_id;
	co_client_sent(&l->cr, h->message_id, charge, h->credit);

	if (px_smb2_req_file_id(e, h->command, &p->fid) == 0) {
		struct px_open *o;

		if (px_fileid_is_related(&p->fid) && related_fid)
			p->fid = *related_fid;
		/* the server takes a newer ChannelSequence of any request
		 * naming the open as the open's (3.3.5.2.10) */
		if ((o = px_open_find(l, &p->fid)) != NULL)
			px_open_csn_seen(o, h);
	}

	switch (h->command) {
	case SMB2_NEGOTIATE: {
		struct smb2_negotiate_req nr;

		if (px_smb2_negotiate_req_decode(e, &nr) == 0) {
			l->client_security_mode = nr.security_mode;
			memcpy(l->client_guid, nr.client_guid, 16);
		}
		break;
	}
	case SMB2_SESSION_SETUP: {
		struct smb2_session_setup_req sr;

		if (px_smb2_session_setup_req_decode(e, &sr) == 0) {
			struct px_session *s;

			p->u.sess.security_mode = sr.security_mode;
			p->u.sess.binding =
			    (sr.flags & SMB2_SESSION_FLAG_BINDING) != 0;
			/* a re-authentication: if it fails the server
			 * deletes the session, so nothing of it is acted on
			 * until it has succeeded */
			if (!p->u.sess.binding &&
			    (s = px_session_find(l, h->session_id)) != NULL &&
			    s->established)
				s->reauthing = true;
		}
		break;
	}
	case SMB2_TREE_CONNECT: {
		struct smb2_tree_connect_req tr;

		if (px_smb2_tree_connect_req_decode(e, &tr) == 0)
			p->u.tcon.path = strdup(tr.path);
		break;
	}
	case SMB2_CREATE: {
		struct smb2_create_req *cr = malloc(sizeof(*cr));

		p->u.create.rw_oplock = -1;     /* not rewritten (create.c) */
		if (cr && px_smb2_create_req_decode(e, cr) == 0) {
			p->u.create.desired_access = cr->desired_access;
			p->u.create.create_options = cr->create_options;
			p->u.create.disposition = cr->create_disposition;
			p->u.create.oplock = cr->requested_oplock;
			p->u.create.name = strdup(cr->name);
			p->u.create.reconnect = cr->has_reconnect;
			p->u.create.reconnect_persistent =
			    cr->reconnect_fid.persistent;
		}
		free(cr);
		break;
	}
	case SMB2_OPLOCK_BREAK: {
		struct smb2_oplock_break b;

		if (px_smb2_oplock_break_decode(e, &b) == 0) {
			p->u.ack.lease = b.kind != SMB2_BREAK_OPLOCK;
			p->u.ack.oplock_level = b.oplock_level;
			p->u.ack.lease_state = b.new_state;
			memcpy(p->u.ack.lease_key, b.lease_key, 16);
			if (!p->u.ack.lease)
				p->fid = b.file_id;
		}
		break;
	}
	default:
		break;
	}
	return p;
}

/* ---- responses ------------------------------------------------------------ */

static void
split_unc(const char *path, char *server, size_t slen, char *share,
    size_t shlen)
{
	const char *p = path, *q;

	while (*p == '\\' || *p == '/')
		p++;
	q = p + strcspn(p, "\\/");
	snprintf(server, slen, "%.*s", (int)(q - p), p);
	while (*q == '\\' || *q == '/')
		q++;
	snprintf(share, shlen, "%.*s", (int)strcspn(q, "\\/"), q);
}

static void
on_tree_connect(struct px_ledger *l, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p)
{
	struct smb2_tree_connect_rsp tr;
	struct px_tree *t;

	if (h->status != NT_STATUS_SUCCESS ||
	    px_smb2_tree_connect_rsp_decode(e, &tr) == -1)
		return;
	if ((t = px_tree_find(l, h->session_id, h->tree_id)) == NULL) {
		if ((t = calloc(1, sizeof(*t))) == NULL)
			return;
		t->next = l->trees;
		l->trees = t;
	}
	t->session_id = h->session_id;
	t->tree_id = h->tree_id;
	t->share_flags = tr.share_flags;
	t->maximal_access = tr.maximal_access;
	split_unc(p->u.tcon.path ? p->u.tcon.path : "", t->server,
	    sizeof(t->server), t->share, sizeof(t->share));
	t->stats = NULL;
	/* a request whose path did not decode (an extension, a path too
	 * long or not UTF-16) names no section: its share's policy cannot
	 * be known, so none of smbaccel's gates opens (not [global]'s) */
	if (tr.share_type != SMB2_SHARE_TYPE_DISK || p->u.tcon.path == NULL) {
		memset(&t->policy, 0, sizeof(t->policy)); /* gates off */
		if (tr.share_type == SMB2_SHARE_TYPE_DISK)
			log_info("conn=%llu tree=0x%x path of its TREE_CONNECT "
			    "not decoded: relayed without acceleration",
			    (unsigned long long)l->conn_id, h->tree_id);
		return;
	}
	pol_share_lookup(l->cfg, t->server, t->share, &t->policy);
	/* a share with CompressData on a connection that negotiated
	 * compression: the server may answer any READ compressed, which
	 * smbaccel cannot read: it fetches nothing there (and the client's
	 * first READ turns the connection opaque, px_ledger_read_compressed) */
	if (l->compression && (tr.share_flags & SMB2_SHAREFLAG_COMPRESS_DATA)) {
		t->policy.read_ahead = POL_GATE_OFF;
		t->policy.read_cache = false;
	}
	if ((t->stats = px_share_stats_get(t->server, t->share)) != NULL)
		t->stats->tree_connects++;
}

static void
on_create(struct px_ledger *l, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p,
    struct smb2_fileid *last_create_fid)
{
	struct smb2_create_rsp cr;
	struct px_session *s;
	struct px_tree *t;
	struct px_open *o;

	if (h->status != NT_STATUS_SUCCESS ||
	    px_smb2_create_rsp_decode(e, &cr) == -1)
		return;
	if (last_create_fid)
		*last_create_fid = cr.file_id;
	if ((o = px_open_find(l, &cr.file_id)) != NULL) {
		/* a CREATE the client replayed (3.x, after a channel failed)
		 * is answered with the open it made the first time
		 * (MS-SMB2 3.3.5.9.10): the same open, not a second one */
		if (!p->replay)
			LEDGER_ERR(l, "conn=%llu ledger=inconsistent CREATE "
			    "returned a file id already open",
			    (unsigned long long)l->conn_id);
		return;
	}
	if ((o = calloc(1, sizeof(*o))) == NULL)
		return;
	o->serial = ++open_serial;
	o->fid = cr.file_id;
	/* the open is of the request's session and tree: an answer that went
	 * async (STATUS_PENDING first: the server waited for another client's
	 * lease or oplock break) holds its AsyncId where a sync one holds the
	 * tree id (MS-SMB2 2.2.1.1, 2.2.1.2), and a related request's answer
	 * may echo the 0 or all-FF its request had */
	o->session_id = p->session_id;
	o->tree_id = p->tree_id;
	/* every tree of a session is connected on its connection, but for a
	 * session bound to a second one (multichannel) */
	if ((t = px_tree_find(l, o->session_id, o->tree_id)) != NULL)
		o->share_stats = t->stats;
	else if ((s = px_session_find(l, o->session_id)) == NULL ||
	    !s->multichannel)
		LEDGER_ERR(l, "conn=%llu ledger=inconsistent CREATE answered "
		    "for tree 0x%x of session 0x%llx, which it does not know",
		    (unsigned long long)l->conn_id, (unsigned int)o->tree_id,
		    (unsigned long long)o->session_id);
	o->name = p->u.create.name;
	o->name_hash = px_name_hash(o->name);
	p->u.create.name = NULL;
	o->desired_access = p->u.create.desired_access;
	o->create_options = p->u.create.create_options;
	o->oplock = cr.oplock_level;
	o->has_lease = cr.has_lease;
	memcpy(o->lease_key, cr.lease_key, 16);
	o->lease_state = cr.lease_state;
	/* the key's lease is being broken (MS-SMB2 2.2.14.2.10: an open
	 * joining it gets the state from before the break, flagged): no
	 * caching on this open until the acknowledgement is seen, as for
	 * the opens the break notification named (smbaccel's own lease:
	 * pl.breaking, below) */
	if (cr.has_lease && p->u.create.pl_kind != PX_PL_LEASE &&
	    (cr.lease_flags & SMB2_LEASE_FLAG_BREAK_IN_PROGRESS))
		o->breaking = true;
	/* what the client is answered of a request smbaccel rewrote */
	if (p->u.create.rw_oplock >= 0)
		o->oplock = (uint8_t)p->u.create.rw_oplock;
	if (p->u.create.pl_kind == PX_PL_LEASE) {
		/* the lease in the answer is smbaccel's, not the client's */
		o->has_lease = false;
		o->lease_state = 0;
		memset(o->lease_key, 0, 16);
		if (cr.has_lease &&
		    memcmp(cr.lease_key, p->u.create.pl_key, 16) == 0 &&
		    cr.oplock_level == SMB2_OPLOCK_LEVEL_LEASE) {
			o->pl.kind = PX_PL_LEASE;
			memcpy(o->pl.key, cr.lease_key, 16);
			o->pl.state = cr.lease_state &
			    (SMB2_LEASE_READ | SMB2_LEASE_WRITE);
			o->pl.breaking = (cr.lease_flags &
			    SMB2_LEASE_FLAG_BREAK_IN_PROGRESS) != 0;
		}
	} else if (p->u.create.pl_kind == PX_PL_OPLOCK &&
	    (cr.oplock_level == SMB2_OPLOCK_LEVEL_II ||
	    cr.oplock_level == SMB2_OPLOCK_LEVEL_EXCLUSIVE)) {
		o->pl.kind = PX_PL_OPLOCK;
		o->pl.oplock = cr.oplock_level;
		o->pl.state = cr.oplock_level == SMB2_OPLOCK_LEVEL_II ?
		    SMB2_LEASE_READ : SMB2_LEASE_READ | SMB2_LEASE_WRITE;
	}
	o->durable = cr.durable || p->u.create.reconnect;
	o->reopened = p->u.create.reconnect;
	o->reopened_persistent = p->u.create.reconnect_persistent;
	o->size_hint = cr.end_of_file;
	o->dcv.creation = cr.creation_time;
	o->dcv.last_write = cr.last_write_time;
	o->dcv.change = cr.change_time;
	o->dcv.eof = cr.end_of_file;
	o->dcv.has_disk_id = cr.has_disk_id;
	memcpy(o->dcv.disk_id, cr.disk_id, sizeof(o->dcv.disk_id));
	o->is_dir = (cr.file_attributes & 0x10) != 0 ||  /* ATTRIBUTE_DIRECTORY */
	    (p->u.create.create_options & FILE_DIRECTORY_FILE) != 0;
	if (cr.has_mxac && cr.mxac_status == NT_STATUS_SUCCESS)
		o->maximal_access = cr.maximal_access;
	co_extent_init(&o->wb);
	co_ra_init(&o->ra);
	if (px_opens_link(l, o) == -1)
		px_open_free(o);
}

static void
on_negotiate(struct px_ledger *l, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct smb2_negotiate_rsp nr;

	if (h->status != NT_STATUS_SUCCESS ||
	    px_smb2_negotiate_rsp_decode(e, &nr) == -1)
		return;
	l->dialect = nr.dialect;
	l->server_security_mode = nr.security_mode;
	l->capabilities = nr.capabilities;
	l->max_read = nr.max_read;
	l->max_write = nr.max_write;
	l->max_transact = nr.max_transact;
	l->server_time = nr.system_time;
	l->cipher = nr.dialect >= SMB2_DIALECT_0300 &&
	    nr.dialect != SMB2_DIALECT_WILDCARD ? nr.cipher : 0;
	/* 3.0/3.0.2 have one cipher: AES-128-CCM when the server can encrypt */
	if ((nr.dialect == SMB2_DIALECT_0300 || nr.dialect == SMB2_DIALECT_0302) &&
	    (nr.capabilities & SMB2_GLOBAL_CAP_ENCRYPTION))
		l->cipher = 1;
	/* no SIGNING_CAPABILITIES answer: AES-CMAC (MS-SMB2 3.2.5.2) */
	l->signing_alg = nr.has_signing_alg ? nr.signing_alg : 1;
	l->compression = nr.dialect == SMB2_DIALECT_0311 && nr.compression;
	l->negotiated = nr.dialect != SMB2_DIALECT_WILDCARD;
}

static void
on_session_setup(struct px_ledger *l, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p)
{
	struct smb2_session_setup_rsp sr;
	struct px_session *s = px_session_find(l, h->session_id);

	if (h->status != NT_STATUS_SUCCESS &&
	    h->status != NT_STATUS_MORE_PROCESSING_REQUIRED) {
		/* a failed first authentication leaves no session */
		if (s && !s->established) {
			struct px_session **pp;

			for (pp = &l->sessions; *pp != s; pp = &(*pp)->next)
				;
			*pp = s->next;
			px_session_free(s);
		}
		/* a failed re-authentication: px_wb_expiry_seen */
		return;
	}
	if (s == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return;
		s->id = h->session_id;
		s->next = l->sessions;
		l->sessions = s;
	}
	if (h->status != NT_STATUS_SUCCESS ||
	    px_smb2_session_setup_rsp_decode(e, &sr) == -1)
		return;
	if (s->established && !p->u.sess.binding) {
		/* a re-authentication: the session keeps its flags (a
		 * client does not read them again, MS-SMB2 3.2.5.3; smbd
		 * answers a re-authentication with SessionFlags 0) */
		s->reauthing = false;
		return;
	}
	s->established = true;
	s->multichannel |= p->u.sess.binding;
	s->guest = (sr.session_flags & SMB2_SESSION_FLAG_IS_GUEST) != 0;
	s->anonymous = (sr.session_flags & SMB2_SESSION_FLAG_IS_NULL) != 0;
	s->encrypt = (sr.session_flags & SMB2_SESSION_FLAG_ENCRYPT_DATA) != 0;
	/* MS-SMB2 3.3.5.5.3: required if either side requires it */
	s->signing_required =
	    ((l->server_security_mode | p->u.sess.security_mode |
	    l->client_security_mode) & SMB2_NEGOTIATE_SIGNING_REQUIRED) != 0 &&
	    !s->guest && !s->anonymous;
}

static void
on_close(struct px_ledger *l, const struct smb2_hdr *h, struct px_pending *p,
    const struct smb2_fileid *last_create_fid)
{
	struct smb2_fileid fid = p->fid;
	struct px_open *o;

	if (px_fileid_is_related(&fid) && last_create_fid)
		fid = *last_create_fid;
	if ((o = px_open_find(l, &fid)) == NULL)
		return;
	/* A CLOSE the server refused before it looked for the open leaves
	 * the handle open, and the client may go on using it.  Forgotten,
	 * its WRITEs went by unseen and another open's read-ahead of the
	 * file served what they overwrote (t_ra_close_failed).  Refused so:
	 * a failed CLOSE naming the open from another session or tree (one
	 * that does not exist, MS-SMB2 3.3.5.2.9 and 3.3.5.2.11; another
	 * session's, 3.3.5.10), and one from its own whose signature is bad
	 * (ACCESS_DENIED, 3.3.5.2.4) or whose header is refused
	 * (INVALID_PARAMETER: a flag the dialect does not define), as smbd
	 * answers them.  Any other answer: the handle is gone (smbd frees it
	 * also when closing it fails; FILE_CLOSED: there was none).  Not
	 * told apart: an ACCESS_DENIED or INVALID_PARAMETER of the close
	 * itself (smbd's unlink of a delete-on-close file refused), whose
	 * open is then kept here until it is closed again or the
	 * connection ends.  An expired session's CLOSE is carried out
	 * (3.3.5.2.9): NETWORK_SESSION_EXPIRED is not a refusal. */
	if (h->status != NT_STATUS_SUCCESS &&
	    (o->session_id != p->session_id || o->tree_id != p->tree_id ||
	    h->status == NT_STATUS_ACCESS_DENIED ||
	    h->status == NT_STATUS_INVALID_PARAMETER)) {
		o->closed = false;      /* px_wb_on_close marked it */
		return;
	}
	if (o->wb.len || o->wb_inflight)
		LEDGER_ERR(l, "conn=%llu ledger=inconsistent CLOSE of file=%s "
		    "with %zu buffered bytes", (unsigned long long)l->conn_id,
		    o->name ? o->name : "", o->wb.len);
	px_opens_unlink(l, o);
	px_open_free(o);
}

static void
on_break_ack(struct px_ledger *l, const struct smb2_hdr *h,
    struct px_pending *p)
{
	struct px_open *o;

	/* smbaccel's own acknowledgements are lease.c's */
	if (h->status != NT_STATUS_SUCCESS || p->origin == PX_ORIGIN_PROXY)
		return;
	if (p->u.ack.lease) {
		for (o = l->opens; o; o = o->next)
			if (o->has_lease &&
			    memcmp(o->lease_key, p->u.ack.lease_key, 16) == 0) {
				o->lease_state = p->u.ack.lease_state;
				o->breaking = false;
			}
	} else if ((o = px_open_find(l, &p->fid)) != NULL) {
		o->oplock = p->u.ack.oplock_level;
		o->breaking = false;
	}
}

void
px_ledger_server_response(struct px_ledger *l, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct smb2_fileid *last_create_fid,
    struct px_pending **pp, bool *interim)
{
	struct px_pending *p;

	*pp = NULL;
	*interim = false;
	p = px_pending_find(l, h->message_id);
	/* grants: S always; C only when the response goes to the client */
	l->cr.S += h->credit;
	if (p == NULL || p->origin == PX_ORIGIN_CLIENT)
		l->cr.C += h->credit;
	/* the server's window as the client sees it: what it may still use */
	if (l->cr.S > l->cr.client_next && l->cr.S - l->cr.client_next > l->window)
		l->window = l->cr.S - l->cr.client_next;
	if (p == NULL) {
		LEDGER_ERR(l, "conn=%llu ledger=inconsistent response to "
		    "unknown mid=%llu cmd=%s", (unsigned long long)l->conn_id,
		    (unsigned long long)h->message_id,
		    px_smb2_cmd_name(h->command));
		return;
	}
	if (p->command != h->command)
		LEDGER_ERR(l, "conn=%llu ledger=inconsistent response mid=%llu "
		    "cmd=%s to request cmd=%s", (unsigned long long)l->conn_id,
		    (unsigned long long)h->message_id,
		    px_smb2_cmd_name(h->command), px_smb2_cmd_name(p->command));
	*pp = p;
	if ((h->flags & SMB2_FLAGS_ASYNC_COMMAND) &&
	    h->status == NT_STATUS_PENDING) {
		/* interim response: credits ride on it; the final one comes
		 * later with the same mid (MS-SMB2 3.3.4.2) */
		if (p->async_id == 0 && h->async_id) {
			l->nasync++;
			if (p->origin == PX_ORIGIN_CLIENT)
				l->cr.client_async++;
		}
		p->async_id = h->async_id;
		*interim = true;
		return;
	}
	px_pending_del(l, p);
	if (p->origin == PX_ORIGIN_CLIENT && l->cr.client_outstanding)
		l->cr.client_outstanding--;
	/* an answer to another command than was asked: nothing of it can be
	 * trusted for sessions, trees or opens (the request's facts are of
	 * another kind) */
	if (p->command != h->command)
		return;

	switch (h->command) {
	case SMB2_NEGOTIATE:
		on_negotiate(l, h, e);
		break;
	case SMB2_SESSION_SETUP:
		on_session_setup(l, h, e, p);
		break;
	case SMB2_LOGOFF:
		if (h->status == NT_STATUS_SUCCESS) {
			struct px_session *s, **sp;

			drop_trees(l, p->session_id, true, 0);
			for (sp = &l->sessions; (s = *sp) != NULL; sp = &s->next)
				if (s->id == p->session_id) {
					*sp = s->next;
					px_session_free(s);
					break;
				}
		}
		break;
	case SMB2_TREE_CONNECT:
		on_tree_connect(l, h, e, p);
		break;
	case SMB2_TREE_DISCONNECT:
		if (h->status == NT_STATUS_SUCCESS)
			drop_trees(l, p->session_id, false, p->tree_id);
		break;
	case SMB2_CREATE:
		on_create(l, h, e, p, last_create_fid);
		break;
	case SMB2_CLOSE:
		on_close(l, h, p, last_create_fid);
		break;
	case SMB2_LOCK:
		if (h->status == NT_STATUS_SUCCESS) {
			/* a related LOCK is of the compound's CREATE */
			struct px_open *o = px_open_find(l,
			    px_fileid_is_related(&p->fid) && last_create_fid ?
			    last_create_fid : &p->fid);

			if (o)
				px_open_lock(l, o);
		}
		break;
	case SMB2_OPLOCK_BREAK:
		on_break_ack(l, h, p);
		break;
	case SMB2_IOCTL: {
		struct smb2_ioctl_rsp io;
		struct px_open *o;

		if (h->status == NT_STATUS_SUCCESS &&
		    px_smb2_ioctl_rsp_decode(e, &io) == 0 &&
		    io.ctl_code == FSCTL_SRV_REQUEST_RESUME_KEY &&
		    io.out_len >= SMB2_RESUME_KEY_LEN &&
		    (o = px_open_find(l, &io.file_id)) != NULL &&
		    o->session_id == p->session_id) {
			memcpy(o->resume_key, io.out, SMB2_RESUME_KEY_LEN);
			o->has_resume_key = true;
		}
		break;
	}
	default:
		break;
	}
}

void
px_ledger_break(struct px_ledger *l, const struct smb2_elem *e)
{
	struct smb2_oplock_break b;
	struct px_open *o;

	if (px_smb2_oplock_break_decode(e, &b) == -1) {
		LEDGER_ERR(l, "conn=%llu ledger=undecodable break notification",
		    (unsigned long long)l->conn_id);
		return;
	}
	if (b.kind == SMB2_BREAK_OPLOCK) {
		if ((o = px_open_find(l, &b.file_id)) != NULL)
			o->breaking = true;
		return;
	}
	for (o = l->opens; o; o = o->next)
		if (o->has_lease && memcmp(o->lease_key, b.lease_key, 16) == 0) {
			o->breaking = true;
			/* without an ack required the new state holds now */
			if (!(b.lease_flags & 0x01))
				o->lease_state = b.new_state;
		}
}

struct px_open *
px_open_alive(struct px_ledger *l, struct px_open *o, uint64_t serial)
{
	struct px_open *x;

	for (x = l->opens; x && x != o; x = x->next)
		;
	return x != NULL && x->serial == serial ? x : NULL;
}
