/*
 * compound.c - a client's CLOSE, FLUSH, READ, SET_INFO or QUERY_INFO sent
 * upstream with the flush of its file as one related compound (docs/design.md
 * "Write-behind"; MS-SMB2 3.2.4.1.4, 3.3.5.2.7.2).
 *
 * Without it a small written file costs three round trips: the CREATE, the
 * flush that must be answered before the CLOSE may go (DESIGN.md section
 * 4), then the CLOSE.  Here the CLOSE that would wait only for its own
 * open's buffered data goes up behind that data in one frame: the WRITEs,
 * made by smbaccel and paid with donated ids (DESIGN.md section 3), then
 * the client's CLOSE with its own id, changed only as compounding needs
 * (SMB2_FLAGS_RELATED_OPERATIONS; it is the last element, so NextCommand
 * stays 0).  Every element names the open's FileId explicitly: servers may
 * ignore the all-FF related id.  Changing the CLOSE is a rewrite, so it is
 * done only where alter.c allows one: keyed sessions (every element is
 * signed on its own, MS-SMB2 3.1.4.1, or the whole compound sealed in one
 * TRANSFORM) and unsigned sessions whose server signs only what it must.
 * The same goes for the other requests that wait only for their open's
 * buffered data (relay.c, must_wait): a FLUSH (an fsync after a save), a
 * READ of what was just written, a SET_INFO (times or size after a copy;
 * not a rename or a delete, which wait for the whole connection) and a
 * QUERY_INFO.  The server runs a related compound in order, so each sees
 * the data written.
 *
 * The answer.  smbd 4.17 answers such a compound in one frame, WRITE
 * answers first, and puts the grant of the whole compound on the last
 * answer, the CLOSE's (every other grants 0; seen on the wire, also at
 * 2.0.2); MS-SMB2 3.3.4.1.3 lets a server grant on each answer instead.
 * The split (co_compound_split): the bank gets back what smbaccel's
 * WRITEs would have been granted sent alone (CreditCharge + CreditRequest
 * 1 - 1 = their charge), less what their own answers brought; the client
 * gets the rest on its CLOSE answer, at least one credit if it would
 * otherwise have none and nothing else in flight.  So the client holds
 * what it would have without smbaccel and C <= S holds (its share only
 * ever shrinks).  The CLOSE answer travels alone: the related flag
 * cleared, the credit field patched, re-signed or re-sealed as it
 * arrived.
 *
 * A failed WRITE.  smbd runs the rest of the chain with the explicit
 * FileIds and closes the handle: the client's CLOSE is then answered with
 * the WRITE's status.  A server may instead fail the rest of the chain
 * with the same status (3.3.5.2.7.2): the handle may still be open, so
 * smbaccel closes it itself with an id kept back when the compound was
 * built (a leftover the pool held), before the client gets its answer.
 * Without such an id the client is answered at once and the handle is
 * closed with the next leftover id the connection gets (kept from ECHOs
 * meanwhile), or by the server when the connection ends (MS-SMB2 3.3.7.1);
 * both are logged, and from then on that connection compounds a CLOSE only
 * when it can keep an id back.  A FLUSH is answered with the WRITE's
 * status as a CLOSE is (the error is then reported), and so is a
 * SET_INFO, which the server carried out (times or size after a copy: an
 * application sees it fail, where a CLOSE's status is lost to most); a
 * QUERY_INFO gets the server's own answer, and the error waits on the
 * open for its next WRITE, FLUSH, SET_INFO or CLOSE, as after any failed
 * flush (a READ too: it gets what the server has).  The handle stays open
 * either way.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/compound.h"
#include "proxy/writebehind.h"
#include "proxy/alter.h"
#include "proxy/emit.h"
#include "proxy/keyed.h"

/* A request sent with its flush, until the client has its answer and
 * (a CLOSE) the handle is known closed. */
