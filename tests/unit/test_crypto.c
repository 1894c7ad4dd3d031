/*
 * test_crypto.c - keyed sessions: NT hashes, SPNEGO/NTLMSSP parsing,
 * NTLMv2 session keys, SMB 2/3 key derivation, signing, TRANSFORM
 * encryption, the preauth hash, the nonce generator and the secrets file.
 *
 * Sources of the vectors:
 *  [NLMP]  MS-NLMP 4.2.4 (NTLMv2 with User "User", UserDom "Domain",
 *          Password "Password", ServerChallenge 0123456789abcdef,
 *          ClientChallenge aa..aa, Time 0, AV pairs NbDomainName "Domain",
 *          NbComputerName "Server"; 4.2.4.2 key exchange with
 *          RandomSessionKey 55..55).
 *  [ANAT]  Microsoft Open Specifications blog, "SMB 2 and SMB 3 security
 *          in Windows 10: the anatomy of signing and cryptographic keys"
 *          (2017), appendix: SMB 3.0 key derivation; SMB 3.1.1 multichannel
 *          capture with every NEGOTIATE/SESSION_SETUP message, the preauth
 *          hash after each, the keys and the signed final SESSION_SETUP
 *          response of both channels; the NTLMv2 SessionKey example
 *          (administrator / SUT311 / Password01!).  The same capture is
 *          the preauth example of "SMB 3.1.1 Pre-authentication integrity
 *          in Windows 10" (2015).
 *  [ENC30] "Encryption in SMB 3.0: a protocol perspective" (2012) and
 *  [ENC311] "SMB 3.1.1 Encryption in Windows 10" (2015): the encrypted
 *          WRITE request and its response, as quoted verbatim by the pike
 *          project's test file (test/crypto.py, "test vectors from
 *          Microsoft openspecification group"); the blog pages themselves
 *          could not be read here.
 *  [XCHK]  Published vectors do not cover HMAC-SHA256 and AES-GMAC
 *          signing, AES-256 keys (L = 256) and AES-256-CCM/GCM: those were
 *          computed with independent implementations, impacket 0.10
 *          (crypto.KDF_CounterMode) and pycryptodome (hmac, AES GCM/CCM),
 *          on the [ANAT] messages and keys, e.g.
 *            KDF_CounterMode(sk, b"SMBC2SCipherKey\0", preauth, 256)
 *            AES.new(key, AES.MODE_GCM, nonce=msgid_le8 + flags_le4)
 *                .update(msg_with_zero_signature).digest()
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "proxy/auth/auth.h"
#include "proxy/smb2/smb2.h"
#include "tests/unit/unit.h"

/* Assertion that names the failing table row. */
#define UT_CHECK(cond, ...) do {					\
	if (cond)							\
		CU_assertImplementation(CU_TRUE, __LINE__, #cond,	\
		    __FILE__, "", CU_FALSE);				\
	else {								\
		char m_[1024];						\
		snprintf(m_, sizeof(m_), __VA_ARGS__);			\
		CU_assertImplementation(CU_FALSE, __LINE__, m_,	\
		    __FILE__, "", CU_FALSE);				\
	}								\
} while (0)

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Hex (whitespace ignored) into out; returns the byte count.  Aborts the
 * test binary on a malformed literal: that is a bug in this file. */
