/*
 * emit.h - emit.c, how the relay layer sends what it makes itself, and
 * the rules every absorbing path shares; the lowest file of the relay
 * layer but keyed.c, called by every file above it.
 */
#ifndef SMBACCEL_EMIT_H
#define SMBACCEL_EMIT_H

#include "proxy/conn_state.h"

#define SMB2_UNIT (64 * 1024)   /* one credit's worth of payload */

/* conn.c's services (px_relay_init). */
extern const struct px_conn_ops *px_relay_ops;

/* What became of a request the relay tried to answer itself. */
enum px_absorb {
	PX_AB_FORWARD = 0,   /* not absorbed: forward it */
	PX_AB_DONE,          /* absorbed and answered (or the answer queued) */
	PX_AB_STALL,         /* wait: handle the frame again later */
	PX_AB_FAIL,          /* out of memory: close the connection */
};

/* Mark the connection to be closed for reason r (the first reason given
 * wins) and return -1; a -1 or PX_RC_CLOSE that names no reason is taken
 * for a failed allocation. */
int px_relay_fail(struct px_conn *c, enum px_close_reason r);
/* Dialect 2.1+ with LARGE_MTU: multi-credit requests. */
bool px_large_mtu(const struct px_conn *c);
/* The ids a request whose CreditCharge field says field takes: 1 without
 * LARGE_MTU or for a 0. */
uint16_t px_emit_charge(const struct px_conn *c, uint16_t field);
/* ... of the request the answer msg smbaccel made answers (its header
 * copies the request's CreditCharge). */
uint16_t px_emit_msg_charge(const struct px_conn *c, const uint8_t *msg);
/* The share name of o's tree, for log lines. */
const char *px_tree_share(struct px_conn *c, const struct px_open *o);
/* Do a and b relay to the same server (address and port)?  Opens of one
 * file on different connections are one file only then. */
bool px_same_server(const struct px_conn *a, const struct px_conn *b);
/* The first open through this smbaccel to c's server (c's own or another
 * live connection's) that `match` accepts, its connection in *xp (when
 * not NULL); NULL if none. */
struct px_open *px_server_open_find(struct px_conn *c,
    bool (*match)(const struct px_conn *x, const struct px_open *o,
    const void *arg), const void *arg, struct px_conn **xp);
/* Send msg (a complete SMB2 message, not in an output buffer) to `to` as
 * prot says: signed (msg is signed in place), sealed, or as is (DESIGN.md
 * section 7). */
int px_emit_protected(struct px_conn *c, enum px_end to,
    const struct px_prot *prot, uint8_t *msg, size_t len) PX_MUSTCHECK;
/*
 * Build a message in place instead: px_emit_place gives where its len
 * bytes go in the output buffer of `to` (NULL: out of memory), and
 * px_emit_finish signs or seals them there and sends them.  Nothing else
 * may be sent to `to` in between (it would move the buffer); a message
 * placed but not finished is simply not sent.
 */
uint8_t *px_emit_place(struct px_conn *c, enum px_end to,
    const struct px_prot *prot, size_t len);
int px_emit_finish(struct px_conn *c, enum px_end to,
    const struct px_prot *prot, uint8_t *msg, size_t len) PX_MUSTCHECK;
/* How a proxy request of session sid on tree tid must travel. */
struct px_prot px_emit_prot(struct px_conn *c, uint64_t sid, uint32_t tid);
/* Record a proxy-originated request with id mid in flight. */
struct px_pending *px_emit_pending(struct px_conn *c, uint64_t mid,
    uint16_t cmd, uint16_t charge);
/* Send o's server a READ of [off, off + len) paying ids [lo, lo + charge)
 * and record it in flight as o's (fid, offset, length, open set); NULL
 * when it could not be built, sent or recorded. */
struct px_pending *px_emit_read(struct px_conn *c, struct px_open *o,
    uint64_t lo, uint16_t charge, uint64_t off, uint32_t len);
/* Send a synthesized response with grant g (it answers one absorbed
 * request of the client, which asked for requested: co_synth_granted). */
int px_emit_synth(struct px_conn *c, uint8_t *msg, size_t len,
    uint16_t requested, uint16_t g, const struct px_prot *prot) PX_MUSTCHECK;
/* Queue a synthesized response until the bank can pay for it; -1 OOM
 * (msg is then freed). */
int px_emit_delay(struct px_conn *c, uint8_t *msg, size_t len,
    uint16_t credit_request) PX_MUSTCHECK;
/* Send the delayed responses the bank can now pay for. */
void px_emit_send_delayed(struct px_conn *c);
void px_emit_free(struct px_conn *c);
/* A READ answer to rq with n bytes of data, or an error answer when
 * status is not SUCCESS (malloc'd, *len set; NULL on OOM). */
uint8_t *px_emit_read_rsp(const struct smb2_hdr *rq, uint16_t credit,
    uint32_t status, const uint8_t *data, uint32_t n, size_t *len);
/* Header of a response answering rq. */
void px_emit_rsp_hdr(struct smb2_hdr_out *h, const struct smb2_hdr *rq,
    uint32_t status);
/* Would the server accept the ids of request h carrying payload bytes? */
bool px_ids_fresh(struct px_conn *c, const struct smb2_hdr *h,
    uint32_t payload);
/* Spend pooled ids on ECHOs once no data is buffered; force: also the
 * ids a sequential reader keeps for its next read-ahead.  The
 * acknowledgement reserve is tended first (px_emit_tend_reserve). */
void px_emit_spend_pool(struct px_conn *c, bool force);
/* Kick every connection but `except` that waits with stall kind `stall`.
 * Safe when a kick closes other connections: each is held meanwhile. */
void px_emit_kick_each(struct px_conn *except, enum px_stall stall);
/*
 * The acknowledgement reserve (DESIGN.md section 3): while smbaccel holds
 * write caching on the connection on a client's behalf, or owes a break
 * acknowledgement, keep one pooled id that buffered data does not need
 * out of the pool; refresh it with newer ids, give it back when no longer
 * needed or as old as the hoard bound.  Called wherever ids enter the
 * pool or are about to be spent on anything but data, and while the
 * client's requests are forwarded (the reserve ages).  Returns what was
 * done (CO_RSV_RELEASE: the id is back in the pool, to be spent).
 */
enum co_rsv_act px_emit_tend_reserve(struct px_conn *c);
/* An id for a break acknowledgement: the reserve, else a pooled id that
 * buffered data does not need.  False when there is none. */
bool px_emit_ack_id(struct px_conn *c, uint64_t *id);
/* The acknowledgement reserve's id spent on an ECHO now: an answer held
 * for credits with nothing else to refill the bank comes first. */
void px_emit_release_reserve(struct px_conn *c);
/* Ids the buffered data of c needs to travel. */
uint64_t px_emit_data_ids(struct px_conn *c);

#endif