struct cmp_rec {
	struct cmp_rec *next;
	uint64_t close_mid;          /* the client's request */
	uint16_t cmd;                /* ... SMB2_CLOSE, FLUSH, SET_INFO, ... */
	int nw;                      /* its WRITEs, their ids */
	uint64_t wmid[PX_WB_ELEMS_MAX];
	int writes_left;             /* WRITE answers still to come */
	uint64_t bank_due;           /* credits the bank is still owed */
	uint32_t wstatus;            /* the first failed WRITE, 0 = none */
	uint64_t woff;
	uint32_t wlen;
	bool answered;               /* the CLOSE's final answer arrived */
	uint32_t close_status;
	uint8_t *ans;                /* the client's answer, not yet sent */
	size_t ans_len;
	struct px_prot prot;         /* ... and how it travels */
	bool held;                   /* counted again in client_outstanding */
	bool spare;                  /* an id kept back for our own CLOSE */
	uint64_t spare_id;
	bool closing;                /* our own CLOSE in flight, pclose_mid */
	uint64_t pclose_mid;
	bool orphan;                 /* maybe open, no id to close it yet */
	struct smb2_fileid fid;
	uint64_t sid;
	uint32_t tid;
	char *name;                  /* for log lines */
	char *share;
};

struct px_cmp {
	struct cmp_rec *recs;
	bool chain_fails;    /* the server failed a CLOSE after a failed WRITE
	                      * of its chain: compound only with an id kept */
};

static const char *const decline_names[PX_CMP_NDECLINES] = {
	"off", "cannot-alter", "busy", "ids", "unseen-expiry", "other",
};

const char *
px_cmp_decline_name(enum px_cmp_decline d)
{
	return (unsigned int)d < PX_CMP_NDECLINES ? decline_names[d] : "?";
}

static enum px_absorb
declined(struct px_conn *c, const struct px_open *o, uint16_t cmd,
    enum px_cmp_decline d)
{
	/* counted for CLOSEs: the others are sent with their flush only
	 * where it costs nothing to look */
	if (cmd == SMB2_CLOSE)
		px_stats.cmp_declined[d]++;
	if (log_debug_on())
		log_debug("conn=%llu share=%s file=%s %s not sent with its "
		    "flush (%s): flushed first", (unsigned long long)c->id,
		    px_tree_share(c, o), o->name ? o->name : "",
		    px_smb2_cmd_name(cmd), px_cmp_decline_name(d));
	return PX_AB_FORWARD;
}

bool
px_cmp_command(uint16_t cmd)
{
	return cmd == SMB2_CLOSE || cmd == SMB2_FLUSH || cmd == SMB2_READ ||
	    cmd == SMB2_SET_INFO || cmd == SMB2_QUERY_INFO;
}

/* The open request h names, if it is one a compound may carry: a
 * SET_INFO that renames or deletes, and a QUERY_INFO of the volume (free
 * space), wait for the whole connection (relay.c, must_wait), so they are
 * not. */
static struct px_open *
request_open(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct smb2_fileid fid;

	if (h->command == SMB2_SET_INFO) {
		struct smb2_set_info_req si;

		if (px_smb2_set_info_req_decode(e, &si) == -1 ||
		    px_smb2_info_renames(si.info_class) ||
		    px_smb2_info_deletes(si.info_class))
			return NULL;
	}
	if (!px_cmp_command(h->command) ||
	    (h->command == SMB2_QUERY_INFO && px_smb2_query_info_of_volume(e)) ||
	    px_smb2_req_file_id(e, h->command, &fid) == -1)
		return NULL;
	return px_open_find(&c->led, &fid);
}

bool
px_cmp_buffered(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct px_open *o = request_open(c, h, e);

	return o != NULL && !o->closed && o->wb.len != 0;
}

