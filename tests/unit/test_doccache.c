/*
 * test_doccache.c - the document cache of coalesce/doccache.c (DESIGN.md
 * section 5a): validators, chunk states, answers the way the server would
 * give them, fetch planning, the memory bound and LRU, the store's copy
 * (checksums), and proxy/docstore.c, the on-disk store.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "coalesce/coalesce.h"
#include "proxy/docstore.h"
#include "tests/unit/unit.h"

#define CH CO_DC_CHUNK
#define EOF_ST 0xC0000011u

static void
fill_model(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;
	uint32_t x = seed * 2654435761u + 1;

	for (i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

static struct co_dc_valid
valid(uint64_t eof, uint64_t t)
{
	struct co_dc_valid v;

	memset(&v, 0, sizeof(v));
	v.creation = 1000 + t;
	v.last_write = 2000 + t;
	v.change = 3000 + t;
	v.eof = eof;
	v.has_disk_id = true;           /* as every open a copy is made for */
	v.disk_id[0] = 0x42;
	return v;
}

static void
test_sum64(void)
{
	uint8_t *a = malloc(CH), *b = malloc(CH);
	uint64_t s;
	size_t i;

	fill_model(a, CH, 1);
	memcpy(b, a, CH);
	s = co_sum64(a, CH);
	CU_ASSERT_EQUAL(s, co_sum64(b, CH));
	/* any one changed byte, anywhere, changes the sum */
	for (i = 0; i < CH; i += 977) {
		b[i] ^= 0x01;
		CU_ASSERT_NOT_EQUAL(co_sum64(b, CH), s);
		b[i] ^= 0x01;
	}
	b[CH - 1] ^= 0x80;
	CU_ASSERT_NOT_EQUAL(co_sum64(b, CH), s);
	b[CH - 1] ^= 0x80;
	/* the length counts, also for a tail of zeros */
	CU_ASSERT_NOT_EQUAL(co_sum64(a, CH - 1), s);
	memset(b, 0, 16);
	CU_ASSERT_NOT_EQUAL(co_sum64(b, 15), co_sum64(b, 16));
	CU_ASSERT_NOT_EQUAL(co_sum64(b, 0), co_sum64(b, 1));
	free(a);
	free(b);
}

static void
test_compare(void)
{
	struct co_dc_valid a = valid(100, 0), b = a;

	CU_ASSERT_EQUAL(co_dc_compare(&a, &b), CO_DC_SAME);
	b.creation++;
	CU_ASSERT_EQUAL(co_dc_compare(&a, &b), CO_DC_CREATION);
	b = a;
	b.last_write++;
	CU_ASSERT_EQUAL(co_dc_compare(&a, &b), CO_DC_WRITE);
	b = a;
	b.change++;
	CU_ASSERT_EQUAL(co_dc_compare(&a, &b), CO_DC_CHANGE);
	b = a;
	b.eof++;
	CU_ASSERT_EQUAL(co_dc_compare(&a, &b), CO_DC_SIZE);
	/* the on-disk id: the same on both sides, or not the same file
	 * (times and size alone are another user's to set) */
	b = a;
	b.disk_id[3] = 7;
	CU_ASSERT_EQUAL(co_dc_compare(&a, &b), CO_DC_FILE_ID);
	CU_ASSERT(co_dc_other_file(&a, &b) && !co_dc_same_file(&a, &b));
	a.disk_id[3] = 7;
	CU_ASSERT_EQUAL(co_dc_compare(&a, &b), CO_DC_SAME);
	CU_ASSERT(co_dc_same_file(&a, &b) && !co_dc_other_file(&a, &b));
	/* the last byte (Reserved) counts too: the whole 32 are compared */
	b.disk_id[31] = 1;
	CU_ASSERT(co_dc_other_file(&a, &b));
	b.disk_id[31] = 0;
	/* one side without an id: neither one file nor two */
	b.has_disk_id = false;
	CU_ASSERT_EQUAL(co_dc_compare(&a, &b), CO_DC_FILE_ID);
	CU_ASSERT(!co_dc_same_file(&a, &b) && !co_dc_other_file(&a, &b));
	CU_ASSERT(!co_dc_same_file(&b, &a) && !co_dc_other_file(&b, &a));
	a.has_disk_id = false;
	CU_ASSERT_EQUAL(co_dc_compare(&a, &b), CO_DC_FILE_ID);
	CU_ASSERT_STRING_EQUAL(co_dc_cause_name(CO_DC_CHANGE), "change-time");
	/* the glue's cause (stats key dc_valid_failed.unproven) */
	CU_ASSERT_STRING_EQUAL(co_dc_cause_name(CO_DC_UNPROVEN), "unproven");
	CU_ASSERT_STRING_EQUAL(co_dc_cause_name(CO_DC_NCAUSES), "?");
}

