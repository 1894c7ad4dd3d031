/*
 * smbcrypto.c - OpenSSL set-up, SMB 2/3 key derivation, message signing,
 * TRANSFORM_HEADER encryption, the preauth integrity hash and the nonce
 * generator (MS-SMB2 3.1.4.1, 3.1.4.2, 3.1.4.3, 2.2.41).
 *
 * Algorithms are fetched once (px_crypto_init) and kept for the life of
 * the process.  Signing and sealing keep one OpenSSL context per key in a
 * struct px_smb_ctx (one per session), reset per message (AES-CMAC's
 * state is carried over and cancelled instead, see cmac_*), and drop a
 * context whose operation failed, so that a failure leaves no state
 * behind; the functions without _ctx use a context for one message.
 * Lengths handed to OpenSSL are ints: every public entry checks them
 * against PX_TRANSFORM_MAX_MSG or the NBSS maximum first.
 */
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/modes.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#include "proxy/auth/auth.h"
#include "proxy/smb2/smb2.h"

#define SIG_OFF  48          /* MS-SMB2 2.2.1: Signature */
#define MSGID_OFF 24
#define FLAGS_OFF 16

/* ---- initialisation ------------------------------------------------------- */

static struct {
	bool done;
	OSSL_PROVIDER *legacy, *deflt;
	EVP_MD *sha512;
	EVP_MAC *hmac;
	EVP_KDF *kbkdf;
	EVP_CIPHER *ccm128, *gcm128, *ccm256, *gcm256;
	EVP_CIPHER *cbc128;          /* AES-CMAC's block cipher (cmac_*) */
	EVP_CIPHER *ecb128;          /* AES-GMAC's block cipher (gmac_*) */
	EVP_CIPHER *ecb256;          /* AES-256-GCM's, for gcm_auth_* */
} px_alg;

/* Last OpenSSL error as text, for init messages. */
static const char *
ossl_reason(void)
{
	static char buf[256];
	unsigned long e = ERR_peek_last_error();

	if (e == 0)
		return "no OpenSSL error queued";
	ERR_error_string_n(e, buf, sizeof(buf));
	return buf;
}

int
px_crypto_init(char *err, size_t errlen)
{
	EVP_MD *md4 = NULL;
	EVP_CIPHER *rc4 = NULL;
	const char *what = NULL;

	if (px_alg.done)
		return 0;
	ERR_clear_error();
	/*
	 * Loading any provider explicitly disables the implicit fall-back to
	 * "default", so both are loaded.
	 */
	if (px_alg.legacy == NULL &&
	    (px_alg.legacy = OSSL_PROVIDER_load(NULL, "legacy")) == NULL) {
		snprintf(err, errlen, "OpenSSL legacy provider unavailable "
		    "(needed for MD4 and RC4 of NTLM): %s; check that "
		    "ossl-modules/legacy.so is installed and that "
		    "OPENSSL_MODULES, if set, points at it", ossl_reason());
		return -1;
	}
	if (px_alg.deflt == NULL &&
	    (px_alg.deflt = OSSL_PROVIDER_load(NULL, "default")) == NULL) {
		snprintf(err, errlen, "OpenSSL default provider unavailable: "
		    "%s", ossl_reason());
		return -1;
	}
	/* Check now that the legacy algorithms really are there. */
	if ((md4 = EVP_MD_fetch(NULL, "MD4", NULL)) == NULL)
		what = "MD4 (legacy provider)";
	else if ((rc4 = EVP_CIPHER_fetch(NULL, "RC4", NULL)) == NULL)
		what = "RC4 (legacy provider)";
	else if (px_alg.sha512 == NULL &&
	    (px_alg.sha512 = EVP_MD_fetch(NULL, "SHA512", NULL)) == NULL)
		what = "SHA512";
	else if (px_alg.hmac == NULL &&
	    (px_alg.hmac = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL)
		what = "HMAC";
	else if (px_alg.kbkdf == NULL &&
	    (px_alg.kbkdf = EVP_KDF_fetch(NULL, "KBKDF", NULL)) == NULL)
		what = "KBKDF";
	else if (px_alg.ccm128 == NULL && (px_alg.ccm128 =
	    EVP_CIPHER_fetch(NULL, "AES-128-CCM", NULL)) == NULL)
		what = "AES-128-CCM";
	else if (px_alg.gcm128 == NULL && (px_alg.gcm128 =
	    EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL)) == NULL)
		what = "AES-128-GCM";
	else if (px_alg.ccm256 == NULL && (px_alg.ccm256 =
	    EVP_CIPHER_fetch(NULL, "AES-256-CCM", NULL)) == NULL)
		what = "AES-256-CCM";
	else if (px_alg.gcm256 == NULL && (px_alg.gcm256 =
	    EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL)) == NULL)
		what = "AES-256-GCM";
	else if (px_alg.cbc128 == NULL && (px_alg.cbc128 =
	    EVP_CIPHER_fetch(NULL, "AES-128-CBC", NULL)) == NULL)
		what = "AES-128-CBC";
	else if (px_alg.ecb128 == NULL && (px_alg.ecb128 =
	    EVP_CIPHER_fetch(NULL, "AES-128-ECB", NULL)) == NULL)
		what = "AES-128-ECB";
	else if (px_alg.ecb256 == NULL && (px_alg.ecb256 =
	    EVP_CIPHER_fetch(NULL, "AES-256-ECB", NULL)) == NULL)
		what = "AES-256-ECB";
	EVP_MD_free(md4);
	EVP_CIPHER_free(rc4);
	if (what != NULL) {
		snprintf(err, errlen, "OpenSSL cannot provide %s: %s", what,
		    ossl_reason());
		return -1;
	}
	px_alg.done = true;
	return 0;
}

/* Lazy init for the operations below; the message is lost (the daemon
 * has already called px_crypto_init and reported it). */
static bool
ready(void)
{
	char err[256];

	return px_alg.done || px_crypto_init(err, sizeof(err)) == 0;
}

/* ---- preauth integrity (MS-SMB2 3.2.5.2, 3.3.5.4) -------------------------- */

