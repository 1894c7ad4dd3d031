/*
 * coherence.h - coherence.c, one coherent file per server path across the
 * connections of this smbaccel; called by the dispatcher (relay.c).
 */
#ifndef SMBACCEL_COHERENCE_H
#define SMBACCEL_COHERENCE_H

#include "proxy/conn_state.h"
#include "proxy/emit.h"

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
 * hold (through this smbaccel), and the document cache validates its copy
 * of the file against the answer. */
void px_coh_opened(struct px_conn *c, struct px_open *o);
/* Does an open of file `name` of share `share` on c's server carry a LOCK
 * seen through this smbaccel (any connection)?  Such a file gets no lease
 * of smbaccel's (lease.c, locks.c). */
bool px_coh_path_locked(struct px_conn *c, const char *share,
    const char *name);
/* A client's query for the server's network interfaces (the first step
 * of SMB 3 multichannel) in a session smbaccel may answer, under
 * multichannel = hide: answered STATUS_NOT_SUPPORTED here (PX_AB_DONE). */
enum px_absorb px_coh_interfaces(struct px_conn *c, const struct smb2_hdr *h,
    const struct smb2_elem *e);
/* Wake connections whose stalled frame waits on other connections. */
void px_coh_kick_waiters(struct px_conn *c);
/* c is closing: its durable opens that lost acknowledged data (or hold
 * an error not yet reported) are kept for their reconnect, which then
 * gets the error (px_coh_opened).  Before writebehind.c lets go. */
void px_coh_closing(struct px_conn *c);
/* Those records across a restart: written to state_dir at exit (none:
 * a warning if any), read back and the file removed at start. */
void px_coh_lost_save(const char *dir);
void px_coh_lost_load(const char *dir);
/* When a durable reconnect stops waiting for the close of the client's
 * previous connection (px_coh_must_wait); 0: none waits. */
double px_coh_timer(const struct px_conn *c);
/* The answer h to pending p: a refused re-authentication of an established
 * session, which the server deletes with its opens (MS-SMB2 3.3.5.5.3),
 * makes smbaccel stop acting on it for good (srv_gone) and drop its read
 * caches; logged, counted. */
void px_coh_reauth_refused(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p);

#endif
