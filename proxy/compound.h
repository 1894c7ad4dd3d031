/*
 * compound.h - compound.c, a client's CLOSE, FLUSH, READ, SET_INFO or
 * QUERY_INFO sent upstream with the flush of its file as one related
 * compound; called by the dispatcher (relay.c).
 */
#ifndef SMBACCEL_COMPOUND_H
#define SMBACCEL_COMPOUND_H

#include "proxy/conn_state.h"
#include "proxy/emit.h"

/* May a request with this command go with its file's flush? */
bool px_cmp_command(uint16_t cmd);
/* Does request h name an open (of a kind a compound may carry) whose
 * writes smbaccel buffers? */
bool px_cmp_buffered(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e);
/*
 * A standalone CLOSE, FLUSH, READ, SET_INFO (not a rename or delete) or
 * QUERY_INFO of an open with buffered writes: send them and it as one
 * related compound (PX_AB_DONE: sent and recorded, the answer comes back
 * through px_cmp_answer), or leave it to the generic path (PX_AB_FORWARD:
 * flush, wait, then forward), or PX_AB_FAIL: out of memory after state
 * changed, close the connection.  What other connections buffered of the
 * file is the caller's to flush first (px_coh_must_wait).
 */
enum px_absorb px_cmp_request(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e);
/*
 * An answer (interim or final, element e of a server message, prot how it
 * arrived) to a client request: if it was sent with its flush, the client
 * gets it alone, as if its request had been sent alone (returns 1: the
 * server's message is not to be forwarded); 0: not such a request; -1:
 * failure (the connection is to close).
 */
int px_cmp_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, bool interim, const struct px_prot *prot);
/* The answer to a proxy request (p, still allocated): a WRITE of a
 * compound or smbaccel's own CLOSE after one.  -1: the connection is to
 * close. */
int px_cmp_proxy_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const struct px_pending *p, bool interim);
/* A handle left open after a failed compound gets an id, if a leftover one
 * is pooled now.  -1: the connection is to close. */
int px_cmp_kick(struct px_conn *c);
/* The connection is closed: log what is left, free the records. */
void px_cmp_free(struct px_conn *c);

#endif
