/*
 * coherence.c - one coherent file per server path across the connections
 * of this smbaccel (DESIGN.md sections 4 and 5).
 *
 * Owns: the cross-connection rule (a CREATE, READ, WRITE, QUERY_INFO,
 * LOCK, FLUSH or SET_INFO of a file, or a QUERY_DIRECTORY of its
 * directory, waits until other connections have flushed what they buffer
 * of it), the invalidation of every read cache of a path that a request
 * changes (write, SET_INFO, overwriting CREATE, delete-on-close) and of
 * the document cache's copy of it (doccache.c: also a rename's target,
 * and what lies below a directory renamed or deleted), and byte-range
 * locks, which stop write absorption on every open of the file;
 * multichannel sessions (bind_wait); and a client's durable reconnect
 * against its previous connection: it waits for that one's close
 * (reopen_wait) and gets the error of the data lost with it
 * (lost_keep, lost_reopened), also after a restart of smbaccel
 * (state_dir: px_coh_lost_save, px_coh_lost_load).  Only clients that
 * bypass this smbaccel can see stale data.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <netinet/in.h>

#include "proxy/coherence.h"
#include "proxy/alter.h"
#include "proxy/readahead.h"
#include "proxy/doccache.h"
#include "proxy/writebehind.h"
#include "proxy/emit.h"

/* Does name lie in directory dir (or name the same file when exact:
 * px_same_file_name, so "\\doc" and "doc::$DATA" are "doc")? */
static bool
path_match(const char *name, const char *dir, bool in_dir)
{
	size_t n;

	if (!in_dir)
		return px_same_file_name(name, dir);
	while (*name == '\\' || *name == '/')
		name++;
	while (*dir == '\\' || *dir == '/')
		dir++;
	if ((n = strlen(dir)) == 0)
		return strchr(name, '\\') == NULL;
	return strncasecmp(name, dir, n) == 0 && name[n] == '\\' &&
	    strchr(name + n + 1, '\\') == NULL;
}

/* Is x's open o of file `name` in share (or in directory `name` when
 * in_dir), or, when the request's own open `by` is known, of by's file
 * by the server's on-disk id (a hard link, a name changed by a rename,
 * a case variant beyond ASCII, another share of the same directory:
 * the id names the volume too, so it needs no share)? */
static bool
open_is(struct px_conn *x, const struct px_open *o, const char *share,
    const char *name, bool in_dir, const struct px_open *by)
{
	if (!in_dir && px_open_same_id(by, o))
		return true;
	/* two ids, two files, whatever the names say */
	if (!in_dir && px_open_other_file(by, o))
		return false;
	return strcasecmp(px_tree_share(x, o), share) == 0 &&
	    o->name != NULL && path_match(o->name, name, in_dir);
}

/* Flush x's busy opens that match (session sid when name is NULL, else
 * share and file `name`, or directory `name` when in_dir).  True when
 * some were busy. */
static bool
flush_opens(struct px_conn *x, uint64_t sid, const char *share,
    const char *name, bool in_dir, const struct px_open *by)
{
	struct px_open *o;
	bool hit = false;

	/* none busy (x->led.busy holds every busy open): nothing to flush */
	if (x->led.busy == NULL)
		return false;
	for (o = x->led.opens; o; o = o->next) {
		if (!px_wb_busy(o) || (name == NULL ? o->session_id != sid :
		    !open_is(x, o, share, name, in_dir, by)))
			continue;
		px_wb_flush_open(x, o, CO_FLUSH_PEER);
		hit = true;
	}
	if (hit)
		px_emit_spend_pool(x, false);
	return hit;
}

/*
 * Flush opens on other connections to the same server and share whose
 * file is `name` (or lies in directory `name` when in_dir).  Returns true
 * when some were busy (the caller waits).
 */
static bool
peers_flush(struct px_conn *c, const char *share, const char *name,
    bool in_dir, const struct px_open *by)
{
	struct px_conn *x;
	bool busy = false;

	for (x = px_rt.conns; x; x = x->next)
		if (x != c && x->state != PX_CONN_CLOSED &&
		    px_same_server(c, x) &&
		    flush_opens(x, 0, share, name, in_dir, by))
			busy = true;
	return busy;
}

static bool
peers_idle(struct px_conn *c, const char *share, const char *name, bool in_dir,
    const struct px_open *by)
{
	struct px_conn *x;

	for (x = px_rt.conns; x; x = x->next) {
		struct px_open *o;

		if (x == c || x->state == PX_CONN_CLOSED || !px_same_server(c, x))
			continue;
		for (o = x->led.busy; o; o = o->busy_next)
			if (px_wb_busy(o) &&
			    open_is(x, o, share, name, in_dir, by))
				return false;
	}
	return true;
}

