/*
 * wberror.c - what a client is told about the writes smbaccel absorbed
 * when they did not reach the server (DESIGN.md section 4): a deferred
 * write error reported on the open's next WRITE, FLUSH, SET_INFO or CLOSE (on the
 * CLOSE's answer also when the client sent it in a compound of its own),
 * and the expiry the server would give a CLOSE or LOCK in a session it
 * has expired while smbaccel holds data for the file.  The flushes and
 * their failures are writebehind.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/writebehind.h"
#include "proxy/alter.h"
#include "proxy/emit.h"
#include "proxy/keyed.h"

/* ---- requests of an expired session ------------------------------------------ */

/*
 * The server has expired h's session (px_wb_expiry_seen) and no
 * re-authentication is on its way, and h is a CLOSE or LOCK of a file
 * whose data smbaccel holds: refused at the expiry, or buffered.  The
 * server still carries out a CLOSE or LOCK in an expired session (MS-SMB2
 * 3.3.5.2.9), but the data must be written before it, and the server
 * refuses that: forwarded, the CLOSE would close the handle with the data
 * lost (wb_lose_held).  So h is answered STATUS_NETWORK_SESSION_EXPIRED,
 * the status the server gives every other request of the session: the
 * client re-authenticates and sends it again (3.2.5.1.6), by which time
 * the held data has been written (wb_resume).  Its ids go to the pool.
 */
/* A LOGOFF of an expired session (no re-authentication on its way) while
 * smbaccel holds data of its files: forwarded, it would end the opens with
 * the data lost; answered the expiry, as a CLOSE is above, the client
 * re-authenticates and sends it again after the data. */
static bool
expired_logoff(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, enum px_absorb *rc)
{
	struct px_session *s;
	const struct px_open *x;
	size_t held = 0;

	if (h->command != SMB2_LOGOFF ||
	    (s = px_session_find(&c->led, h->session_id)) == NULL ||
	    !s->srv_expired || s->srv_reauth || !px_ids_fresh(c, h, 1))
		return false;
	for (x = c->led.opens; x; x = x->next) {
		if (x->session_id != s->id || !px_wb_busy(x))
			continue;
		if (x->wb_inflight)
			return false;
		held += x->wb.len + x->refused.len;
	}
	if (held == 0 || !px_may_answer_expired(c, s, NULL, h, e) ||
	    (*rc = px_wb_absorb_status(c, h, NT_STATUS_NETWORK_SESSION_EXPIRED))
	    == PX_AB_FORWARD)
		return false;
	px_stats.expiry_answered++;
	log_warnx("conn=%llu session=0x%llx LOGOFF answered "
	    "STATUS_NETWORK_SESSION_EXPIRED by smbaccel: the server has expired "
	    "the session, and the %zu bytes held for its files are written once "
	    "the client re-authenticates and sends it again",
	    (unsigned long long)c->id, (unsigned long long)s->id, held);
	return true;
}

bool
px_wb_expired_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, enum px_absorb *rc)
{
	struct smb2_fileid fid;
	struct px_session *s;
	struct px_tree *t;
	struct px_open *o;
	size_t held = 0;
	const struct px_open *x;

	if (h->command == SMB2_LOGOFF)
		return expired_logoff(c, h, e, rc);
	if ((h->command != SMB2_CLOSE && h->command != SMB2_LOCK) ||
	    (s = px_session_find(&c->led, h->session_id)) == NULL ||
	    !s->srv_expired || s->srv_reauth ||
	    px_smb2_req_file_id(e, h->command, &fid) == -1 ||
	    (o = px_open_find(&c->led, &fid)) == NULL ||
	    o->session_id != h->session_id || o->tree_id != h->tree_id ||
	    px_wb_file_idle(c, o) || !px_wb_only_held(c, o) ||
	    (t = px_tree_find(&c->led, h->session_id, h->tree_id)) == NULL ||
	    !px_ids_fresh(c, h, 1) || !px_may_answer_expired(c, s, t, h, e))
		return false;
	for (x = c->led.opens; x; x = x->next)
		if (px_open_same_file(&c->led, x, o))
			held += x->wb.len + x->refused.len;
	if ((*rc = px_wb_absorb_status(c, h, NT_STATUS_NETWORK_SESSION_EXPIRED))
	    == PX_AB_FORWARD)
		return false;
	px_stats.expiry_answered++;
	log_warnx("conn=%llu share=%s file=%s %s answered "
	    "STATUS_NETWORK_SESSION_EXPIRED by smbaccel: the server has "
	    "expired the session, and the %zu bytes held for the file, which "
	    "must be written first, are written once the client "
	    "re-authenticates and sends it again", (unsigned long long)c->id,
	    px_tree_share(c, o), o->name ? o->name : "?",
	    px_smb2_cmd_name(h->command), held);
	return true;
}

/* ---- deferred errors ---------------------------------------------------------- */

/* May h carry a deferred write error to its client?  A WRITE or FLUSH;
 * and a SET_INFO but a delete's: an application setting the file's times
 * or attributes after a copy (Windows' CopyFile) sees its failure, where
 * a CLOSE's status is lost to most (CloseHandle, close(2) on a kernel
 * mount); a delete of the file goes on. */
static bool
carries_error(const struct smb2_hdr *h, const struct smb2_elem *e)
{
	struct smb2_set_info_req si;

	if (h->command == SMB2_WRITE || h->command == SMB2_FLUSH)
		return true;
	return h->command == SMB2_SET_INFO &&
	    px_smb2_set_info_req_decode(e, &si) == 0 &&
	    !(si.info_type == SMB2_0_INFO_FILE &&
	    px_smb2_info_deletes(si.info_class));
}