int
px_preauth_update(uint8_t hash[PX_PREAUTH_LEN], const uint8_t *msg,
    size_t len)
{
	EVP_MD_CTX *c;
	unsigned int n = 0;
	int ok;

	if (!ready() || (msg == NULL && len != 0))
		return -1;
	if ((c = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestInit_ex2(c, px_alg.sha512, NULL) == 1 &&
	    EVP_DigestUpdate(c, hash, PX_PREAUTH_LEN) == 1 &&
	    EVP_DigestUpdate(c, msg, len) == 1 &&
	    EVP_DigestFinal_ex(c, hash, &n) == 1 && n == PX_PREAUTH_LEN;
	EVP_MD_CTX_free(c);
	return ok ? 0 : -1;
}

int
px_digest16(const void *const *parts, const size_t *lens, unsigned int n,
    uint8_t out[16])
{
	uint8_t md[64], len4[4];
	EVP_MD_CTX *c;
	unsigned int i, mdlen = 0;
	int ok;

	if (!ready() || (n > 0 && (parts == NULL || lens == NULL)))
		return -1;
	if ((c = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestInit_ex2(c, px_alg.sha512, NULL) == 1;
	for (i = 0; ok && i < n; i++) {
		if (lens[i] > UINT32_MAX || (lens[i] && parts[i] == NULL)) {
			ok = 0;
			break;
		}
		len4[0] = (uint8_t)lens[i];
		len4[1] = (uint8_t)(lens[i] >> 8);
		len4[2] = (uint8_t)(lens[i] >> 16);
		len4[3] = (uint8_t)(lens[i] >> 24);
		ok = EVP_DigestUpdate(c, len4, 4) == 1 &&
		    (lens[i] == 0 || EVP_DigestUpdate(c, parts[i], lens[i]) == 1);
	}
	ok = ok && EVP_DigestFinal_ex(c, md, &mdlen) == 1 && mdlen == 64;
	EVP_MD_CTX_free(c);
	if (ok)
		memcpy(out, md, 16);
	explicit_bzero(md, sizeof(md));
	return ok ? 0 : -1;
}

/* ---- key derivation (MS-SMB2 3.1.4.2) -------------------------------------- */

/*
 * SP800-108 counter mode, PRF HMAC-SHA256, r = 32, L = 8 * outlen:
 * K(1) = PRF(KI, [1]_4 || Label || 0x00 || Context || [L]_4).  The SMB
 * labels already end in a NUL, so two zero bytes follow the label text.
 */
static int
kdf(const uint8_t *ki, size_t kilen, const char *label, size_t labellen,
    const uint8_t *ctx, size_t ctxlen, uint8_t *out, size_t outlen)
{
	EVP_KDF_CTX *k;
	OSSL_PARAM p[7];
	int ok;

	if ((k = EVP_KDF_CTX_new(px_alg.kbkdf)) == NULL)
		return -1;
	/* OSSL_PARAM wants non-const pointers; nothing here is written. */
	p[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MODE,
	    (char *)(uintptr_t)"counter", 0);
	p[1] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MAC,
	    (char *)(uintptr_t)"HMAC", 0);
	p[2] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
	    (char *)(uintptr_t)"SHA256", 0);
	p[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
	    (void *)(uintptr_t)ki, kilen);
	p[4] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
	    (void *)(uintptr_t)label, labellen);
	p[5] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
	    (void *)(uintptr_t)ctx, ctxlen);
	p[6] = OSSL_PARAM_construct_end();
	ok = EVP_KDF_derive(k, out, outlen, p) == 1;
	EVP_KDF_CTX_free(k);
	return ok ? 0 : -1;
}

/* Label and context strings, terminating NUL included (MS-SMB2 3.2.5.3.1). */
#define LBL(s) s, sizeof(s)

static bool
cipher_known(uint16_t c)
{
	return c >= PX_CIPHER_AES128_CCM && c <= PX_CIPHER_AES256_GCM;
}

static size_t
cipher_key_len(uint16_t c)
{
	return (c == PX_CIPHER_AES256_CCM || c == PX_CIPHER_AES256_GCM) ?
	    32 : 16;
}

int
px_smb_keys_derive(uint16_t dialect, const uint8_t *session_key,
    size_t session_key_len, const uint8_t preauth[PX_PREAUTH_LEN],
    uint16_t cipher, struct px_smb_keys *out)
{
	uint8_t sk[16];     /* Session.SessionKey: first 16 bytes, 0-padded */
	const uint8_t *ck;  /* key for the cipher keys */
	size_t cklen, n;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!ready() || session_key == NULL || session_key_len == 0 ||
	    session_key_len > 64)
		return -1;
	memset(sk, 0, sizeof(sk));
	memcpy(sk, session_key, session_key_len < 16 ? session_key_len : 16);
	out->dialect = dialect;

	switch (dialect) {
	case SMB2_DIALECT_0202:
	case SMB2_DIALECT_0210:
		/* 3.2.5.3.1: Session.SigningKey = Session.SessionKey. */
		if (cipher != PX_CIPHER_NONE)
			goto fail;
		memcpy(out->signing, sk, 16);
		rc = 0;
		break;
	case SMB2_DIALECT_0300:
	case SMB2_DIALECT_0302:
		/* 3.0.x has one cipher, AES-128-CCM, and no FullSessionKey. */
		if (cipher != PX_CIPHER_NONE && cipher != PX_CIPHER_AES128_CCM)
			goto fail;
		out->cipher = PX_CIPHER_AES128_CCM;
		out->cipher_key_len = 16;
		if (kdf(sk, 16, LBL("SMB2AESCMAC"), (const uint8_t *)"SmbSign",
		    sizeof("SmbSign"), out->signing, 16) == -1 ||
		    kdf(sk, 16, LBL("SMB2AESCCM"), (const uint8_t *)"ServerIn ",
		    sizeof("ServerIn "), out->c2s, 16) == -1 ||
		    kdf(sk, 16, LBL("SMB2AESCCM"), (const uint8_t *)"ServerOut",
		    sizeof("ServerOut"), out->s2c, 16) == -1)
			goto fail;
		rc = 0;
		break;
	case SMB2_DIALECT_0311:
		if (preauth == NULL ||
		    (cipher != PX_CIPHER_NONE && !cipher_known(cipher)))
			goto fail;
		if (kdf(sk, 16, LBL("SMBSigningKey"), preauth, PX_PREAUTH_LEN,
		    out->signing, 16) == -1)
			goto fail;
		if (cipher != PX_CIPHER_NONE) {
			/*
			 * 3.2.5.3.1: AES-256 cipher keys come from
			 * Session.FullSessionKey (the whole GSS key: 16 bytes
			 * for NTLM, where it equals SessionKey; 32 for an AES
			 * Kerberos ticket) with L = 256 (3.1.4.2).
			 */
			n = cipher_key_len(cipher);
			ck = n == 32 ? session_key : sk;
			cklen = n == 32 ? session_key_len : 16;
			if (kdf(ck, cklen, LBL("SMBC2SCipherKey"), preauth,
			    PX_PREAUTH_LEN, out->c2s, n) == -1 ||
			    kdf(ck, cklen, LBL("SMBS2CCipherKey"), preauth,
			    PX_PREAUTH_LEN, out->s2c, n) == -1)
				goto fail;
			out->cipher = cipher;
			out->cipher_key_len = n;
		}
		rc = 0;
		break;
	default:
		break;
	}