void
px_coh_kick_waiters(struct px_conn *c)
{
	px_emit_kick_each(c, PX_STALL_PEERS);
}

/* A change to file `name` of share `share`: every open of it through this
 * smbaccel, on this connection or another, drops its read cache. */
static void
ra_invalidate_path(struct px_conn *c, const char *share, const char *name,
    enum px_ra_cause why, const struct px_open *by)
{
	struct px_conn *x;
	uint32_t nh = px_name_hash(name);
	bool kick = false;

	for (x = px_rt.conns; x; x = x->next) {
		struct px_open *o;

		if (x->state == PX_CONN_CLOSED || (x != c && !px_same_server(c, x)))
			continue;
		for (o = x->led.opens; o; o = o->next)
			if ((o->ra.chunks || o->ra.eof_known) &&
			    (o->name_hash == nh || by != NULL) &&
			    open_is(x, o, share, name, false, by)) {
				px_ra_drop(o, x == c ? why : PX_RA_PEER);
				if (x != c && x->stall == PX_STALL_READ)
					kick = true;
			}
	}
	/* a read waiting for a fetch now goes to the server (the others
	 * waiting for one look again and wait on) */
	if (kick)
		px_emit_kick_each(c, PX_STALL_READ);
}

/*
 * A byte-range lock on a file stops write absorption on every open of it
 * through this smbaccel: a write into a range locked by another handle
 * must get the server's FILE_LOCK_CONFLICT, not an early success.
 */
static void
lock_path(struct px_conn *c, const char *share, const char *name,
    const struct px_open *by)
{
	struct px_conn *x;
	struct px_open *o;

	for (x = px_rt.conns; x; x = x->next) {
		if (x->state == PX_CONN_CLOSED || (x != c && !px_same_server(c, x)))
			continue;
		for (o = x->led.opens; o; o = o->next)
			if (open_is(x, o, share, name, false, by))
				px_open_lock(&x->led, o);
	}
}

/* Does an open of file `name` of share `share` on c's server (of o's file
 * when o is known), other than o, carry a LOCK seen through this smbaccel
 * (any connection)? */
static bool
path_locked(struct px_conn *c, const char *share, const char *name,
    const struct px_open *o)
{
	struct px_conn *x;
	struct px_open *y;

	if (name == NULL)
		return false;
	for (x = px_rt.conns; x; x = x->next) {
		/* x->led.nlocked counts x's opens with locked set */
		if (x->state == PX_CONN_CLOSED || x->led.nlocked == 0 ||
		    (x != c && !px_same_server(c, x)))
			continue;
		for (y = x->led.opens; y; y = y->next)
			if (y != o && y->locked &&
			    open_is(x, y, share, name, false, o))
				return true;
	}
	return false;
}

bool
px_coh_path_locked(struct px_conn *c, const char *share, const char *name)
{
	return path_locked(c, share, name, NULL);
}

/*
 * A WRITE or SET_INFO on o reaches the server: the document cache's copy
 * of o's file goes; a rename's target is overwritten (or created), and a
 * directory renamed or deleted takes every copy below it.
 */
static void
dc_changed_by(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const char *share, const char *name,
    bool is_dir)
{
	struct smb2_set_info_req si;
	enum px_dc_cause why = PX_DC_SETINFO;
	char *to;
	bool replace;

	if (name == NULL)
		return;
	if (h->command == SMB2_WRITE) {
		px_dc_changed(c, share, name, false, PX_DC_WRITE);
		return;
	}
	if (px_smb2_set_info_req_decode(e, &si) == 0 &&
	    si.info_type == SMB2_0_INFO_FILE) {
		if (px_smb2_info_renames(si.info_class))
			why = PX_DC_RENAME;
		else if (px_smb2_info_deletes(si.info_class))
			why = PX_DC_DELETE;
	}
	px_dc_changed(c, share, name, is_dir && why != PX_DC_SETINFO, why);
	if (why == PX_DC_RENAME && (to = malloc(1024)) != NULL) {
		if (px_smb2_rename_info_decode(si.buffer, si.buffer_len,
		    &replace, to, 1024) == 0)
			px_dc_changed(c, share, to, is_dir, PX_DC_RENAME);
		free(to);
	}
}

/*
 * The CREATE of a compound, for its related WRITE or SET_INFO (FileId all
 * FF): no open exists yet, but the file they change is known by name.
 * Elements are shown here in order; a request that is not related ends
 * the chain.
 */
