/*
 * extent.c - the per-open write-behind buffer and the absorb decision
 * (DESIGN.md section 4).
 */
#include <stdlib.h>
#include <string.h>

#include "coalesce/coalesce.h"

/* Mirrors of the SMB2 write flags; coalesce/ does not include proxy/. */
#define WF_WRITE_THROUGH    0x00000001u
#define WF_WRITE_UNBUFFERED 0x00000002u
#define APPEND_OFFSET       UINT64_C(0xFFFFFFFFFFFFFFFF)

void
co_extent_init(struct co_extent *x)
{
	memset(x, 0, sizeof(*x));
}

void
co_extent_free(struct co_extent *x)
{
	free(x->data); x->data = NULL;
	x->len = x->cap = 0;
}

bool
co_extent_fits(const struct co_extent *x, uint64_t off, size_t len,
    size_t limit)
{
	if (x->len == 0)
		return len <= limit;
	return off == x->off + x->len && x->len + len <= limit;
}

int
co_extent_append(struct co_extent *x, uint64_t off, const uint8_t *p,
    size_t len, double now_ms)
{
	if (x->len == 0) {
		x->off = off;
		x->first_ms = now_ms;
	}
	if (x->len + len > x->cap) {
		size_t ncap = x->cap ? x->cap : 64 * 1024;
		uint8_t *n;

		while (ncap < x->len + len)
			ncap *= 2;
		if ((n = realloc(x->data, ncap)) == NULL)
			return -1;
		x->data = n;
		x->cap = ncap;
	}
	memcpy(x->data + x->len, p, len);
	x->len += len;
	x->last_ms = now_ms;
	return 0;
}

uint8_t *
co_extent_take(struct co_extent *x, uint64_t *off, size_t *len)
{
	uint8_t *d = x->data;

	*off = x->off;
	*len = x->len;
	x->data = NULL;
	x->len = x->cap = 0;
	return d;
}

int
co_extent_merge_under(struct co_extent *x, uint64_t off, const uint8_t *p,
    size_t len, double now_ms)
{
	uint64_t lo, hi;
	uint8_t *n;

	if (len == 0)
		return 0;
	if (x->len == 0)
		return co_extent_append(x, off, p, len, now_ms);
	/* overlapping or touching: their union is one run */
	if (off > x->off + x->len || off + len < x->off)
		return 1;
	lo = off < x->off ? off : x->off;
	hi = off + len > x->off + x->len ? off + len : x->off + x->len;
	if ((n = malloc((size_t)(hi - lo))) == NULL)
		return -1;
	memcpy(n + (off - lo), p, len);
	/* x's bytes are the newer: they win where both have one */
	memcpy(n + (x->off - lo), x->data, x->len);
	free(x->data);
	x->data = n;
	x->off = lo;
	x->len = x->cap = (size_t)(hi - lo);
	if (now_ms < x->first_ms)
		x->first_ms = now_ms;
	return 0;
}

enum co_absorb
co_write_decide(enum co_gate gate, const struct co_open_facts *o,
    const struct co_write_facts *w, size_t coalesce_size)
{
	if (gate == CO_GATE_OFF)
		return CO_FWD_GATE;
	if (gate == CO_GATE_LEASED && !o->write_caching)
		return CO_FWD_GATE;
	if (w->signed_or_sealed)
		return CO_FWD_SIGNED;
	if (w->flags & (WF_WRITE_THROUGH | WF_WRITE_UNBUFFERED))
		return CO_FWD_FLAGS;
	/* the server must certainly accept it (DESIGN.md section 4) */
	if (!o->write_access || o->write_through || o->locked || o->failed ||
	    o->breaking)
		return CO_FWD_OPEN;
	if (!w->standalone || w->channel != 0 || w->length == 0 ||
	    w->length > coalesce_size || w->offset == APPEND_OFFSET ||
	    w->offset + w->length < w->offset ||
	    w->offset + w->length > CO_ABSORB_END_MAX)
		return CO_FWD_SHAPE;
	return CO_ABSORB;
}

static const char *const absorb_names[] = {
	"absorb", "gate", "flags", "open", "shape", "signed",
};

const char *
co_absorb_name(enum co_absorb a)
{
	return (unsigned int)a < sizeof(absorb_names) / sizeof(absorb_names[0]) ?
	    absorb_names[a] : "?";
}

static const char *const cause_names[CO_FLUSH_NCAUSES] = {
	"full", "noncontig", "pool", "idle", "age", "memory", "request",
	"observe", "peer", "break", "credits", "disconnect", "shutdown",
	"opaque", "expiry",
};

const char *
co_flush_cause_name(enum co_flush_cause c)
{
	return (unsigned int)c < CO_FLUSH_NCAUSES ? cause_names[c] : "?";
}
