/*
 * relay.h - the dispatcher (relay.c) as conn.c sees it: the frames conn
 * hands in and the few questions it asks (is the connection quiet, when is
 * its next deadline).  The connection they concern is struct px_conn
 * (conn_state.h).
 *
 * The relay layer is relay.c (the dispatcher: what each message means and
 * where it goes) and its feature glue, each file with its own header and
 * calling only the files after it:
 *
 *   relay.c        the dispatcher
 *   coherence.c    one coherent file across connections (DESIGN.md 4, 5)
 *   readahead.c    read-ahead glue (DESIGN.md 5) over coalesce/readahead.c
 *   compound.c     a CLOSE sent upstream with its flush as one related
 *                  compound, and its answer split back out
 *   writebehind.c  write-behind glue (DESIGN.md 4) over coalesce/, and the
 *                  answers every absorbed request gets (DESIGN.md 3 rule 3)
 *   alter.c        what may be altered in a session: learned from what its
 *                  server signs (docs/design.md "What may be altered")
 *   emit.c         sending: protected messages, proxy-originated requests,
 *                  the id pool's leftovers, delayed answers (DESIGN.md 3)
 *   keyed.c        a session's keys applied to messages (DESIGN.md 7)
 *
 * and below them the ledger (ledger.h) and the pure modules.  The layer
 * never includes conn.h and never touches a socket: everything it sends
 * goes through px_relay_ops (held by emit.c), so the calls between the two
 * layers point one way, conn -> relay, and conn's services come back as
 * callbacks.
 */
#ifndef SMBACCEL_RELAY_H
#define SMBACCEL_RELAY_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy/conn_state.h"

/* conn.c's services, registered once before the first connection. */
void px_relay_init(const struct px_conn_ops *ops);

/* ---- what conn.c calls (relay.c) ---------------------------------------- */

enum px_rc { PX_RC_DONE = 0, PX_RC_STALL, PX_RC_CLOSE };
enum px_rc px_relay_client_frame(struct px_conn *c, const uint8_t *frame,
    size_t len);
enum px_rc px_relay_server_frame(struct px_conn *c, const uint8_t *frame,
    size_t len);
/*
 * Cut-through: may a large frame (full bytes with its NBSS header, of which
 * at least PX_STREAM_HEAD are at frame) be forwarded before it is
 * complete?  True means yes, and the ledger has recorded it.  Only
 * standalone WRITE requests that will not be absorbed and READ responses
 * to the client qualify.
 */
#define PX_STREAM_HEAD (PX_NBSS_HDR + SMB2_HDR_LEN + 48)
#define PX_STREAM_MIN  (256 * 1024)
bool px_relay_client_stream(struct px_conn *c, const uint8_t *frame,
    size_t full);
bool px_relay_server_stream(struct px_conn *c, const uint8_t *frame,
    size_t full);
/* Flush every open of the connection (absorbed data goes upstream). */
void px_relay_flush_all(struct px_conn *c, enum co_flush_cause cause);
/* True when nothing absorbed is buffered or in flight and no proxy request
 * is outstanding: the connection may be closed or turned opaque. */
bool px_relay_quiet(const struct px_conn *c);
/* Timer work: idle/age flushes.  Returns the next deadline (ms) or 0. */
double px_relay_timer(struct px_conn *c, double now_ms);
/* Check whether the stalled client frame may go now. */
bool px_relay_stall_cleared(struct px_conn *c);
/* The connection is closed: log what it loses, free the relay's state
 * (conn.c frees the ledger with the connection). */
void px_relay_free(struct px_conn *c);

#endif