fail:
	OPENSSL_cleanse(sk, sizeof(sk));
	if (rc == -1)
		OPENSSL_cleanse(out, sizeof(*out));
	return rc;
}

void
px_smb_keys_wipe(struct px_smb_keys *k)
{
	if (k != NULL)
		OPENSSL_cleanse(k, sizeof(*k));
}

/* ---- per-session contexts --------------------------------------------------- */

/*
 * A session signs, verifies, seals and opens thousands of messages under
 * the same few keys, so each key gets one OpenSSL context, set up on first
 * use (algorithm fetched, parameters parsed, key schedule and, for GCM,
 * the GHASH tables computed) and only reset per message: EVP_MAC_init
 * without a key restarts the MAC under the key it holds, and
 * EVP_CipherInit_ex2 with only an IV restarts the cipher, and GMAC's
 * CRYPTO_gcm128_setiv restarts GHASH.
 *
 * Every slot remembers the key (and algorithm) it was set up with and
 * compares it on each use, so a key that changed under it (a session
 * re-authenticated, a test swapping keys) sets the slot up again: a stale
 * key is never used, whoever changed the keys.  A slot whose operation
 * failed (a bad tag, an OpenSSL error) is dropped rather than reused in an
 * unknown state.  One MAC slot (the signing key serves both directions;
 * the GMAC nonce carries the direction) and four cipher slots: per key
 * (C2S, S2C) one context that encrypts and one that decrypts; with
 * AES-GCM, per key also one that authenticates without decrypting
 * (px_smb2_open_head_ctx).
 */

/*
 * OpenSSL's GCM mode (openssl/modes.h: the GHASH code OpenSSL's own GCM
 * cipher runs, carry-less multiply) over an AES-ECB context of ours for
 * the few single blocks it asks for (H at set-up, the tag's mask, the
 * counter blocks of what is decrypted through it).
 */
struct ecb_gcm {
	EVP_CIPHER_CTX *ecb;
	GCM128_CONTEXT *g;          /* H, its GHASH table, the state */
	bool block_failed;          /* an AES block call failed */
};

struct mac_slot {
	EVP_MAC_CTX *c;             /* HMAC-SHA256 */
	EVP_CIPHER_CTX *cc;         /* AES-CMAC: AES-128-CBC (cmac_*) */
	struct ecb_gcm gm;          /* AES-GMAC (gmac_*) */
	uint16_t alg;
	uint8_t key[16];
	uint8_t k1[16], k2[16];     /* AES-CMAC subkeys */
	uint8_t last[16];           /* AES-CMAC: the block held back */
	size_t nlast;
	uint8_t chain[16];          /* AES-CMAC: the CBC state left in cc */
};

struct aead_slot {
	EVP_CIPHER_CTX *c;
	uint16_t cipher;
	uint8_t key[32];
};

/* AES-GCM opened through modes.h to authenticate without decrypting
 * (px_smb2_open_head_ctx, px_smb2_peek_ctx) */
struct gcm_auth_slot {
	struct ecb_gcm eg;
	uint16_t cipher;
	uint8_t key[32];
};

struct px_smb_ctx {
	struct mac_slot mac;
	struct aead_slot aead[2][2];    /* [enum px_key_dir][encrypt] */
	struct gcm_auth_slot gauth[2];  /* [enum px_key_dir] */
};

static void
ecb_gcm_drop(struct ecb_gcm *eg)
{
	EVP_CIPHER_CTX_free(eg->ecb);
	if (eg->g != NULL)
		CRYPTO_gcm128_release(eg->g);   /* wipes H and its table */
	OPENSSL_cleanse(eg, sizeof(*eg));
}

static void
mac_drop(struct mac_slot *m)
{
	EVP_MAC_CTX_free(m->c);
	EVP_CIPHER_CTX_free(m->cc);
	ecb_gcm_drop(&m->gm);
	OPENSSL_cleanse(m, sizeof(*m));
}

static void
gcm_auth_drop(struct gcm_auth_slot *a)
{
	ecb_gcm_drop(&a->eg);
	OPENSSL_cleanse(a, sizeof(*a));
}

static void
aead_drop(struct aead_slot *a)
{
	EVP_CIPHER_CTX_free(a->c);
	OPENSSL_cleanse(a, sizeof(*a));
}

/* Free every context (wiping the keys kept) and leave x empty. */
static void
ctx_clear(struct px_smb_ctx *x)
{
	int d, e;

	mac_drop(&x->mac);
	for (d = 0; d < 2; d++) {
		for (e = 0; e < 2; e++)
			aead_drop(&x->aead[d][e]);
		gcm_auth_drop(&x->gauth[d]);
	}
}

struct px_smb_ctx *
px_smb_ctx_new(void)
{
	return calloc(1, sizeof(struct px_smb_ctx));
}

void
px_smb_ctx_free(struct px_smb_ctx *x)
{
	if (x == NULL)
		return;
	ctx_clear(x);
	free(x);
}

