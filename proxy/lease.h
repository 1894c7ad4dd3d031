/*
 * lease.h - lease.c, leases smbaccel holds on behalf of clients that ask
 * for none (DESIGN.md section 6); called by the dispatcher (relay.c).
 */
#ifndef SMBACCEL_LEASE_H
#define SMBACCEL_LEASE_H

#include "proxy/conn_state.h"
#include "proxy/create.h"

/* What px_lease_edit asked for in a CREATE (for px_lease_sent). */
struct px_lease_ask {
	uint8_t kind;           /* enum px_pl_kind */
	uint8_t key[16];
	uint32_t state;         /* SMB2_LEASE_READ [| SMB2_LEASE_WRITE] */
};

/* A standalone CREATE about to be forwarded: add smbaccel's lease (or
 * oplock) request to ed when the open qualifies (*ask says what). */
void px_lease_edit(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_create_edit *ed,
    struct px_lease_ask *ask);
/* A SET_INFO about to be forwarded: if it renames a file, smbaccel's
 * lease goes with the file once the server answers SUCCESS
 * (px_lease_rename_done), and a new file at the old name gets another
 * key. */
void px_lease_renaming(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e);
/* The final answer h to SET_INFO request p (any; renames are recognised
 * by their pending entry's message id). */
void px_lease_rename_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p);
/* The CREATE went upstream rewritten (p its pending entry). */
void px_lease_sent(struct px_conn *c, struct px_pending *p,
    const struct px_lease_ask *ask);
/* Its final answer h arrived; o is the open it made (NULL on failure). */
void px_lease_answered(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p, struct px_open *o);
/* A break notification from the server: true when it breaks a lease or
 * oplock of smbaccel's (handled here; never forwarded to the client). */
bool px_lease_break(struct px_conn *c, const struct smb2_elem *e);
/* The answer to smbaccel's own break acknowledgement p. */
void px_lease_ack_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p);
/* Send the acknowledgements whose data has been written (this and other
 * connections); called whenever writes complete or ids arrive. */
void px_lease_progress(struct px_conn *c);
/* Opens went away (CLOSE, LOGOFF, TREE_DISCONNECT answered): forget what
 * they owed, give back an id no longer needed. */
void px_lease_released(struct px_conn *c);
/* Breaks of c whose acknowledgement found no id stop letting writes be
 * absorbed before the server's break timeout; the next deadline (ms) or
 * 0. */
double px_lease_timer(struct px_conn *c, double now_ms);
/* Opens of c holding smbaccel's lease with read (and write) caching. */
unsigned int px_lease_opens(const struct px_conn *c, unsigned int *write);
/* The connection is closed. */
void px_lease_free(struct px_conn *c);

#endif
