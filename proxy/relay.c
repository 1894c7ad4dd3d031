/*
 * relay.c - the dispatcher: what each SMB2 message means to the proxy, and
 * where it goes: forwarded, absorbed or served (writebehind.c,
 * readahead.c), or held until a flush it depends on has completed.
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
 *
 * The feature glue it calls implements each concern; this file
 * only decides which one a message concerns, and keeps the order of
 * things: the relay model of DESIGN.md section 3 and the flush rules of
 * section 4.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/relay.h"
#include "proxy/lease.h"
#include "proxy/coherence.h"
#include "proxy/locks.h"
#include "proxy/readahead.h"
#include "proxy/compound.h"
#include "proxy/doccache.h"
#include "proxy/writebehind.h"
#include "proxy/create.h"
#include "proxy/alter.h"
#include "proxy/emit.h"
#include "proxy/keyed.h"

void
px_relay_init(const struct px_conn_ops *ops)
{
	px_relay_ops = ops;
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
	struct px_session *s = px_session_find(&c->led, h->session_id);

	if (s != NULL && s->srv_expired) {
		if (h->command == SMB2_SESSION_SETUP)
			s->srv_reauth = true;
		/* the server refuses all but these in an expired session
		 * (MS-SMB2 3.3.5.2.9): the rest observe nothing, and what is
		 * held waits for the re-authentication (px_wb_expiry_seen)
		 * instead of being refused too */
		else if (!compound && !s->srv_reauth &&
		    h->command != SMB2_CLOSE && h->command != SMB2_LOCK &&
		    h->command != SMB2_LOGOFF)
			return false;
	}
	/* a refused re-authentication deletes the session (3.3.5.5.3) */
	if (h->command == SMB2_SESSION_SETUP && s != NULL && s->established &&
	    !s->srv_expired && !s->multichannel && !px_wb_settled(c)) {
		px_wb_flush_all(c, CO_FLUSH_OBSERVE);
		c->stall = PX_STALL_CONN_IDLE;
		return true;
	}
	if (!compound && harmless(h->command))
		return false;
	if (!compound && file_scoped(h->command) &&
	    px_smb2_req_file_id(e, h->command, &fid) == 0 &&
	    (o = px_open_find(&c->led, &fid)) != NULL) {
		/* a rename or a delete, or a query of the volume's free
		 * space, sees every file's writes: the whole connection */
		bool whole = h->command == SMB2_QUERY_INFO &&
		    px_smb2_query_info_of_volume(e);

		if (h->command == SMB2_SET_INFO) {
			struct smb2_set_info_req si;

			if (px_smb2_set_info_req_decode(e, &si) == -1 ||
			    px_smb2_info_renames(si.info_class) ||
			    px_smb2_info_deletes(si.info_class))
				whole = true;
		}
		if (!whole) {
			if (px_wb_file_idle(c, o))
				return false;
			px_wb_flush_file(c, o, CO_FLUSH_REQUEST);
			c->stall = PX_STALL_OPEN_IDLE;
			c->stall_fid = o->fid;
			return true;
		}
	}
	/* what could be observed is what was written: pooled ids and the
	 * proxy's own READs in flight are not (DESIGN.md 5a: ids kept for
	 * document fetches survive the next CREATE) */
	if (px_wb_settled(c))
		return false;
	px_wb_flush_all(c, CO_FLUSH_OBSERVE);
	c->stall = PX_STALL_CONN_IDLE;
	return true;
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
		ok = o == NULL || px_wb_file_idle(c, o) ||
		    px_wb_only_held(c, o);
		break;
	case PX_STALL_CONN_IDLE:
		ok = px_relay_quiet(c) || px_wb_only_held(c, NULL);
		break;
	case PX_STALL_PEERS:
		/* re-evaluated from scratch when the frame is handled again */
		ok = true;
		break;
	case PX_STALL_MEMORY:
		/* some memory was given back, or this open holds none: handle
		 * the frame again; it waits once more if still over */
		o = px_open_find(&c->led, &c->stall_fid);
		ok = o == NULL || !px_wb_busy(o) ||
		    px_stats.wb_bytes_now < px_glob()->write_behind_memory / 2 ||
		    o->wb_inflight_bytes + o->wb.len < c->stall_mem;
		break;
	case PX_STALL_CREDITS:
		ok = c->delayed == NULL;
		break;
	case PX_STALL_READ:
		ok = !px_ra_read_waits(c, &c->stall_fid, c->stall_off,
		    c->stall_len);
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
	/* an acknowledgement reserve would never be spent: give it back */
	c->no_reserve = true;
	if (!px_relay_quiet(c) || c->led.rsv.held ||
	    px_ledger_widened_pending(&c->led)) {
		px_wb_flush_all(c, CO_FLUSH_OPAQUE);
		c->stall = PX_STALL_CONN_IDLE;
		return PX_RC_STALL;
	}
	px_relay_ops->go_opaque(c, r, detail);
	return px_relay_ops->send_frame(c, PX_SERVER, frame, len) == 0 ? PX_RC_DONE :
	    PX_RC_CLOSE;
}

