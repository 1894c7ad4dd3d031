/*
 * readahead.c - the per-open read-ahead cache (DESIGN.md section 5).
 *
 * Pure bookkeeping: which byte ranges are cached or in flight, how far to
 * fetch ahead, and how the server would answer a read from what is known.
 */
#include <stdlib.h>
#include <string.h>

#include "coalesce/coalesce.h"

#define ST_SUCCESS     0x00000000u
#define ST_END_OF_FILE 0xC0000011u
#define RA_WINDOW_MIN  (128 * 1024)

void
co_ra_init(struct co_ra *ra)
{
	memset(ra, 0, sizeof(*ra));
	ra->window = RA_WINDOW_MIN;
}

static void
chunk_free(struct co_chunk *c)
{
	free(c->data);
	free(c);
}

void
co_ra_invalidate(struct co_ra *ra)
{
	struct co_chunk *c;

	while ((c = ra->chunks) != NULL) {
		ra->chunks = c->next;
		chunk_free(c);
	}
	ra->bytes = 0;
	ra->fetch_end = 0;
	ra->eof_known = false;
	ra->seq = false;
	ra->window = RA_WINDOW_MIN;
	ra->gen++;
}

/* Is [off, end) covered by chunks, in order and without gaps? */
enum co_ra_look
co_ra_lookup(const struct co_ra *ra, uint64_t off, uint32_t len)
{
	const struct co_chunk *c;
	uint64_t pos = off, end = off + len;
	bool pending = false;

	if (len == 0)
		return CO_RA_MISS;
	for (c = ra->chunks; c && pos < end; c = c->next) {
		if (c->off + c->len <= pos)
			continue;
		if (c->off > pos)
			return CO_RA_MISS;      /* a gap */
		if (!c->arrived)
			pending = true;
		else if (c->got < c->len) {
			/* short: the file ends inside this chunk */
			pos = end;
			break;
		}
		pos = c->off + c->len;
	}
	if (pos < end && !(ra->eof_known && pos >= ra->eof))
		return CO_RA_MISS;
	/* a read starting before the first chunk is not ours */
	if (ra->chunks == NULL || off < ra->chunks->off)
		return CO_RA_MISS;
	return pending ? CO_RA_WAIT : CO_RA_HIT;
}

void
co_ra_serve(struct co_ra *ra, uint64_t off, uint32_t len, uint32_t minimum,
    uint8_t *buf, uint32_t *n, uint32_t *status)
{
	struct co_chunk *c;
	uint64_t pos = off, end = off + len;

	if (ra->eof_known && end > ra->eof)
		end = ra->eof > off ? ra->eof : off;
	for (c = ra->chunks; c && pos < end; c = c->next) {
		uint64_t cend = c->off + c->got, take;

		if (cend <= pos || c->off > pos)
			continue;
		take = (cend < end ? cend : end) - pos;
		memcpy(buf + (pos - off), c->data + (pos - c->off), take);
		pos += take;
	}
	*n = (uint32_t)(pos - off);
	/* MS-SMB2 3.3.5.12: nothing at all, or less than MinimumCount */
	*status = (*n == 0 || *n < minimum) ? ST_END_OF_FILE : ST_SUCCESS;
	if (*status != ST_SUCCESS)
		*n = 0;
	ra->seq = ra->nreads > 0 && off == ra->next_expected;
	ra->nreads++;
	ra->next_expected = off + len;
	/* free the chunks the reader has passed */
	while ((c = ra->chunks) != NULL && c->arrived &&
	    c->off + c->len <= ra->next_expected && c->got == c->len) {
		ra->chunks = c->next;
		ra->bytes -= c->len;
		chunk_free(c);
	}
}

void
co_ra_note_read(struct co_ra *ra, uint64_t off, uint32_t len)
{
	/* sequential: this read starts where the previous one ended */
	ra->seq = ra->nreads > 0 && off == ra->next_expected;
	ra->nreads++;
	ra->next_expected = off + len;
}

uint32_t
co_ra_plan(const struct co_ra *ra, uint32_t max_len, uint64_t mem_left,
    uint64_t *off)
{
	uint64_t start = ra->fetch_end > ra->next_expected ? ra->fetch_end :
	    ra->next_expected;
	uint64_t ahead = start - ra->next_expected, len;

	if (ra->eof_known || max_len == 0 || ahead >= ra->window)
		return 0;
	len = ra->window - ahead;
	if (len > max_len)
		len = max_len;
	if (len > mem_left)
		len = mem_left;
	/* no crumbs: while the reader has a quarter of the window ahead of
	 * it, wait until a real chunk (half the window, at most 512 KiB) can
	 * be asked for in one request */
	if (ahead >= ra->window / 4 &&
	    len < (ra->window / 2 < 512 * 1024 ? ra->window / 2 : 512 * 1024))
		return 0;
	if (len == 0)
		return 0;
	*off = start;
	return (uint32_t)len;
}

struct co_chunk *
co_ra_add(struct co_ra *ra, uint64_t off, uint32_t len)
{
	struct co_chunk *c = calloc(1, sizeof(*c)), **pp;

	if (c == NULL)
		return NULL;
	c->off = off;
	c->len = len;
	for (pp = &ra->chunks; *pp && (*pp)->off < off; pp = &(*pp)->next)
		;
	c->next = *pp;
	*pp = c;
	ra->bytes += len;
	if (off + len > ra->fetch_end)
		ra->fetch_end = off + len;
	return c;
}

bool
co_ra_arrive(struct co_ra *ra, uint32_t gen, uint64_t off, bool ok,
    const uint8_t *data, uint32_t got)
{
	struct co_chunk *c;

	if (gen != ra->gen)
		return false;
	for (c = ra->chunks; c && c->off != off; c = c->next)
		;
	if (c == NULL || c->arrived)
		return false;
	if (!ok) {
		co_ra_invalidate(ra);
		return false;
	}
	if (got > c->len)
		got = c->len;
	if (got && (c->data = malloc(got)) == NULL) {
		co_ra_invalidate(ra);
		return false;
	}
	if (got)
		memcpy(c->data, data, got);
	c->got = got;
	c->arrived = true;
	if (got < c->len) {
		/* the file ends here; what lies beyond is not worth keeping */
		struct co_chunk *x;

		ra->eof_known = true;
		ra->eof = off + got;
		while ((x = c->next) != NULL) {
			if (!x->arrived)
				break;  /* still owed a response; keep it */
			c->next = x->next;
			ra->bytes -= x->len;
			chunk_free(x);
		}
	}
	return true;
}

void
co_ra_grow(struct co_ra *ra, uint64_t max_window)
{
	if (ra->window < max_window)
		ra->window = ra->window * 2 < max_window ? ra->window * 2 :
		    max_window;
}
