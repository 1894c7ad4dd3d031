/*
 * ntlm.c - NTLMSSP (MS-NLMP 2.2.1) parsing of the relayed SESSION_SETUP
 * security buffers (unwrapped from SPNEGO by spnego.c), and the NTLMv2
 * session key (MS-NLMP 3.3.2) that smbaccel derives from them with the
 * user's NT hash.
 *
 * The parsers read untrusted bytes: every NTLMSSP (length, offset) pair is
 * checked against the NTLMSSP message, and nothing is ever read outside
 * [buf, buf + len).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "proxy/auth/auth.h"
#include "proxy/auth/der.h"
#include "proxy/smb2/smb2.h"

const char *
px_key_result_name(enum px_key_result r)
{
	switch (r) {
	case PX_KEY_OK: return "ok";
	case PX_KEY_MISMATCH: return "key-mismatch";
	case PX_KEY_ANONYMOUS: return "anonymous";
	case PX_KEY_UNSUPPORTED: return "unsupported-auth";
	case PX_KEY_ERROR: return "crypto-error";
	}
	return "?";
}

/* ---- UTF-8 -> UTF-16LE, with the upper-casing NTOWFv2 needs ---------------- */

/*
 * Upper case of a BMP code point for NTOWFv2's UPPER(User).  Windows uses
 * its own upcase table; this covers ASCII, Latin-1, Latin Extended-A,
 * basic Greek and Cyrillic, which is what user names use in practice.  A
 * name outside it that Windows would upcase differently gives a
 * NTProofStr mismatch, i.e. an opaquely relayed session, never a wrong key.
 */
static uint32_t
upcase(uint32_t c)
{
	if (c >= 'a' && c <= 'z')
		return c - 32;
	if (c < 0xE0)
		return c;
	if (c <= 0xFE)
		return c == 0xF7 ? c : c - 32;
	if (c == 0xFF)
		return 0x178;
	if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) ||
	    (c >= 0x14A && c <= 0x177))
		return (c & 1) ? c - 1 : c;
	if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E))
		return (c & 1) ? c : c - 1;
	if ((c >= 0x3B1 && c <= 0x3C1) || (c >= 0x3C3 && c <= 0x3CB))
		return c - 32;
	if (c >= 0x430 && c <= 0x44F)
		return c - 32;
	if (c >= 0x450 && c <= 0x45F)
		return c - 80;
	return c;
}

/*
 * Append UTF-16LE of the UTF-8 string s[0..n) to out (cap bytes) at *pos.
 * Rejects invalid UTF-8 (overlongs, surrogates, > U+10FFFF).  0 or -1.
 */
static int
utf8_to_utf16le(const char *s, size_t n, bool upper, uint8_t *out,
    size_t cap, size_t *pos)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0, k, need;
	uint32_t c, min;

	while (i < n) {
		c = p[i];
		if (c < 0x80) {
			need = 0; min = 0;
		} else if ((c & 0xE0) == 0xC0) {
			need = 1; min = 0x80; c &= 0x1F;
		} else if ((c & 0xF0) == 0xE0) {
			need = 2; min = 0x800; c &= 0x0F;
		} else if ((c & 0xF8) == 0xF0) {
			need = 3; min = 0x10000; c &= 0x07;
		} else
			return -1;
		if (need > n - i - 1)
			return -1;
		for (k = 1; k <= need; k++) {
			if ((p[i + k] & 0xC0) != 0x80)
				return -1;
			c = (c << 6) | (p[i + k] & 0x3F);
		}
		i += need + 1;
		if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
			return -1;
		if (upper)
			c = upcase(c);
		if (c >= 0x10000) {
			if (cap - *pos < 4)
				return -1;
			c -= 0x10000;
			px_put_u16(out + *pos, (uint16_t)(0xD800 | (c >> 10)));
			px_put_u16(out + *pos + 2,
			    (uint16_t)(0xDC00 | (c & 0x3FF)));
			*pos += 4;
		} else {
			if (cap - *pos < 2)
				return -1;
			px_put_u16(out + *pos, (uint16_t)c);
			*pos += 2;
		}
	}
	return 0;
}

int
px_nt_hash(const char *password, size_t len, uint8_t out[16])
{
	uint8_t u16[2 * 1024 + 4];
	size_t n = 0;
	unsigned int outlen = 0;
	EVP_MD *md4 = NULL;
	char err[256];
	int ok;

	if (px_crypto_init(err, sizeof(err)) == -1)
		return -1;
	if (len > 1024 ||
	    utf8_to_utf16le(password, len, false, u16, sizeof(u16), &n) == -1)
		return -1;
	ok = (md4 = EVP_MD_fetch(NULL, "MD4", NULL)) != NULL &&
	    EVP_Digest(u16, n, out, &outlen, md4, NULL) == 1 && outlen == 16;
	EVP_MD_free(md4);
	OPENSSL_cleanse(u16, sizeof(u16));
	return ok ? 0 : -1;
}

