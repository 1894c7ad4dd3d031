/*
 * lease.c - leases on behalf of clients that ask for none (DESIGN.md
 * section 6).
 *
 * libsmbclient (smbclient, desktop file managers) and many libraries open
 * files without an oplock or lease, so under write_behind = leased and
 * read_ahead = leased they would get nothing.  For such a CREATE, on a
 * share with proxy_lease on, smbaccel asks the server for a lease of its
 * own: R for an open that reads, RW for one that may write, never H (a
 * handle lease would change which durable handles the server grants); at
 * 2.0.2, or on a server without leasing, a level II or exclusive oplock.
 * create.c takes it out of the answer, so the client sees what it would
 * have seen, and the ledger keeps it apart from the client's own (struct
 * px_plock), which px_open_write_caching / px_open_read_caching consult.
 *
 * Lease keys: one per (client GUID, server, share, path, user), so that
 * the opens of one client and user of one file share one lease and never
 * break each other; the first four bytes mark a key as smbaccel's, so
 * that a break of a lease whose opens are gone is still swallowed.
 * Where a name and its file part (a rename, seen or not; a name under
 * another case) open_key picks another key, or an open's (docs/design.md,
 * "Leases on behalf of clients").
 *
 * Breaks: smbaccel's, never the client's.  Every open of the lease (on
 * this connection and on others of the same client) stops absorbing and
 * serving, writes back what it buffered and drops what it cached; the
 * break is acknowledged with the level the server asks for once that
 * data has been written (a break arriving while a flush is in flight
 * waits for it), paid for with the acknowledgement reserve (emit.c) or
 * another spare donated id.  Without one, the break is logged and counted
 * (breaks_unacked) and left to the server's break timeout: an id is never
 * reused.  A break from R alone needs no acknowledgement (MS-SMB2
 * 3.3.1.4).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>

#include "proxy/lease.h"
#include "proxy/coherence.h"
#include "proxy/readahead.h"
#include "proxy/writebehind.h"
#include "proxy/create.h"
#include "proxy/emit.h"

/* The first bytes of every lease key smbaccel asks for. */
static const uint8_t key_mark[4] = { 's', 'a', 'L', '1' };

/* An acknowledgement owed to the server for a break of smbaccel's. */
struct px_lease_owed {
	struct px_lease_owed *next;
	uint8_t kind;               /* PX_PL_LEASE or PX_PL_OPLOCK */
	uint8_t key[16];            /* lease */
	struct smb2_fileid fid;     /* oplock */
	uint32_t state;             /* the state to acknowledge (lease bits) */
	uint8_t level;              /* oplock: the level to acknowledge */
	double since_ms;            /* when the break arrived */
	bool counted;               /* counted in breaks_unacked */
	bool expired;               /* ... and absorbing under it stopped */
	bool have_id;               /* mid is set aside for it */
	uint64_t mid;
};

static unsigned int owed_total;   /* over every connection */

static const char *
state_name(uint32_t st)
{
	static const char *const names[] = { "none", "R", "H", "RH", "W",
	    "RW", "HW", "RWH" };

	return names[st & 7];
}

/* ---- which opens ------------------------------------------------------------ */

static bool
guid_zero(const uint8_t *g)
{
	static const uint8_t zero[16];

	return memcmp(g, zero, 16) == 0;
}

/* Connections that share c's lease keys: c, and those of the same client
 * (GUID) to the same server. */
static bool
same_client(const struct px_conn *c, const struct px_conn *x)
{
	if (x == c)
		return true;
	return x->state != PX_CONN_CLOSED && px_same_server(c, x) &&
	    !guid_zero(c->led.client_guid) &&
	    memcmp(c->led.client_guid, x->led.client_guid, 16) == 0;
}

/* Does open o hold the lease or oplock an acknowledgement is about? */
static bool
open_is(const struct px_open *o, uint8_t kind, const uint8_t *key,
    const struct smb2_fileid *fid)
{
	if (o->pl.kind != kind)
		return false;
	return kind == PX_PL_LEASE ? memcmp(o->pl.key, key, 16) == 0 :
	    px_fileid_eq(&o->fid, fid);
}

/* Call fn on every open of the lease (key) or oplock (fid), on c and the
 * connections that share its keys; returns how many. */
typedef void (*open_fn)(struct px_conn *x, struct px_open *o, void *arg);

static unsigned int
each_open(struct px_conn *c, uint8_t kind, const uint8_t *key,
    const struct smb2_fileid *fid, open_fn fn, void *arg)
{
	struct px_conn *x, *next;
	struct px_open *o;
	unsigned int n = 0;

	for (o = c->led.opens; o; o = o->next)
		if (open_is(o, kind, key, fid)) {
			n++;
			if (fn)
				fn(c, o, arg);
		}
	if (kind != PX_PL_LEASE)
		return n;       /* an oplock is one open's */
	for (x = px_rt.conns; x; x = next) {
		next = x->next;
		if (x == c || !same_client(c, x))
			continue;
		for (o = x->led.opens; o; o = o->next)
			if (open_is(o, kind, key, fid)) {
				n++;
				if (fn)
					fn(x, o, arg);
			}
	}
	return n;
}

/* ---- asking for a lease ------------------------------------------------------ */

/* The user of c's session sid (px_session.user_id), NULL when smbaccel
 * does not know it. */
static const uint8_t *
session_user(struct px_conn *c, uint64_t sid)
{
	const struct px_session *s = px_session_find(&c->led, sid);

	return s != NULL && s->user_known ? s->user_id : NULL;
}

/* Are sessions a of ca and b of cb one user, as lease_key tells them? */
static bool
same_user(struct px_conn *ca, uint64_t a, struct px_conn *cb, uint64_t b)
{
	const uint8_t *ua = session_user(ca, a), *ub = session_user(cb, b);

	return ua == ub || (ua && ub && memcmp(ua, ub, 16) == 0);
}

/* share, ASCII case-folded (share names are case-insensitive), into
 * out[n]. */
static void
fold_share(const char *share, char *out, size_t n)
{
	size_t i;

	for (i = 0; share[i] && i < n - 1; i++)
		out[i] = (char)((share[i] >= 'A' && share[i] <= 'Z') ?
		    share[i] + 32 : share[i]);
	out[i] = '\0';
}