static size_t
unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1, v;

	for (; *s; s++) {
		if (*s == ' ' || *s == '\n' || *s == '\t')
			continue;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else
			abort();
		if (hi < 0)
			hi = v;
		else {
			if (n == cap)
				abort();
			out[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	if (hi >= 0)
		abort();
	return n;
}

static bool
eqhex(const uint8_t *got, size_t n, const char *want)
{
	uint8_t w[4096];

	return unhex(want, w, sizeof(w)) == n && memcmp(got, w, n) == 0;
}

static int
suite_init(void)
{
	char err[256];

	if (px_crypto_init(err, sizeof(err)) == -1) {
		fprintf(stderr, "crypto suite: %s\n", err);
		return -1;
	}
	return 0;
}

/* ---- [ANAT] SMB 3.1.1 capture ---------------------------------------------- */

static const char *const ANAT_MSGS[] = {
	/* NEGOTIATE request */
	"FE534D4240000100000000000000800000000000000000000100000000000000FFFE000000000000"
	"00000000000000000000000000000000000000000000000024000500000000003F000000ECD86F32"
	"6276024F9F7752B89BB33F3A70000000020000000202100200030203110300000100260000000000"
	"010020000100FA49E6578F1F3A9F4CD3E9CC14A67AA884B3D05844E0E5A118225C15887F32FF0000"
	"0200060000000000020002000100",
	/* NEGOTIATE response */
	"FE534D4240000100000000000000010001000000000000000100000000000000FFFE000000000000"
	"000000000000000000000000000000000000000000000000410001001103020039CBCAF329714942"
	"BDCE5D60F09AB3FB2F000000000080000000800000008000D8DAE5ADCBAED00109094AB095AED001"
	"80004001C00100006082013C06062B0601050502A08201303082012CA01A3018060A2B0601040182"
	"3702021E060A2B06010401823702020AA282010C048201084E45474F455854530100000000000000"
	"60000000700000007C7CC0FD06D6362D02DDE1CF343BFE292900F49750B4AA97934D9C4296B26E51"
	"FD370471B235E15A50DAE15BD5489C87000000000000000060000000010000000000000000000000"
	"5C33530DEAF90D4DB2EC4AE3786EC3084E45474F4558545303000000010000004000000098000000"
	"7C7CC0FD06D6362D02DDE1CF343BFE295C33530DEAF90D4DB2EC4AE3786EC3084000000058000000"
	"3056A05430523027802530233121301F06035504031318546F6B656E205369676E696E6720507562"
	"6C6963204B65793027802530233121301F06035504031318546F6B656E205369676E696E67205075"
	"626C6963204B6579010026000000000001002000010060A3C3B95C3C7CCD51EC536648D9B3AC74C4"
	"83CA5B65385A251117BEB30712E50000020004000000000001000200",
	/* SESSION_SETUP request 1 (NTLM NEGOTIATE in NegTokenInit) */
	"FE534D4240000100000000000100800000000000000000000200000000000000FFFE000000000000"
	"00000000000000000000000000000000000000000000000019000001010000000000000058004A00"
	"0000000000000000604806062B0601050502A03E303CA00E300C060A2B06010401823702020AA22A"
	"04284E544C4D5353500001000000978208E200000000000000000000000000000000060380250000"
	"000F",
	/* SESSION_SETUP response 1 (MORE_PROCESSING_REQUIRED, CHALLENGE) */
	"FE534D4240000100160000C00100010001000000000000000200000000000000FFFE000000000000"
	"190000000010000000000000000000000000000000000000090000004800B300A181B03081ADA003"
	"0A0101A10C060A2B06010401823702020AA281970481944E544C4D53535000020000000C000C0038"
	"00000015828AE20D1D8BA31179D008000000000000000050005000440000000A0092270000000F53"
	"005500540033003100310002000C0053005500540033003100310001000C00530055005400330031"
	"00310004000C0053005500540033003100310003000C0053005500540033003100310007000800A1"
	"A1F5ADCBAED00100000000",
	/* SESSION_SETUP request 2 (AUTHENTICATE in NegTokenResp) */
	"FE534D4240000100000000000100800000000000000000000300000000000000FFFE000000000000"
	"1900000000100000000000000000000000000000000000001900000101000000000000005800CF01"
	"0000000000000000A18201CB308201C7A0030A0101A28201AA048201A64E544C4D53535000030000"
	"001800180090000000EE00EE00A80000000C000C00580000001A001A0064000000120012007E0000"
	"001000100096010000158288E2060380250000000FECAC77A5F385A8BF9C38C706EEEDDCD3530055"
	"005400330031003100610064006D0069006E006900730074007200610074006F0072004400520049"
	"0056004500520033003100310000000000000000000000000000000000000000000000000063078E"
	"B639FE03E20A231C3AE3BF23080101000000000000A1A1F5ADCBAED001BC4AD05F223CC90F000000"
	"0002000C0053005500540033003100310001000C0053005500540033003100310004000C00530055"
	"00540033003100310003000C0053005500540033003100310007000800A1A1F5ADCBAED001060004"
	"00020000000800300030000000000000000000000000300000B61FEFCAA857EA57BF1EDCEBF8974B"
	"8E0EBA5A6DFD9D07A31D11B548F8C9D0CC0A00100000000000000000000000000000000000090016"
	"0063006900660073002F005300550054003300310031000000000000000000000000003B9BDFF38F"
	"5EE8F9663F11A0F4C03A78A31204100100000063775A9A5FD97F0600000000",
	/* SESSION_SETUP response 2 (SUCCESS, signed; not in the preauth hash) */
	"FE534D4240000100000000000100800009000000000000000300000000000000FFFE000000000000"
	"1900000000100000EBE146DA120BA25FC3376A49DFE31BC10900000048001D00A11B3019A0030A01"
	"00A3120410010000003B453CDC3524164200000000",
};
enum { NEG_REQ, NEG_RSP, SS_REQ1, SS_RSP1, SS_REQ2, SS_RSP2 };

static const char *const ANAT_PREAUTH[] = {
	"DD94EFC5321BB618A2E208BA8920D2F422992526947A409B5037DE1E0FE8C7362B8C47122594CDE0"
	"CE26AA9DFC8BCDBDE0621957672623351A7540F1E54A0426",
	"324BFA92A4F3A190E466EBEA08D9C110DC88BFED758D9846ECC6F541CC1D02AE3C94A79F36011E99"
	"7E13F841B91B50957AD07B19C8E2539C0B23FDAE09D2C513",
	"AC0B0F2B9986257700365E416D142A6EDC96DF03594A19E52A15F6BD0D041CD5D432F8ED42C55E33"
	"197A50C9EC00F1462B50C592211B1471A04B56088FDFD5F9",
	"2729E3440DFDDD839E37193F6E8F20C20CEFB3469E453A70CD980EEC06B8835740A7376008563336"
	"4C8989895ECE81BF102DEEB14D4B7D48AFA76901A7A38387",
	"0DD13628CC3ED218EF9DF9772D436D0887AB9814BFAE63A80AA845F36909DB7928622DDDAD522D97"
	"51640A459762C5A9D6BB084CBB3CE6BDADEF5D5BCE3C6C01",
};
#define ANAT_SK "270E1BA896585EEB7AF3472D3B4C75A7"

/* Second channel: its final SESSION_SETUP response, key and preauth. */
static const char ANAT2_SS_RSP2[] =
    "FE534D4240000100000000000100800009000000000000000300000000000000FFFE000000000000"
    "19000000001000008D604217FFBACF40635BF9D8729921500900000048001D00A11B3019A0030A01"
    "00A312041001000000CFB046FC5D368E2200000000";
#define ANAT2_SK "84B9DBB730116A8FA6E9889555C265F9"
#define ANAT2_PREAUTH \
    "EA3BF912B11CBFEC5B1889E8209614218687F82FA5294521AD3063425E49E88A10BD022124CE2512" \
    "3BC9111F52D9566BA88BF46344E6063DC5E3FF0389026F6C"

struct msg {
	uint8_t b[1024];
	size_t n;
};

static void
load(struct msg *m, const char *hex)
{
	m->n = unhex(hex, m->b, sizeof(m->b));
}

/* The security buffer of a SESSION_SETUP request or response. */
const uint8_t *
ut_secbuf(const uint8_t *m, size_t n, bool response, size_t *len)
{
	struct smb2_elem e = { m, n };
	struct smb2_session_setup_req q;
	struct smb2_session_setup_rsp r;

	*len = 0;
	if (response) {
		if (px_smb2_session_setup_rsp_decode(&e, &r) == -1)
			return NULL;
		*len = r.sec_buf_len;
		return r.sec_buf;
	}
	if (px_smb2_session_setup_req_decode(&e, &q) == -1)
		return NULL;
	*len = q.sec_buf_len;
	return q.sec_buf;
}

static const uint8_t *
secbuf(const struct msg *m, bool response, size_t *len)
{
	return ut_secbuf(m->b, m->n, response, len);
}

/* ---- NT hash --------------------------------------------------------------- */

static void
test_nt_hash(void)
{
	static const struct {
		const char *pw, *hash;
	} t[] = {
		{ "Password", "a4f49c406510bdcab6824ee7c30fd852" },   /* NLMP */
		{ "Password01!", "7C4FE5EADA682714A036E39378362BAB" }, /* ANAT */
		{ "", "31d6cfe0d16ae931b73c59d7e0c089c0" },
		{ "P\xc3\xa4ssw\xc3\xb6rd", "aed9375ba569c9f0216eea5c0c7bf463" },
	};
	uint8_t h[16];
	size_t i;
	char err[256];

	CU_ASSERT_EQUAL(px_crypto_init(err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(px_crypto_init(err, sizeof(err)), 0);   /* again */
	for (i = 0; i < NELEM(t); i++) {
		if (t[i].hash == NULL)
			continue;
		UT_CHECK(px_nt_hash(t[i].pw, strlen(t[i].pw), h) == 0 &&
		    eqhex(h, 16, t[i].hash), "nt hash of row %zu", i);
	}
	/* invalid UTF-8: lone continuation, overlong, truncated, surrogate */
	CU_ASSERT_EQUAL(px_nt_hash("\x80", 1, h), -1);
	CU_ASSERT_EQUAL(px_nt_hash("\xc0\xaf", 2, h), -1);
	CU_ASSERT_EQUAL(px_nt_hash("a\xe2\x82", 3, h), -1);
	CU_ASSERT_EQUAL(px_nt_hash("\xed\xa0\x80", 3, h), -1);
}

/* ---- builders for NTLMSSP and SPNEGO ---------------------------------------- */

/* DER TLV with a definite length (short form, or 0x81/0x82). */
static size_t
der(uint8_t tag, const uint8_t *v, size_t n, uint8_t *out)
{
	size_t h = 0;

	out[h++] = tag;
	if (n < 0x80)
		out[h++] = (uint8_t)n;
	else if (n < 0x100) {
		out[h++] = 0x81;
		out[h++] = (uint8_t)n;
	} else {
		out[h++] = 0x82;
		out[h++] = (uint8_t)(n >> 8);
		out[h++] = (uint8_t)n;
	}
	memmove(out + h, v, n);
	return h + n;
}

static const uint8_t OID_SPNEGO_DER[] = { 0x06, 0x06, 0x2b, 0x06, 0x01, 0x05,
    0x05, 0x02 };
static const uint8_t OID_NTLM_DER[] = { 0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04,
    0x01, 0x82, 0x37, 0x02, 0x02, 0x0a };
static const uint8_t OID_MSKRB_DER[] = { 0x06, 0x09, 0x2a, 0x86, 0x48, 0x82,
    0xf7, 0x12, 0x01, 0x02, 0x02 };
static const uint8_t OID_KRB_DER[] = { 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86,
    0xf7, 0x12, 0x01, 0x02, 0x02 };
static const uint8_t OID_NEGOEX_DER[] = { 0x06, 0x0a, 0x2b, 0x06, 0x01,
    0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x1e };

/* NegTokenResp [1] { SEQ { negState [0] 1, responseToken [2] tok } } */
static size_t
spnego_resp(const uint8_t *tok, size_t n, uint8_t *out)
{
	uint8_t a[4096], b[4096];
	size_t k;
	static const uint8_t state[] = { 0xa0, 0x03, 0x0a, 0x01, 0x01 };

	memcpy(a, state, sizeof(state));
	k = sizeof(state);
	k += der(0x04, tok, n, b);
	k = sizeof(state) + der(0xa2, b, k - sizeof(state), a + sizeof(state));
	k = der(0x30, a, k, b);
	return der(0xa1, b, k, out);
}

/* GSS [APP 0] { SPNEGO, [0] { SEQ { [0] SEQ { oids }, [2] tok } } } */
static size_t
spnego_init(const uint8_t *oids, size_t noids, const uint8_t *tok, size_t n,
    uint8_t *out)
{
	uint8_t a[4096], b[4096];
	size_t k, m;

	k = der(0x30, oids, noids, b);
	k = der(0xa0, b, k, a);
	if (tok != NULL) {
		m = der(0x04, tok, n, b);
		k += der(0xa2, b, m, a + k);
	}
	k = der(0x30, a, k, b);
	k = der(0xa0, b, k, a);
	memmove(a + sizeof(OID_SPNEGO_DER), a, k);
	memcpy(a, OID_SPNEGO_DER, sizeof(OID_SPNEGO_DER));
	return der(0x60, a, k + sizeof(OID_SPNEGO_DER), out);
}

/* UTF-8 (BMP only, valid input) to UTF-16LE. */
static size_t
u16(const char *s, uint8_t *out)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t n = 0;
	uint32_t c;

	while (*p) {
		if (*p < 0x80)
			c = *p++;
		else if ((*p & 0xE0) == 0xC0) {
			c = (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
			p += 2;
		} else {
			c = (uint32_t)(p[0] & 0x0F) << 12 |
			    (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
			p += 3;
		}
		px_put_u16(out + n, (uint16_t)c);
		n += 2;
	}
	return n;
}

struct auth_in {
	const char *domain, *user, *ws;
	const uint8_t *lm;
	size_t lmlen;
	const uint8_t *nt;
	size_t ntlen;
	const uint8_t *ek;
	size_t eklen;
	uint32_t flags;
};

/* Raw AUTHENTICATE_MESSAGE: 88-byte header (Version, MIC), then domain,
 * user, workstation, LM, NT, session key, in that order, so that the last
 * byte of the message always belongs to a field when ek is present. */
static size_t
build_auth(const struct auth_in *a, uint8_t *out)
{
	size_t off = 88, n;
	uint8_t tmp[512];

	memset(out, 0, 88);
	memcpy(out, "NTLMSSP", 8);
	px_put_u32(out + 8, 3);
#define FIELD(at, p, len) do {						\
	px_put_u16(out + (at), (uint16_t)(len));			\
	px_put_u16(out + (at) + 2, (uint16_t)(len));			\
	px_put_u32(out + (at) + 4, (uint32_t)off);			\
	if ((len) > 0)							\
		memcpy(out + off, (p), (len));				\
	off += (len);							\
} while (0)
	n = u16(a->domain, tmp);
	FIELD(28, tmp, n);
	n = u16(a->user, tmp);
	FIELD(36, tmp, n);
	n = u16(a->ws, tmp);
	FIELD(44, tmp, n);
	FIELD(12, a->lm, a->lmlen);
	FIELD(20, a->nt, a->ntlen);
	FIELD(52, a->ek, a->eklen);
#undef FIELD
	px_put_u32(out + 60, a->flags);
	return off;
}

/* Raw CHALLENGE_MESSAGE with target name "Domain" and the 4.2.4 AV pairs. */
static size_t
build_challenge(const uint8_t chal[8], uint32_t flags, const uint8_t *av,
    size_t avlen, uint8_t *out)
{
	size_t off = 56, n;

	memset(out, 0, 56);
	memcpy(out, "NTLMSSP", 8);
	px_put_u32(out + 8, 2);
	n = u16("Domain", out + off);
	px_put_u16(out + 12, (uint16_t)n);
	px_put_u16(out + 14, (uint16_t)n);
	px_put_u32(out + 16, (uint32_t)off);
	off += n;
	px_put_u32(out + 20, flags);
	memcpy(out + 24, chal, 8);
	memcpy(out + off, av, avlen);
	px_put_u16(out + 40, (uint16_t)avlen);
	px_put_u16(out + 42, (uint16_t)avlen);
	px_put_u32(out + 44, (uint32_t)off);
	off += avlen;
	return off;
}

/* ---- [NLMP] 4.2.4 ------------------------------------------------------------ */

#define NLMP_FLAGS 0xe28a8233u  /* 4.2.4: 33 82 8a e2 */

static const char NLMP_AV[] =
    "02000c0044006f006d00610069006e00"      /* NbDomainName "Domain" */
    "01000c005300650072007600650072000000"  /* NbComputerName "Server" */
    "0000";                                 /* EOL */

struct nlmp {
	uint8_t av[64], temp[128], nt[160], chal_raw[256], auth_raw[512];
	size_t avlen, templen, ntlen, chal_rawlen, auth_rawlen;
	uint8_t chal[512], auth[1024];       /* inside SPNEGO */
	size_t challen, authlen;
	uint8_t nthash[16];
};

static const uint8_t EK_4242[16] = { 0xc5, 0xda, 0xd2, 0x54, 0x4f, 0xc9,
    0x79, 0x90, 0x94, 0xce, 0x1c, 0xe9, 0x0b, 0xc9, 0xd0, 0x3e };

/* temp = 01 01 Z(6) Time ClientChallenge Z(4) AvPairs Z(4) (3.3.2) */
static void
nlmp_build_proof(struct nlmp *v, const char *user, const char *domain,
    uint32_t flags, bool with_ek, const char *proof)
{
	uint8_t chal[8] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };
	uint8_t lm[24];
	struct auth_in a;
	size_t k = 0;

	memset(v, 0, sizeof(*v));
	v->avlen = unhex(NLMP_AV, v->av, sizeof(v->av));
	v->temp[k++] = 1;
	v->temp[k++] = 1;
	k += 6 + 8;                 /* Z(6), Time = 0 */
	memset(v->temp + k, 0xaa, 8);
	k += 8 + 4;
	memcpy(v->temp + k, v->av, v->avlen);
	k += v->avlen + 4;
	v->templen = k;
	unhex(proof, v->nt, 16);
	memcpy(v->nt + 16, v->temp, v->templen);
	v->ntlen = 16 + v->templen;
	memset(lm, 0, sizeof(lm));
	a = (struct auth_in){ domain, user, "COMPUTER", lm, sizeof(lm),
	    v->nt, v->ntlen, with_ek ? EK_4242 : NULL, with_ek ? 16 : 0,
	    flags };
	v->auth_rawlen = build_auth(&a, v->auth_raw);
	v->authlen = spnego_resp(v->auth_raw, v->auth_rawlen, v->auth);
	v->chal_rawlen = build_challenge(chal, NLMP_FLAGS, v->av, v->avlen,
	    v->chal_raw);
	v->challen = spnego_resp(v->chal_raw, v->chal_rawlen, v->chal);
	unhex("a4f49c406510bdcab6824ee7c30fd852", v->nthash, 16);
}

static void
nlmp_build(struct nlmp *v, const char *user, const char *domain,
    uint32_t flags, bool with_ek)
{
	nlmp_build_proof(v, user, domain, flags, with_ek,
	    "68cd0ab851e51c96aabc927bebef6a1c");
}

/*
 * UPPER(User) beyond ASCII: the 4.2.4 exchange with other user names,
 * NTProofStr computed by [XCHK] (Python str.upper(), which agrees with
 * Windows on these letters).  Lower- and upper-case spellings both verify.
 */
static void
test_ntlm_upcase(void)
{
	static const struct {
		const char *lower, *upper, *proof;
	} t[] = {
		{ "\xc5\x82ukasz", "\xc5\x81UKASZ",
		    "b8eb6d9ee786a6d6faddf164e66a58b4" },
		{ "\xc3\x86r\xc3\xb8sk\xc3\xb8" "bing",
		    "\xc3\x86R\xc3\x98SK\xc3\x98" "BING",
		    "9db941b8d3a3c693107f022008608f87" },
		{ "\xd0\xbf\xd1\x91\xd1\x82\xd1\x80",
		    "\xd0\x9f\xd0\x81\xd0\xa2\xd0\xa0",
		    "1ecdb418c8b63242bc106c3cfbe8b241" },
		{ "\xc3\xbfves", "\xc5\xb8VES",
		    "b6fb2d6085c6f425c7ed53ca60cd5a6a" },
		{ "\xce\xa9mega", "\xce\xa9MEGA",
		    "bccb497d0855dcc28ce3e2bed7d49e9f" },
		{ "\xc5\xa1imon", "\xc5\xa0IMON",
		    "96e4e90db1d22c9f7b63afdbefed28e0" },
	};
	static struct nlmp v;
	static struct px_ntlm_auth a;
	struct px_ntlm_challenge c;
	uint8_t key[16];
	size_t i, j;

	for (i = 0; i < NELEM(t); i++) {
		for (j = 0; j < 2; j++) {
			nlmp_build_proof(&v, j ? t[i].upper : t[i].lower,
			    "Domain", NLMP_FLAGS, true, t[i].proof);
			UT_CHECK(px_ntlm_parse_challenge(v.chal, v.challen,
			    &c) == PX_NTLM_OK &&
			    px_ntlm_parse_authenticate(v.auth, v.authlen, &a) ==
			    PX_NTLM_OK && strcmp(a.user, j ? t[i].upper :
			    t[i].lower) == 0, "parse row %zu.%zu", i, j);
			UT_CHECK(px_ntlm_session_key(&c, &a, v.nthash, key) ==
			    PX_KEY_OK, "key row %zu.%zu", i, j);
		}
	}
}

static void
test_ntlm_nlmp(void)
{
	static struct nlmp v;
	struct px_ntlm_challenge c;
	static struct px_ntlm_auth a;
	uint8_t key[16], wrong[16];

	/* Without KEY_EXCH the exported key is SessionBaseKey. */
	nlmp_build(&v, "User", "Domain",
	    NLMP_FLAGS & ~PX_NTLMSSP_NEGOTIATE_KEY_EXCH, false);
	CU_ASSERT_EQUAL(px_ntlm_parse_challenge(v.chal, v.challen, &c),
	    PX_NTLM_OK);
	CU_ASSERT_EQUAL(c.mech, PX_MECH_NTLMSSP);
	CU_ASSERT_EQUAL(c.flags, NLMP_FLAGS);
	CU_ASSERT(eqhex(c.server_challenge, 8, "0123456789abcdef"));
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(v.auth, v.authlen, &a),
	    PX_NTLM_OK);
	CU_ASSERT_EQUAL(a.mech, PX_MECH_NTLMSSP);
	CU_ASSERT_STRING_EQUAL(a.user, "User");
	CU_ASSERT_STRING_EQUAL(a.domain, "Domain");
	CU_ASSERT_FALSE(a.anonymous);
	CU_ASSERT_FALSE(a.has_enc_key);
	CU_ASSERT_EQUAL(a.nt_response_len, v.ntlen);
	CU_ASSERT_EQUAL(a.blob_len, v.templen);
	CU_ASSERT(eqhex(a.nt_proof, 16, "68cd0ab851e51c96aabc927bebef6a1c"));
	CU_ASSERT_EQUAL(memcmp(a.blob, v.temp, v.templen), 0);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key), PX_KEY_OK);
	CU_ASSERT(eqhex(key, 16, "8de40ccadbc14a82f15cb0ad0de95ca3"));

	/* A wrong hash does not verify and leaves the key untouched. */
	memcpy(wrong, v.nthash, 16);
	wrong[15] ^= 1;
	memset(key, 0x77, 16);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, wrong, key),
	    PX_KEY_MISMATCH);
	CU_ASSERT(eqhex(key, 16, "77777777777777777777777777777777"));

	/* 4.2.4.2: KEY_EXCH, EncryptedRandomSessionKey -> 55..55. */
	nlmp_build(&v, "User", "Domain", NLMP_FLAGS, true);
	CU_ASSERT_EQUAL(px_ntlm_parse_challenge(v.chal, v.challen, &c),
	    PX_NTLM_OK);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(v.auth, v.authlen, &a),
	    PX_NTLM_OK);
	CU_ASSERT(a.has_enc_key);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key), PX_KEY_OK);
	CU_ASSERT(eqhex(key, 16, "55555555555555555555555555555555"));
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, wrong, key),
	    PX_KEY_MISMATCH);

	/* KEY_EXCH only on the client side: not negotiated -> base key. */
	c.flags &= ~PX_NTLMSSP_NEGOTIATE_KEY_EXCH;
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key), PX_KEY_OK);
	CU_ASSERT(eqhex(key, 16, "8de40ccadbc14a82f15cb0ad0de95ca3"));

	/* KEY_EXCH negotiated but no EncryptedRandomSessionKey. */
	nlmp_build(&v, "User", "Domain", NLMP_FLAGS, false);
	CU_ASSERT_EQUAL(px_ntlm_parse_challenge(v.chal, v.challen, &c),
	    PX_NTLM_OK);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(v.auth, v.authlen, &a),
	    PX_NTLM_OK);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key),
	    PX_KEY_UNSUPPORTED);

	/* UPPER(User): the user's case does not matter, the domain's does. */
	nlmp_build(&v, "uSeR", "Domain", NLMP_FLAGS, true);
	CU_ASSERT_EQUAL(px_ntlm_parse_challenge(v.chal, v.challen, &c),
	    PX_NTLM_OK);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(v.auth, v.authlen, &a),
	    PX_NTLM_OK);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key), PX_KEY_OK);
	nlmp_build(&v, "User", "DOMAIN", NLMP_FLAGS, true);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(v.auth, v.authlen, &a),
	    PX_NTLM_OK);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key),
	    PX_KEY_MISMATCH);

	/* The same messages as raw NTLMSSP, without SPNEGO. */
	nlmp_build(&v, "User", "Domain", NLMP_FLAGS, true);
	CU_ASSERT_EQUAL(px_ntlm_parse_challenge(v.chal_raw, v.chal_rawlen,
	    &c), PX_NTLM_OK);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(v.auth_raw, v.auth_rawlen,
	    &a), PX_NTLM_OK);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key), PX_KEY_OK);
	CU_ASSERT(eqhex(key, 16, "55555555555555555555555555555555"));

	/* A CHALLENGE is not an AUTHENTICATE and vice versa. */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(v.chal, v.challen, &a),
	    PX_NTLM_OTHER);
	CU_ASSERT_EQUAL(a.ntlm_type, 2);
	CU_ASSERT_EQUAL(px_ntlm_parse_challenge(v.auth, v.authlen, &c),
	    PX_NTLM_OTHER);
	CU_ASSERT_EQUAL(c.ntlm_type, 3);
	/* ... and the key function refuses such structures. */
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key),
	    PX_KEY_UNSUPPORTED);
}