int
px_user_id(const char *domain, const char *user, uint8_t id[16])
{
	uint8_t d[2 * PX_NTLM_NAME_MAX], u[2 * PX_NTLM_NAME_MAX];
	size_t dn = 0, un = 0;
	const void *parts[3];
	size_t lens[3];

	if (domain == NULL || user == NULL || user[0] == '\0' ||
	    utf8_to_utf16le(domain, strlen(domain), true, d, sizeof(d),
	    &dn) == -1 ||
	    utf8_to_utf16le(user, strlen(user), true, u, sizeof(u), &un) == -1)
		return -1;
	parts[0] = "user"; lens[0] = 4;
	parts[1] = d; lens[1] = dn;
	parts[2] = u; lens[2] = un;
	return px_digest16(parts, lens, 3, id);
}

int
px_user_id_principal(const char *principal, uint8_t id[16])
{
	char name[PX_NTLM_NAME_MAX];
	const char *at;
	size_t n;

	if (principal == NULL || (at = strrchr(principal, '@')) == NULL ||
	    at[1] == '\0' || (n = (size_t)(at - principal)) == 0 ||
	    n >= sizeof(name))
		return -1;
	memcpy(name, principal, n);
	name[n] = '\0';
	return px_user_id(at + 1, name, id);
}

/* ---- NTLMSSP (MS-NLMP 2.2.1) ---------------------------------------------- */

#define NTLM_NEGOTIATE    1
#define NTLM_CHALLENGE    2
#define NTLM_AUTHENTICATE 3

/*
 * A (Len, MaxLen, BufferOffset) field at m[at]: the buffer must lie inside
 * the message.  A zero-length buffer is accepted whatever its offset.
 */
static int
ntlm_field(const uint8_t *m, size_t mlen, size_t at, const uint8_t **p,
    size_t *n)
{
	uint16_t l = px_get_u16(m + at);
	uint32_t off = px_get_u32(m + at + 4);

	*n = l;
	*p = m + mlen;
	if (l == 0)
		return 0;
	if ((uint64_t)off + l > mlen)
		return -1;
	*p = m + off;
	return 0;
}

/* A name field (Unicode or OEM) into a NUL-terminated UTF-8 string. */
static int
ntlm_name(const uint8_t *m, size_t mlen, size_t at, bool unicode, char *dst,
    size_t cap)
{
	const uint8_t *p;
	size_t n, i;

	if (ntlm_field(m, mlen, at, &p, &n) == -1)
		return -1;
	if (unicode)
		return (n % 2 == 0 &&
		    px_utf16le_to_utf8(p, n, dst, cap) == 0) ? 0 : -1;
	/* OEM code page: only accept ASCII, which is the same everywhere. */
	if (n >= cap)
		return -1;
	for (i = 0; i < n; i++) {
		if (p[i] == 0 || p[i] >= 0x80)
			return -1;
		dst[i] = (char)p[i];
	}
	dst[n] = '\0';
	return 0;
}

int
px_ntlm_parse_challenge(const uint8_t *buf, size_t len,
    struct px_ntlm_challenge *out)
{
	struct px_gss_tok g;
	const uint8_t *m, *p;
	size_t mlen, n;

	memset(out, 0, sizeof(*out));
	if (px_gss_unwrap(buf, len, &g) == -1)
		return PX_NTLM_BAD;
	out->mech = g.mech;
	if (g.mech != PX_MECH_NTLMSSP)
		return PX_NTLM_OTHER;
	m = g.tok;
	mlen = g.toklen;
	if (mlen < 12)
		return PX_NTLM_BAD;
	out->ntlm_type = px_get_u32(m + 8);
	if (out->ntlm_type != NTLM_CHALLENGE)
		return PX_NTLM_OTHER;
	/*
	 * Signature, MessageType, TargetNameFields, NegotiateFlags,
	 * ServerChallenge, Reserved, TargetInfoFields: 48 bytes.  Version
	 * (8 bytes) follows only with NEGOTIATE_VERSION; not needed.
	 */
	if (mlen < 48 || ntlm_field(m, mlen, 12, &p, &n) == -1 ||
	    ntlm_field(m, mlen, 40, &p, &n) == -1) {
		memset(out, 0, sizeof(*out));
		out->mech = g.mech;
		out->ntlm_type = NTLM_CHALLENGE;
		return PX_NTLM_BAD;
	}
	out->flags = px_get_u32(m + 20);
	memcpy(out->server_challenge, m + 24, 8);
	return PX_NTLM_OK;
}

