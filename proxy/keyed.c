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
 * A session for which no key can be had (no secret, wrong secret,
 * anonymous, guest, Kerberos) is simply not keyed: the relay then forwards
 * everything of it as is, and the reason is shown per session.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/keyed.h"
#include "proxy/auth/auth.h"

static struct px_secrets *secrets;
static bool crypto_ready;

int
px_keyed_load_secrets(const char *path)
{
	char err[512];
	struct px_secrets *n;

	if (path == NULL || *path == '\0') {
		px_secrets_free(secrets);
		secrets = NULL;
		return 0;
	}
	if (!crypto_ready) {
		if (px_crypto_init(err, sizeof(err)) == -1) {
			log_warnx("secrets: %s", err);
			return -1;
		}
		crypto_ready = true;
	}
	if ((n = px_secrets_load(path, err, sizeof(err))) == NULL) {
		log_warnx("secrets: %s", err);
		return -1;
	}
	px_secrets_free(secrets);
	secrets = n;
	log_info("secrets: %zu entries from %s", px_secrets_count(n), path);
	return 0;
}

static void plain_pool_free(void);

void
px_keyed_shutdown(void)
{
	px_secrets_free(secrets);
	secrets = NULL;
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

void
px_keyed_negotiate_rsp(struct px_conn *c, const uint8_t *msg, size_t len)
{
	/* MS-SMB2 3.2.5.2: only a 3.1.1 answer continues the hash */
	if (c->led.dialect != SMB2_DIALECT_0311)
		return;
	memcpy(c->led.preauth, c->led.preauth_req, 64);
	if (px_preauth_update(c->led.preauth, msg, len) == -1)
		log_warnx("conn=%llu preauth hash failed",
		    (unsigned long long)c->id);
}

void
px_keyed_setup_req(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t len, struct px_pending *p)
{
	struct px_session *s = h->session_id ?
	    px_session_find(&c->led, h->session_id) : NULL;
	struct smb2_session_setup_req sr;
	struct smb2_elem e = { msg, len };
	struct px_ntlm_auth *a;

	memcpy(p->u.sess.preauth, s ? s->preauth : c->led.preauth, 64);
	if (c->led.dialect == SMB2_DIALECT_0311 &&
	    px_preauth_update(p->u.sess.preauth, msg, len) == -1)
		return;
	if (px_smb2_session_setup_req_decode(&e, &sr) == -1 ||
	    (sr.flags & SMB2_SESSION_FLAG_BINDING) ||
	    (a = calloc(1, sizeof(*a))) == NULL)
		return;  /* a channel binding is never keyed (one nonce space
		          * per session would be needed across connections) */
	if (px_ntlm_parse_authenticate(sr.sec_buf, sr.sec_buf_len, a) ==
	    PX_NTLM_OK || a->mech == PX_MECH_KERBEROS)
		p->u.sess.auth = a;  /* kept to tell Kerberos from NTLM */
	else
		free(a);
}

static const char *
key_for(struct px_conn *c, struct px_session *s, struct px_pending *p,
    const struct smb2_hdr *h, const uint8_t *msg, size_t len)
{
	struct px_ntlm_auth *a = p->u.sess.auth;
	struct px_keyed *kx = s->kx;
	const uint8_t *nthash;
	uint8_t key[16];
	enum px_key_result kr;
	char dom[PX_NTLM_NAME_MAX];

	if (a == NULL || kx == NULL || !kx->have_chal)
		return a && a->mech == PX_MECH_KERBEROS ? "kerberos" :
		    "no-ntlm";
	if (s->guest)
		return "guest";
	if (s->anonymous || a->anonymous)
		return "anonymous";
	if (secrets == NULL)
		return "no-key";
	snprintf(dom, sizeof(dom), "%s", a->domain);
	if ((nthash = px_secrets_nthash(secrets, dom, a->user)) == NULL)
		return "no-key";
	kr = px_ntlm_session_key(&kx->chal, a, nthash, key);
	if (kr == PX_KEY_MISMATCH)
		return "key-mismatch";
	if (kr != PX_KEY_OK)
		return px_key_result_name(kr);
	if (px_smb_keys_derive(c->led.dialect, key, sizeof(key), s->preauth,
	    c->led.cipher, &kx->keys) == -1) {
		memset(key, 0, sizeof(key));
		return "kdf-failed";
	}
	memset(key, 0, sizeof(key));
	/* the final SESSION_SETUP response is signed by the server: it
	 * proves the key is the session's (MS-SMB2 3.3.5.5.3) */
	if ((h->flags & SMB2_FLAGS_SIGNED) &&
	    px_smb2_verify(&kx->keys, c->led.dialect, c->led.signing_alg, msg,
	    len, true, false) == -1)
		return "key-mismatch";
	if (c->led.cipher &&
	    (px_nonce_gen_init(&kx->nonce_s2c, c->led.cipher) == -1 ||
	    px_nonce_gen_init(&kx->nonce_c2s, c->led.cipher) == -1))
		return "nonce-init-failed";
	(void)a;
	return NULL;
}

void
px_keyed_setup_rsp(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t len, struct px_pending *p)
{
	struct px_session *s = px_session_find(&c->led, h->session_id);
	struct smb2_session_setup_rsp sr;
	struct smb2_elem e = { msg, len };
	const char *why;
	bool was;

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
		return;
	}
	if (h->status != NT_STATUS_SUCCESS)
		return;
	memcpy(s->preauth, p->u.sess.preauth, 64);
	was = s->keyed;
	why = key_for(c, s, p, h, msg, len);
	s->keyed = why == NULL;
	s->why_not = why;
	if (s->signing_required || s->encrypt) {
		if (s->keyed && !was)
			px_stats.sessions_keyed++;
		else if (!s->keyed)
			px_stats.sessions_unkeyed++;
	}
	if (s->keyed)
		log_info("conn=%llu session=0x%llx keyed dialect=%s signing=%s "
		    "encrypt=%s", (unsigned long long)c->id,
		    (unsigned long long)s->id, px_dialect_name(c->led.dialect),
		    s->signing_required ? "required" : "optional",
		    s->encrypt ? "yes" : "no");
	else if (s->signing_required || s->encrypt)
		log_info("conn=%llu session=0x%llx passthrough reason=%s "
		    "(signing %s, encryption %s)", (unsigned long long)c->id,
		    (unsigned long long)s->id, why,
		    s->signing_required ? "required" : "optional",
		    s->encrypt ? "required" : "off");
	/* the NTLM state is no longer needed */
	if (s->kx)
		s->kx->have_chal = false;
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
	log_warnx("conn=%llu session=0x%llx bad signature on %s: forwarded "
	    "for the server to judge", (unsigned long long)c->id,
	    (unsigned long long)s->id, px_smb2_cmd_name(command));
	return false;
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

/*
 * Decrypt a TRANSFORM message (without its NBSS header).  Returns the
 * plaintext (give it back with px_keyed_release) and its session, or NULL
 * when the session is not keyed or the message does not authenticate.
 */
uint8_t *
px_keyed_decrypt(struct px_conn *c, const uint8_t *msg, size_t len,
    bool from_server, size_t *outlen, struct px_session **sp)
{
	struct px_session *s;
	uint8_t *out;

	if (len <= PX_TRANSFORM_HDR_LEN)
		return NULL;
	s = px_session_find(&c->led, px_get_u64(msg + 44));
	if (s == NULL || !s->keyed || c->led.cipher == 0)
		return NULL;
	if ((out = plain_take(len - PX_TRANSFORM_HDR_LEN)) == NULL)
		return NULL;
	if (px_smb2_decrypt_ctx(ctx_of(s), &s->kx->keys, c->led.cipher,
	    from_server ? PX_S2C : PX_C2S, msg, len, out, outlen) == -1) {
		px_keyed_release(out);
		log_warnx("conn=%llu session=0x%llx message from %s does not "
		    "decrypt", (unsigned long long)c->id,
		    (unsigned long long)s->id, from_server ? "server" : "client");
		return NULL;
	}
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
