/*
 * test_coalesce.c - the id pool, the credit bank (zero-credit rule, hoard
 * bound), the write extent and the absorb decision.
 */
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "coalesce/coalesce.h"
#include "tests/unit/unit.h"

static void
test_pool_merge(void)
{
	struct co_pool p;
	uint64_t lo;

	co_pool_init(&p);
	CU_ASSERT_EQUAL(co_pool_add(&p, 10, 1), 0);
	CU_ASSERT_EQUAL(co_pool_add(&p, 11, 1), 0);   /* appends to the run */
	CU_ASSERT_EQUAL(co_pool_add(&p, 9, 1), 0);    /* prepends */
	CU_ASSERT_EQUAL(p.nruns, 1);
	CU_ASSERT_EQUAL(p.count, 3);
	CU_ASSERT_EQUAL(p.oldest, 9);
	CU_ASSERT_EQUAL(co_pool_add(&p, 20, 4), 0);   /* a second run */
	CU_ASSERT_EQUAL(p.nruns, 2);
	CU_ASSERT_EQUAL(co_pool_add(&p, 12, 8), 0);   /* bridges both */
	CU_ASSERT_EQUAL(p.nruns, 1);
	CU_ASSERT_EQUAL(p.count, 15);
	CU_ASSERT_EQUAL(co_pool_first_run(&p), 15);
	/* overlaps are refused and change nothing */
	CU_ASSERT_EQUAL(co_pool_add(&p, 15, 1), -1);
	CU_ASSERT_EQUAL(co_pool_add(&p, 8, 2), -1);
	CU_ASSERT_EQUAL(co_pool_add(&p, 23, 5), -1);
	CU_ASSERT_EQUAL(p.count, 15);
	CU_ASSERT_EQUAL(co_pool_take_run(&p, 4, &lo), 4);
	CU_ASSERT_EQUAL(lo, 9);
	CU_ASSERT_EQUAL(p.oldest, 13);
	CU_ASSERT_EQUAL(co_pool_take_run(&p, 100, &lo), 11);
	CU_ASSERT_EQUAL(lo, 13);
	CU_ASSERT_EQUAL(p.count, 0);
	CU_ASSERT_EQUAL(p.nruns, 0);
	CU_ASSERT_EQUAL(co_pool_take_run(&p, 100, &lo), 0);
	/* wrap-around is an error, not a huge run */
	CU_ASSERT_EQUAL(co_pool_add(&p, UINT64_MAX - 1, 4), -1);
}

static void
test_pool_runs_bounded(void)
{
	struct co_pool p;
	uint64_t i, lo, total = 0, n;
	int rc = 0;

	co_pool_init(&p);
	/* every other id: runs cannot merge, the table fills */
	for (i = 0; i < CO_POOL_MAX_RUNS; i++)
		rc |= co_pool_add(&p, 100 + 2 * i, 1);
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(co_pool_add(&p, 1000, 1), -1);
	CU_ASSERT_TRUE(co_pool_over_bound(&p, 300, 8192));
	/* filling a gap merges two runs and frees a slot */
	CU_ASSERT_EQUAL(co_pool_add(&p, 101, 1), 0);
	CU_ASSERT_EQUAL(p.nruns, CO_POOL_MAX_RUNS - 1);
	while ((n = co_pool_take_run(&p, 1000, &lo)) > 0)
		total += n;
	CU_ASSERT_EQUAL(total, CO_POOL_MAX_RUNS + 1);
}

static void
test_pool_hoard_bound(void)
{
	struct co_pool p;

	co_pool_init(&p);
	CU_ASSERT_FALSE(co_pool_over_bound(&p, 100, 8192));
	CU_ASSERT_EQUAL(co_pool_add(&p, 1, 511), 0);
	CU_ASSERT_FALSE(co_pool_over_bound(&p, 512, 8192));
	CU_ASSERT_EQUAL(co_pool_add(&p, 512, 1), 0);
	CU_ASSERT_TRUE(co_pool_over_bound(&p, 513, 8192));   /* 512 ids */
	/* a small window: a quarter of it is the bound */
	co_pool_init(&p);
	CU_ASSERT_EQUAL(co_pool_add(&p, 1, 31), 0);
	CU_ASSERT_FALSE(co_pool_over_bound(&p, 32, 128));
	CU_ASSERT_EQUAL(co_pool_add(&p, 32, 1), 0);
	CU_ASSERT_TRUE(co_pool_over_bound(&p, 33, 128));
	/* one old id far behind the client's front also counts */
	co_pool_init(&p);
	CU_ASSERT_EQUAL(co_pool_add(&p, 5, 1), 0);
	CU_ASSERT_FALSE(co_pool_over_bound(&p, 100, 8192));
	CU_ASSERT_TRUE(co_pool_over_bound(&p, 5 + 512, 8192));
}

