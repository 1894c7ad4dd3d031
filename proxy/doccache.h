/*
 * doccache.h - doccache.c, the document-cache glue (DESIGN.md section
 * 5a); called by relay.c, coherence.c and readahead.c, and by daemon.c
 * (start, stop) and control.c (stats).
 */
#ifndef SMBACCEL_DOCCACHE_H
#define SMBACCEL_DOCCACHE_H

#include "proxy/conn_state.h"
#include "proxy/emit.h"

/*
 * Should this CREATE (of session s on tree t, about to be forwarded) also
 * ask for SMB2_CREATE_QUERY_ON_DISK_ID, so that the document cache can
 * compare the on-disk file id too?  True for a file open (not a
 * directory) on a share with read_cache and a read_ahead gate, in a
 * session where requests may be rewritten (px_may_rewrite), when the
 * client did not ask for it itself.  Not called yet: the CREATE-context
 * facility of the leases work adds the context and strips it from the
 * answer (after the ledger has seen it: on_create keeps the id in
 * o->dcv) when this says so (docs/design.md "Known limits").
 */
bool px_dc_wants_disk_id(struct px_conn *c, const struct px_session *s,
    const struct px_tree *t, const struct smb2_create_req *cr);
/*
 * May a change of o's file through this smbaccel still land: a client's
 * WRITE, SET_INFO or IOCTL of it forwarded and not answered, on any
 * connection to its server (px_ledger_changing), or another connection's
 * absorbed writes of it not yet written?  The read caches then neither
 * fetch nor widen: smbd may complete a later READ first, and what it read
 * would be kept.  (Buffered writes of the same connection:
 * px_wb_file_idle.)
 */
bool px_dc_changing(struct px_conn *c, const struct px_open *o);
/* Start (read_cache_memory, the store of read_cache_dir) and stop. */
void px_dc_start(const struct pol_global *g);
void px_dc_stop(void);
/* A CREATE answer made o: validate a cached copy of its file against
 * what the answer says (a stale copy is dropped) and serve o from it
 * when the gate allows. */
void px_dc_opened(struct px_conn *c, struct px_open *o);
/*
 * A standalone READ that passed the read gate (readahead.c checked the
 * open, the session, the shape and the ids): served from the copy,
 * waiting for a fetch in flight, widened to whole chunks, or forwarded.
 * *mine is false when the document cache does not concern it (a
 * sequential reader without a copy): readahead.c decides then.
 */
enum px_absorb px_dc_read(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *el, const uint8_t *msg, size_t mlen,
    struct px_session *s, struct px_tree *t, struct px_open *o,
    const struct smb2_read_req *r, bool *mine);
/* Would a read of o covering [off, off+len) wait for a fetch in flight? */
bool px_dc_read_waits(const struct px_open *o, uint64_t off, uint32_t len);
/* A document fetch answered. */
void px_dc_fetch_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *el, struct px_pending *p);
/* The answer to a widened client READ of the document cache: data (got
 * bytes) when status is SUCCESS; stored, or the chunks freed again. */
void px_dc_widened_data(struct px_conn *c, const struct px_pending *p,
    uint32_t status, const uint8_t *data, uint32_t got);
/*
 * File `name` of share `share` on c's server changes through this
 * smbaccel (why): its cached copy goes, with a directory's (dir) every
 * copy below it, and every open of it stops trusting its CREATE answer.
 */
void px_dc_changed(struct px_conn *c, const char *share, const char *name,
    bool dir, enum px_dc_cause why);
/* o's lease or oplock is broken, or (read_ahead = always) it took a
 * byte-range lock: its copy goes. */
void px_dc_open_lost(struct px_open *o, enum px_dc_cause why);
/* Pooled ids kept for document fetches are spent once unused for a
 * while; the next deadline (ms) or 0. */
double px_dc_timer(struct px_conn *c, double now_ms);
/*
 * A client's READ that readahead.c asked again, with pooled ids, after its
 * widened READ failed: what the client's answer needs from the widened
 * READ's.  Kept here, below readahead.c, so that it goes with its
 * connection (px_dc_free).
 */
struct px_dc_retry {
	struct px_dc_retry *next;
	const struct px_conn *c;
	uint64_t mid;               /* the READ smbaccel sent */
	struct smb2_hdr h;          /* the widened READ's answer */
	uint8_t hdr[SMB2_HDR_LEN];  /* ... its header as it came */
	struct px_prot prot;        /* how the client's answer travels */
	uint32_t client_len;
	uint32_t client_min;
};
/* Pooled ids to keep back for the READs failed widened READs of c may
 * have to ask again (one per widened READ in flight). */
uint64_t px_dc_retry_ids(const struct px_conn *c);
/* Keep r (malloc'd) until px_dc_retry_take finds it by c and mid. */
void px_dc_retry_add(struct px_dc_retry *r);
/* The retry of c whose READ had id mid, unlinked (the caller frees it);
 * NULL if none. */
struct px_dc_retry *px_dc_retry_take(const struct px_conn *c, uint64_t mid);
/* c goes away: its fetches in flight will never be answered, nor the
 * READs asked again for its client. */
void px_dc_free(struct px_conn *c);

#endif
