/*
 * readahead.h - readahead.c, the read-ahead glue; called by relay.c and
 * coherence.c.
 */
#ifndef SMBACCEL_READAHEAD_H
#define SMBACCEL_READAHEAD_H

#include "proxy/conn_state.h"
#include "proxy/emit.h"

/* Drop an open's read cache (data and in-flight fetches). */
void px_ra_drop(struct px_open *o, enum px_ra_cause why);
/* A standalone READ: served from the cache, waiting for a fetch in
 * flight, widened, or to be forwarded. */
enum px_absorb px_ra_read(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, const uint8_t *msg, size_t mlen);
/* Would the read of fid covering [off, off+len) wait for a fetch in
 * flight (read-ahead or document cache)? */
bool px_ra_read_waits(struct px_conn *c, const struct smb2_fileid *fid,
    uint64_t off, uint32_t len);
/* A read-ahead or document fetch answered: cache it, fetch further. */
void px_ra_fetch_done(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p);
/* The answer to a widened client READ: feed the cache, answer the client
 * with what it asked for (*replaced), keeping the server's grant.  0, or
 * -1 on failure to send. */
int px_ra_widened_answer(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct px_pending *p,
    const struct px_prot *prot, bool *replaced);

#endif