static void
test_bank_grants(void)
{
	struct co_credits c;
	uint16_t g;

	co_credits_init(&c);
	CU_ASSERT_EQUAL(co_bank(&c), 0);
	/* client holds 100 credits, used 10, one absorbed request pending */
	c.S = c.C = 101;
	c.client_next = 11;
	c.client_outstanding = 1;
	CU_ASSERT_TRUE(co_synth_grant(&c, 5, &g));
	CU_ASSERT_EQUAL(g, 0);                /* bank empty: grant nothing */
	c.S = 111;                            /* a flush brought 10 */
	CU_ASSERT_TRUE(co_synth_grant(&c, 5, &g));
	CU_ASSERT_EQUAL(g, 5);                /* what the client asked */
	CU_ASSERT_TRUE(co_synth_grant(&c, 50, &g));
	CU_ASSERT_EQUAL(g, 10);               /* capped by the bank */
	CU_ASSERT_TRUE(co_synth_grant(&c, 0, &g));
	CU_ASSERT_EQUAL(g, 1);                /* CreditRequest 0 counts as 1 */
}

static void
test_zero_credit_rule(void)
{
	struct co_credits c;
	uint16_t g;

	co_credits_init(&c);
	/* the client used every id it had; this absorbed request is its
	 * only one in flight; the bank is empty: the response must wait */
	c.S = c.C = 51;
	c.client_next = 51;
	c.client_outstanding = 1;
	CU_ASSERT_FALSE(co_synth_grant(&c, 1, &g));
	/* another request of the client is in flight: its answer will grant */
	c.client_outstanding = 2;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, &g));
	CU_ASSERT_EQUAL(g, 0);
	/* one credit in the bank is enough */
	c.client_outstanding = 1;
	c.S = 52;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, &g));
	CU_ASSERT_EQUAL(g, 1);
	/* the client still holds a credit: granting zero is fine */
	c.S = c.C = 51;
	c.client_next = 50;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, &g));
	CU_ASSERT_EQUAL(g, 0);
}

static void
test_extent(void)
{
	struct co_extent x;
	uint8_t a[1024], b[1024], *d;
	uint64_t off;
	size_t len;

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	co_extent_init(&x);
	CU_ASSERT_TRUE(co_extent_fits(&x, 4096, 1024, 65536));
	CU_ASSERT_FALSE(co_extent_fits(&x, 0, 65537, 65536));
	CU_ASSERT_EQUAL(co_extent_append(&x, 4096, a, 1024, 1.0), 0);
	CU_ASSERT_TRUE(co_extent_fits(&x, 5120, 1024, 65536));
	CU_ASSERT_FALSE(co_extent_fits(&x, 4096, 1024, 65536)); /* rewrite */
	CU_ASSERT_FALSE(co_extent_fits(&x, 6144, 1024, 65536)); /* gap */
	CU_ASSERT_FALSE(co_extent_fits(&x, 3072, 1024, 65536)); /* before */
	CU_ASSERT_FALSE(co_extent_fits(&x, 5120, 65536, 65536)); /* over limit */
	CU_ASSERT_EQUAL(co_extent_append(&x, 5120, b, 1024, 2.0), 0);
	CU_ASSERT_EQUAL(x.first_ms, 1.0);
	CU_ASSERT_EQUAL(x.last_ms, 2.0);
	d = co_extent_take(&x, &off, &len);
	CU_ASSERT_EQUAL(off, 4096);
	CU_ASSERT_EQUAL(len, 2048);
	CU_ASSERT_EQUAL(memcmp(d, a, 1024), 0);
	CU_ASSERT_EQUAL(memcmp(d + 1024, b, 1024), 0);
	CU_ASSERT_EQUAL(x.len, 0);
	free(d);
	co_extent_free(&x);
}