static void
rec_free(struct px_conn *c, struct cmp_rec *r)
{
	struct cmp_rec **pp;

	for (pp = &c->cmp->recs; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	if (r->held && c->led.cr.client_outstanding)
		c->led.cr.client_outstanding--;
	if (r->orphan && !r->closing && c->ids_wanted)
		c->ids_wanted--;
	free(r->ans);
	free(r->name);
	free(r->share);
	free(r);
}

/* Another open of o's file on this connection with data buffered or in
 * flight: the CLOSE must wait for it anyway. */
static bool
file_busy_elsewhere(const struct px_conn *c, const struct px_open *o)
{
	const struct px_open *x;

	for (x = c->led.opens; x; x = x->next)
		if (x != o && px_open_same_file(&c->led, x, o) && px_wb_busy(x))
			return true;
	return false;
}

/* Give an id back: to the pool, where the relay spends it (an ECHO), or
 * on an ECHO at once if the pool cannot take it. */
static void
give_back(struct px_conn *c, uint64_t id)
{
	uint8_t msg[64 + 4];
	struct smb2_hdr_out h;

	if (co_pool_add(&c->led.pool, id, 1) == 0) {
		px_stats.pool_ids_now = c->led.pool.count;
		px_emit_spend_pool(c, false);
		return;
	}
	memset(&h, 0, sizeof(h));
	h.command = SMB2_ECHO;
	h.credit_charge = 1;
	h.credit = 1;
	h.message_id = id;
	if (px_smb2_echo_req_encode(msg, sizeof(msg), &h) == 0 ||
	    px_emit_pending(c, id, SMB2_ECHO, 1) == NULL ||
	    px_relay_ops->send(c, PX_SERVER, msg, sizeof(msg)) == -1)
		log_warnx("conn=%llu cannot spend id %llu", (unsigned long long)c->id,
		    (unsigned long long)id);
	else
		px_stats.upstream_echoes++;
}

/* ---- the request ---------------------------------------------------------- */

/* Sign each element of a compound on its own, padding included (MS-SMB2
 * 3.1.4.1); elements start at off[0..n-1], the last ends at len. */
static int
sign_elems(struct px_conn *c, uint64_t sid, uint8_t *msg, size_t len,
    const size_t *off, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		size_t end = i + 1 < n ? off[i + 1] : len;

		if (px_keyed_sign(c, sid, msg + off[i], end - off[i],
		    false) == -1)
			return -1;
	}
	return 0;
}