static struct {
	bool valid;
	char share[256];
	char name[1024];
} rel;

void
px_coh_on_request(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct smb2_fileid fid;
	struct px_open *o;

	if (!(h->flags & SMB2_FLAGS_RELATED_OPERATIONS))
		rel.valid = false;
	switch (h->command) {
	case SMB2_WRITE:
	case SMB2_SET_INFO:
		if (px_smb2_req_file_id(e, h->command, &fid) == 0 &&
		    px_fileid_is_related(&fid) && rel.valid &&
		    (h->flags & SMB2_FLAGS_RELATED_OPERATIONS)) {
			ra_invalidate_path(c, rel.share, rel.name,
			    h->command == SMB2_WRITE ? PX_RA_WRITE :
			    PX_RA_SETINFO, NULL);
			/* whether the compound's CREATE opened a directory is
			 * not known: a rename or delete drops what is below
			 * the name too (nothing, for a file) */
			dc_changed_by(c, h, e, rel.share, rel.name, true);
		} else if (px_smb2_req_file_id(e, h->command, &fid) == 0 &&
		    (o = px_open_find(&c->led, &fid)) != NULL) {
			struct smb2_write_req w;

			if (h->command == SMB2_WRITE &&
			    px_smb2_write_req_decode(e, &w) == 0 &&
			    w.offset != SMB2_WRITE_APPEND_OFFSET &&
			    w.offset + w.length > o->size_hint)
				o->size_hint = w.offset + w.length;
			if (h->command == SMB2_SET_INFO)
				o->size_hint = UINT64_MAX; /* unknown now */
			px_ra_drop(o, h->command == SMB2_WRITE ? PX_RA_WRITE :
			    PX_RA_SETINFO);
			if (o->name)
				ra_invalidate_path(c, px_tree_share(c, o), o->name,
				    h->command == SMB2_WRITE ? PX_RA_WRITE :
				    PX_RA_SETINFO, o);
			dc_changed_by(c, h, e, px_tree_share(c, o), o->name,
			    o->is_dir);
		}
		break;
	case SMB2_IOCTL: {
		/* a server-side copy into the file, zeroing, trimming, ...:
		 * a change of its data like a WRITE's (found by
		 * ra_bigwrite.py: a zeroed range read back from read-ahead) */
		struct smb2_ioctl_req io;
		const char *share = NULL, *name = NULL;
		const struct px_open *by = NULL;

		if (px_smb2_ioctl_req_decode(e, &io) == -1 ||
		    !px_smb2_fsctl_changes_data(io.ctl_code))
			break;
		if (px_fileid_is_related(&io.file_id) && rel.valid &&
		    (h->flags & SMB2_FLAGS_RELATED_OPERATIONS)) {
			share = rel.share;
			name = rel.name;
		} else if ((o = px_open_find(&c->led, &io.file_id)) != NULL) {
			o->size_hint = UINT64_MAX; /* a copy may grow it */
			px_ra_drop(o, PX_RA_WRITE);
			share = px_tree_share(c, o);
			name = o->name;
			by = o;
		}
		if (name != NULL) {
			ra_invalidate_path(c, share, name, PX_RA_WRITE, by);
			px_dc_changed(c, share, name, false, PX_DC_WRITE);
		}
		break;
	}
	case SMB2_LOCK:
	case SMB2_CLOSE:
		/* a LOCK of the file its compound's CREATE opens: every
		 * other open of the path is marked now, the new one when
		 * the answer comes (ledger.c) */
		if (h->command == SMB2_LOCK &&
		    px_smb2_req_file_id(e, h->command, &fid) == 0 &&
		    px_fileid_is_related(&fid) && rel.valid &&
		    (h->flags & SMB2_FLAGS_RELATED_OPERATIONS)) {
			lock_path(c, rel.share, rel.name, NULL);
			break;
		}
		if (px_smb2_req_file_id(e, h->command, &fid) == 0 &&
		    (o = px_open_find(&c->led, &fid)) != NULL) {
			px_ra_drop(o, h->command == SMB2_LOCK ? PX_RA_LOCK :
			    PX_RA_CLOSE);
			if (h->command == SMB2_LOCK && o->name)
				lock_path(c, px_tree_share(c, o), o->name, o);
			/* a lock means coordination with writers: under leased
			 * the lease still protects the copy, under always it
			 * goes (a CLOSE keeps it: that is the point) */
			if (h->command == SMB2_LOCK) {
				struct px_tree *t = px_tree_find(&c->led,
				    o->session_id, o->tree_id);

				if (t && t->policy.read_ahead == POL_GATE_ALWAYS)
					px_dc_open_lost(o, PX_DC_LOCK);
			}
		}
		break;
	case SMB2_CREATE: {
		struct smb2_create_req *cr = malloc(sizeof(*cr));
		struct px_tree *t;
		uint64_t sid;
		uint32_t tid;
		bool ok;

		/* called before the ledger records h: a related CREATE
		 * is of the tree of the element before it */
		px_ledger_req_ids(&c->led, h, &sid, &tid);
		t = px_tree_find(&c->led, sid, tid);
		ok = cr && t && px_smb2_create_req_decode(e, cr) == 0;

		if (ok) {
			rel.valid = true;
			snprintf(rel.share, sizeof(rel.share), "%s", t->share);
			snprintf(rel.name, sizeof(rel.name), "%s", cr->name);
		}
		if (ok && (cr->create_disposition == FILE_SUPERSEDE ||
		    cr->create_disposition == FILE_OVERWRITE ||
		    cr->create_disposition == FILE_OVERWRITE_IF ||
		    (cr->create_options & FILE_DELETE_ON_CLOSE))) {
			bool del = cr->create_options & FILE_DELETE_ON_CLOSE;

			ra_invalidate_path(c, t->share, cr->name, PX_RA_SETINFO,
			    NULL);
			px_dc_changed(c, t->share, cr->name, del &&
			    (cr->create_options & FILE_DIRECTORY_FILE),
			    del ? PX_DC_DELETE : PX_DC_OVERWRITE);
		}
		free(cr);
		break;
	}
	default:
		break;
	}
}

