/*
 * alter.c - what smbaccel may alter in a session, and what it learns of
 * the server to decide it (DESIGN.md section 3; docs/design.md "What may be
 * altered").
 *
 * smbaccel answers requests itself (absorbed WRITEs, READs served from
 * cache) and rewrites some requests whose answers it then changes (a
 * widened READ).  In a session it holds the key for it signs or seals
 * whatever it makes.  In one it holds no key for, every answer it sends
 * is unsigned, and an answer the server signed cannot be changed: so it
 * answers only unsigned requests of a session that does not require
 * signing, and rewrites only where the server signs just what MS-SMB2
 * requires.  Which kind of server a session has is learned from its
 * answers (co_signs_observe); until then nothing is altered.  A server
 * that signs an answer to a request smbaccel rewrote anyway is remembered
 * for the life of the process, and nothing of it is rewritten again.
 */
#include <string.h>
#include <netinet/in.h>

#include "proxy/alter.h"
#include "proxy/keyed.h"

/* Servers that signed an answer they did not have to (bounded: the oldest
 * entry is forgotten, which only costs another lesson). */
#define SIGNS_ALL_MAX 256
static struct sockaddr_storage signs_all[SIGNS_ALL_MAX];
static unsigned int nsigns_all, next_signs_all;

static bool
same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	return memcmp(a, b, a->ss_family == AF_INET ?
	    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) == 0;
}

static bool
server_signs_all(const struct px_conn *c)
{
	unsigned int i;

	for (i = 0; i < nsigns_all; i++)
		if (same_addr(&signs_all[i], &c->dst_addr))
			return true;
	return false;
}

static void
remember_server(const struct px_conn *c)
{
	if (server_signs_all(c))
		return;
	signs_all[next_signs_all] = c->dst_addr;
	next_signs_all = (next_signs_all + 1) % SIGNS_ALL_MAX;
	if (nsigns_all < SIGNS_ALL_MAX)
		nsigns_all++;
}

void
px_alter_learn(struct px_conn *c, const struct smb2_hdr *h,
    const struct px_pending *p, bool interim, bool sealed)
{
	struct px_session *s;
	struct co_sign_facts f;
	enum co_signs before;
	char a[64];

	/* the answer to a READ smbaccel widened is judged where it is cut
	 * back (px_alter_signed_answer), not learned from */
	if (p == NULL || p->origin != PX_ORIGIN_CLIENT ||
	    p->command != h->command || h->session_id == 0 ||
	    (p->command == SMB2_READ && p->u.io.widened) ||
	    (s = px_session_find(&c->led, h->session_id)) == NULL ||
	    !s->established || s->keyed || s->srv_signs == CO_SIGNS_ALL)
		return;
	memset(&f, 0, sizeof(f));
	f.dialect = c->led.dialect;
	f.command = h->command;
	f.status = h->status;
	f.interim = interim;
	f.req_signed = p->signed_rq;
	f.rsp_signed = (h->flags & SMB2_FLAGS_SIGNED) != 0;
	f.sealed = sealed;
	before = s->srv_signs;
	s->srv_signs = co_signs_observe(before, &f);
	if (s->srv_signs == before)
		return;
	if (s->srv_signs == CO_SIGNS_ALL) {
		px_stats.sessions_server_signs_all++;
		log_info("conn=%llu session=0x%llx server=%s signs answers it "
		    "need not sign (%s): without the session key, no request of "
		    "this session is rewritten (no widened reads)",
		    (unsigned long long)c->id, (unsigned long long)s->id,
		    px_addr_str(&c->dst_addr, a, sizeof(a)),
		    px_smb2_cmd_name(h->command));
	} else
		log_debug("conn=%llu session=0x%llx server signs only what it "
		    "must (%s answer unsigned)", (unsigned long long)c->id,
		    (unsigned long long)s->id, px_smb2_cmd_name(h->command));
}

bool
px_session_keyed(struct px_conn *c, uint64_t sid)
{
	struct px_session *s = px_session_find(&c->led, sid);

	return s != NULL && s->keyed;
}

bool
px_may_rewrite(struct px_conn *c, const struct px_session *s)
{
	return s->keyed ||
	    co_may_alter(CO_ALTER_REWRITE, s->srv_signs, server_signs_all(c));
}

