/*
 * glue.h - inside the relay layer: what the dispatcher (relay.c) and its
 * feature glue share.  Included only by relay.c, coherence.c,
 * readahead.c, writebehind.c, emit.c and keyed.c.
 *
 * The files call one way, each only the ones after it:
 *
 *   relay.c        the dispatcher: what a message means and where it goes
 *   coherence.c    one coherent file across connections (DESIGN.md 4, 5)
 *   readahead.c    read-ahead glue (DESIGN.md 5) over coalesce/readahead.c
 *   writebehind.c  write-behind glue (DESIGN.md 4) over coalesce/, and the
 *                  answers every absorbed request gets (DESIGN.md 3 rule 3)
 *   emit.c         sending: protected messages, proxy-originated requests,
 *                  the id pool's leftovers, delayed answers (DESIGN.md 3)
 *   keyed.c        keys of a session applied to messages (DESIGN.md 7)
 *
 * and below them the ledger (ledger.h) and the pure modules.  Nothing here
 * sends by itself: emit.c hands bytes to conn.c through px_relay_ops.
 */
#ifndef SMBACCEL_GLUE_H
#define SMBACCEL_GLUE_H

#include "proxy/relay.h"

#define SMB2_UNIT (64 * 1024)   /* one credit's worth of payload */

/* conn.c's services (px_relay_init). */
extern const struct px_conn_ops *px_relay_ops;

static inline const struct pol_global *
px_glob(void)
{
	return pol_global(px_rt.cfg);
}

/* What became of a request the relay tried to answer itself. */
enum px_absorb {
	PX_AB_FORWARD = 0,   /* not absorbed: forward it */
	PX_AB_DONE,          /* absorbed and answered (or the answer queued) */
	PX_AB_STALL,         /* wait: handle the frame again later */
	PX_AB_FAIL,          /* out of memory: close the connection */
};

/* ---- coherence.c ------------------------------------------------------------ */

/* Invalidations and lock marks caused by a request about to reach the
 * server or be absorbed, on this connection and on others. */
void px_coh_on_request(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e);
/* Cross-connection rule for a request that is about to be forwarded:
 * flush other connections' buffers of what it could observe; true when
 * the frame must wait (c->stall is then PX_STALL_PEERS). */
bool px_coh_must_wait(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e);
/* A CREATE answer made o: it inherits the locks other opens of its file
 * hold (through this smbaccel). */
void px_coh_opened(struct px_conn *c, struct px_open *o);
/* Wake connections whose stalled frame waits on other connections. */
void px_coh_kick_waiters(struct px_conn *c);

/* ---- readahead.c ------------------------------------------------------------ */

/* Drop an open's read cache (data and in-flight fetches). */
void px_ra_drop(struct px_open *o, enum px_ra_cause why);
/* A standalone READ: served from the cache, waiting for a fetch in
 * flight, widened, or to be forwarded. */
enum px_absorb px_ra_read(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const uint8_t *msg, size_t mlen);
/* A read-ahead fetch answered: cache it, fetch further. */
void px_ra_fetch_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p);
/* The answer to a widened client READ: feed the cache, answer the client
 * with what it asked for (*replaced), keeping the server's grant.  0, or
 * -1 on failure to send. */
int px_ra_widened_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p,
    const struct px_prot *prot, bool *replaced);

/* ---- writebehind.c ---------------------------------------------------------- */

/* Data of o buffered or in flight upstream. */
bool px_wb_busy(const struct px_open *o);
/* No open of o's file (o included) on c has data buffered or in flight. */
bool px_wb_file_idle(struct px_conn *c, const struct px_open *o);
bool px_wb_quiet(const struct px_conn *c);
void px_wb_flush_open(struct px_conn *c, struct px_open *o,
    enum co_flush_cause cause);
/* Flush every open of c naming the same file as o (o included). */
void px_wb_flush_file(struct px_conn *c, struct px_open *o,
    enum co_flush_cause cause);
/* Flush every open of c and spend every pooled id. */
void px_wb_flush_all(struct px_conn *c, enum co_flush_cause cause);
/* Largest write that may be absorbed on tree t. */
size_t px_wb_coalesce_limit(const struct px_conn *c, const struct px_tree *t);
/* Try to absorb a standalone WRITE. */
enum px_absorb px_wb_absorb(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e);
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
/* A deferred write error of the open a WRITE or FLUSH names: answer it
 * (*rc) and return true. */
