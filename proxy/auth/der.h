/*
 * der.h - internal to proxy/auth/: the DER reader (der.c) and the
 * SPNEGO/GSS unwrapping (spnego.c) that the NTLM and Kerberos parsers
 * share.  Nothing outside proxy/auth/ includes it.
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

#endif
