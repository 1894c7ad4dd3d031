/*
 * fuzz_ntlm.c - libFuzzer driver for the SESSION_SETUP security buffer
 * parsers (SPNEGO DER, NTLMSSP CHALLENGE and AUTHENTICATE) and for the
 * TRANSFORM_HEADER checks of px_smb2_decrypt.
 *
 * The input is one security buffer, as tests/fuzz/seeds/ntlm holds them.
 * It is copied into a heap buffer of exactly its length so that ASan sees
 * any read past the end, then handed to both parsers.  The results are
 * checked for the promises of proxy/auth/auth.h (return codes, NUL-terminated names,
 * blob inside its array, fields zero unless OK); an AUTHENTICATE that
 * parses also goes through px_ntlm_session_key against a fixed CHALLENGE.
 * The same bytes are then offered to px_smb2_decrypt under each cipher,
 * and, through one context kept across all inputs (px_smb2_*_ctx), to
 * decryption and signature checks, after each of which a message sealed
 * and signed through that context must still open and verify: no input
 * may leave a kept context in a bad state.
 *
 *   clang -fsanitize=fuzzer,address,undefined -std=gnu11 -D_GNU_SOURCE \
 *       -I. tests/fuzz/fuzz_ntlm.c proxy/auth/[a-z]*.c proxy/smb2/[a-z]*.c \
 *       -lssl -lcrypto -o fuzz_ntlm   (or: make fuzz-build)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/auth/auth.h"
#include "proxy/smb2/smb2.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct px_smb_keys keys[5];
static struct px_smb_ctx *kept;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t sk[16] = { 0x27, 0x0e, 0x1b, 0xa8, 0x96, 0x58,
	    0x5e, 0xeb, 0x7a, 0xf3, 0x47, 0x2d, 0x3b, 0x4c, 0x75, 0xa7 };
	uint8_t pre[PX_PREAUTH_LEN];
	char err[256];
	uint16_t c;

	(void)argc;
	(void)argv;
	if (px_crypto_init(err, sizeof(err)) == -1) {
		fprintf(stderr, "fuzz_ntlm: %s\n", err);
		abort();
	}
	memset(pre, 0x5a, sizeof(pre));
	for (c = PX_CIPHER_AES128_CCM; c <= PX_CIPHER_AES256_GCM; c++)
		if (px_smb_keys_derive(SMB2_DIALECT_0311, sk, sizeof(sk), pre,
		    c, &keys[c]) == -1)
			abort();
	if ((kept = px_smb_ctx_new()) == NULL)
		abort();
	return 0;
}

static bool
zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

static void
check_challenge(const uint8_t *buf, size_t len)
{
	struct px_ntlm_challenge c;
	int rc = px_ntlm_parse_challenge(buf, len, &c);

	if (rc < PX_NTLM_BAD || rc > PX_NTLM_OTHER || c.mech > PX_MECH_OTHER)
		abort();
	if (rc != PX_NTLM_OK &&
	    (c.flags != 0 || !zero(c.server_challenge, 8)))
		abort();
	if (rc == PX_NTLM_OK && (c.mech != PX_MECH_NTLMSSP || c.ntlm_type != 2))
		abort();
}

static void
check_auth(const uint8_t *buf, size_t len)
{
	static struct px_ntlm_auth a;
	struct px_ntlm_challenge c;
	static const uint8_t nthash[16] = { 0xa4, 0xf4, 0x9c, 0x40, 0x65,
	    0x10, 0xbd, 0xca, 0xb6, 0x82, 0x4e, 0xe7, 0xc3, 0x0f, 0xd8, 0x52 };
	uint8_t key[16];
	enum px_key_result kr;
	int rc = px_ntlm_parse_authenticate(buf, len, &a);

	if (rc < PX_NTLM_BAD || rc > PX_NTLM_OTHER || a.mech > PX_MECH_OTHER)
		abort();
	if (rc != PX_NTLM_OK) {
		if (a.flags != 0 || a.user[0] != '\0' || a.domain[0] != '\0' ||
		    a.blob_len != 0 || a.has_enc_key)
			abort();
		return;
	}
	if (a.mech != PX_MECH_NTLMSSP || a.ntlm_type != 3 ||
	    memchr(a.user, 0, sizeof(a.user)) == NULL ||
	    memchr(a.domain, 0, sizeof(a.domain)) == NULL ||
	    a.blob_len > sizeof(a.blob) ||
	    (a.blob_len != 0 && a.nt_response_len != a.blob_len + 16))
		abort();
	/* A fixed CHALLENGE (MS-NLMP 4.2.4) to run the key path. */
	memset(&c, 0, sizeof(c));
	c.mech = PX_MECH_NTLMSSP;
	c.ntlm_type = 2;
	c.flags = 0xe28a8233u;
	memcpy(c.server_challenge, "\x01\x23\x45\x67\x89\xab\xcd\xef", 8);
	kr = px_ntlm_session_key(&c, &a, nthash, key);
	if (kr > PX_KEY_ERROR || kr == PX_KEY_ERROR)
		abort();
	if (a.anonymous && kr != PX_KEY_ANONYMOUS)
		abort();
}

