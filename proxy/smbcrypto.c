/*
 * smbcrypto.c - OpenSSL set-up, SMB 2/3 key derivation, message signing,
 * TRANSFORM_HEADER encryption, the preauth integrity hash and the nonce
 * generator (MS-SMB2 3.1.4.1, 3.1.4.2, 3.1.4.3, 2.2.41).
 *
 * Algorithms are fetched once (px_crypto_init) and kept for the life of
 * the process; each operation makes a short-lived EVP context, so that a
 * failure in one leaves no state behind.  Lengths handed to OpenSSL are
 * ints: every public entry checks them against PX_TRANSFORM_MAX_MSG or the
 * NBSS maximum first.
 */
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#include "proxy/keys.h"
#include "proxy/smb2.h"

#define SIG_OFF  48          /* MS-SMB2 2.2.1: Signature */
#define MSGID_OFF 24
#define FLAGS_OFF 16

/* ---- initialisation ------------------------------------------------------- */

static struct {
	bool done;
	OSSL_PROVIDER *legacy, *deflt;
	EVP_MD *sha512;
	EVP_MAC *hmac, *cmac, *gmac;
	EVP_KDF *kbkdf;
	EVP_CIPHER *ccm128, *gcm128, *ccm256, *gcm256;
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
	else if (px_alg.cmac == NULL &&
	    (px_alg.cmac = EVP_MAC_fetch(NULL, "CMAC", NULL)) == NULL)
		what = "CMAC";
	else if (px_alg.gmac == NULL &&
	    (px_alg.gmac = EVP_MAC_fetch(NULL, "GMAC", NULL)) == NULL)
		what = "GMAC";
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