/*
 * The lease key of smbaccel's lease on `name` of tree t for c's client:
 * the mark, then 12 bytes of px_digest16 over the client GUID, the server
 * address, the share (case-folded) and the path as sent ('/' read as
 * '\\', leading separators dropped), and the user of t's session where
 * smbaccel knows it (px_session.user_id: one name of a share whose path
 * is the user's is two users' two files).  A client without a GUID gets
 * keys of its connection only.  The path keeps its case: on a share that
 * tells names apart by case, "A" and "a" are two files, and one key for
 * both would be refused for the second (open_key borrows a case variant's
 * key where it must).
 */
static int
lease_key(struct px_conn *c, const struct px_tree *t, const char *name,
    uint8_t key[16])
{
	char addr[64], share[256], path[1024], peer[64];
	const uint8_t *user = session_user(c, t->session_id);
	const void *parts[7];
	size_t lens[7], i;
	unsigned int n = 0;
	uint8_t d[16];
	uint64_t cid = c->id;

	px_addr_str(&c->dst_addr, addr, sizeof(addr));
	fold_share(t->share, share, sizeof(share));
	while (*name == '\\' || *name == '/')
		name++;
	for (i = 0; name[i] && i < sizeof(path) - 1; i++)
		path[i] = name[i] == '/' ? '\\' : name[i];
	path[i] = '\0';
	parts[n] = c->led.client_guid; lens[n++] = 16;
	parts[n] = addr; lens[n++] = strlen(addr);
	parts[n] = share; lens[n++] = strlen(share);
	parts[n] = path; lens[n++] = strlen(path);
	if (user != NULL) {
		parts[n] = user; lens[n++] = 16;
	}
	if (guid_zero(c->led.client_guid)) {
		px_addr_str(&c->peer_addr, peer, sizeof(peer));
		parts[n] = peer; lens[n++] = strlen(peer);
		parts[n] = &cid; lens[n++] = sizeof(cid);
	}
	if (px_digest16(parts, lens, n, d) == -1)
		return -1;
	memcpy(key, key_mark, 4);
	memcpy(key + 4, d, 12);
	return 0;
}

/* Do paths a and b name the same file as lease_key reads them (leading
 * separators dropped, '/' as '\\'), with ASCII case folded when fold? */
static bool
name_eq(const char *a, const char *b, bool fold)
{
	char x, y;

	while (*a == '\\' || *a == '/')
		a++;
	while (*b == '\\' || *b == '/')
		b++;
	for (;; a++, b++) {
		x = *a == '/' ? '\\' : *a;
		y = *b == '/' ? '\\' : *b;
		if (fold && x >= 'A' && x <= 'Z')
			x = (char)(x + 32);
		if (fold && y >= 'A' && y <= 'Z')
			y = (char)(y + 32);
		if (x != y)
			return false;
		if (x == '\0')
			return true;
	}
}

/*
 * Shares seen to tell names apart by case (the server refused a case
 * variant's key for a name, key_refused): by a digest of the server
 * address and the folded share name, for the daemon's life; the oldest
 * entry goes when the table is full.
 */
#define CASED_MAX 32
static uint8_t cased[CASED_MAX][16];
static unsigned int cased_n;      /* entries ever added */

static int
share_id(const struct px_conn *c, const char *share, uint8_t id[16])
{
	char addr[64], s[256];
	const void *parts[2];
	size_t lens[2];

	px_addr_str(&c->dst_addr, addr, sizeof(addr));
	fold_share(share, s, sizeof(s));
	parts[0] = addr; lens[0] = strlen(addr) + 1;
	parts[1] = s; lens[1] = strlen(s);
	return px_digest16(parts, lens, 2, id);
}

static bool
share_cased(const struct px_conn *c, const char *share)
{
	uint8_t id[16];
	unsigned int i;

	if (share_id(c, share, id) == -1)
		return true;    /* borrow nothing */
	for (i = 0; i < cased_n && i < CASED_MAX; i++)
		if (memcmp(cased[i], id, 16) == 0)
			return true;
	return false;
}

static void
share_learn_cased(const struct px_conn *c, const char *share)
{
	uint8_t id[16];

	if (share_cased(c, share) || share_id(c, share, id) == -1)
		return;
	memcpy(cased[cased_n++ % CASED_MAX], id, 16);
}

/*
 * Renames forwarded and not answered yet: the keys of smbaccel's leases
 * whose file goes away from its name if the server answers SUCCESS
 * (px_lease_renaming, px_lease_rename_done).  Few at a time; freed with
 * their answer or their connection.
 */
struct rename_rec {
	struct rename_rec *next;
	const struct px_conn *c;
	uint64_t mid;
	unsigned int nkeys;
	uint8_t keys[2][16];
};

static struct rename_rec *renames;

/* An open of the lease with this key (arg) whose file was renamed. */
static void
renamed_open(struct px_conn *x, struct px_open *o, void *arg)
{
	(void)x;
	if (o->pl.renamed)
		*(bool *)arg = true;
}

static void
mark_renamed(struct px_conn *x, struct px_open *o, void *arg)
{
	(void)x;
	(void)arg;
	o->pl.renamed = true;
}

/* May a new open of a name not ask key: an open of its lease has had its
 * file renamed away, or a rename of it by this client is on its way (the
 * new open would most likely find another file at the name). */
static bool
key_taken(struct px_conn *c, const uint8_t key[16])
{
	const struct rename_rec *r;
	bool taken = false;
	unsigned int i;

	(void)each_open(c, PX_PL_LEASE, key, NULL, renamed_open, &taken);
	for (r = renames; r && !taken; r = r->next)
		if (same_client(c, r->c))
			for (i = 0; i < r->nkeys; i++)
				if (memcmp(r->keys[i], key, 16) == 0)
					taken = true;
	return taken;
}

/* An open of the lease with this key (arg) that caches writes or is in a
 * break. */
