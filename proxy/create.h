/*
 * create.h - create.c, a standalone CREATE request rewritten with create
 * contexts of smbaccel's own, and the answer the client would have had;
 * called by relay.c, which asks the features that add contexts (lease.c:
 * a lease on the client's behalf; the document cache: its on-disk file
 * id) what they want before it forwards a CREATE.
 *
 * Use (relay.c):
 *   struct px_create_edit ed;
 *   px_create_edit_init(&ed);
 *   ... each feature: px_create_edit_add(&ed, "QFid", NULL, 0), or sets
 *       ed.oplock (only over a client's request for no oplock) ...
 *   if (px_create_edited(&ed) && px_create_may_edit(c, h, e, standalone))
 *           rc = px_create_forward(c, h, e, &ed, &p);
 *           (1: sent, p its pending entry for the feature's own facts;
 *            0: forward the client's bytes as they are; -1: close)
 * and for the final answer of a request p with px_create_rewritten(p):
 *   px_create_answer(c, h, e, p, &prot, &replaced)
 * after the features have read what they asked for in it (the answer as
 * the server sent it: px_smb2_create_ctx_find(e, true, "QFid", ...)).
 */
#ifndef SMBACCEL_CREATE_H
#define SMBACCEL_CREATE_H

#include "proxy/conn_state.h"
#include "proxy/emit.h"

#define PX_CREATE_ADD_MAX 4        /* contexts added to one CREATE */
#define PX_CREATE_DATA_MAX 64      /* data of one added context */

/* What the features want changed in one CREATE request.  Its contexts
 * point into data[]: do not copy the struct. */
struct px_create_edit {
	int oplock;                    /* RequestedOplockLevel to send; -1:
	                                * the client's */
	unsigned int nadd;
	struct smb2_cctx add[PX_CREATE_ADD_MAX];
	uint8_t data[PX_CREATE_ADD_MAX][PX_CREATE_DATA_MAX];
};

void px_create_edit_init(struct px_create_edit *ed);
/* Append context tag (4 characters) with len bytes of data (copied): 0,
 * or -1 when the edit is full, the data too long or the tag taken. */
int px_create_edit_add(struct px_create_edit *ed, const char *tag,
    const void *data, size_t len) PX_MUSTCHECK;
/* Does ed change anything? */
bool px_create_edited(const struct px_create_edit *ed);
/*
 * May CREATE request h/e (plaintext) be rewritten at all: a standalone
 * request of an established session on a known tree of a relaying
 * connection, whose id is not already in flight, that smbaccel may act on
 * and rewrite (alter.c: px_may_act, which sets c->cur_prot, then
 * px_may_rewrite).  Every CREATE rewrite goes through this gate.
 */
bool px_create_may_edit(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, bool standalone);
/*
 * Send h/e upstream with ed applied (signed or sealed as c->cur_prot
 * says, as the client's request came) and record the client's request in
 * the ledger; its pending entry (*pp) remembers what to undo in the
 * answer: the contexts added and, when ed.oplock replaced a request for
 * none, the OplockLevel (none).  1 sent, 0 nothing to change or the
 * request cannot be re-encoded (forward it as it is), -1 failure (close).
 */
int px_create_forward(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const struct px_create_edit *ed,
    struct px_pending **pp) PX_MUSTCHECK;
/* Was the request of pending entry p rewritten? */
bool px_create_rewritten(const struct px_pending *p);
/*
 * The final answer h/e to a rewritten CREATE p: a successful one goes to
 * the client without the contexts smbaccel added and with the OplockLevel
 * restored (*replaced), re-signed or re-sealed as prot says; a failed one
 * (no contexts) is left to be forwarded.  An answer the server signed in
 * a session without a key cannot be changed: the connection is closed
 * (reason cannot-sign, alter.c).  0, or -1 to close.
 */
int px_create_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const struct px_pending *p,
    const struct px_prot *prot, bool *replaced) PX_MUSTCHECK;

#endif