static void
test_table(void)
{
	struct co_dcache dc;
	struct co_dc_valid v = valid(3 * CH, 0);
	struct co_dc_entry *e, *f;
	uint64_t s;
	char key[64];
	int i;

	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	e = co_dc_create(&dc, "srv|share|a.doc", &v, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(e->nchunks, 3);
	CU_ASSERT_PTR_EQUAL(co_dc_lookup(&dc, "srv|share|a.doc"), e);
	CU_ASSERT_PTR_NULL(co_dc_lookup(&dc, "srv|share|b.doc"));
	CU_ASSERT_PTR_EQUAL(co_dc_find(&dc, e->serial), e);
	s = e->serial;
	co_dc_drop(&dc, e);
	/* a serial is never found again, even by a new entry of the key */
	CU_ASSERT_PTR_NULL(co_dc_find(&dc, s));
	f = co_dc_create(&dc, "srv|share|a.doc", &v, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_NOT_EQUAL(f->serial, s);
	CU_ASSERT_PTR_NULL(co_dc_find(&dc, s));
	/* empty files are not cached */
	v.eof = 0;
	CU_ASSERT_PTR_NULL(co_dc_create(&dc, "srv|share|empty", &v, NULL));
	/* many entries: the table grows and still finds all of them; each
	 * with its own on-disk id, and every 500th with a.doc's (hard links
	 * of it), found by the id index before and after the growth */
	v.eof = 100;
	for (i = 0; i < 2000; i++) {
		snprintf(key, sizeof(key), "srv|share|dir\\f%d", i);
		v.disk_id[8] = (uint8_t)(i % 500 ? 1 + i % 250 : 0);
		v.disk_id[9] = (uint8_t)(i % 500 ? 1 + i / 250 : 0);
		CU_ASSERT_PTR_NOT_NULL(co_dc_create(&dc, key, &v, NULL));
		if (i == 100) {
			struct co_dc_valid w = f->v;

			CU_ASSERT_PTR_NOT_NULL(co_dc_first_id(&dc, &w));
		}
	}
	{
		struct co_dc_valid w = f->v;
		int links = 0;

		for (e = co_dc_first_id(&dc, &w); e; e = co_dc_next_id(e, &w)) {
			CU_ASSERT_EQUAL(memcmp(e->v.disk_id, w.disk_id, 32), 0);
			links++;
		}
		CU_ASSERT_EQUAL(links, 5);          /* a.doc, f0 .. f1500 */
		w.has_disk_id = false;
		CU_ASSERT_PTR_NULL(co_dc_first_id(&dc, &w));
		w.has_disk_id = true;
		w.disk_id[8] = 0xEE;
		CU_ASSERT_PTR_NULL(co_dc_first_id(&dc, &w));
	}
	CU_ASSERT(dc.nb >= 2000);
	for (i = 0; i < 2000; i += 111) {
		snprintf(key, sizeof(key), "srv|share|dir\\f%d", i);
		e = co_dc_lookup(&dc, key);
		CU_ASSERT_PTR_NOT_NULL(e);
		if (e)
			CU_ASSERT_PTR_EQUAL(co_dc_find(&dc, e->serial), e);
	}
	/* a directory's entries go with it (rename, delete) */
	CU_ASSERT_EQUAL(co_dc_drop_prefix(&dc, "srv|share|dir\\"), 2000);
	CU_ASSERT_PTR_NOT_NULL(co_dc_lookup(&dc, "srv|share|a.doc"));
	/* and their ids with them */
	{
		struct co_dc_valid w = f->v;

		e = co_dc_first_id(&dc, &w);
		CU_ASSERT_PTR_EQUAL(e, f);
		CU_ASSERT_PTR_NULL(e ? co_dc_next_id(e, &w) : NULL);
	}
	CU_ASSERT_EQUAL(dc.nentries, 1);
	co_dc_free(&dc);
}

/* Plan, mark, arrive, look, copy: the bytes and answers of a model file. */
static void
test_fetch_serve(void)
{
	struct co_dcache dc;
	size_t size = 3 * CH + 3392;
	uint8_t *model = malloc(size), *buf = malloc(2 * CH);
	struct co_dc_valid v = valid(size, 0);
	struct co_dc_entry *e;
	uint32_t first, n, st, idx, sf, sn;

	fill_model(model, size, 7);
	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	e = co_dc_create(&dc, "k", &v, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(e->nchunks, 4);
	CU_ASSERT_EQUAL(co_dc_chunk_len(e, 3), 3392);
	CU_ASSERT_EQUAL(co_dc_look(e, 5, 100, &idx), CO_DC_MISS);
	/* past EOF: answered from what the CREATE said */
	CU_ASSERT_EQUAL(co_dc_look(e, size, 100, &idx), CO_DC_HIT);
	co_dc_copy(e, size, 100, 0, buf, &n, &st);
	CU_ASSERT_EQUAL(st, EOF_ST);
	CU_ASSERT_EQUAL(n, 0);

	/* a widened read of chunk 1 (cursor moves past it) */
	co_dc_mark(e, 1, 1);
	CU_ASSERT_EQUAL(e->inflight, 1);
	CU_ASSERT_EQUAL(co_dc_look(e, CH + 10, 4096, &idx), CO_DC_WAIT);
	/* the planner goes on from the cursor, wrapping, never in flight */
	CU_ASSERT_EQUAL(co_dc_plan(e, 16, &first), 2);
	CU_ASSERT_EQUAL(first, 2);
	CU_ASSERT_EQUAL(co_dc_plan(e, 1, &first), 1);
	CU_ASSERT_EQUAL(first, 2);
	CU_ASSERT_EQUAL(co_dc_arrive(&dc, e, CH, CH, model + CH, CH, &sf, &sn), 1);
	CU_ASSERT_EQUAL(sf, 1);
	CU_ASSERT_EQUAL(sn, 1);
	CU_ASSERT_EQUAL(co_dc_look(e, CH + 10, 4096, &idx), CO_DC_HIT);
	co_dc_copy(e, CH + 10, 4096, 0, buf, &n, &st);
	CU_ASSERT_EQUAL(st, 0);
	CU_ASSERT_EQUAL(n, 4096);
	CU_ASSERT_EQUAL(memcmp(buf, model + CH + 10, 4096), 0);
	/* spanning into an absent chunk: a miss */
	CU_ASSERT_EQUAL(co_dc_look(e, 2 * CH - 100, 200, &idx), CO_DC_MISS);

	/* fetch the rest: two chunks, the last one short (EOF) */
	CU_ASSERT_EQUAL(co_dc_plan(e, 16, &first), 2);
	CU_ASSERT_EQUAL(first, 2);
	co_dc_mark(e, first, 2);
	CU_ASSERT_EQUAL(co_dc_plan(e, 16, &first), 1);
	CU_ASSERT_EQUAL(first, 0);
	co_dc_mark(e, 0, 1);
	CU_ASSERT_EQUAL(co_dc_plan(e, 16, &first), 0);
	CU_ASSERT_EQUAL(co_dc_arrive(&dc, e, 2 * CH, 2 * CH, model + 2 * CH,
	    (uint32_t)(size - 2 * CH), &sf, &sn), 2);
	CU_ASSERT_EQUAL(sf, 2);
	CU_ASSERT_EQUAL(sn, 2);
	CU_ASSERT(!co_dc_complete(e));
	CU_ASSERT_EQUAL(co_dc_arrive(&dc, e, 0, CH, model, CH, &sf, &sn), 1);
	CU_ASSERT(co_dc_complete(e));
	CU_ASSERT_EQUAL(e->inflight, 0);
	/* a read across chunks and the end: short, as the server answers */
	CU_ASSERT_EQUAL(co_dc_look(e, size - 5000, 8192, &idx), CO_DC_HIT);
	co_dc_copy(e, size - 5000, 8192, 0, buf, &n, &st);
	CU_ASSERT_EQUAL(st, 0);
	CU_ASSERT_EQUAL(n, 5000);
	CU_ASSERT_EQUAL(memcmp(buf, model + size - 5000, 5000), 0);
	/* ... and with MinimumCount above what is there: END_OF_FILE */
	co_dc_copy(e, size - 5000, 8192, 6000, buf, &n, &st);
	CU_ASSERT_EQUAL(st, EOF_ST);
	CU_ASSERT_EQUAL(n, 0);
	co_dc_copy(e, 0, 2 * CH, 0, buf, &n, &st);
	CU_ASSERT_EQUAL(n, 2 * CH);
	CU_ASSERT_EQUAL(memcmp(buf, model, 2 * CH), 0);
	/* a second answer for a chunk already here changes nothing */
	CU_ASSERT_EQUAL(co_dc_arrive(&dc, e, 0, CH, model + 7, CH, &sf, &sn), 0);
	co_dc_copy(e, 0, 64, 0, buf, &n, &st);
	CU_ASSERT_EQUAL(memcmp(buf, model, 64), 0);
	co_dc_free(&dc);
	free(model);
	free(buf);
}

static void
test_short_and_fail(void)
{
	struct co_dcache dc;
	uint8_t *d = calloc(1, 2 * CH);
	struct co_dc_valid v = valid(2 * CH, 0);
	struct co_dc_entry *e;
	uint32_t idx, sf, sn, first;

	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	e = co_dc_create(&dc, "k", &v, NULL);
	co_dc_mark(e, 0, 2);
	/* fewer bytes than the CREATE said: the file changed */
	CU_ASSERT_EQUAL(co_dc_arrive(&dc, e, 0, 2 * CH, d, CH + 5, &sf, &sn), -1);
	co_dc_drop(&dc, e);
	e = co_dc_create(&dc, "k", &v, NULL);
	co_dc_mark(e, 0, 2);
	CU_ASSERT_EQUAL(co_dc_look(e, 0, 10, &idx), CO_DC_WAIT);
	/* a failed fetch: absent again, planned again */
	co_dc_fail(e, 0, 2 * CH);
	CU_ASSERT_EQUAL(e->inflight, 0);
	CU_ASSERT_EQUAL(co_dc_look(e, 0, 10, &idx), CO_DC_MISS);
	CU_ASSERT_EQUAL(co_dc_plan(e, 16, &first), 2);
	/* unaligned answers are not taken */
	CU_ASSERT_EQUAL(co_dc_arrive(&dc, e, 100, CH, d, CH, &sf, &sn), 0);
	co_dc_free(&dc);
	free(d);
}

static int drops_evicted, drops_stale;

static void
on_drop(void *arg, struct co_dc_entry *e, bool evicted)
{
	(void)arg;
	(void)e;
	if (evicted)
		drops_evicted++;
	else
		drops_stale++;
}

/* The limit holds whatever is stored; the least recently used go. */
static void
test_memory_bound(void)
{
	struct co_dcache dc;
	uint8_t *d = calloc(1, 8 * CH);
	struct co_dc_valid v = valid(8 * CH, 0);
	struct co_dc_entry *e[10];
	uint64_t limit = 20 * CH, s0;
	uint32_t sf, sn;
	int i;

	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, limit), 0);
	dc.on_drop = on_drop;
	drops_evicted = drops_stale = 0;
	for (i = 0; i < 10; i++) {
		char key[16];

		snprintf(key, sizeof(key), "f%d", i);
		e[i] = co_dc_create(&dc, key, &v, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(e[i]);
		if (i == 0)
			s0 = e[0]->serial;
		/* f0 stays in use: touched before every new file */
		if (i > 0 && co_dc_find(&dc, s0))
			co_dc_touch(&dc, co_dc_find(&dc, s0), 100 + i);
		co_dc_touch(&dc, e[i], 100 + i);
		CU_ASSERT(co_dc_room(&dc, e[i], 8 * CH));
		co_dc_mark(e[i], 0, 8);
		CU_ASSERT(co_dc_arrive(&dc, e[i], 0, 8 * CH, d, 8 * CH, &sf,
		    &sn) >= 0);
		CU_ASSERT(dc.mem <= limit);
	}
	/* what the readers of the last moments hold: f0 and f9 */
	CU_ASSERT(co_dc_recent(&dc, 109) >= 2 * 8 * CH);
	CU_ASSERT(co_dc_recent(&dc, 110) == 0);
	/* two files' data fit: the newest and the one kept in use */
	CU_ASSERT_PTR_NOT_NULL(co_dc_find(&dc, s0));
	CU_ASSERT_PTR_NOT_NULL(co_dc_lookup(&dc, "f9"));
	CU_ASSERT_PTR_NULL(co_dc_lookup(&dc, "f5"));
	CU_ASSERT(dc.evicted >= 7);
	CU_ASSERT_EQUAL(drops_evicted, (int)dc.evicted);
	/* one file larger than the whole limit cannot be fetched whole */
	v.eof = 64 * CH;
	e[0] = co_dc_create(&dc, "big", &v, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e[0]);
	CU_ASSERT(!co_dc_room(&dc, e[0], 32 * CH));
	co_dc_drop(&dc, e[0]);
	CU_ASSERT_EQUAL(drops_stale, 1);
	/* a lower limit evicts down to it */
	co_dc_set_limit(&dc, 4 * CH);
	CU_ASSERT(dc.mem <= 4 * CH);
	co_dc_free(&dc);
	CU_ASSERT_EQUAL(dc.mem, 0);
	free(d);
}

/* An entry read back from the store: LOAD, verify, fill; under memory
 * pressure its own chunks go back to DISK (nothing is lost). */
static void
test_disk_chunks(void)
{
	struct co_dcache dc;
	size_t size = 6 * CH;
	uint8_t *model = malloc(size), *bad = malloc(CH), *buf = malloc(CH);
	uint64_t sums[6];
	struct co_dc_valid v = valid(size, 1);
	struct co_dc_entry *e;
	uint32_t idx, i, n, st;

	fill_model(model, size, 3);
	for (i = 0; i < 6; i++)
		sums[i] = co_sum64(model + i * CH, CH);
	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 6 * CH), 0);
	e = co_dc_create(&dc, "disk", &v, sums);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT(e->on_disk);
	CU_ASSERT(co_dc_complete(e));
	CU_ASSERT_EQUAL(co_dc_look(e, 2 * CH + 1, 100, &idx), CO_DC_LOAD);
	CU_ASSERT_EQUAL(idx, 2);
	/* a corrupted copy is refused */
	memcpy(bad, model + 2 * CH, CH);
	bad[4000] ^= 0x10;
	CU_ASSERT(!co_dc_verify(e, 2, bad, CH));
	CU_ASSERT(!co_dc_verify(e, 2, model + 2 * CH, CH - 1));
	CU_ASSERT(co_dc_verify(e, 2, model + 2 * CH, CH));
	/* all six do not fit beside the bookkeeping: earlier ones go back */
	for (i = 0; i < 6; i++) {
		CU_ASSERT_EQUAL(co_dc_fill(&dc, e, i, model + i * CH, i, i), 0);
		CU_ASSERT(dc.mem <= 6 * CH);
	}
	CU_ASSERT(dc.released > 0);
	CU_ASSERT_EQUAL(e->state[0], CO_DC_DISK);
	/* nothing to give back but what must be kept: refused */
	CU_ASSERT_EQUAL(co_dc_fill(&dc, e, 0, model, 0, 5), -1);
	/* what is in memory answers with the model's bytes */
	CU_ASSERT_EQUAL(co_dc_look(e, 5 * CH, 100, &idx), CO_DC_HIT);
	co_dc_copy(e, 5 * CH, 100, 0, buf, &n, &st);
	CU_ASSERT_EQUAL(n, 100);
	CU_ASSERT_EQUAL(memcmp(buf, model + 5 * CH, 100), 0);
	/* the store lost it: whatever was only there is absent */
	co_dc_forget_disk(&dc, e);
	CU_ASSERT(!e->on_disk);
	CU_ASSERT_EQUAL(co_dc_look(e, 0, 10, &idx), CO_DC_MISS);
	co_dc_free(&dc);
	free(model);
	free(bad);
	free(buf);
}

