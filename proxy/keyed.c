/*
 * keyed.c - keyed sessions (DESIGN.md section 7).
 *
 * With the user's NT hash from the secrets file, smbaccel derives a
 * session's keys from the relayed, unmodified NTLMSSP exchange, so it can
 * verify the client's signatures, sign what it synthesizes or rewrites, and
 * decrypt and re-encrypt sealed traffic.  Nothing here changes a relayed
 * byte of NEGOTIATE or SESSION_SETUP: the preauth integrity hash (3.1.1)
 * is the same on both legs only because they are relayed untouched.
 *
 * With the server's keytab, it does the same for Kerberos sessions: the
 * AP-REQ of the request is decrypted with the keytab (the ticket) and the
 * ticket's session key (the authenticator), the AP-REP of the final
 * response with the session key; the key the session ends up with is
 * accepted, as for NTLM, only if the server's signature on that response
 * verifies with it (krb_setup_req, krb_key_for).
 *
 * A session for which no key can be had (no secret, wrong secret,
 * anonymous, guest, no keytab, no key for the ticket, user-to-user,
 * NEGOEX, a multichannel binding) is simply not keyed: the relay then
 * forwards everything of it as is, and the reason is shown per session.
 * Re-authentication keeps the session's keys (MS-SMB2 3.3.5.5.2: "the
 * existing Session.SessionKey will be retained").
 */
#include <netdb.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "proxy/keyed.h"
#include "proxy/keyfiles.h"
#include "proxy/auth/auth.h"

/* the last ticket without a key (stale_keytab_warn), for smbaccelctl */
static struct px_keyed_miss last_miss;

/*
 * What a SESSION_SETUP request carried, kept in its pending entry
 * (p->u.sess.auth) until the response; flat, so the ledger frees it with
 * free().  The Kerberos part is worked out when the request passes (the
 * keytab is needed only then) and wiped once the response is handled.
 */
struct setup_auth {
	enum px_gss_mech mech;
	bool binding;               /* SMB2_SESSION_FLAG_BINDING */
	bool reauth;                /* the session was established before */
	bool negoex;
	bool ntlm_ok;               /* ntlm holds an AUTHENTICATE */
	struct px_ntlm_auth ntlm;
	struct px_krb_accept krb;   /* mech == PX_MECH_KERBEROS */
};

/* A request's setup_auth freed with its pending entry, however that ends
 * (answered, refused, the connection gone): keys wiped first. */
static void
auth_free(void *p)
{
	struct setup_auth *sa = p;

	if (sa == NULL)
		return;
	px_krb_accept_wipe(&sa->krb);
	OPENSSL_cleanse(sa, sizeof(*sa));
	free(sa);
}

bool
px_keyed_last_miss(struct px_keyed_miss *m)
{
	const char *why = px_krb_result_name(PX_KRB_R_NO_MATCHING_KEY);
	size_t i;

	*m = last_miss;
	for (i = 0; i < PX_UNKEYED_MAX && px_stats.unkeyed_by[i].why; i++)
		if (strcmp(px_stats.unkeyed_by[i].why, why) == 0)
			m->sessions = px_stats.unkeyed_by[i].n;
	return last_miss.at != 0;
}

static void plain_pool_free(void);

void
px_keyed_shutdown(void)
{
	px_keyfiles_free();
	plain_pool_free();
}

static struct px_keyed *
kx_of(struct px_session *s)
{
	if (s->kx == NULL)
		s->kx = calloc(1, sizeof(*s->kx));
	return s->kx;
}

/* ---- preauth integrity and the NTLM exchange ------------------------------ */

void
px_keyed_negotiate_req(struct px_conn *c, const uint8_t *msg, size_t len)
{
	uint8_t zero[64];

	memset(zero, 0, sizeof(zero));
	memcpy(c->led.preauth_req, zero, 64);
	if (px_preauth_update(c->led.preauth_req, msg, len) == -1)
		log_warnx("conn=%llu preauth hash failed",
		    (unsigned long long)c->id);
}

#define FILETIME_1970 116444736000000000ULL  /* 1970 in 100 ns since 1601 */
#define FILETIME_10000 2650467743999999999ULL /* the end of year 9999 */
#define CLOCK_WARN_MS 60000                  /* a difference worth a warning */

/*
 * The server judges a Kerberos ticket's end by its own clock (MS-SMB2
 * 3.3.5.2.9), so smbaccel does too (expiry_left): a NEGOTIATE answer
 * carries the server's time (SystemTime, 2.2.4), kept with the connection
 * against the monotonic clock, so that the server's time later is that
 * plus the monotonic time gone since.  Neither smbaccel's clock being
 * wrong nor its being stepped (NTP correcting it after boot) moves it.
 * The answer's travel time makes it early by up to a one-way delay, which
 * kerberos_expiry_margin covers.  No time (0, or out of FILETIME's range):
 * smbaccel's own clock, and the margin is all the difference allowed.
 * A difference of a minute or more from smbaccel's clock is warned of
 * once per server (the last eight), and again when it has moved by a
 * minute since.
 */