static void
w_open(struct px_conn *x, struct px_open *o, void *arg)
{
	(void)x;
	if ((o->pl.state & SMB2_LEASE_WRITE) || o->pl.breaking)
		*(bool *)arg = true;
}

/* Do opens of this client hold key with read caching only?  Such a lease
 * may be on a file another client renamed away from the name without
 * smbaccel seeing it (the key would be refused), and a new open loses
 * nothing with a key of its own: read caching is shared, and no break
 * needs acknowledging. */
static bool
key_read_only(struct px_conn *c, const uint8_t key[16])
{
	bool w = false;

	return each_open(c, PX_PL_LEASE, key, NULL, w_open, &w) > 0 && !w;
}

/* An open of this client and of the user of session sid of `name` in
 * share under another letter case, holding smbaccel's lease with write
 * caching or in a break of it (another user's is another user's key). */
static const struct px_open *
case_variant(struct px_conn *c, uint64_t sid, const char *share,
    const char *name)
{
	struct px_conn *x;
	struct px_open *o;

	for (x = px_rt.conns; x; x = x->next) {
		if (!same_client(c, x))
			continue;
		for (o = x->led.opens; o; o = o->next)
			if (o->pl.kind == PX_PL_LEASE && !o->pl.renamed &&
			    ((o->pl.state & SMB2_LEASE_WRITE) || o->pl.breaking) &&
			    o->name != NULL && name_eq(o->name, name, true) &&
			    !name_eq(o->name, name, false) &&
			    strcasecmp(px_tree_share(x, o), share) == 0 &&
			    same_user(c, sid, x, o->session_id) &&
			    !key_taken(c, o->pl.key))
				return o;
	}
	return NULL;
}

/*
 * The key for a new open of `name`: lease_key's, unless an open of
 * smbaccel's lease with that key belongs to a file renamed away from the
 * name (the lease goes with its file: the server refuses the key for
 * another file, STATUS_INVALID_PARAMETER, MS-SMB2 3.3.5.9.8), or the
 * opens holding it cache reads only (key_read_only: a rename smbaccel did
 * not see is not told by anything, and a CREATE that would succeed
 * directly must not fail for smbaccel's lease).  Then the next of a chain
 * of keys derived from it that no such open holds, up to 8.
 *
 * And when no open holds that key but one of the client's opens of the
 * name under another letter case holds smbaccel's lease with W (or in a
 * break): that open's key.  On a share that ignores case (Samba's
 * default for SMB2, Windows) it is the same file, and a second key would
 * break the first lease's write caching, whose acknowledgement may have
 * no id to be paid with while the client waits for this CREATE: the
 * server's break timeout, 35 s.  Only then, and not on a share seen to
 * tell case apart (there the server refuses it once, px_lease_answered):
 * case is never folded into the key itself, which would give two files of
 * such a share one key.
 */
static int
open_key(struct px_conn *c, const struct px_tree *t, const char *name,
    uint8_t key[16])
{
	const struct px_open *v;
	const void *parts[2];
	size_t lens[2];
	uint8_t d[16];
	unsigned int i;

	if (lease_key(c, t, name, key) == -1)
		return -1;
	for (i = 0; key_taken(c, key) || key_read_only(c, key); i++) {
		if (i == 7)
			return -1;
		parts[0] = key; lens[0] = 16;
		parts[1] = "renamed"; lens[1] = 7;
		if (px_digest16(parts, lens, 2, d) == -1)
			return -1;
		memcpy(key + 4, d, 12);
	}
	if (each_open(c, PX_PL_LEASE, key, NULL, NULL, NULL) == 0 &&
	    !share_cased(c, t->share) &&
	    (v = case_variant(c, t->session_id, t->share, name)) != NULL) {
		log_debug("conn=%llu share=%s file=%s asks the key of smbaccel's "
		    "lease of %s (the same name under another case)",
		    (unsigned long long)c->id, t->share, name, v->name);
		memcpy(key, v->pl.key, 16);
	}
	return 0;
}

void
px_lease_renaming(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct smb2_set_info_req si;
	struct rename_rec *r;
	struct px_open *o;
	struct px_tree *t;
	uint8_t key[16];

	if (h->command != SMB2_SET_INFO ||
	    px_smb2_set_info_req_decode(e, &si) == -1 ||
	    si.info_type != SMB2_0_INFO_FILE ||
	    !px_smb2_info_renames(si.info_class) ||
	    (o = px_open_find(&c->led, &si.file_id)) == NULL ||
	    (r = calloc(1, sizeof(*r))) == NULL)
		return;
	/* the renaming open's lease, and the one its name's opens hold
	 * (a handle opened only to rename holds none) */
	if (o->pl.kind == PX_PL_LEASE)
		memcpy(r->keys[r->nkeys++], o->pl.key, 16);
	if (o->name != NULL &&
	    (t = px_tree_find(&c->led, o->session_id, o->tree_id)) != NULL &&
	    open_key(c, t, o->name, key) == 0 &&
	    (r->nkeys == 0 || memcmp(key, r->keys[0], 16) != 0) &&
	    each_open(c, PX_PL_LEASE, key, NULL, NULL, NULL) > 0)
		memcpy(r->keys[r->nkeys++], key, 16);
	if (r->nkeys == 0) {
		free(r);
		return;
	}
	r->c = c;
	r->mid = h->message_id;
	r->next = renames;
	renames = r;
}

void
px_lease_rename_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p)
{
	struct rename_rec *r, **pp;
	unsigned int i;

	for (pp = &renames; (r = *pp) != NULL; pp = &r->next)
		if (r->c == c && r->mid == p->mid)
			break;
	if (r == NULL)
		return;
	*pp = r->next;
	/* a rename that failed leaves the file, and its lease, at its name */
	if (h->status == NT_STATUS_SUCCESS)
		for (i = 0; i < r->nkeys; i++)
			(void)each_open(c, PX_PL_LEASE, r->keys[i], NULL,
			    mark_renamed, NULL);
	else
		log_debug("conn=%llu rename answered 0x%08x: smbaccel's lease "
		    "stays with its name", (unsigned long long)c->id, h->status);
	free(r);
}