bool px_wb_deferred_error(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, enum px_absorb *rc);
/* A CLOSE is forwarded (p its pending entry): the open stops absorbing,
 * and a deferred error is remembered for the answer. */
void px_wb_on_close(struct px_conn *c, struct px_pending *p);
/* The CLOSE answer carrying the deferred error of p: 1 sent instead of
 * the server's, 0 forward the server's, -1 failure. */
int px_wb_close_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p, const struct px_prot *prot);
/* A proxy WRITE answered. */
void px_wb_write_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p);
/* Idle/age flushes; the next deadline (ms) or 0. */
double px_wb_timer(struct px_conn *c, double now_ms);
/* Log what a closed connection loses and give its memory back. */
void px_wb_free(struct px_conn *c);

/* ---- emit.c ----------------------------------------------------------------- */

/* Dialect 2.1+ with LARGE_MTU: multi-credit requests. */
bool px_large_mtu(const struct px_conn *c);
/* The share name of o's tree, for log lines. */
const char *px_tree_share(struct px_conn *c, const struct px_open *o);
/* Send msg (a complete SMB2 message) to `to` as prot says: signed,
 * sealed, or as is (DESIGN.md section 7). */
int px_emit_protected(struct px_conn *c, enum px_end to,
    const struct px_prot *prot, uint8_t *msg, size_t len) PX_MUSTCHECK;
/* How a proxy request of session sid on tree tid must travel. */
struct px_prot px_emit_prot(struct px_conn *c, uint64_t sid, uint32_t tid);
/* Record a proxy-originated request with id mid in flight. */
struct px_pending *px_emit_pending(struct px_conn *c, uint64_t mid,
    uint16_t cmd, uint16_t charge);
/* Send a synthesized response with grant g (it answers one absorbed
 * request of the client). */
int px_emit_synth(struct px_conn *c, uint8_t *msg, size_t len, uint16_t g,
    const struct px_prot *prot) PX_MUSTCHECK;
/* Queue a synthesized response until the bank can pay for it; -1 OOM
 * (msg is then freed). */
int px_emit_delay(struct px_conn *c, uint8_t *msg, size_t len,
    uint16_t credit_request) PX_MUSTCHECK;
/* Send the delayed responses the bank can now pay for. */
void px_emit_send_delayed(struct px_conn *c);
void px_emit_free(struct px_conn *c);
/* Header of a response answering rq. */
void px_emit_rsp_hdr(struct smb2_hdr_out *h, const struct smb2_hdr *rq,
    uint32_t status);
/* Would the server accept the ids of request h carrying payload bytes? */
bool px_ids_fresh(struct px_conn *c, const struct smb2_hdr *h,
    uint32_t payload);
/* May the proxy act on (absorb, answer, rewrite) this request of session
 * s on tree t?  Sets c->cur_prot to how the answer must travel. */
bool px_may_act(struct px_conn *c, struct px_session *s,
    const struct px_tree *t, const struct smb2_hdr *h,
    const struct smb2_elem *e);
/* Spend pooled ids on ECHOs once no data is buffered; force: also the
 * ids a sequential reader keeps for its next read-ahead. */
void px_emit_spend_pool(struct px_conn *c, bool force);

/* ---- keyed.c ---------------------------------------------------------------- */

void px_keyed_negotiate_req(struct px_conn *c, const uint8_t *msg, size_t len);
void px_keyed_negotiate_rsp(struct px_conn *c, const uint8_t *msg, size_t len);
void px_keyed_setup_req(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t len, struct px_pending *p);
void px_keyed_setup_rsp(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t len, struct px_pending *p);
bool px_keyed_verify(struct px_conn *c, struct px_session *s,
    const uint8_t *msg, size_t len, uint16_t command);
int px_keyed_sign(struct px_conn *c, uint64_t session_id, uint8_t *msg,
    size_t len, bool from_server) PX_MUSTCHECK;
uint8_t *px_keyed_decrypt(struct px_conn *c, const uint8_t *msg, size_t len,
    bool from_server, size_t *outlen, struct px_session **sp);
/* msg sealed for `to` (client: S2C key, server: C2S key) under session
 * session_id: a malloc'd TRANSFORM message of *outlen bytes, or NULL. */
uint8_t *px_keyed_encrypt(struct px_conn *c, enum px_end to,
    uint64_t session_id, const uint8_t *msg, size_t len, size_t *outlen);

#endif