int
px_alter_signed_answer(struct px_conn *c, const struct smb2_hdr *h)
{
	struct px_session *s = px_session_find(&c->led, h->session_id);
	char a[64];

	px_addr_str(&c->dst_addr, a, sizeof(a));
	log_warnx("conn=%llu session=0x%llx server=%s signed its answer to a "
	    "%s smbaccel changed, which cannot be re-signed without the "
	    "session key: closing the connection (reason=cannot-sign); no "
	    "request to this server will be rewritten from now on",
	    (unsigned long long)c->id, (unsigned long long)h->session_id, a,
	    px_smb2_cmd_name(h->command));
	if (s != NULL && s->srv_signs != CO_SIGNS_ALL) {
		s->srv_signs = CO_SIGNS_ALL;
		px_stats.sessions_server_signs_all++;
	}
	remember_server(c);
	return px_relay_fail(c, PX_CLOSE_CANNOT_SIGN);
}

/*
 * Can an answer to request h of session s be made here so that the client
 * accepts it as the server's?  Plain sessions: only unsigned requests, and
 * only once the session's server is known (co_may_alter).  Signed or
 * sealed ones: only with the session's key, a good signature, and the
 * protection the server would demand.  Sets c->cur_prot to how the answer
 * must travel.
 */
static bool
may_answer(struct px_conn *c, struct px_session *s, const struct px_tree *t,
    const struct smb2_hdr *h, const struct smb2_elem *e)
{
	bool signed_rq = (h->flags & SMB2_FLAGS_SIGNED) != 0;
	bool enc_needed = s->encrypt ||
	    (t != NULL && (t->share_flags & SMB2_SHAREFLAG_ENCRYPT_DATA));

	if (c->cur_encrypted) {
		/* sealed: answered sealed under the same session's key */
		if (!s->keyed || c->cur_enc_sid != s->id)
			return false;
		c->cur_prot.encrypt = true;
		return true;
	}
	if (enc_needed)
		return false;   /* the server refuses it unsealed */
	if (!signed_rq && !s->signing_required)
		return s->keyed ||
		    co_may_alter(CO_ALTER_SYNTH, s->srv_signs, false);
	if (signed_rq && !s->signing_required && !s->client_signs)
		px_keyed_client_signs(c, s);
	if (!signed_rq || !s->keyed)
		return false;   /* unsigned where required, or no key */
	if (!px_keyed_verify(c, s, e->hdr, e->len, h->command))
		return false;
	c->cur_prot.sign = true;
	return true;
}

/*
 * May the proxy act on (absorb, answer, rewrite) this request of session s?
 * Not while the session may be, or is, expired, nor where its requests may
 * come on other connections; otherwise as may_answer.
 */
bool
px_may_act(struct px_conn *c, struct px_session *s, const struct px_tree *t,
    const struct smb2_hdr *h, const struct smb2_elem *e)
{
	c->cur_prot.sid = h->session_id;
	c->cur_prot.sign = false;
	c->cur_prot.encrypt = false;
	/* its requests may come on other connections, whose opens this one
	 * does not know (px_coh_must_wait) */
	if (s->multichannel)
		return false;
	/* a re-authentication on its way, or refused: if refused the server
	 * has deleted the session (px_wb_expiry_seen) */
	if (s->reauthing || s->srv_gone)
		return false;
	/* its Kerberos ticket is about to end: the server will refuse
	 * whatever smbaccel sends for it from then on (px_keyed_expiring;
	 * the write-behind timer flushes its buffers at that instant) */
	if (px_keyed_expiring(c, s))
		return false;
	/* the server has expired it: whatever smbaccel answered now would
	 * be refused upstream (px_wb_expiry_seen) */
	if (s->srv_expired)
		return false;
	return may_answer(c, s, t, h, e);
}

bool
px_may_answer_expired(struct px_conn *c, struct px_session *s,
    const struct px_tree *t, const struct smb2_hdr *h,
    const struct smb2_elem *e)
{
	c->cur_prot.sid = h->session_id;
	c->cur_prot.sign = false;
	c->cur_prot.encrypt = false;
	if (s->multichannel || !s->srv_expired)
		return false;
	return may_answer(c, s, t, h, e);
}
