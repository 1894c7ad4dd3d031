/*
 * create.c - CREATE requests rewritten with create contexts of smbaccel's
 * own, and their answers turned back into the ones the client would have
 * had (docs/design.md "What may be altered").
 *
 * Owns: the gate every CREATE rewrite passes (a standalone request of a
 * session smbaccel may alter, px_may_act and px_may_rewrite), the request
 * sent upstream in place of the client's (re-encoded by proxy/smb2/cctx.c,
 * re-signed or re-sealed as the client's came), what its pending entry
 * must remember, and the answer: without the contexts smbaccel added and
 * with the OplockLevel the client asked for.  A context the client asked
 * for itself is never added twice nor taken out of the answer.  What a
 * context is for is the business of the feature that adds it (lease.c;
 * the document cache).
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/create.h"
#include "proxy/alter.h"
#include "proxy/emit.h"

void
px_create_edit_init(struct px_create_edit *ed)
{
	memset(ed, 0, sizeof(*ed));
	ed->oplock = -1;
}

int
px_create_edit_add(struct px_create_edit *ed, const char *tag,
    const void *data, size_t len)
{
	unsigned int i;

	if (ed->nadd == PX_CREATE_ADD_MAX || len > PX_CREATE_DATA_MAX ||
	    strlen(tag) != 4 || (len > 0 && data == NULL))
		return -1;
	for (i = 0; i < ed->nadd; i++)
		if (memcmp(ed->add[i].tag, tag, 4) == 0)
			return -1;
	memcpy(ed->add[ed->nadd].tag, tag, 4);
	if (len > 0)
		memcpy(ed->data[ed->nadd], data, len);
	ed->add[ed->nadd].data = len > 0 ? ed->data[ed->nadd] : NULL;
	ed->add[ed->nadd].len = (uint32_t)len;
	ed->nadd++;
	return 0;
}

bool
px_create_edited(const struct px_create_edit *ed)
{
	return ed->nadd > 0 || ed->oplock >= 0;
}

bool
px_create_may_edit(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, bool standalone)
{
	struct px_session *s;
	struct px_tree *t;

	if (!standalone || c->state != PX_CONN_RELAY ||
	    h->command != SMB2_CREATE || h->is_response ||
	    (h->flags & SMB2_FLAGS_RELATED_OPERATIONS) ||
	    px_pending_find(&c->led, h->message_id) != NULL)
		return false;
	if ((s = px_session_find(&c->led, h->session_id)) == NULL ||
	    !s->established ||
	    (t = px_tree_find(&c->led, h->session_id, h->tree_id)) == NULL)
		return false;
	return px_may_act(c, s, t, h, e) && px_may_rewrite(c, s);
}

int
px_create_forward(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const struct px_create_edit *ed,
    struct px_pending **pp)
{
	struct smb2_cctx add[PX_CREATE_ADD_MAX];
	struct smb2_fileid related;
	struct px_pending *p;
	const uint8_t *d;
	uint32_t dl;
	unsigned int i, n = 0;
	uint8_t *msg;
	size_t len;
	int oplock = ed->oplock;

	*pp = NULL;
	/* the oplock level is only raised over a request for none: the
	 * answer then goes back to none (what the server gives a request
	 * for none) */
	if (oplock >= 0 && (e->len < SMB2_HDR_LEN + 4 ||
	    e->hdr[SMB2_HDR_LEN + 3] != SMB2_OPLOCK_LEVEL_NONE))
		oplock = -1;
	/* a context the client asked for itself stays the client's */
	for (i = 0; i < ed->nadd; i++)
		if (px_smb2_create_ctx_find(e, false, ed->add[i].tag, &d,
		    &dl) == -1)
			add[n++] = ed->add[i];
	if (n == 0 && oplock < 0)
		return 0;
	if ((len = px_smb2_create_req_rewrite(e, oplock, add, n, NULL, 0)) == 0)
		return 0;
	if ((msg = malloc(len)) == NULL)
		return -1;
	if (px_smb2_create_req_rewrite(e, oplock, add, n, msg, len) != len) {
		free(msg);
		return 0;
	}
	memset(&related, 0xFF, sizeof(related));
	if ((p = px_ledger_client_request(&c->led, h, e, false, &related)) ==
	    NULL) {
		free(msg);
		return -1;
	}
	for (i = 0; i < n; i++)
		memcpy(p->u.create.rw_strip[i], add[i].tag, 4);
	p->u.create.rw_nstrip = (uint8_t)n;
	p->u.create.rw_oplock = oplock >= 0 ? SMB2_OPLOCK_LEVEL_NONE : -1;
	/* the copy carries the client's signature over other bytes: it is
	 * signed anew (or sealed) when the session demands it, else sent
	 * without one */
	if (!c->cur_prot.sign) {
		px_put_u32(msg + 16, px_get_u32(msg + 16) & ~SMB2_FLAGS_SIGNED);
		memset(msg + 48, 0, 16);
	}
	if (px_emit_protected(c, PX_SERVER, &c->cur_prot, msg, len) == -1) {
		free(msg);
		return -1;
	}
	free(msg);
	px_stats.creates_rewritten++;
	*pp = p;
	return 1;
}

bool
px_create_rewritten(const struct px_pending *p)
{
	return p->command == SMB2_CREATE && p->origin == PX_ORIGIN_CLIENT &&
	    (p->u.create.rw_nstrip > 0 || p->u.create.rw_oplock >= 0);
}

int
px_create_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const struct px_pending *p,
    const struct px_prot *prot, bool *replaced)
{
	uint8_t *msg;
	size_t len;
	int rc;

	*replaced = false;
	if (h->status != NT_STATUS_SUCCESS)
		return 0;       /* an error answer carries no contexts */
	if (prot->sign && !px_session_keyed(c, h->session_id))
		return px_alter_signed_answer(c, h);
	len = px_smb2_create_rsp_restore(e, p->u.create.rw_oplock,
	    (const char (*)[4])p->u.create.rw_strip, p->u.create.rw_nstrip,
	    NULL, 0);
	if (len == 0) {
		/* the ledger could not read it either: passed on as it came */
		log_warnx("conn=%llu CREATE answer mid=%llu smbaccel rewrote "
		    "does not decode: forwarded as it is",
		    (unsigned long long)c->id,
		    (unsigned long long)h->message_id);
		return 0;
	}
	if ((msg = malloc(len)) == NULL)
		return -1;
	if (px_smb2_create_rsp_restore(e, p->u.create.rw_oplock,
	    (const char (*)[4])p->u.create.rw_strip, p->u.create.rw_nstrip,
	    msg, len) != len) {
		free(msg);
		return -1;
	}
	px_put_u32(msg + 20, 0);                /* NextCommand: standalone */
	rc = px_emit_protected(c, PX_CLIENT, prot, msg, len);
	free(msg);
	*replaced = true;
	return rc;
}
