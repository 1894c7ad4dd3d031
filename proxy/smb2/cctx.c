/*
 * cctx.c - CREATE contexts (MS-SMB2 2.2.13.2, 2.2.14.2): walking a chain,
 * a CREATE request encoded again with contexts of smbaccel's own appended,
 * and the server's CREATE answer turned back into the one the client would
 * have had (contexts it did not ask for removed, OplockLevel restored).
 *
 * A context's NameOffset and DataOffset are relative to the context itself,
 * so a context moves as a block: the contexts that stay are copied byte for
 * byte (header, name, data; trailing padding dropped) and only their Next
 * fields and the body's CreateContextsOffset/Length are computed anew.
 * Every context starts 8-byte aligned (Next is a multiple of 8) and the
 * last one carries no padding, as servers and clients lay chains out.
 *
 * Pure: bytes in, bytes out.  Every offset is checked before it is used;
 * a function that is given a malformed element returns 0 or -1.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proxy/smb2/smb2.h"

#define CREATE_REQ_FIXED 56        /* StructureSize 57 less the Buffer byte */
#define CREATE_RSP_FIXED 88        /* StructureSize 89 less the Buffer byte */
#define CCTX_HDR 16                /* Next .. DataLength */

static size_t
align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* ---- walking ------------------------------------------------------------- */

void
px_smb2_cctx_iter(struct smb2_cctx_iter *it, const uint8_t *chain, size_t len)
{
	it->p = chain;
	it->rem = len;
	it->done = len == 0;
	it->bad = false;
}

int
px_smb2_cctx_next(struct smb2_cctx_iter *it, struct smb2_cctx_view *v)
{
	const uint8_t *p = it->p;
	uint32_t next, dlen;
	uint16_t noff, nlen, doff;
	size_t ext, used;

	if (it->bad)
		return -1;          /* an earlier context was malformed */
	if (it->done)
		return 0;
	if (it->rem < CCTX_HDR)
		goto bad;
	next = px_get_u32(p);
	noff = px_get_u16(p + 4);
	nlen = px_get_u16(p + 6);
	doff = px_get_u16(p + 10);
	dlen = px_get_u32(p + 12);
	if (next != 0 && (next % 8 != 0 || next < CCTX_HDR ||
	    next > it->rem - CCTX_HDR))
		goto bad;
	ext = next != 0 ? next : it->rem;
	if (nlen == 0 || noff < CCTX_HDR || noff > ext || nlen > ext - noff)
		goto bad;
	if (dlen != 0 && ((size_t)doff < (size_t)noff + nlen || doff > ext ||
	    dlen > ext - doff))
		goto bad;
	used = (size_t)noff + nlen;
	if (dlen != 0 && (size_t)doff + dlen > used)
		used = (size_t)doff + dlen;
	v->start = p;
	v->ext = ext;
	v->used = used;
	v->name = p + noff;
	v->name_len = nlen;
	v->data = dlen ? p + doff : NULL;
	v->data_len = dlen;
	if (next == 0)
		it->done = true;
	else {
		it->p += next;
		it->rem -= next;
	}
	return 1;
bad:
	it->bad = true;
	return -1;
}

bool
px_smb2_cctx_is(const struct smb2_cctx_view *v, const char *tag)
{
	return v->name_len == 4 && memcmp(v->name, tag, 4) == 0;
}

/* The body of a CREATE request or response: its chain [*chain, +*clen)
 * inside the element, and for a request its name [*noff, +*nlen).  Only the
 * bounds the rewriting relies on are checked here; the chain itself is
 * checked by walking it. */
static int
create_parts(const struct smb2_elem *e, bool response, uint16_t *noff,
    uint16_t *nlen, const uint8_t **chain, uint32_t *clen)
{
	size_t fixed = response ? CREATE_RSP_FIXED : CREATE_REQ_FIXED;
	const uint8_t *b;
	uint32_t coff;

	if (e == NULL || e->hdr == NULL || e->len < SMB2_HDR_LEN + fixed)
		return -1;
	b = e->hdr + SMB2_HDR_LEN;
	if (px_get_u16(b) != fixed + 1)
		return -1;
	*noff = *nlen = 0;
	if (response) {
		coff = px_get_u32(b + 80);
		*clen = px_get_u32(b + 84);
	} else {
		*noff = px_get_u16(b + 44);
		*nlen = px_get_u16(b + 46);
		coff = px_get_u32(b + 48);
		*clen = px_get_u32(b + 52);
		if (*nlen != 0 && (*noff < SMB2_HDR_LEN + fixed ||
		    *noff > e->len || *nlen > e->len - *noff ||
		    *noff % 2 != 0 || *nlen % 2 != 0))
			return -1;
	}
	if (*clen == 0) {
		*chain = NULL;
		return 0;
	}
	if (coff < SMB2_HDR_LEN + fixed || coff > e->len ||
	    *clen > e->len - coff)
		return -1;
	/* a request's contexts start 8-byte aligned (MS-SMB2 2.2.13); one
	 * that does not is not rewritten but relayed as it is, for the
	 * server to judge (an answer's chain is laid out anew, aligned) */
	if (!response && coff % 8 != 0)
		return -1;
	*chain = e->hdr + coff;
	return 0;
}