/*
 * AES-CMAC (RFC 4493, NIST SP 800-38B) on top of OpenSSL's AES-128-CBC.
 * OpenSSL 3.0's own CMAC runs the cipher once per 16-byte block, and the
 * calls cost more than the AES itself (a third of the time of a signed
 * 1 MiB WRITE went to them).  CMAC is CBC encryption under IV 0 of which
 * only the last block is kept, with that block first XORed with subkey
 * K1 (if complete) or padded with 10* and XORed with K2: so every block
 * but the last goes through EVP_EncryptUpdate in bulk, into scratch
 * space that is thrown away, and the last one is held back until the
 * end.  The context is not reset per message (resetting its IV through
 * EVP cost about 1,200 instructions, as much as the AES of a 1 KiB
 * message): CBC's state is the last block it put out, which smbaccel
 * knows (L after the set-up, then each message's tag), and XORing that
 * into a message's first block before it goes in cancels it, the same as
 * starting from IV 0.  Checked against RFC 4493's examples and against
 * OpenSSL's CMAC on every length, message after message on one context
 * (tests/unit/test_crypto.c).
 */
#define CMAC_BURST 16384
#define CMAC_WHOLE 2048     /* smb2_mac copies a message up to this whole */

/* One bit to the left across the block; 0x87 folded in (RFC 4493 2.3). */
static void
cmac_dbl(const uint8_t in[16], uint8_t out[16])
{
	uint8_t carry = in[0] >> 7;
	int i;

	for (i = 0; i < 15; i++)
		out[i] = (uint8_t)(in[i] << 1 | in[i + 1] >> 7);
	out[15] = (uint8_t)(in[15] << 1);
	out[15] ^= (uint8_t)(0x87 & -carry);
}

/* CBC over n bytes (whole blocks), the ciphertext dropped. */
static bool
cmac_blocks(struct mac_slot *m, const uint8_t *p, size_t n)
{
	uint8_t scratch[CMAC_BURST];
	int outl;

	while (n > 0) {
		size_t k = n < sizeof(scratch) ? n : sizeof(scratch);

		if (EVP_EncryptUpdate(m->cc, scratch, &outl, p, (int)k) != 1 ||
		    (size_t)outl != k)
			return false;
		p += k;
		n -= k;
	}
	OPENSSL_cleanse(scratch, 16);
	return true;
}

static bool
cmac_setup(struct mac_slot *m, const uint8_t key[16])
{
	static const uint8_t zero[16];
	uint8_t l[16];
	int outl;
	bool ok;

	if ((m->cc = EVP_CIPHER_CTX_new()) == NULL)
		return false;
	/* L = AES(K, 0^128): one CBC block under IV 0 (2.3) */
	ok = EVP_EncryptInit_ex2(m->cc, px_alg.cbc128, key, zero, NULL) == 1 &&
	    EVP_CIPHER_CTX_set_padding(m->cc, 0) == 1 &&
	    EVP_EncryptUpdate(m->cc, l, &outl, zero, 16) == 1 && outl == 16;
	if (ok) {
		cmac_dbl(l, m->k1);
		cmac_dbl(m->k1, m->k2);
		memcpy(m->chain, l, 16);    /* the CBC state L leaves */
	}
	OPENSSL_cleanse(l, sizeof(l));
	return ok;
}

static void
xor16(uint8_t *a, const uint8_t *b)
{
	int i;

	for (i = 0; i < 16; i++)
		a[i] ^= b[i];
}

/* A new message, whose first block (a copy the caller may change) the
 * state left in the context is cancelled in; wipe it after use. */
static void
cmac_start(struct mac_slot *m, uint8_t first[16])
{
	m->nlast = 0;
	xor16(first, m->chain);
}

static bool
cmac_update(struct mac_slot *m, const uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t k;

		if (m->nlast == 16) {
			/* more follows: the held block is not the last */
			if (!cmac_blocks(m, m->last, 16))
				return false;
			m->nlast = 0;
		}
		if (m->nlast > 0 || n <= 16) {
			k = 16 - m->nlast < n ? 16 - m->nlast : n;
			memcpy(m->last + m->nlast, p, k);
			m->nlast += k;
		} else {
			/* whole blocks, keeping back the last 1..16 bytes */
			k = (n - 1) / 16 * 16;
			if (!cmac_blocks(m, p, k))
				return false;
		}
		p += k;
		n -= k;
	}
	return true;
}

static bool
cmac_final(struct mac_slot *m, uint8_t tag[16])
{
	const uint8_t *sub = m->nlast == 16 ? m->k1 : m->k2;
	int outl;

	if (m->nlast < 16) {
		m->last[m->nlast] = 0x80;
		memset(m->last + m->nlast + 1, 0, 15 - m->nlast);
	}
	xor16(m->last, sub);
	m->nlast = 0;
	if (EVP_EncryptUpdate(m->cc, tag, &outl, m->last, 16) != 1 ||
	    outl != 16)
		return false;
	memcpy(m->chain, tag, 16);      /* the state the next message cancels */
	return true;
}

/* The AES block function OpenSSL's GCM mode calls (struct ecb_gcm). */
static void
ecb_gcm_block(const unsigned char in[16], unsigned char out[16],
    const void *arg)
{
	/* handed to CRYPTO_gcm128_new as a void * */
	struct ecb_gcm *eg = (struct ecb_gcm *)(uintptr_t)arg;
	int outl = 0;

	if (EVP_EncryptUpdate(eg->ecb, out, &outl, in, 16) != 1 || outl != 16) {
		eg->block_failed = true;
		memset(out, 0, 16);
	}
}

static bool
ecb_gcm_setup(struct ecb_gcm *eg, const EVP_CIPHER *ecb, const uint8_t *key)
{
	eg->block_failed = false;
	if ((eg->ecb = EVP_CIPHER_CTX_new()) == NULL ||
	    EVP_EncryptInit_ex2(eg->ecb, ecb, key, NULL, NULL) != 1 ||
	    EVP_CIPHER_CTX_set_padding(eg->ecb, 0) != 1)
		return false;
	/* computes H through ecb_gcm_block */
	eg->g = CRYPTO_gcm128_new(eg, ecb_gcm_block);
	return eg->g != NULL && !eg->block_failed;
}

/*
 * AES-GMAC (MS-SMB2 3.1.4.1): GCM over additional data only, through
 * OpenSSL's GCM mode interface (openssl/modes.h, the code OpenSSL's own
 * GCM cipher runs, with the same carry-less multiply GHASH).  Set up
 * once per key: H = AES(K, 0) and GHASH's table.  Per message: a new
 * 12-byte IV (one AES block, for the tag's mask), the message as AAD,
 * the tag.  The AES blocks come from an AES-128-ECB context, two per
 * message at most.  Through EVP the same message cost about 3,400
 * instructions for a 1 KiB WRITE and 2,500 for its 80-byte answer, two
 * thirds of it the IV reset and the tag read through EVP's parameter
 * layer; here 1,600 and 700 (docs/performance.md).
 */
