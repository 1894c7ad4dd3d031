/*
 * locks.h - locks.c, the byte-range locks granted through smbaccel and
 * the lock check it does itself for the opens that hold its lease on a
 * client's behalf; called by relay.c, coherence.c and lease.c.
 */
#ifndef SMBACCEL_LOCKS_H
#define SMBACCEL_LOCKS_H

#include "proxy/conn_state.h"
#include "proxy/emit.h"

/* A LOCK request is forwarded (p its pending entry): keep its elements
 * for the answer. */
void px_locks_request(struct px_conn *c, const struct smb2_elem *e,
    struct px_pending *p);
/* Its final answer h: on SUCCESS the open's locks change as it asked
 * (last_create: the FileId of a CREATE earlier in the same compound). */
void px_locks_answered(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p, const struct smb2_fileid *last_create);
/*
 * A standalone READ or WRITE about to be handled: if it names an open
 * that holds smbaccel's lease with read (write) caching, which makes
 * Samba skip its own lock check, and it conflicts with a byte-range lock
 * granted through smbaccel, answer STATUS_FILE_LOCK_CONFLICT here
 * (PX_AB_DONE; PX_AB_FAIL out of memory).  PX_AB_FORWARD otherwise.
 */
enum px_absorb px_locks_check(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e);
/* Would px_locks_check answer I/O [off, +len) of o (write or read)?  For
 * a WRITE cut through as it arrives: such a one must be read whole. */
bool px_locks_blocks(struct px_conn *c, const struct px_open *o,
    uint64_t off, uint64_t len, bool write);
/*
 * A standalone FSCTL_SRV_COPYCHUNK(_WRITE) about to be forwarded: the
 * server reads its source through the open whose resume key it names
 * and writes through the open it is sent on, each checked for locks by
 * the server only if it holds no lease caching that I/O.  Where one holds
 * smbaccel's and a chunk conflicts with a lock granted through smbaccel,
 * answered FILE_LOCK_CONFLICT with nothing copied, as px_locks_check.
 */
enum px_absorb px_locks_copychunk(struct px_conn *c,
    const struct smb2_hdr *h, const struct smb2_elem *e);
/* A READ or WRITE element of a compound is forwarded: a conflict the
 * server may not see is counted and logged (compounds are never
 * answered by smbaccel). */
void px_locks_forwarded(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e);
#endif
