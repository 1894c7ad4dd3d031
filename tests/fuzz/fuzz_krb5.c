/*
 * fuzz_krb5.c - libFuzzer driver for the Kerberos parsers and the
 * acceptor (proxy/auth/krb5.c, keytab.c).
 *
 * The first input byte picks the target, the rest is its input:
 *   0  a SESSION_SETUP security buffer: px_krb_parse (SPNEGO, RFC 4121
 *      framing, AP-REQ / AP-REP / KRB-ERROR), then px_krb_accept_req with
 *      a fixed keytab and px_krb_session_key on the result
 *   1  EncTicketPart, 2  Authenticator, 3  EncAPRepPart plaintext, parsed
 *   4  an EncTicketPart plaintext encrypted here with the fixed service
 *      key and offered as a ticket, so that the decrypt-then-parse path of
 *      the acceptor runs on fuzzed plaintext; the same bytes, encrypted in
 *      the session key it yields (if any), as the authenticator and as the
 *      AP-REP enc-part
 * Inputs are copied into heap buffers of their exact length (ASan sees any
 * read past the end).  The promises of proxy/auth/auth.h are checked:
 * return codes in range, names NUL-terminated, EncryptedData windows
 * inside the buffer and bounded, keys bounded, failed parses leave no key.
 * Seeds (tests/fuzz/seeds/krb5/) are the test DC's captured tokens and
 * their decrypted parts (tests/fuzz/mkseeds_krb5.py).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/auth/auth.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct px_keytab *kt;
static struct px_krb_key svc;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct px_krb_key keys[3];
	uint32_t kvnos[3] = { 1, 1, 2 };
	char err[256];
	size_t i;

	(void)argc;
	(void)argv;
	if (px_krb_init(err, sizeof(err)) == -1) {
		fprintf(stderr, "fuzz_krb5: %s\n", err);
		abort();
	}
	memset(keys, 0, sizeof(keys));
	keys[0].enctype = PX_ENCTYPE_AES256_SHA1;
	keys[0].len = 32;
	keys[1].enctype = PX_ENCTYPE_AES128_SHA1;
	keys[1].len = 16;
	keys[2].enctype = PX_ENCTYPE_RC4_HMAC;
	keys[2].len = 16;
	for (i = 0; i < 3; i++)
		memset(keys[i].bytes, 0x40 + (int)i, keys[i].len);
	svc = keys[0];
	if ((kt = px_keytab_from_keys(keys, kvnos, NULL, 3)) == NULL)
		abort();
	return 0;
}

static void
check_str(const char *s, size_t n)
{
	if (memchr(s, '\0', n) == NULL)
		abort();
}

static void
check_enc(const struct px_krb_enc_data *e, const uint8_t *buf, size_t len)
{
	if (e->cipher == NULL)
		return;
	if (e->len == 0 || e->len > PX_KRB_CIPHER_MAX || e->cipher < buf ||
	    e->cipher + e->len > buf + len)
		abort();
}

static void
check_accept(const struct px_krb_accept *a, enum px_krb_result r)
{
	if (r < PX_KRB_R_OK || r > PX_KRB_R_ERROR || a->result != r)
		abort();
	check_str(a->client, sizeof(a->client));
	check_str(a->service, sizeof(a->service));
	if (r != PX_KRB_R_OK && (a->ticket_key.len != 0 || a->has_auth_subkey))
		abort();
	if (r == PX_KRB_R_OK && (a->ticket_key.len == 0 ||
	    a->ticket_key.len > PX_KRB_KEY_MAX ||
	    a->auth_subkey.len > PX_KRB_KEY_MAX))
		abort();
}

static void
session_key(const struct px_krb_accept *a, const struct px_krb_msg *rep)
{
	uint8_t key[PX_KRB_KEY_MAX];
	size_t kl = 99;
	enum px_krb_result r = px_krb_session_key(a, rep, key, &kl);

	if (r < PX_KRB_R_OK || r > PX_KRB_R_ERROR)
		abort();
	if ((r == PX_KRB_R_OK) != (kl != 0) || kl > PX_KRB_KEY_MAX)
		abort();
}

static void
target_token(const uint8_t *buf, size_t len)
{
	static struct px_krb_msg m;
	struct px_krb_accept a;
	enum px_krb_result r;
	int rc = px_krb_parse(buf, len, &m);

	if (rc < PX_NTLM_BAD || rc > PX_NTLM_OTHER)
		abort();
	check_str(m.realm, sizeof(m.realm));
	check_str(m.sname, sizeof(m.sname));
	check_str(m.sname_host, sizeof(m.sname_host));
	if (rc != PX_NTLM_OK) {
		if (m.type != PX_KRB_MSG_NONE && rc == PX_NTLM_OTHER)
			abort();
		return;
	}
	if (m.type == PX_KRB_MSG_NONE)
		abort();
	check_enc(&m.ticket, buf, len);
	check_enc(&m.authenticator, buf, len);
	check_enc(&m.enc_part, buf, len);
	r = px_krb_accept_req(&m, kt, &a);
	check_accept(&a, r);
	r = px_krb_accept_req(&m, NULL, &a);
	check_accept(&a, r);
	if (m.type == PX_KRB_MSG_AP_REQ && !m.user_to_user &&
	    r != PX_KRB_R_NO_KEYTAB)
		abort();
	session_key(&a, m.type == PX_KRB_MSG_AP_REP ? &m : NULL);
}

static void
target_part(int which, const uint8_t *buf, size_t len)
{
	struct px_krb_key k;
	char cname[PX_KRB_NAME_MAX];
	bool hs = true;
	int rc;

	memset(&k, 0xAA, sizeof(k));
	if (which == 1) {
		int64_t end = 0;

		rc = px_krb_parse_enc_ticket(buf, len, &k, cname,
		    sizeof(cname), &end);
		if (rc == 0)
			check_str(cname, sizeof(cname));
		if (rc == 0 && (k.len == 0 || k.len > PX_KRB_KEY_MAX))
			abort();
		/* 1970-01-01 to 9999-12-31 23:59:60 */
		if (rc == 0 && (end < 0 || end > 253402300800LL))
			abort();
	} else {
		rc = which == 2 ? px_krb_parse_authenticator(buf, len, &hs, &k) :
		    px_krb_parse_enc_ap_rep(buf, len, &hs, &k);
		if (rc == 0 && hs && (k.len == 0 || k.len > PX_KRB_KEY_MAX))
			abort();
	}
	if (rc != 0 && rc != -1)
		abort();
	if (rc == -1 && (k.len != 0 || (which != 1 && hs)))
		abort();   /* a failed parse leaves no key behind */
}

