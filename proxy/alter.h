/*
 * alter.h - alter.c, what smbaccel may alter in a session (absorb, answer,
 * rewrite), learned from what the session's server signs; called by
 * relay.c, readahead.c and writebehind.c.
 */
#ifndef SMBACCEL_ALTER_H
#define SMBACCEL_ALTER_H

#include "proxy/conn_state.h"
#include "proxy/emit.h"

/* An answer of the server (its pending entry p, interim or final, sealed
 * or not): learn what the session's server signs. */
void px_alter_learn(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p, bool interim, bool sealed);
/* May the proxy act on (absorb, answer) this request of session s on tree
 * t?  Sets c->cur_prot to how the answer must travel. */
bool px_may_act(struct px_conn *c, struct px_session *s,
    const struct px_tree *t, const struct smb2_hdr *h,
    const struct smb2_elem *e);
/* May the proxy answer request h of session s, which the server has
 * expired (s->srv_expired), with the status the server gives the
 * session's requests (STATUS_NETWORK_SESSION_EXPIRED)?  As px_may_act
 * but for the expiry; sets c->cur_prot. */
bool px_may_answer_expired(struct px_conn *c, struct px_session *s,
    const struct px_tree *t, const struct smb2_hdr *h,
    const struct smb2_elem *e);
/* May it also rewrite a request of session s whose answer comes back (and
 * must then be changed)?  Ask after px_may_act. */
bool px_may_rewrite(struct px_conn *c, const struct px_session *s);
/* smbaccel holds the key of session sid. */
bool px_session_keyed(struct px_conn *c, uint64_t sid);
/* The answer to a request smbaccel rewrote arrived signed in a session it
 * holds no key for: logged, the server remembered; -1 with the connection
 * marked to close with reason cannot-sign. */
int px_alter_signed_answer(struct px_conn *c, const struct smb2_hdr *h);

#endif