static enum px_rc client_smb2(struct px_conn *c, const uint8_t *msg,
    size_t mlen, const uint8_t *frame, size_t len);
static enum px_rc server_smb2(struct px_conn *c, const uint8_t *msg,
    size_t mlen, const uint8_t *frame, size_t len, struct px_session *sealed);

/*
 * How much of the client's sealed message msg[0..mlen) to decrypt: all of
 * it (0), or only its SMB2 header and WRITE fixed part when it is a
 * standalone WRITE of at least its tree's coalesce size.  Such a WRITE is
 * absorbed into an empty buffer and goes upstream as the client sealed it
 * (px_wb_absorb, "direct": a buffer holding anything is flushed first), or
 * is forwarded so; its data is never read, so with AES-GCM it is
 * authenticated whole (the tag covers the ciphertext) and not decrypted.
 * The choice is made on the head decrypted without authentication; the
 * head acted on is the one decrypted again with the tag checked.
 */
#define SEALED_HEAD_MIN 65536   /* smaller messages are decrypted whole
                                 * without a look at their head first */

/* The smallest coalesce size among the trees of session sid (SIZE_MAX:
 * none): a sealed message of that session too small to carry a WRITE of
 * that size is decrypted whole without a look at its head first. */
static size_t
sealed_min_limit(struct px_conn *c, uint64_t sid)
{
	struct px_tree *t;
	size_t lim, min = SIZE_MAX;

	for (t = c->led.trees; t; t = t->next)
		if (t->session_id == sid &&
		    (lim = px_wb_coalesce_limit(c, t)) < min)
			min = lim;
	return min;
}