static bool
reads(uint32_t access)
{
	return (access & (FILE_READ_DATA | GENERIC_READ | GENERIC_ALL |
	    MAXIMUM_ALLOWED)) != 0;
}

static bool
writes(uint32_t access)
{
	return (access & (FILE_WRITE_DATA | GENERIC_WRITE | GENERIC_ALL |
	    MAXIMUM_ALLOWED)) != 0;
}

/* An open of smbaccel's lease with this key (arg), caching writes and
 * not breaking. */
static bool
lease_with_w(const struct px_conn *x, const struct px_open *o,
    const void *key)
{
	(void)x;
	return o->pl.kind == PX_PL_LEASE && !o->closed && !o->pl.breaking &&
	    (o->pl.state & SMB2_LEASE_WRITE) && memcmp(o->pl.key, key, 16) == 0;
}

/* Does smbaccel's lease with this key cache writes, on an open of c's
 * server (any connection of the client)?  Its state then, else 0. */
static uint32_t
held_with_w(struct px_conn *c, const uint8_t key[16])
{
	struct px_open *o = px_server_open_find(c, lease_with_w, key, NULL);

	return o ? o->pl.state : 0;
}

void
px_lease_edit(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_create_edit *ed,
    struct px_lease_ask *ask)
{
	struct smb2_create_req *cr = NULL;
	struct px_tree *t;
	uint8_t data[SMB2_LEASE_V2_LEN];
	bool want_r, want_w, lease, locked;
	uint32_t held;
	size_t n;

	memset(ask, 0, sizeof(*ask));
	t = px_tree_find(&c->led, h->session_id, h->tree_id);
	if (t == NULL || !t->policy.proxy_lease || !c->led.negotiated ||
	    (t->policy.write_behind != POL_GATE_LEASED &&
	    t->policy.read_ahead != POL_GATE_LEASED))
		return;
	if ((cr = malloc(sizeof(*cr))) == NULL ||
	    px_smb2_create_req_decode(e, cr) == -1)
		goto out;
	/*
	 * Only a plain open of a file by a client that asks for no caching
	 * itself: a client's own oplock or lease is never altered; durable
	 * and reconnect requests are not touched (a reconnect must name the
	 * lease of the original open); no directories (FILE_DIRECTORY_FILE),
	 * share roots or streams.
	 */
	if (cr->requested_oplock != SMB2_OPLOCK_LEVEL_NONE || cr->has_lease ||
	    cr->has_durable || cr->has_reconnect ||
	    (cr->create_options & FILE_DIRECTORY_FILE) || cr->name[0] == '\0' ||
	    strchr(cr->name, ':') != NULL)
		goto out;
	/*
	 * Write caching only for an open that creates or truncates the file:
	 * its writes follow at once and donate the ids an acknowledgement
	 * needs.  An open of an existing file for writing (an editor that
	 * keeps it open and idle) would hold W with no id to acknowledge a
	 * break with, and another client's open would wait for the server's
	 * break timeout: it gets read caching only.
	 */
	want_w = t->policy.write_behind == POL_GATE_LEASED &&
	    writes(cr->desired_access) &&
	    !(cr->create_options & FILE_WRITE_THROUGH) &&
	    (cr->create_disposition == FILE_SUPERSEDE ||
	    cr->create_disposition == FILE_CREATE ||
	    cr->create_disposition == FILE_OVERWRITE ||
	    cr->create_disposition == FILE_OVERWRITE_IF);
	want_r = want_w || (t->policy.read_ahead == POL_GATE_LEASED &&
	    reads(cr->desired_access));
	lease = c->led.dialect >= SMB2_DIALECT_0210 &&
	    c->led.dialect != SMB2_DIALECT_WILDCARD &&
	    (c->led.capabilities & SMB2_GLOBAL_CAP_LEASING);
	if (lease && open_key(c, t, cr->name, ask->key) == -1)
		goto out;
	/*
	 * A file with byte-range locks seen through smbaccel: with a lease
	 * caching reads (writes), Samba's `strict locking = auto` would skip
	 * the lock check of this open's reads (writes), which a client that
	 * asked for no lease expects the server to make.  No lease; opens
	 * already holding one are checked by locks.c.
	 */
	locked = px_coh_path_locked(c, t->share, cr->name);
	/*
	 * An open that would get no lease (a locked file, or no data access:
	 * attributes, security, delete) where this client already holds
	 * smbaccel's lease of the file with W: lease-less, it would break
	 * that lease (smbd breaks W for any other open that is not a stat
	 * open, RW to none for an overwrite), and the break needs an
	 * acknowledgement that no donated id may be there to pay for while
	 * the client waits for this CREATE, which would then wait for the
	 * server's break timeout (smbtorture smb2.create.brlocked, and
	 * smb2.getinfo's opens for each access mask in keyed sessions: 35 s
	 * each).  It joins the lease instead (same key, same state: the
	 * server breaks no open of its own lease); locks.c checks a joined
	 * open's reads and writes as it checks the first open's.
	 */
	held = lease && (locked || !want_r) ? held_with_w(c, ask->key) : 0;
	if (held != 0) {
		px_stats.pl_joined++;
		ask->state = held & (SMB2_LEASE_READ | SMB2_LEASE_WRITE);
		log_debug("conn=%llu share=%s file=%s %s, but smbaccel's lease "
		    "of it caches writes: this open joins it rather than break "
		    "it", (unsigned long long)c->id, t->share, cr->name,
		    locked ? "byte-range locks on the file" :
		    "an open without data access");
	} else if (!want_r) {
		goto out;
	} else if (locked) {
		px_stats.pl_locked++;
		log_debug("conn=%llu share=%s file=%s byte-range locks on the "
		    "file: no lease of smbaccel's for this open",
		    (unsigned long long)c->id, t->share, cr->name);
		goto out;
	} else
		ask->state = SMB2_LEASE_READ | (want_w ? SMB2_LEASE_WRITE : 0);
	if (lease) {
		n = px_smb2_lease_ctx_encode(data, sizeof(data), ask->key,
		    ask->state, c->led.dialect >= SMB2_DIALECT_0300);
		if (n == 0 || px_create_edit_add(ed, "RqLs", data, n) == -1)
			goto out;
		ed->oplock = SMB2_OPLOCK_LEVEL_LEASE;
		ask->kind = PX_PL_LEASE;
	} else {
		ed->oplock = want_w ? SMB2_OPLOCK_LEVEL_EXCLUSIVE :
		    SMB2_OPLOCK_LEVEL_II;
		ask->kind = PX_PL_OPLOCK;
	}
out:
	free(cr);
}