enum px_absorb
px_cmp_request(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct smb2_fileid related;
	struct px_session *s;
	struct px_tree *t;
	struct px_open *o;
	struct px_wb_elems we;
	struct px_prot up;
	struct px_pending *p;
	struct cmp_rec *r;
	size_t off[PX_WB_ELEMS_MAX + 1], len;
	uint8_t *msg;
	int i, rc;

	if (!px_cmp_buffered(c, h, e))
		return PX_AB_FORWARD;     /* nothing buffered: nothing to gain */
	o = request_open(c, h, e);
	s = px_session_find(&c->led, h->session_id);
	t = px_tree_find(&c->led, h->session_id, h->tree_id);
	if (s == NULL || t == NULL || !s->established || s->srv_expired ||
	    o->session_id != h->session_id || o->tree_id != h->tree_id ||
	    o->failed_status || c->delayed != NULL || h->next_command != 0 ||
	    px_pending_find(&c->led, h->message_id) != NULL)
		return declined(c, o, h->command, PX_CMP_OTHER);
	if (!t->policy.close_compound)
		return declined(c, o, h->command, PX_CMP_OFF);
	/* a session whose end smbaccel cannot see (Kerberos without the
	 * server's key): a flush refused at the expiry is kept and sent
	 * again after the re-authentication (writebehind.c), which a WRITE
	 * of a compound cannot be, and the server would still carry out
	 * the request after it (MS-SMB2 3.3.5.2.9): a CLOSE would leave the
	 * data nowhere */
	if (px_wb_expiry_unseen(s))
		return declined(c, o, h->command, PX_CMP_EXPIRY);
	if (o->wb_inflight || file_busy_elsewhere(c, o))
		return declined(c, o, h->command, PX_CMP_BUSY);
	/* the request gets the related flag: a rewrite (alter.c) */
	if (!px_may_act(c, s, t, h, e) || !px_may_rewrite(c, s))
		return declined(c, o, h->command, PX_CMP_ALTER);
	if (c->cmp == NULL && (c->cmp = calloc(1, sizeof(*c->cmp))) == NULL)
		return PX_AB_FORWARD;
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (o->name && (r->name = strdup(o->name)) == NULL) ||
	    (r->share = strdup(t->share)) == NULL) {
		if (r)
			free(r->name);
		free(r);
		return PX_AB_FORWARD;
	}
	msg = px_wb_flush_elems(c, o, e->len,
	    h->command == SMB2_CLOSE && c->cmp->chain_fails, &we);
	if (msg == NULL) {
		free(r->name);
		free(r->share);
		free(r);
		return we.oom ? PX_AB_FAIL : declined(c, o, h->command,
		    PX_CMP_IDS);
	}
	/* the client's request, last: its own id, the related flag */
	for (i = 0; i < we.n; i++)
		off[i] = we.off[i];
	off[we.n] = we.len;
	len = we.len + e->len;
	memcpy(msg + we.len, e->hdr, e->len);
	px_put_u32(msg + we.len + 16, px_get_u32(msg + we.len + 16) |
	    SMB2_FLAGS_RELATED_OPERATIONS);
	px_put_u32(msg + we.len + 20, 0);
	/* how it travels: as smbaccel's own requests of the session must,
	 * and as the client sent its CLOSE (c->cur_prot, px_may_act) */
	up = px_emit_prot(c, o->session_id, o->tree_id);
	if (c->cur_prot.encrypt)
		up.encrypt = true;
	if (up.encrypt)
		up.sign = false;
	else if (c->cur_prot.sign)
		up.sign = true;

	memset(&related, 0xFF, sizeof(related));
	if ((p = px_ledger_client_request(&c->led, h, e, true, &related)) ==
	    NULL) {
		free(msg);
		free(r->name);
		free(r->share);
		free(r);
		return PX_AB_FAIL;   /* the WRITEs are committed */
	}
	if (h->command == SMB2_CLOSE)
		px_wb_on_close(c, p, false);
	r->close_mid = h->message_id;
	r->cmd = h->command;
	r->nw = we.n;
	r->writes_left = we.n;
	for (i = 0; i < we.n; i++) {
		struct px_pending *wp = px_pending_find(&c->led, we.mid[i]);

		if (wp)
			wp->with_cmd = h->command;   /* for its log line */
		r->wmid[i] = we.mid[i];
		r->bank_due += we.charge[i] ? we.charge[i] : 1;
	}
	/* only a CLOSE may need an id of its own afterwards */
	r->spare = we.spare && h->command == SMB2_CLOSE;
	r->spare_id = we.spare_id;
	r->fid = o->fid;
	r->sid = o->session_id;
	r->tid = o->tree_id;
	r->next = c->cmp->recs;
	c->cmp->recs = r;

	if (up.sign) {
		rc = sign_elems(c, up.sid, msg, len, off, we.n + 1);
		if (rc == 0)
			rc = px_relay_ops->send(c, PX_SERVER, msg, len);
		else
			rc = px_relay_fail(c, PX_CLOSE_CANNOT_SIGN);
	} else
		rc = px_emit_protected(c, PX_SERVER, &up, msg, len);
	free(msg);
	if (rc == -1)
		return PX_AB_FAIL;
	if (we.spare && !r->spare)
		give_back(c, we.spare_id);
	if (h->command == SMB2_CLOSE)
		px_stats.cmp_closes++;
	else
		px_stats.cmp_others++;
	px_stats.cmp_writes += (uint64_t)we.n;
	if (log_debug_on())
		log_debug("conn=%llu share=%s file=%s %s mid=%llu sent with "
		    "its flush: %d WRITE%s, %zu bytes, %s", (unsigned long long)c->id,
		    r->share, r->name ? r->name : "", px_smb2_cmd_name(h->command),
		    (unsigned long long)h->message_id, we.n, we.n == 1 ? "" : "s",
		    len, up.encrypt ? "sealed" : up.sign ? "signed" : "plain");
	return PX_AB_DONE;
}

/* ---- the answers ------------------------------------------------------------ */

static struct cmp_rec *
find_close(struct px_conn *c, uint64_t mid)
{
	struct cmp_rec *r;

	for (r = c->cmp ? c->cmp->recs : NULL; r; r = r->next)
		if (r->close_mid == mid && !r->answered)
			return r;
	return NULL;
}

/*
 * The client's copy of the server's answer element e: alone (NextCommand
 * 0, no related flag, no padding past its body) with `credit`.
 */