/*
 * A SESSION_SETUP binding connection c to session sid (multichannel,
 * MS-SMB2 3.2.4.2.3): from then on the client may send any request of the
 * session on any of its channels, a READ, WRITE or CLOSE of a file opened
 * on another, and c knows none of that connection's opens and trees, so
 * the rules above cannot find the file.  Instead the session is left
 * alone everywhere (px_may_act: no absorbing, no answers from a cache, on
 * any of its connections; c's ledger marks its own at the answer) and the
 * binding waits until what smbaccel acknowledged for the session has
 * reached the server.  True while it must wait.
 */
static bool
bind_wait(struct px_conn *c, uint64_t sid)
{
	struct px_conn *x;
	bool busy = false;

	for (x = px_rt.conns; x; x = x->next) {
		struct px_session *s;
		struct px_open *o;

		if (x == c || x->state == PX_CONN_CLOSED ||
		    !px_same_server(c, x) ||
		    (s = px_session_find(&x->led, sid)) == NULL)
			continue;
		if (!s->multichannel) {
			s->multichannel = true;
			px_stats.sessions_multichannel++;
			log_info("conn=%llu session=0x%llx bound to a second "
			    "channel (conn=%llu): smbaccel stops acting on the "
			    "session, on every channel, once what it buffered "
			    "has been written (a multichannel session is "
			    "relayed as sent)", (unsigned long long)x->id,
			    (unsigned long long)sid, (unsigned long long)c->id);
		}
		if (flush_opens(x, sid, NULL, NULL, false, NULL))
			busy = true;
		/* never served again: give the memory back */
		for (o = x->led.opens; o; o = o->next)
			if (o->session_id == sid)
				px_ra_drop(o, PX_RA_PEER);
	}
	if (busy)
		c->stall = PX_STALL_PEERS;
	return busy;
}

/*
 * A durable reconnect (DHnC, DH2C) of a client whose previous connection
 * to the server is still closing (its client gone, its server connection
 * still open: writing buffered data, or the EOF passed on and the server
 * not done with it).  The server gives the handle up only when it tears
 * that connection down, which smbd does in that connection's own process:
 * a reconnect that overtakes the teardown fails OBJECT_NAME_NOT_FOUND.  It
 * waits for the close, at most connect_timeout (logged).  True while it
 * must wait.
 */