void
px_lease_sent(struct px_conn *c, struct px_pending *p,
    const struct px_lease_ask *ask)
{
	(void)c;
	if (ask->kind == PX_PL_NONE)
		return;
	p->u.create.pl_kind = ask->kind;
	memcpy(p->u.create.pl_key, ask->key, 16);
	p->u.create.pl_state = ask->state;
	px_stats.pl_asked++;
}

/* Which of the opens holding a refused key have the CREATE's name, as
 * sent (exact) or under another case (folded). */
struct refused_arg {
	const char *name;
	bool exact, folded;
};

static void
refused_open(struct px_conn *x, struct px_open *o, void *arg)
{
	struct refused_arg *r = arg;

	(void)x;
	if (o->name == NULL)
		return;
	if (name_eq(o->name, r->name, false))
		r->exact = true;
	else if (name_eq(o->name, r->name, true))
		r->folded = true;
}

/*
 * A CREATE that asked smbaccel's lease was refused INVALID_PARAMETER.
 * The server does so when the key is already another file's (MS-SMB2
 * 3.3.5.9.8), and an open of this client holds it:
 *  - an open of the same name: its file was renamed away by a client
 *    smbaccel does not see (the lease went with it) and another file now
 *    has the name; those opens are marked renamed, and the next CREATE of
 *    the name asks the next key of the chain (open_key);
 *  - only opens of the name under another case (open_key borrowed their
 *    key): the share tells case apart, so no case variant's key is
 *    borrowed on it any more (a case variant's file renamed elsewhere
 *    looks the same: the share is then taken for one that tells case
 *    apart, which costs only the borrowing).
 * This answer itself reaches the client: asking the CREATE again needs an
 * id and an open the ledger would have to make the client's
 * (docs/design.md, Known limits).  So the client sees the error once.
 */
static void
key_refused(struct px_conn *c, const struct px_pending *p, const char *what)
{
	const char *name = p->u.create.name ? p->u.create.name : "?";
	struct refused_arg r = { name, false, false };
	struct px_tree *t;

	if (p->u.create.pl_kind == PX_PL_LEASE && p->u.create.name != NULL)
		(void)each_open(c, PX_PL_LEASE, p->u.create.pl_key, NULL,
		    refused_open, &r);
	if (r.exact) {
		(void)each_open(c, PX_PL_LEASE, p->u.create.pl_key, NULL,
		    mark_renamed, NULL);
		log_warnx("conn=%llu CREATE of %s with smbaccel's %s answered "
		    "INVALID_PARAMETER: the file its key is on was renamed "
		    "away by a client smbaccel does not see; the next CREATE "
		    "of the name asks another key", (unsigned long long)c->id,
		    name, what);
	} else if (r.folded && (t = px_tree_find(&c->led, p->session_id,
	    p->tree_id)) != NULL) {
		share_learn_cased(c, t->share);
		log_warnx("conn=%llu share=%s CREATE of %s with smbaccel's %s "
		    "answered INVALID_PARAMETER: the share tells names apart "
		    "by case; no key of another case's open is asked on it any "
		    "more", (unsigned long long)c->id, t->share, name, what);
	} else
		log_warnx("conn=%llu CREATE of %s with smbaccel's %s answered "
		    "INVALID_PARAMETER", (unsigned long long)c->id, name, what);
}

/* A lease is one per key: the state the server just answered holds for
 * every open of it. */
static void
share_state(struct px_conn *x, struct px_open *o, void *arg)
{
	const struct px_open *from = arg;

	(void)x;
	if (o != from && !o->pl.breaking)
		o->pl.state = from->pl.state;
}

void
px_lease_answered(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p, struct px_open *o)
{
	const char *what = p->u.create.pl_kind == PX_PL_LEASE ? "lease" :
	    "oplock";

	if (p->u.create.pl_kind == PX_PL_NONE)
		return;
	if (h->status != NT_STATUS_SUCCESS) {
		px_stats.pl_create_failed++;
		/* the same answer as without the lease, normally; say so
		 * where it could be the lease's doing */
		if (h->status == NT_STATUS_INVALID_PARAMETER)
			key_refused(c, p, what);
		return;
	}
	if (o == NULL)
		return;
	if (o->pl.kind == PX_PL_NONE || o->pl.state == 0) {
		log_debug("conn=%llu share=%s file=%s smbaccel asked an %s "
		    "%s, the server granted none", (unsigned long long)c->id,
		    px_tree_share(c, o), o->name, state_name(
		    p->u.create.pl_state), what);
		return;
	}
	px_stats.pl_granted++;
	if (o->pl.state & SMB2_LEASE_WRITE)
		px_stats.pl_granted_write++;
	/* (an answer flagged BREAK_IN_PROGRESS shows the state from before
	 * the break: the acknowledgement's answer sets every open's) */
	if (o->pl.kind == PX_PL_LEASE && !o->pl.breaking)
		(void)each_open(c, PX_PL_LEASE, o->pl.key, NULL, share_state, o);
	log_debug("conn=%llu share=%s file=%s smbaccel holds %s %s for the "
	    "client", (unsigned long long)c->id, px_tree_share(c, o), o->name,
	    what, state_name(o->pl.state));
	if (o->pl.state & SMB2_LEASE_WRITE)
		(void)px_emit_tend_reserve(c);
}

/* ---- breaks ------------------------------------------------------------------ */

struct break_arg {
	uint32_t to;                /* lease bits left after the break */
	bool ack;                   /* an acknowledgement will follow */
	uint64_t buffered;          /* bytes the opens had buffered */
	uint32_t inflight;          /* writes already on their way */
};

/* Stop caching on o: nothing more absorbed or served, cached data gone,
 * buffered data on its way when write caching is lost. */