/* Anonymous, NTLMv1, Kerberos, NEGOEX. */
static void
test_ntlm_kinds(void)
{
	static struct nlmp v;
	static struct px_ntlm_auth a;
	struct px_ntlm_challenge c;
	uint8_t raw[1024], buf[2048], oids[64], krb[64], key[16], lm1 = 0;
	uint8_t nt24[24];
	struct auth_in in;
	size_t n, m, k;

	nlmp_build(&v, "User", "Domain", NLMP_FLAGS, true);
	CU_ASSERT_EQUAL(px_ntlm_parse_challenge(v.chal, v.challen, &c),
	    PX_NTLM_OK);

	/* Anonymous: empty user, empty NT response, LM = Z(1). */
	in = (struct auth_in){ "", "", "WS", &lm1, 1, NULL, 0, NULL, 0,
	    NLMP_FLAGS & ~PX_NTLMSSP_NEGOTIATE_KEY_EXCH };
	n = build_auth(&in, raw);
	m = spnego_resp(raw, n, buf);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(buf, m, &a), PX_NTLM_OK);
	CU_ASSERT(a.anonymous);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key),
	    PX_KEY_ANONYMOUS);

	/* NTLMv1: a 24-byte NT response. */
	memset(nt24, 0x42, sizeof(nt24));
	in = (struct auth_in){ "Domain", "User", "WS", nt24, 24, nt24, 24,
	    EK_4242, 16, NLMP_FLAGS };
	n = build_auth(&in, raw);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(raw, n, &a), PX_NTLM_OK);
	CU_ASSERT_EQUAL(a.nt_response_len, 24);
	CU_ASSERT_FALSE(a.anonymous);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key),
	    PX_KEY_UNSUPPORTED);

	/* Kerberos: mechTypes MS-KRB5, KRB5, NTLM; token a GSS krb5 AP-REQ. */
	k = 0;
	memcpy(oids + k, OID_MSKRB_DER, sizeof(OID_MSKRB_DER));
	k += sizeof(OID_MSKRB_DER);
	memcpy(oids + k, OID_KRB_DER, sizeof(OID_KRB_DER));
	k += sizeof(OID_KRB_DER);
	memcpy(oids + k, OID_NTLM_DER, sizeof(OID_NTLM_DER));
	k += sizeof(OID_NTLM_DER);
	{
		uint8_t inner[32];
		size_t ni = 0;

		memcpy(inner, OID_KRB_DER, sizeof(OID_KRB_DER));
		ni = sizeof(OID_KRB_DER);
		inner[ni++] = 0x01;         /* TOK_ID AP-REQ */
		inner[ni++] = 0x00;
		inner[ni++] = 0x6e;         /* AP-REQ stub */
		inner[ni++] = 0x00;
		n = der(0x60, inner, ni, krb);
	}
	m = spnego_init(oids, k, krb, n, buf);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(buf, m, &a), PX_NTLM_OTHER);
	CU_ASSERT_EQUAL(a.mech, PX_MECH_KERBEROS);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key),
	    PX_KEY_UNSUPPORTED);
	/* An opaque token under a Kerberos first mech is Kerberos too. */
	m = spnego_init(oids, k, (const uint8_t *)"\x01\x02\x03", 3, buf);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(buf, m, &a), PX_NTLM_OTHER);
	CU_ASSERT_EQUAL(a.mech, PX_MECH_KERBEROS);
	/* A bare GSS krb5 token, no SPNEGO. */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(krb, n, &a), PX_NTLM_OTHER);
	CU_ASSERT_EQUAL(a.mech, PX_MECH_KERBEROS);
	/* Kerberos in a NegTokenResp (supportedMech). */
	{
		uint8_t s[128], t[128];
		size_t ks;

		ks = der(0xa1, OID_KRB_DER, sizeof(OID_KRB_DER), s);
		t[0] = 0x04;
		t[1] = 2;
		t[2] = 0x6f;    /* AP-REP stub */
		t[3] = 0;
		ks += der(0xa2, t, 4, s + ks);
		ks = der(0x30, s, ks, t);
		ks = der(0xa1, t, ks, s);
		CU_ASSERT_EQUAL(px_ntlm_parse_challenge(s, ks, &c),
		    PX_NTLM_OTHER);
		CU_ASSERT_EQUAL(c.mech, PX_MECH_KERBEROS);
	}

	/* NEGOEX first: neither NTLM nor Kerberos. */
	m = spnego_init(OID_NEGOEX_DER, sizeof(OID_NEGOEX_DER),
	    (const uint8_t *)"NEGOEXTS", 8, buf);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(buf, m, &a), PX_NTLM_OTHER);
	CU_ASSERT_EQUAL(a.mech, PX_MECH_OTHER);
	/* A mech list without a token. */
	m = spnego_init(oids, k, NULL, 0, buf);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(buf, m, &a), PX_NTLM_OTHER);
	CU_ASSERT_EQUAL(a.mech, PX_MECH_NONE);

	CU_ASSERT_STRING_EQUAL(px_gss_mech_name(PX_MECH_KERBEROS), "kerberos");
	CU_ASSERT_STRING_EQUAL(px_key_result_name(PX_KEY_MISMATCH),
	    "key-mismatch");
}

/* ---- [ANAT]: a Windows capture end to end ----------------------------------- */

static void
test_windows_capture(void)
{
	static struct msg m[NELEM(ANAT_MSGS)], m2;
	static struct px_ntlm_auth a;
	struct px_ntlm_challenge c;
	struct px_smb_keys k;
	const uint8_t *sb;
	size_t sblen, i;
	uint8_t nthash[16], sk[16], pre[PX_PREAUTH_LEN], buf[1024], p2[64];

	for (i = 0; i < NELEM(ANAT_MSGS); i++)
		load(&m[i], ANAT_MSGS[i]);

	/* First leg: NTLM NEGOTIATE, and the server's mech-list-only init. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(sb = secbuf(&m[SS_REQ1], false, &sblen));
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(sb, sblen, &a),
	    PX_NTLM_OTHER);
	CU_ASSERT_EQUAL(a.mech, PX_MECH_NTLMSSP);
	CU_ASSERT_EQUAL(a.ntlm_type, 1);
	{
		struct smb2_elem e = { m[NEG_RSP].b, m[NEG_RSP].n };
		struct smb2_negotiate_rsp nr;

		CU_ASSERT_EQUAL_FATAL(px_smb2_negotiate_rsp_decode(&e, &nr), 0);
		CU_ASSERT_EQUAL(px_ntlm_parse_challenge(m[NEG_RSP].b +
		    nr.sec_buf_off, nr.sec_buf_len, &c), PX_NTLM_OTHER);
		CU_ASSERT_EQUAL(c.mech, PX_MECH_OTHER); /* NEGOEX, optimistic */
	}

	/* CHALLENGE and AUTHENTICATE. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(sb = secbuf(&m[SS_RSP1], true, &sblen));
	CU_ASSERT_EQUAL_FATAL(px_ntlm_parse_challenge(sb, sblen, &c),
	    PX_NTLM_OK);
	CU_ASSERT(eqhex(c.server_challenge, 8, "0D1D8BA31179D008"));
	CU_ASSERT_EQUAL(c.flags, 0xE28A8215u);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sb = secbuf(&m[SS_REQ2], false, &sblen));
	CU_ASSERT_EQUAL_FATAL(px_ntlm_parse_authenticate(sb, sblen, &a),
	    PX_NTLM_OK);
	CU_ASSERT_STRING_EQUAL(a.user, "administrator");
	CU_ASSERT_STRING_EQUAL(a.domain, "SUT311");
	CU_ASSERT_EQUAL(a.flags, 0xE2888215u);
	CU_ASSERT_EQUAL(a.nt_response_len, 238);
	CU_ASSERT(eqhex(a.nt_proof, 16, "63078EB639FE03E20A231C3AE3BF2308"));
	CU_ASSERT(eqhex(a.enc_session_key, 16,
	    "3B9BDFF38F5EE8F9663F11A0F4C03A78"));
	CU_ASSERT_EQUAL(px_nt_hash("Password01!", 11, nthash), 0);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, nthash, sk), PX_KEY_OK);
	CU_ASSERT(eqhex(sk, 16, ANAT_SK));

	/* The last leg's NegTokenResp carries no token. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(sb = secbuf(&m[SS_RSP2], true, &sblen));
	CU_ASSERT_EQUAL(px_ntlm_parse_challenge(sb, sblen, &c), PX_NTLM_OTHER);
	CU_ASSERT_EQUAL(c.mech, PX_MECH_NONE);

	/* Preauth chain: NEGOTIATE pair, then each SESSION_SETUP request and
	 * MORE_PROCESSING response (not the final SUCCESS). */
	memset(pre, 0, sizeof(pre));
	for (i = 0; i <= SS_REQ2; i++) {
		CU_ASSERT_EQUAL(px_preauth_update(pre, m[i].b, m[i].n), 0);
		UT_CHECK(eqhex(pre, 64, ANAT_PREAUTH[i]), "preauth step %zu",
		    i);
	}

	/* Keys, and the server's signature on the final response. */
	CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16,
	    pre, PX_CIPHER_AES128_GCM, &k), 0);
	CU_ASSERT(eqhex(k.signing, 16, "73FE7A9A77BEF0BDE49C650D8CCB5F76"));
	CU_ASSERT(eqhex(k.c2s, 16, "629BCBC54422A0F572B97F45989B6073"));
	CU_ASSERT(eqhex(k.s2c, 16, "E2AF0DCEFAC68DA71A0DFBD0D1350D74"));
	CU_ASSERT_EQUAL(k.cipher_key_len, 16);
	CU_ASSERT_EQUAL(px_smb2_verify(&k, SMB2_DIALECT_0311, PX_SIGN_AES_CMAC,
	    m[SS_RSP2].b, m[SS_RSP2].n, true, false), 0);
	/* Re-signing from scratch (flag clear, signature zero) gives the same
	 * bytes. */
	memcpy(buf, m[SS_RSP2].b, m[SS_RSP2].n);
	px_put_u32(buf + 16, px_get_u32(buf + 16) & ~SMB2_FLAGS_SIGNED);
	memset(buf + 48, 0, 16);
	CU_ASSERT_EQUAL(px_smb2_sign(&k, SMB2_DIALECT_0311, PX_SIGN_AES_CMAC,
	    buf, m[SS_RSP2].n, true, false), 0);
	CU_ASSERT_EQUAL(memcmp(buf, m[SS_RSP2].b, m[SS_RSP2].n), 0);

	/* Second channel: its own session key and preauth hash. */
	load(&m2, ANAT2_SS_RSP2);
	unhex(ANAT2_SK, sk, 16);
	unhex(ANAT2_PREAUTH, p2, 64);
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16, p2,
	    PX_CIPHER_AES128_GCM, &k), 0);
	CU_ASSERT(eqhex(k.signing, 16, "C962BCA1A9DD1697B030644199705431"));
	CU_ASSERT_EQUAL(px_smb2_verify(&k, SMB2_DIALECT_0311, PX_SIGN_AES_CMAC,
	    m2.b, m2.n, true, false), 0);
}

/* ---- key derivation --------------------------------------------------------- */

static bool
all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0)
		if (b[--n] != 0)
			return false;
	return true;
}

/*
 * The wipes of what keyed.c keeps (auth.h): px_ntlm_auth_wipe clears the
 * NTLMv2 response and the encrypted session key of an AUTHENTICATE (names
 * and flags stay for the log, and no key comes from what is left);
 * px_smb_keys_wipe clears derived keys, which then sign nothing.
 */
static void
test_wipes(void)
{
	static struct nlmp v;
	static struct px_ntlm_auth a;
	struct px_ntlm_challenge c;
	struct px_smb_keys k;
	uint8_t key[16], sk[16], msg[SMB2_HDR_LEN + 8];

	nlmp_build(&v, "User", "Domain", NLMP_FLAGS, true);
	CU_ASSERT_EQUAL_FATAL(px_ntlm_parse_challenge(v.chal, v.challen, &c),
	    PX_NTLM_OK);
	CU_ASSERT_EQUAL_FATAL(px_ntlm_parse_authenticate(v.auth, v.authlen,
	    &a), PX_NTLM_OK);
	CU_ASSERT(a.has_enc_key);
	CU_ASSERT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key), PX_KEY_OK);
	px_ntlm_auth_wipe(&a);
	CU_ASSERT(all_zero(a.nt_proof, sizeof(a.nt_proof)));
	CU_ASSERT(all_zero(a.blob, sizeof(a.blob)));
	CU_ASSERT(all_zero(a.enc_session_key, sizeof(a.enc_session_key)));
	CU_ASSERT_EQUAL(a.blob_len, 0);
	CU_ASSERT_EQUAL(a.nt_response_len, 0);
	CU_ASSERT_FALSE(a.has_enc_key);
	CU_ASSERT_STRING_EQUAL(a.user, "User");
	CU_ASSERT_STRING_EQUAL(a.domain, "Domain");
	CU_ASSERT_EQUAL(a.flags, NLMP_FLAGS);
	CU_ASSERT_NOT_EQUAL(px_ntlm_session_key(&c, &a, v.nthash, key),
	    PX_KEY_OK);
	px_ntlm_auth_wipe(&a);
	px_ntlm_auth_wipe(NULL);

	unhex(ANAT_SK, sk, 16);
	CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0300, sk, 16,
	    NULL, PX_CIPHER_AES128_CCM, &k), 0);
	memset(msg, 0, sizeof(msg));
	msg[0] = 0xFE;
	msg[1] = 'S';
	msg[2] = 'M';
	msg[3] = 'B';
	msg[4] = SMB2_HDR_LEN;
	CU_ASSERT_EQUAL(px_smb2_sign(&k, SMB2_DIALECT_0300, PX_SIGN_AES_CMAC,
	    msg, sizeof(msg), false, false), 0);
	px_smb_keys_wipe(&k);
	CU_ASSERT(all_zero(&k, sizeof(k)));
	CU_ASSERT_EQUAL(px_smb2_sign(&k, SMB2_DIALECT_0300, PX_SIGN_AES_CMAC,
	    msg, sizeof(msg), false, false), -1);
	px_smb_keys_wipe(NULL);
}

static void
test_keys(void)
{
	struct px_smb_keys k;
	uint8_t sk[32], pre[64];

	/* [ANAT] 3.0 (EncryptionKey is the client's: ServerIn = C2S). */
	unhex("7CD451825D0450D235424E44BA6E78CC", sk, 16);
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0300, sk, 16, NULL,
	    PX_CIPHER_NONE, &k), 0);
	CU_ASSERT(eqhex(k.signing, 16, "0B7E9C5CAC36C0F6EA9AB275298CEDCE"));
	CU_ASSERT(eqhex(k.c2s, 16, "FAD27796665B313EBB578F388632B4F7"));
	CU_ASSERT(eqhex(k.s2c, 16, "B0F0427F7CEB416D1D9DCC0CD4F99447"));
	CU_ASSERT_EQUAL(k.cipher, PX_CIPHER_AES128_CCM);
	CU_ASSERT_EQUAL(k.cipher_key_len, 16);
	unhex("4E01A2B313BCF660CC250BEF021AEDE6", sk, 16);
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0302, sk, 16, NULL,
	    PX_CIPHER_AES128_CCM, &k), 0);
	CU_ASSERT(eqhex(k.signing, 16, "BA1A17DBBFEC349BCA105563D598952F"));
	/* 3.0.x knows no other cipher. */
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0300, sk, 16, NULL,
	    PX_CIPHER_AES128_GCM, &k), -1);

	/* 2.x: the session key signs; no ciphers. */
	unhex(ANAT_SK, sk, 16);
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0210, sk, 16, NULL,
	    PX_CIPHER_NONE, &k), 0);
	CU_ASSERT_EQUAL(memcmp(k.signing, sk, 16), 0);
	CU_ASSERT_EQUAL(k.cipher_key_len, 0);
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0202, sk, 16, NULL,
	    PX_CIPHER_AES128_CCM, &k), -1);

	/* 3.1.1 AES-256 [XCHK]: L = 256 cipher keys, L = 128 signing key. */
	unhex(ANAT_PREAUTH[4], pre, 64);
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16, pre,
	    PX_CIPHER_AES256_GCM, &k), 0);
	CU_ASSERT_EQUAL(k.cipher_key_len, 32);
	CU_ASSERT(eqhex(k.signing, 16, "73FE7A9A77BEF0BDE49C650D8CCB5F76"));
	CU_ASSERT(eqhex(k.c2s, 32, "049c27fd8a340262e32c643dea2ba507"
	    "af7a4c085fd2505aeffcbdeae6d6d8ab"));
	CU_ASSERT(eqhex(k.s2c, 32, "35952fed051bf2471af5f7acc63674b8"
	    "87a54b47af46959f7caff1ce537d7419"));
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16, pre,
	    PX_CIPHER_AES256_CCM, &k), 0);
	CU_ASSERT(eqhex(k.c2s, 32, "049c27fd8a340262e32c643dea2ba507"
	    "af7a4c085fd2505aeffcbdeae6d6d8ab"));

	/* A 32-byte (Kerberos) key: SessionKey = first 16 bytes for signing
	 * and AES-128, FullSessionKey for AES-256 [XCHK]. */
	unhex("101112131415161718191a1b1c1d1e1f", sk + 16, 16);
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 32, pre,
	    PX_CIPHER_AES256_GCM, &k), 0);
	CU_ASSERT(eqhex(k.signing, 16, "73FE7A9A77BEF0BDE49C650D8CCB5F76"));
	CU_ASSERT(eqhex(k.c2s, 32, "6659adc5f8561f882f7f7c57c6d01a31"
	    "cce639ad34a5b2d73ae178b2995699e1"));
	CU_ASSERT(eqhex(k.s2c, 32, "6b1d9663d13beb3efecf6c7523a73a59"
	    "8b604233c22f92982d3d3dc4cebdc67d"));
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 32, pre,
	    PX_CIPHER_AES128_GCM, &k), 0);
	CU_ASSERT(eqhex(k.c2s, 16, "629BCBC54422A0F572B97F45989B6073"));

	/* 3.1.1 without a cipher: signing only. */
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16, pre,
	    PX_CIPHER_NONE, &k), 0);
	CU_ASSERT_EQUAL(k.cipher_key_len, 0);
	/* Refusals: unknown dialect or cipher, no preauth, no key. */
	CU_ASSERT_EQUAL(px_smb_keys_derive(0x0301, sk, 16, pre, 0, &k), -1);
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16, pre, 5,
	    &k), -1);
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16, NULL, 1,
	    &k), -1);
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 0, pre, 1,
	    &k), -1);
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, NULL, 16, pre,
	    1, &k), -1);
}