/* ---- the on-disk store (proxy/docstore.c) ------------------------------------ */

static char ds_dir[64];

static void
ds_dir_make(void)
{
	snprintf(ds_dir, sizeof(ds_dir), "/tmp/smbaccel-ut-ds.XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(ds_dir));
}

static void
ds_dir_remove(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ds_dir);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

/* Fetch a whole model file into a new entry and hand it to the store. */
static struct co_dc_entry *
ds_fill(struct co_dcache *dc, const char *key, const uint8_t *model,
    size_t size, uint64_t t)
{
	struct co_dc_valid v = valid(size, t);
	struct co_dc_entry *e = co_dc_create(dc, key, &v, NULL);
	uint32_t sf, sn, i;

	if (e == NULL)
		return NULL;
	for (i = 0; i < e->nchunks; i++) {
		co_dc_mark(e, i, 1);
		if (co_dc_arrive(dc, e, (uint64_t)i * CH, CH, model + i * CH,
		    co_dc_chunk_len(e, i), &sf, &sn) != 1)
			return NULL;
		CU_ASSERT_EQUAL(px_ds_put(e, sf, sn), 0);
	}
	return e;
}

static void
flip_byte(const char *path, off_t at)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	CU_ASSERT_FATAL(fd != -1);
	CU_ASSERT_EQUAL(pread(fd, &b, 1, at), 1);
	b ^= 0x04;
	CU_ASSERT_EQUAL(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

static void
test_store_roundtrip(void)
{
	struct co_dcache dc;
	size_t size = 5 * CH + 777;
	uint8_t *model = malloc(size), *buf = malloc(CH);
	struct co_dc_entry *e;
	struct co_dc_valid v;
	char path[256];
	uint32_t i;

	fill_model(model, size, 11);
	ds_dir_make();
	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	CU_ASSERT_EQUAL_FATAL(px_ds_open(ds_dir, 64 << 20, &dc), 0);
	e = ds_fill(&dc, "srv|share|doc.docx", model, size, 5);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT(e->on_disk);
	CU_ASSERT_EQUAL(px_stats.ds_writes, 1);
	co_dc_drop_prefix(&dc, "no such prefix");
	/* a restart: memory gone, the store read back (lazily, by key) */
	px_ds_close();
	co_dc_free(&dc);
	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	CU_ASSERT_EQUAL_FATAL(px_ds_open(ds_dir, 64 << 20, &dc), 0);
	CU_ASSERT_EQUAL(px_stats.ds_files, 1);
	CU_ASSERT_PTR_NULL(px_ds_load(&dc, "srv|share|other"));
	e = px_ds_load(&dc, "srv|share|doc.docx");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	v = valid(size, 5);
	CU_ASSERT_EQUAL(co_dc_compare(&e->v, &v), CO_DC_SAME);
	for (i = 0; i < e->nchunks; i++) {
		uint32_t len = co_dc_chunk_len(e, i);

		CU_ASSERT_EQUAL(px_ds_read(e, i, buf), 0);
		CU_ASSERT_EQUAL(memcmp(buf, model + (size_t)i * CH, len), 0);
	}
	/* a corrupted data byte: that chunk is refused (and the copy goes) */
	px_ds_path(e, path, sizeof(path));
	flip_byte(path, (off_t)px_ds_data_offset(e) + 2 * CH + 99);
	CU_ASSERT_EQUAL(px_ds_read(e, 2, buf), -1);
	CU_ASSERT_EQUAL(px_stats.ds_corrupt, 1);
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	co_dc_drop(&dc, e);
	/* a corrupted header: the copy is not taken at all */
	e = ds_fill(&dc, "srv|share|doc2", model, size, 6);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	px_ds_path(e, path, sizeof(path));
	co_dc_free(&dc);
	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	px_ds_close();
	CU_ASSERT_EQUAL_FATAL(px_ds_open(ds_dir, 64 << 20, &dc), 0);
	flip_byte(path, 40);
	CU_ASSERT_PTR_NULL(px_ds_load(&dc, "srv|share|doc2"));
	CU_ASSERT_EQUAL(px_stats.ds_corrupt, 2);
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	px_ds_close();
	co_dc_free(&dc);
	ds_dir_remove();
	free(model);
	free(buf);
}

/* read_cache_disk holds: the least recently used copies go; a dropped
 * (stale) entry takes its copy with it. */
static void
test_store_bound(void)
{
	struct co_dcache dc;
	size_t size = 4 * CH;
	uint8_t *model = malloc(size);
	struct co_dc_entry *e;
	char key[32];
	int i;

	fill_model(model, size, 2);
	ds_dir_make();
	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	CU_ASSERT_EQUAL_FATAL(px_ds_open(ds_dir, 10 * size, &dc), 0);
	for (i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "s|s|f%d", i);
		CU_ASSERT_PTR_NOT_NULL(ds_fill(&dc, key, model, size, 0));
		CU_ASSERT(px_stats.ds_bytes <= 10 * size);
	}
	CU_ASSERT(px_stats.ds_files < 10);
	CU_ASSERT(px_stats.ds_evicted > 10);
	/* the newest copy is there, the oldest not */
	co_dc_free(&dc);
	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	px_ds_close();
	CU_ASSERT_EQUAL_FATAL(px_ds_open(ds_dir, 10 * size, &dc), 0);
	CU_ASSERT_PTR_NULL(px_ds_load(&dc, "s|s|f0"));
	e = px_ds_load(&dc, "s|s|f19");
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	i = (int)px_stats.ds_files;
	co_dc_drop(&dc, e);
	CU_ASSERT_EQUAL((int)px_stats.ds_files, i - 1);
	CU_ASSERT_PTR_NULL(px_ds_load(&dc, "s|s|f19"));
	/* removal by key without a memory entry */
	px_ds_remove_key("s|s|f18");
	CU_ASSERT_PTR_NULL(px_ds_load(&dc, "s|s|f18"));
	px_ds_close();
	co_dc_free(&dc);
	ds_dir_remove();
	free(model);
}

/* The store's directory: a symbolic link, one writable by its group or
 * others, one owned by another user are refused; a file planted under
 * the name of a copy being built (a link to elsewhere) is replaced, never
 * written through. */
static void
test_store_dir(void)
{
	struct co_dcache dc;
	size_t size = 2 * CH;
	uint8_t *model = malloc(size);
	char sub[128], link[128], tmp[160], victim[160];
	struct co_dc_entry *e;
	struct stat st;
	int fd;

	fill_model(model, size, 4);
	ds_dir_make();
	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	snprintf(sub, sizeof(sub), "%s/store", ds_dir);
	snprintf(link, sizeof(link), "%s/link", ds_dir);
	CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0700), 0);
	CU_ASSERT_EQUAL_FATAL(symlink(sub, link), 0);
	CU_ASSERT_EQUAL(px_ds_open(link, 64 << 20, &dc), -1);
	CU_ASSERT_FALSE(px_ds_enabled());
	CU_ASSERT_EQUAL(chmod(sub, 0770), 0);
	CU_ASSERT_EQUAL(px_ds_open(sub, 64 << 20, &dc), -1);
	CU_ASSERT_EQUAL(chmod(sub, 0702), 0);
	CU_ASSERT_EQUAL(px_ds_open(sub, 64 << 20, &dc), -1);
	CU_ASSERT_EQUAL(chmod(sub, 0755), 0);
	if (geteuid() == 0) {
		CU_ASSERT_EQUAL(chown(sub, 4242, 4242), 0);
		CU_ASSERT_EQUAL(px_ds_open(sub, 64 << 20, &dc), -1);
		CU_ASSERT_EQUAL(chown(sub, 0, 0), 0);
	}
	CU_ASSERT_EQUAL_FATAL(px_ds_open(sub, 64 << 20, &dc), 0);
	CU_ASSERT(px_ds_enabled());
	/* the first chunk of a new copy: its .tmp is made where a link to
	 * another file was planted; that file is left alone */
	snprintf(victim, sizeof(victim), "%s/victim", ds_dir);
	fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd != -1);
	CU_ASSERT_EQUAL(write(fd, "keep", 4), 4);
	close(fd);
	snprintf(tmp, sizeof(tmp), "%s/%016llx.tmp", sub,
	    (unsigned long long)co_sum64("s|s|planted", strlen("s|s|planted")));
	CU_ASSERT_EQUAL_FATAL(symlink(victim, tmp), 0);
	e = ds_fill(&dc, "s|s|planted", model, size, 1);
	CU_ASSERT_PTR_NOT_NULL(e);
	CU_ASSERT(e != NULL && e->on_disk);
	CU_ASSERT_EQUAL(stat(victim, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 4);
	px_ds_close();
	co_dc_free(&dc);
	ds_dir_remove();
	free(model);
}