static bool
gmac_setup(struct mac_slot *m, const uint8_t key[16])
{
	return ecb_gcm_setup(&m->gm, px_alg.ecb128, key);
}

static bool
gmac_start(struct mac_slot *m, const uint8_t iv[12])
{
	CRYPTO_gcm128_setiv(m->gm.g, iv, 12);
	return !m->gm.block_failed;
}

static bool
gmac_update(struct mac_slot *m, const uint8_t *p, size_t n)
{
	return CRYPTO_gcm128_aad(m->gm.g, p, n) == 0;
}

static bool
gmac_final(struct mac_slot *m, uint8_t tag[16])
{
	CRYPTO_gcm128_tag(m->gm.g, tag, 16);
	return !m->gm.block_failed;
}

/* The slot m set up for alg under key, if it holds another; NULL on
 * failure. */
static struct mac_slot *
mac_get(struct mac_slot *m, uint16_t alg, const uint8_t key[16])
{
	EVP_MAC *mac;
	OSSL_PARAM p[2];

	if ((m->c != NULL || m->cc != NULL || m->gm.g != NULL) &&
	    m->alg == alg &&
	    memcmp(m->key, key, 16) == 0)
		return m;
	mac_drop(m);
	if (alg == PX_SIGN_AES_CMAC || alg == PX_SIGN_AES_GMAC) {
		if (!(alg == PX_SIGN_AES_CMAC ? cmac_setup(m, key) :
		    gmac_setup(m, key))) {
			mac_drop(m);
			return NULL;
		}
		m->alg = alg;
		memcpy(m->key, key, 16);
		return m;
	}
	mac = px_alg.hmac;
	p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)(uintptr_t)"SHA256", 0);
	p[1] = OSSL_PARAM_construct_end();
	if ((m->c = EVP_MAC_CTX_new(mac)) == NULL)
		return NULL;
	if (EVP_MAC_init(m->c, key, 16, p) != 1) {
		mac_drop(m);
		return NULL;
	}
	m->alg = alg;
	memcpy(m->key, key, 16);
	return m;
}

/* ---- signing (MS-SMB2 3.1.4.1) --------------------------------------------- */

/*
 * MAC of one element with its signature field taken as zero, without
 * writing to it: the MAC is fed a copy of the header with 16 zero bytes
 * at 48, then [64, len).
 * x NULL: a context for this message only.
 */
static int
smb2_mac(struct px_smb_ctx *x, const struct px_smb_keys *k, uint16_t dialect,
    uint16_t alg, const uint8_t *msg, size_t len, bool from_server,
    bool is_cancel, uint8_t sig[16])
{
	struct px_smb_ctx once;
	struct mac_slot *m;
	uint8_t iv[12], head[SMB2_HDR_LEN], out[EVP_MAX_MD_SIZE];
	uint8_t whole[CMAC_WHOLE];
	size_t outlen = 0;
	int ok;

	if (!ready() || k == NULL || msg == NULL || len < SMB2_HDR_LEN ||
	    len > PX_NBSS_MAX || dialect != k->dialect)
		return -1;
	switch (dialect) {
	case SMB2_DIALECT_0202:
	case SMB2_DIALECT_0210:
		alg = PX_SIGN_HMAC_SHA256;
		break;
	case SMB2_DIALECT_0300:
	case SMB2_DIALECT_0302:
		alg = PX_SIGN_AES_CMAC;
		break;
	case SMB2_DIALECT_0311:
		if (alg > PX_SIGN_AES_GMAC)
			return -1;
		break;
	default:
		return -1;
	}
	if (x == NULL) {
		memset(&once, 0, sizeof(once));
		x = &once;
	}
	/* 3.1.4.1: nonce = MessageId || 32-bit flags word, LE. */
	memcpy(iv, msg + MSGID_OFF, 8);
	px_put_u32(iv + 8, (from_server ? 1u : 0u) | (is_cancel ? 2u : 0u));
	/* the header with its signature zeroed, then the rest as it is */
	memcpy(head, msg, SIG_OFF);
	memset(head + SIG_OFF, 0, SMB2_HDR_LEN - SIG_OFF);
	if ((m = mac_get(&x->mac, alg, k->signing)) == NULL)
		ok = false;
	else if (alg == PX_SIGN_AES_CMAC) {
		/* the header copy, or a small message copied whole (two
		 * cipher calls, not five), then the rest as it is */
		uint8_t *first = head;
		size_t nfirst = SMB2_HDR_LEN, rest = SMB2_HDR_LEN;

		if (len <= sizeof(whole)) {
			memcpy(whole, head, SMB2_HDR_LEN);
			memcpy(whole + SMB2_HDR_LEN, msg + SMB2_HDR_LEN,
			    len - SMB2_HDR_LEN);
			first = whole;
			nfirst = rest = len;
		}
		cmac_start(m, first);
		ok = cmac_update(m, first, nfirst) &&
		    cmac_update(m, msg + rest, len - rest) &&
		    cmac_final(m, out);
		OPENSSL_cleanse(first, 16);     /* it held the CBC state */
	}
	else if (alg == PX_SIGN_AES_GMAC)
		ok = gmac_start(m, iv) && gmac_update(m, head, SMB2_HDR_LEN) &&
		    gmac_update(m, msg + SMB2_HDR_LEN, len - SMB2_HDR_LEN) &&
		    gmac_final(m, out);
	else
		ok = EVP_MAC_init(m->c, NULL, 0, NULL) == 1 &&
		    EVP_MAC_update(m->c, head, SMB2_HDR_LEN) == 1 &&
		    EVP_MAC_update(m->c, msg + SMB2_HDR_LEN,
		    len - SMB2_HDR_LEN) == 1 &&
		    EVP_MAC_final(m->c, out, &outlen, sizeof(out)) == 1 &&
		    outlen >= 16;
	if (!ok || x == &once)
		mac_drop(&x->mac);
	if (ok)
		memcpy(sig, out, 16);
	OPENSSL_cleanse(out, sizeof(out));
	return ok ? 0 : -1;
}