static bool
reopen_wait(struct px_conn *c)
{
	const struct px_conn *x;
	double now = px_now_ms();

	for (x = px_rt.conns; x; x = x->next)
		if (x != c && x->client_gone && x->state != PX_CONN_CLOSED &&
		    x->id != c->reopen_gave_up && px_same_server(c, x) &&
		    px_same_host(&c->peer_addr, &x->peer_addr))
			break;
	if (x == NULL) {
		c->reopen_until = 0;
		return false;
	}
	if (c->reopen_until == 0) {
		c->reopen_until = now + px_glob()->connect_timeout_ms;
		px_stats.reopen_waits++;
		log_info("conn=%llu durable reconnect waits for the close of "
		    "this client's previous connection (conn=%llu)",
		    (unsigned long long)c->id, (unsigned long long)x->id);
		px_relay_ops->arm_timer(c);
	} else if (now >= c->reopen_until) {
		log_warnx("conn=%llu previous connection of this client "
		    "(conn=%llu) still open after %u ms: durable reconnect "
		    "sent anyway", (unsigned long long)c->id,
		    (unsigned long long)x->id,
		    (unsigned int)px_glob()->connect_timeout_ms);
		c->reopen_gave_up = x->id;
		c->reopen_until = 0;
		return reopen_wait(c);
	}
	c->stall = PX_STALL_PEERS;
	return true;
}

double
px_coh_timer(const struct px_conn *c)
{
	return c->reopen_until;
}

/*
 * Before any binding: a client learns where it could open more channels
 * from FSCTL_QUERY_NETWORK_INTERFACE_INFO (its answer lists the server's
 * addresses, MS-SMB2 2.2.32.5), and Windows opens them to the addresses
 * listed when it finds an RSS-capable or a second interface on both
 * ends.  A channel to an address that does not cross this smbaccel would
 * escape bind_wait altogether, and one that crosses it ends the session's
 * acceleration, while across one WAN path a second channel gains little.  So in a session smbaccel may answer,
 * under multichannel = hide, it answers the query STATUS_NOT_SUPPORTED,
 * as a server without multichannel may (3.3.5.15.11), and the client
 * keeps to one connection.  Sessions it may not answer it buffers nothing
 * of either.
 */
enum px_absorb
px_coh_interfaces(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct smb2_ioctl_req io;
	struct px_session *s;
	struct px_tree *t;
	enum px_absorb ab;

	if (h->command != SMB2_IOCTL ||
	    px_glob()->multichannel != POL_MC_HIDE ||
	    px_smb2_ioctl_req_decode(e, &io) == -1 ||
	    io.ctl_code != FSCTL_QUERY_NETWORK_INTERFACE_INFO ||
	    !(io.flags & SMB2_0_IOCTL_IS_FSCTL) ||
	    (s = px_session_find(&c->led, h->session_id)) == NULL ||
	    !s->established ||
	    (t = px_tree_find(&c->led, h->session_id, h->tree_id)) == NULL ||
	    !px_ids_fresh(c, h, 0) || !px_may_act(c, s, t, h, e))
		return PX_AB_FORWARD;
	if ((ab = px_wb_absorb_status(c, h, NT_STATUS_NOT_SUPPORTED)) ==
	    PX_AB_FORWARD)
		return ab;
	px_stats.requests[SMB2_IOCTL]++;
	px_stats.interface_queries_hidden++;
	log_debug("conn=%llu session=0x%llx the client's query for the "
	    "server's network interfaces answered NOT_SUPPORTED by smbaccel "
	    "(multichannel = hide)", (unsigned long long)c->id,
	    (unsigned long long)s->id);
	if (co_pool_over_bound(&c->led.pool, c->led.cr.client_next,
	    c->led.window))
		px_emit_spend_pool(c, false);
	return ab;
}