/* Copies being built count against read_cache_disk at their full size
 * from their first chunk; a directory renamed or deleted takes the copies
 * below it also when only the store holds them (after a restart). */
static void
test_store_tmp_and_prefix(void)
{
	struct co_dcache dc;
	size_t size = 4 * CH;
	uint8_t *model = malloc(size);
	struct co_dc_valid v = valid(size, 0);
	struct co_dc_entry *a, *b, *c;
	uint32_t sf, sn;

	fill_model(model, size, 3);
	ds_dir_make();
	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	/* room for two copies and a bit */
	CU_ASSERT_EQUAL_FATAL(px_ds_open(ds_dir, 2 * size + 3 * 4096 + 100,
	    &dc), 0);
	a = co_dc_create(&dc, "s|s|a", &v, NULL);
	b = co_dc_create(&dc, "s|s|b", &v, NULL);
	c = co_dc_create(&dc, "s|s|c", &v, NULL);
	CU_ASSERT_FATAL(a && b && c);
	co_dc_mark(a, 0, 1);
	co_dc_mark(b, 0, 1);
	co_dc_mark(c, 0, 1);
	CU_ASSERT_EQUAL(co_dc_arrive(&dc, a, 0, CH, model, CH, &sf, &sn), 1);
	CU_ASSERT_EQUAL(px_ds_put(a, sf, sn), 0);
	CU_ASSERT_EQUAL(co_dc_arrive(&dc, b, 0, CH, model, CH, &sf, &sn), 1);
	CU_ASSERT_EQUAL(px_ds_put(b, sf, sn), 0);
	CU_ASSERT(a->persisting && b->persisting);
	/* a third copy being built would pass the bound: not stored */
	CU_ASSERT_EQUAL(co_dc_arrive(&dc, c, 0, CH, model, CH, &sf, &sn), 1);
	CU_ASSERT_EQUAL(px_ds_put(c, sf, sn), 0);
	CU_ASSERT_FALSE(c->persisting);
	CU_ASSERT(c->persist_failed);
	co_dc_free(&dc);
	px_ds_close();
	/* two whole copies below d1\, one below d10 */
	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	CU_ASSERT_EQUAL_FATAL(px_ds_open(ds_dir, 64 << 20, &dc), 0);
	CU_ASSERT_PTR_NOT_NULL(ds_fill(&dc, "s|s|d1\\x", model, size, 0));
	CU_ASSERT_PTR_NOT_NULL(ds_fill(&dc, "s|s|d1\\sub\\y", model, size, 0));
	CU_ASSERT_PTR_NOT_NULL(ds_fill(&dc, "s|s|d10\\z", model, size, 0));
	CU_ASSERT_EQUAL(px_stats.ds_files, 3);
	co_dc_free(&dc);
	px_ds_close();
	/* a restart: nothing in memory */
	CU_ASSERT_EQUAL_FATAL(co_dc_init(&dc, 64 << 20), 0);
	CU_ASSERT_EQUAL_FATAL(px_ds_open(ds_dir, 64 << 20, &dc), 0);
	CU_ASSERT_EQUAL(px_stats.ds_files, 3);
	CU_ASSERT_EQUAL(px_ds_drop_prefix("s|s|d1\\"), 2);
	CU_ASSERT_EQUAL(px_stats.ds_files, 1);
	CU_ASSERT_PTR_NULL(px_ds_load(&dc, "s|s|d1\\x"));
	CU_ASSERT_PTR_NOT_NULL(px_ds_load(&dc, "s|s|d10\\z"));
	px_ds_close();
	co_dc_free(&dc);
	ds_dir_remove();
	free(model);
}

void
ut_register_doccache(void)
{
	CU_pSuite s = CU_add_suite("doccache", NULL, NULL);

	CU_add_test(s, "checksum catches any changed byte", test_sum64);
	CU_add_test(s, "validators", test_compare);
	CU_add_test(s, "table: key, serial, prefix", test_table);
	CU_add_test(s, "fetch and serve vs a model", test_fetch_serve);
	CU_add_test(s, "short answers and failed fetches", test_short_and_fail);
	CU_add_test(s, "memory bound and LRU", test_memory_bound);
	CU_add_test(s, "store chunks: load, verify, fill", test_disk_chunks);
	CU_add_test(s, "store: restart, corrupt data and header",
	    test_store_roundtrip);
	CU_add_test(s, "store: disk bound and removal", test_store_bound);
	CU_add_test(s, "store: its directory, planted links", test_store_dir);
	CU_add_test(s, "store: copies being built, directory drops",
	    test_store_tmp_and_prefix);
}
