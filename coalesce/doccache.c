/*
 * doccache.c - the document cache (DESIGN.md section 5a): whole files in
 * chunks, found by key or serial, bounded by a memory limit, LRU.
 *
 * Pure bookkeeping: which chunks of which file are absent, in flight, in
 * memory or only in the on-disk store, how a read would be answered from
 * them, what to fetch next, and what to give back when memory runs short.
 * proxy/doccache.c drives it from the wire, proxy/docstore.c keeps the
 * store; neither is needed to test it.
 *
 * Memory: every entry is charged its bookkeeping (struct, key, per-chunk
 * state, pointer and checksum) and the data of its MEM chunks.  The
 * charge never passes the limit: before data is stored, the least recently
 * used other entries are dropped (an entry the store holds loses nothing
 * by that: it is read back from the store at the next open), and as a last
 * resort an entry the store holds gives back its own chunks outside the
 * read being served.
 */
#include <stdlib.h>
#include <string.h>

#include "coalesce/coalesce.h"

#define ST_SUCCESS     0x00000000u
#define ST_END_OF_FILE 0xC0000011u
#define DC_BUCKETS_MIN 256

/* ---- checksum ------------------------------------------------------------------ */

static uint64_t
le64(const uint8_t *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	    (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
	    (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static uint64_t
mix_word(uint64_t h, uint64_t w)
{
	/* both steps are bijections (odd multipliers, a rotation): a change
	 * to any one word always changes the result */
	h ^= w * UINT64_C(0xBF58476D1CE4E5B9);
	h = (h << 29 | h >> 35) * UINT64_C(0x94D049BB133111EB);
	return h;
}

uint64_t
co_sum64(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = UINT64_C(0x243F6A8885A308D3) ^ (uint64_t)n *
	    UINT64_C(0x9E3779B97F4A7C15);
	uint64_t w = 0;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8)
		h = mix_word(h, le64(b + i));
	if (i < n) {
		uint8_t tail[8] = { 0 };

		memcpy(tail, b + i, n - i);
		w = le64(tail);
		h = mix_word(h, w ^ UINT64_C(0xA5A5A5A5A5A5A5A5));
	}
	h ^= h >> 31;
	h *= UINT64_C(0xD6E8FEB86659FD93);
	return h ^ (h >> 32);
}

/* ---- validators ------------------------------------------------------------- */

static const char *const cause_names[CO_DC_NCAUSES] = {
	"same", "creation-time", "last-write-time", "change-time", "size",
	"file-id", "unproven",
};

const char *
co_dc_cause_name(enum co_dc_cause c)
{
	return (unsigned int)c < CO_DC_NCAUSES ? cause_names[c] : "?";
}

enum co_dc_cause
co_dc_compare(const struct co_dc_valid *a, const struct co_dc_valid *b)
{
	if (a->creation != b->creation)
		return CO_DC_CREATION;
	if (a->last_write != b->last_write)
		return CO_DC_WRITE;
	if (a->change != b->change)
		return CO_DC_CHANGE;
	if (a->eof != b->eof)
		return CO_DC_SIZE;
	/* a name, times and a size prove no file: two users' files can share
	 * a cache key (a share whose path depends on the user, a
	 * case-sensitive share) and another user sets all of those for his
	 * own; only the server's on-disk id names the file */
	if (!co_dc_same_file(a, b))
		return CO_DC_FILE_ID;
	return CO_DC_SAME;
}

/* ---- the table ---------------------------------------------------------------- */

static uint64_t
serial_hash(uint64_t s)
{
	return s * UINT64_C(0x9E3779B97F4A7C15) >> 17;
}

static uint64_t
id_hash(const struct co_dc_valid *v)
{
	return co_sum64(v->disk_id, sizeof(v->disk_id));
}


int
co_dc_init(struct co_dcache *dc, uint64_t limit)
{
	memset(dc, 0, sizeof(*dc));
	dc->nb = DC_BUCKETS_MIN;
	dc->kb = calloc(dc->nb, sizeof(*dc->kb));
	dc->sb = calloc(dc->nb, sizeof(*dc->sb));
	dc->ib = calloc(dc->nb, sizeof(*dc->ib));
	if (dc->kb == NULL || dc->sb == NULL || dc->ib == NULL) {
		free(dc->kb);
		free(dc->sb);
		free(dc->ib);
		memset(dc, 0, sizeof(*dc));
		return -1;
	}
	dc->limit = limit;
	dc->next_serial = 1;
	return 0;
}

/* Double the bucket arrays when entries outnumber them (best effort). */
static void
rehash(struct co_dcache *dc)
{
	size_t nb = dc->nb * 2, i;
	struct co_dc_entry **kb, **sb, **ib, *e;

	kb = calloc(nb, sizeof(*kb));
	sb = calloc(nb, sizeof(*sb));
	ib = calloc(nb, sizeof(*ib));
	if (kb == NULL || sb == NULL || ib == NULL) {
		free(kb);
		free(sb);
		free(ib);
		return;
	}
	for (e = dc->lru_head; e; e = e->lnext) {
		i = e->khash & (nb - 1);
		e->knext = kb[i];
		kb[i] = e;
		i = serial_hash(e->serial) & (nb - 1);
		e->snext = sb[i];
		sb[i] = e;
		if (e->v.has_disk_id) {
			i = id_hash(&e->v) & (nb - 1);
			e->inext = ib[i];
			ib[i] = e;
		}
	}
	free(dc->kb);
	free(dc->sb);
	free(dc->ib);
	dc->kb = kb;
	dc->sb = sb;
	dc->ib = ib;
	dc->nb = nb;
}

struct co_dc_entry *
co_dc_lookup(struct co_dcache *dc, const char *key)
{
	uint64_t h = co_sum64(key, strlen(key));
	struct co_dc_entry *e;

	if (dc->nb == 0)
		return NULL;
	for (e = dc->kb[h & (dc->nb - 1)]; e; e = e->knext)
		if (e->khash == h && strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

struct co_dc_entry *
co_dc_first_id(struct co_dcache *dc, const struct co_dc_valid *v)
{
	struct co_dc_entry *e;

	if (dc->nb == 0 || !v->has_disk_id)
		return NULL;
	for (e = dc->ib[id_hash(v) & (dc->nb - 1)]; e; e = e->inext)
		if (co_dc_same_file(&e->v, v))
			return e;
	return NULL;
}

struct co_dc_entry *
co_dc_next_id(struct co_dc_entry *e, const struct co_dc_valid *v)
{
	for (e = e->inext; e; e = e->inext)
		if (co_dc_same_file(&e->v, v))
			return e;
	return NULL;
}

struct co_dc_entry *
co_dc_find(struct co_dcache *dc, uint64_t serial)
{
	struct co_dc_entry *e;

	if (dc->nb == 0 || serial == 0)
		return NULL;
	for (e = dc->sb[serial_hash(serial) & (dc->nb - 1)]; e; e = e->snext)
		if (e->serial == serial)
			return e;
	return NULL;
}

static void
lru_unlink(struct co_dcache *dc, struct co_dc_entry *e)
{
	if (e->lprev)
		e->lprev->lnext = e->lnext;
	else
		dc->lru_head = e->lnext;
	if (e->lnext)
		e->lnext->lprev = e->lprev;
	else
		dc->lru_tail = e->lprev;
	e->lprev = e->lnext = NULL;
}

static void
lru_push(struct co_dcache *dc, struct co_dc_entry *e)
{
	e->lprev = NULL;
	e->lnext = dc->lru_head;
	if (dc->lru_head)
		dc->lru_head->lprev = e;
	else
		dc->lru_tail = e;
	dc->lru_head = e;
}

void
co_dc_touch(struct co_dcache *dc, struct co_dc_entry *e, uint64_t now)
{
	e->stamp = now;
	if (dc->lru_head == e)
		return;
	lru_unlink(dc, e);
	lru_push(dc, e);
}

uint64_t
co_dc_recent(const struct co_dcache *dc, uint64_t since)
{
	const struct co_dc_entry *e;
	uint64_t n = 0;

	/* the list is in order of use (entries made but never used are
	 * skipped) */
	for (e = dc->lru_head; e; e = e->lnext) {
		if (e->stamp == 0)
			continue;
		if (e->stamp < since)
			break;
		n += e->mem + (uint64_t)e->inflight * CO_DC_CHUNK;
	}
	return n;
}

static uint64_t
meta_bytes(size_t keylen, uint32_t nchunks)
{
	return sizeof(struct co_dc_entry) + keylen + 1 +
	    (uint64_t)nchunks * (1 + sizeof(uint8_t *) + sizeof(uint64_t));
}

uint32_t
co_dc_chunk_len(const struct co_dc_entry *e, uint32_t idx)
{
	uint64_t off = (uint64_t)idx * CO_DC_CHUNK;

	if (idx >= e->nchunks || off >= e->v.eof)
		return 0;
	return e->v.eof - off < CO_DC_CHUNK ? (uint32_t)(e->v.eof - off) :
	    CO_DC_CHUNK;
}

bool
co_dc_complete(const struct co_dc_entry *e)
{
	return e->present == e->nchunks;
}

static void
chunk_release(struct co_dcache *dc, struct co_dc_entry *e, uint32_t i,
    enum co_dc_state to)
{
	uint32_t len = co_dc_chunk_len(e, i);

	free(e->data[i]);
	e->data[i] = NULL;
	e->mem -= len;
	dc->mem -= len;
	e->state[i] = (uint8_t)to;
	if (to == CO_DC_ABSENT)
		e->present--;
}

static void
entry_free(struct co_dcache *dc, struct co_dc_entry *e, bool evicted)
{
	struct co_dc_entry **pp;
	uint32_t i;

	if (dc->on_drop)
		dc->on_drop(dc->on_drop_arg, e, evicted);
	for (pp = &dc->kb[e->khash & (dc->nb - 1)]; *pp; pp = &(*pp)->knext)
		if (*pp == e) {
			*pp = e->knext;
			break;
		}
	for (pp = &dc->sb[serial_hash(e->serial) & (dc->nb - 1)]; *pp;
	    pp = &(*pp)->snext)
		if (*pp == e) {
			*pp = e->snext;
			break;
		}
	if (e->v.has_disk_id)
		for (pp = &dc->ib[id_hash(&e->v) & (dc->nb - 1)]; *pp;
		    pp = &(*pp)->inext)
			if (*pp == e) {
				*pp = e->inext;
				break;
			}
	lru_unlink(dc, e);
	for (i = 0; i < e->nchunks; i++)
		free(e->data[i]);
	dc->mem -= e->mem;
	dc->nentries--;
	free(e->state);
	free(e->data);
	free(e->sum);
	free(e->key);
	free(e);
}

void
co_dc_drop(struct co_dcache *dc, struct co_dc_entry *e)
{
	entry_free(dc, e, false);
}

size_t
co_dc_drop_prefix(struct co_dcache *dc, const char *prefix)
{
	struct co_dc_entry *e, *next;
	size_t n = strlen(prefix), k = 0;

	for (e = dc->lru_head; e; e = next) {
		next = e->lnext;
		if (strncmp(e->key, prefix, n) == 0) {
			entry_free(dc, e, false);
			k++;
		}
	}
	return k;
}

void
co_dc_free(struct co_dcache *dc)
{
	while (dc->lru_head)
		entry_free(dc, dc->lru_head, true);
	free(dc->kb);
	free(dc->sb);
	free(dc->ib);
	memset(dc, 0, sizeof(*dc));
}

/*
 * Make room for n more bytes charged to e (which is never evicted):
 * least recently used entries first; then, if the store holds e, e's own
 * memory chunks outside [keep_lo, keep_hi].
 */
static bool
reserve(struct co_dcache *dc, struct co_dc_entry *e, uint64_t n,
    uint32_t keep_lo, uint32_t keep_hi)
{
	uint32_t i;

	while (dc->mem + n > dc->limit) {
		struct co_dc_entry *v = dc->lru_tail;

		if (v == e)
			v = e->lprev;
		if (v == NULL)
			break;
		entry_free(dc, v, true);
		dc->evicted++;
	}
	if (dc->mem + n <= dc->limit)
		return true;
	if (!e->on_disk)
		return false;
	for (i = 0; i < e->nchunks && dc->mem + n > dc->limit; i++)
		if (e->state[i] == CO_DC_MEM && (i < keep_lo || i > keep_hi)) {
			chunk_release(dc, e, i, CO_DC_DISK);
			dc->released++;
		}
	return dc->mem + n <= dc->limit;
}

void
co_dc_set_limit(struct co_dcache *dc, uint64_t limit)
{
	dc->limit = limit;
	while (dc->mem > dc->limit && dc->lru_tail) {
		entry_free(dc, dc->lru_tail, true);
		dc->evicted++;
	}
}

struct co_dc_entry *
co_dc_create(struct co_dcache *dc, const char *key,
    const struct co_dc_valid *v, const uint64_t *sums)
{
	struct co_dc_entry *e;
	uint64_t nch64, meta;
	size_t klen = strlen(key), i;

	if (v->eof == 0 || dc->nb == 0)
		return NULL;
	nch64 = (v->eof - 1) / CO_DC_CHUNK + 1;
	if (nch64 > UINT32_MAX / 2)
		return NULL;
	meta = meta_bytes(klen, (uint32_t)nch64);
	if (meta > dc->limit / 2)
		return NULL;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return NULL;
	e->nchunks = (uint32_t)nch64;
	e->key = malloc(klen + 1);
	e->state = calloc(e->nchunks, 1);
	e->data = calloc(e->nchunks, sizeof(*e->data));
	e->sum = calloc(e->nchunks, sizeof(*e->sum));
	if (e->key == NULL || e->state == NULL || e->data == NULL ||
	    e->sum == NULL) {
		free(e->key);
		free(e->state);
		free(e->data);
		free(e->sum);
		free(e);
		return NULL;
	}
	memcpy(e->key, key, klen + 1);
	e->khash = co_sum64(key, klen);
	e->serial = dc->next_serial++;
	e->v = *v;
	if (sums) {
		for (i = 0; i < e->nchunks; i++) {
			e->state[i] = CO_DC_DISK;
			e->sum[i] = sums[i];
		}
		e->present = e->nchunks;
		e->on_disk = true;
	}
	/* its bookkeeping is charged like data; make room first (e is not
	 * linked yet, so it cannot be its own victim) */
	while (dc->mem + meta > dc->limit && dc->lru_tail) {
		entry_free(dc, dc->lru_tail, true);
		dc->evicted++;
	}
	e->mem = meta;
	dc->mem += meta;
	i = e->khash & (dc->nb - 1);
	e->knext = dc->kb[i];
	dc->kb[i] = e;
	i = serial_hash(e->serial) & (dc->nb - 1);
	e->snext = dc->sb[i];
	dc->sb[i] = e;
	if (e->v.has_disk_id) {
		i = id_hash(&e->v) & (dc->nb - 1);
		e->inext = dc->ib[i];
		dc->ib[i] = e;
	}
	lru_push(dc, e);
	dc->nentries++;
	if (dc->nentries > dc->nb)
		rehash(dc);
	return e;
}

/* ---- lookups and answers -------------------------------------------------------- */

enum co_dc_look
co_dc_look(const struct co_dc_entry *e, uint64_t off, uint32_t len,
    uint32_t *idx)
{
	uint64_t end = off + len;
	uint32_t lo, hi, i;
	bool wait = false, load = false;

	if (off >= e->v.eof)
		return CO_DC_HIT;       /* answered END_OF_FILE */
	if (len == 0)
		return CO_DC_MISS;
	if (end > e->v.eof || end < off)
		end = e->v.eof;
	lo = (uint32_t)(off / CO_DC_CHUNK);
	hi = (uint32_t)((end - 1) / CO_DC_CHUNK);
	for (i = lo; i <= hi; i++) {
		switch (e->state[i]) {
		case CO_DC_ABSENT:
			return CO_DC_MISS;
		case CO_DC_INFLIGHT:
			wait = true;
			break;
		case CO_DC_DISK:
			if (!load)
				*idx = i;
			load = true;
			break;
		default:
			break;
		}
	}
	if (wait)
		return CO_DC_WAIT;
	return load ? CO_DC_LOAD : CO_DC_HIT;
}

void
co_dc_copy(const struct co_dc_entry *e, uint64_t off, uint32_t len,
    uint32_t minimum, uint8_t *buf, uint32_t *n, uint32_t *status)
{
	uint64_t pos = off, end = off + len;

	if (end > e->v.eof || end < off)
		end = e->v.eof > off ? e->v.eof : off;
	while (pos < end) {
		uint32_t i = (uint32_t)(pos / CO_DC_CHUNK);
		uint64_t cstart = (uint64_t)i * CO_DC_CHUNK;
		uint64_t cend = cstart + co_dc_chunk_len(e, i);
		uint64_t take = (cend < end ? cend : end) - pos;

		if (e->state[i] != CO_DC_MEM || e->data[i] == NULL)
			break;          /* co_dc_look said HIT: not reached */
		memcpy(buf + (pos - off), e->data[i] + (pos - cstart), take);
		pos += take;
	}
	*n = (uint32_t)(pos - off);
	/* MS-SMB2 3.3.5.12: nothing at all, or less than MinimumCount */
	*status = (*n == 0 || *n < minimum) ? ST_END_OF_FILE : ST_SUCCESS;
	if (*status != ST_SUCCESS)
		*n = 0;
}

/* ---- fetching ------------------------------------------------------------------ */

uint32_t
co_dc_plan(const struct co_dc_entry *e, uint32_t max, uint32_t *first)
{
	uint32_t i, start, k = 0, pass;

	if (max == 0 || e->present + e->inflight >= e->nchunks)
		return 0;
	start = e->cursor < e->nchunks ? e->cursor : 0;
	for (pass = 0; pass < 2; pass++) {
		uint32_t from = pass == 0 ? start : 0;
		uint32_t to = pass == 0 ? e->nchunks : start;

		for (i = from; i < to; i++)
			if (e->state[i] == CO_DC_ABSENT)
				break;
		if (i < to) {
			*first = i;
			while (i < e->nchunks && k < max &&
			    e->state[i] == CO_DC_ABSENT) {
				i++;
				k++;
			}
			return k;
		}
	}
	return 0;
}

bool
co_dc_room(struct co_dcache *dc, const struct co_dc_entry *e, uint64_t n)
{
	return e->mem + (uint64_t)e->inflight * CO_DC_CHUNK + n <= dc->limit;
}

void
co_dc_mark(struct co_dc_entry *e, uint32_t first, uint32_t n)
{
	uint32_t i;

	for (i = first; i < first + n && i < e->nchunks; i++)
		if (e->state[i] == CO_DC_ABSENT) {
			e->state[i] = CO_DC_INFLIGHT;
			e->inflight++;
		}
	e->cursor = first + n < e->nchunks ? first + n : 0;
}

static void
unmark(struct co_dc_entry *e, uint32_t i)
{
	if (e->state[i] == CO_DC_INFLIGHT) {
		e->state[i] = CO_DC_ABSENT;
		e->inflight--;
	}
}

void
co_dc_fail(struct co_dc_entry *e, uint64_t off, uint32_t asked)
{
	uint64_t end = off + asked;
	uint32_t i;

	if (asked == 0 || off >= e->v.eof)
		return;
	if (end > e->v.eof || end < off)
		end = e->v.eof;
	for (i = (uint32_t)(off / CO_DC_CHUNK);
	    i <= (uint32_t)((end - 1) / CO_DC_CHUNK); i++)
		unmark(e, i);
}

int
co_dc_arrive(struct co_dcache *dc, struct co_dc_entry *e, uint64_t off,
    uint32_t asked, const uint8_t *data, uint32_t got, uint32_t *first,
    uint32_t *n)
{
	uint64_t end = off + asked;
	uint32_t i, lo, hi;
	int stored = 0;

	*first = 0;
	*n = 0;
	if (off % CO_DC_CHUNK != 0 || asked == 0 || off >= e->v.eof) {
		co_dc_fail(e, off, asked);
		return 0;
	}
	if (got > asked)
		got = asked;
	if (end > e->v.eof || end < off)
		end = e->v.eof;
	lo = (uint32_t)(off / CO_DC_CHUNK);
	hi = (uint32_t)((end - 1) / CO_DC_CHUNK);
	for (i = lo; i <= hi; i++) {
		uint64_t at = (uint64_t)i * CO_DC_CHUNK - off;
		uint32_t clen = co_dc_chunk_len(e, i);
		uint8_t *d;

		if (at + clen > asked)
			break;          /* not wholly asked for: not ours */
		if (at + clen > got) {
			/* the server has fewer bytes than the CREATE said */
			for (; i <= hi; i++)
				unmark(e, i);
			return -1;
		}
		if (e->state[i] != CO_DC_ABSENT && e->state[i] != CO_DC_INFLIGHT)
			continue;       /* here already, or in the store */
		unmark(e, i);
		if (!reserve(dc, e, clen, lo, hi) ||
		    (d = malloc(clen)) == NULL)
			continue;       /* stays absent */
		memcpy(d, data + at, clen);
		e->data[i] = d;
		e->sum[i] = co_sum64(d, clen);
		e->state[i] = CO_DC_MEM;
		e->present++;
		e->mem += clen;
		dc->mem += clen;
		if (stored == 0)
			*first = i;
		*n = i - *first + 1;
		stored++;
	}
	return stored;
}

/* ---- the store's copy ---------------------------------------------------------- */

bool
co_dc_verify(const struct co_dc_entry *e, uint32_t idx, const uint8_t *data,
    uint32_t len)
{
	return idx < e->nchunks && len == co_dc_chunk_len(e, idx) &&
	    co_sum64(data, len) == e->sum[idx];
}

int
co_dc_fill(struct co_dcache *dc, struct co_dc_entry *e, uint32_t idx,
    const uint8_t *data, uint32_t keep_lo, uint32_t keep_hi)
{
	uint32_t len = co_dc_chunk_len(e, idx);
	uint8_t *d;

	if (idx >= e->nchunks || e->state[idx] != CO_DC_DISK ||
	    !reserve(dc, e, len, keep_lo, keep_hi) ||
	    (d = malloc(len)) == NULL)
		return -1;
	memcpy(d, data, len);
	e->data[idx] = d;
	e->state[idx] = CO_DC_MEM;
	e->mem += len;
	dc->mem += len;
	return 0;
}

void
co_dc_forget_disk(struct co_dcache *dc, struct co_dc_entry *e)
{
	uint32_t i;

	(void)dc;
	for (i = 0; i < e->nchunks; i++)
		if (e->state[i] == CO_DC_DISK) {
			e->state[i] = CO_DC_ABSENT;
			e->present--;
		}
	e->on_disk = false;
}