bool
px_coh_must_wait(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct px_tree *t = px_tree_find(&c->led, h->session_id, h->tree_id);
	struct smb2_fileid fid;
	struct px_open *o, *by = NULL;
	const char *name = NULL;
	bool in_dir = false;
	struct smb2_create_req *cr = NULL;
	bool busy = false;

	if (px_rt.conns == NULL || px_rt.conns->next == NULL)
		return false;
	if (h->command == SMB2_SESSION_SETUP) {
		struct smb2_session_setup_req sr;

		return px_smb2_session_setup_req_decode(e, &sr) == 0 &&
		    (sr.flags & SMB2_SESSION_FLAG_BINDING) &&
		    bind_wait(c, h->session_id);
	}
	if (t == NULL)
		return false;
	if (h->command == SMB2_CREATE) {
		if ((cr = malloc(sizeof(*cr))) == NULL)
			return false;
		if (px_smb2_create_req_decode(e, cr) == 0)
			name = cr->name;
		if (name && cr->has_reconnect && reopen_wait(c)) {
			free(cr);
			return true;
		}
	} else if ((h->command == SMB2_READ || h->command == SMB2_WRITE ||
	    h->command == SMB2_QUERY_INFO || h->command == SMB2_LOCK ||
	    h->command == SMB2_FLUSH) &&
	    px_smb2_req_file_id(e, h->command, &fid) == 0 &&
	    (o = px_open_find(&c->led, &fid)) != NULL && o->name) {
		/* the file's data seen through another connection */
		name = o->name;
		by = o;
	} else if (h->command == SMB2_IOCTL) {
		/* one that changes the file's data comes after what other
		 * connections acknowledged of it */
		struct smb2_ioctl_req io;

		if (px_smb2_ioctl_req_decode(e, &io) == 0 &&
		    px_smb2_fsctl_changes_data(io.ctl_code) &&
		    (o = px_open_find(&c->led, &io.file_id)) != NULL) {
			name = o->name;
			by = o;
		}
	} else if ((h->command == SMB2_QUERY_DIRECTORY ||
	    h->command == SMB2_SET_INFO) &&
	    px_smb2_req_file_id(e, h->command, &fid) == 0 &&
	    (o = px_open_find(&c->led, &fid)) != NULL && o->name) {
		if (h->command == SMB2_QUERY_DIRECTORY) {
			name = o->name;
			in_dir = true;
		} else {
			struct smb2_set_info_req si;

			if (px_smb2_set_info_req_decode(e, &si) == 0) {
				name = o->name;
				by = o;
			}
		}
	}
	if (name && !peers_idle(c, t->share, name, in_dir, by)) {
		peers_flush(c, t->share, name, in_dir, by);
		c->stall = PX_STALL_PEERS;
		busy = true;
	}
	free(cr);
	return busy;
}

/*
 * Acknowledged data lost with a durable open, kept for its reconnect
 * (px_coh_closing, before writebehind.c counts the loss).  A
 * client whose connection failed reopens its durable handles on a new
 * connection (MS-SMB2 3.2.4.4) and goes on as if nothing had happened:
 * what smbaccel acknowledged on the old one and could not write would be
 * lost without the client hearing of it.  The reconnected open carries
 * the error instead (its next WRITE or FLUSH is failed with it, or its
 * CLOSE, as on the old open), matched by server and persistent FileId.
 * Bounded: LOST_MAX entries, the oldest replaced, each kept LOST_KEEP_MS
 * (a durable handle outlives its connection by about a minute on smbd
 * and Windows).
 */
#define LOST_MAX      256
#define LOST_KEEP_MS  (15.0 * 60 * 1000)
static struct lost_open {
	double at;                 /* 0: free */
	char server[64];           /* px_conn.dst_str */
	uint64_t persistent;
	uint64_t conn_id;
	uint64_t bytes;
	uint32_t status;
} lost_opens[LOST_MAX];
static unsigned int lost_next;

static void
lost_keep(struct px_conn *c, const struct px_open *o, uint64_t bytes)
{
	struct lost_open *l = &lost_opens[lost_next];

	lost_next = (lost_next + 1) % LOST_MAX;
	if (l->at != 0)
		log_warnx("server=%s file id 0x%llx: no longer kept for its "
		    "reconnect (%u kept)", l->server,
		    (unsigned long long)l->persistent, LOST_MAX);
	l->at = px_now_ms();
	snprintf(l->server, sizeof(l->server), "%s", c->dst_str);
	l->persistent = o->fid.persistent;
	l->conn_id = c->id;
	l->bytes = bytes;
	l->status = o->failed_status ? o->failed_status :
	    NT_STATUS_LOST_WRITEBEHIND_DATA;
	log_warnx("conn=%llu share=%s file=%s durable open closed with %llu "
	    "acknowledged bytes not written (error 0x%08x): a reconnect of "
	    "it within %u s gets the error", (unsigned long long)c->id,
	    px_tree_share(c, o), o->name, (unsigned long long)bytes,
	    l->status, (unsigned int)(LOST_KEEP_MS / 1000));
}

static void
lost_reopened(struct px_conn *c, struct px_open *o)
{
	double now = px_now_ms();
	unsigned int i;

	if (!o->reopened)
		return;
	for (i = 0; i < LOST_MAX; i++) {
		struct lost_open *l = &lost_opens[i];

		if (l->at == 0 || l->persistent != o->reopened_persistent ||
		    strcmp(l->server, c->dst_str) != 0)
			continue;
		if (now - l->at > LOST_KEEP_MS) {
			l->at = 0;      /* expired */
			continue;
		}
		l->at = 0;
		if (!o->failed_status)
			o->failed_status = l->status;
		px_stats.lost_reconnected++;
		log_warnx("conn=%llu share=%s file=%s durable reconnect of the "
		    "open that lost %llu acknowledged bytes on conn=%llu: error "
		    "0x%08x deferred to its next WRITE, FLUSH, SET_INFO or CLOSE",
		    (unsigned long long)c->id, px_tree_share(c, o), o->name,
		    (unsigned long long)l->bytes, (unsigned long long)l->conn_id,
		    o->failed_status);
	}
}

