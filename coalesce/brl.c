/*
 * brl.c - the byte-range locks of one open and the lock check of I/O
 * against them (MS-FSA 2.1.4.10, 2.1.5.2, 2.1.5.3, 2.1.5.9); pure, driven
 * by proxy/locks.c and by CUnit.  See coalesce.h.
 */
#include <stdlib.h>
#include <string.h>

#include "coalesce/coalesce.h"

void
co_brl_free(struct co_brl *b)
{
	free(b->r); b->r = NULL;
	memset(b, 0, sizeof(*b));
}

static void
lose(struct co_brl *b, bool excl)
{
	b->lost++;
	if (excl)
		b->lost_x++;
	else
		b->lost_s++;
}

enum co_brl_kept
co_brl_lock(struct co_brl *b, uint64_t off, uint64_t len, bool excl)
{
	if (b->n == b->cap) {
		uint16_t cap = b->cap ? (uint16_t)(b->cap * 2) : 4;
		struct co_brl_range *r;

		if (b->cap >= CO_BRL_MAX) {
			lose(b, excl);
			return CO_BRL_LOST;
		}
		if (cap > CO_BRL_MAX)
			cap = CO_BRL_MAX;
		if ((r = realloc(b->r, (size_t)cap * sizeof(*r))) == NULL) {
			lose(b, excl);
			return CO_BRL_NOMEM;
		}
		b->r = r;
		b->cap = cap;
	}
	b->r[b->n].off = off;
	b->r[b->n].len = len;
	b->r[b->n].excl = excl;
	b->n++;
	return CO_BRL_KEPT;
}

void
co_brl_lock_unknown(struct co_brl *b)
{
	b->lost++;
	b->lost_x++;
	b->lost_s++;
}

int
co_brl_unlock(struct co_brl *b, uint64_t off, uint64_t len)
{
	int i, at = -1;

	for (i = 0; i < b->n; i++)
		if (b->r[i].off == off && b->r[i].len == len) {
			if (b->r[i].excl) {
				at = i;
				break;
			}
			if (at < 0)
				at = i;
		}
	if (at >= 0) {
		memmove(&b->r[at], &b->r[at + 1],
		    (size_t)(b->n - at - 1) * sizeof(b->r[0]));
		b->n--;
		return 1;
	}
	if (b->lost == 0)
		return -1;
	/* one of those not kept (the server found it), of a kind unknown */
	b->lost--;
	if (b->lost_x > b->lost)
		b->lost_x = b->lost;
	if (b->lost_s > b->lost)
		b->lost_s = b->lost;
	return 0;
}

/* Does lock l overlap I/O [off, off + len), len >= 1?  Granted locks do not
 * wrap (MS-FSA 2.1.5.8 refuses them); I/O ranges are checked by the
 * decoders. */
static bool
overlaps(const struct co_brl_range *l, uint64_t off, uint64_t len)
{
	uint64_t last = off + len - 1, llast;

	if (l->len == 0) {
		if (l->off == 0)
			return false;   /* the {0, 0} range */
		llast = l->off - 1;
	} else
		llast = l->off + (l->len - 1);
	return off <= llast && last >= l->off;
}

enum co_brl_verdict
co_brl_check(const struct co_brl *b, bool own, uint64_t off, uint64_t len,
    bool write)
{
	uint16_t i;

	if (len == 0)
		return CO_BRL_OK;
	for (i = 0; i < b->n; i++)
		if (overlaps(&b->r[i], off, len) &&
		    (b->r[i].excl ? !own : write))
			return CO_BRL_LOCKED;
	/* locks not kept: what they could refuse is refused */
	if (own ? write && b->lost_s : b->lost_x || (write && b->lost))
		return CO_BRL_UNKNOWN;
	return CO_BRL_OK;
}
