/*
 * reader.c - the bounds-checked reader every decoder uses, little-endian
 * loads and stores, the strict UTF-16LE -> UTF-8 conversion of names, and
 * how two names of files are told to be one file (compared, hashed).
 *
 * The reader's error is sticky (struct px_rd in smb2.h): a caller reads a
 * whole structure and tests r.err once.  Nothing here reads outside the
 * window it was given.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "proxy/smb2/smb2.h"

/* ---- bounds-checked reader -------------------------------------------- */

void
px_rd_init(struct px_rd *r, const uint8_t *p, size_t len)
{
	r->p = p;
	r->len = p != NULL ? len : 0;
	r->off = 0;
	r->err = false;
}

/* True when n more bytes can be read; otherwise sets the sticky error. */
static bool
rd_avail(struct px_rd *r, size_t n)
{
	if (r->err || n > r->len - r->off) {
		r->err = true;
		return false;
	}
	return true;
}

uint8_t
px_rd_u8(struct px_rd *r)
{
	if (!rd_avail(r, 1))
		return 0;
	return r->p[r->off++];
}

uint16_t
px_rd_u16(struct px_rd *r)
{
	uint16_t v;

	if (!rd_avail(r, 2))
		return 0;
	v = px_get_u16(r->p + r->off);
	r->off += 2;
	return v;
}

uint32_t
px_rd_u32(struct px_rd *r)
{
	uint32_t v;

	if (!rd_avail(r, 4))
		return 0;
	v = px_get_u32(r->p + r->off);
	r->off += 4;
	return v;
}

uint64_t
px_rd_u64(struct px_rd *r)
{
	uint64_t v;

	if (!rd_avail(r, 8))
		return 0;
	v = px_get_u64(r->p + r->off);
	r->off += 8;
	return v;
}

/* On error dst is zero-filled, matching "every later read returns 0". */
void
px_rd_bytes(struct px_rd *r, void *dst, size_t n)
{
	if (n == 0)
		return;
	if (!rd_avail(r, n)) {
		memset(dst, 0, n);
		return;
	}
	memcpy(dst, r->p + r->off, n);
	r->off += n;
}

void
px_rd_skip(struct px_rd *r, size_t n)
{
	if (rd_avail(r, n))
		r->off += n;
}

void
px_rd_seek(struct px_rd *r, size_t off)
{
	if (r->err)
		return;
	if (off > r->len) {
		r->err = true;
		return;
	}
	r->off = off;
}

/* A zero-length read over a NULL buffer returns NULL without error. */
const uint8_t *
px_rd_ptr(struct px_rd *r, size_t n)
{
	const uint8_t *q;

	if (!rd_avail(r, n))
		return NULL;
	if (r->p == NULL)
		return NULL;
	q = r->p + r->off;
	r->off += n;
	return q;
}

/* ---- little-endian helpers -------------------------------------------- */

void
px_put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

void
px_put_u32(uint8_t *p, uint32_t v)
{
	px_put_u16(p, (uint16_t)v);
	px_put_u16(p + 2, (uint16_t)(v >> 16));
}

void
px_put_u64(uint8_t *p, uint64_t v)
{
	px_put_u32(p, (uint32_t)v);
	px_put_u32(p + 4, (uint32_t)(v >> 32));
}

uint16_t
px_get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

uint32_t
px_get_u32(const uint8_t *p)
{
	return (uint32_t)px_get_u16(p) | (uint32_t)px_get_u16(p + 2) << 16;
}

uint64_t
px_get_u64(const uint8_t *p)
{
	return (uint64_t)px_get_u32(p) | (uint64_t)px_get_u32(p + 4) << 32;
}

/* ---- UTF-16LE -> UTF-8 ------------------------------------------------------ */

/*
 * Strict conversion for names: unpaired surrogates and U+0000 (which would
 * cut the C string short) are errors.  On error dst is "" when cap > 0.
 */
int
px_utf16le_to_utf8(const uint8_t *src, size_t src_len, char *dst, size_t cap)
{
	size_t i, o = 0, n;
	uint32_t c, lo;

	if (dst == NULL || cap == 0)
		return -1;
	dst[0] = '\0';
	if (src_len % 2 != 0 || (src == NULL && src_len != 0))
		return -1;
	for (i = 0; i < src_len; i += 2) {
		c = px_get_u16(src + i);
		if (c >= 0xD800 && c <= 0xDBFF) {
			if (src_len - i < 4)
				goto fail;
			lo = px_get_u16(src + i + 2);
			if (lo < 0xDC00 || lo > 0xDFFF)
				goto fail;
			c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
			i += 2;
		} else if ((c >= 0xDC00 && c <= 0xDFFF) || c == 0)
			goto fail;
		n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
		if (cap - o <= n)
			goto fail;
		switch (n) {
		case 1:
			dst[o] = (char)c;
			break;
		case 2:
			dst[o] = (char)(0xC0 | c >> 6);
			dst[o + 1] = (char)(0x80 | (c & 0x3F));
			break;
		case 3:
			dst[o] = (char)(0xE0 | c >> 12);
			dst[o + 1] = (char)(0x80 | (c >> 6 & 0x3F));
			dst[o + 2] = (char)(0x80 | (c & 0x3F));
			break;
		default:
			dst[o] = (char)(0xF0 | c >> 18);
			dst[o + 1] = (char)(0x80 | (c >> 12 & 0x3F));
			dst[o + 2] = (char)(0x80 | (c >> 6 & 0x3F));
			dst[o + 3] = (char)(0x80 | (c & 0x3F));
			break;
		}
		o += n;
	}
	dst[o] = '\0';
	return 0;
fail:
	dst[0] = '\0';
	return -1;
}

/* ---- names of files --------------------------------------------------- */

/* The length of a name without a final "::$DATA" (the file's data
 * stream named explicitly is the file). */
size_t
px_file_name_len(const char *name)
{
	size_t n = strlen(name);

	return n >= 7 && strcasecmp(name + n - 7, "::$DATA") == 0 ? n - 7 : n;
}

bool
px_same_file_name(const char *a, const char *b)
{
	size_t n;

	while (*a == '\\' || *a == '/')
		a++;
	while (*b == '\\' || *b == '/')
		b++;
	n = px_file_name_len(a);
	return n == px_file_name_len(b) && strncasecmp(a, b, n) == 0;
}

uint32_t
px_name_hash(const char *name)
{
	uint32_t h = 2166136261u;        /* FNV-1a */

	size_t n, i;

	if (name == NULL)
		return 0;
	while (*name == '\\' || *name == '/')
		name++;
	/* the names px_same_file_name takes for one file hash alike */
	n = px_file_name_len(name);
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (ch >= 'A' && ch <= 'Z')
			ch = (unsigned char)(ch - 'A' + 'a');
		h = (h ^ ch) * 16777619u;
	}
	return h;
}