bool
px_wb_deferred_error(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, enum px_absorb *rc)
{
	struct smb2_fileid fid;
	struct px_open *o;
	struct px_session *s;
	struct px_tree *t;
	uint32_t st;

	if (!carries_error(h, e) ||
	    px_smb2_req_file_id(e, h->command, &fid) == -1 ||
	    (o = px_open_find(&c->led, &fid)) == NULL || !o->failed_status ||
	    px_wb_busy(o) || o->session_id != h->session_id ||
	    o->tree_id != h->tree_id || !px_ids_fresh(c, h, 1) ||
	    (s = px_session_find(&c->led, h->session_id)) == NULL ||
	    (t = px_tree_find(&c->led, h->session_id, h->tree_id)) == NULL ||
	    !px_may_act(c, s, t, h, e))
		return false;   /* forwarded; the error waits for CLOSE */
	st = o->failed_status;
	if ((*rc = px_wb_absorb_status(c, h, st)) == PX_AB_FORWARD)
		return false;
	o->failed_status = 0;
	log_warnx("conn=%llu share=%s file=%s deferred write error 0x%08x "
	    "reported on %s", (unsigned long long)c->id, px_tree_share(c, o),
	    o->name, st, px_smb2_cmd_name(h->command));
	px_emit_spend_pool(c, false);
	return true;
}


void
px_wb_on_close(struct px_conn *c, struct px_pending *p, bool compound)
{
	struct px_open *o = px_open_find(&c->led, &p->fid);

	if (o == NULL)
		return;
	o->closed = true;
	if (o->failed_status) {
		/* in a client's compound: put on the CLOSE's answer if it is
		 * the last of the server's (relay.c), else only logged */
		log_warnx("conn=%llu share=%s file=%s deferred write error "
		    "0x%08x reported on CLOSE%s", (unsigned long long)c->id,
		    px_tree_share(c, o), o->name, o->failed_status,
		    compound ? " (a compound's)" : "");
		p->u.io.length = o->failed_status;
		p->u.io.offset = UINT64_MAX; /* marker */
	}
}

/* The CLOSE that was to carry a deferred error is answered in the middle
 * of a compound of the server's: passed on as it came. */
void
px_wb_close_unreported(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p)
{
	if (p->u.io.offset != UINT64_MAX)
		return;
	px_stats.deferred_unreported++;
	log_warnx("conn=%llu deferred write error 0x%08x not reported: the "
	    "CLOSE (mid=%llu) was answered inside a compound, not last",
	    (unsigned long long)c->id, p->u.io.length,
	    (unsigned long long)h->message_id);
}

/*
 * Rewrite a CLOSE response into an error response carrying the deferred
 * status, keeping the server's grant.  head > 0: the CLOSE answers the
 * last request of a client's compound, whose answer msg holds head bytes
 * of other answers before it; they go on as the server sent them (each
 * answer of a compound is signed on its own, MS-SMB2 3.1.4.1; sealed, the
 * whole is sealed again).  Not possible for a signed answer in a session
 * without a key: the original is forwarded.  1: replaced and sent.
 */
int
px_wb_close_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p, const struct px_prot *prot,
    const uint8_t *msg, size_t head)
{
	struct smb2_hdr_out o;
	struct px_prot pr = *prot;
	uint8_t *buf, *el;
	size_t n;
	uint32_t st = p->u.io.length;
	struct px_session *s = px_session_find(&c->led, h->session_id);
	int rc;

	if (p->u.io.offset != UINT64_MAX)
		return 0;
	if ((prot->sign || prot->encrypt || (h->flags & SMB2_FLAGS_SIGNED)) &&
	    (s == NULL || !s->keyed)) {
		px_stats.deferred_unreported++;
		log_warnx("conn=%llu deferred write error 0x%08x not reported: "
		    "it cannot be put on the signed CLOSE response (no key)",
		    (unsigned long long)c->id, st);
		return 0;
	}
	if ((buf = malloc(head + SMB2_HDR_LEN + 16)) == NULL)
		return -1;
	memcpy(buf, msg, head);
	el = buf + head;
	memset(&o, 0, sizeof(o));
	o.command = SMB2_CLOSE;
	o.credit_charge = h->credit_charge;
	o.credit = h->credit;
	o.status = st;
	o.flags = SMB2_FLAGS_SERVER_TO_REDIR |
	    (h->flags & SMB2_FLAGS_RELATED_OPERATIONS);
	o.message_id = h->message_id;
	o.tree_id = h->tree_id;
	o.session_id = h->session_id;
	if ((n = px_smb2_error_rsp_encode(el, SMB2_HDR_LEN + 16, &o)) == 0) {
		free(buf);
		return -1;
	}
	/* in a compound the other answers keep the server's signatures:
	 * only this one is signed here */
	if (head > 0 && !pr.encrypt && (h->flags & SMB2_FLAGS_SIGNED)) {
		if (px_keyed_sign(c, h->session_id, el, n, true) == -1) {
			free(buf);
			return -1;
		}
		pr.sign = false;
	}
	rc = px_emit_protected(c, PX_CLIENT, &pr, buf, head + n);
	free(buf);
	if (rc == 0 && head > 0)
		log_warnx("conn=%llu deferred write error 0x%08x reported on the "
		    "CLOSE of a compound (mid=%llu)", (unsigned long long)c->id,
		    st, (unsigned long long)h->message_id);
	return rc == 0 ? 1 : -1;
}