static void
break_open(struct px_conn *x, struct px_open *o, void *arg)
{
	struct break_arg *b = arg;

	o->pl.breaking = true;
	b->buffered += o->wb.len;
	b->inflight += o->wb_inflight;
	px_ra_drop(o, PX_RA_BREAK);
	if (o->wb.len && !(b->to & SMB2_LEASE_WRITE)) {
		px_wb_flush_open(x, o, CO_FLUSH_BREAK);
		px_emit_spend_pool(x, false);
	}
	if (!b->ack) {
		o->pl.state = b->to;
		o->pl.breaking = false;
	}
}

static struct px_lease_owed *
owed_find(struct px_conn *c, uint8_t kind, const uint8_t *key,
    const struct smb2_fileid *fid)
{
	struct px_lease_owed *a;

	for (a = c->pl_owed; a; a = a->next)
		if (a->kind == kind && (kind == PX_PL_LEASE ?
		    memcmp(a->key, key, 16) == 0 : px_fileid_eq(&a->fid, fid)))
			return a;
	return NULL;
}

/* One break of smbaccel's: kind, the lease key or the oplock's file id,
 * the state (lease bits) and oplock level it goes to, whether the server
 * waits for an acknowledgement. */
static void
on_break(struct px_conn *c, uint8_t kind, const uint8_t *key,
    const struct smb2_fileid *fid, uint32_t to, uint8_t level, bool ack,
    uint32_t from)
{
	struct break_arg b = { to, ack, 0, 0 };
	struct px_lease_owed *a;
	struct px_open *o;
	unsigned int n;

	px_stats.pl_breaks++;
	c->pl_breaks++;
	n = each_open(c, kind, key, fid, break_open, &b);
	for (o = c->led.opens; o && !open_is(o, kind, key, fid); o = o->next)
		;
	log_info("conn=%llu share=%s file=%s the server breaks smbaccel's "
	    "%s %s -> %s (%u open%s, %llu bytes buffered, %u writes in "
	    "flight)%s", (unsigned long long)c->id,
	    o ? px_tree_share(c, o) : "?", o && o->name ? o->name : "?",
	    kind == PX_PL_LEASE ? "lease" : "oplock", state_name(from),
	    state_name(to), n, n == 1 ? "" : "s",
	    (unsigned long long)b.buffered, b.inflight,
	    ack ? ": acknowledged once they are written" :
	    ", no acknowledgement needed");
	if (!ack || n == 0)
		return;
	if ((a = owed_find(c, kind, key, fid)) == NULL) {
		if ((a = calloc(1, sizeof(*a))) == NULL) {
			log_warnx("conn=%llu out of memory for a break "
			    "acknowledgement: left to the server's break "
			    "timeout", (unsigned long long)c->id);
			px_stats.breaks_unacked++;
			return;
		}
		a->kind = kind;
		if (key)
			memcpy(a->key, key, 16);
		if (fid)
			a->fid = *fid;
		a->since_ms = px_now_ms();
		a->next = c->pl_owed;
		c->pl_owed = a;
		owed_total++;
	}
	a->state = to;
	a->level = level;
	px_lease_progress(c);
}

bool
px_lease_break(struct px_conn *c, const struct smb2_elem *e)
{
	struct smb2_oplock_break b;
	struct px_open *o;

	if (px_smb2_oplock_break_decode(e, &b) == -1)
		return false;
	if (b.kind == SMB2_BREAK_LEASE_NOTIFY) {
		if (memcmp(b.lease_key, key_mark, 4) != 0)
			return false;   /* the client's own */
		on_break(c, PX_PL_LEASE, b.lease_key, NULL,
		    b.new_state & (SMB2_LEASE_READ | SMB2_LEASE_WRITE), 0,
		    (b.lease_flags & SMB2_NOTIFY_BREAK_LEASE_FLAG_ACK_REQUIRED) !=
		    0, b.current_state);
		return true;
	}
	if (b.kind != SMB2_BREAK_OPLOCK)
		return false;
	for (o = c->led.opens; o; o = o->next)
		if (o->pl.kind == PX_PL_OPLOCK && px_fileid_eq(&o->fid, &b.file_id))
			break;
	if (o == NULL)
		return false;
	/* from level II (to none) the server waits for nothing (MS-SMB2
	 * 3.3.4.6); from exclusive it does */
	on_break(c, PX_PL_OPLOCK, NULL, &b.file_id,
	    b.oplock_level == SMB2_OPLOCK_LEVEL_II ? SMB2_LEASE_READ : 0,
	    b.oplock_level, o->pl.oplock == SMB2_OPLOCK_LEVEL_EXCLUSIVE,
	    o->pl.state);
	return true;
}

/* ---- acknowledgements ---------------------------------------------------------- */

struct ready_arg {
	unsigned int live;          /* opens not closing */
	unsigned int busy;          /* opens, closing ones too, with data
	                             * buffered or in flight */
	struct px_open *any;        /* one of them, on the owing connection */
	struct px_conn *c;
	struct px_conn *other;      /* one holding one, of the client's others */
};

static void
ready_open(struct px_conn *x, struct px_open *o, void *arg)
{
	struct ready_arg *r = arg;

	if (o->closed) {
		/* its CLOSE releases the lease: nothing to acknowledge for
		 * it, but WRITEs sent with that CLOSE (compound.c) must be
		 * answered before another open's acknowledgement goes */
		if (px_wb_busy(o))
			r->busy++;
		return;
	}
	r->live++;
	if (px_wb_busy(o))
		r->busy++;
	if (x == r->c && r->any == NULL)
		r->any = o;
	if (x != r->c && r->other == NULL)
		r->other = x;
}

/* Send the acknowledgement a with message id mid on behalf of open o; -2
 * when it could not be built (mid unspent), -1 when sending failed. */