/* Encrypt buf as the EncryptedData of a message under key/usage. */
static uint8_t *
seal(const struct px_krb_key *key, int usage, const uint8_t *buf,
    size_t len, size_t *outlen)
{
	uint8_t *out;

	*outlen = len + 64;
	if ((out = malloc(*outlen)) == NULL)
		abort();
	if (px_krb_encrypt(key, usage, buf, len, out, outlen) == -1) {
		free(out);
		return NULL;
	}
	return out;
}

static void
target_encrypted(const uint8_t *buf, size_t len)
{
	struct px_krb_msg m, rep;
	struct px_krb_accept a;
	enum px_krb_result r;
	uint8_t *t, *au = NULL, *ar = NULL;
	size_t tn, an, rn;

	if (len > PX_KRB_CIPHER_MAX - 64 ||
	    (t = seal(&svc, PX_KRB_USAGE_TICKET, buf, len, &tn)) == NULL)
		return;
	memset(&m, 0, sizeof(m));
	m.mech = PX_MECH_KERBEROS;
	m.type = PX_KRB_MSG_AP_REQ;
	m.ap_options = PX_KRB_AP_MUTUAL_REQUIRED;
	m.ticket.etype = svc.enctype;
	m.ticket.has_kvno = true;
	m.ticket.kvno = 1;
	m.ticket.cipher = t;
	m.ticket.len = tn;
	/* first with an authenticator that cannot decrypt */
	m.authenticator = m.ticket;
	r = px_krb_accept_req(&m, kt, &a);
	check_accept(&a, r);
	if (r == PX_KRB_R_OK)
		abort();    /* the ticket bytes are no authenticator */
	if (r != PX_KRB_R_MALFORMED && r != PX_KRB_R_DECRYPT_FAILED)
		abort();
	if (r == PX_KRB_R_DECRYPT_FAILED) {
		/* the ticket parsed: its session key seals the rest */
		struct px_krb_key sk;
		char cname[PX_KRB_NAME_MAX];

		if (px_krb_parse_enc_ticket(buf, len, &sk, cname,
		    sizeof(cname), NULL) == -1)
			abort();
		if ((au = seal(&sk, PX_KRB_USAGE_AUTHENTICATOR, buf, len,
		    &an)) != NULL) {
			m.authenticator.etype = sk.enctype;
			m.authenticator.cipher = au;
			m.authenticator.len = an;
			r = px_krb_accept_req(&m, kt, &a);
			check_accept(&a, r);
			if (r == PX_KRB_R_OK &&
			    (ar = seal(&sk, PX_KRB_USAGE_AP_REP, buf, len,
			    &rn)) != NULL) {
				memset(&rep, 0, sizeof(rep));
				rep.type = PX_KRB_MSG_AP_REP;
				rep.enc_part.etype = sk.enctype;
				rep.enc_part.cipher = ar;
				rep.enc_part.len = rn;
				session_key(&a, &rep);
			}
		}
	}
	free(t);
	free(au);
	free(ar);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf;
	size_t n;

	if (size < 1)
		return 0;
	n = size - 1;
	if ((buf = malloc(n ? n : 1)) == NULL)
		return 0;
	memcpy(buf, data + 1, n);
	switch (data[0] % 5) {
	case 0:
		target_token(buf, n);
		break;
	case 1: case 2: case 3:
		target_part(data[0] % 5, buf, n);
		break;
	default:
		target_encrypted(buf, n);
		break;
	}
	free(buf);
	return 0;
}