static size_t
sealed_head_only(struct px_conn *c, const uint8_t *msg, size_t mlen)
{
	uint8_t head[SMB2_HDR_LEN + 48];    /* the WRITE's fixed part */
	struct smb2_hdr h;
	struct smb2_elem e;
	struct smb2_write_req w;
	struct px_tree *t;

	if (c->state != PX_CONN_RELAY ||
	    mlen < PX_TRANSFORM_HDR_LEN + sizeof(head) + SEALED_HEAD_MIN ||
	    mlen - PX_TRANSFORM_HDR_LEN - sizeof(head) <
	    sealed_min_limit(c, px_get_u64(msg + 44)) ||
	    px_keyed_peek(c, msg, mlen, head, sizeof(head)) == -1 ||
	    px_smb2_hdr_decode(head, sizeof(head), 0, &h) == -1 ||
	    h.is_response || h.next_command != 0 || h.command != SMB2_WRITE)
		return 0;
	/* the decoders read no further than the fixed part */
	e.hdr = head;
	e.len = mlen - PX_TRANSFORM_HDR_LEN;
	if (px_smb2_write_req_decode(&e, &w) == -1 ||
	    (t = px_tree_find(&c->led, h.session_id, h.tree_id)) == NULL ||
	    w.length < px_wb_coalesce_limit(c, t))
		return 0;
	return sizeof(head);
}

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
		bool partial;
		uint8_t *plain = px_keyed_decrypt(c, msg, mlen, false,
		    sealed_head_only(c, msg, mlen), &plen, &s, &partial);
		enum px_rc rc;

		if (plain == NULL)
			return client_opaque(c, PX_OPAQUE_ENCRYPTED_NO_KEY, NULL,
			    frame, len);
		if (px_classify(plain, plen) != PX_MAGIC_SMB2) {
			px_keyed_release(plain);
			return client_opaque(c, PX_OPAQUE_DECODE_ERROR,
			    "detail=sealed-non-smb2", frame, len);
		}
		c->cur_encrypted = true;
		c->cur_enc_sid = s->id;
		c->cur_partial = partial;
		/* what smbaccel sends for this session travels sealed too
		 * (fetches of read-ahead and the document cache) */
		s->client_seals = true;
		rc = client_smb2(c, plain, plen, frame, len);
		c->cur_encrypted = false;
		c->cur_partial = false;
		px_keyed_release(plain);
		return rc;
	}
	case PX_MAGIC_SMB1:
		if (!c->smb2_seen) {
			/* multi-protocol negotiate: the server may answer in
			 * SMB2 (MS-SMB2 3.3.5.3); decide on its answer */
			c->led.smb1_negotiate = true;
			px_ledger_smb1_negotiate(&c->led);
			px_stats.requests[SMB2_NCMDS]++;
			return px_relay_ops->send_frame(c, PX_SERVER, frame, len) == 0 ?
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

/*
 * A standalone CREATE about to be forwarded: the features that add create
 * contexts of their own say what they want (smbaccel's lease on a
 * client's behalf, lease.c), and create.c sends it rewritten if the
 * session allows.  1 sent, 0 forward as is, -1 close.
 */
/*
 * The document cache compares a cached copy's on-disk file id too
 * (docs/design.md "The document cache"): where it may, smbaccel asks for
 * SMB2_CREATE_QUERY_ON_DISK_ID (MS-SMB2 2.2.13.2.9, no data) for a client
 * that did not; create.c strips it from the answer again.
 */
static void
dc_disk_id(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_create_edit *ed)
{
	struct px_session *s = px_session_find(&c->led, h->session_id);
	struct px_tree *t = px_tree_find(&c->led, h->session_id, h->tree_id);
	struct smb2_create_req *cr;

	if (s == NULL || t == NULL || (cr = malloc(sizeof(*cr))) == NULL)
		return;
	if (px_smb2_create_req_decode(e, cr) == 0 &&
	    px_dc_wants_disk_id(c, s, t, cr) &&
	    px_create_edit_add(ed, "QFid", NULL, 0) == -1)
		log_debug("conn=%llu no room for QFid in a CREATE",
		    (unsigned long long)c->id);
	free(cr);
}

static int
create_rewrite(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	struct px_create_edit ed;
	struct px_lease_ask ask;
	struct px_pending *p;
	int rc;

	px_create_edit_init(&ed);
	px_lease_edit(c, h, e, &ed, &ask);
	dc_disk_id(c, h, e, &ed);
	if (!px_create_edited(&ed) || !px_create_may_edit(c, h, e, true))
		return 0;
	if ((rc = px_create_forward(c, h, e, &ed, &p)) == 1)
		px_lease_sent(c, p, &ask);
	return rc;
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
	bool compound, spend;

	n = px_smb2_compound_count(msg, mlen);
	if (n < 1 || px_smb2_hdr_decode(msg, mlen, 0, &first) == -1)
		return client_opaque(c, PX_OPAQUE_DECODE_ERROR,
		    "detail=bad-smb2-header", frame, len);
	if (first.is_response)
		return client_opaque(c, PX_OPAQUE_DECODE_ERROR,
		    "detail=response-from-client", frame, len);
	if (px_ledger_frame_bad_ids(&c->led, msg, mlen, n)) {
		(void)px_relay_fail(c, PX_CLOSE_BAD_IDS);
		return PX_RC_CLOSE;
	}
	compound = n > 1;
	c->smb2_seen = true;
	/* a READ the server may answer compressed: opaque before it goes */
	if (px_ledger_read_compressed(&c->led, msg, mlen))
		return client_opaque(c, PX_OPAQUE_COMPRESSED,
		    "detail=read-may-be-answered-compressed", frame, len);
	/* a handle left open after a failed compound takes a leftover id */
	if (px_cmp_kick(c) == -1)
		return PX_RC_CLOSE;

	/* standalone WRITE: the absorb path */
	e.hdr = msg;
	e.len = first.elem_len;
	if (!compound && c->state == PX_CONN_RELAY) {
		enum px_absorb ar = PX_AB_FORWARD;

		if (px_wb_deferred_error(c, &first, &e, &ar)) {
			if (ar == PX_AB_FAIL)
				return PX_RC_CLOSE;
			px_stats.requests[first.command]++;
			return PX_RC_DONE;
		}
		if (first.command == SMB2_READ || first.command == SMB2_WRITE) {
			/* a lock the server would not check under smbaccel's
			 * lease: answered FILE_LOCK_CONFLICT here */
			ar = px_locks_check(c, &first, &e);
			if (ar == PX_AB_DONE) {
				if (c->pl_owed)
					px_lease_progress(c);
				return PX_RC_DONE;
			}
			if (ar == PX_AB_FAIL)
				return PX_RC_CLOSE;
		}
		if (first.command == SMB2_READ) {
			ar = px_ra_read(c, &first, &e, msg, mlen);
			if (ar == PX_AB_DONE)
				return PX_RC_DONE;
			if (ar == PX_AB_STALL)
				return PX_RC_STALL;
			if (ar == PX_AB_FAIL)
				return PX_RC_CLOSE;
		}
		if (first.command == SMB2_WRITE) {
			/* what another connection buffered of the file goes
			 * first: the server must get the writes in the order
			 * they were acknowledged */
			if (px_coh_must_wait(c, &first, &e))
				return PX_RC_STALL;
			ar = px_wb_absorb(c, &first, &e, frame, len);
			if (ar == PX_AB_DONE) {
				px_coh_on_request(c, &first, &e);
				px_stats.requests[SMB2_WRITE]++;
				/* its ids may pay an acknowledgement owed */
				if (c->pl_owed)
					px_lease_progress(c);
				return PX_RC_DONE;
			}
			if (ar == PX_AB_STALL)
				return PX_RC_STALL;
			if (ar == PX_AB_FAIL)
				return PX_RC_CLOSE;
		}
		if (first.command == SMB2_IOCTL) {
			ar = px_coh_interfaces(c, &first, &e);
			/* a server-side copy the server would not check */
			if (ar == PX_AB_FORWARD)
				ar = px_locks_copychunk(c, &first, &e);
			if (ar == PX_AB_DONE) {
				if (c->pl_owed)
					px_lease_progress(c);
				return PX_RC_DONE;
			}
			if (ar == PX_AB_FAIL)
				return PX_RC_CLOSE;
		}
		/* a CLOSE or LOCK that would lose data held in a session
		 * the server has expired: answered the expiry */
		if (px_wb_expired_answer(c, &first, &e, &ar)) {
			if (ar == PX_AB_FAIL)
				return PX_RC_CLOSE;
			px_stats.requests[first.command]++;
			return PX_RC_DONE;
		}
		if (px_cmp_command(first.command) &&
		    c->stall == PX_STALL_NONE &&
		    px_cmp_buffered(c, &first, &e)) {
			/* what other connections buffered of the file goes
			 * first (a CLOSE observes none of it), then this one
			 * with its own buffered writes, in one compound */
			if (first.command != SMB2_CLOSE &&
			    px_coh_must_wait(c, &first, &e))
				return PX_RC_STALL;
			ar = px_cmp_request(c, &first, &e);
			if (ar == PX_AB_DONE) {
				px_coh_on_request(c, &first, &e);
				px_stats.requests[first.command]++;
				return PX_RC_DONE;
			}
			if (ar == PX_AB_FAIL)
				return PX_RC_CLOSE;
		}
		if (first.command == SMB2_CANCEL) {
			/* CANCEL of an absorbed request: drop it (rule 6);
			 * its id may be one of smbaccel's own requests by now,
			 * which the CANCEL must not reach */
			struct px_pending *cp = px_pending_find(&c->led,
			    first.message_id);

			if (!(first.flags & SMB2_FLAGS_ASYNC_COMMAND) &&
			    (cp == NULL || cp->origin == PX_ORIGIN_PROXY) &&
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
			    px_coh_must_wait(c, &h, &e))
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
		px_coh_on_request(c, &h, &e);
		px_lease_renaming(c, &h, &e);
		if (h.command == SMB2_CREATE && !compound &&
		    c->state == PX_CONN_RELAY) {
			int rc = create_rewrite(c, &h, &e);

			if (rc != 0)
				return rc == 1 ? PX_RC_DONE : PX_RC_CLOSE;
		}
		if (h.command == SMB2_NEGOTIATE && !compound)
			px_keyed_negotiate_req(c, e.hdr, e.len);
		p = px_ledger_client_request(&c->led, &h, &e, compound, &related);
		if (p && h.command == SMB2_LOCK)
			px_locks_request(c, &e, p);
		if (compound)
			px_locks_forwarded(c, &h, &e);
		if (p && h.command == SMB2_SESSION_SETUP && !compound)
			px_keyed_setup_req(c, &h, e.hdr, e.len, p);
		if (p && h.command == SMB2_CLOSE)
			px_wb_on_close(c, p, compound);
		if (h.command == SMB2_WRITE)
			px_stats.writes_forwarded++;
		off += h.elem_len;
	}
	/* pooled ids kept back (for read-ahead, for documents) must not fall
	 * behind the client's front by more than the hoard bound, and an
	 * acknowledgement reserve ages as the client's ids move on */
	spend = c->led.pool.count && co_pool_over_bound(&c->led.pool,
	    c->led.cr.client_next, c->led.window);
	if (c->led.rsv.held && px_emit_tend_reserve(c) == CO_RSV_RELEASE)
		spend = true;
	if (spend)
		px_emit_spend_pool(c, false);
	return px_relay_ops->send_frame(c, PX_SERVER, frame, len) == 0 ? PX_RC_DONE :
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
		if (t && w.length <= px_wb_coalesce_limit(c, t))
			return false;   /* might be absorbed: decide on all of it */
		/* might be answered FILE_LOCK_CONFLICT (locks.c) */
		if (px_locks_blocks(c, o, w.offset, w.length, true))
			return false;
	}
	if (must_wait(c, &h, &e, false) || px_coh_must_wait(c, &h, &e))
		return false;
	/* nothing acknowledged stays behind a frame that goes out piece by
	 * piece: a client that leaves in its middle leaves the server
	 * waiting for the rest, and nothing more can follow it */
	px_wb_flush_all(c, CO_FLUSH_OBSERVE);
	/* what read-ahead and document copies hold of the range goes, as
	 * for any WRITE (it needs only the header and the fixed body) */
	px_coh_on_request(c, &h, &e);
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
	/* an answer to a widened READ is cut back, and one to a READ sent in
	 * a compound (compound.c: the grant is split) answered alone: each
	 * must be whole */
	if (p == NULL || p->origin != PX_ORIGIN_CLIENT || p->in_compound ||
	    (p->command == SMB2_READ && p->u.io.widened))
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

/*
 * A server message the relay cannot read (msg: as it came, or opened).
 * Sealed under a session smbaccel holds the keys of, it did not open: not
 * the server's, and the connection closes as a client's would.  Else, with
 * nothing of smbaccel's outstanding, the rest is relayed opaquely; with
 * acknowledged data, its own requests, pooled ids or widened READs
 * outstanding, opaque relay would strand them (their answers would reach
 * the client, the data never the server): the connection closes and
 * what it held is logged as lost (px_relay_free).
 */
static enum px_rc
server_unreadable(struct px_conn *c, const uint8_t *msg, size_t mlen,
    const uint8_t *frame, size_t len)
{
	bool sealed = px_classify(msg, mlen) == PX_MAGIC_TRANSFORM;

	if (sealed && px_keyed_sealed_by_keyed(c, msg, mlen)) {
		px_stats.server_not_authentic++;
		log_warnx("conn=%llu a sealed message from the server does not "
		    "open with its session's keys: not authentic; closing the "
		    "connection, as a client would", (unsigned long long)c->id);
		(void)px_relay_fail(c, PX_CLOSE_NOT_AUTHENTIC);
		return PX_RC_CLOSE;
	}
	if (!px_relay_quiet(c) || px_ledger_widened_pending(&c->led)) {
		log_warnx("conn=%llu the server sent a message smbaccel cannot "
		    "read (%s) while it holds state of its own (acknowledged "
		    "writes, its requests or message ids): closing the "
		    "connection (reason=server-unreadable) rather than relay "
		    "opaquely and strand it", (unsigned long long)c->id,
		    px_magic_name(px_classify(msg, mlen)));
		(void)px_relay_fail(c, PX_CLOSE_UNREADABLE);
		return PX_RC_CLOSE;
	}
	px_relay_ops->go_opaque(c, sealed ? PX_OPAQUE_ENCRYPTED_NO_KEY :
	    PX_OPAQUE_DECODE_ERROR, "detail=server-message");
	return px_relay_ops->send_frame(c, PX_CLIENT, frame, len) == 0 ?
	    PX_RC_DONE : PX_RC_CLOSE;
}

/* The answer to a request the proxy made itself; -1: close the
 * connection. */
static int
proxy_response(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p)
{
	if (c->proxy_inflight)
		c->proxy_inflight--;
	if (p->command == SMB2_READ)
		px_ra_fetch_done(c, h, e, p);
	else if (p->command == SMB2_WRITE)
		px_wb_write_done(c, h, e, p);
	else if (p->command == SMB2_OPLOCK_BREAK)
		px_lease_ack_done(c, h, p);
	/* a WRITE sent with a client's CLOSE, or smbaccel's own CLOSE */
	return px_cmp_proxy_answer(c, h, e, p, false);
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
		/* also while draining: the answers to the write-behind data
		 * written after the client left come sealed too */
		if (c->state == PX_CONN_RELAY || c->state == PX_CONN_DRAINING) {
			struct px_session *s;
			size_t plen;
			bool partial;
			uint8_t *plain = px_keyed_decrypt(c, msg, mlen, true,
			    0, &plen, &s, &partial);
			enum px_rc rc;

			if (plain && px_classify(plain, plen) == PX_MAGIC_SMB2) {
				rc = server_smb2(c, plain, plen, frame, len, s);
				px_keyed_release(plain);
				return rc;
			}
			px_keyed_release(plain);
		}
		break;
	case PX_MAGIC_SMB1:
		if (c->led.smb1_negotiate && !c->smb2_seen) {
			px_relay_ops->go_opaque(c, PX_OPAQUE_SMB1, NULL);
			return px_relay_ops->send_frame(c, PX_CLIENT, frame, len) == 0 ?
			    PX_RC_DONE : PX_RC_CLOSE;
		}
		break;
	default:
		break;
	}
	return server_unreadable(c, msg, mlen, frame, len);
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
	bool forward = true, replaced = false, kick = false, released = false;
	struct px_prot prot;
	size_t off;
	int n, i;
	/* by id: a LOGOFF answer frees the session it was sealed under */
	uint64_t sealed_id = sealed ? sealed->id : 0;

	n = px_smb2_compound_count(msg, mlen);
	if (n < 1 || !px_smb2_all_responses(msg, mlen, n))
		return server_unreadable(c, msg, mlen, frame, len);
	/* what smbaccel would act on must be the server's (keyed.c) */
	if (px_keyed_answers_authentic(c, msg, mlen, sealed_id) == -1) {
		(void)px_relay_fail(c, PX_CLOSE_NOT_AUTHENTIC);
		return PX_RC_CLOSE;
	}
	c->smb2_seen = true;
	c->led.smb1_negotiate = false;
	memset(&last_create, 0xFF, sizeof(last_create));
	for (off = 0, i = 0; i < n; i++) {
		struct smb2_hdr h;
		struct smb2_elem e;
		struct px_pending *p;
		bool interim;
		int rc;

		if (px_smb2_hdr_decode(msg, mlen, off, &h) == -1)
			break;
		e.hdr = msg + off;
		e.len = h.elem_len;
		off += h.elem_len;
		if (h.message_id == SMB2_NOTIFY_MESSAGE_ID &&
		    h.command == SMB2_OPLOCK_BREAK) {
			struct smb2_oplock_break b;

			/* a break of smbaccel's own lease: handled there, never
			 * shown to the client (servers send breaks alone) */
			if (px_lease_break(c, &e)) {
				if (n == 1)
					forward = false;
				else
					log_warnx("conn=%llu a break of smbaccel's "
					    "lease came in a compound of %d: "
					    "forwarded", (unsigned long long)c->id, n);
				kick = true;
				continue;
			}
			px_ledger_break(&c->led, &e);
			/* write back before the client acknowledges (3.2.5.19) */
			if (px_smb2_oplock_break_decode(&e, &b) == 0) {
				struct px_open *o;

				for (o = c->led.opens; o; o = o->next) {
					if (o->breaking)
						px_ra_drop(o, PX_RA_BREAK);
					if (o->breaking && o->wb.len)
						px_wb_flush_open(c, o, CO_FLUSH_BREAK);
				}
				px_emit_spend_pool(c, false);
			}
			continue;
		}
		px_ledger_server_response(&c->led, &h, &e, &last_create, &p,
		    &interim);
		px_coh_reauth_refused(c, &h, p);
		px_wb_expiry_seen(c, &h, p, interim);
		/* what the session's server signs decides what may be
		 * altered (alter.c) */
		px_alter_learn(c, &h, p, interim, sealed_id != 0);
		if (p && !interim && h.command == SMB2_LOCK &&
		    p->command == SMB2_LOCK)
			px_locks_answered(c, &h, p, &last_create);
		if (p && !interim && h.command == SMB2_SET_INFO &&
		    p->command == SMB2_SET_INFO && p->origin == PX_ORIGIN_CLIENT)
			px_lease_rename_done(c, &h, p);
		if (h.command == SMB2_CREATE && h.status == NT_STATUS_SUCCESS &&
		    p && !interim) {
			struct px_open *o = px_open_find(&c->led, &last_create);

			if (o)
				px_coh_opened(c, o);
		}
		if (p && !interim && (h.command == SMB2_CLOSE ||
		    h.command == SMB2_LOGOFF || h.command == SMB2_TREE_DISCONNECT))
			released = true;
		prot.encrypt = sealed_id != 0;
		prot.sid = sealed_id ? sealed_id : h.session_id;
		prot.sign = !sealed_id && (h.flags & SMB2_FLAGS_SIGNED);
		if (p && !interim && n == 1 && h.command == SMB2_NEGOTIATE &&
		    p->command == h.command)
			px_keyed_negotiate_rsp(c, e.hdr, e.len);
		if (p && !interim && n == 1 && h.command == SMB2_SESSION_SETUP &&
		    p->command == h.command && p->origin == PX_ORIGIN_CLIENT)
			px_keyed_setup_rsp(c, &h, e.hdr, e.len, p, sealed_id);
		if (p && p->origin == PX_ORIGIN_PROXY) {
			/* nothing of the message goes to the client as it
			 * came: a proxy request is compounded only with a
			 * client's CLOSE, which is answered alone below */
			forward = false;
			if (interim) {
				(void)px_cmp_proxy_answer(c, &h, &e, p, true);
				continue;
			}
			rc = proxy_response(c, &h, &e, p);
			px_pending_free(p);
			if (rc == -1)
				return PX_RC_CLOSE;
			kick = true;
			continue;
		}
		if (p && p->command == h.command && c->cmp &&
		    px_cmp_command(h.command)) {
			/* a request sent with its flush: answered alone */
			rc = px_cmp_answer(c, &h, &e, interim, &prot);
			if (rc != 0) {
				if (!interim)
					px_pending_free(p);
				if (rc == -1)
					return PX_RC_CLOSE;
				replaced = true;
				continue;
			}
		}
		if (p && !interim && p->command == SMB2_READ &&
		    h.command == SMB2_READ && p->u.io.widened && n == 1) {
			bool rep;

			if (px_ra_widened_answer(c, &h, &e, p, &prot, &rep) == -1) {
				px_pending_free(p);
				return PX_RC_CLOSE;
			}
			replaced = replaced || rep;
			/* a read of the client may wait for these chunks */
			kick = true;
		}
		if (p && !interim && n == 1 && h.command == SMB2_CREATE &&
		    px_create_rewritten(p)) {
			/* smbaccel's lease recorded, then taken out of the
			 * answer the client gets */
			bool rep;

			px_lease_answered(c, &h, p, h.status == NT_STATUS_SUCCESS ?
			    px_open_find(&c->led, &last_create) : NULL);
			if (px_create_answer(c, &h, &e, p, &prot, &rep) == -1) {
				px_pending_free(p);
				return PX_RC_CLOSE;
			}
			replaced = replaced || rep;
		}
		if (p && !interim && p->command == SMB2_CLOSE &&
		    h.command == SMB2_CLOSE && p->u.io.offset == UINT64_MAX &&
		    i < n - 1)
			px_wb_close_unreported(c, &h, p);
		else if (p && !interim && p->command == SMB2_CLOSE &&
		    h.command == SMB2_CLOSE && p->u.io.offset == UINT64_MAX) {
			/* deferred write error reported on CLOSE (alone, or
			 * the last answer of a compound); the CLOSE itself
			 * went to the server, so no handle leaks */
			rc = px_wb_close_answer(c, &h, p, &prot, msg,
			    (size_t)(e.hdr - msg));
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
	    px_relay_ops->send_frame(c, PX_CLIENT, frame, len) == -1)
		return PX_RC_CLOSE;
	if (released)
		px_lease_released(c);
	if (kick) {
		px_emit_send_delayed(c);
		/* pool order (DESIGN.md section 3): acknowledgements whose
		 * data is now written, then other proxy requests (a CLOSE of
		 * a handle a failed compound left open), then the leftovers
		 * on ECHOs */
		px_lease_progress(c);
		if (px_cmp_kick(c) == -1)
			return PX_RC_CLOSE;
		/* pool ids left over once everything is flushed */
		px_emit_spend_pool(c, false);
		px_stats.pool_ids_now = c->led.pool.count;
		if (c->stall != PX_STALL_NONE)
			px_relay_ops->kick(c);
		px_coh_kick_waiters(c);
	}
	return PX_RC_DONE;
}

/* ---- timers and teardown -------------------------------------------------------- */

void
px_relay_flush_all(struct px_conn *c, enum co_flush_cause cause)
{
	px_wb_flush_all(c, cause);
}

bool
px_relay_quiet(const struct px_conn *c)
{
	return px_wb_quiet(c);
}

double
px_relay_timer(struct px_conn *c, double now_ms)
{
	double t = px_wb_timer(c, now_ms), d = px_dc_timer(c, now_ms);
	double l = c->pl_owed ? px_lease_timer(c, now_ms) : 0;
	double r = px_coh_timer(c);

	t = t == 0 || (d != 0 && d < t) ? d : t;
	t = t == 0 || (r != 0 && r < t) ? r : t;
	return t == 0 || (l != 0 && l < t) ? l : t;
}

void
px_relay_free(struct px_conn *c)
{
	px_cmp_free(c);
	px_dc_free(c);
	px_coh_closing(c);
	px_wb_free(c);
	px_emit_free(c);
	px_lease_free(c);
	px_coh_kick_waiters(c);
}