static uint8_t *
answer_copy(const struct smb2_hdr *h, const struct smb2_elem *e,
    uint16_t credit, size_t *len)
{
	size_t n = e->len;
	uint8_t *m;

	/* MS-SMB2 2.2.16: a CLOSE answer is 60 bytes; 2.2.2: an error
	 * body 8 bytes and its ErrorData (one byte when empty); the others
	 * end where the last element of the server's message does */
	if (h->status == NT_STATUS_SUCCESS && h->command == SMB2_CLOSE &&
	    n > SMB2_HDR_LEN + 60)
		n = SMB2_HDR_LEN + 60;
	else if (h->status != NT_STATUS_SUCCESS && n >= SMB2_HDR_LEN + 8) {
		uint32_t bc = px_get_u32(e->hdr + SMB2_HDR_LEN + 4);
		size_t want = SMB2_HDR_LEN + 8 + (bc ? bc : 1);

		if (want < n)
			n = want;
	}
	if ((m = malloc(n)) == NULL)
		return NULL;
	memcpy(m, e->hdr, n);
	px_put_u16(m + 14, credit);
	px_put_u32(m + 16, px_get_u32(m + 16) & ~SMB2_FLAGS_RELATED_OPERATIONS);
	px_put_u32(m + 20, 0);
	*len = n;
	return m;
}

/* Make r's answer an error answer with the failed WRITE's status, keeping
 * the server's header (async id, credit, flags). */
static int
to_error(struct cmp_rec *r)
{
	struct smb2_hdr_out o;
	uint8_t *m = malloc(SMB2_HDR_LEN + 9);

	if (m == NULL)
		return -1;
	memset(&o, 0, sizeof(o));
	o.command = r->cmd;
	o.status = r->wstatus;
	if (px_smb2_error_rsp_encode(m, SMB2_HDR_LEN + 9, &o) == 0) {
		free(m);
		return -1;
	}
	memcpy(m, r->ans, SMB2_HDR_LEN);
	px_put_u32(m + 8, r->wstatus);
	free(r->ans);
	r->ans = m;
	r->ans_len = SMB2_HDR_LEN + 9;
	return 0;
}

static int
send_answer(struct px_conn *c, struct cmp_rec *r)
{
	int rc;

	if (r->ans == NULL)
		return 0;
	rc = px_emit_protected(c, PX_CLIENT, &r->prot, r->ans, r->ans_len);
	free(r->ans);
	r->ans = NULL;
	if (r->held) {
		r->held = false;
		if (c->led.cr.client_outstanding)
			c->led.cr.client_outstanding--;
	}
	return rc;
}

/* smbaccel's own CLOSE of r's handle with id `id`.  0 sent, 1 nothing to
 * close (its tree is gone, and the handle with it), -1 failure. */
static int
proxy_close(struct px_conn *c, struct cmp_rec *r, uint64_t id)
{
	uint8_t msg[SMB2_HDR_LEN + 24];
	struct smb2_hdr_out h;
	struct px_prot prot;
	struct px_pending *p;
	size_t n;

	if (px_tree_find(&c->led, r->sid, r->tid) == NULL) {
		give_back(c, id);
		return 1;
	}
	memset(&h, 0, sizeof(h));
	h.command = SMB2_CLOSE;
	h.credit_charge = 1;
	h.credit = 1;
	h.message_id = id;
	h.tree_id = r->tid;
	h.session_id = r->sid;
	prot = px_emit_prot(c, r->sid, r->tid);
	if ((n = px_smb2_close_req_encode(msg, sizeof(msg), &h, &r->fid)) == 0 ||
	    (p = px_emit_pending(c, id, SMB2_CLOSE, 1)) == NULL)
		return -1;
	p->fid = r->fid;
	p->session_id = r->sid;
	p->tree_id = r->tid;
	if (px_emit_protected(c, PX_SERVER, &prot, msg, n) == -1)
		return -1;
	r->closing = true;
	r->pclose_mid = id;
	log_warnx("conn=%llu share=%s file=%s the server failed the CLOSE after "
	    "the failed write: smbaccel closes the handle itself (mid=%llu)",
	    (unsigned long long)c->id, r->share, r->name ? r->name : "",
	    (unsigned long long)id);
	return 0;
}

/* Both the CLOSE's final answer and every WRITE's are in: answer the
 * client, after closing the handle ourselves if the server left it. */