int
px_smb2_sign_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t dialect, uint16_t signing_alg, uint8_t *msg, size_t len,
    bool from_server, bool is_cancel)
{
	uint8_t sig[16];

	if (msg == NULL || len < SMB2_HDR_LEN)
		return -1;
	/* The flag is covered by the MAC: set it first. */
	px_put_u32(msg + FLAGS_OFF,
	    px_get_u32(msg + FLAGS_OFF) | SMB2_FLAGS_SIGNED);
	if (smb2_mac(x, k, dialect, signing_alg, msg, len, from_server,
	    is_cancel, sig) == -1)
		return -1;
	memcpy(msg + SIG_OFF, sig, sizeof(sig));
	return 0;
}

int
px_smb2_verify_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t dialect, uint16_t signing_alg, const uint8_t *msg, size_t len,
    bool from_server, bool is_cancel)
{
	uint8_t sig[16];

	if (smb2_mac(x, k, dialect, signing_alg, msg, len, from_server,
	    is_cancel, sig) == -1)
		return -1;
	return CRYPTO_memcmp(sig, msg + SIG_OFF, sizeof(sig)) == 0 ? 0 : -1;
}

int
px_smb2_sign(const struct px_smb_keys *k, uint16_t dialect,
    uint16_t signing_alg, uint8_t *msg, size_t len, bool from_server,
    bool is_cancel)
{
	return px_smb2_sign_ctx(NULL, k, dialect, signing_alg, msg, len,
	    from_server, is_cancel);
}

int
px_smb2_verify(const struct px_smb_keys *k, uint16_t dialect,
    uint16_t signing_alg, const uint8_t *msg, size_t len, bool from_server,
    bool is_cancel)
{
	return px_smb2_verify_ctx(NULL, k, dialect, signing_alg, msg, len,
	    from_server, is_cancel);
}

/* ---- encryption (MS-SMB2 3.1.4.3, 2.2.41) ---------------------------------- */

#define TF_SIG    4
#define TF_NONCE  20
#define TF_SIZE   36
#define TF_FLAGS  42
#define TF_SESS   44
#define TF_AAD_LEN 32

static const EVP_CIPHER *
cipher_of(uint16_t c, bool *ccm)
{
	*ccm = c == PX_CIPHER_AES128_CCM || c == PX_CIPHER_AES256_CCM;
	switch (c) {
	case PX_CIPHER_AES128_CCM: return px_alg.ccm128;
	case PX_CIPHER_AES128_GCM: return px_alg.gcm128;
	case PX_CIPHER_AES256_CCM: return px_alg.ccm256;
	case PX_CIPHER_AES256_GCM: return px_alg.gcm256;
	default: return NULL;
	}
}

/*
 * The cipher context of one key and direction of work, set up if the
 * slot holds another cipher or key.  The IV length (11 bytes CCM, 12 GCM)
 * and CCM's tag length are fixed before the key, as OpenSSL's CCM wants
 * them when it takes the key.
 */
static EVP_CIPHER_CTX *
aead_get(struct aead_slot *a, uint16_t cipher, const EVP_CIPHER *ci,
    bool ccm, bool enc, const uint8_t *key, size_t keylen)
{
	if (a->c != NULL && a->cipher == cipher &&
	    memcmp(a->key, key, keylen) == 0)
		return a->c;
	aead_drop(a);
	if ((a->c = EVP_CIPHER_CTX_new()) == NULL)
		return NULL;
	if (EVP_CipherInit_ex2(a->c, ci, NULL, NULL, enc ? 1 : 0, NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(a->c, EVP_CTRL_AEAD_SET_IVLEN, ccm ? 11 : 12,
	    NULL) != 1 ||
	    (ccm && EVP_CIPHER_CTX_ctrl(a->c, EVP_CTRL_AEAD_SET_TAG, 16,
	    NULL) != 1) ||
	    EVP_CipherInit_ex2(a->c, NULL, key, NULL, -1, NULL) != 1) {
		aead_drop(a);
		return NULL;
	}
	a->cipher = cipher;
	memcpy(a->key, key, keylen);
	return a->c;
}

/*
 * One AEAD pass over hdr (the 52-byte transform header; its bytes 20..51
 * are the AAD, its Signature receives or supplies the tag).  CCM needs the
 * total length before the AAD and its tag before the data (OpenSSL's CCM
 * interface); GCM takes the tag at the end.  x NULL: a context for this
 * message only.
 */
static int
aead(struct px_smb_ctx *x, const struct px_smb_keys *k, uint16_t cipher,
    enum px_key_dir dir, bool enc, uint8_t *hdr, const uint8_t *in,
    size_t len, uint8_t *out)
{
	const EVP_CIPHER *ci;
	struct px_smb_ctx once;
	struct aead_slot *slot;
	EVP_CIPHER_CTX *c;
	bool ccm;
	int n, ok;

	if (!ready() || k == NULL || cipher != k->cipher ||
	    k->cipher_key_len == 0 || len == 0 || len > PX_TRANSFORM_MAX_MSG ||
	    (dir != PX_C2S && dir != PX_S2C))
		return -1;
	if ((ci = cipher_of(cipher, &ccm)) == NULL ||
	    (size_t)EVP_CIPHER_get_key_length(ci) != k->cipher_key_len)
		return -1;
	if (x == NULL) {
		memset(&once, 0, sizeof(once));
		x = &once;
	}
	slot = &x->aead[dir][enc ? 1 : 0];
	c = aead_get(slot, cipher, ci, ccm, enc, dir == PX_C2S ? k->c2s :
	    k->s2c, k->cipher_key_len);
	ok = c != NULL;
	/* decrypting CCM checks the tag inside the data update */
	if (ok && ccm && !enc)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, 16,
		    hdr + TF_SIG) == 1;
	ok = ok && EVP_CipherInit_ex2(c, NULL, NULL, hdr + TF_NONCE, -1,
	    NULL) == 1;
	if (ok && ccm)
		ok = EVP_CipherUpdate(c, NULL, &n, NULL, (int)len) == 1;
	ok = ok && EVP_CipherUpdate(c, NULL, &n, hdr + TF_NONCE,
	    TF_AAD_LEN) == 1;
	ok = ok && EVP_CipherUpdate(c, out, &n, in, (int)len) == 1 &&
	    (size_t)n == len;
	if (ok && !ccm && !enc)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, 16,
		    hdr + TF_SIG) == 1;
	/* GCM checks the tag here; it writes no bytes. */
	if (ok && !ccm)
		ok = EVP_CipherFinal_ex(c, out + len, &n) == 1 && n == 0;
	if (ok && enc)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16,
		    hdr + TF_SIG) == 1;
	if (!ok || x == &once)
		aead_drop(slot);
	return ok ? 0 : -1;
}