static int
send_ack(struct px_conn *c, const struct px_lease_owed *a,
    const struct px_open *o, uint64_t mid)
{
	struct smb2_hdr_out h;
	struct px_pending *p;
	struct px_prot prot;
	uint8_t msg[SMB2_HDR_LEN + 40];
	size_t n;

	memset(&h, 0, sizeof(h));
	h.command = SMB2_OPLOCK_BREAK;
	h.credit_charge = 1;
	h.credit = 1;
	h.message_id = mid;
	h.tree_id = o->tree_id;
	h.session_id = o->session_id;
	if (a->kind == PX_PL_LEASE)
		n = px_smb2_lease_ack_encode(msg, sizeof(msg), &h, a->key,
		    a->state);
	else
		n = px_smb2_oplock_ack_encode(msg, sizeof(msg), &h, &a->fid,
		    a->level);
	if (n == 0 || (p = px_emit_pending(c, mid, SMB2_OPLOCK_BREAK, 1)) ==
	    NULL)
		return -2;
	p->session_id = o->session_id;
	p->tree_id = o->tree_id;
	p->fid = a->fid;
	p->u.ack.lease = a->kind == PX_PL_LEASE;
	memcpy(p->u.ack.lease_key, a->key, 16);
	p->u.ack.lease_state = a->state;
	p->u.ack.oplock_level = a->level;
	prot = px_emit_prot(c, o->session_id, o->tree_id);
	return px_emit_protected(c, PX_SERVER, &prot, msg, n);
}

/* May smbaccel send its own requests on c: relaying, or draining what a
 * departed client left (not opaque). */
static bool
sendable(const struct px_conn *c)
{
	return c->state == PX_CONN_RELAY || c->state == PX_CONN_DRAINING;
}

struct starve_arg {
	bool starved;
	struct px_conn *flush_on;   /* flush what is buffered (NULL: not) */
};

/* Let the opens of a break without an id absorb again (starved), or stop
 * them and send what they buffered once one is set aside. */
static void
starve_open(struct px_conn *x, struct px_open *o, void *arg)
{
	const struct starve_arg *s = arg;

	o->pl.starved = s->starved;
	if (!s->starved && o->wb.len) {
		px_wb_flush_open(x, o, CO_FLUSH_BREAK);
		px_emit_spend_pool(x, false);
	}
}

/* Spend an id set aside for an acknowledgement that is not sent. */
static void
owed_forget(struct px_conn *c, struct px_lease_owed *a)
{
	if (!a->have_id)
		return;
	a->have_id = false;
	if (co_pool_add(&c->led.pool, a->mid, 1) == -1)
		log_warnx("conn=%llu id %llu of an unsent acknowledgement lost",
		    (unsigned long long)c->id, (unsigned long long)a->mid);
}

/*
 * Acknowledge what c owes once its data is written; true when something
 * was sent or dropped (ids moved).  The id is set aside first, before the
 * data of the lease is known to be written: without one, the opens keep
 * absorbing writes (W is held until the acknowledgement, and a client
 * that is writing donates ids with them) until one is to spare.
 */
static bool
progress_conn(struct px_conn *c)
{
	struct px_lease_owed *a, **pp;
	bool moved = false;

	for (pp = &c->pl_owed; (a = *pp) != NULL; ) {
		struct ready_arg r = { 0, 0, NULL, c, NULL };
		struct starve_arg sa;
		double ms;
		int rc;

		(void)each_open(c, a->kind, a->key, &a->fid, ready_open, &r);
		if (r.live == 0 || r.any == NULL) {
			/* closed meanwhile (the lease goes with its last
			 * open), or only another connection's opens left:
			 * that one owes it now (the server takes a lease's
			 * acknowledgement on any connection of the client,
			 * MS-SMB2 3.3.5.22.2), else the other client waits
			 * out the server's break timeout */
			owed_forget(c, a);
			if (a->kind == PX_PL_LEASE && r.live > 0 &&
			    r.other != NULL &&
			    owed_find(r.other, a->kind, a->key, NULL) == NULL) {
				*pp = a->next;
				a->next = r.other->pl_owed;
				r.other->pl_owed = a;
				/* its starving is timed there now */
				px_relay_ops->arm_timer(r.other);
				log_debug("conn=%llu break of smbaccel's lease: "
				    "its opens here closed, conn=%llu "
				    "acknowledges it", (unsigned long long)c->id,
				    (unsigned long long)r.other->id);
				moved = true;
				continue;
			}
			log_debug("conn=%llu break of smbaccel's %s not "
			    "acknowledged: its opens are closing",
			    (unsigned long long)c->id,
			    a->kind == PX_PL_LEASE ? "lease" : "oplock");
			goto drop;
		}
		if (!a->have_id) {
			if (sendable(c) && px_emit_ack_id(c, &a->mid)) {
				a->have_id = true;
				sa.starved = false;
				(void)each_open(c, a->kind, a->key, &a->fid,
				    starve_open, &sa);
				/* what starving let them absorb is on its way
				 * now; with none, the acknowledgement goes at
				 * once (no answer to come would look again) */
				r.live = r.busy = 0;
				r.any = NULL;
				r.other = NULL;
				(void)each_open(c, a->kind, a->key, &a->fid,
				    ready_open, &r);
				if (r.any == NULL)
					r.busy = 1;
			} else if (!a->counted) {
				a->counted = true;
				px_stats.breaks_unacked++;
				log_warnx("conn=%llu share=%s file=%s no message id "
				    "left to acknowledge the break of smbaccel's %s: "
				    "writes are absorbed until one is donated, else "
				    "the server's break timeout resolves it",
				    (unsigned long long)c->id,
				    px_tree_share(c, r.any), r.any->name,
				    a->kind == PX_PL_LEASE ? "lease" : "oplock");
				sa.starved = true;
				(void)each_open(c, a->kind, a->key, &a->fid,
				    starve_open, &sa);
				/* it starves for a while only (px_lease_timer) */
				px_relay_ops->arm_timer(c);
			}
		}
		if (!a->have_id || r.busy > 0 || !sendable(c)) {
			pp = &a->next;      /* an id or the data on its way */
			continue;
		}
		if ((rc = send_ack(c, a, r.any, a->mid)) < 0) {
			if (rc == -2)       /* its id goes to the pool */
				owed_forget(c, a);
			log_warnx("conn=%llu cannot send a break "
			    "acknowledgement (id %llu): left to the server's "
			    "break timeout", (unsigned long long)c->id,
			    (unsigned long long)a->mid);
			if (!a->counted)
				px_stats.breaks_unacked++;
			goto drop;
		}
		ms = px_now_ms() - a->since_ms;
		px_stats.pl_breaks_acked++;
		px_stats.pl_ack_ms_sum += (uint64_t)ms;
		if ((uint64_t)ms > px_stats.pl_ack_ms_max)
			px_stats.pl_ack_ms_max = (uint64_t)ms;
		log_info("conn=%llu share=%s file=%s break of smbaccel's %s "
		    "acknowledged (%s) %.0f ms after it arrived%s",
		    (unsigned long long)c->id, px_tree_share(c, r.any),
		    r.any->name, a->kind == PX_PL_LEASE ? "lease" : "oplock",
		    state_name(a->state), ms, a->counted ?
		    " (its id came late)" : "");
drop:
		*pp = a->next;
		free(a);
		owed_total--;
		moved = true;
	}
	return moved;
}

