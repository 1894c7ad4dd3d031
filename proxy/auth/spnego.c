/*
 * spnego.c - SPNEGO (RFC 4178, MS-SPNG) and GSS-API framing (RFC 2743 3.1)
 * of the relayed SESSION_SETUP security buffers: which mechanism a buffer
 * carries (NTLMSSP, Kerberos, other) and where its inner token is.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proxy/auth/auth.h"
#include "proxy/auth/der.h"

const char *
px_gss_mech_name(enum px_gss_mech m)
{
	switch (m) {
	case PX_MECH_NONE: return "none";
	case PX_MECH_NTLMSSP: return "ntlmssp";
	case PX_MECH_KERBEROS: return "kerberos";
	case PX_MECH_OTHER: return "other";
	}
	return "?";
}

/* ---- mechanisms ------------------------------------------------------------ */

#define DER_SEQUENCE 0x30
#define DER_OID      0x06
#define DER_OCTETS   0x04
#define DER_ENUM     0x0A
#define DER_APP0     0x60   /* GSS InitialContextToken (RFC 2743 3.1) */
#define DER_CTX(n)   (0xA0 + (n))

const uint8_t PX_OID_SPNEGO[6] = { 0x2b, 0x06, 0x01, 0x05, 0x05, 0x02 };
const uint8_t PX_OID_NTLMSSP[10] = { 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82,
    0x37, 0x02, 0x02, 0x0a };
const uint8_t PX_OID_KRB5[9] = { 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12,
    0x01, 0x02, 0x02 };
const uint8_t PX_OID_MS_KRB5[9] = { 0x2a, 0x86, 0x48, 0x82, 0xf7, 0x12,
    0x01, 0x02, 0x02 };
const uint8_t PX_OID_KRB5_U2U[10] = { 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12,
    0x01, 0x02, 0x02, 0x03 };
const uint8_t PX_OID_IAKERB[6] = { 0x2b, 0x06, 0x01, 0x05, 0x02, 0x05 };

static const uint8_t NTLMSSP_SIG[8] = { 'N', 'T', 'L', 'M', 'S', 'S', 'P', 0 };

static enum px_gss_mech
mech_of_oid(const struct px_der *oid)
{
	if (PX_OID_IS(oid, PX_OID_NTLMSSP))
		return PX_MECH_NTLMSSP;
	if (PX_OID_IS(oid, PX_OID_KRB5) || PX_OID_IS(oid, PX_OID_MS_KRB5) ||
	    PX_OID_IS(oid, PX_OID_KRB5_U2U) || PX_OID_IS(oid, PX_OID_IAKERB))
		return PX_MECH_KERBEROS;
	return PX_MECH_OTHER;
}

/*
 * The mechanism of an inner token: NTLMSSP by its signature, Kerberos by
 * its GSS framing (0x60 + krb5 OID) or a bare AP-REQ ([APPLICATION 14]),
 * else what the SPNEGO OID said (hint), or OTHER.  An empty token (an
 * OCTET STRING `04 00`) carries no mechanism's message: NONE, as if it
 * were absent, whatever the hint, so that no parser looks at its first
 * byte.
 */
static enum px_gss_mech
mech_of_token(const uint8_t *t, size_t n, enum px_gss_mech hint)
{
	struct px_der d, app, oid;
	uint8_t tag;

	if (n == 0)
		return PX_MECH_NONE;
	if (n >= sizeof(NTLMSSP_SIG) && memcmp(t, NTLMSSP_SIG, 8) == 0)
		return PX_MECH_NTLMSSP;
	px_der_init(&d, t, n);
	if (n > 0 && t[0] == DER_APP0 && px_der_get(&d, &tag, &app) == 0 &&
	    px_der_get(&app, &tag, &oid) == 0 && tag == DER_OID &&
	    mech_of_oid(&oid) == PX_MECH_KERBEROS)
		return PX_MECH_KERBEROS;
	if (n > 0 && t[0] == 0x6E)
		return PX_MECH_KERBEROS;
	return hint == PX_MECH_KERBEROS ? PX_MECH_KERBEROS : PX_MECH_OTHER;
}


/*
 * NegTokenInit ::= SEQUENCE { mechTypes [0] SEQUENCE OF OID,
 *   reqFlags [1], mechToken [2] OCTET STRING, mechListMIC [3] }
 * (and MS-SPNG's NegTokenInit2 with negHints [3], mechListMIC [4]).
 * The optimistic mechToken belongs to the first mechType.
 */