/* ---- signing ------------------------------------------------------------ */

static void
test_signing(void)
{
	static const struct {
		uint16_t dialect, alg;
		bool from_server, cancel;
		const char *sig;
	} t[] = {
		/* [ANAT] */
		{ SMB2_DIALECT_0311, PX_SIGN_AES_CMAC, true, false,
		    "EBE146DA120BA25FC3376A49DFE31BC1" },
		/* 3.0 uses CMAC whatever alg says ([ANAT] key, same bytes) */
		{ SMB2_DIALECT_0300, PX_SIGN_AES_GMAC, true, false,
		    "EBE146DA120BA25FC3376A49DFE31BC1" },
		/* [XCHK] */
		{ SMB2_DIALECT_0210, PX_SIGN_AES_CMAC, true, false,
		    "69f4b33f052c75b5f93906a96746a04e" },
		{ SMB2_DIALECT_0311, PX_SIGN_HMAC_SHA256, true, false,
		    "373d8b4ae191dc8c15be375c5bdaefcb" },
		{ SMB2_DIALECT_0311, PX_SIGN_AES_GMAC, true, false,
		    "75d05bac99ff7fcc52a44c354381d559" },
		{ SMB2_DIALECT_0311, PX_SIGN_AES_GMAC, true, true,
		    "255282373588cd04ab1e9b58c617ef73" },
	};
	struct px_smb_keys k311, k;
	struct px_smb_ctx *sx = px_smb_ctx_new();
	struct msg m;
	uint8_t buf[1024], sk[16], pre[64], save[1024];
	size_t i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sx);
	load(&m, ANAT_MSGS[SS_RSP2]);
	unhex(ANAT_SK, sk, 16);
	unhex(ANAT_PREAUTH[4], pre, 64);
	CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16,
	    pre, 0, &k311), 0);
	for (i = 0; i < NELEM(t); i++) {
		if (t[i].dialect == SMB2_DIALECT_0210) {
			CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(t[i].dialect,
			    sk, 16, NULL, 0, &k), 0);
		} else {
			k = k311;
			k.dialect = t[i].dialect;
		}
		memcpy(buf, m.b, m.n);
		memset(buf + 48, 0xEE, 16);
		UT_CHECK(px_smb2_sign(&k, t[i].dialect, t[i].alg, buf, m.n,
		    t[i].from_server, t[i].cancel) == 0 &&
		    eqhex(buf + 48, 16, t[i].sig), "sign row %zu", i);
		UT_CHECK(px_get_u32(buf + 16) & SMB2_FLAGS_SIGNED,
		    "flag row %zu", i);
		memcpy(save, buf, m.n);
		UT_CHECK(px_smb2_verify(&k, t[i].dialect, t[i].alg, buf, m.n,
		    t[i].from_server, t[i].cancel) == 0, "verify row %zu", i);
		UT_CHECK(memcmp(save, buf, m.n) == 0, "untouched row %zu", i);
		/* The same with one context kept across the rows (each row
		 * changes the algorithm or the key under it). */
		memset(buf + 48, 0xEE, 16);
		UT_CHECK(px_smb2_sign_ctx(sx, &k, t[i].dialect, t[i].alg, buf,
		    m.n, t[i].from_server, t[i].cancel) == 0 &&
		    eqhex(buf + 48, 16, t[i].sig), "ctx sign row %zu", i);
		UT_CHECK(px_smb2_verify_ctx(sx, &k, t[i].dialect, t[i].alg, buf,
		    m.n, t[i].from_server, t[i].cancel) == 0,
		    "ctx verify row %zu", i);
		buf[m.n - 1] ^= 0x80;
		UT_CHECK(px_smb2_verify_ctx(sx, &k, t[i].dialect, t[i].alg, buf,
		    m.n, t[i].from_server, t[i].cancel) == -1,
		    "ctx body row %zu", i);
		buf[m.n - 1] ^= 0x80;
		UT_CHECK(memcmp(save, buf, m.n) == 0, "ctx untouched row %zu", i);
		/* Any changed byte, header or body, breaks it. */
		buf[3 + i] ^= 0x01;
		UT_CHECK(px_smb2_verify(&k, t[i].dialect, t[i].alg, buf, m.n,
		    t[i].from_server, t[i].cancel) == -1, "hdr row %zu", i);
		buf[3 + i] ^= 0x01;
		buf[m.n - 1] ^= 0x80;
		UT_CHECK(px_smb2_verify(&k, t[i].dialect, t[i].alg, buf, m.n,
		    t[i].from_server, t[i].cancel) == -1, "body row %zu", i);
		buf[m.n - 1] ^= 0x80;
		buf[48 + i] ^= 0x10;
		UT_CHECK(px_smb2_verify(&k, t[i].dialect, t[i].alg, buf, m.n,
		    t[i].from_server, t[i].cancel) == -1, "sig row %zu", i);
		buf[48 + i] ^= 0x10;
		/* GMAC binds the direction and CANCEL bits. */
		if (t[i].alg == PX_SIGN_AES_GMAC &&
		    t[i].dialect == SMB2_DIALECT_0311) {
			UT_CHECK(px_smb2_verify(&k, t[i].dialect, t[i].alg,
			    buf, m.n, !t[i].from_server, t[i].cancel) == -1,
			    "gmac role row %zu", i);
			UT_CHECK(px_smb2_verify(&k, t[i].dialect, t[i].alg,
			    buf, m.n, t[i].from_server, !t[i].cancel) == -1,
			    "gmac cancel row %zu", i);
		}
	}
	/* Refusals: short element, dialect mismatch, unknown algorithm. */
	memcpy(buf, m.b, m.n);
	CU_ASSERT_EQUAL(px_smb2_sign(&k311, SMB2_DIALECT_0311, 1, buf, 63,
	    true, false), -1);
	CU_ASSERT_EQUAL(px_smb2_verify(&k311, SMB2_DIALECT_0311, 1, buf, 63,
	    true, false), -1);
	CU_ASSERT_EQUAL(px_smb2_verify(&k311, SMB2_DIALECT_0302, 1, buf, m.n,
	    true, false), -1);
	CU_ASSERT_EQUAL(px_smb2_sign(&k311, SMB2_DIALECT_0311, 3, buf, m.n,
	    true, false), -1);
	/* A bare 64-byte header signs and verifies. */
	CU_ASSERT_EQUAL(px_smb2_sign(&k311, SMB2_DIALECT_0311, 2, buf, 64,
	    false, false), 0);
	CU_ASSERT_EQUAL(px_smb2_verify(&k311, SMB2_DIALECT_0311, 2, buf, 64,
	    false, false), 0);
	/* ... also through a context, which refuses the same. */
	CU_ASSERT_EQUAL(px_smb2_sign_ctx(sx, &k311, SMB2_DIALECT_0311, 1, buf,
	    63, true, false), -1);
	CU_ASSERT_EQUAL(px_smb2_verify_ctx(sx, &k311, SMB2_DIALECT_0302, 1,
	    buf, m.n, true, false), -1);
	CU_ASSERT_EQUAL(px_smb2_sign_ctx(sx, &k311, SMB2_DIALECT_0311, 3, buf,
	    m.n, true, false), -1);
	CU_ASSERT_EQUAL(px_smb2_verify_ctx(sx, &k311, SMB2_DIALECT_0311, 2,
	    buf, 64, false, false), 0);
	px_smb_ctx_free(sx);
	px_smb_ctx_free(NULL);
}

/* ---- encryption --------------------------------------------------------- */

/*
 * The vector just checked (msg[0..n) sealed as exp[0..en) under k, nonce,
 * session sid), again through the context ex kept across every vector of
 * test_encrypt_vectors (so across ciphers and keys): sealed, opened, and
 * sealed in place.
 */
#define ENC_CTX_CHECK(cipher, sid) do {					\
	memset(out, 0, sizeof(out));					\
	CU_ASSERT_EQUAL(px_smb2_encrypt_ctx(ex, &k, cipher, PX_C2S, sid,	\
	    nonce, msg, n, out), 0);					\
	CU_ASSERT(memcmp(out, exp, en) == 0);				\
	memset(out, 0, sizeof(out));					\
	CU_ASSERT_EQUAL(px_smb2_decrypt_ctx(ex, &k, cipher, PX_C2S, exp, en,	\
	    out, &on), 0);						\
	CU_ASSERT(on == n && memcmp(out, msg, n) == 0);			\
	memcpy(out + 52, msg, n);					\
	CU_ASSERT_EQUAL(px_smb2_encrypt_ctx(ex, &k, cipher, PX_C2S, sid,	\
	    nonce, out + 52, n, out), 0);				\
	CU_ASSERT(memcmp(out, exp, en) == 0);				\
} while (0)

static void
test_encrypt_vectors(void)
{
	struct px_smb_keys k;
	struct px_smb_ctx *ex = px_smb_ctx_new();
	uint8_t sk[32], pre[64], nonce[16], msg[512], exp[512], out[600];
	size_t n, en, on;
	struct msg tf;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ex);

	/* [ENC30]: AES-128-CCM, a WRITE request, 16 nonce bytes in the
	 * header (only 11 used by CCM, all 16 authenticated). */
	unhex("B4546771B515F766A86735532DD6C4F0", sk, 16);
	CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0300, sk, 16,
	    NULL, 0, &k), 0);
	CU_ASSERT(eqhex(k.c2s, 16, "261B72350558F2E9DCF613070383EDBF"));
	CU_ASSERT(eqhex(k.s2c, 16, "8FE2B57EC34D2DB5B1A9727F526BBDB5"));
	n = unhex("FE534D4240000100000000000900400008000000000000000400000000000000"
	    "FFFE0000010000001100001400E4080000000000000000000000000000000000"
	    "3100700017000000000000000000000015010000390000020100000039020000"
	    "00000000000000007000000000000000536D623320656E6372797074696F6E20"
	    "74657374696E67", msg, sizeof(msg));
	unhex("66E69A111892584FB5ED524A744DA3EE", nonce, 16);
	en = unhex("FD534D4281A286535415445DAE393921E44FA42E66E69A111892584FB5ED524A"
	    "744DA3EE87000000000001001100001400E4080025C8FEE16605A437832D1CD5"
	    "2DA9F4645333482A175FE5384563F45FCDAFAEF38BC62BA4D5C62897996625A4"
	    "4C29BE5658DE2E6117585779E7B59FFD971278D08580D7FA899E410E910EABF5"
	    "AA1DB43050B33B49182637759AC15D84BFCDF5B6B238993C0F4CF4D6012023F6"
	    "C627297075D84B7803912D0A9639634453595EF3E33FFE4E7AC2AB", exp,
	    sizeof(exp));
	CU_ASSERT_EQUAL(px_smb2_encrypt(&k, PX_CIPHER_AES128_CCM, PX_C2S,
	    UINT64_C(0x8E40014000011), nonce, msg, n, out), 0);
	CU_ASSERT_EQUAL(en, n + PX_TRANSFORM_HDR_LEN);
	CU_ASSERT_EQUAL(memcmp(out, exp, en), 0);
	CU_ASSERT_EQUAL(px_smb2_decrypt(&k, PX_CIPHER_AES128_CCM, PX_C2S, exp,
	    en, out, &on), 0);
	CU_ASSERT(on == n && memcmp(out, msg, n) == 0);
	ENC_CTX_CHECK(PX_CIPHER_AES128_CCM, UINT64_C(0x8E40014000011));
	/* The server's response, under the S2C key. */
	load(&tf, "FD534D42A6015530A18F6D9AFFE22AFAE8E66484860000000000000011000014"
	    "00E4080050000000000001001100001400E40800DBF46435C5F14169293CE079"
	    "E344479BF670227E49873F458672C3098DAC467DD5809F369D67409166515787"
	    "1483E01F7BECD02064EAC3E235F913668BBC2F097980D4B378F1993EFF6E60D1"
	    "77309E5B");
	CU_ASSERT_EQUAL(px_smb2_decrypt(&k, PX_CIPHER_AES128_CCM, PX_S2C, tf.b,
	    tf.n, out, &on), 0);
	CU_ASSERT(on == 80 && eqhex(out, on,
	    "FE534D4240000100000000000900210009000000000000000400000000000000"
	    "FFFE0000010000001100001400E4080000000000000000000000000000000000"
	    "11000000170000000000000000000000"));
	CU_ASSERT_EQUAL(px_smb2_decrypt(&k, PX_CIPHER_AES128_CCM, PX_C2S, tf.b,
	    tf.n, out, &on), -1);
	CU_ASSERT_EQUAL(px_smb2_decrypt_ctx(ex, &k, PX_CIPHER_AES128_CCM,
	    PX_S2C, tf.b, tf.n, out, &on), 0);
	CU_ASSERT(on == 80 && px_get_u32(out + 64) == 0x11);
	CU_ASSERT_EQUAL(px_smb2_decrypt_ctx(ex, &k, PX_CIPHER_AES128_CCM,
	    PX_C2S, tf.b, tf.n, out, &on), -1);

	/* [ENC311]: AES-128-GCM. */
	unhex("419FDDF34C1E001909D362AE7FB6AF79", sk, 16);
	unhex("B23F3CBFD69487D9832B79B1594A367CDD950909B774C3A4C412B4FCEA9EDDDB"
	    "A7DB256BA2EA30E977F11F9B113247578E0E915C6D2A513B8F2FCA5707DC8770",
	    pre, 64);
	CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16,
	    pre, PX_CIPHER_AES128_GCM, &k), 0);
	CU_ASSERT(eqhex(k.c2s, 16, "A2F5E80E5D59103034F32E52F698E5EC"));
	CU_ASSERT(eqhex(k.s2c, 16, "748C50868C90F302962A5C35F5F9A8BF"));
	n = unhex("FE534D4240000100000000000900010008000000000000000500000000000000"
	    "FFFE000001000000250000000010000000000000000000000000000000000000"
	    "3100700017000000000000000000000006000000040000000100000004000000"
	    "00000000000000007000000000000000536D623320656E6372797074696F6E20"
	    "74657374696E67", msg, sizeof(msg));
	memset(nonce, 0, 16);
	unhex("C7D6822D269CAF48904C664C", nonce, 12);
	en = unhex("FD534D42BD73D97D2BC9001BCAFAC0FDFF5FEEBCC7D6822D269CAF48904C664C"
	    "00000000870000000000010025000000001000006ECDD2A7AFC7B47763057A04"
	    "1B8FD4DAFFE990B70C9E09D36C084E02D14EF247F8BDE38ACF6256F8B1D3B56F"
	    "77FBDEB312FEA5E92CBCC1ED8FB2EBBFAA75E49A4A394BB44576545567C24D4C"
	    "014D47C9FBDFDAFD2C4F9B72F8D256452620A299F48E29E53D6B61D1C13A19E9"
	    "1AF013F00D17E3ABC2FC3D36C8C1B6B93973253852DBD442E46EE8", exp,
	    sizeof(exp));
	CU_ASSERT_EQUAL(px_smb2_encrypt(&k, PX_CIPHER_AES128_GCM, PX_C2S,
	    UINT64_C(0x100000000025), nonce, msg, n, out), 0);
	CU_ASSERT(en == n + 52 && memcmp(out, exp, en) == 0);
	ENC_CTX_CHECK(PX_CIPHER_AES128_GCM, UINT64_C(0x100000000025));
	load(&tf, "FD534D42ACBE1CB7ED343ADF1725EF144D90D4B0E06831DD2E8EB7B400000000"
	    "0000000050000000000001002500000000100000"
	    "26BBBF949983A6C1C796559D0F2C510CB651D1F7B6AC8DED32A2A0B8F2D793A8"
	    "15C6F6B848D69767A215841A42D400AE6DDB5F0B44173A014973321FDD7950DA"
	    "6179159B82E03C9E18A050FF0EA1C967");
	CU_ASSERT_EQUAL(px_smb2_decrypt(&k, PX_CIPHER_AES128_GCM, PX_S2C, tf.b,
	    tf.n, out, &on), 0);
	CU_ASSERT(on == 80 && eqhex(out, on,
	    "FE534D4240000100000000000900010001000000000000000500000000000000"
	    "FFFE000001000000250000000010000000000000000000000000000000000000"
	    "11000000170000000000000000000000"));
	memset(out, 0, sizeof(out));
	CU_ASSERT_EQUAL(px_smb2_decrypt_ctx(ex, &k, PX_CIPHER_AES128_GCM,
	    PX_S2C, tf.b, tf.n, out, &on), 0);
	CU_ASSERT(on == 80 && eqhex(out, on,
	    "FE534D4240000100000000000900010001000000000000000500000000000000"
	    "FFFE000001000000250000000010000000000000000000000000000000000000"
	    "11000000170000000000000000000000"));

	/* [XCHK] AES-256-GCM and AES-256-CCM on the same WRITE, keys from the
	 * [ANAT] session. */
	unhex(ANAT_SK, sk, 16);
	unhex(ANAT_PREAUTH[4], pre, 64);
	CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16,
	    pre, PX_CIPHER_AES256_GCM, &k), 0);
	memset(nonce, 0, 16);
	unhex("101112131415161718191a1b", nonce, 12);
	en = unhex(
	    "fd534d42a370f27ba423535fc7344e9b15fed98b101112131415161718191a1b"
	    "0000000087000000000001002500000000100000706d49b8a34f5225e3d75ce9"
	    "e9865365a2b89421e18ef36166888ca350714d365aa934fc5be35e1779177230"
	    "b65532449b1ad8fbff66cbe3400d43a913a34ec1a5c49736fec88bc929dc6ade"
	    "dd2cfeb94afe695ca16b399eed2b55dbe41e181708d6fa210dfa99bd815b7d0d"
	    "a47b71a64c21005bc5bc734987312fa12646bc57391092061cbfe6",
	    exp,
	    sizeof(exp));
	CU_ASSERT_EQUAL(px_smb2_encrypt(&k, PX_CIPHER_AES256_GCM, PX_C2S,
	    UINT64_C(0x100000000025), nonce, msg, n, out), 0);
	CU_ASSERT(en == n + 52 && memcmp(out, exp, en) == 0);
	ENC_CTX_CHECK(PX_CIPHER_AES256_GCM, UINT64_C(0x100000000025));
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16, pre,
	    PX_CIPHER_AES256_CCM, &k), 0);
	memset(nonce, 0, 16);
	unhex("101112131415161718191a", nonce, 11);
	en = unhex(
	    "fd534d42d2b117221b06ab245b6a4f3db7e9de00101112131415161718191a00"
	    "00000000870000000000010025000000001000004c9976c5ef8c8335820910af"
	    "305ee892fd415d9970203f57104b1a91a6cfa902ae0b6ba30d8df7287265a675"
	    "127ddbd738f55d8773a8d2f68759734527d36dbbe29afba8837af3578122c5d1"
	    "41467fcec132b7b753c418f37e1f7bcbd6ba19b5b14eadf7c071c23fecf7838d"
	    "ef462b6259047e423481f7c5875dbc2333ddf18de8cddc8531084e",
	    exp, sizeof(exp));
	CU_ASSERT_EQUAL(px_smb2_encrypt(&k, PX_CIPHER_AES256_CCM, PX_C2S,
	    UINT64_C(0x100000000025), nonce, msg, n, out), 0);
	CU_ASSERT(en == n + 52 && memcmp(out, exp, en) == 0);
	ENC_CTX_CHECK(PX_CIPHER_AES256_CCM, UINT64_C(0x100000000025));
	px_smb_ctx_free(ex);
}