int
px_ntlm_parse_authenticate(const uint8_t *buf, size_t len,
    struct px_ntlm_auth *out)
{
	struct px_gss_tok g;
	const uint8_t *m, *p;
	size_t mlen, n;
	bool unicode;

	memset(out, 0, sizeof(*out));
	if (px_gss_unwrap(buf, len, &g) == -1)
		return PX_NTLM_BAD;
	out->mech = g.mech;
	if (g.mech != PX_MECH_NTLMSSP)
		return PX_NTLM_OTHER;
	m = g.tok;
	mlen = g.toklen;
	if (mlen < 12)
		return PX_NTLM_BAD;
	out->ntlm_type = px_get_u32(m + 8);
	if (out->ntlm_type != NTLM_AUTHENTICATE)
		return PX_NTLM_OTHER;
	/*
	 * Fixed part (2.2.1.3): LmChallengeResponseFields @12,
	 * NtChallengeResponseFields @20, DomainNameFields @28,
	 * UserNameFields @36, WorkstationFields @44,
	 * EncryptedRandomSessionKeyFields @52, NegotiateFlags @60; Version and
	 * MIC may follow.
	 */
	if (mlen < 64)
		goto bad;
	out->flags = px_get_u32(m + 60);
	unicode = (out->flags & PX_NTLMSSP_NEGOTIATE_UNICODE) != 0;
	if (ntlm_field(m, mlen, 12, &p, &n) == -1 ||        /* LM */
	    ntlm_field(m, mlen, 44, &p, &n) == -1 ||        /* Workstation */
	    ntlm_name(m, mlen, 28, unicode, out->domain,
	    sizeof(out->domain)) == -1 ||
	    ntlm_name(m, mlen, 36, unicode, out->user,
	    sizeof(out->user)) == -1)
		goto bad;
	if (ntlm_field(m, mlen, 20, &p, &n) == -1)
		goto bad;
	out->nt_response_len = n;
	/* NTLMv2 (2.2.2.8): NTProofStr (16) + client challenge (>= 28). */
	if (n >= 16 + 28) {
		if (n - 16 > sizeof(out->blob))
			goto bad;
		memcpy(out->nt_proof, p, 16);
		out->blob_len = n - 16;
		memcpy(out->blob, p + 16, out->blob_len);
	}
	if (ntlm_field(m, mlen, 52, &p, &n) == -1 || (n != 0 && n != 16))
		goto bad;
	if (n == 16) {
		out->has_enc_key = true;
		memcpy(out->enc_session_key, p, 16);
	}
	/* 3.1.5.1.2 / 3.2.5.1.2: anonymous is empty user and NT response. */
	out->anonymous = (out->user[0] == '\0' && out->nt_response_len == 0) ||
	    (out->flags & PX_NTLMSSP_NEGOTIATE_ANONYMOUS) != 0;
	return PX_NTLM_OK;
bad:
	OPENSSL_cleanse(out, sizeof(*out));
	out->mech = g.mech;
	out->ntlm_type = NTLM_AUTHENTICATE;
	return PX_NTLM_BAD;
}

void
px_ntlm_auth_wipe(struct px_ntlm_auth *a)
{
	if (a == NULL)
		return;
	OPENSSL_cleanse(a->nt_proof, sizeof(a->nt_proof));
	OPENSSL_cleanse(a->blob, sizeof(a->blob));
	OPENSSL_cleanse(a->enc_session_key, sizeof(a->enc_session_key));
	a->nt_response_len = 0;
	a->blob_len = 0;
	a->has_enc_key = false;
}

/* ---- NTLMv2 session key (MS-NLMP 3.3.2, 3.2.5.1.2) ------------------------- */

/* HMAC_MD5(key, a || b) into out[16]. */
static int
hmac_md5(const uint8_t key[16], const uint8_t *a, size_t alen,
    const uint8_t *b, size_t blen, uint8_t out[16])
{
	EVP_MAC *mac;
	EVP_MAC_CTX *c = NULL;
	OSSL_PARAM p[2];
	size_t n = 0;
	int ok;

	p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)(uintptr_t)"MD5", 0);
	p[1] = OSSL_PARAM_construct_end();
	ok = (mac = EVP_MAC_fetch(NULL, "HMAC", NULL)) != NULL &&
	    (c = EVP_MAC_CTX_new(mac)) != NULL &&
	    EVP_MAC_init(c, key, 16, p) == 1 &&
	    EVP_MAC_update(c, a, alen) == 1 &&
	    (blen == 0 || EVP_MAC_update(c, b, blen) == 1) &&
	    EVP_MAC_final(c, out, &n, 16) == 1 && n == 16;
	EVP_MAC_CTX_free(c);
	EVP_MAC_free(mac);
	return ok ? 0 : -1;
}