static int
finish(struct px_conn *c, struct cmp_rec *r)
{
	int rc;

	if (r->wstatus != 0 && r->cmd != SMB2_CLOSE) {
		struct px_open *o = px_open_find(&c->led, &r->fid);

		px_stats.cmp_write_errors++;
		if (r->cmd == SMB2_FLUSH || r->cmd == SMB2_SET_INFO) {
			/* the FLUSH asked for the data: it gets the error;
			 * so does a SET_INFO (times or size after a copy),
			 * which most applications see fail where a CLOSE's
			 * status is lost to them (CloseHandle, close(2)) */
			log_warnx("conn=%llu share=%s file=%s offset=%llu "
			    "length=%u write sent with the %s failed "
			    "status=0x%08x: reported on the %s",
			    (unsigned long long)c->id, r->share,
			    r->name ? r->name : "", (unsigned long long)r->woff,
			    r->wlen, px_smb2_cmd_name(r->cmd), r->wstatus,
			    px_smb2_cmd_name(r->cmd));
			if (to_error(r) == -1)
				return -1;
			if (o && o->failed_status == r->wstatus)
				o->failed_status = 0;
		}
		/* else the server's own answer; the error waits on the open
		 * (px_wb_write_done) for its next WRITE, FLUSH, SET_INFO or
		 * CLOSE */
	} else if (r->wstatus != 0) {
		px_stats.cmp_write_errors++;
		log_warnx("conn=%llu share=%s file=%s offset=%llu length=%u "
		    "write sent with the CLOSE failed status=0x%08x: reported "
		    "on the CLOSE (server's CLOSE status=0x%08x)",
		    (unsigned long long)c->id, r->share, r->name ? r->name : "",
		    (unsigned long long)r->woff, r->wlen, r->wstatus,
		    r->close_status);
		if (to_error(r) == -1)
			return -1;
		if (r->close_status != NT_STATUS_SUCCESS) {
			/* MS-SMB2 3.3.5.2.7.2: the rest of the chain failed,
			 * the handle may still be open */
			c->cmp->chain_fails = true;
			if (r->spare) {
				r->spare = false;
				rc = proxy_close(c, r, r->spare_id);
				if (rc == -1)
					return -1;
				if (rc == 0) {
					px_stats.cmp_proxy_closes++;
					if (!r->held) {
						r->held = true;
						c->led.cr.client_outstanding++;
					}
					return 0;   /* answered after it */
				}
			} else if (px_tree_find(&c->led, r->sid, r->tid)) {
				r->orphan = true;
				c->ids_wanted++;
				px_stats.cmp_handles_left++;
				log_warnx("conn=%llu share=%s file=%s no message "
				    "id left to close the handle with now: it "
				    "is closed with the next id smbaccel gets, "
				    "or by the server when the connection ends",
				    (unsigned long long)c->id, r->share,
				    r->name ? r->name : "");
			}
		}
	}
	rc = send_answer(c, r);
	if (r->spare) {
		r->spare = false;
		give_back(c, r->spare_id);
	}
	if (!r->orphan)
		rec_free(c, r);
	return rc;
}

int
px_cmp_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, bool interim, const struct px_prot *prot)
{
	struct cmp_rec *r = find_close(c, h->message_id);
	uint16_t m;
	uint8_t *msg;
	size_t len;
	int rc;

	if (r == NULL || r->cmd != h->command)
		return 0;
	/* the related flag and the grant change: a signed answer can be
	 * re-signed only with the key (alter.c) */
	if (prot->sign && !px_session_keyed(c, h->session_id))
		return px_alter_signed_answer(c, h);
	/* the ledger has given the whole grant to the client (C) */
	m = co_compound_split(&c->led.cr, h->credit, r->bank_due);
	r->bank_due -= m;
	c->led.cr.C -= m;
	if ((msg = answer_copy(h, e, (uint16_t)(h->credit - m), &len)) == NULL)
		return -1;
	if (interim) {
		/* credits ride on the interim answer; the final one follows */
		rc = px_emit_protected(c, PX_CLIENT, prot, msg, len);
		free(msg);
		return rc == -1 ? -1 : 1;
	}
	r->answered = true;
	r->close_status = h->status;
	r->ans = msg;
	r->ans_len = len;
	r->prot = *prot;
	if (r->writes_left > 0) {
		/* WRITE answers still to come (a server may answer a
		 * compound's elements separately): the client waits */
		r->held = true;
		c->led.cr.client_outstanding++;
		return 1;
	}
	return finish(c, r) == -1 ? -1 : 1;
}