/* Tiny deterministic PRNG (xorshift64*) for test data and mutations. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static void
test_encrypt_roundtrip(void)
{
	static const size_t sizes[] = { 1, 63, 64, 65, 1000, 65536 + 7 };
	static uint8_t msg[65600], ct[65600 + 52], pt[65600];
	struct px_smb_keys k;
	struct px_nonce_gen g;
	uint8_t sk[16], pre[64], nonce[16];
	uint16_t cipher;
	uint64_t seed = 0x1234567;
	size_t s, i, n, on;

	unhex(ANAT_SK, sk, 16);
	unhex(ANAT_PREAUTH[4], pre, 64);
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)rnd(&seed);
	for (cipher = 1; cipher <= 4; cipher++) {
		CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk,
		    16, pre, cipher, &k), 0);
		CU_ASSERT_EQUAL_FATAL(px_nonce_gen_init(&g, cipher), 0);
		for (s = 0; s < NELEM(sizes); s++) {
			n = sizes[s];
			CU_ASSERT_EQUAL_FATAL(px_nonce_next(&g, nonce), 0);
			UT_CHECK(px_smb2_encrypt(&k, cipher, PX_S2C, 77, nonce,
			    msg, n, ct) == 0, "enc c%u n%zu", cipher, n);
			UT_CHECK(px_get_u32(ct + 36) == n &&
			    px_get_u16(ct + 42) == 1 &&
			    px_get_u64(ct + 44) == 77 &&
			    memcmp(ct + 20, nonce, 16) == 0,
			    "header c%u n%zu", cipher, n);
			UT_CHECK(px_smb2_decrypt(&k, cipher, PX_S2C, ct, n + 52,
			    pt, &on) == 0 && on == n &&
			    memcmp(pt, msg, n) == 0, "dec c%u n%zu", cipher, n);
			/* The other direction's key does not open it. */
			UT_CHECK(px_smb2_decrypt(&k, cipher, PX_C2S, ct, n + 52,
			    pt, &on) == -1 && on == 0, "dir c%u n%zu",
			    cipher, n);
			/* Wrong cipher argument. */
			UT_CHECK(px_smb2_decrypt(&k, (uint16_t)(cipher % 4 + 1),
			    PX_S2C, ct, n + 52, pt, &on) == -1,
			    "cipher c%u n%zu", cipher, n);
		}
		/* Tampering with any header byte (tag, nonce, size, reserved,
		 * flags, session id) or the ciphertext is refused, and the
		 * output is wiped. */
		n = 100;
		CU_ASSERT_EQUAL(px_nonce_next(&g, nonce), 0);
		CU_ASSERT_EQUAL(px_smb2_encrypt(&k, cipher, PX_S2C, 77, nonce,
		    msg, n, ct), 0);
		for (i = 0; i < n + 52; i++) {
			ct[i] ^= 0x04;
			memset(pt, 0xAB, n);
			UT_CHECK(px_smb2_decrypt(&k, cipher, PX_S2C, ct, n + 52,
			    pt, &on) == -1 && on == 0, "tamper c%u byte %zu",
			    cipher, i);
			UT_CHECK(i < 4 || (i >= 36 && i < 44) ||
			    (pt[0] == 0 && pt[n - 1] == 0),
			    "wiped c%u byte %zu", cipher, i);
			ct[i] ^= 0x04;
		}
		/* Truncated or extended: size no longer matches, refused
		 * before anything is decrypted (out untouched). */
		memset(pt, 0xAB, n);
		CU_ASSERT_EQUAL(px_smb2_decrypt(&k, cipher, PX_S2C, ct, n + 51,
		    pt, &on), -1);
		CU_ASSERT_EQUAL(px_smb2_decrypt(&k, cipher, PX_S2C, ct, n + 53,
		    pt, &on), -1);
		CU_ASSERT(pt[0] == 0xAB && pt[n - 2] == 0xAB);
		/* Truncated with a matching (lying) size: the tag fails. */
		px_put_u32(ct + 36, (uint32_t)(n - 1));
		CU_ASSERT_EQUAL(px_smb2_decrypt(&k, cipher, PX_S2C, ct, n + 51,
		    pt, &on), -1);
		px_put_u32(ct + 36, (uint32_t)n);
		CU_ASSERT_EQUAL(px_smb2_decrypt(&k, cipher, PX_S2C, ct, 52,
		    pt, &on), -1);
		CU_ASSERT_EQUAL(px_smb2_decrypt(&k, cipher, PX_S2C, ct, 10,
		    pt, &on), -1);
		/* In place, both ways. */
		memcpy(ct + 52, msg, n);
		CU_ASSERT_EQUAL(px_smb2_encrypt(&k, cipher, PX_C2S, 9, nonce,
		    ct + 52, n, ct), 0);
		CU_ASSERT_EQUAL(px_smb2_decrypt(&k, cipher, PX_C2S, ct, n + 52,
		    ct + 52, &on), 0);
		CU_ASSERT(on == n && memcmp(ct + 52, msg, n) == 0);
		/* Empty payload. */
		CU_ASSERT_EQUAL(px_smb2_encrypt(&k, cipher, PX_S2C, 1, nonce,
		    msg, 0, ct), -1);
	}
	/* No cipher keys: refused. */
	CU_ASSERT_EQUAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16, pre, 0,
	    &k), 0);
	CU_ASSERT_EQUAL(px_smb2_encrypt(&k, 0, PX_S2C, 1, nonce, msg, 10, ct),
	    -1);
}

/*
 * Contexts kept across messages (px_*_ctx): every result must equal the
 * one-shot call's, message after message, with the direction and the
 * work (sealing, opening) interleaved, after a failed operation, and
 * after the keys changed under the context (re-derived in place, as a
 * re-authenticated session's are).
 */
static void
test_ctx_reuse(void)
{
	static const struct {
		uint16_t dialect, alg;
	} sg[] = {
		{ SMB2_DIALECT_0210, PX_SIGN_HMAC_SHA256 },
		{ SMB2_DIALECT_0300, PX_SIGN_AES_CMAC },
		{ SMB2_DIALECT_0311, PX_SIGN_AES_GMAC },
		{ SMB2_DIALECT_0311, PX_SIGN_AES_CMAC },
		{ SMB2_DIALECT_0311, PX_SIGN_HMAC_SHA256 },
	};
	static uint8_t msg[4200], a[4200], b[4200], ct[4300], ct2[4300];
	static uint8_t pt[4300];
	struct px_smb_keys k, k2;
	struct px_smb_ctx *x = px_smb_ctx_new();
	uint8_t sk[16], sk2[16], pre[64], nonce[16], sig1[16];
	uint64_t seed = 0xC0FFEE;
	uint16_t cipher;
	size_t i, j, n, on, on2;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	unhex(ANAT_SK, sk, 16);
	memcpy(sk2, sk, 16);
	sk2[0] ^= 0x01;
	unhex(ANAT_PREAUTH[4], pre, 64);
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)rnd(&seed);

	/* Signing: runs of messages, each with its own id, size, role. */
	for (i = 0; i < NELEM(sg); i++) {
		CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(sg[i].dialect, sk, 16,
		    sg[i].dialect == SMB2_DIALECT_0311 ? pre : NULL, 0, &k),
		    0);
		for (j = 0; j < 40; j++) {
			bool srv = j % 3 == 1, cancel = j % 7 == 5;

			n = 64 + (size_t)(rnd(&seed) % 4000);
			memcpy(a, msg, n);
			px_put_u64(a + 24, rnd(&seed));      /* MessageId */
			memcpy(b, a, n);
			UT_CHECK(px_smb2_sign(&k, sg[i].dialect, sg[i].alg, a, n,
			    srv, cancel) == 0 && px_smb2_sign_ctx(x, &k,
			    sg[i].dialect, sg[i].alg, b, n, srv, cancel) == 0 &&
			    memcmp(a, b, n) == 0, "sign %zu/%zu", i, j);
			UT_CHECK(px_smb2_verify_ctx(x, &k, sg[i].dialect,
			    sg[i].alg, a, n, srv, cancel) == 0,
			    "verify %zu/%zu", i, j);
			if (j % 5 == 0) {
				/* a failure, then a good one again */
				b[n - 1] ^= 0x20;
				UT_CHECK(px_smb2_verify_ctx(x, &k,
				    sg[i].dialect, sg[i].alg, b, n, srv,
				    cancel) == -1, "bad %zu/%zu", i, j);
				UT_CHECK(px_smb2_verify_ctx(x, &k,
				    sg[i].dialect, sg[i].alg, a, n, srv,
				    cancel) == 0, "after bad %zu/%zu", i, j);
			}
			if (sg[i].alg == PX_SIGN_AES_GMAC &&
			    sg[i].dialect == SMB2_DIALECT_0311)
				UT_CHECK(px_smb2_verify_ctx(x, &k,
				    sg[i].dialect, sg[i].alg, a, n, !srv,
				    cancel) == -1, "gmac role %zu/%zu", i, j);
		}
		/* The key changes under the context (same struct): the next
		 * signature is the new key's, and the old key's comes back
		 * when the old key does. */
		n = 200;
		memcpy(a, msg, n);
		CU_ASSERT_EQUAL(px_smb2_sign_ctx(x, &k, sg[i].dialect,
		    sg[i].alg, a, n, false, false), 0);
		memcpy(sig1, a + 48, 16);
		k2 = k;
		CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(sg[i].dialect, sk2, 16,
		    sg[i].dialect == SMB2_DIALECT_0311 ? pre : NULL, 0, &k), 0);
		memcpy(a, msg, n);
		memcpy(b, msg, n);
		UT_CHECK(px_smb2_sign_ctx(x, &k, sg[i].dialect, sg[i].alg, a,
		    n, false, false) == 0 && px_smb2_sign(&k, sg[i].dialect,
		    sg[i].alg, b, n, false, false) == 0 &&
		    memcmp(a, b, n) == 0 && memcmp(a + 48, sig1, 16) != 0,
		    "new key %zu", i);
		UT_CHECK(px_smb2_verify_ctx(x, &k2, sg[i].dialect, sg[i].alg,
		    a, n, false, false) == -1, "old key refuses %zu", i);
		memcpy(a, msg, n);
		UT_CHECK(px_smb2_sign_ctx(x, &k2, sg[i].dialect, sg[i].alg, a,
		    n, false, false) == 0 && memcmp(a + 48, sig1, 16) == 0,
		    "old key again %zu", i);
	}

	/* Sealing: the four ciphers one after the other on one context,
	 * both keys, sealing and opening interleaved. */
	for (cipher = 1; cipher <= 4; cipher++) {
		CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk,
		    16, pre, cipher, &k), 0);
		memset(nonce, 0, sizeof(nonce));
		for (j = 0; j < 40; j++) {
			enum px_key_dir d = (j / 2) % 2 ? PX_C2S : PX_S2C;
			uint64_t sid = rnd(&seed);

			n = 1 + (size_t)(rnd(&seed) % 4100);
			px_put_u64(nonce, rnd(&seed));
			px_put_u16(nonce + 8, (uint16_t)j);
			/* what the peer sealed, opened by the context */
			UT_CHECK(px_smb2_encrypt(&k, cipher, d, sid, nonce, msg,
			    n, ct) == 0 && px_smb2_decrypt_ctx(x, &k, cipher, d,
			    ct, n + 52, pt, &on) == 0 && on == n &&
			    memcmp(pt, msg, n) == 0, "open c%u %zu", cipher, j);
			/* what smbaccel seals, the same bytes as one-shot */
			px_put_u16(nonce + 8, (uint16_t)(j + 1000));
			UT_CHECK(px_smb2_encrypt_ctx(x, &k, cipher, d, sid,
			    nonce, msg, n, ct2) == 0 && px_smb2_encrypt(&k,
			    cipher, d, sid, nonce, msg, n, ct) == 0 &&
			    memcmp(ct, ct2, n + 52) == 0, "seal c%u %zu",
			    cipher, j);
			/* the other direction's key does not open it */
			UT_CHECK(px_smb2_decrypt_ctx(x, &k, cipher,
			    d == PX_C2S ? PX_S2C : PX_C2S, ct2, n + 52, pt,
			    &on2) == -1, "dir c%u %zu", cipher, j);
			if (j % 4 == 0) {
				/* a bad tag, then a good message again */
				ct2[4 + j % 16] ^= 0x01;
				UT_CHECK(px_smb2_decrypt_ctx(x, &k, cipher, d,
				    ct2, n + 52, pt, &on2) == -1,
				    "bad c%u %zu", cipher, j);
				ct2[4 + j % 16] ^= 0x01;
			}
			UT_CHECK(px_smb2_decrypt_ctx(x, &k, cipher, d, ct2,
			    n + 52, pt, &on2) == 0 && on2 == n &&
			    memcmp(pt, msg, n) == 0, "reopen c%u %zu",
			    cipher, j);
			/* in place */
			memcpy(ct2 + 52, msg, n);
			UT_CHECK(px_smb2_encrypt_ctx(x, &k, cipher, d, sid,
			    nonce, ct2 + 52, n, ct2) == 0 &&
			    memcmp(ct, ct2, n + 52) == 0 &&
			    px_smb2_decrypt_ctx(x, &k, cipher, d, ct2, n + 52,
			    ct2 + 52, &on2) == 0 &&
			    memcmp(ct2 + 52, msg, n) == 0, "in place c%u %zu",
			    cipher, j);
		}
		/* New keys in the same struct: sealed with them, and what
		 * the old keys sealed no longer opens. */
		n = 300;
		CU_ASSERT_EQUAL(px_smb2_encrypt_ctx(x, &k, cipher, PX_S2C, 5,
		    nonce, msg, n, ct2), 0);
		CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0311,
		    sk2, 16, pre, cipher, &k), 0);
		UT_CHECK(px_smb2_decrypt_ctx(x, &k, cipher, PX_S2C, ct2, n + 52,
		    pt, &on) == -1, "old key c%u", cipher);
		UT_CHECK(px_smb2_encrypt_ctx(x, &k, cipher, PX_S2C, 5, nonce,
		    msg, n, ct2) == 0 && px_smb2_encrypt(&k, cipher, PX_S2C, 5,
		    nonce, msg, n, ct) == 0 && memcmp(ct, ct2, n + 52) == 0,
		    "new key c%u", cipher);
	}
	/* A context that signs and seals with the same session's keys. */
	CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk, 16, pre,
	    PX_CIPHER_AES128_GCM, &k), 0);
	memcpy(a, msg, 100);
	memcpy(b, msg, 100);
	CU_ASSERT_EQUAL(px_smb2_sign_ctx(x, &k, SMB2_DIALECT_0311,
	    PX_SIGN_AES_GMAC, a, 100, true, false), 0);
	CU_ASSERT_EQUAL(px_smb2_encrypt_ctx(x, &k, PX_CIPHER_AES128_GCM, PX_S2C,
	    7, nonce, a, 100, ct), 0);
	CU_ASSERT_EQUAL(px_smb2_decrypt_ctx(x, &k, PX_CIPHER_AES128_GCM, PX_S2C,
	    ct, 152, pt, &on), 0);
	CU_ASSERT_EQUAL(px_smb2_verify_ctx(x, &k, SMB2_DIALECT_0311,
	    PX_SIGN_AES_GMAC, pt, 100, true, false), 0);
	CU_ASSERT_EQUAL(px_smb2_sign(&k, SMB2_DIALECT_0311, PX_SIGN_AES_GMAC,
	    b, 100, true, false), 0);
	CU_ASSERT(memcmp(a, b, 100) == 0);
	/* Refusals leave the context usable. */
	CU_ASSERT_EQUAL(px_smb2_encrypt_ctx(x, &k, PX_CIPHER_AES128_CCM,
	    PX_S2C, 7, nonce, msg, 10, ct), -1);
	CU_ASSERT_EQUAL(px_smb2_encrypt_ctx(x, &k, PX_CIPHER_AES128_GCM,
	    (enum px_key_dir)2, 7, nonce, msg, 10, ct), -1);
	CU_ASSERT_EQUAL(px_smb2_encrypt_ctx(x, &k, PX_CIPHER_AES128_GCM,
	    PX_S2C, 7, nonce, msg, 10, ct), 0);
	px_smb_ctx_free(x);
}