static void
test_extent_grow(void)
{
	struct co_extent x;
	uint8_t blk[1000];
	uint64_t off, i;
	size_t len;
	uint8_t *d;
	int ok = 1;

	co_extent_init(&x);
	for (i = 0; i < 3000; i++) {
		memset(blk, (int)(i & 0xff), sizeof(blk));
		if (co_extent_append(&x, i * 1000, blk, sizeof(blk), 0) != 0)
			ok = 0;
	}
	CU_ASSERT_TRUE(ok);
	d = co_extent_take(&x, &off, &len);
	CU_ASSERT_EQUAL(len, 3000000);
	for (i = 0; i < 3000; i++)
		if (d[i * 1000] != (uint8_t)(i & 0xff) ||
		    d[i * 1000 + 999] != (uint8_t)(i & 0xff))
			ok = 0;
	CU_ASSERT_TRUE(ok);
	free(d);
}

static void
test_write_decide(void)
{
	static const struct {
		enum co_gate gate;
		struct co_open_facts o;
		struct co_write_facts w;
		enum co_absorb want;
	} t[] = {
		/* always: a plain 1 KiB write on a writable open */
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { 0, 1024, 0, 0, true, false }, CO_ABSORB },
		{ CO_GATE_OFF, { .write_access = true, .write_caching = true },
		  { 0, 1024, 0, 0, true, false }, CO_FWD_GATE },
		/* leased needs a write-caching right */
		{ CO_GATE_LEASED, { .write_access = true },
		  { 0, 1024, 0, 0, true, false }, CO_FWD_GATE },
		{ CO_GATE_LEASED, { .write_access = true, .write_caching = true },
		  { 0, 1024, 0, 0, true, false }, CO_ABSORB },
		/* flags */
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { 0, 1024, 1, 0, true, false }, CO_FWD_FLAGS },
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { 0, 1024, 2, 0, true, false }, CO_FWD_FLAGS },
		/* the open */
		{ CO_GATE_ALWAYS, { .write_access = false },
		  { 0, 1024, 0, 0, true, false }, CO_FWD_OPEN },
		{ CO_GATE_ALWAYS, { .write_access = true, .write_through = true },
		  { 0, 1024, 0, 0, true, false }, CO_FWD_OPEN },
		{ CO_GATE_ALWAYS, { .write_access = true, .locked = true },
		  { 0, 1024, 0, 0, true, false }, CO_FWD_OPEN },
		{ CO_GATE_ALWAYS, { .write_access = true, .failed = true },
		  { 0, 1024, 0, 0, true, false }, CO_FWD_OPEN },
		{ CO_GATE_LEASED, { .write_access = true, .write_caching = true,
		  .breaking = true }, { 0, 1024, 0, 0, true, false }, CO_FWD_OPEN },
		/* the request's shape */
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { 0, 1024, 0, 0, false, false }, CO_FWD_SHAPE },
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { 0, 1024, 0, 1, true, false }, CO_FWD_SHAPE },
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { 0, 2 << 20, 0, 0, true, false }, CO_FWD_SHAPE },
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { 0, 0, 0, 0, true, false }, CO_FWD_SHAPE },
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { UINT64_MAX, 1024, 0, 0, true, false }, CO_FWD_SHAPE },
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { UINT64_MAX - 10, 1024, 0, 0, true, false }, CO_FWD_SHAPE },
		/* signed */
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { 0, 1024, 0, 0, true, true }, CO_FWD_SIGNED },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		enum co_absorb got = co_write_decide(t[i].gate, &t[i].o, &t[i].w,
		    1024 * 1024);

		if (got != t[i].want)
			fprintf(stderr, "write_decide row %zu: got %s want %s\n",
			    i, co_absorb_name(got), co_absorb_name(t[i].want));
		CU_ASSERT_EQUAL(got, t[i].want);
	}
}

void
ut_register_coalesce(void)
{
	CU_pSuite s = CU_add_suite("coalesce", NULL, NULL);

	CU_add_test(s, "pool merge/take/overlap", test_pool_merge);
	CU_add_test(s, "pool run table bounded", test_pool_runs_bounded);
	CU_add_test(s, "pool hoard bound", test_pool_hoard_bound);
	CU_add_test(s, "bank grants", test_bank_grants);
	CU_add_test(s, "zero-credit rule", test_zero_credit_rule);
	CU_add_test(s, "extent append/take", test_extent);
	CU_add_test(s, "extent growth", test_extent_grow);
	CU_add_test(s, "absorb decision table", test_write_decide);
}
