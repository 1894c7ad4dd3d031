/*
 * writebehind.h - writebehind.c, the write-behind glue and the answers to
 * absorbed requests; called by relay.c, coherence.c and readahead.c.
 */
#ifndef SMBACCEL_WRITEBEHIND_H
#define SMBACCEL_WRITEBEHIND_H

#include "proxy/conn_state.h"
#include "proxy/emit.h"

/* Data of o buffered or in flight upstream. */
bool px_wb_busy(const struct px_open *o);
uint32_t px_wb_loss_status(uint32_t st);
bool px_wb_expiry_unseen(const struct px_session *s);
/* No open of o's file (o included) on c has data buffered or in flight. */
bool px_wb_file_idle(struct px_conn *c, const struct px_open *o);
bool px_wb_only_held(struct px_conn *c, const struct px_open *o);
bool px_wb_quiet(const struct px_conn *c);
/* Nothing written is buffered or unacknowledged (pooled ids and the
 * proxy's READs may be): what a request could observe is settled. */
bool px_wb_settled(const struct px_conn *c);
void px_wb_flush_open(struct px_conn *c, struct px_open *o,
    enum co_flush_cause cause);
/* Flush every open of c naming the same file as o (o included). */
void px_wb_flush_file(struct px_conn *c, struct px_open *o,
    enum co_flush_cause cause);
/*
 * The proxy WRITEs that carry o's buffered extent at the head of a related
 * compound (compound.c): see px_wb_flush_elems.
 */
#define PX_WB_ELEMS_MAX 32
struct px_wb_elems {
	int n;                             /* WRITE elements */
	size_t len;                        /* their bytes, padding included */
	size_t off[PX_WB_ELEMS_MAX];       /* where each starts */
	uint64_t mid[PX_WB_ELEMS_MAX];     /* its first message id */
	uint16_t charge[PX_WB_ELEMS_MAX];  /* its CreditCharge */
	bool spare;                        /* an id kept back: spare_id */
	uint64_t spare_id;
	bool oom;                          /* out of memory after state changed:
	                                    * the connection must close */
};
/*
 * o's buffered extent as proxy WRITE elements of a related compound: a
 * malloc'd message with `tail` bytes of room after them for the element
 * the caller appends (the last WRITE's NextCommand points there; the
 * second and later WRITEs carry SMB2_FLAGS_RELATED_OPERATIONS, every one
 * o's explicit FileId).  Planned on a copy of the id pool: nothing is
 * taken unless the pool pays for all of it in at most PX_WB_ELEMS_MAX
 * WRITEs; then the ids and the data are taken, each WRITE recorded in
 * flight (pending entries marked in_compound), and one more id is kept
 * back in we->spare_id if no other open buffers data (need_spare: or
 * nothing is done).  NULL when it could not be done (we->oom: out of
 * memory after state changed).
 */
uint8_t *px_wb_flush_elems(struct px_conn *c, struct px_open *o, size_t tail,
    bool need_spare, struct px_wb_elems *we);
/* Flush every open of c and spend every pooled id. */
void px_wb_flush_all(struct px_conn *c, enum co_flush_cause cause);
/* Largest write that may be absorbed on tree t. */
size_t px_wb_coalesce_limit(const struct px_conn *c, const struct px_tree *t);
/* Try to absorb a standalone WRITE (e, plaintext), which arrived as the
 * NBSS frame frame[0..flen) (sealed or not). */
enum px_absorb px_wb_absorb(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const uint8_t *frame, size_t flen);
/*
 * Answer an absorbed request with msg (a complete response; its credit
 * field is filled here), or queue it when granting from the bank would
 * leave the client with no credits and nothing in flight (DESIGN.md
 * section 3 rule 3).  Takes ownership of msg.
 */
int px_wb_answer(struct px_conn *c, uint16_t credit_request, uint8_t *msg,
    size_t len) PX_MUSTCHECK;
/* WRITE success (count) or an error response for an absorbed request. */
int px_wb_answer_status(struct px_conn *c, const struct smb2_hdr *rq,
    uint32_t status, uint32_t count) PX_MUSTCHECK;
/* Absorb request h (its ids fresh: px_ids_fresh) with an answer of status
 * alone: its whole CreditCharge goes to the id pool.  PX_AB_FORWARD when
 * the pool cannot take it (forward it), PX_AB_FAIL when the answer cannot
 * be sent. */
enum px_absorb px_wb_absorb_status(struct px_conn *c,
    const struct smb2_hdr *h, uint32_t status);
/* The same with the answer msg (n bytes, its header made by
 * px_emit_rsp_hdr), copied. */
enum px_absorb px_wb_absorb_msg(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t n);
/* A READ served from smbaccel's data (its charge ids already pooled): n
 * bytes and status st, answered and counted as an answered request. */
int px_wb_answer_read(struct px_conn *c, const struct smb2_hdr *rq,
    uint64_t charge, uint32_t st, const uint8_t *data, uint32_t n)
    PX_MUSTCHECK;
/* A deferred write error of the open a WRITE or FLUSH names: answer it
 * (*rc) and return true. */
bool px_wb_deferred_error(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, enum px_absorb *rc);
/* A standalone CLOSE or LOCK of a session the server has expired, naming
 * a file whose data smbaccel holds and cannot write until the client
 * re-authenticates: answered STATUS_NETWORK_SESSION_EXPIRED here (*rc)
 * and true; false: handled as any other request. */
bool px_wb_expired_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, enum px_absorb *rc);
/* A CLOSE is forwarded (p its pending entry): the open stops absorbing,
 * and a deferred error is remembered for the answer. */
void px_wb_on_close(struct px_conn *c, struct px_pending *p, bool compound);
/* The CLOSE answer carrying the deferred error of p: 1 sent instead of
 * the server's, 0 forward the server's, -1 failure. */
int px_wb_close_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p, const struct px_prot *prot,
    const uint8_t *msg, size_t head);
void px_wb_close_unreported(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p);
/* A proxy WRITE answered. */
void px_wb_write_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p);
/*
 * The server's word on a session's life, from each of its answers: an
 * answer STATUS_NETWORK_SESSION_EXPIRED marks the session expired (not
 * acted on, its buffers held rather than flushed into refusals); a
 * successful re-authentication ends that and flushes what was held.
 */
void px_wb_expiry_seen(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p, bool interim);
/* Idle/age flushes; the next deadline (ms) or 0. */
double px_wb_timer(struct px_conn *c, double now_ms);
/* Log what a closed connection loses and give its memory back. */
void px_wb_free(struct px_conn *c);

#endif