/*
 * A sealed GCM message authenticated whole with only its head decrypted
 * (px_smb2_open_head_ctx; smbaccel's path for a large sealed WRITE that
 * goes upstream as the client sealed it): every length around the block
 * boundaries and up to a 1 MiB WRITE, heads from 0 to the whole message,
 * sealed by the one-shot EVP path.  The head must be the plaintext, the
 * bulk must be left as it was (it did not go through the cipher), and one
 * flipped bit anywhere (payload head, bulk, last byte, nonce, session id,
 * tag) must be refused with the head wiped.  CCM is refused (its tag
 * covers the plaintext).  px_smb2_peek_ctx gives the same head without
 * authenticating.
 */
static void
test_open_head(void)
{
	static const size_t lens[] = { 1, 15, 16, 17, 111, 112, 113, 200,
	    4103, 65536, 1048576 + 112, 1048576 + 117 };
	static const size_t heads[] = { 0, 5, 16, 64, 112, 113 };
	const size_t max = 1048576 + 117;
	uint8_t *msg = malloc(max), *ct = malloc(max + 52), *out = malloc(max);
	struct px_smb_ctx *x = px_smb_ctx_new();
	struct px_smb_keys k, k2;
	uint8_t sk[16], pre[64], nonce[16], peek[128];
	uint64_t seed = 0x5EA1ED;
	uint16_t cipher;
	size_t i, j, h, n, on, p, lo, hi;

	CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ct);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	unhex(ANAT_SK, sk, 16);
	unhex(ANAT_PREAUTH[4], pre, 64);
	for (i = 0; i < max; i++)
		msg[i] = (uint8_t)rnd(&seed);
	memset(nonce, 0, sizeof(nonce));
	for (cipher = PX_CIPHER_AES128_GCM; cipher <= PX_CIPHER_AES256_GCM;
	    cipher += 2) {
		CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk,
		    16, pre, cipher, &k), 0);
		for (i = 0; i < NELEM(lens); i++) {
			n = lens[i];
			px_put_u64(nonce, rnd(&seed));
			CU_ASSERT_EQUAL_FATAL(px_smb2_encrypt(&k, cipher,
			    PX_C2S, 0x1122334455667788ULL, nonce, msg, n, ct),
			    0);
			for (j = 0; j <= NELEM(heads); j++) {
				h = j < NELEM(heads) ? heads[j] : n;
				if (h > n)
					continue;
				memset(out, 0xA5, n);
				UT_CHECK(px_smb2_open_head_ctx(x, &k, cipher,
				    PX_C2S, ct, n + 52, h, out, &on) == 0 &&
				    on == n && memcmp(out, msg, h) == 0,
				    "open c%u n=%zu head=%zu", cipher, n, h);
				/* untouched: the whole blocks past the head */
				lo = (h + 15) & ~(size_t)15;
				hi = n & ~(size_t)15;
				for (p = lo; p < hi && out[p] == 0xA5; p++)
					;
				UT_CHECK(p >= hi, "bulk decrypted c%u n=%zu "
				    "head=%zu at %zu", cipher, n, h, p);
				if (h <= sizeof(peek))
					UT_CHECK(px_smb2_peek_ctx(x, &k, cipher,
					    PX_C2S, ct, n + 52, peek, h) == 0 &&
					    memcmp(peek, msg, h) == 0,
					    "peek c%u n=%zu head=%zu", cipher,
					    n, h);
			}
			/* one bit anywhere: refused, the head wiped */
			{
				size_t at[] = { 52, 52 + n / 2, 52 + n - 1,
				    20, 44, 4, 19 };

				for (j = 0; j < NELEM(at); j++) {
					h = n < 112 ? n : 112;
					ct[at[j]] ^= 0x08;
					memset(out, 0xA5, n);
					UT_CHECK(px_smb2_open_head_ctx(x, &k,
					    cipher, PX_C2S, ct, n + 52, h, out,
					    &on) == -1 && on == 0,
					    "tamper c%u n=%zu at %zu", cipher,
					    n, at[j]);
					for (p = 0; p < h && out[p] == 0; p++)
						;
					UT_CHECK(p == h, "head not wiped c%u "
					    "n=%zu at %zu", cipher, n, at[j]);
					ct[at[j]] ^= 0x08;
				}
			}
			/* the other direction's key refuses it; the message
			 * opens again after the failures */
			UT_CHECK(px_smb2_open_head_ctx(x, &k, cipher, PX_S2C,
			    ct, n + 52, 0, out, &on) == -1,
			    "dir c%u n=%zu", cipher, n);
			UT_CHECK(px_smb2_open_head_ctx(x, &k, cipher, PX_C2S,
			    ct, n + 52, 16 < n ? 16 : n, out, &on) == 0 &&
			    memcmp(out, msg, 16 < n ? 16 : n) == 0,
			    "again c%u n=%zu", cipher, n);
			/* a full open on the same context agrees */
			UT_CHECK(px_smb2_decrypt_ctx(x, &k, cipher, PX_C2S, ct,
			    n + 52, out, &on) == 0 && on == n &&
			    memcmp(out, msg, n) == 0, "full c%u n=%zu", cipher,
			    n);
		}
		/* new keys in the same struct: the old message is refused */
		k2 = k;
		sk[0] ^= 0x01;
		CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk,
		    16, pre, cipher, &k), 0);
		sk[0] ^= 0x01;
		UT_CHECK(px_smb2_open_head_ctx(x, &k, cipher, PX_C2S, ct,
		    n + 52, 16, out, &on) == -1, "new key c%u", cipher);
		UT_CHECK(px_smb2_open_head_ctx(x, &k2, cipher, PX_C2S, ct,
		    n + 52, 16, out, &on) == 0, "old key again c%u", cipher);
	}
	/* CCM refused (its tag covers the plaintext), then GCM with no
	 * context, a bad header, a head longer than the message */
	for (cipher = PX_CIPHER_AES128_CCM; cipher <= PX_CIPHER_AES128_GCM;
	    cipher++) {
		int want = cipher == PX_CIPHER_AES128_GCM ? 0 : -1;

		CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(SMB2_DIALECT_0311, sk,
		    16, pre, cipher, &k), 0);
		CU_ASSERT_EQUAL_FATAL(px_smb2_encrypt(&k, cipher, PX_C2S, 9,
		    nonce, msg, 300, ct), 0);
		CU_ASSERT_EQUAL(px_smb2_open_head_ctx(x, &k, cipher, PX_C2S,
		    ct, 352, 16, out, &on), want);
		CU_ASSERT_EQUAL(px_smb2_peek_ctx(x, &k, cipher, PX_C2S, ct,
		    352, peek, 16), want);
	}
	CU_ASSERT_EQUAL(px_smb2_open_head_ctx(NULL, &k, PX_CIPHER_AES128_GCM,
	    PX_C2S, ct, 352, 16, out, &on), -1);
	ct[0] = 0xFE;
	CU_ASSERT_EQUAL(px_smb2_open_head_ctx(x, &k, PX_CIPHER_AES128_GCM,
	    PX_C2S, ct, 352, 16, out, &on), -1);
	CU_ASSERT_EQUAL(px_smb2_peek_ctx(x, &k, PX_CIPHER_AES128_GCM, PX_C2S,
	    ct, 352, peek, 16), -1);
	ct[0] = 0xFD;
	CU_ASSERT_EQUAL(px_smb2_peek_ctx(x, &k, PX_CIPHER_AES128_GCM, PX_C2S,
	    ct, 352, peek, 301), -1);   /* more than the message */
	CU_ASSERT_EQUAL(px_smb2_open_head_ctx(x, &k, PX_CIPHER_AES128_GCM,
	    PX_C2S, ct, 352, 16, out, &on), 0);
	px_smb_ctx_free(x);
	free(msg);
	free(ct);
	free(out);
}

/*
 * smbaccel computes AES-CMAC itself over OpenSSL's AES-128-CBC (the CBC
 * state carried from one message into the next), and AES-GMAC through
 * OpenSSL's GCM mode interface (see smbcrypto.c); here both must agree
 * with OpenSSL's EVP_MAC ("CMAC", "GMAC" with the MS-SMB2 nonce) on the
 * message with its signature field zeroed, for every element length from
 * 64 to 600 bytes (every way the last block can fall), around the 2 KiB
 * CMAC takes in one piece and its 16 KiB bursts, and up to a 1 MiB
 * WRITE, with and without a context kept across messages.
 */
static int
ossl_mac(const char *name, const uint8_t key[16], const uint8_t *msg,
    size_t len, bool from_server, uint8_t tag[16])
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, name, NULL);
	EVP_MAC_CTX *c = mac ? EVP_MAC_CTX_new(mac) : NULL;
	OSSL_PARAM p[3];
	uint8_t iv[12];
	size_t n = 0;
	int ok;

	memcpy(iv, msg + 24, 8);
	px_put_u32(iv + 8, from_server ? 1 : 0);
	p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER,
	    (char *)(uintptr_t)(strcmp(name, "GMAC") == 0 ? "AES-128-GCM" :
	    "AES-128-CBC"), 0);
	p[1] = strcmp(name, "GMAC") == 0 ?
	    OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_IV, iv, 12) :
	    OSSL_PARAM_construct_end();
	p[2] = OSSL_PARAM_construct_end();
	ok = c != NULL && EVP_MAC_init(c, key, 16, p) == 1 &&
	    EVP_MAC_update(c, msg, len) == 1 &&
	    EVP_MAC_final(c, tag, &n, 16) == 1 && n == 16;
	EVP_MAC_CTX_free(c);
	EVP_MAC_free(mac);
	return ok ? 0 : -1;
}

static void
test_mac_vs_openssl(void)
{
	static const size_t big[] = { 1023, 1024, 1025, 2047, 2048, 2049,
	    16383, 16384, 16385, 16400, 16447, 16448, 16449, 32768 + 64,
	    65536 + 112, 1048576 + 112, 1048576 + 113 };
	static const struct {
		const char *name;
		uint16_t dialect, alg;
	} m[] = {
		{ "CMAC", SMB2_DIALECT_0300, PX_SIGN_AES_CMAC },
		{ "GMAC", SMB2_DIALECT_0311, PX_SIGN_AES_GMAC },
	};
	size_t lens[600 - 64 + NELEM(big)], nl = 0, i, j, n;
	struct px_smb_keys k;
	struct px_smb_ctx *x = px_smb_ctx_new();
	uint8_t *msg = malloc(1048576 + 200), *z = malloc(1048576 + 200);
	uint8_t sk[16], pre[64], tag[16];
	uint64_t seed = 4493;
	int r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(z);
	for (n = 64; n < 600; n++)
		lens[nl++] = n;
	for (i = 0; i < NELEM(big); i++)
		lens[nl++] = big[i];
	for (i = 0; i < 1048576 + 200; i++)
		msg[i] = (uint8_t)rnd(&seed);
	unhex(ANAT_PREAUTH[4], pre, 64);
	for (j = 0; j < NELEM(m); j++)
	for (r = 0; r < 2; r++) {
		unhex(ANAT_SK, sk, 16);
		sk[15] ^= (uint8_t)r;      /* a second key on the context */
		CU_ASSERT_EQUAL_FATAL(px_smb_keys_derive(m[j].dialect, sk, 16,
		    pre, 0, &k), 0);
		for (i = 0; i < nl; i++) {
			bool srv = (i + (size_t)r) % 2 == 1;

			n = lens[i];
			memcpy(z, msg, n);
			px_put_u64(z + 24, rnd(&seed));     /* MessageId */
			/* what is MACed: the flag set, the signature zero */
			px_put_u32(z + 16, px_get_u32(z + 16) | SMB2_FLAGS_SIGNED);
			memset(z + 48, 0, 16);
			CU_ASSERT_EQUAL_FATAL(ossl_mac(m[j].name, k.signing, z, n,
			    srv, tag), 0);
			UT_CHECK(px_smb2_sign(&k, m[j].dialect, m[j].alg, z, n,
			    srv, false) == 0 && memcmp(z + 48, tag, 16) == 0,
			    "%s one-shot len %zu key %d", m[j].name, n, r);
			memset(z + 48, 0, 16);
			UT_CHECK(px_smb2_sign_ctx(x, &k, m[j].dialect, m[j].alg, z,
			    n, srv, false) == 0 && memcmp(z + 48, tag, 16) == 0,
			    "%s ctx len %zu key %d", m[j].name, n, r);
			UT_CHECK(px_smb2_verify_ctx(x, &k, m[j].dialect, m[j].alg,
			    z, n, srv, false) == 0, "%s verify len %zu key %d",
			    m[j].name, n, r);
		}
	}
	px_smb_ctx_free(x);
	free(msg);
	free(z);
}