int
px_cmp_proxy_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const struct px_pending *p, bool interim)
{
	struct cmp_rec *r;
	int i;

	if (c->cmp == NULL)
		return 0;
	if (p->command == SMB2_WRITE && p->in_compound) {
		for (r = c->cmp->recs; r; r = r->next) {
			for (i = 0; i < r->nw && r->wmid[i] != p->mid; i++)
				;
			if (i < r->nw)
				break;
		}
		if (r == NULL)
			return 0;
		r->bank_due -= h->credit < r->bank_due ? h->credit : r->bank_due;
		if (interim)
			return 0;
		r->wmid[i] = UINT64_MAX;    /* answered */
		if (r->writes_left > 0)
			r->writes_left--;
		if (r->wstatus == 0) {
			struct smb2_write_rsp wr;

			if (h->status != NT_STATUS_SUCCESS)
				r->wstatus = px_wb_loss_status(h->status);
			else if (px_smb2_write_rsp_decode(e, &wr) == -1 ||
			    wr.count != p->u.io.length)
				r->wstatus = NT_STATUS_DISK_FULL;  /* short */
			if (r->wstatus) {
				r->woff = p->u.io.offset;
				r->wlen = p->u.io.length;
			}
		}
		if (r->writes_left == 0 && r->answered)
			return finish(c, r);
		return 0;
	}
	if (p->command == SMB2_CLOSE && !interim) {
		for (r = c->cmp->recs; r; r = r->next)
			if (r->closing && r->pclose_mid == p->mid)
				break;
		if (r == NULL)
			return 0;
		if (h->status == NT_STATUS_SUCCESS)
			log_info("conn=%llu share=%s file=%s handle closed by "
			    "smbaccel", (unsigned long long)c->id, r->share,
			    r->name ? r->name : "");
		else
			log_warnx("conn=%llu share=%s file=%s smbaccel's CLOSE "
			    "of the handle got status=0x%08x",
			    (unsigned long long)c->id, r->share,
			    r->name ? r->name : "", h->status);
		i = send_answer(c, r);
		r->orphan = false;
		rec_free(c, r);
		return i;
	}
	return 0;
}

int
px_cmp_kick(struct px_conn *c)
{
	struct cmp_rec *r, *next;
	const struct px_open *o;
	uint64_t id;
	int rc;

	if (c->cmp == NULL || c->ids_wanted == 0 ||
	    !px_relay_ops->connected(c, PX_SERVER))
		return 0;
	/* buffered data has first claim on every pooled id */
	for (o = c->led.opens; o; o = o->next)
		if (o->wb.len)
			return 0;
	for (r = c->cmp->recs; r; r = next) {
		next = r->next;
		if (!r->orphan || r->closing)
			continue;
		if (px_tree_find(&c->led, r->sid, r->tid) == NULL) {
			log_info("conn=%llu share=%s file=%s handle left open "
			    "went with its tree", (unsigned long long)c->id,
			    r->share, r->name ? r->name : "");
			rec_free(c, r);
			continue;
		}
		if (co_pool_take_run(&c->led.pool, 1, &id) != 1)
			return 0;
		px_stats.pool_ids_now = c->led.pool.count;
		rc = proxy_close(c, r, id);
		if (rc == -1)
			return -1;
		if (rc == 1) {
			rec_free(c, r);
			continue;
		}
		c->ids_wanted--;      /* r->closing now: not counted again */
		px_stats.cmp_proxy_closes++;
	}
	return 0;
}

void
px_cmp_free(struct px_conn *c)
{
	struct cmp_rec *r;

	if (c->cmp == NULL)
		return;
	while ((r = c->cmp->recs) != NULL) {
		if (r->orphan && !r->closing)
			log_warnx("conn=%llu share=%s file=%s handle left open "
			    "after a failed compound: closed by the server with "
			    "the connection", (unsigned long long)c->id, r->share,
			    r->name ? r->name : "");
		r->held = false;
		rec_free(c, r);
	}
	free(c->cmp);
	c->cmp = NULL;
	c->ids_wanted = 0;
}