int
px_smb2_encrypt_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t cipher, enum px_key_dir dir, uint64_t session_id,
    const uint8_t nonce[16], const uint8_t *msg, size_t len, uint8_t *out)
{
	uint8_t hdr[PX_TRANSFORM_HDR_LEN];

	if (msg == NULL || out == NULL || nonce == NULL ||
	    len > PX_TRANSFORM_MAX_MSG)
		return -1;
	/* Built aside: with out + 52 == msg, out[0..52) is free, but the
	 * caller's buffer is not written until the cipher has run. */
	hdr[0] = 0xFD;
	memcpy(hdr + 1, "SMB", 3);
	memset(hdr + TF_SIG, 0, 16);
	memcpy(hdr + TF_NONCE, nonce, 16);
	px_put_u32(hdr + TF_SIZE, (uint32_t)len);
	px_put_u16(hdr + 40, 0);                /* Reserved */
	px_put_u16(hdr + TF_FLAGS, 0x0001);     /* Encrypted */
	px_put_u64(hdr + TF_SESS, session_id);
	if (aead(x, k, cipher, dir, true, hdr, msg, len,
	    out + PX_TRANSFORM_HDR_LEN) == -1)
		return -1;
	memcpy(out, hdr, sizeof(hdr));
	return 0;
}

/* A TRANSFORM_HEADER px_smb2_decrypt accepts; *n: the payload's length. */
static bool
tf_valid(const uint8_t *in, size_t len, size_t *n)
{
	*n = len - PX_TRANSFORM_HDR_LEN;
	return in[0] == 0xFD && memcmp(in + 1, "SMB", 3) == 0 &&
	    px_get_u16(in + TF_FLAGS) == 0x0001 &&
	    px_get_u32(in + TF_SIZE) == *n && *n <= PX_TRANSFORM_MAX_MSG;
}

int
px_smb2_decrypt_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t cipher, enum px_key_dir dir, const uint8_t *in, size_t len,
    uint8_t *out, size_t *outlen)
{
	uint8_t hdr[PX_TRANSFORM_HDR_LEN];
	size_t n;

	if (outlen != NULL)
		*outlen = 0;
	if (in == NULL || out == NULL || outlen == NULL ||
	    len <= PX_TRANSFORM_HDR_LEN)
		return -1;
	if (!tf_valid(in, len, &n))
		return -1;
	memcpy(hdr, in, sizeof(hdr));   /* out may overwrite in + 52 on */
	if (aead(x, k, cipher, dir, false, hdr, in + PX_TRANSFORM_HDR_LEN, n,
	    out) == -1) {
		OPENSSL_cleanse(out, n);
		return -1;
	}
	*outlen = n;
	return 0;
}

/*
 * AES-GCM's tag is GHASH over the AAD and the *ciphertext* (NIST SP
 * 800-38D 7.2), so a GCM message can be authenticated whole without
 * decrypting it: only the first bytes, which say what the message is,
 * need the cipher.  (CCM's tag is a CBC-MAC of the plaintext: it cannot.)
 * The GHASH comes from OpenSSL's GCM mode (openssl/modes.h) over an
 * AES-ECB context of ours; CRYPTO_gcm128_decrypt_ctr32 hashes the
 * ciphertext it is given and leaves the counter mode to the function it
 * is handed, here one that does nothing: the bulk of out is left as it
 * was (at most the 15 bytes of a last partial block are written, with
 * their plaintext).
 */
static void
ctr_none(const unsigned char *in, unsigned char *out, size_t blocks,
    const void *key, const unsigned char ivec[16])
{
	(void)in;
	(void)out;
	(void)blocks;
	(void)key;
	(void)ivec;
}

/* The GCM slot of x for dir under k's key, set up if it holds another;
 * NULL for a CCM cipher or on failure. */
static struct gcm_auth_slot *
gcm_auth_get(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t cipher, enum px_key_dir dir)
{
	const EVP_CIPHER *ecb;
	const uint8_t *key;
	struct gcm_auth_slot *a;

	if (!ready() || x == NULL || k == NULL || cipher != k->cipher ||
	    (dir != PX_C2S && dir != PX_S2C))
		return NULL;
	if (cipher == PX_CIPHER_AES128_GCM && k->cipher_key_len == 16)
		ecb = px_alg.ecb128;
	else if (cipher == PX_CIPHER_AES256_GCM && k->cipher_key_len == 32)
		ecb = px_alg.ecb256;
	else
		return NULL;
	a = &x->gauth[dir];
	key = dir == PX_C2S ? k->c2s : k->s2c;
	if (a->eg.g != NULL && a->cipher == cipher &&
	    memcmp(a->key, key, k->cipher_key_len) == 0)
		return a;
	gcm_auth_drop(a);
	if (!ecb_gcm_setup(&a->eg, ecb, key)) {
		gcm_auth_drop(a);
		return NULL;
	}
	a->cipher = cipher;
	memcpy(a->key, key, k->cipher_key_len);
	return a;
}

/* The GCM slot for the TRANSFORM message in[0..len), started on its
 * nonce; *n: the payload's length.  NULL if it cannot be opened so. */
static struct gcm_auth_slot *
gcm_auth_start(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t cipher, enum px_key_dir dir, const uint8_t *in, size_t len,
    size_t *n)
{
	struct gcm_auth_slot *a;

	if (in == NULL || len <= PX_TRANSFORM_HDR_LEN || !tf_valid(in, len, n) ||
	    (a = gcm_auth_get(x, k, cipher, dir)) == NULL)
		return NULL;
	CRYPTO_gcm128_setiv(a->eg.g, in + TF_NONCE, 12);
	return a;
}