static int
cmp16(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

static void
test_nonce_gen(void)
{
	enum { N = 20000 };
	static uint8_t all[2 * N][16];
	struct px_nonce_gen g, h;
	uint16_t cipher;
	size_t i, used, tail;

	for (cipher = 1; cipher <= 4; cipher++) {
		used = (cipher == PX_CIPHER_AES128_CCM ||
		    cipher == PX_CIPHER_AES256_CCM) ? 11 : 12;
		CU_ASSERT_EQUAL_FATAL(px_nonce_gen_init(&g, cipher), 0);
		CU_ASSERT_EQUAL_FATAL(px_nonce_gen_init(&h, cipher), 0);
		for (i = 0; i < N; i++) {
			CU_ASSERT_EQUAL_FATAL(px_nonce_next(&g, all[i]), 0);
			CU_ASSERT_EQUAL_FATAL(px_nonce_next(&h, all[N + i]),
			    0);
		}
		for (i = 0; i < 2 * N; i++) {
			/* Bit 63 of the first 8 bytes set: disjoint from a
			 * peer's little-endian message counter. */
			UT_CHECK(all[i][7] & 0x80, "top bit c%u %zu", cipher,
			    i);
			for (tail = used; tail < 16; tail++)
				UT_CHECK(all[i][tail] == 0, "tail c%u %zu",
				    cipher, i);
		}
		qsort(all, 2 * N, 16, cmp16);
		for (i = 1; i < 2 * N; i++)
			UT_CHECK(memcmp(all[i - 1], all[i], 16) != 0,
			    "repeat c%u at %zu", cipher, i);
	}
	/* Exhaustion and bad ciphers. */
	CU_ASSERT_EQUAL(px_nonce_gen_init(&g, PX_CIPHER_AES128_GCM), 0);
	g.left = 1;
	CU_ASSERT_EQUAL(px_nonce_next(&g, all[0]), 0);
	CU_ASSERT_EQUAL(px_nonce_next(&g, all[0]), -1);
	CU_ASSERT_EQUAL(px_nonce_gen_init(&g, 0), -1);
	CU_ASSERT_EQUAL(px_nonce_gen_init(&g, 5), -1);
	CU_ASSERT_EQUAL(px_nonce_next(&g, all[0]), -1);
}

/* ---- parser robustness ------------------------------------------------------ */

/* Every strict prefix of buf is refused (not OK); nothing crashes. */
static void
truncations(const uint8_t *buf, size_t len, bool auth, const char *what)
{
	static struct px_ntlm_auth a;
	struct px_ntlm_challenge c;
	uint8_t *copy;
	size_t n;
	int rc;

	for (n = 0; n < len; n++) {
		/* Exact-size heap copy: ASan sees any read past the end. */
		copy = malloc(n ? n : 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
		memcpy(copy, buf, n);
		rc = auth ? px_ntlm_parse_authenticate(copy, n, &a) :
		    px_ntlm_parse_challenge(copy, n, &c);
		UT_CHECK(rc != PX_NTLM_OK, "%s truncated to %zu gave OK", what,
		    n);
		free(copy);
	}
}

static void
test_truncated(void)
{
	static struct nlmp v;
	static struct msg m[NELEM(ANAT_MSGS)];
	const uint8_t *sb;
	size_t n, i;

	nlmp_build(&v, "User", "Domain", NLMP_FLAGS, true);
	truncations(v.auth, v.authlen, true, "spnego auth");
	truncations(v.auth_raw, v.auth_rawlen, true, "raw auth");
	truncations(v.chal, v.challen, false, "spnego challenge");
	truncations(v.chal_raw, v.chal_rawlen, false, "raw challenge");
	for (i = 0; i < NELEM(ANAT_MSGS); i++)
		load(&m[i], ANAT_MSGS[i]);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sb = secbuf(&m[SS_REQ2], false, &n));
	truncations(sb, n, true, "windows auth");
	CU_ASSERT_PTR_NOT_NULL_FATAL(sb = secbuf(&m[SS_RSP1], true, &n));
	truncations(sb, n, false, "windows challenge");
}

/* Lying lengths and offsets: each row patches the raw AUTHENTICATE or its
 * SPNEGO wrapping and must be refused as malformed. */
static void
test_lying(void)
{
	static struct nlmp v;
	static struct px_ntlm_auth a;
	static uint8_t b[2048];
	struct px_ntlm_challenge c;
	static const size_t fields[] = { 12, 20, 28, 36, 44, 52 };
	size_t i, n;

	nlmp_build(&v, "User", "Domain", NLMP_FLAGS, true);
	for (i = 0; i < NELEM(fields); i++) {
		const size_t f = fields[i];
		static const struct {
			const char *what;
			int kind;
		} pt[] = {
			{ "offset past end", 0 }, { "offset 0xffffffff", 1 },
			{ "length + 1", 2 }, { "length 0xffff", 3 },
		};
		size_t j;

		for (j = 0; j < NELEM(pt); j++) {
			memcpy(b, v.auth_raw, v.auth_rawlen);
			switch (pt[j].kind) {
			case 0:
				px_put_u32(b + f + 4,
				    (uint32_t)v.auth_rawlen);
				break;
			case 1:
				px_put_u32(b + f + 4, 0xffffffffu);
				break;
			case 2:
				/* the last field (key) ends at the end; grow
				 * the others into it only if they end there */
				px_put_u16(b + f, (uint16_t)(px_get_u16(b + f) +
				    (uint16_t)(v.auth_rawlen -
				    px_get_u32(b + f + 4) -
				    px_get_u16(b + f) + 1)));
				break;
			default:
				px_put_u16(b + f, 0xffff);
				break;
			}
			UT_CHECK(px_ntlm_parse_authenticate(b, v.auth_rawlen,
			    &a) == PX_NTLM_BAD, "field @%zu %s", f,
			    pt[j].what);
		}
	}
	/* Odd UTF-16 length of the user name; a NUL inside it. */
	memcpy(b, v.auth_raw, v.auth_rawlen);
	px_put_u16(b + 36, (uint16_t)(px_get_u16(b + 36) - 1));
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, v.auth_rawlen, &a),
	    PX_NTLM_BAD);
	memcpy(b, v.auth_raw, v.auth_rawlen);
	b[px_get_u32(b + 40)] = 0;
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, v.auth_rawlen, &a),
	    PX_NTLM_BAD);
	/* EncryptedRandomSessionKey of 8 bytes. */
	memcpy(b, v.auth_raw, v.auth_rawlen);
	px_put_u16(b + 52, 8);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, v.auth_rawlen, &a),
	    PX_NTLM_BAD);
	/* Shorter than the fixed part. */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(v.auth_raw, 63, &a),
	    PX_NTLM_BAD);
	CU_ASSERT_EQUAL(px_ntlm_parse_challenge(v.chal_raw, 47, &c),
	    PX_NTLM_BAD);
	/* CHALLENGE TargetInfo past the end. */
	memcpy(b, v.chal_raw, v.chal_rawlen);
	px_put_u32(b + 44, 0xfffffff0u);
	CU_ASSERT_EQUAL(px_ntlm_parse_challenge(b, v.chal_rawlen, &c),
	    PX_NTLM_BAD);

	/* DER: the SPNEGO auth is a1 82 LL LL 30 82 ...; lengths lie. */
	CU_ASSERT_EQUAL_FATAL(v.auth[0], 0xa1);
	CU_ASSERT_EQUAL_FATAL(v.auth[1], 0x82);
	n = v.authlen;
	memcpy(b, v.auth, n);
	b[3]++;                                  /* outer longer than data */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, n, &a), PX_NTLM_BAD);
	memcpy(b, v.auth, n);
	b[3]--;                                  /* inner longer than outer */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, n, &a), PX_NTLM_BAD);
	memcpy(b, v.auth, n);
	b[1] = 0x80;                             /* indefinite length */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, n, &a), PX_NTLM_BAD);
	memcpy(b, v.auth, n);
	b[1] = 0x85;                             /* 5 length bytes */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, n, &a), PX_NTLM_BAD);
	memcpy(b, v.auth, n);
	b[1] = 0x84;                             /* 4 bytes, huge */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, n, &a), PX_NTLM_BAD);
	memcpy(b, v.auth, n);
	b[0] = 0xbf;                             /* high tag number form */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, n, &a), PX_NTLM_BAD);
	memcpy(b, v.auth, n);
	b[0] = 0x30;                             /* not a NegotiationToken */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, n, &a), PX_NTLM_BAD);
	memcpy(b, v.auth, n);
	b[4] = 0x31;                             /* SET instead of SEQUENCE */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, n, &a), PX_NTLM_BAD);
	/* The negState [0] is a0 03 0a 01 01 at b[8]: make it a [5]. */
	memcpy(b, v.auth, n);
	CU_ASSERT_EQUAL_FATAL(b[8], 0xa0);
	b[8] = 0xa5;
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, n, &a), PX_NTLM_BAD);
	/* ... or a second responseToken [2] (duplicate element). */
	memcpy(b, v.auth, n);
	b[8] = 0xa2;
	b[10] = 0x04;
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, n, &a), PX_NTLM_BAD);
	/* ENUMERATED of 1 byte replaced by OCTET STRING. */
	memcpy(b, v.auth, n);
	b[10] = 0x04;
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, n, &a), PX_NTLM_BAD);
	/* Empty and NULL input. */
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(b, 0, &a), PX_NTLM_BAD);
	CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(NULL, 0, &a), PX_NTLM_BAD);
	/* NegTokenInit with a non-OID in mechTypes; trailing bytes inside an
	 * explicit tag. */
	{
		uint8_t bad_oids[] = { 0x04, 0x01, 0x00 };
		uint8_t t[512];

		n = spnego_init(bad_oids, sizeof(bad_oids), v.auth_raw,
		    v.auth_rawlen, t);
		CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(t, n, &a),
		    PX_NTLM_BAD);
		/* NegTokenInit's [0] holding a SET, not a SEQUENCE. */
		n = spnego_init(OID_NTLM_DER, sizeof(OID_NTLM_DER),
		    v.auth_raw, v.auth_rawlen, t);
		CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(t, n, &a),
		    PX_NTLM_OK);
		{
			uint8_t *q = memchr(t + 10, 0xa0, n - 10);
			size_t hl;

			CU_ASSERT_PTR_NOT_NULL_FATAL(q);
			hl = q[1] == 0x82 ? 4 : q[1] == 0x81 ? 3 : 2;
			CU_ASSERT_EQUAL_FATAL(q[hl], 0x30);
			q[hl] = 0x31;
			CU_ASSERT_EQUAL(px_ntlm_parse_authenticate(t, n, &a),
			    PX_NTLM_BAD);
		}
	}
}

/* Random byte flips on valid buffers: no crash, and any OK result has
 * NUL-terminated names and a blob inside its array. */
static void
test_mutations(void)
{
	static struct nlmp v;
	static struct msg m[NELEM(ANAT_MSGS)];
	static struct px_ntlm_auth a;
	struct px_ntlm_challenge c;
	const uint8_t *src[4];
	size_t srclen[4], s, it, k, n;
	uint64_t seed = 0xC0FFEE;
	uint8_t *b, key[16];
	int rc;

	nlmp_build(&v, "User", "Domain", NLMP_FLAGS, true);
	for (k = 0; k < NELEM(ANAT_MSGS); k++)
		load(&m[k], ANAT_MSGS[k]);
	src[0] = v.auth;
	srclen[0] = v.authlen;
	src[1] = v.chal;
	srclen[1] = v.challen;
	CU_ASSERT_PTR_NOT_NULL_FATAL(src[2] = secbuf(&m[SS_REQ2], false,
	    &srclen[2]));
	CU_ASSERT_PTR_NOT_NULL_FATAL(src[3] = secbuf(&m[SS_RSP1], true,
	    &srclen[3]));
	for (s = 0; s < 4; s++) {
		for (it = 0; it < 3000; it++) {
			n = srclen[s];
			if (rnd(&seed) % 4 == 0)
				n = rnd(&seed) % (n + 1);
			b = malloc(n ? n : 1);
			CU_ASSERT_PTR_NOT_NULL_FATAL(b);
			memcpy(b, src[s], n);
			for (k = 0; n && k < 1 + rnd(&seed) % 4; k++)
				b[rnd(&seed) % n] ^= (uint8_t)(1 + rnd(&seed) %
				    255);
			if (px_ntlm_parse_authenticate(b, n, &a) == PX_NTLM_OK) {
				UT_CHECK(memchr(a.user, 0, sizeof(a.user)) &&
				    memchr(a.domain, 0, sizeof(a.domain)) &&
				    a.blob_len <= sizeof(a.blob),
				    "auth invariants src %zu it %zu", s, it);
				if (px_ntlm_parse_challenge(src[s == 0 ? 1 : 3],
				    srclen[s == 0 ? 1 : 3], &c) == PX_NTLM_OK)
					(void)px_ntlm_session_key(&c, &a,
					    v.nthash, key);
			}
			rc = px_ntlm_parse_challenge(b, n, &c);
			UT_CHECK(rc >= PX_NTLM_BAD && rc <= PX_NTLM_OTHER,
			    "challenge rc %d", rc);
			free(b);
		}
	}
}

/* ---- secrets file --------------------------------------------------------- */

static char secrets_path[64];

/* Write text to a fresh 0600 root-owned temporary file. */
static bool
write_secrets(const char *text)
{
	int fd;
	size_t n = strlen(text);

	snprintf(secrets_path, sizeof(secrets_path), "/tmp/ut_secrets.XXXXXX");
	if ((fd = mkstemp(secrets_path)) == -1)
		return false;
	if (fchmod(fd, 0600) == -1 || write(fd, text, n) != (ssize_t)n) {
		close(fd);
		unlink(secrets_path);
		return false;
	}
	close(fd);
	return true;
}

