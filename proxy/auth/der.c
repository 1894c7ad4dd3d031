/*
 * der.c - the bounds-checked DER reader of the authentication parsers
 * (SPNEGO, Kerberos): X.690 TLVs with single-byte tags and
 * definite lengths, each value checked against its enclosing element.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proxy/auth/auth.h"
#include "proxy/auth/der.h"

void
px_der_init(struct px_der *d, const uint8_t *p, size_t len)
{
	d->p = p;
	d->len = len;
	d->off = 0;
}

bool
px_der_more(const struct px_der *d)
{
	return d->off < d->len;
}

/*
 * Read the next TLV: *tag, and val = a window on its contents.  Single-byte
 * tags only (low 5 bits != 31), definite lengths, long form of 1..4 bytes.
 * The value must lie inside d.  0 or -1.
 */
int
px_der_get(struct px_der *d, uint8_t *tag, struct px_der *val)
{
	size_t left, l, nb, i;

	if (d->off >= d->len)
		return -1;
	left = d->len - d->off;
	if (left < 2)
		return -1;
	*tag = d->p[d->off];
	if ((*tag & 0x1F) == 0x1F)
		return -1;
	l = d->p[d->off + 1];
	d->off += 2;
	left -= 2;
	if (l & 0x80) {
		nb = l & 0x7F;
		if (nb == 0 || nb > 4 || nb > left)   /* 0: indefinite */
			return -1;
		for (l = 0, i = 0; i < nb; i++)
			l = (l << 8) | d->p[d->off + i];
		d->off += nb;
		left -= nb;
	}
	if (l > left)
		return -1;
	px_der_init(val, d->p + d->off, l);
	d->off += l;
	return 0;
}

/* An explicit tag's contents must be exactly one element of type want. */
int
px_der_explicit(struct px_der *outer, uint8_t want, struct px_der *val)
{
	uint8_t tag;

	if (px_der_get(outer, &tag, val) == -1 || tag != want || px_der_more(outer))
		return -1;
	return 0;
}

int
px_der_check(uint8_t tag, const struct px_der *val, int depth)
{
	struct px_der d, sub;
	uint8_t t;

	if (!(tag & 0x20))
		return 0;
	if (depth <= 0)
		return -1;
	px_der_init(&d, val->p, val->len);
	while (px_der_more(&d)) {
		if (px_der_get(&d, &t, &sub) == -1 ||
		    px_der_check(t, &sub, depth - 1) == -1)
			return -1;
	}
	return 0;
}

/* INTEGER contents: 1..8 bytes, big-endian two's complement (X.690 8.3). */
int
px_der_int_value(const struct px_der *val, int64_t *v)
{
	uint64_t u;
	size_t i;

	if (val->len == 0 || val->len > 8)
		return -1;
	u = (val->p[0] & 0x80) ? UINT64_MAX : 0;   /* sign extension */
	for (i = 0; i < val->len; i++)
		u = (u << 8) | val->p[i];
	memcpy(v, &u, sizeof(*v));
	return 0;
}

int
px_der_get_int(struct px_der *d, int64_t *v)
{
	struct px_der val;
	uint8_t tag;

	if (px_der_get(d, &tag, &val) == -1 || tag != PX_DER_INTEGER)
		return -1;
	return px_der_int_value(&val, v);
}

int
px_der_string_value(const struct px_der *val, char *buf, size_t bufsz)
{
	size_t i;

	if (bufsz == 0 || val->len >= bufsz)
		return -1;
	for (i = 0; i < val->len; i++) {
		if (val->p[i] == 0)
			return -1;
		buf[i] = val->p[i] >= 0x20 && val->p[i] < 0x7f ?
		    (char)val->p[i] : '?';
	}
	buf[val->len] = '\0';
	return 0;
}