static void
server_clock(struct px_conn *c)
{
	static struct {
		char srv[sizeof(c->dst_str)];
		int64_t off;
	} seen[8];
	static size_t next;
	uint64_t ft = c->led.server_time;
	int64_t srv_ms, off;
	size_t i;

	c->led.server_clock_known = false;
	if (ft < FILETIME_1970 || ft > FILETIME_10000)
		return;
	srv_ms = (int64_t)((ft - FILETIME_1970) / 10000);
	c->led.server_clock_ms = srv_ms - (int64_t)px_now_ms();
	c->led.server_clock_known = true;
	off = srv_ms - px_wall_ms();
	if (off < CLOCK_WARN_MS && off > -CLOCK_WARN_MS)
		return;
	for (i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
		if (strcmp(seen[i].srv, c->dst_str) == 0) {
			if (llabs(seen[i].off - off) < CLOCK_WARN_MS)
				return;
			break;
		}
	if (i == sizeof(seen) / sizeof(seen[0])) {
		i = next;
		next = (next + 1) % (sizeof(seen) / sizeof(seen[0]));
	}
	memcpy(seen[i].srv, c->dst_str, sizeof(seen[i].srv));
	seen[i].off = off;
	log_warnx("conn=%llu server %s: its clock is %lld s %s this host's "
	    "(the SystemTime of its NEGOTIATE answer): smbaccel judges "
	    "Kerberos ticket ends by the server's clock; check the time "
	    "(NTP) of both", (unsigned long long)c->id, c->dst_str,
	    (long long)(llabs(off) / 1000), off > 0 ? "ahead of" : "behind");
}

int64_t
px_keyed_server_clock_off(const struct px_conn *c)
{
	return c->led.server_clock_ms + (int64_t)px_now_ms() - px_wall_ms();
}

void
px_keyed_negotiate_rsp(struct px_conn *c, const uint8_t *msg, size_t len)
{
	server_clock(c);
	/* MS-SMB2 3.2.5.2: only a 3.1.1 answer continues the hash */
	if (c->led.dialect != SMB2_DIALECT_0311)
		return;
	memcpy(c->led.preauth, c->led.preauth_req, 64);
	if (px_preauth_update(c->led.preauth, msg, len) == -1)
		log_warnx("conn=%llu preauth hash failed",
		    (unsigned long long)c->id);
}

/* The keytab for a session of c whose ticket names host: the one of the
 * server's [//server/...] sections, by the ticket's host name, else by the
 * server's address, else [global]'s; NULL for none. */
static const struct px_keytab *
keytab_for(struct px_conn *c, const char *host)
{
	const struct pol_config *cfg = c->led.cfg ? c->led.cfg : px_rt.cfg;
	struct pol_server sv;
	char ip[NI_MAXHOST];

	if (cfg == NULL)
		return NULL;
	if (host == NULL || host[0] == '\0' ||
	    !pol_server_lookup(cfg, host, &sv)) {
		if (getnameinfo((const struct sockaddr *)&c->dst_addr,
		    sizeof(c->dst_addr), ip, sizeof(ip), NULL, 0,
		    NI_NUMERICHOST) != 0 || !pol_server_lookup(cfg, ip, &sv))
			pol_server_lookup(cfg, NULL, &sv);
	}
	if (sv.keytab[0] == '\0')
		return NULL;
	return px_keyfiles_keytab_at(sv.keytab);
}

/*
 * The Kerberos part of a request: parse the token, and for an AP-REQ
 * decrypt the ticket and authenticator now, keeping only the keys.  The
 * last AP-REQ of an exchange is the one paired with the AP-REP (a client
 * answered with a KRB-ERROR sends a new one): each request's pending
 * entry holds its own.
 */
static void
krb_setup_req(struct px_conn *c, const struct smb2_session_setup_req *sr,
    struct setup_auth *sa)
{
	struct px_krb_msg *m;
	enum px_krb_result r;
	int rc;

	if ((m = calloc(1, sizeof(*m))) == NULL) {
		sa->krb.result = PX_KRB_R_ERROR;
		return;
	}
	rc = px_krb_parse(sr->sec_buf, sr->sec_buf_len, m);
	sa->negoex = m->negoex;
	if (rc == PX_NTLM_OTHER) {
		sa->mech = m->negoex ? PX_MECH_OTHER : m->mech;
		/* IAKERB: Kerberos smbaccel cannot key; its result must not
		 * read as OK (a re-authentication would take a ticket end
		 * of 0, "never") */
		if (m->unsupported)
			sa->krb.result = PX_KRB_R_UNSUPPORTED;
		free(m);
		return;
	}
	if (rc == PX_NTLM_BAD) {
		sa->krb.result = PX_KRB_R_MALFORMED;
		log_info("conn=%llu kerberos token does not parse: the "
		    "session will not be keyed", (unsigned long long)c->id);
		free(m);
		return;
	}
	r = px_krb_accept_req(m, keytab_for(c, m->sname_host), &sa->krb);
	log_debug("conn=%llu kerberos AP-REQ client=%s service=%s "
	    "ticket=%s kvno=%lu session_key=%s: %s", (unsigned long long)c->id,
	    sa->krb.client[0] ? sa->krb.client : "?", sa->krb.service,
	    px_krb_enctype_name(m->ticket.etype),
	    (unsigned long)m->ticket.kvno, sa->krb.session_etype ?
	    px_krb_enctype_name(sa->krb.session_etype) : "-",
	    px_krb_result_name(r));
	OPENSSL_cleanse(m, sizeof(*m));
	free(m);
}

void
px_keyed_setup_req(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t len, struct px_pending *p)
{
	struct px_session *s = h->session_id ?
	    px_session_find(&c->led, h->session_id) : NULL;
	struct smb2_session_setup_req sr;
	struct smb2_elem e = { msg, len };
	struct setup_auth *sa;
	int rc;

	memcpy(p->u.sess.preauth, s ? s->preauth : c->led.preauth, 64);
	if (c->led.dialect == SMB2_DIALECT_0311 &&
	    px_preauth_update(p->u.sess.preauth, msg, len) == -1)
		return;
	if (px_smb2_session_setup_req_decode(&e, &sr) == -1 ||
	    (sa = calloc(1, sizeof(*sa))) == NULL)
		return;
	p->u.sess.auth = sa;
	p->u.sess.auth_free = auth_free;
	rc = px_ntlm_parse_authenticate(sr.sec_buf, sr.sec_buf_len, &sa->ntlm);
	sa->mech = sa->ntlm.mech;
	sa->ntlm_ok = rc == PX_NTLM_OK;
	/* a channel binding is never keyed: its signing key comes from its
	 * own exchange but the session's encryption keys and nonces live
	 * with the connection that set the session up (relayed instead) */
	if (sr.flags & SMB2_SESSION_FLAG_BINDING) {
		sa->binding = true;
		return;
	}
	sa->reauth = s != NULL && s->established;
	/* a re-authentication's ticket too: the keys stay (reauth_key) but
	 * the new ticket's end is when the server will expire the session */
	if (sa->mech == PX_MECH_KERBEROS || sa->mech == PX_MECH_OTHER)
		krb_setup_req(c, &sr, sa);
}

/*
 * Derive the SMB keys from the session key and accept them if the
 * server's signature on the final SESSION_SETUP response verifies (MS-SMB2
 * 3.3.5.5.3: it proves the key is the session's).  unsigned_ok: a final
 * response without a signature is taken on trust (the NTLM path, whose
 * NTProofStr check already proved the secret).  NULL or the reason.
 */
static const char *
accept_key(struct px_conn *c, struct px_session *s, const uint8_t *key,
    size_t keylen, const struct smb2_hdr *h, const uint8_t *msg, size_t len,
    bool unsigned_ok)
{
	struct px_keyed *kx = s->kx;
	const char *why = NULL;

	if (px_smb_keys_derive(c->led.dialect, key, keylen, s->preauth,
	    c->led.cipher, &kx->keys) == -1)
		why = "kdf-failed";
	else if (!(h->flags & SMB2_FLAGS_SIGNED) && !unsigned_ok)
		why = "unverified";
	else if ((h->flags & SMB2_FLAGS_SIGNED) &&
	    px_smb2_verify(&kx->keys, c->led.dialect, c->led.signing_alg, msg,
	    len, true, false) == -1)
		why = "key-mismatch";
	else if (c->led.cipher &&
	    (px_nonce_gen_init(&kx->nonce_s2c, c->led.cipher) == -1 ||
	    px_nonce_gen_init(&kx->nonce_c2s, c->led.cipher) == -1))
		why = "nonce-init-failed";
	if (why != NULL)        /* keys not taken are not kept */
		px_smb_keys_wipe(&kx->keys);
	return why;
}

static const char *
ntlm_key_for(struct px_conn *c, struct px_session *s, struct setup_auth *sa,
    const struct smb2_hdr *h, const uint8_t *msg, size_t len)
{
	struct px_ntlm_auth *a = &sa->ntlm;
	struct px_keyed *kx = s->kx;
	const uint8_t *nthash;
	uint8_t key[16];
	enum px_key_result kr;
	const char *why;
	char dom[PX_NTLM_NAME_MAX];

	if (!sa->ntlm_ok || kx == NULL || !kx->have_chal)
		return "no-ntlm";
	if (a->anonymous)
		return "anonymous";
	if (px_keyfiles_secrets() == NULL)
		return "no-key";
	snprintf(dom, sizeof(dom), "%s", a->domain);
	if ((nthash = px_secrets_nthash(px_keyfiles_secrets(), dom,
	    a->user)) == NULL)
		return "no-key";
	kr = px_ntlm_session_key(&kx->chal, a, nthash, key);
	if (kr == PX_KEY_MISMATCH)
		return "key-mismatch";
	if (kr != PX_KEY_OK)
		return px_key_result_name(kr);
	why = accept_key(c, s, key, sizeof(key), h, msg, len, true);
	OPENSSL_cleanse(key, sizeof(key));
	return why;
}

/*
 * The Kerberos session key: the AP-REP of the final response (if any)
 * with what the request's AP-REQ yielded.  The server's signature must
 * verify: a Kerberos key is never taken on trust.
 */
static const char *
krb_key_for(struct px_conn *c, struct px_session *s, struct setup_auth *sa,
    const struct smb2_hdr *h, const uint8_t *msg, size_t len)
{
	struct smb2_session_setup_rsp sr;
	struct smb2_elem e = { msg, len };
	struct px_krb_msg *m = NULL;
	const struct px_krb_msg *rep = NULL;
	uint8_t key[PX_KRB_KEY_MAX];
	size_t keylen = 0;
	enum px_krb_result r;
	const char *why;
	int rc;

	if (sa->krb.result != PX_KRB_R_OK)
		return px_krb_result_name(sa->krb.result);
	if (s->kx == NULL)
		return "out-of-memory";
	if (px_smb2_session_setup_rsp_decode(&e, &sr) == -1)
		return "kerberos-malformed";
	if (sr.sec_buf_len > 0) {
		if ((m = calloc(1, sizeof(*m))) == NULL)
			return "out-of-memory";
		rc = px_krb_parse(sr.sec_buf, sr.sec_buf_len, m);
		if (rc == PX_NTLM_BAD ||
		    (rc == PX_NTLM_OK && m->type != PX_KRB_MSG_AP_REP)) {
			free(m);
			return "kerberos-malformed";
		}
		if (rc == PX_NTLM_OK)
			rep = m;
	}
	r = px_krb_session_key(&sa->krb, rep, key, &keylen);
	free(m);
	if (r != PX_KRB_R_OK)
		return px_krb_result_name(r);
	why = accept_key(c, s, key, keylen, h, msg, len, false);
	OPENSSL_cleanse(key, sizeof(key));
	if (why == NULL)
		s->kx->tkt_end = sa->krb.ticket_end;
	return why;
}

/* "2026-12-03 23:20:21 UTC" */
static const char *
utc_text(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		snprintf(buf, len, "%lld", (long long)t);
	return buf;
}

/*
 * Re-authentication of an established session keeps its keys (MS-SMB2
 * 3.3.5.5.2), so nothing is derived: a keyed session stays keyed (its
 * buffered writes need the keys).  An unkeyed one stays unkeyed with its
 * reason.  A Kerberos one takes the new ticket's end (the server's new
 * expiration time, MS-SMB2 3.3.5.5.3) if the keytab opens it and the final
 * response is shown to be the server's (signed with the session's keys,
 * or sealed under the session); otherwise the old end stays, and with it
 * the margin after which smbaccel leaves the session alone
 * (px_keyed_expiring).
 */
static const char *
reauth_key(struct px_conn *c, struct px_session *s, struct setup_auth *sa,
    const struct smb2_hdr *h, const uint8_t *msg, size_t len,
    uint64_t sealed_id)
{
	char when[64];

	if (!s->keyed)
		return s->why_not ? s->why_not : "no-key";
	/* sealed under the session: opened with its keys, so the server's */
	if (sealed_id != s->id && (!(h->flags & SMB2_FLAGS_SIGNED) ||
	    px_smb2_verify(&s->kx->keys, c->led.dialect, c->led.signing_alg,
	    msg, len, true, false) == -1)) {
		/* not shown to be the server's: the keys stay (the server
		 * keeps them), and so does the old ticket's end */
		log_warnx("conn=%llu session=0x%llx re-authenticated; the "
		    "final response %s with the session's keys: keys kept, "
		    "the ticket's end not taken from it",
		    (unsigned long long)c->id, (unsigned long long)s->id,
		    (h->flags & SMB2_FLAGS_SIGNED) ? "does not verify" :
		    "is not signed, so cannot be checked");
		return NULL;
	}
	/* the new ticket: read at the request, or with an AP-REP that came
	 * in a MORE_PROCESSING answer (the final request then carries no
	 * Kerberos token) */
	if ((sa->mech == PX_MECH_KERBEROS && sa->krb.result == PX_KRB_R_OK) ||
	    (sa->mech == PX_MECH_NONE && s->kx->have_krb_key)) {
		s->kx->tkt_end = sa->mech == PX_MECH_NONE ? s->kx->krb_end :
		    sa->krb.ticket_end;
		if (s->expiring)
			log_info("conn=%llu session=0x%llx re-authenticated "
			    "with a ticket that ends %s: acted on again",
			    (unsigned long long)c->id,
			    (unsigned long long)s->id,
			    utc_text(s->kx->tkt_end, when, sizeof(when)));
		s->expiring = false;
	} else if (s->kx->tkt_end != 0) {
		log_info("conn=%llu session=0x%llx re-authenticated with a "
		    "token smbaccel cannot read (%s): its old ticket's end, "
		    "%s, still applies", (unsigned long long)c->id,
		    (unsigned long long)s->id, sa->mech == PX_MECH_KERBEROS ?
		    px_krb_result_name(sa->krb.result) : px_gss_mech_name(
		    sa->mech), utc_text(s->kx->tkt_end, when, sizeof(when)));
	}
	return NULL;
}

static const char *
key_for(struct px_conn *c, struct px_session *s, struct px_pending *p,
    const struct smb2_hdr *h, const uint8_t *msg, size_t len,
    uint64_t sealed_id)
{
	struct setup_auth *sa = p->u.sess.auth;

	if (sa == NULL)
		return "no-ntlm";
	if (sa->binding)
		return "binding";
	if (sa->reauth)
		return reauth_key(c, s, sa, h, msg, len, sealed_id);
	if (s->guest)
		return "guest";
	if (s->anonymous)
		return "anonymous";
	switch (sa->mech) {
	case PX_MECH_NTLMSSP:
		return ntlm_key_for(c, s, sa, h, msg, len);
	case PX_MECH_KERBEROS:
		return krb_key_for(c, s, sa, h, msg, len);
	case PX_MECH_NONE:
		/* the last leg of a Kerberos exchange whose AP-REP came in
		 * a MORE_PROCESSING response (krb_more_processing) */
		if (s->kx != NULL && s->kx->have_krb_key) {
			const char *why;

			sa->mech = PX_MECH_KERBEROS;
			why = accept_key(c, s, s->kx->krb_key,
			    s->kx->krb_keylen, h, msg, len, false);
			if (why == NULL)
				s->kx->tkt_end = s->kx->krb_end;
			return why;
		}
		return "no-ntlm";
	default:
		return sa->negoex ? "negoex" : "no-ntlm";
	}
}

/* " auth=kerberos client=... ticket=aes256-cts-hmac-sha1-96/kvno=1
 * session_key=aes128-cts-hmac-sha1-96": the ticket's enctype is the
 * service key's, the session key's is what the KDC chose from the
 * client's list (it keys the authenticator and the AP-REP) */
static void
auth_desc(const struct setup_auth *sa, char *buf, size_t len)
{
	if (sa == NULL) {
		snprintf(buf, len, "%s", "");
		return;
	}
	if (sa->mech == PX_MECH_KERBEROS && sa->krb.service[0] != '\0')
		snprintf(buf, len, " auth=kerberos client=%s service=%s "
		    "ticket=%s/kvno=%lu%s%s", sa->krb.client[0] ?
		    sa->krb.client : "?", sa->krb.service, px_krb_enctype_name(
		    sa->krb.ticket_etype), (unsigned long)sa->krb.ticket_kvno,
		    sa->krb.session_etype ? " session_key=" : "",
		    sa->krb.session_etype ? px_krb_enctype_name(
		    sa->krb.session_etype) : "");
	else
		snprintf(buf, len, " auth=%s", sa->negoex ? "negoex" :
		    px_gss_mech_name(sa->mech));
}

/* One more signed or sealed session relayed unkeyed, for reason why. */
static void
unkeyed_count(const char *why)
{
	size_t i, last = PX_UNKEYED_MAX - 1;

	px_stats.sessions_unkeyed++;
	if (why == NULL)
		why = "no-key";
	for (i = 0; i < last; i++) {
		if (px_stats.unkeyed_by[i].why == NULL)
			px_stats.unkeyed_by[i].why = why;
		if (strcmp(px_stats.unkeyed_by[i].why, why) == 0) {
			px_stats.unkeyed_by[i].n++;
			return;
		}
	}
	px_stats.unkeyed_by[last].why = "other";
	px_stats.unkeyed_by[last].n++;
}

/*
 * A ticket the keytab has no key for, most often because the server's
 * machine password changed (every 30 days on Windows) and the keytab was
 * not fetched again: every new session of that server is relayed
 * unaccelerated from then on, which the administrator must hear of
 * without reading every passthrough line.  Warned once per service and
 * key version (of the last eight such pairs), not per session.
 */
static void
stale_keytab_warn(const struct setup_auth *sa, const char *why)
{
	/* the last few (service, kvno) pairs warned of, oldest replaced */
	static struct {
		char service[sizeof(sa->krb.service)];
		unsigned long kvno;
	} seen[8];
	static size_t next;
	size_t i;

	if (sa == NULL || sa->mech != PX_MECH_KERBEROS ||
	    strcmp(why, px_krb_result_name(PX_KRB_R_NO_MATCHING_KEY)) != 0 ||
	    sa->krb.service[0] == '\0')
		return;
	snprintf(last_miss.service, sizeof(last_miss.service), "%s",
	    sa->krb.service);
	last_miss.enctype = sa->krb.ticket_etype;
	last_miss.kvno = sa->krb.ticket_kvno;
	last_miss.at = time(NULL);
	for (i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
		if (seen[i].kvno == sa->krb.ticket_kvno &&
		    strcmp(seen[i].service, sa->krb.service) == 0)
			return;
	snprintf(seen[next].service, sizeof(seen[next].service), "%s",
	    sa->krb.service);
	seen[next].kvno = sa->krb.ticket_kvno;
	next = (next + 1) % (sizeof(seen) / sizeof(seen[0]));
	log_warnx("kerberos: the keytab has no %s key of version %lu for %s: "
	    "if the server's password changed, fetch its keys again "
	    "(smbaccel-keytab(8)); its sessions are relayed unaccelerated "
	    "until then", px_krb_enctype_name(sa->krb.ticket_etype),
	    (unsigned long)sa->krb.ticket_kvno, sa->krb.service);
}

/* A Kerberos exchange that goes on: a KRB-ERROR (clock skew, say) makes
 * the client send a new AP-REQ, which its own pending entry will hold. */
static void
krb_more_processing(struct px_conn *c, struct px_session *s,
    struct px_pending *p, const uint8_t *msg, size_t len)
{
	struct setup_auth *sa = p->u.sess.auth;
	struct smb2_session_setup_rsp sr;
	struct smb2_elem e = { msg, len };
	struct px_krb_msg *m;

	if (sa == NULL || sa->mech != PX_MECH_KERBEROS ||
	    px_smb2_session_setup_rsp_decode(&e, &sr) == -1 ||
	    (m = calloc(1, sizeof(*m))) == NULL)
		return;
	if (px_krb_parse(sr.sec_buf, sr.sec_buf_len, m) == PX_NTLM_OK) {
		struct px_keyed *kx;

		if (m->type == PX_KRB_MSG_ERROR)
			log_info("conn=%llu session=0x%llx kerberos KRB-ERROR "
			    "%ld from the server: the client retries with a "
			    "new AP-REQ", (unsigned long long)c->id,
			    (unsigned long long)s->id, (long)m->error_code);
		/* the AP-REP before a last SPNEGO round (mechListMIC, RFC
		 * 4178 5): keep the key for the final response, which then
		 * carries no Kerberos token */
		else if (m->type == PX_KRB_MSG_AP_REP &&
		    sa->krb.result == PX_KRB_R_OK && (kx = kx_of(s)) != NULL &&
		    px_krb_session_key(&sa->krb, m, kx->krb_key,
		    &kx->krb_keylen) == PX_KRB_R_OK) {
			kx->have_krb_key = true;
			kx->krb_end = sa->krb.ticket_end;
			kx->have_krb_user = px_user_id_principal(
			    sa->krb.client, kx->krb_user) == 0;
		}
	}
	free(m);
	px_krb_accept_wipe(&sa->krb);
}

/*
 * Who an established session is, for the keys of smbaccel's leases
 * (lease.c: two users of one client GUID, a terminal server, open one
 * name in a share whose path is the user's, and must not share a lease):
 * the NTLM AUTHENTICATE's domain and user, in clear in every NTLM session,
 * or the client of a Kerberos ticket the keytab opened.  A guest or
 * anonymous session, or a mechanism smbaccel cannot read, has none and
 * gets the keys it had before users were told apart.  A
 * re-authentication keeps it: the server allows no other user
 * (MS-SMB2 3.3.5.5.3).
 */
static void
note_user(struct px_conn *c, struct px_session *s,
    const struct setup_auth *sa)
{
	uint8_t id[16];
	bool known = false;
	const char *by = "guest or anonymous";

	if (sa == NULL || sa->reauth)
		return;
	if (s->guest || s->anonymous)
		known = false;
	else if (sa->ntlm_ok && !sa->ntlm.anonymous) {
		known = px_user_id(sa->ntlm.domain, sa->ntlm.user, id) == 0;
		by = "ntlm";
	} else if (sa->krb.client[0] != '\0' && sa->krb.result == PX_KRB_R_OK) {
		known = px_user_id_principal(sa->krb.client, id) == 0;
		by = "kerberos";
	} else if (sa->mech == PX_MECH_NONE && s->kx != NULL &&
	    s->kx->have_krb_user) {
		memcpy(id, s->kx->krb_user, 16);
		known = true;
		by = "kerberos";
	} else
		by = "not read";
	s->user_known = known;
	if (known)
		memcpy(s->user_id, id, 16);
	log_debug("conn=%llu session=0x%llx user %s (%s): smbaccel's lease "
	    "keys %s", (unsigned long long)c->id, (unsigned long long)s->id,
	    known ? "known" : "unknown", by, known ? "are the user's" :
	    "are the client's");
}

void
px_keyed_setup_rsp(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t len, struct px_pending *p, uint64_t sealed_id)
{
	struct px_session *s = px_session_find(&c->led, h->session_id);
	struct smb2_session_setup_rsp sr;
	struct smb2_elem e = { msg, len };
	const char *why;
	char ad[PX_KRB_NAME_MAX * 2 + 160];
	bool was, reauth;

	if (s == NULL)
		return;
	if (h->status == NT_STATUS_MORE_PROCESSING_REQUIRED) {
		struct px_keyed *kx = kx_of(s);

		memcpy(s->preauth, p->u.sess.preauth, 64);
		if (c->led.dialect == SMB2_DIALECT_0311 &&
		    px_preauth_update(s->preauth, msg, len) == -1)
			return;
		if (kx && px_smb2_session_setup_rsp_decode(&e, &sr) == 0 &&
		    px_ntlm_parse_challenge(sr.sec_buf, sr.sec_buf_len,
		    &kx->chal) == PX_NTLM_OK)
			kx->have_chal = true;
		krb_more_processing(c, s, p, msg, len);
		return;
	}
	if (h->status != NT_STATUS_SUCCESS) {
		/* refused: what the exchange yielded is no longer needed */
		if (p->u.sess.auth != NULL)
			px_krb_accept_wipe(&((struct setup_auth *)
			    p->u.sess.auth)->krb);
		if (s->kx) {
			s->kx->have_krb_key = false;
			s->kx->have_krb_user = false;
			OPENSSL_cleanse(s->kx->krb_key, sizeof(s->kx->krb_key));
		}
		return;
	}
	if (p->u.sess.auth == NULL || !((struct setup_auth *)
	    p->u.sess.auth)->reauth)
		memcpy(s->preauth, p->u.sess.preauth, 64);
	was = s->keyed;
	note_user(c, s, p->u.sess.auth);
	if (kx_of(s) == NULL) {
		why = "out-of-memory";
	} else {
		why = key_for(c, s, p, h, msg, len, sealed_id);
	}
	s->keyed = why == NULL;
	s->why_not = why;
	auth_desc(p->u.sess.auth, ad, sizeof(ad));
	if (p->u.sess.auth != NULL) {
		struct setup_auth *sa = p->u.sess.auth;

		if (!sa->reauth)
			s->auth = sa->negoex ? "negoex" :
			    px_gss_mech_name(sa->mech);
		px_krb_accept_wipe(&sa->krb);
		px_ntlm_auth_wipe(&sa->ntlm);
	}
	reauth = p->u.sess.auth != NULL &&
	    ((struct setup_auth *)p->u.sess.auth)->reauth;
	if ((s->signing_required || s->encrypt) && !reauth) {
		if (s->keyed && !was)
			px_stats.sessions_keyed++;
		else if (!s->keyed)
			unkeyed_count(why);
	}
	if (reauth)
		log_info("conn=%llu session=0x%llx re-authenticated, %s%s%s",
		    (unsigned long long)c->id, (unsigned long long)s->id,
		    s->keyed ? "keys kept" : "still not keyed: ", s->keyed ?
		    "" : why, ad);
	else if (s->keyed)
		log_info("conn=%llu session=0x%llx keyed dialect=%s signing=%s "
		    "encrypt=%s%s", (unsigned long long)c->id,
		    (unsigned long long)s->id, px_dialect_name(c->led.dialect),
		    s->signing_required ? "required" : "optional",
		    s->encrypt ? "yes" : "no", ad);
	else if (s->signing_required || s->encrypt) {
		log_info("conn=%llu session=0x%llx passthrough reason=%s "
		    "(signing %s, encryption %s)%s", (unsigned long long)c->id,
		    (unsigned long long)s->id, why,
		    s->signing_required ? "required" : "optional",
		    s->encrypt ? "required" : "off", ad);
		stale_keytab_warn(p->u.sess.auth, why);
	}
	/* the NTLM and Kerberos exchange state is no longer needed */
	if (s->kx) {
		s->kx->have_chal = false;
		s->kx->have_krb_key = false;
		s->kx->have_krb_user = false;
		OPENSSL_cleanse(s->kx->krb_key, sizeof(s->kx->krb_key));
	}
}

/* ---- signing and encryption ------------------------------------------------- */

/*
 * The session's OpenSSL contexts (one per key, reset per message, see
 * smbcrypto.c), made on first use.  NULL when out of memory: each message
 * then gets a context of its own, slower but the same bytes.
 */
static struct px_smb_ctx *
ctx_of(struct px_session *s)
{
	if (s->kx->ctx == NULL)
		s->kx->ctx = px_smb_ctx_new();
	return s->kx->ctx;
}

/* Milliseconds until s enters kerberos_expiry_margin (<= 0: it has), by
 * the server's clock where c knows it (server_clock); false when it never
 * does (not keyed, NTLM). */
static bool
expiry_left(const struct px_conn *c, const struct px_session *s,
    int64_t *left_ms)
{
	int64_t now;

	if (!s->keyed || s->kx == NULL || s->kx->tkt_end == 0)
		return false;
	now = c->led.server_clock_known ? c->led.server_clock_ms +
	    (int64_t)px_now_ms() : px_wall_ms();
	*left_ms = s->kx->tkt_end * 1000 -
	    (int64_t)px_glob()->kerberos_expiry_margin_ms - now;
	return true;
}

bool
px_keyed_expiring(struct px_conn *c, struct px_session *s)
{
	uint32_t margin = px_glob()->kerberos_expiry_margin_ms / 1000;
	int64_t left;
	char when[64], clk[96] = "";

	if (s->expiring && s->keyed)
		return true;
	if (!expiry_left(c, s, &left) || left > 0)
		return false;
	s->expiring = true;
	px_stats.sessions_expiring++;
	if (c->led.server_clock_known) {
		int64_t off = px_keyed_server_clock_off(c);

		snprintf(clk, sizeof(clk), ", by the server's clock, %.1f s "
		    "%s this host's", (double)llabs(off) / 1e3, off >= 0 ?
		    "ahead of" : "behind");
	}
	log_info("conn=%llu session=0x%llx its Kerberos ticket ends %s (in "
	    "%lld s%s; kerberos_expiry_margin %u s): no longer acted on, what "
	    "is buffered is flushed; the server expires the session then and "
	    "the client re-authenticates", (unsigned long long)c->id,
	    (unsigned long long)s->id, utc_text(s->kx->tkt_end, when,
	    sizeof(when)), (long long)(left / 1000 + margin), clk, margin);
	return true;
}

double
px_keyed_expiry_ms(const struct px_conn *c, const struct px_session *s,
    double now_ms)
{
	int64_t left;

	if (s->expiring || !expiry_left(c, s, &left))
		return 0;
	return now_ms + (left > 0 ? (double)left : 0.0);
}

static struct px_lograte bad_sig_rate;

void
px_keyed_client_signs(struct px_conn *c, struct px_session *s)
{
	if (s->client_signs || s->signing_required || s->encrypt)
		return;
	s->client_signs = true;
	if (s->keyed) {
		px_stats.sessions_keyed++;
		return;
	}
	unkeyed_count(s->why_not);
	log_info("conn=%llu session=0x%llx passthrough reason=%s (signing "
	    "not required, but the client signs its requests)",
	    (unsigned long long)c->id, (unsigned long long)s->id,
	    s->why_not ? s->why_not : "no-key");
}

bool
px_keyed_verify(struct px_conn *c, struct px_session *s, const uint8_t *msg,
    size_t len, uint16_t command)
{
	if (!s->keyed)
		return false;
	if (px_smb2_verify_ctx(ctx_of(s), &s->kx->keys, c->led.dialect,
	    c->led.signing_alg, msg, len, false, command == SMB2_CANCEL) == 0)
		return true;
	px_stats.bad_signatures++;
	/* a client (or whoever writes into its connection) decides how
	 * many: counted each, logged at a bounded rate */
	if (px_lograte_ok(&bad_sig_rate, px_now_ms(), PX_LOGRATE_BURST,
	    PX_LOGRATE_MS)) {
		char more[64];

		log_warnx("conn=%llu session=0x%llx bad signature on %s: "
		    "forwarded for the server to judge%s",
		    (unsigned long long)c->id, (unsigned long long)s->id,
		    px_smb2_cmd_name(command), px_lograte_more(&bad_sig_rate,
		    more, sizeof(more)));
	}
	return false;
}

/* Does smbaccel act on the answer to p rather than pass it on whole?
 * Everything but the client's own READs (the bulk of what a server sends,
 * checked by the client): its own requests' answers, widened READs cut
 * back, and every other answer, from which the ledger, leases, locks and
 * the document cache learn (small messages). */
static bool
acted_on(const struct px_pending *p)
{
	if (p->origin == PX_ORIGIN_PROXY)
		return true;
	if (p->command == SMB2_READ)
		return p->u.io.widened;
	return p->command != SMB2_NEGOTIATE && p->command != SMB2_SESSION_SETUP;
}

static struct px_lograte srv_sig_rate;

/* Why the plain answer el to p in keyed session s is not authentic, or
 * NULL.  It must come as its request went: sealed (then it would not be
 * plain), or signed where signing is required. */
static const char *
plain_not_authentic(struct px_conn *c, struct px_session *s,
    const struct px_pending *p, const struct smb2_hdr *h, const uint8_t *el,
    size_t len)
{
	const struct px_tree *t = px_tree_find(&c->led, p->session_id,
	    p->tree_id);
	bool tree_seals = t && (t->share_flags & SMB2_SHAREFLAG_ENCRYPT_DATA);
	bool seal, sign;

	if (p->origin == PX_ORIGIN_PROXY) {
		/* as px_emit_prot sent it */
		seal = c->led.cipher != 0 && (s->encrypt || s->client_seals ||
		    tree_seals);
		sign = !seal && s->signing_required;
	} else if (p->command == SMB2_READ) {
		seal = p->u.io.prot_encrypt;
		sign = p->u.io.prot_sign && s->signing_required;
	} else {
		seal = c->led.cipher != 0 && (s->encrypt || tree_seals);
		sign = !seal && s->signing_required && p->signed_rq;
	}
	if (seal)
		return "plain where its request went sealed";
	if (!sign)
		return NULL;
	if (!(h->flags & SMB2_FLAGS_SIGNED))
		return "unsigned in a session that requires signing";
	if (px_smb2_verify_ctx(ctx_of(s), &s->kx->keys, c->led.dialect,
	    c->led.signing_alg, el, len, true, false) != 0)
		return "bad signature";
	return NULL;
}

int
px_keyed_answers_authentic(struct px_conn *c, const uint8_t *msg,
    size_t mlen, uint64_t sealed_id)
{
	int i, n = px_smb2_compound_count(msg, mlen);
	size_t off = 0;

	for (i = 0; i < n; i++) {
		struct smb2_hdr h;
		const struct px_pending *p;
		struct px_session *s;
		const char *why = NULL;
		const uint8_t *el = msg + off;
		char more[64];

		if (px_smb2_hdr_decode(msg, mlen, off, &h) == -1)
			return 0;       /* the relay judges what does not decode */
		off += h.elem_len;
		if (h.message_id == SMB2_NOTIFY_MESSAGE_ID ||
		    (h.status == NT_STATUS_PENDING &&
		    (h.flags & SMB2_FLAGS_ASYNC_COMMAND)))
			continue;       /* breaks and interims: not signed */
		if ((p = px_pending_find(&c->led, h.message_id)) == NULL ||
		    !acted_on(p))
			continue;
		/* an error answer carries nothing smbaccel keeps or serves,
		 * and a forged one can only fail what it answers (as an
		 * attacker on the path can by cutting the connection); smbd
		 * signs some with a key other than the session's (a deleted
		 * session, a compound it refuses), which clients accept.
		 * But END_OF_FILE to a READ is where the read caches take
		 * the file to end: checked as a success is */
		if ((h.status & 0xC0000000u) == 0xC0000000u &&
		    !(h.status == NT_STATUS_END_OF_FILE &&
		    p->command == SMB2_READ))
			continue;
		if ((s = px_session_find(&c->led, p->session_id)) == NULL ||
		    !s->keyed)
			continue;       /* nothing to check it with */
		if (sealed_id != 0) {
			if (sealed_id != p->session_id)
				why = "sealed under another session";
		} else
			why = plain_not_authentic(c, s, p, &h, el, h.elem_len);
		if (why == NULL)
			continue;
		px_stats.server_not_authentic++;
		if (px_lograte_ok(&srv_sig_rate, px_now_ms(), PX_LOGRATE_BURST,
		    PX_LOGRATE_MS))
			log_warnx("conn=%llu session=0x%llx the server's answer "
			    "to %s%s (mid=%llu status=0x%08x) is not authentic: "
			    "%s; closing the connection, as a client would, "
			    "rather than act on it%s", (unsigned long long)c->id,
			    (unsigned long long)s->id,
			    p->origin == PX_ORIGIN_PROXY ? "smbaccel's " : "",
			    px_smb2_cmd_name(p->command),
			    (unsigned long long)h.message_id, h.status, why,
			    px_lograte_more(&srv_sig_rate, more, sizeof(more)));
		return -1;
	}
	return 0;
}

int
px_keyed_sign(struct px_conn *c, uint64_t session_id, uint8_t *msg,
    size_t len, bool from_server)
{
	struct px_session *s = px_session_find(&c->led, session_id);

	if (s == NULL || !s->keyed)
		return -1;
	px_stats.signed_out++;
	return px_smb2_sign_ctx(ctx_of(s), &s->kx->keys, c->led.dialect,
	    c->led.signing_alg, msg, len, from_server, false);
}

/*
 * Plaintext buffers.  A sealed message is opened into a buffer kept from
 * one message to the next instead of a malloc per message.  Handling one
 * opened message may open another before it is done (a kick of a stalled
 * client frame from inside a server frame, another connection's frame
 * from a coherence kick), so buffers are lent, not shared: each message
 * takes one and gives it back with px_keyed_release().  At most
 * PLAIN_KEEP buffers are kept while no message holds them, each as large
 * as the largest message it held (an NBSS frame, 16 MiB at most).
 */
#define PLAIN_KEEP 2
#define PLAIN_MIN  (64 * 1024)

struct plain_buf {
	size_t cap;
	uint8_t data[];
};

static struct plain_buf *plain_pool[PLAIN_KEEP];

static uint8_t *
plain_take(size_t n)
{
	struct plain_buf *b, *nb;
	size_t cap;
	int i, best = -1;

	for (i = 0; i < PLAIN_KEEP; i++)
		if (plain_pool[i] != NULL && (best == -1 ||
		    (plain_pool[i]->cap >= n && plain_pool[best]->cap < n)))
			best = i;
	if (best != -1) {
		b = plain_pool[best];
		plain_pool[best] = NULL;
		if (b->cap >= n)
			return b->data;
		free(b);    /* too small; its bytes are not needed */
	}
	cap = n < PLAIN_MIN ? PLAIN_MIN : n;
	if ((nb = malloc(sizeof(*nb) + cap)) == NULL)
		return NULL;
	nb->cap = cap;
	return nb->data;
}

void
px_keyed_release(uint8_t *plain)
{
	struct plain_buf *b;
	int i;

	if (plain == NULL)
		return;
	b = (struct plain_buf *)(void *)(plain - offsetof(struct plain_buf,
	    data));
	for (i = 0; i < PLAIN_KEEP; i++)
		if (plain_pool[i] == NULL) {
			plain_pool[i] = b;
			return;
		}
	free(b);
}

static void
plain_pool_free(void)
{
	int i;

	for (i = 0; i < PLAIN_KEEP; i++) {
		free(plain_pool[i]);
		plain_pool[i] = NULL;
	}
}

/* The keyed session a sealed message (without its NBSS header) names. */
static struct px_session *
sealed_session(struct px_conn *c, const uint8_t *msg, size_t len)
{
	struct px_session *s;

	if (len <= PX_TRANSFORM_HDR_LEN)
		return NULL;
	s = px_session_find(&c->led, px_get_u64(msg + 44));
	if (s == NULL || !s->keyed || c->led.cipher == 0)
		return NULL;
	return s;
}

bool
px_keyed_sealed_by_keyed(struct px_conn *c, const uint8_t *msg, size_t len)
{
	return sealed_session(c, msg, len) != NULL;
}

int
px_keyed_peek(struct px_conn *c, const uint8_t *msg, size_t len,
    uint8_t *out, size_t n)
{
	struct px_session *s = sealed_session(c, msg, len);

	if (s == NULL)
		return -1;
	return px_smb2_peek_ctx(ctx_of(s), &s->kx->keys, c->led.cipher,
	    PX_C2S, msg, len, out, n);
}

/*
 * Decrypt a TRANSFORM message (without its NBSS header).  Returns the
 * plaintext (give it back with px_keyed_release) and its session, or NULL
 * when the session is not keyed or the message does not authenticate.
 */
uint8_t *
px_keyed_decrypt(struct px_conn *c, const uint8_t *msg, size_t len,
    bool from_server, size_t head, size_t *outlen, struct px_session **sp,
    bool *partial)
{
	struct px_session *s;
	enum px_key_dir dir = from_server ? PX_S2C : PX_C2S;
	uint8_t *out;
	int rc;

	*partial = false;
	if ((s = sealed_session(c, msg, len)) == NULL)
		return NULL;
	if ((out = plain_take(len - PX_TRANSFORM_HDR_LEN)) == NULL)
		return NULL;
	if (head > 0 && (c->led.cipher == PX_CIPHER_AES128_GCM ||
	    c->led.cipher == PX_CIPHER_AES256_GCM)) {
		rc = px_smb2_open_head_ctx(ctx_of(s), &s->kx->keys,
		    c->led.cipher, dir, msg, len, head, out, outlen);
		*partial = rc == 0;
	} else
		rc = px_smb2_decrypt_ctx(ctx_of(s), &s->kx->keys,
		    c->led.cipher, dir, msg, len, out, outlen);
	if (rc == -1) {
		px_keyed_release(out);
		log_warnx("conn=%llu session=0x%llx message from %s does not "
		    "decrypt", (unsigned long long)c->id,
		    (unsigned long long)s->id, from_server ? "server" : "client");
		return NULL;
	}
	if (*partial) {
		px_stats.decrypted_head_only++;
		px_stats.decrypt_skipped_bytes += *outlen - head;
	} else
		px_stats.decrypted_in++;
	*sp = s;
	return out;
}

int
px_keyed_seal(struct px_conn *c, enum px_end to, uint64_t session_id,
    const uint8_t *msg, size_t len, uint8_t *out)
{
	struct px_session *s = px_session_find(&c->led, session_id);
	bool to_client = to == PX_CLIENT;
	uint8_t nonce[16];

	if (s == NULL || !s->keyed || c->led.cipher == 0)
		return -1;
	if (px_nonce_next(to_client ? &s->kx->nonce_s2c : &s->kx->nonce_c2s,
	    nonce) == -1)
		return -1;
	if (px_smb2_encrypt_ctx(ctx_of(s), &s->kx->keys, c->led.cipher,
	    to_client ? PX_S2C : PX_C2S, session_id, nonce, msg, len,
	    out) == -1)
		return -1;
	px_stats.encrypted_out++;
	return 0;
}