static void
check_decrypt(const uint8_t *buf, size_t len)
{
	uint8_t *out;
	size_t outlen = 1;
	uint16_t c;

	if ((out = malloc(len ? len : 1)) == NULL)
		abort();
	for (c = PX_CIPHER_AES128_CCM; c <= PX_CIPHER_AES256_GCM; c++) {
		static const uint8_t nonce[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9,
		    10, 11, 12 };
		uint8_t msg[100], ct[152], pt[100];
		size_t n = 0;

		/* Random bytes never carry a valid tag. */
		if (px_smb2_decrypt(&keys[c], c, PX_S2C, buf, len, out,
		    &outlen) == 0 || outlen != 0)
			abort();
		if (px_smb2_decrypt_ctx(kept, &keys[c], c, c % 2 ? PX_S2C :
		    PX_C2S, buf, len, out, &outlen) == 0 || outlen != 0)
			abort();
		/* the kept context still seals and opens */
		memset(msg, (int)c, sizeof(msg));
		if (px_smb2_encrypt_ctx(kept, &keys[c], c, PX_S2C, 7, nonce, msg,
		    sizeof(msg), ct) == -1 ||
		    px_smb2_decrypt_ctx(kept, &keys[c], c, PX_S2C, ct, sizeof(ct),
		    pt, &n) == -1 || n != sizeof(msg) ||
		    memcmp(pt, msg, n) != 0)
			abort();
	}
	free(out);
}

/* A random signature never verifies; the kept context still signs. */
static void
check_verify(const uint8_t *buf, size_t len)
{
	static const uint16_t alg[] = { PX_SIGN_HMAC_SHA256, PX_SIGN_AES_CMAC,
	    PX_SIGN_AES_GMAC };
	uint8_t msg[80];
	size_t i;

	if (len < SMB2_HDR_LEN)
		return;
	for (i = 0; i < sizeof(alg) / sizeof(alg[0]); i++) {
		if (px_smb2_verify_ctx(kept, &keys[1], SMB2_DIALECT_0311, alg[i],
		    buf, len, i % 2 == 0, false) == 0)
			abort();
		memset(msg, (int)i, sizeof(msg));
		if (px_smb2_sign_ctx(kept, &keys[1], SMB2_DIALECT_0311, alg[i],
		    msg, sizeof(msg), true, false) == -1 ||
		    px_smb2_verify(&keys[1], SMB2_DIALECT_0311, alg[i], msg,
		    sizeof(msg), true, false) == -1)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf;

	if ((buf = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	check_challenge(buf, size);
	check_auth(buf, size);
	check_decrypt(buf, size);
	check_verify(buf, size);
	free(buf);
	return 0;
}
