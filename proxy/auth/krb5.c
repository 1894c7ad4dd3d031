/*
 * krb5.c - the Kerberos messages of a relayed SESSION_SETUP (RFC 4120
 * 5.3-5.5, 5.9; RFC 4121 4.1 framing) parsed with the DER reader of der.c,
 * and the acceptor's view of one exchange: which key decrypts the ticket,
 * and which key the session ends up with (DESIGN.md section 7).
 *
 * Every structure is read the same way: an [APPLICATION n] wrapper, a
 * SEQUENCE, then explicitly tagged fields [0], [1], ... that must come in
 * increasing order (DER), each holding exactly one element of the type
 * the ASN.1 gives.  A required field that is missing, a field out of
 * order, a length that runs past its enclosing element, or an element of
 * the wrong type makes the whole message malformed.  Nothing here decides
 * whether a ticket is valid (times, addresses, PAC, replay): the server
 * does that and says so to the client.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "proxy/auth/auth.h"
#include "proxy/auth/der.h"

static const uint8_t NEGOEX_SIG[8] = { 'N', 'E', 'G', 'O', 'E', 'X', 'T', 'S' };

/* ---- fields of a SEQUENCE -------------------------------------------------- */

struct fields {
	struct px_der seq;
	int last;           /* number of the last field read, -1 at first */
};

/* Open the SEQUENCE inside an [APPLICATION app] element (app < 0: no
 * application wrapper, d holds the SEQUENCE itself). */
static int
fields_open(struct px_der *d, int app, struct fields *f)
{
	struct px_der inner;
	uint8_t tag;

	f->last = -1;
	if (app >= 0) {
		if (px_der_get(d, &tag, &inner) == -1 ||
		    tag != PX_DER_APP(app))
			return -1;
		return px_der_explicit(&inner, PX_DER_SEQUENCE, &f->seq);
	}
	if (px_der_get(d, &tag, &f->seq) == -1 || tag != PX_DER_SEQUENCE)
		return -1;
	return 0;
}

/*
 * The next field: 1 and its number and explicit contents (exactly one
 * element, not yet read), 0 at the end of the SEQUENCE, -1 when malformed
 * or out of order.
 */
static int
field_next(struct fields *f, int *n, struct px_der *wrap)
{
	uint8_t tag;

	if (!px_der_more(&f->seq))
		return 0;
	if (px_der_get(&f->seq, &tag, wrap) == -1 || tag < PX_DER_CTX(0) ||
	    tag > PX_DER_CTX(30))
		return -1;
	*n = tag - PX_DER_CTX(0);
	if (*n <= f->last)
		return -1;
	f->last = *n;
	return 1;
}

/* The single element of type want in a field. */
static int
field_val(struct px_der *wrap, uint8_t want, struct px_der *val)
{
	return px_der_explicit(wrap, want, val);
}

static int
field_int(struct px_der *wrap, int64_t *v)
{
	struct px_der val;

	if (field_val(wrap, PX_DER_INTEGER, &val) == -1)
		return -1;
	return px_der_int_value(&val, v);
}

/* An Int32 field. */
static int
field_int32(struct px_der *wrap, int32_t *v)
{
	int64_t x;

	if (field_int(wrap, &x) == -1 || x < INT32_MIN || x > INT32_MAX)
		return -1;
	*v = (int32_t)x;
	return 0;
}

/* A UInt32 field (kvno, seq-number).  Windows and Heimdal have encoded
 * large ones as negative Int32: both forms are taken. */