void
px_lease_progress(struct px_conn *c)
{
	struct px_conn *x, *next;

	if (owed_total == 0)
		return;
	if (c->pl_owed && progress_conn(c))
		(void)px_emit_tend_reserve(c);
	/* a lease shared with other connections of the client: their
	 * flushes may have been what an acknowledgement waited for */
	for (x = px_rt.conns; x && owed_total; x = next) {
		next = x->next;
		if (x != c && x->pl_owed && progress_conn(x))
			(void)px_emit_tend_reserve(x);
	}
}

/*
 * A break whose acknowledgement has no id lets its opens go on absorbing
 * (starved): write caching is the client's until it is acknowledged, and
 * a writing client donates the id.  But the server waits only so long
 * (its break timeout: 35 s for smbd 4.17 and Windows, MS-SMB2 3.3.2.1's
 * Oplock Break Acknowledgment Timer), then takes the caching away, and
 * lets the other client in: what smbaccel absorbed after that would be
 * written without it, after whatever that client did meanwhile (a
 * byte-range lock, say, that then refuses the flush: acknowledged data
 * lost).  So starving ends PL_STARVE_MS after the break: absorbing stops
 * and what is buffered is flushed while the server still waits; an id
 * that comes later still pays the acknowledgement.
 */
#define PL_STARVE_MS 25000.0

double
px_lease_timer(struct px_conn *c, double now_ms)
{
	struct starve_arg sa = { false, NULL };
	struct px_lease_owed *a;
	double next = 0, due;
	struct px_open *o;

	for (a = c->pl_owed; a; a = a->next) {
		if (a->have_id || !a->counted || a->expired)
			continue;
		due = a->since_ms + PL_STARVE_MS;
		if (now_ms < due) {
			if (next == 0 || due < next)
				next = due;
			continue;
		}
		a->expired = true;
		px_stats.pl_starve_ended++;
		for (o = c->led.opens; o && !open_is(o, a->kind, a->key, &a->fid);
		    o = o->next)
			;
		log_warnx("conn=%llu share=%s file=%s still no message id to "
		    "acknowledge the break of smbaccel's %s after %.0f s: writes "
		    "are no longer absorbed on it (the server's break timeout is "
		    "near)", (unsigned long long)c->id, o ? px_tree_share(c, o) :
		    "?", o && o->name ? o->name : "?",
		    a->kind == PX_PL_LEASE ? "lease" : "oplock",
		    PL_STARVE_MS / 1000);
		(void)each_open(c, a->kind, a->key, &a->fid, starve_open, &sa);
	}
	return next;
}

/* The acknowledgement was answered: what smbaccel holds now. */
static void
acked_open(struct px_conn *x, struct px_open *o, void *arg)
{
	const uint32_t *st = arg;

	(void)x;
	o->pl.state = *st;
	if (o->pl.kind == PX_PL_OPLOCK)
		o->pl.oplock = *st ? SMB2_OPLOCK_LEVEL_II : SMB2_OPLOCK_LEVEL_NONE;
	o->pl.breaking = false;
	o->pl.starved = false;
}

void
px_lease_ack_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p)
{
	uint8_t kind = p->u.ack.lease ? PX_PL_LEASE : PX_PL_OPLOCK;
	uint32_t st = p->u.ack.lease ? p->u.ack.lease_state :
	    p->u.ack.oplock_level == SMB2_OPLOCK_LEVEL_II ? SMB2_LEASE_READ : 0;

	if (h->status != NT_STATUS_SUCCESS) {
		/* past its break timeout the server has already taken the
		 * caching away: none is assumed */
		px_stats.pl_ack_refused++;
		log_warnx("conn=%llu the server answered smbaccel's break "
		    "acknowledgement with 0x%08x: no caching on that file from "
		    "now on", (unsigned long long)c->id, h->status);
		st = 0;
	}
	(void)each_open(c, kind, p->u.ack.lease_key, &p->fid, acked_open, &st);
	(void)px_emit_tend_reserve(c);
}

void
px_lease_released(struct px_conn *c)
{
	if (c->pl_owed)
		px_lease_progress(c);
	if (c->led.rsv.held &&
	    px_emit_tend_reserve(c) == CO_RSV_RELEASE)
		px_emit_spend_pool(c, false);
}

unsigned int
px_lease_opens(const struct px_conn *c, unsigned int *write)
{
	const struct px_open *o;
	unsigned int n = 0, w = 0;

	for (o = c->led.opens; o; o = o->next)
		if (o->pl.kind != PX_PL_NONE && o->pl.state) {
			n++;
			if (o->pl.state & SMB2_LEASE_WRITE)
				w++;
		}
	if (write)
		*write = w;
	return n;
}

void
px_lease_free(struct px_conn *c)
{
	struct rename_rec *r, **pp;

	while (c->pl_owed) {
		struct px_lease_owed *a = c->pl_owed;

		c->pl_owed = a->next;
		free(a);
		owed_total--;
	}
	/* (an id set aside dies with the connection: nothing to spend it
	 * on any more) */
	for (pp = &renames; (r = *pp) != NULL; )
		if (r->c == c) {
			*pp = r->next;
			free(r);
		} else
			pp = &r->next;
}