/* RC4K(key, in[16]) (MS-NLMP 6). */
static int
rc4_16(const uint8_t key[16], const uint8_t in[16], uint8_t out[16])
{
	EVP_CIPHER *rc4;
	EVP_CIPHER_CTX *c = NULL;
	int n = 0, ok;

	ok = (rc4 = EVP_CIPHER_fetch(NULL, "RC4", NULL)) != NULL &&
	    (c = EVP_CIPHER_CTX_new()) != NULL &&
	    EVP_EncryptInit_ex2(c, rc4, NULL, NULL, NULL) == 1 &&
	    EVP_CIPHER_CTX_set_key_length(c, 16) == 1 &&
	    EVP_EncryptInit_ex2(c, NULL, key, NULL, NULL) == 1 &&
	    EVP_EncryptUpdate(c, out, &n, in, 16) == 1 && n == 16;
	EVP_CIPHER_CTX_free(c);
	EVP_CIPHER_free(rc4);
	return ok ? 0 : -1;
}

enum px_key_result
px_ntlm_session_key(const struct px_ntlm_challenge *c,
    const struct px_ntlm_auth *a, const uint8_t nthash[16],
    uint8_t session_key[16])
{
	uint8_t userdom[4 * 2 * PX_NTLM_NAME_MAX];
	uint8_t rkey[16], proof[16], base[16];
	size_t n = 0;
	uint32_t both;
	enum px_key_result r = PX_KEY_ERROR;
	char err[256];

	if (c == NULL || a == NULL || nthash == NULL || session_key == NULL)
		return PX_KEY_ERROR;
	if (a->mech != PX_MECH_NTLMSSP || c->mech != PX_MECH_NTLMSSP ||
	    a->ntlm_type != NTLM_AUTHENTICATE ||
	    c->ntlm_type != NTLM_CHALLENGE)
		return PX_KEY_UNSUPPORTED;
	if (a->anonymous)
		return PX_KEY_ANONYMOUS;
	/* NTLMv1 (24-byte response), LM-only or anything shorter. */
	if (a->blob_len < 28 || a->nt_response_len != 16 + a->blob_len)
		return PX_KEY_UNSUPPORTED;
	both = c->flags & a->flags;
	if ((both & PX_NTLMSSP_NEGOTIATE_KEY_EXCH) &&
	    (a->flags & (PX_NTLMSSP_NEGOTIATE_SIGN |
	    PX_NTLMSSP_NEGOTIATE_SEAL)) && !a->has_enc_key)
		return PX_KEY_UNSUPPORTED;
	if (px_crypto_init(err, sizeof(err)) == -1)
		return PX_KEY_ERROR;

	/* ResponseKeyNT = HMAC_MD5(NThash, UTF16LE(UPPER(User) || UserDom)) */
	if (utf8_to_utf16le(a->user, strlen(a->user), true, userdom,
	    sizeof(userdom), &n) == -1 ||
	    utf8_to_utf16le(a->domain, strlen(a->domain), false, userdom,
	    sizeof(userdom), &n) == -1) {
		r = PX_KEY_UNSUPPORTED;
		goto out;
	}
	if (hmac_md5(nthash, userdom, n, NULL, 0, rkey) == -1)
		goto out;
	/* NTProofStr = HMAC_MD5(ResponseKeyNT, ServerChallenge || temp) */
	if (hmac_md5(rkey, c->server_challenge, 8, a->blob, a->blob_len,
	    proof) == -1)
		goto out;
	if (CRYPTO_memcmp(proof, a->nt_proof, 16) != 0) {
		r = PX_KEY_MISMATCH;
		goto out;
	}
	/* SessionBaseKey = HMAC_MD5(ResponseKeyNT, NTProofStr); for NTLMv2
	 * KeyExchangeKey = SessionBaseKey (3.4.5.1). */
	if (hmac_md5(rkey, proof, 16, NULL, 0, base) == -1)
		goto out;
	if ((both & PX_NTLMSSP_NEGOTIATE_KEY_EXCH) &&
	    (a->flags & (PX_NTLMSSP_NEGOTIATE_SIGN |
	    PX_NTLMSSP_NEGOTIATE_SEAL))) {
		if (rc4_16(base, a->enc_session_key, session_key) == -1)
			goto out;
	} else
		memcpy(session_key, base, 16);
	r = PX_KEY_OK;
out:
	OPENSSL_cleanse(userdom, sizeof(userdom));
	OPENSSL_cleanse(rkey, sizeof(rkey));
	OPENSSL_cleanse(proof, sizeof(proof));
	OPENSSL_cleanse(base, sizeof(base));
	return r;
}