static bool
stripped(const struct smb2_cctx_view *v, const char (*strip)[4],
    unsigned int nstrip)
{
	unsigned int i;

	for (i = 0; i < nstrip; i++)
		if (px_smb2_cctx_is(v, strip[i]))
			return true;
	return false;
}

/*
 * Lays a chain out from pos: each context 8-byte aligned (the padding
 * before it zeroed), the previous one's Next pointing to it; start is
 * where the first one went.  With out NULL it only measures.  pos is
 * where the next byte goes; last the start of the context placed last.
 */
struct layout {
	uint8_t *out;
	size_t start;
	size_t pos;
	size_t last;
	bool any;
};

static uint8_t *
lay_begin(struct layout *l, size_t used)
{
	size_t at = align8(l->pos);

	if (l->out != NULL) {
		if (at > l->pos)
			memset(l->out + l->pos, 0, at - l->pos);
		if (l->any)
			px_put_u32(l->out + l->last, (uint32_t)(at - l->last));
	}
	if (!l->any)
		l->start = at;      /* the chain starts 8-byte aligned */
	l->last = at;
	l->pos = at + used;
	l->any = true;
	return l->out != NULL ? l->out + at : NULL;
}

/* Copy the kept contexts of chain [chain, +clen); -1 if it is malformed. */
static int
lay_copy(struct layout *l, const uint8_t *chain, uint32_t clen,
    const char (*strip)[4], unsigned int nstrip)
{
	struct smb2_cctx_iter it;
	struct smb2_cctx_view v;
	int rc;

	px_smb2_cctx_iter(&it, chain, clen);
	while ((rc = px_smb2_cctx_next(&it, &v)) == 1) {
		uint8_t *d;

		if (stripped(&v, strip, nstrip))
			continue;
		if ((d = lay_begin(l, v.used)) != NULL) {
			memcpy(d, v.start, v.used);
			px_put_u32(d, 0);               /* Next: last so far */
		}
	}
	return rc;
}

/* Append one context of smbaccel's own: name at 16, data at 24. */
static void
lay_add(struct layout *l, const struct smb2_cctx *c)
{
	size_t used = c->len ? 24 + (size_t)c->len : CCTX_HDR + 4;
	uint8_t *d = lay_begin(l, used);

	if (d == NULL)
		return;
	memset(d, 0, used);
	px_put_u16(d + 4, CCTX_HDR);            /* NameOffset */
	px_put_u16(d + 6, 4);                   /* NameLength */
	px_put_u16(d + 10, c->len ? 24 : 0);    /* DataOffset */
	px_put_u32(d + 12, c->len);             /* DataLength */
	memcpy(d + CCTX_HDR, c->tag, 4);
	if (c->len)
		memcpy(d + 24, c->data, c->len);
}

/* ---- rewriting a request ------------------------------------------------- */