int
px_smb2_peek_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t cipher, enum px_key_dir dir, const uint8_t *in, size_t len,
    uint8_t *out, size_t head)
{
	struct gcm_auth_slot *a;
	size_t n;

	if (out == NULL ||
	    (a = gcm_auth_start(x, k, cipher, dir, in, len, &n)) == NULL)
		return -1;
	if (head > n)
		return -1;
	if (CRYPTO_gcm128_decrypt(a->eg.g, in + PX_TRANSFORM_HDR_LEN, out,
	    head) != 0 || a->eg.block_failed) {
		OPENSSL_cleanse(out, head);
		gcm_auth_drop(a);
		return -1;
	}
	return 0;
}

int
px_smb2_open_head_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t cipher, enum px_key_dir dir, const uint8_t *in, size_t len,
    size_t head, uint8_t *out, size_t *outlen)
{
	struct gcm_auth_slot *a;
	const uint8_t *c;
	size_t n;
	bool ok;

	if (outlen != NULL)
		*outlen = 0;
	if (out == NULL || outlen == NULL ||
	    (a = gcm_auth_start(x, k, cipher, dir, in, len, &n)) == NULL)
		return -1;
	if (head > n)
		head = n;
	c = in + PX_TRANSFORM_HDR_LEN;
	ok = CRYPTO_gcm128_aad(a->eg.g, in + TF_NONCE, TF_AAD_LEN) == 0 &&
	    CRYPTO_gcm128_decrypt(a->eg.g, c, out, head) == 0 &&
	    CRYPTO_gcm128_decrypt_ctr32(a->eg.g, c + head, out + head,
	    n - head, ctr_none) == 0 &&
	    !a->eg.block_failed &&
	    CRYPTO_gcm128_finish(a->eg.g, in + TF_SIG, 16) == 0;
	if (!ok) {
		OPENSSL_cleanse(out, head);
		gcm_auth_drop(a);
		return -1;
	}
	*outlen = n;
	return 0;
}

int
px_smb2_encrypt(const struct px_smb_keys *k, uint16_t cipher,
    enum px_key_dir dir, uint64_t session_id, const uint8_t nonce[16],
    const uint8_t *msg, size_t len, uint8_t *out)
{
	return px_smb2_encrypt_ctx(NULL, k, cipher, dir, session_id, nonce,
	    msg, len, out);
}

int
px_smb2_decrypt(const struct px_smb_keys *k, uint16_t cipher,
    enum px_key_dir dir, const uint8_t *in, size_t len, uint8_t *out,
    size_t *outlen)
{
	return px_smb2_decrypt_ctx(NULL, k, cipher, dir, in, len, out, outlen);
}

/* ---- nonces (MS-SMB2 3.1.4.3, 2.2.41) -------------------------------------- */

/*
 * Why smbaccel's nonces do not repeat under a key.
 *
 * The two cipher keys of a session are distinct (different KDF labels).
 * Under C2S the client encrypts its requests and smbaccel encrypts the
 * requests it writes itself (coalesced WRITEs, read-ahead READs, rewritten
 * requests); under S2C the server encrypts its responses and smbaccel
 * encrypts the responses it synthesises.  So under each key there are
 * exactly two encryptors: smbaccel and one peer whose nonce scheme
 * smbaccel does not choose.  (With multichannel, several connections of
 * the same session share the keys: hence one generator per session and
 * direction, not per connection.)
 *
 * Nonce layout used here (first 8 bytes read as a little-endian u64 V,
 * then a salt, then zeros up to 16 bytes as the spec requires):
 *     V    = 2^63 | next,    next = random start + count, count < 2^62,
 *            start drawn below 2^62, so V never wraps;
 *     salt = 3 random bytes (CCM, 11-byte nonce) or 4 (GCM, 12 bytes).
 *
 * (1) smbaccel against itself: V is strictly increasing within one
 *     generator, so one generator never repeats.  Two generators for the
 *     same key (only by misuse, or after a restart that re-derives the
 *     same key, which cannot happen: keys die with the session) would need
 *     overlapping ranges and equal salts.
 * (2) Against a counter-based peer: Samba (smbd and its client) puts a
 *     64-bit little-endian message counter starting near 1 in the first
 *     8 bytes and random bytes after it; Windows is, as far as public
 *     captures show, counter based too.  Such a counter stays below 2^63,
 *     so its nonces and ours differ in bit 63 of V: no collision at all,
 *     whatever the salts, for the first 2^63 peer messages.
 * (3) Against a peer drawing random nonces per message (Linux cifs does):
 *     each of its M nonces equals one of our q nonces with probability at
 *     most q / 2^88 (CCM; 2^96 for GCM), so M * q / 2^88 in all; for
 *     M = q = 2^32 that is 2^-24 (CCM) and 2^-32 (GCM).  The peer's own
 *     birthday bound, M^2 / 2^89, is of the same order: smbaccel adds no
 *     more risk than the peer already accepts.
 * The generator refuses after 2^62 nonces (never reached in practice).
 */
#define NONCE_TOP  (UINT64_C(1) << 63)
#define NONCE_SPAN (UINT64_C(1) << 62)

int
px_nonce_gen_init(struct px_nonce_gen *g, uint16_t cipher)
{
	uint8_t r[8];

	memset(g, 0, sizeof(*g));
	if (!cipher_known(cipher) || !ready())
		return -1;
	if (RAND_bytes(r, sizeof(r)) != 1 ||
	    RAND_bytes(g->salt, sizeof(g->salt)) != 1)
		return -1;
	g->cipher = cipher;
	g->next = px_get_u64(r) & (NONCE_SPAN - 1);
	g->left = NONCE_SPAN;
	if (cipher == PX_CIPHER_AES128_CCM || cipher == PX_CIPHER_AES256_CCM)
		g->salt[3] = 0;
	OPENSSL_cleanse(r, sizeof(r));
	return 0;
}

int
px_nonce_next(struct px_nonce_gen *g, uint8_t nonce[16])
{
	bool ccm;

	memset(nonce, 0, 16);
	if (!cipher_known(g->cipher) || g->left == 0)
		return -1;
	ccm = g->cipher == PX_CIPHER_AES128_CCM ||
	    g->cipher == PX_CIPHER_AES256_CCM;
	px_put_u64(nonce, NONCE_TOP | g->next);
	memcpy(nonce + 8, g->salt, ccm ? 3 : 4);
	g->next++;
	g->left--;
	return 0;
}