/*
 * The records outlive a restart through state_dir.  A flush that fails
 * while smbaccel stops (SIGTERM's drain: a server gone or full) loses
 * data that was acknowledged, and the client, whose connection the stop
 * ended, reconnects its durable handles to the next smbaccel: without
 * the records it would go on as if its writes had landed.  At exit the
 * records still current are written to STATE_DIR/lost-opens (0600,
 * through a temporary file and a rename), at start they are read back
 * and the file removed, so a record is used once.  One line a record:
 *   SERVER PERSISTENT-ID CONN BYTES STATUS LOST-AT
 * (hexadecimal id and status, LOST-AT in ms since the epoch; '#' starts a
 * comment).  A line that does not parse is logged and skipped.
 */
#define LOST_FILE     "lost-opens"

void
px_coh_lost_save(const char *dir)
{
	double now = px_now_ms(), wall = (double)px_wall_ms();
	unsigned int i, n = 0;
	int dfd, fd;
	bool ok;
	FILE *f;

	for (i = 0; i < LOST_MAX; i++)
		if (lost_opens[i].at != 0 &&
		    now - lost_opens[i].at <= LOST_KEEP_MS)
			n++;
	if (dir[0] == '\0') {
		if (n > 0)
			log_warnx("%u durable open(s) that lost acknowledged "
			    "data are forgotten at exit (no state_dir): their "
			    "reconnects to the next smbaccel will not get the "
			    "error", n);
		return;
	}
	if ((dfd = px_private_dir(dir, "state_dir", "records of lost data "
	    "not kept", false)) == -1)
		return;
	if (n == 0) {
		(void)unlinkat(dfd, LOST_FILE, 0);
		close(dfd);
		return;
	}
	if ((fd = openat(dfd, LOST_FILE ".tmp", O_WRONLY | O_CREAT | O_TRUNC |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) == -1 ||
	    (f = fdopen(fd, "w")) == NULL) {
		log_warn("state_dir: cannot write %s/%s.tmp", dir, LOST_FILE);
		if (fd != -1)
			close(fd);
		close(dfd);
		return;
	}
	fprintf(f, "# smbaccel: durable opens that lost acknowledged data\n"
	    "# server persistent-id conn bytes status lost-at(ms)\n");
	for (i = 0; i < LOST_MAX; i++) {
		const struct lost_open *l = &lost_opens[i];

		if (l->at != 0 && now - l->at <= LOST_KEEP_MS)
			fprintf(f, "%s 0x%" PRIx64 " %" PRIu64 " %" PRIu64
			    " 0x%08" PRIx32 " %.0f\n", l->server, l->persistent,
			    l->conn_id, l->bytes, l->status,
			    wall - (now - l->at));
	}
	ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
	ok = fclose(f) == 0 && ok;
	if (!ok || renameat(dfd, LOST_FILE ".tmp", dfd, LOST_FILE) != 0) {
		log_warn("state_dir: cannot write %s/%s", dir, LOST_FILE);
		(void)unlinkat(dfd, LOST_FILE ".tmp", 0);
	} else
		log_info("state_dir: %u record(s) of durable opens that lost "
		    "acknowledged data kept in %s/%s for their reconnects",
		    n, dir, LOST_FILE);
	close(dfd);
}

/* One line of the file into l; NULL, or why it is refused. */
static const char *
lost_parse(const char *line, double wall, struct lost_open *l)
{
	char server[sizeof(l->server) + 1];
	unsigned long long id, conn, bytes;
	unsigned int status;
	double at;
	int end = 0;
	size_t len;

	if (sscanf(line, "%64s %llx %llu %llu %x %lf %n", server, &id, &conn,
	    &bytes, &status, &at, &end) != 6 || line[end] != '\0')
		return "not SERVER ID CONN BYTES STATUS LOST-AT";
	if ((len = strlen(server)) >= sizeof(l->server))
		return "server name too long";
	if (status == 0)
		return "status 0 is not an error";
	if (!(at > 0) || at > wall + 60e3)
		return "lost-at is not a time up to now";
	if (wall - at > LOST_KEEP_MS)
		return NULL;    /* past its keep: dropped silently */
	memcpy(l->server, server, len + 1);
	l->persistent = id;
	l->conn_id = conn;
	l->bytes = bytes;
	l->status = status;
	l->at = px_now_ms() - (wall - at > 0 ? wall - at : 0);
	return NULL;
}

void
px_coh_lost_load(const char *dir)
{
	char path[POL_PATH_MAX + 32], line[256];
	double wall = (double)px_wall_ms();
	unsigned int n = 0, no = 0;
	int dfd, fd;
	FILE *f;

	if (dir[0] == '\0' || (dfd = px_private_dir(dir, "state_dir",
	    "records of lost data not kept", false)) == -1)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, LOST_FILE);
	if ((fd = openat(dfd, LOST_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1 || (f = fdopen(fd, "r")) == NULL) {
		if (errno != ENOENT)
			log_warn("state_dir: cannot read %s", path);
		if (fd != -1)
			close(fd);
		close(dfd);
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		struct lost_open *l = &lost_opens[lost_next];
		size_t len = strlen(line);
		const char *why;

		no++;
		if (len > 0 && line[len - 1] != '\n' && !feof(f)) {
			int ch;

			while ((ch = fgetc(f)) != EOF && ch != '\n')
				;
			log_warnx("%s:%u: line too long; ignored", path, no);
			continue;
		}
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || line[strspn(line, " \t")] == '\0')
			continue;
		if (n == LOST_MAX) {
			log_warnx("%s:%u: more than %u records; the rest "
			    "ignored", path, no, LOST_MAX);
			break;
		}
		l->at = 0;
		if ((why = lost_parse(line, wall, l)) != NULL) {
			log_warnx("%s:%u: %s; ignored", path, no, why);
			continue;
		}
		if (l->at == 0)
			continue;
		lost_next = (lost_next + 1) % LOST_MAX;
		n++;
		log_warnx("server=%s file id 0x%llx lost %llu acknowledged "
		    "bytes (error 0x%08x) before the restart: a reconnect of it "
		    "gets the error", l->server,
		    (unsigned long long)l->persistent,
		    (unsigned long long)l->bytes, l->status);
	}
	fclose(f);
	if (unlinkat(dfd, LOST_FILE, 0) == -1)
		log_warn("state_dir: cannot remove %s (its records would be "
		    "read again at the next start)", path);
	close(dfd);
}

void
px_coh_closing(struct px_conn *c)
{
	const struct px_open *o;

	for (o = c->led.opens; o; o = o->next) {
		uint64_t lost = o->wb_inflight_bytes + o->refused.len +
		    o->wb.len;

		if (o->durable && !o->closed && (lost || o->failed_status))
			lost_keep(c, o, lost);
	}
}

void
px_coh_opened(struct px_conn *c, struct px_open *o)
{
	/* opened after another handle locked the file */
	if (!o->locked && path_locked(c, px_tree_share(c, o), o->name, o))
		px_open_lock(&c->led, o);
	/* a cached copy of the file: valid for this open? */
	px_dc_opened(c, o);
	/* a reconnect of a durable open that lost data */
	lost_reopened(c, o);
}

/* The server refused a re-authentication of established session s, which
 * deletes it with its opens (MS-SMB2 3.3.5.5.3; smbd does): smbaccel
 * never acts on it again (px_may_act), and its read caches go.  What it
 * still buffered (nothing, unless a request raced the re-authentication:
 * relay.c's must_wait writes it first) fails upstream and is reported as
 * every refused write is. */
void
px_coh_reauth_refused(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p)
{
	struct px_session *s;
	struct px_open *o;
	uint64_t held = 0;

	if (p == NULL || h->command != SMB2_SESSION_SETUP ||
	    p->command != SMB2_SESSION_SETUP || p->u.sess.binding ||
	    h->status == NT_STATUS_SUCCESS ||
	    h->status == NT_STATUS_MORE_PROCESSING_REQUIRED ||
	    (s = px_session_find(&c->led, h->session_id)) == NULL ||
	    !s->established || s->srv_expired || s->srv_gone)
		return;

	s->srv_gone = true;
	s->reauthing = false;
	px_stats.sessions_reauth_refused++;
	for (o = c->led.opens; o; o = o->next)
		if (o->session_id == s->id) {
			held += o->wb.len;
			px_ra_drop(o, PX_RA_ERROR);
			px_dc_open_lost(o, PX_DC_BREAK);
		}
	log_warnx("conn=%llu session=0x%llx the server refused the client's "
	    "re-authentication (status 0x%08x), which deletes the session "
	    "and its opens: smbaccel no longer acts on it (%llu bytes "
	    "buffered)", (unsigned long long)c->id, (unsigned long long)s->id,
	    h->status, (unsigned long long)held);
}