static size_t
req_layout(const struct smb2_elem *e, int oplock, const struct smb2_cctx *add,
    unsigned int nadd, uint8_t *out)
{
	struct layout l;
	const uint8_t *chain;
	uint16_t noff, nlen;
	uint32_t clen;
	size_t name_at = SMB2_HDR_LEN + CREATE_REQ_FIXED, total;
	unsigned int i;

	if (create_parts(e, false, &noff, &nlen, &chain, &clen) == -1)
		return 0;
	for (i = 0; i < nadd; i++)
		if (add[i].len > 0xFFFF || (add[i].len && add[i].data == NULL))
			return 0;
	memset(&l, 0, sizeof(l));
	l.out = out;
	l.pos = name_at + nlen;
	if (out != NULL) {
		memcpy(out, e->hdr, name_at);
		if (oplock >= 0)
			out[SMB2_HDR_LEN + 3] = (uint8_t)oplock;
		/* 120 even for an empty name, as Windows and Samba send it */
		px_put_u16(out + SMB2_HDR_LEN + 44, (uint16_t)name_at);
		if (nlen)
			memcpy(out + name_at, e->hdr + noff, nlen);
	}
	if (lay_copy(&l, chain, clen, NULL, 0) == -1)
		return 0;
	for (i = 0; i < nadd; i++)
		lay_add(&l, &add[i]);
	if (l.any)
		total = l.pos;
	else    /* no contexts: the name, or the one Buffer byte */
		total = name_at + (nlen ? nlen : 1);
	if (out != NULL) {
		if (!l.any && nlen == 0)
			out[name_at] = 0;
		px_put_u32(out + SMB2_HDR_LEN + 48, l.any ? (uint32_t)l.start : 0);
		px_put_u32(out + SMB2_HDR_LEN + 52,
		    l.any ? (uint32_t)(l.pos - l.start) : 0);
	}
	return total;
}

size_t
px_smb2_create_req_rewrite(const struct smb2_elem *e, int oplock,
    const struct smb2_cctx *add, unsigned int nadd, uint8_t *dst, size_t cap)
{
	size_t need = req_layout(e, oplock, add, nadd, NULL);

	if (need == 0 || dst == NULL)
		return need;
	if (cap < need)
		return 0;
	return req_layout(e, oplock, add, nadd, dst);
}

/* ---- restoring an answer ---------------------------------------------------- */

static size_t
rsp_layout(const struct smb2_elem *e, int oplock, const char (*strip)[4],
    unsigned int nstrip, uint8_t *out)
{
	struct layout l;
	const uint8_t *chain;
	uint16_t noff, nlen;
	uint32_t clen;
	size_t fixed_end = SMB2_HDR_LEN + CREATE_RSP_FIXED;

	if (create_parts(e, true, &noff, &nlen, &chain, &clen) == -1)
		return 0;
	memset(&l, 0, sizeof(l));
	l.out = out;
	l.pos = fixed_end;                    /* 152: 8-byte aligned */
	if (out != NULL) {
		memcpy(out, e->hdr, fixed_end);
		if (oplock >= 0)
			out[SMB2_HDR_LEN + 2] = (uint8_t)oplock;
	}
	if (lay_copy(&l, chain, clen, strip, nstrip) == -1)
		return 0;
	if (out != NULL) {
		px_put_u32(out + SMB2_HDR_LEN + 80, l.any ? (uint32_t)l.start : 0);
		px_put_u32(out + SMB2_HDR_LEN + 84,
		    l.any ? (uint32_t)(l.pos - l.start) : 0);
	}
	return l.pos;
}

size_t
px_smb2_create_rsp_restore(const struct smb2_elem *e, int oplock,
    const char (*strip)[4], unsigned int nstrip, uint8_t *dst, size_t cap)
{
	size_t need = rsp_layout(e, oplock, strip, nstrip, NULL);

	if (need == 0 || dst == NULL)
		return need;
	if (cap < need)
		return 0;
	return rsp_layout(e, oplock, strip, nstrip, dst);
}

int
px_smb2_create_ctx_find(const struct smb2_elem *e, bool response,
    const char *tag, const uint8_t **data, uint32_t *len)
{
	struct smb2_cctx_iter it;
	struct smb2_cctx_view v;
	const uint8_t *chain;
	uint16_t noff, nlen;
	uint32_t clen;

	if (create_parts(e, response, &noff, &nlen, &chain, &clen) == -1)
		return -1;
	px_smb2_cctx_iter(&it, chain, clen);
	while (px_smb2_cctx_next(&it, &v) == 1)
		if (px_smb2_cctx_is(&v, tag)) {
			*data = v.data;
			*len = v.data_len;
			return 0;
		}
	return -1;
}

/* ---- lease contexts and acknowledgements ------------------------------------ */

/* 2.2.13.2.8 (v1: key, state, flags, duration) and 2.2.13.2.10 (v2: then
 * the parent key, the epoch and a reserved field; no parent key set). */
size_t
px_smb2_lease_ctx_encode(uint8_t *dst, size_t cap, const uint8_t *key,
    uint32_t state, bool v2)
{
	size_t n = v2 ? SMB2_LEASE_V2_LEN : SMB2_LEASE_V1_LEN;

	if (dst == NULL || key == NULL || cap < n)
		return 0;
	memset(dst, 0, n);
	memcpy(dst, key, 16);
	px_put_u32(dst + 16, state);
	return n;
}