static void
test_secrets_good(void)
{
	struct px_secrets *s;
	const uint8_t *h;
	char err[512];

	if (geteuid() != 0) {
		fprintf(stderr, "secrets tests need root (file ownership); "
		    "skipped\n");
		return;
	}
	CU_ASSERT_FATAL(write_secrets(
	    "# smbaccel secrets\n"
	    "\n"
	    "   \t\n"
	    "  # indented comment\n"
	    "SUT311\\Administrator:password:Password01!\n"
	    "user:nthash:A4F49C406510BDCAB6824EE7C30FD852\n"
	    "OTHER\\user : nthash : 00112233445566778899aabbccddeeff \r\n"
	    "spacey:password:pass word # with: colon \n"
	    "DOM\\umlaut:password:P\xc3\xa4ssw\xc3\xb6rd\n"
	    "empty:password:\n"
	    "last:nthash:31d6cfe0d16ae931b73c59d7e0c089c0"));  /* no newline */
	s = px_secrets_load(secrets_path, err, sizeof(err));
	UT_CHECK(s != NULL, "load: %s", err);
	if (s == NULL)
		goto out;
	CU_ASSERT_EQUAL(px_secrets_count(s), 7);
	/* case-insensitive user and domain */
	h = px_secrets_nthash(s, "sut311", "ADMINISTRATOR");
	CU_ASSERT(h != NULL && eqhex(h, 16, "7C4FE5EADA682714A036E39378362BAB"));
	/* a domainless entry matches any domain, or none */
	h = px_secrets_nthash(s, "ANYDOM", "User");
	CU_ASSERT(h != NULL && eqhex(h, 16, "a4f49c406510bdcab6824ee7c30fd852"));
	h = px_secrets_nthash(s, NULL, "user");
	CU_ASSERT(h != NULL && eqhex(h, 16, "a4f49c406510bdcab6824ee7c30fd852"));
	/* ... but an entry for the domain wins */
	h = px_secrets_nthash(s, "other", "USER");
	CU_ASSERT(h != NULL && eqhex(h, 16, "00112233445566778899aabbccddeeff"));
	/* a domain entry matches only its domain */
	CU_ASSERT_PTR_NULL(px_secrets_nthash(s, "SUT312", "administrator"));
	CU_ASSERT_PTR_NULL(px_secrets_nthash(s, "", "administrator"));
	CU_ASSERT_PTR_NULL(px_secrets_nthash(s, "SUT311", "nobody"));
	CU_ASSERT_PTR_NULL(px_secrets_nthash(s, "SUT311", ""));
	/* passwords are verbatim, UTF-8 and may be empty */
	h = px_secrets_nthash(s, "x", "spacey");
	CU_ASSERT(h != NULL && eqhex(h, 16, "75d47af442f5ae8469cec6e9f7182222"));
	h = px_secrets_nthash(s, "dom", "umlaut");
	CU_ASSERT(h != NULL && eqhex(h, 16, "aed9375ba569c9f0216eea5c0c7bf463"));
	h = px_secrets_nthash(s, "x", "empty");
	CU_ASSERT(h != NULL && eqhex(h, 16, "31d6cfe0d16ae931b73c59d7e0c089c0"));
	CU_ASSERT_PTR_NOT_NULL(px_secrets_nthash(s, "x", "last"));
	px_secrets_free(s);
	px_secrets_free(NULL);
out:
	unlink(secrets_path);
}

static void
test_secrets_refused(void)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "u:nthash:0011\n", "line 1: nthash must be 32 hex" },
		{ "# c\n\nu:nthash:0011223344556677889900aabbccddeeff\n",
		    "line 3: nthash must be 32" },
		{ "a:password:x\nu:nthash:0011223344556677889900aabbccddeZ\n",
		    "line 2: nthash has a non-hex" },
		{ "a:password:x\nb:password:y\nno colon at all\n",
		    "line 3: expected [DOMAIN" },
		{ "u:passwd:x\n", "line 1: unknown type" },
		{ "u:password\n", "line 1: expected" },
		{ ":password:x\n", "line 1: bad user name" },
		{ "DOM\\:password:x\n", "line 1: bad DOMAIN\\user" },
		{ "\\u:password:x\n", "line 1: bad DOMAIN\\user" },
		{ "a\\b\\c:password:x\n", "line 1: bad DOMAIN\\user" },
		{ "u:password:\xff\n", "line 1: password is not valid UTF-8" },
		{ "u:password:a\nU:password:b\n",
		    "line 2: duplicate entry for U (first on line 1)" },
		{ "D\\u:password:a\nd\\U:password:b\n", "line 2: duplicate" },
	};
	static char big[2 * PX_SECRETS_MAX_LINE];
	struct px_secrets *s;
	char err[512];
	size_t i;

	if (geteuid() != 0)
		return;
	for (i = 0; i < NELEM(bad); i++) {
		CU_ASSERT_FATAL(write_secrets(bad[i].text));
		err[0] = '\0';
		s = px_secrets_load(secrets_path, err, sizeof(err));
		UT_CHECK(s == NULL && strstr(err, bad[i].want) != NULL,
		    "row %zu: got \"%s\", want \"%s\"", i, err, bad[i].want);
		px_secrets_free(s);
		unlink(secrets_path);
	}
	/* A line over the limit. */
	memset(big, 'x', sizeof(big) - 1);
	memcpy(big, "u:password:", 11);
	CU_ASSERT_FATAL(write_secrets(big));
	s = px_secrets_load(secrets_path, err, sizeof(err));
	UT_CHECK(s == NULL && strstr(err, "line 1: longer than") != NULL,
	    "long line: %s", err);
	unlink(secrets_path);
	/* A NUL byte inside a line. */
	{
		int fd;

		snprintf(secrets_path, sizeof(secrets_path),
		    "/tmp/ut_secrets.XXXXXX");
		CU_ASSERT_FATAL((fd = mkstemp(secrets_path)) != -1);
		CU_ASSERT(write(fd, "u:password:a\0b\n", 15) == 15);
		close(fd);
		s = px_secrets_load(secrets_path, err, sizeof(err));
		UT_CHECK(s == NULL && strstr(err, "line 1: contains a NUL"),
		    "nul: %s", err);
		unlink(secrets_path);
	}
}

static void
test_secrets_perms(void)
{
	static const mode_t modes[] = { 0644, 0640, 0604, 0660, 0601, 0610 };
	struct px_secrets *s;
	char err[512];
	size_t i;

	if (geteuid() != 0)
		return;
	CU_ASSERT_FATAL(write_secrets("u:password:x\n"));
	s = px_secrets_load(secrets_path, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL(s);
	px_secrets_free(s);
	/* 0400 is fine too. */
	CU_ASSERT_EQUAL(chmod(secrets_path, 0400), 0);
	s = px_secrets_load(secrets_path, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL(s);
	px_secrets_free(s);
	for (i = 0; i < NELEM(modes); i++) {
		CU_ASSERT_EQUAL(chmod(secrets_path, modes[i]), 0);
		s = px_secrets_load(secrets_path, err, sizeof(err));
		UT_CHECK(s == NULL && strstr(err, "gives access to group or "
		    "others") != NULL, "mode %04o: %s", (unsigned)modes[i],
		    s ? "accepted" : err);
		px_secrets_free(s);
	}
	/* Not owned by root (nobody). */
	CU_ASSERT_EQUAL(chmod(secrets_path, 0600), 0);
	CU_ASSERT_EQUAL(chown(secrets_path, 65534, 65534), 0);
	s = px_secrets_load(secrets_path, err, sizeof(err));
	UT_CHECK(s == NULL && strstr(err, "owned by uid 65534, must be owned "
	    "by root") != NULL, "nobody: %s", s ? "accepted" : err);
	px_secrets_free(s);
	unlink(secrets_path);
	/* Missing file; a directory. */
	s = px_secrets_load("/nonexistent/smbaccel-secrets", err, sizeof(err));
	UT_CHECK(s == NULL && strstr(err, "No such file") != NULL, "%s", err);
	s = px_secrets_load("/", err, sizeof(err));
	UT_CHECK(s == NULL && strstr(err, "not a regular file") != NULL, "%s",
	    err);
}

static void
test_secrets_limits(void)
{
	struct px_secrets *s;
	char err[512], line[64];
	FILE *f;
	int fd;
	size_t i;

	if (geteuid() != 0)
		return;
	snprintf(secrets_path, sizeof(secrets_path), "/tmp/ut_secrets.XXXXXX");
	CU_ASSERT_FATAL((fd = mkstemp(secrets_path)) != -1);
	CU_ASSERT_FATAL((f = fdopen(fd, "w")) != NULL);
	for (i = 0; i < PX_SECRETS_MAX_ENTRIES; i++) {
		snprintf(line, sizeof(line),
		    "u%zu:nthash:00112233445566778899aabbccddeeff\n", i);
		fputs(line, f);
	}
	fclose(f);
	s = px_secrets_load(secrets_path, err, sizeof(err));
	UT_CHECK(s != NULL && px_secrets_count(s) == PX_SECRETS_MAX_ENTRIES,
	    "max entries: %s", s ? "" : err);
	CU_ASSERT_PTR_NOT_NULL(px_secrets_nthash(s, "d", "U9999"));
	px_secrets_free(s);
	CU_ASSERT_FATAL((f = fopen(secrets_path, "a")) != NULL);
	fputs("one:password:more\n", f);
	fclose(f);
	s = px_secrets_load(secrets_path, err, sizeof(err));
	UT_CHECK(s == NULL && strstr(err, "line 10001: more than") != NULL,
	    "over max: %s", err);
	unlink(secrets_path);
}

/* px_digest16: SHA-512 over length-prefixed parts, first 16 bytes
 * (values from Python's hashlib). */
static void
test_digest16(void)
{
	static const uint8_t ab_c[16] = { 0x85, 0x8f, 0xd9, 0x0c, 0xde, 0x05,
	    0xd6, 0xa8, 0x04, 0x22, 0x24, 0x91, 0x5e, 0xd0, 0xef, 0xcd };
	static const uint8_t a_bc[16] = { 0x55, 0xdf, 0x27, 0x35, 0x16, 0xf9,
	    0xb8, 0xd7, 0x5f, 0x35, 0x40, 0xb2, 0xb6, 0x5c, 0xf2, 0xdb };
	static const uint8_t none[16] = { 0xcf, 0x83, 0xe1, 0x35, 0x7e, 0xef,
	    0xb8, 0xbd, 0xf1, 0x54, 0x28, 0x50, 0xd6, 0x6d, 0x80, 0x07 };
	const void *p[2];
	size_t l[2];
	uint8_t out[16];

	p[0] = "ab"; l[0] = 2; p[1] = "c"; l[1] = 1;
	CU_ASSERT_EQUAL_FATAL(px_digest16(p, l, 2, out), 0);
	CU_ASSERT_EQUAL(memcmp(out, ab_c, 16), 0);
	p[0] = "a"; l[0] = 1; p[1] = "bc"; l[1] = 2;
	CU_ASSERT_EQUAL_FATAL(px_digest16(p, l, 2, out), 0);
	CU_ASSERT_EQUAL(memcmp(out, a_bc, 16), 0);
	CU_ASSERT_EQUAL_FATAL(px_digest16(NULL, NULL, 0, out), 0);
	CU_ASSERT_EQUAL(memcmp(out, none, 16), 0);
	p[0] = NULL; l[0] = 3;
	CU_ASSERT_EQUAL(px_digest16(p, l, 1, out), -1);
	CU_ASSERT_EQUAL(px_digest16(NULL, l, 1, out), -1);
}

/* px_user_id, px_user_id_principal: the user part of smbaccel's lease
 * keys, one per user whatever the case of its names (value from Python's
 * hashlib over "user", UTF-16LE "DOM", UTF-16LE "BOB"). */
static void
test_user_id(void)
{
	static const uint8_t dom_bob[16] = { 0xc8, 0x03, 0x3e, 0x6d, 0xd5,
	    0x02, 0x1a, 0x09, 0xd2, 0xb8, 0x12, 0x68, 0x66, 0x61, 0x7e, 0xf1 };
	static const struct {
		const char *d1, *u1, *d2, *u2;
		bool same;
	} t[] = {
		{ "Dom", "bob", "DOM", "BOB", true },
		{ "SMBACCEL", "smbtest", "smbaccel", "SMBTEST", true },
		{ "SMBACCEL", "smbtest", "SMBACCEL", "smbtest2", false },
		{ "SMBACCEL", "smbtest", "OTHER", "smbtest", false },
		{ "D", "ab", "Da", "b", false },        /* the split counts */
		{ "", "bob", "", "BOB", true },
		{ "", "bob@example.com", "", "BOB@Example.COM", true },
		{ "x", "\xc5\x82ukasz", "X", "\xc5\x81UKASZ", true },
		{ "x", "\xd0\xbf\xd1\x91\xd1\x82\xd1\x80", "X",
		    "\xd0\x9f\xd0\x81\xd0\xa2\xd0\xa0", true },
	};
	uint8_t a[16], b[16];
	size_t i;

	CU_ASSERT_EQUAL_FATAL(px_user_id("Dom", "Bob", a), 0);
	CU_ASSERT_EQUAL(memcmp(a, dom_bob, 16), 0);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		CU_ASSERT_EQUAL_FATAL(px_user_id(t[i].d1, t[i].u1, a), 0);
		CU_ASSERT_EQUAL_FATAL(px_user_id(t[i].d2, t[i].u2, b), 0);
		UT_CHECK((memcmp(a, b, 16) == 0) == t[i].same,
		    "%s\\%s and %s\\%s", t[i].d1, t[i].u1, t[i].d2, t[i].u2);
	}
	/* no user, or names smbaccel cannot read: unknown */
	CU_ASSERT_EQUAL(px_user_id("DOM", "", a), -1);
	CU_ASSERT_EQUAL(px_user_id(NULL, "bob", a), -1);
	CU_ASSERT_EQUAL(px_user_id("DOM", "b\xffob", a), -1);
	/* a Kerberos client principal: (REALM, name), split at the last @ */
	CU_ASSERT_EQUAL_FATAL(px_user_id_principal("Bob@dom", a), 0);
	CU_ASSERT_EQUAL(memcmp(a, dom_bob, 16), 0);
	CU_ASSERT_EQUAL_FATAL(px_user_id_principal("a@b@R.EXAMPLE", a), 0);
	CU_ASSERT_EQUAL_FATAL(px_user_id("r.example", "A@B", b), 0);
	CU_ASSERT_EQUAL(memcmp(a, b, 16), 0);
	CU_ASSERT_EQUAL(px_user_id_principal("bob", a), -1);
	CU_ASSERT_EQUAL(px_user_id_principal("@DOM", a), -1);
	CU_ASSERT_EQUAL(px_user_id_principal("bob@", a), -1);
	CU_ASSERT_EQUAL(px_user_id_principal(NULL, a), -1);
}

void
ut_register_crypto(void)
{
	CU_pSuite s;

	s = CU_add_suite("crypto", suite_init, NULL);
	if (s == NULL)
		return;
	CU_add_test(s, "nt hash", test_nt_hash);
	CU_add_test(s, "NTLMv2 MS-NLMP 4.2.4", test_ntlm_nlmp);
	CU_add_test(s, "NTLMv2 non-ASCII user names", test_ntlm_upcase);
	CU_add_test(s, "anonymous, v1, kerberos", test_ntlm_kinds);
	CU_add_test(s, "windows 3.1.1 capture end to end",
	    test_windows_capture);
	CU_add_test(s, "key derivation", test_keys);
	CU_add_test(s, "wiping an AUTHENTICATE and derived keys", test_wipes);
	CU_add_test(s, "signing", test_signing);
	CU_add_test(s, "encryption vectors", test_encrypt_vectors);
	CU_add_test(s, "encryption round trips, tampering",
	    test_encrypt_roundtrip);
	CU_add_test(s, "contexts kept across messages", test_ctx_reuse);
	CU_add_test(s, "GCM authenticated, only the head decrypted",
	    test_open_head);
	CU_add_test(s, "AES-CMAC, AES-GMAC against OpenSSL's EVP_MAC",
	    test_mac_vs_openssl);
	CU_add_test(s, "nonce generator", test_nonce_gen);
	CU_add_test(s, "parsers: every truncation", test_truncated);
	CU_add_test(s, "parsers: lying lengths", test_lying);
	CU_add_test(s, "parsers: random mutations", test_mutations);
	CU_add_test(s, "secrets: good file", test_secrets_good);
	CU_add_test(s, "secrets: malformed lines", test_secrets_refused);
	CU_add_test(s, "secrets: permissions, owner", test_secrets_perms);
	CU_add_test(s, "secrets: limits", test_secrets_limits);
	CU_add_test(s, "digest16 (lease keys)", test_digest16);
	CU_add_test(s, "user ids (lease keys)", test_user_id);
}