static int
field_uint32(struct px_der *wrap, uint32_t *v)
{
	int64_t x;

	if (field_int(wrap, &x) == -1 || x < INT32_MIN || x > UINT32_MAX)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/*
 * Any single element: a field whose contents are not used (times,
 * checksums, transited, addresses, authorization data).  Its DER shape is
 * still checked all the way down, so that a length that lies anywhere in
 * a message makes the message malformed.
 */
#define SKIP_DEPTH 16

static int
field_any(struct px_der *wrap)
{
	struct px_der val;
	uint8_t tag;

	if (px_der_get(wrap, &tag, &val) == -1 || px_der_more(wrap) ||
	    px_der_check(tag, &val, SKIP_DEPTH) == -1)
		return -1;
	return 0;
}

/*
 * A KerberosTime field: GeneralizedTime "YYYYMMDDHHMMSSZ", UTC, no
 * fraction (RFC 4120 5.2.3), as seconds since 1970.  Days from the civil
 * date by the proleptic Gregorian calendar (March-based years).
 */
static int
field_time(struct px_der *wrap, int64_t *t)
{
	static const int max[6] = { 9999, 12, 31, 23, 59, 60 };
	struct px_der val;
	int v[6], i, j;
	int64_t y, m, era, yoe, doy, doe;

	if (field_val(wrap, PX_DER_GENTIME, &val) == -1 || val.len != 15 ||
	    val.p[14] != 'Z')
		return -1;
	for (i = 0; i < 14; i++)
		if (val.p[i] < '0' || val.p[i] > '9')
			return -1;
	v[0] = (val.p[0] - '0') * 1000 + (val.p[1] - '0') * 100 +
	    (val.p[2] - '0') * 10 + (val.p[3] - '0');
	if (v[0] < 1970)
		return -1;
	for (i = 1, j = 4; i < 6; i++, j += 2) {
		v[i] = (val.p[j] - '0') * 10 + (val.p[j + 1] - '0');
		if (v[i] > max[i] || (i <= 2 && v[i] == 0))
			return -1;
	}
	y = v[0] - (v[1] <= 2);
	m = v[1];
	era = y / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + v[2] - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	*t = ((era * 146097 + doe - 719468) * 24 + v[3]) * 3600 +
	    (int64_t)v[4] * 60 + v[5];
	return 0;
}

/* A field that must be INTEGER pvno/msg-type with the given value. */
static int
field_is(struct px_der *wrap, int64_t want)
{
	int64_t v;

	return field_int(wrap, &v) == -1 || v != want ? -1 : 0;
}

/* ---- common types ---------------------------------------------------------- */

/*
 * EncryptedData ::= SEQUENCE { etype [0] Int32, kvno [1] UInt32 OPTIONAL,
 *   cipher [2] OCTET STRING }
 */
static int
enc_data(struct px_der *wrap, struct px_krb_enc_data *e)
{
	struct fields f;
	struct px_der fw, val;
	int n, rc;
	bool have_etype = false;

	memset(e, 0, sizeof(*e));
	if (fields_open(wrap, -1, &f) == -1 || px_der_more(wrap))
		return -1;
	while ((rc = field_next(&f, &n, &fw)) == 1) {
		switch (n) {
		case 0:
			if (field_int32(&fw, &e->etype) == -1)
				return -1;
			have_etype = true;
			break;
		case 1:
			if (field_uint32(&fw, &e->kvno) == -1)
				return -1;
			e->has_kvno = true;
			break;
		case 2:
			if (field_val(&fw, PX_DER_OCTETS, &val) == -1 ||
			    val.len == 0 || val.len > PX_KRB_CIPHER_MAX)
				return -1;
			e->cipher = val.p;
			e->len = val.len;
			break;
		default:
			return -1;
		}
	}
	return rc == -1 || !have_etype || e->cipher == NULL ? -1 : 0;
}

/*
 * EncryptionKey ::= SEQUENCE { keytype [0] Int32, keyvalue [1] OCTET STRING }
 * Keys longer than PX_KRB_KEY_MAX belong to no enctype we use: malformed.
 */
static int
enc_key(struct px_der *wrap, struct px_krb_key *k)
{
	struct fields f;
	struct px_der fw, val;
	int n, rc;
	bool have_type = false;

	memset(k, 0, sizeof(*k));
	if (fields_open(wrap, -1, &f) == -1 || px_der_more(wrap))
		return -1;
	while ((rc = field_next(&f, &n, &fw)) == 1) {
		switch (n) {
		case 0:
			if (field_int32(&fw, &k->enctype) == -1)
				return -1;
			have_type = true;
			break;
		case 1:
			if (field_val(&fw, PX_DER_OCTETS, &val) == -1 ||
			    val.len == 0 || val.len > PX_KRB_KEY_MAX)
				return -1;
			memcpy(k->bytes, val.p, val.len);
			k->len = val.len;
			break;
		default:
			return -1;
		}
	}
	if (rc == -1 || !have_type || k->len == 0) {
		OPENSSL_cleanse(k, sizeof(*k));
		return -1;
	}
	return 0;
}

/* KerberosString (GeneralString; IA5 in practice) as text. */
static int
kstring(struct px_der *wrap, char *buf, size_t bufsz)
{
	struct px_der val;

	if (field_val(wrap, PX_DER_GENSTRING, &val) == -1)
		return -1;
	return px_der_string_value(&val, buf, bufsz);
}

/*
 * PrincipalName ::= SEQUENCE { name-type [0] Int32,
 *   name-string [1] SEQUENCE OF KerberosString }
 * as "a/b/c"; host gets the second component when there is one.  A name
 * too long for buf is malformed (PX_KRB_NAME_MAX is far above any SPN).
 */
static int
principal(struct px_der *wrap, char *buf, size_t bufsz, char *host,
    size_t hostsz)
{
	struct fields f;
	struct px_der fw, seq, val;
	char comp[PX_KRB_NAME_MAX];
	int32_t type;
	int n, rc, i = 0;
	size_t used = 0, cl;
	uint8_t tag;
	bool have_type = false, have_names = false;

	buf[0] = '\0';
	if (host != NULL)
		host[0] = '\0';
	if (fields_open(wrap, -1, &f) == -1 || px_der_more(wrap))
		return -1;
	while ((rc = field_next(&f, &n, &fw)) == 1) {
		switch (n) {
		case 0:
			if (field_int32(&fw, &type) == -1)
				return -1;
			have_type = true;
			break;
		case 1:
			if (field_val(&fw, PX_DER_SEQUENCE, &seq) == -1)
				return -1;
			while (px_der_more(&seq)) {
				if (px_der_get(&seq, &tag, &val) == -1 ||
				    tag != PX_DER_GENSTRING ||
				    px_der_string_value(&val, comp,
				    sizeof(comp)) == -1)
					return -1;
				cl = strlen(comp);
				if (used + (i > 0) + cl + 1 > bufsz)
					return -1;
				if (i > 0)
					buf[used++] = '/';
				memcpy(buf + used, comp, cl + 1);
				used += cl;
				if (i == 1 && host != NULL &&
				    snprintf(host, hostsz, "%s", comp) >=
				    (int)hostsz)
					host[0] = '\0';
				i++;
			}
			have_names = true;
			break;
		default:
			return -1;
		}
	}
	return rc == -1 || !have_type || !have_names || i == 0 ? -1 : 0;
}

/* APOptions ::= KerberosFlags (BIT STRING): the first 32 bits, MSB first. */
static int
flags32(struct px_der *wrap, uint32_t *v)
{
	struct px_der val;
	size_t i;

	if (field_val(wrap, PX_DER_BITSTRING, &val) == -1 || val.len < 1 ||
	    val.p[0] > 7)
		return -1;
	*v = 0;
	for (i = 1; i < val.len && i <= 4; i++)
		*v |= (uint32_t)val.p[i] << (8 * (4 - i));
	return 0;
}

/* ---- the messages ---------------------------------------------------------- */

/*
 * Ticket ::= [APPLICATION 1] SEQUENCE { tkt-vno [0] INTEGER (5),
 *   realm [1] Realm, sname [2] PrincipalName, enc-part [3] EncryptedData }
 */
static int
ticket(struct px_der *wrap, struct px_krb_msg *m)
{
	struct fields f;
	struct px_der fw;
	int n, rc;
	unsigned seen = 0;

	if (fields_open(wrap, 1, &f) == -1 || px_der_more(wrap))
		return -1;
	while ((rc = field_next(&f, &n, &fw)) == 1) {
		switch (n) {
		case 0:
			rc = field_is(&fw, 5);
			break;
		case 1:
			rc = kstring(&fw, m->realm, sizeof(m->realm));
			break;
		case 2:
			rc = principal(&fw, m->sname, sizeof(m->sname),
			    m->sname_host, sizeof(m->sname_host));
			break;
		case 3:
			rc = enc_data(&fw, &m->ticket);
			break;
		default:
			rc = -1;
		}
		if (rc == -1)
			return -1;
		seen |= 1u << n;
	}
	return rc == -1 || seen != 0xF ? -1 : 0;
}

/*
 * AP-REQ ::= [APPLICATION 14] SEQUENCE { pvno [0] INTEGER (5),
 *   msg-type [1] INTEGER (14), ap-options [2] APOptions,
 *   ticket [3] Ticket, authenticator [4] EncryptedData }
 */
static int
ap_req(struct px_der *d, struct px_krb_msg *m)
{
	struct fields f;
	struct px_der fw;
	int n, rc;
	unsigned seen = 0;

	if (fields_open(d, 14, &f) == -1)
		return -1;
	while ((rc = field_next(&f, &n, &fw)) == 1) {
		switch (n) {
		case 0:
			rc = field_is(&fw, 5);
			break;
		case 1:
			rc = field_is(&fw, 14);
			break;
		case 2:
			rc = flags32(&fw, &m->ap_options);
			break;
		case 3:
			rc = ticket(&fw, m);
			break;
		case 4:
			rc = enc_data(&fw, &m->authenticator);
			break;
		default:
			rc = -1;
		}
		if (rc == -1)
			return -1;
		seen |= 1u << n;
	}
	if (rc == -1 || seen != 0x1F)
		return -1;
	m->type = PX_KRB_MSG_AP_REQ;
	if (m->ap_options & PX_KRB_AP_USE_SESSION_KEY)
		m->user_to_user = true;
	return 0;
}

/*
 * AP-REP ::= [APPLICATION 15] SEQUENCE { pvno [0] INTEGER (5),
 *   msg-type [1] INTEGER (15), enc-part [2] EncryptedData }
 */
static int
ap_rep(struct px_der *d, struct px_krb_msg *m)
{
	struct fields f;
	struct px_der fw;
	int n, rc;
	unsigned seen = 0;

	if (fields_open(d, 15, &f) == -1)
		return -1;
	while ((rc = field_next(&f, &n, &fw)) == 1) {
		switch (n) {
		case 0:
			rc = field_is(&fw, 5);
			break;
		case 1:
			rc = field_is(&fw, 15);
			break;
		case 2:
			rc = enc_data(&fw, &m->enc_part);
			break;
		default:
			rc = -1;
		}
		if (rc == -1)
			return -1;
		seen |= 1u << n;
	}
	if (rc == -1 || seen != 0x7)
		return -1;
	m->type = PX_KRB_MSG_AP_REP;
	return 0;
}

/*
 * KRB-ERROR ::= [APPLICATION 30] SEQUENCE { pvno [0], msg-type [1] (30),
 *   ctime [2] OPT, cusec [3] OPT, stime [4], susec [5], error-code [6] Int32,
 *   crealm [7] OPT, cname [8] OPT, realm [9], sname [10], e-text [11] OPT,
 *   e-data [12] OPT }.  Only the error code matters here (the client
 * retries with a new AP-REQ); the other fields are checked for shape.
 */
static int
krb_error(struct px_der *d, struct px_krb_msg *m)
{
	struct fields f;
	struct px_der fw;
	int n, rc;
	unsigned seen = 0;

	if (fields_open(d, 30, &f) == -1)
		return -1;
	while ((rc = field_next(&f, &n, &fw)) == 1) {
		switch (n) {
		case 0:
			rc = field_is(&fw, 5);
			break;
		case 1:
			rc = field_is(&fw, 30);
			break;
		case 6:
			rc = field_int32(&fw, &m->error_code);
			break;
		default:
			rc = n <= 12 ? field_any(&fw) : -1;
		}
		if (rc == -1)
			return -1;
		seen |= 1u << n;
	}
	if (rc == -1 || (seen & 0x43) != 0x43)
		return -1;
	m->type = PX_KRB_MSG_ERROR;
	return 0;
}

/* One message, by its tag; the whole window must be that one element. */
static int
krb_message(const uint8_t *p, size_t n, int want, struct px_krb_msg *m)
{
	struct px_der d;
	int rc;

	if (n < 2)
		return -1;
	px_der_init(&d, p, n);
	switch (p[0]) {
	case PX_DER_APP(14):
		rc = want == -1 || want == 14 ? ap_req(&d, m) : -1;
		break;
	case PX_DER_APP(15):
		rc = want == -1 || want == 15 ? ap_rep(&d, m) : -1;
		break;
	case PX_DER_APP(30):
		rc = want == -1 || want == 30 ? krb_error(&d, m) : -1;
		break;
	default:
		return -1;
	}
	return rc == -1 || px_der_more(&d) ? -1 : 0;
}

/*
 * RFC 4121 4.1: 0x60 len, the mechanism OID, TOK_ID (2 bytes), then the
 * message.  t points at the 0x60.
 */
static int
gss_framed(const uint8_t *t, size_t n, struct px_krb_msg *m)
{
	struct px_der d, app, oid;
	const uint8_t *rest;
	size_t nrest;
	uint8_t tag;

	px_der_init(&d, t, n);
	if (px_der_get(&d, &tag, &app) == -1 || tag != PX_DER_APP(0) ||
	    px_der_more(&d) || px_der_get(&app, &tag, &oid) == -1 ||
	    tag != PX_DER_OID)
		return -1;
	if (PX_OID_IS(&oid, PX_OID_KRB5_U2U))
		m->user_to_user = true;
	else if (!PX_OID_IS(&oid, PX_OID_KRB5) &&
	    !PX_OID_IS(&oid, PX_OID_MS_KRB5))
		return 1;   /* IAKERB or another mechanism: not ours */
	rest = app.p + app.off;
	nrest = app.len - app.off;
	if (nrest < 2)
		return -1;
	if (rest[0] == 0x04 && rest[1] == 0x00) {
		/* TGT-REQ (user-to-user): nothing we can key */
		m->type = PX_KRB_MSG_TGT_REQ;
		m->user_to_user = true;
		return 0;
	}
	if (rest[1] != 0x00 || rest[0] < 0x01 || rest[0] > 0x03)
		return -1;
	return krb_message(rest + 2, nrest - 2,
	    rest[0] == 0x01 ? 14 : rest[0] == 0x02 ? 15 : 30, m);
}

static int
parse_token(const uint8_t *buf, size_t len, struct px_krb_msg *m)
{
	struct px_gss_tok g;
	struct px_der d, app, oid;
	uint8_t tag;
	int rc;

	if (buf == NULL || len == 0)
		return PX_NTLM_BAD;
	/* a bare GSS krb5 token, not in SPNEGO: px_gss_unwrap would hand
	 * back only what follows the OID */
	if (buf[0] == PX_DER_APP(0)) {
		px_der_init(&d, buf, len);
		if (px_der_get(&d, &tag, &app) == -1 ||
		    px_der_get(&app, &tag, &oid) == -1 || tag != PX_DER_OID)
			return PX_NTLM_BAD;
		if (PX_OID_IS(&oid, PX_OID_KRB5) ||
		    PX_OID_IS(&oid, PX_OID_MS_KRB5) ||
		    PX_OID_IS(&oid, PX_OID_KRB5_U2U)) {
			m->mech = PX_MECH_KERBEROS;
			/* the element's own length bounds it, not len */
			rc = gss_framed(buf, d.off, m);
			if (rc == 1)
				return PX_NTLM_OTHER;
			return rc == 0 ? PX_NTLM_OK : PX_NTLM_BAD;
		}
		if (!PX_OID_IS(&oid, PX_OID_SPNEGO)) {
			if (px_gss_unwrap(buf, len, &g) == -1)
				return PX_NTLM_BAD;
			m->mech = g.mech;
			return PX_NTLM_OTHER;
		}
	}
	if (px_gss_unwrap(buf, len, &g) == -1)
		return PX_NTLM_BAD;
	m->mech = g.mech;
	if (g.tok != NULL && g.toklen >= sizeof(NEGOEX_SIG) &&
	    memcmp(g.tok, NEGOEX_SIG, sizeof(NEGOEX_SIG)) == 0)
		m->negoex = true;
	/* an empty token is no Kerberos message (spnego.c calls it NONE) */
	if (g.mech != PX_MECH_KERBEROS || g.tok == NULL || g.toklen == 0)
		return PX_NTLM_OTHER;
	if (g.tok[0] == PX_DER_APP(0)) {
		rc = gss_framed(g.tok, g.toklen, m);
		if (rc == 1)
			return PX_NTLM_OTHER;
		return rc == 0 ? PX_NTLM_OK : PX_NTLM_BAD;
	}
	/* a bare message (some implementations leave out the framing) */
	if (krb_message(g.tok, g.toklen, -1, m) == -1)
		return PX_NTLM_BAD;
	return PX_NTLM_OK;
}

/*
 * A token that says Kerberos but is no message parsed here (IAKERB, whose
 * messages travel in its own framing, draft-ietf-kitten-iakerb; a GSS
 * token of another OID under a Kerberos SPNEGO label) is marked
 * unsupported, so that nobody takes its zero-filled result for a
 * Kerberos exchange followed.
 */
int
px_krb_parse(const uint8_t *buf, size_t len, struct px_krb_msg *m)
{
	int rc;

	memset(m, 0, sizeof(*m));
	rc = parse_token(buf, len, m);
	if (rc == PX_NTLM_OTHER && m->mech == PX_MECH_KERBEROS)
		m->unsupported = true;
	return rc;
}

/* ---- the decrypted parts --------------------------------------------------- */

/* dst = "name@realm", cut to fit (the text is for log lines). */
static void
join_at(char *dst, size_t n, const char *name, const char *realm)
{
	size_t a = strlen(name), b = strlen(realm);

	if (n == 0)
		return;
	if (a > n - 1)
		a = n - 1;
	memcpy(dst, name, a);
	if (a + 1 < n) {
		dst[a++] = '@';
		if (b > n - 1 - a)
			b = n - 1 - a;
		memcpy(dst + a, realm, b);
		a += b;
	}
	dst[a] = '\0';
}

/*
 * EncTicketPart ::= [APPLICATION 3] SEQUENCE { flags [0] TicketFlags,
 *   key [1] EncryptionKey, crealm [2] Realm, cname [3] PrincipalName,
 *   transited [4] TransitedEncoding, authtime [5] KerberosTime,
 *   starttime [6] OPT, endtime [7], renew-till [8] OPT, caddr [9] OPT,
 *   authorization-data [10] OPT }
 */
int
px_krb_parse_enc_ticket(const uint8_t *p, size_t n, struct px_krb_key *key,
    char *cname, size_t cnamelen, int64_t *endtime)
{
	struct fields f;
	struct px_der d, fw;
	char realm[PX_KRB_NAME_MAX], name[PX_KRB_NAME_MAX];
	int i, rc;
	unsigned seen = 0;
	uint32_t tflags;
	int64_t end = 0;

	memset(key, 0, sizeof(*key));
	realm[0] = name[0] = '\0';
	if (cnamelen > 0)
		cname[0] = '\0';
	px_der_init(&d, p, n);
	if (fields_open(&d, 3, &f) == -1)
		return -1;
	while ((rc = field_next(&f, &i, &fw)) == 1) {
		switch (i) {
		case 0:
			rc = flags32(&fw, &tflags);
			break;
		case 1:
			rc = enc_key(&fw, key);
			break;
		case 2:
			rc = kstring(&fw, realm, sizeof(realm));
			break;
		case 3:
			rc = principal(&fw, name, sizeof(name), NULL, 0);
			break;
		case 7:
			rc = field_time(&fw, &end);
			break;
		default:
			rc = i <= 10 ? field_any(&fw) : -1;
		}
		if (rc == -1)
			break;
		seen |= 1u << i;
	}
	/* flags, key, crealm, cname, transited, authtime, endtime */
	if (rc == -1 || (seen & 0xBF) != 0xBF) {
		OPENSSL_cleanse(key, sizeof(*key));
		return -1;
	}
	join_at(cname, cnamelen, name, realm);
	if (endtime != NULL)
		*endtime = end;
	return 0;
}

/*
 * Authenticator ::= [APPLICATION 2] SEQUENCE { authenticator-vno [0] (5),
 *   crealm [1] Realm, cname [2] PrincipalName, cksum [3] Checksum OPT,
 *   cusec [4] Microseconds, ctime [5] KerberosTime,
 *   subkey [6] EncryptionKey OPT, seq-number [7] UInt32 OPT,
 *   authorization-data [8] OPT }
 */
int
px_krb_parse_authenticator(const uint8_t *p, size_t n, bool *has_subkey,
    struct px_krb_key *subkey)
{
	struct fields f;
	struct px_der d, fw;
	int i, rc;
	unsigned seen = 0;

	*has_subkey = false;
	memset(subkey, 0, sizeof(*subkey));
	px_der_init(&d, p, n);
	if (fields_open(&d, 2, &f) == -1)
		return -1;
	while ((rc = field_next(&f, &i, &fw)) == 1) {
		switch (i) {
		case 0:
			rc = field_is(&fw, 5);
			break;
		case 6:
			rc = enc_key(&fw, subkey);
			break;
		default:
			rc = i <= 8 ? field_any(&fw) : -1;
		}
		if (rc == -1)
			break;
		seen |= 1u << i;
	}
	/* vno, crealm, cname, cusec, ctime */
	if (rc == -1 || (seen & 0x37) != 0x37) {
		OPENSSL_cleanse(subkey, sizeof(*subkey));
		return -1;
	}
	*has_subkey = (seen & 0x40) != 0;
	return 0;
}

/*
 * EncAPRepPart ::= [APPLICATION 27] SEQUENCE { ctime [0] KerberosTime,
 *   cusec [1] Microseconds, subkey [2] EncryptionKey OPT,
 *   seq-number [3] UInt32 OPT }
 */
int
px_krb_parse_enc_ap_rep(const uint8_t *p, size_t n, bool *has_subkey,
    struct px_krb_key *subkey)
{
	struct fields f;
	struct px_der d, fw;
	int i, rc;
	unsigned seen = 0;

	*has_subkey = false;
	memset(subkey, 0, sizeof(*subkey));
	px_der_init(&d, p, n);
	if (fields_open(&d, 27, &f) == -1)
		return -1;
	while ((rc = field_next(&f, &i, &fw)) == 1) {
		switch (i) {
		case 2:
			rc = enc_key(&fw, subkey);
			break;
		default:
			rc = i <= 3 ? field_any(&fw) : -1;
		}
		if (rc == -1)
			break;
		seen |= 1u << i;
	}
	if (rc == -1 || (seen & 0x3) != 0x3) {
		OPENSSL_cleanse(subkey, sizeof(*subkey));
		return -1;
	}
	*has_subkey = (seen & 0x4) != 0;
	return 0;
}

/* ---- the acceptor ---------------------------------------------------------- */

const char *
px_krb_result_name(enum px_krb_result r)
{
	switch (r) {
	case PX_KRB_R_OK: return "ok";
	case PX_KRB_R_NO_KEYTAB: return "no-keytab";
	case PX_KRB_R_NO_MATCHING_KEY: return "no-matching-key";
	case PX_KRB_R_DECRYPT_FAILED: return "decrypt-failed";
	case PX_KRB_R_USER_TO_USER: return "user-to-user";
	case PX_KRB_R_MALFORMED: return "kerberos-malformed";
	case PX_KRB_R_UNSUPPORTED: return "kerberos-unsupported";
	case PX_KRB_R_ERROR: return "kerberos-error";
	}
	return "?";
}

void
px_krb_accept_wipe(struct px_krb_accept *a)
{
	if (a == NULL)
		return;
	OPENSSL_cleanse(&a->ticket_key, sizeof(a->ticket_key));
	OPENSSL_cleanse(&a->auth_subkey, sizeof(a->auth_subkey));
	a->has_auth_subkey = false;
}

/* Decrypt e with key and usage into a fresh buffer; NULL on failure. */
static uint8_t *
decrypt_dup(const struct px_krb_key *key, int32_t usage,
    const struct px_krb_enc_data *e, size_t *outlen, bool *nomem)
{
	uint8_t *out;

	*nomem = false;
	if ((out = malloc(e->len)) == NULL) {
		*nomem = true;
		return NULL;
	}
	*outlen = e->len;
	if (px_krb_decrypt(key, usage, e->cipher, e->len, out, outlen) == -1) {
		OPENSSL_cleanse(out, e->len);
		free(out);
		return NULL;
	}
	return out;
}

enum px_krb_result
px_krb_accept_req(const struct px_krb_msg *req, const struct px_keytab *kt,
    struct px_krb_accept *a)
{
	uint8_t *plain = NULL;
	size_t plen = 0, cap = 0;
	bool had_enctype = false, had_kvno = false, nomem;
	enum px_krb_result r;

	memset(a, 0, sizeof(*a));
	if (req->type != PX_KRB_MSG_AP_REQ) {
		r = req->user_to_user ? PX_KRB_R_USER_TO_USER :
		    req->unsupported ? PX_KRB_R_UNSUPPORTED :
		    PX_KRB_R_MALFORMED;
		goto out;
	}
	a->ticket_etype = req->ticket.etype;
	a->ticket_has_kvno = req->ticket.has_kvno;
	a->ticket_kvno = req->ticket.kvno;
	a->mutual = (req->ap_options & PX_KRB_AP_MUTUAL_REQUIRED) != 0;
	join_at(a->service, sizeof(a->service), req->sname, req->realm);
	/* a ticket in the TGT's session key, not in the service key */
	if (req->user_to_user) {
		r = PX_KRB_R_USER_TO_USER;
		goto out;
	}
	if (kt == NULL) {
		r = PX_KRB_R_NO_KEYTAB;
		goto out;
	}
	cap = req->ticket.len;
	if ((plain = malloc(cap)) == NULL) {
		r = PX_KRB_R_ERROR;
		goto out;
	}
	plen = cap;
	if (px_keytab_try_ticket(kt, &req->ticket, plain, &plen, &had_enctype,
	    &had_kvno) == -1) {
		/* no key of the ticket's enctype, or only other kvnos (a
		 * rotated machine password): "no matching key"; a key of
		 * the right enctype and kvno that does not decrypt it: the
		 * keytab holds another account's key, or a corrupt one */
		r = !had_enctype || (req->ticket.has_kvno && !had_kvno) ?
		    PX_KRB_R_NO_MATCHING_KEY : PX_KRB_R_DECRYPT_FAILED;
		goto out;
	}
	if (px_krb_parse_enc_ticket(plain, plen, &a->ticket_key, a->client,
	    sizeof(a->client), &a->ticket_end) == -1) {
		r = PX_KRB_R_MALFORMED;
		goto out;
	}
	a->session_etype = a->ticket_key.enctype;
	OPENSSL_cleanse(plain, cap);
	free(plain);
	plain = NULL;
	/* RFC 4120 5.5.1: the authenticator is in the ticket session key */
	if (req->authenticator.etype != a->ticket_key.enctype) {
		r = PX_KRB_R_DECRYPT_FAILED;
		goto out;
	}
	cap = req->authenticator.len;
	if ((plain = decrypt_dup(&a->ticket_key, PX_KRB_USAGE_AUTHENTICATOR,
	    &req->authenticator, &plen, &nomem)) == NULL) {
		r = nomem ? PX_KRB_R_ERROR : PX_KRB_R_DECRYPT_FAILED;
		goto out;
	}
	if (px_krb_parse_authenticator(plain, plen, &a->has_auth_subkey,
	    &a->auth_subkey) == -1) {
		r = PX_KRB_R_MALFORMED;
		goto out;
	}
	r = PX_KRB_R_OK;
out:
	if (plain != NULL) {
		OPENSSL_cleanse(plain, cap);
		free(plain);
	}
	if (r != PX_KRB_R_OK)
		px_krb_accept_wipe(a);
	a->result = r;
	return r;
}

enum px_krb_result
px_krb_session_key(const struct px_krb_accept *a, const struct px_krb_msg *rep,
    uint8_t key[PX_KRB_KEY_MAX], size_t *keylen)
{
	const struct px_krb_key *use;
	struct px_krb_key subkey;
	uint8_t *plain;
	size_t plen = 0;
	bool has_subkey = false, nomem;
	enum px_krb_result r = PX_KRB_R_OK;

	*keylen = 0;
	if (a->result != PX_KRB_R_OK)
		return a->result;
	/* result 0 is OK, so a struct px_krb_accept_req never filled (kept
	 * for an IAKERB token, say) passes the test above: without a ticket
	 * key there is no key at all (every subkey came with one) */
	if (a->ticket_key.len == 0)
		return PX_KRB_R_UNSUPPORTED;
	memset(&subkey, 0, sizeof(subkey));
	if (rep != NULL) {
		if (rep->type != PX_KRB_MSG_AP_REP)
			return PX_KRB_R_MALFORMED;
		if (rep->enc_part.etype != a->ticket_key.enctype)
			return PX_KRB_R_DECRYPT_FAILED;
		if ((plain = decrypt_dup(&a->ticket_key, PX_KRB_USAGE_AP_REP,
		    &rep->enc_part, &plen, &nomem)) == NULL)
			return nomem ? PX_KRB_R_ERROR : PX_KRB_R_DECRYPT_FAILED;
		if (px_krb_parse_enc_ap_rep(plain, plen, &has_subkey,
		    &subkey) == -1)
			r = PX_KRB_R_MALFORMED;
		OPENSSL_cleanse(plain, rep->enc_part.len);
		free(plain);
		if (r != PX_KRB_R_OK)
			return r;
	}
	/* MS-SMB2 3.3.5.5.3 with GSS_C_INQ_SSPI_SESSION_KEY: the acceptor
	 * subkey, else the initiator subkey, else the ticket key */
	use = has_subkey ? &subkey : a->has_auth_subkey ? &a->auth_subkey :
	    &a->ticket_key;
	memcpy(key, use->bytes, use->len);
	*keylen = use->len;
	OPENSSL_cleanse(&subkey, sizeof(subkey));
	return PX_KRB_R_OK;
}
