/*
 * der.h - internal to proxy/auth/: the DER reader (der.c) and the
 * SPNEGO/GSS unwrapping (spnego.c) that the NTLM and Kerberos parsers
 * share, and the few other functions one auth/ file lends another.
 * Nothing outside proxy/auth/ includes it.
 *
 * The reader accepts only single-byte tags and definite lengths of at most
 * 4 length bytes, and checks every length against its enclosing element:
 * nothing is ever read outside the window a reader was given.
 */
#ifndef SMBACCEL_AUTH_DER_H
#define SMBACCEL_AUTH_DER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "proxy/auth/auth.h"

/* A window [p, p + len) with a cursor; sub-elements get their own window. */
struct px_der {
	const uint8_t *p;
	size_t len;
	size_t off;
};

void px_der_init(struct px_der *d, const uint8_t *p, size_t len);
bool px_der_more(const struct px_der *d);
/*
 * Read the next TLV: *tag, and val = a window on its contents.  0, or -1
 * when the element is malformed or does not fit in d.
 */
int px_der_get(struct px_der *d, uint8_t *tag, struct px_der *val)
    PX_MUSTCHECK;
/* An explicit tag's contents must be exactly one element of type want. */
int px_der_explicit(struct px_der *outer, uint8_t want, struct px_der *val)
    PX_MUSTCHECK;

/* Universal tags the parsers use (X.680 8.4). */
#define PX_DER_INTEGER    0x02
#define PX_DER_BITSTRING  0x03
#define PX_DER_OCTETS     0x04
#define PX_DER_OID        0x06
#define PX_DER_ENUM       0x0A
#define PX_DER_GENSTRING  0x1B   /* GeneralString: KerberosString */
#define PX_DER_GENTIME    0x18   /* GeneralizedTime: KerberosTime */
#define PX_DER_SEQUENCE   0x30
#define PX_DER_APP(n)     (0x60 | (n))  /* [APPLICATION n] constructed */
#define PX_DER_CTX(n)     (0xA0 + (n))  /* [n] constructed, n < 31 */

/*
 * Check the shape of an element whose contents a parser skips: a
 * constructed one (tag bit 0x20) must hold a sequence of well-formed
 * elements filling it exactly, recursively, at most depth levels deep.
 * Primitive contents are not looked at.  0 or -1.
 */
int px_der_check(uint8_t tag, const struct px_der *val, int depth)
    PX_MUSTCHECK;
/*
 * The contents of an INTEGER: 1 to 8 bytes, two's complement.  Kerberos
 * Int32/UInt32 values fit; wider or empty ones are refused.  0 or -1.
 */
int px_der_int_value(const struct px_der *val, int64_t *v) PX_MUSTCHECK;
/* The next element of d must be an INTEGER: its value.  0 or -1. */
int px_der_get_int(struct px_der *d, int64_t *v) PX_MUSTCHECK;
/*
 * The contents of a character string as a NUL-terminated C string of at
 * most bufsz - 1 bytes; bytes outside printable ASCII become '?' (the
 * text is for log lines and name matching, never for security decisions).
 * -1 if it does not fit or holds a NUL.
 */
int px_der_string_value(const struct px_der *val, char *buf, size_t bufsz)
    PX_MUSTCHECK;

/*
 * GSS mechanism OIDs, as the contents of their DER OBJECT IDENTIFIER:
 * SPNEGO 1.3.6.1.5.5.2 (RFC 4178), NTLMSSP 1.3.6.1.4.1.311.2.2.10
 * (MS-NLMP), Kerberos 5 1.2.840.113554.1.2.2 (RFC 4121), its Microsoft
 * variant 1.2.840.48018.1.2.2 (MS-KILE 3.1.5.1), user-to-user
 * 1.2.840.113554.1.2.2.3, IAKERB 1.3.6.1.5.2.5.  Defined in spnego.c.
 */
extern const uint8_t PX_OID_SPNEGO[6];
extern const uint8_t PX_OID_NTLMSSP[10];
extern const uint8_t PX_OID_KRB5[9];
extern const uint8_t PX_OID_MS_KRB5[9];
extern const uint8_t PX_OID_KRB5_U2U[10];
extern const uint8_t PX_OID_IAKERB[6];
/* The window d holds exactly the OID oid (one of the arrays above). */
#define PX_OID_IS(d, oid) \
	((d)->len == sizeof(oid) && memcmp((d)->p, (oid), sizeof(oid)) == 0)

/* What the SPNEGO layer yields: the mechanism and its token, if any. */
struct px_gss_tok {
	enum px_gss_mech mech;
	const uint8_t *tok;
	size_t toklen;
};

/*
 * Security buffer -> mechanism and token.  Accepts raw NTLMSSP, a GSS
 * InitialContextToken (SPNEGO NegTokenInit, or a bare Kerberos/NTLMSSP
 * mechanism), a bare NegTokenInit [0] or NegTokenResp [1].  Bytes after
 * the outer element are ignored.  0 or -1 (malformed).
 */
int px_gss_unwrap(const uint8_t *buf, size_t len, struct px_gss_tok *g)
    PX_MUSTCHECK;

/*
 * keytab.c for krb5.c: decrypt a ticket's enc-part (usage 2) with each key
 * of kt of its enctype in turn, whatever the principal or kvno.  0 and the
 * plaintext in out (room for enc->len bytes; *outlen its length), or -1;
 * *had_enctype / *had_kvno say whether a key of that enctype, and one of
 * that enctype and the ticket's kvno, was there to try.
 */
int px_keytab_try_ticket(const struct px_keytab *kt,
    const struct px_krb_enc_data *enc, uint8_t *out, size_t *outlen,
    bool *had_enctype, bool *had_kvno) PX_MUSTCHECK;

/*
 * secrets.c for keytab.c: open a file of secrets (what: "secrets file",
 * "keytab") by the rules they share: not a symbolic link (O_NOFOLLOW), a
 * regular file (a FIFO or device is refused without blocking on its
 * open), owned by root, no group or other permission bits.  The
 * descriptor (blocking, close-on-exec) and *st, or -1 with
 * "what path: reason" in err.
 */
int px_secret_file_open(const char *what, const char *path, struct stat *st,
    char *err, size_t errlen) PX_MUSTCHECK;

#endif