static int
spnego_init(struct px_der *ctx0, struct px_gss_tok *g)
{
	struct px_der seq, el, inner, oid;
	enum px_gss_mech first = PX_MECH_NONE;
	bool have_types = false;
	uint8_t tag;

	if (px_der_explicit(ctx0, DER_SEQUENCE, &seq) == -1)
		return -1;
	while (px_der_more(&seq)) {
		if (px_der_get(&seq, &tag, &el) == -1)
			return -1;
		switch (tag) {
		case DER_CTX(0):
			if (have_types ||
			    px_der_explicit(&el, DER_SEQUENCE, &inner) == -1)
				return -1;
			have_types = true;
			while (px_der_more(&inner)) {
				if (px_der_get(&inner, &tag, &oid) == -1 ||
				    tag != DER_OID)
					return -1;
				if (first == PX_MECH_NONE)
					first = mech_of_oid(&oid);
			}
			break;
		case DER_CTX(2):
			if (g->tok != NULL ||
			    px_der_explicit(&el, DER_OCTETS, &inner) == -1)
				return -1;
			g->tok = inner.p;
			g->toklen = inner.len;
			break;
		case DER_CTX(1):
		case DER_CTX(3):
		case DER_CTX(4):
			break;
		default:
			return -1;
		}
	}
	if (!have_types)
		return -1;
	g->mech = g->tok == NULL ? PX_MECH_NONE :
	    mech_of_token(g->tok, g->toklen, first);
	return 0;
}

/*
 * NegTokenResp ::= SEQUENCE { negState [0] ENUMERATED,
 *   supportedMech [1] OID, responseToken [2] OCTET STRING,
 *   mechListMIC [3] OCTET STRING }, all optional.
 */
static int
spnego_resp(struct px_der *ctx1, struct px_gss_tok *g)
{
	struct px_der seq, el, inner;
	enum px_gss_mech hint = PX_MECH_NONE;
	uint8_t tag;
	unsigned seen = 0;

	if (px_der_explicit(ctx1, DER_SEQUENCE, &seq) == -1)
		return -1;
	while (px_der_more(&seq)) {
		if (px_der_get(&seq, &tag, &el) == -1 || tag < DER_CTX(0) ||
		    tag > DER_CTX(3) || (seen & (1u << (tag - DER_CTX(0)))))
			return -1;
		seen |= 1u << (tag - DER_CTX(0));
		switch (tag) {
		case DER_CTX(0):
			if (px_der_explicit(&el, DER_ENUM, &inner) == -1 ||
			    inner.len != 1)
				return -1;
			break;
		case DER_CTX(1):
			if (px_der_explicit(&el, DER_OID, &inner) == -1)
				return -1;
			hint = mech_of_oid(&inner);
			break;
		case DER_CTX(2):
			if (px_der_explicit(&el, DER_OCTETS, &inner) == -1)
				return -1;
			g->tok = inner.p;
			g->toklen = inner.len;
			break;
		default:
			if (px_der_explicit(&el, DER_OCTETS, &inner) == -1)
				return -1;
			break;
		}
	}
	g->mech = g->tok == NULL ? PX_MECH_NONE :
	    mech_of_token(g->tok, g->toklen, hint);
	return 0;
}

/*
 * Security buffer -> mechanism and token.  Accepts raw NTLMSSP, a GSS
 * InitialContextToken (SPNEGO NegTokenInit, or a bare Kerberos/NTLMSSP
 * mechanism), a bare NegTokenInit [0] or NegTokenResp [1].  Bytes after
 * the outer element are ignored.  0 or -1 (malformed).
 */
int
px_gss_unwrap(const uint8_t *buf, size_t len, struct px_gss_tok *g)
{
	struct px_der d, outer, oid, neg;
	uint8_t tag;

	memset(g, 0, sizeof(*g));
	if (buf == NULL || len == 0)
		return -1;
	if (len >= sizeof(NTLMSSP_SIG) && memcmp(buf, NTLMSSP_SIG, 8) == 0) {
		g->mech = PX_MECH_NTLMSSP;
		g->tok = buf;
		g->toklen = len;
		return 0;
	}
	px_der_init(&d, buf, len);
	if (px_der_get(&d, &tag, &outer) == -1)
		return -1;
	switch (tag) {
	case DER_APP0:
		if (px_der_get(&outer, &tag, &oid) == -1 || tag != DER_OID)
			return -1;
		if (PX_OID_IS(&oid, PX_OID_SPNEGO)) {
			if (px_der_get(&outer, &tag, &neg) == -1 ||
			    tag != DER_CTX(0) || px_der_more(&outer))
				return -1;
			return spnego_init(&neg, g);
		}
		/* A mechanism's own token: the rest of the element. */
		g->mech = mech_of_oid(&oid);
		if (px_der_more(&outer)) {
			g->tok = outer.p + outer.off;
			g->toklen = outer.len - outer.off;
		}
		if (g->mech == PX_MECH_NTLMSSP &&
		    mech_of_token(g->tok, g->toklen, PX_MECH_NONE) !=
		    PX_MECH_NTLMSSP)
			g->mech = PX_MECH_OTHER;
		return 0;
	case DER_CTX(0):
		return spnego_init(&outer, g);
	case DER_CTX(1):
		return spnego_resp(&outer, g);
	default:
		return -1;
	}
}
