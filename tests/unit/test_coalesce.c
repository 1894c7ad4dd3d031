/*
 * test_coalesce.c - the id pool, the credit bank (zero-credit rule, hoard
 * bound), the write extent and the absorb decision, and an open's
 * byte-range locks with the lock check of I/O.
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

/*
 * The acknowledgement reserve (DESIGN.md sections 3 and 6): taken from
 * spare ids only (buffered data first), the pool's oldest so that no run
 * is split; refreshed with the pool's oldest once it is half the hoard
 * bound old, the old id handed back to be spent; let go when not needed
 * or as old as the bound with nothing newer; never an id twice.
 */
static void
test_reserve(void)
{
	struct co_pool p;
	struct co_reserve r;
	uint64_t id, gone = 0;

	co_pool_init(&p);
	co_reserve_init(&r);
	/* nothing needed, nothing pooled */
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, false, 0, 10, 8192, &gone),
	    CO_RSV_KEEP);
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 5, 10, 8192, &gone),
	    CO_RSV_KEEP);
	CU_ASSERT_FALSE(r.held);
	/* ids pooled but all needed by buffered data: no reserve */
	CU_ASSERT(co_pool_add(&p, 100, 16) == 0);
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 0, 116, 8192, &gone),
	    CO_RSV_KEEP);
	CU_ASSERT_FALSE(r.held);
	CU_ASSERT_EQUAL(p.count, 16);
	/* one spare: the oldest id is taken, the run stays one run */
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 1, 116, 8192, &gone),
	    CO_RSV_TAKE);
	CU_ASSERT_TRUE(r.held);
	CU_ASSERT_EQUAL(r.id, 100);
	CU_ASSERT_EQUAL(p.count, 15);
	CU_ASSERT_EQUAL(p.nruns, 1);
	CU_ASSERT_EQUAL(p.oldest, 101);
	/* newer ids arrive: still one run, above the reserve */
	CU_ASSERT(co_pool_add(&p, 116, 200) == 0);
	CU_ASSERT_EQUAL(p.nruns, 1);
	/* held and young: kept, whatever spare says */
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 0, 316, 8192, &gone),
	    CO_RSV_KEEP);
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 99, 316, 8192, &gone),
	    CO_RSV_KEEP);
	/* bound min(8192 / 4, 512) = 512: at half of it, with newer ids
	 * pooled, the pool's oldest replaces it and the old one is handed
	 * back (not pooled) */
	while (p.count)
		(void)co_pool_take_run(&p, 64, &id);    /* a flush spent them */
	CU_ASSERT(co_pool_add(&p, 350, 10) == 0);
	CU_ASSERT_EQUAL(co_reserve_decide(&r, &p, true, 1, 100 + 255, 8192),
	    CO_RSV_KEEP);
	/* no spare id (the pool holds what buffered data needs): kept, the
	 * pool untouched (a refresh would leave the data one id short) */
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 0, 100 + 256, 8192,
	    &gone), CO_RSV_KEEP);
	CU_ASSERT_EQUAL(p.count, 10);
	CU_ASSERT_EQUAL(r.id, 100);
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 1, 100 + 256, 8192,
	    &gone), CO_RSV_REFRESH);
	CU_ASSERT_EQUAL(gone, 100);
	CU_ASSERT_EQUAL(r.id, 350);
	CU_ASSERT_EQUAL(p.count, 9);
	CU_ASSERT_EQUAL(p.nruns, 1);
	CU_ASSERT_EQUAL(p.oldest, 351);
	/* as old as the bound with nothing newer: let go */
	while (p.count)
		(void)co_pool_take_run(&p, 64, &id);
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 0, 350 + 300, 8192,
	    &gone), CO_RSV_KEEP);
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 0, 350 + 512, 8192,
	    &gone), CO_RSV_RELEASE);
	CU_ASSERT_FALSE(r.held);
	CU_ASSERT_EQUAL(gone, 350);
	CU_ASSERT_EQUAL(p.count, 0);
	/* an older id in the pool does not refresh it */
	CU_ASSERT(co_pool_add(&p, 900, 4) == 0);
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 4, 904, 8192, &gone),
	    CO_RSV_TAKE);
	CU_ASSERT_EQUAL(r.id, 900);
	CU_ASSERT(co_pool_add(&p, 800, 1) == 0);
	CU_ASSERT_EQUAL(co_reserve_decide(&r, &p, true, 0, 900 + 300, 8192),
	    CO_RSV_KEEP);
	/* not needed any more: let go */
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, false, 3, 904, 8192, &gone),
	    CO_RSV_RELEASE);
	CU_ASSERT_EQUAL(gone, 900);
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, false, 4, 904, 8192, &gone),
	    CO_RSV_KEEP);
	/* a small window: bound 2 (window 8), refresh at age 1 */
	co_pool_init(&p);
	CU_ASSERT(co_pool_add(&p, 903, 1) == 0);
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 1, 904, 8, &gone),
	    CO_RSV_TAKE);
	CU_ASSERT(co_pool_add(&p, 904, 1) == 0);
	CU_ASSERT_EQUAL(co_reserve_tend(&r, &p, true, 1, 905, 8, &gone),
	    CO_RSV_REFRESH);
	CU_ASSERT_EQUAL(r.id, 904);
	CU_ASSERT_EQUAL(gone, 903);
	CU_ASSERT_EQUAL(p.count, 0);
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
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 5, &g));
	CU_ASSERT_EQUAL(g, 0);                /* bank empty: grant nothing */
	c.S = 111;                            /* a flush brought 10 */
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 5, &g));
	CU_ASSERT_EQUAL(g, 5);                /* what the client asked */
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 50, &g));
	CU_ASSERT_EQUAL(g, 10);               /* capped by the bank */
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 0, &g));
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
	CU_ASSERT_FALSE(co_synth_grant(&c, 1, 1, &g));
	/* another request of the client is in flight: its answer will grant */
	c.client_outstanding = 2;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 1, &g));
	CU_ASSERT_EQUAL(g, 0);
	/* ... unless the server answered it STATUS_PENDING (a CHANGE_NOTIFY
	 * may never complete): the response must wait */
	c.client_async = 1;
	CU_ASSERT_FALSE(co_synth_grant(&c, 1, 1, &g));
	c.client_async = 0;
	/* one credit in the bank is enough */
	c.client_outstanding = 1;
	c.S = 52;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 1, &g));
	CU_ASSERT_EQUAL(g, 1);
	/* the client still holds a credit: granting zero is fine */
	c.S = c.C = 51;
	c.client_next = 50;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 1, &g));
	CU_ASSERT_EQUAL(g, 0);
	/* ... unless this last answer is to a multi-credit request: it must
	 * leave the client its charge (a client sending 128 KiB writes one
	 * at a time was left with 1 credit, and could send nothing) */
	CU_ASSERT_FALSE(co_synth_grant(&c, 2, 1, &g));
	c.S = 52;
	CU_ASSERT_TRUE(co_synth_grant(&c, 2, 1, &g));
	CU_ASSERT_EQUAL(g, 1);
	c.client_outstanding = 2;             /* not the last: fine */
	c.S = 51;
	CU_ASSERT_TRUE(co_synth_grant(&c, 2, 1, &g));
	CU_ASSERT_EQUAL(g, 0);
}

/*
 * What absorbed requests asked and the bank could not give is asked of
 * the server on the proxy's next requests, so that a client whose window
 * is still growing (it asks more than it spends) grows it as it would
 * directly: impacket holds about 130 credits when it starts writing, and
 * its 1 KiB writes went upstream in 31 KiB WRITEs (a quarter of that
 * window) while the proxy asked for 1.
 */
static void
test_proxy_ask(void)
{
	struct co_credits c;

	co_credits_init(&c);
	/* granted all it asked: nothing to ask */
	co_synth_granted(&c, 1, 4, 4);
	CU_ASSERT_EQUAL(c.C, 5);
	CU_ASSERT_EQUAL(c.ask, 0);
	CU_ASSERT_EQUAL(co_proxy_ask(&c), 1);
	/* asked 127, got 1 (the bank held 1): 126 to ask; a request of 0
	 * counts as 1 */
	co_synth_granted(&c, 1, 127, 1);
	co_synth_granted(&c, 1, 0, 0);
	CU_ASSERT_EQUAL(c.C, 6);
	CU_ASSERT_EQUAL(c.ask, 127);
	CU_ASSERT_EQUAL(co_proxy_ask(&c), 128);
	CU_ASSERT_EQUAL(c.ask, 0);
	CU_ASSERT_EQUAL(co_proxy_ask(&c), 1);
	/* at most CO_ASK_STEP per request, CO_ASK_MAX in all */
	for (int i = 0; i < 100; i++)
		co_synth_granted(&c, 1, 200, 0);
	CU_ASSERT_EQUAL(c.ask, CO_ASK_MAX);
	CU_ASSERT_EQUAL(co_proxy_ask(&c), 1 + CO_ASK_STEP);
	CU_ASSERT_EQUAL(c.ask, CO_ASK_MAX - CO_ASK_STEP);
	/* more granted than asked (a delayed answer given what there was)
	 * takes nothing back */
	co_synth_granted(&c, 1, 1, 3);
	CU_ASSERT_EQUAL(c.ask, CO_ASK_MAX - CO_ASK_STEP);
}

/*
 * An answer smbaccel makes replaces at least what its request spent, as
 * smbd's would (its charge plus CreditRequest - 1): 1 MiB writes (charge
 * 16) asking 1 were granted 1 each, and the client stopped at the
 * fourteenth.  Never more than asked otherwise.
 */
static void
test_synth_target(void)
{
	struct co_credits c;
	uint16_t g;

	co_credits_init(&c);
	c.S = 301;
	c.C = 101;
	c.client_next = 11;
	c.client_outstanding = 1;
	CU_ASSERT_TRUE(co_synth_grant(&c, 16, 1, &g));
	CU_ASSERT_EQUAL(g, 16);               /* the charge, not 1 */
	CU_ASSERT_TRUE(co_synth_grant(&c, 4, 8, &g));
	CU_ASSERT_EQUAL(g, 8);                /* what it asked */
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 0, &g));
	CU_ASSERT_EQUAL(g, 1);
	c.S = 110;
	CU_ASSERT_TRUE(co_synth_grant(&c, 16, 1, &g));
	CU_ASSERT_EQUAL(g, 9);                /* the bank's */
	/* what it granted of its target is no shortfall */
	co_synth_granted(&c, 16, 1, 9);
	CU_ASSERT_EQUAL(c.owed_wait, 7);
	CU_ASSERT_EQUAL(c.ask, 0);            /* it asked 1 and had it */
	CU_ASSERT_EQUAL(c.C, 110);
}

/* n requests of charge ch asking rq each, sent back to back. */
static void
send_n(struct co_credits *c, int n, uint16_t ch, uint16_t rq)
{
	for (int i = 0; i < n; i++)
		co_client_sent(c, c->client_next, ch, rq);
}

/*
 * A client that asks no more credits than its requests spend keeps its
 * window directly; through smbaccel an answer granted short (the bank was
 * empty) left it a credit less for good: pipelining 4 KiB writes asking
 * 1, a raw client went from 221 credits to 1.  What is short is owed and
 * paid on later answers, once a request the client sent after reading
 * the short answer (its ids lie past what it had then) did not ask it
 * again.
 */
static void
test_owed_exact(void)
{
	struct co_credits c;
	uint16_t g;

	co_credits_init(&c);
	/* it built a window of 64 (asking more than it spends is how: that
	 * is before any short answer and marks nothing) */
	c.S = c.C = 65;
	co_client_sent(&c, 1, 1, 64);
	c.client_outstanding = 0;
	CU_ASSERT_FALSE(c.own_window);
	/* 8 writes in flight, the bank empty: the first answers grant 0 */
	send_n(&c, 8, 1, 1);
	CU_ASSERT_EQUAL(c.client_next, 10);
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 1, &g));
	CU_ASSERT_EQUAL(g, 0);
	co_synth_granted(&c, 1, 1, g);
	c.client_outstanding--;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 1, &g));
	co_synth_granted(&c, 1, 1, g);
	c.client_outstanding--;
	CU_ASSERT_EQUAL(c.owed_wait + c.owed_next, 2);
	CU_ASSERT_EQUAL(c.owed, 0);
	CU_ASSERT_EQUAL(c.owed_after, 65);
	/* a flush brought 10: owed is not paid yet, the client has not
	 * shown whether it asks again */
	c.S += 10;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 1, &g));
	CU_ASSERT_EQUAL(g, 1);
	co_synth_granted(&c, 1, 1, g);
	c.client_outstanding--;
	/* a request with ids it had before the short answers proves
	 * nothing */
	co_client_sent(&c, 10, 1, 1);
	CU_ASSERT_EQUAL(c.owed, 0);
	/* one that uses ids granted since does, by a margin (go-smb2 may
	 * run a few ids ahead of its grants) */
	c.client_next = 65 + CO_OWED_MARGIN;
	co_client_sent(&c, 64 + CO_OWED_MARGIN, 1, 1);
	CU_ASSERT_EQUAL(c.owed, 0);
	co_client_sent(&c, 65 + CO_OWED_MARGIN, 1, 1);
	CU_ASSERT_EQUAL(c.owed, 2);
	CU_ASSERT_EQUAL(c.owed_wait + c.owed_next, 0);
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 1, &g));
	CU_ASSERT_EQUAL(g, 3);                /* 1 and the 2 owed */
	co_synth_granted(&c, 1, 1, g);
	CU_ASSERT_EQUAL(c.owed, 0);
	CU_ASSERT_FALSE(c.own_window);
	/* at most CO_ASK_MAX owed */
	for (int i = 0; i < 600; i++)
		co_synth_granted(&c, 16, 1, 0);
	CU_ASSERT_EQUAL(c.owed + c.owed_wait + c.owed_next, CO_ASK_MAX);

	/* shortfalls that keep coming do not hold back the older ones: each
	 * is payable once its own proof comes */
	co_credits_init(&c);
	c.S = c.C = 65;
	co_client_sent(&c, 1, 1, 64);
	co_synth_granted(&c, 1, 1, 0);        /* short at C 65 */
	c.C += 40;                            /* forwarded answers granted */
	co_synth_granted(&c, 4, 4, 1);        /* short by 3 at C 106 */
	co_synth_granted(&c, 1, 1, 0);        /* short at C 106 */
	CU_ASSERT_EQUAL(c.owed_wait, 1);
	CU_ASSERT_EQUAL(c.owed_next, 4);
	co_client_sent(&c, 65 + CO_OWED_MARGIN, 1, 1);
	CU_ASSERT_EQUAL(c.owed, 1);
	CU_ASSERT_EQUAL(c.owed_wait, 4);
	CU_ASSERT_EQUAL(c.owed_next, 0);
	CU_ASSERT_EQUAL(c.owed_after, 106);
	co_client_sent(&c, 106 + CO_OWED_MARGIN, 1, 1);
	CU_ASSERT_EQUAL(c.owed, 5);
	CU_ASSERT_EQUAL(c.owed_wait, 0);
}

/*
 * A client that asks its shortfalls again itself (go-smb2 adds them to
 * its next request's CreditRequest, and keeps at most 128 credits,
 * dropping any surplus) must not be paid them twice: smbaccel would count
 * credits the client dropped, and its zero-credit rule would leave the
 * client with none and nothing in flight (a hang, t_goclient -j 16).  The
 * first request after a short answer that asks more than its charge marks
 * the connection for good: nothing owed, ever.
 */
static void
test_owed_own_window(void)
{
	struct co_credits c;
	uint16_t g;

	co_credits_init(&c);
	c.S = c.C = 129;                      /* session setup asked 127 */
	co_client_sent(&c, 1, 1, 127);
	c.client_outstanding = 0;
	send_n(&c, 16, 1, 1);
	co_synth_granted(&c, 1, 1, 0);        /* short: owed 1, waiting */
	c.client_outstanding--;
	CU_ASSERT_EQUAL(c.owed_wait, 1);
	/* sent before it read the answer: asks its charge, proves nothing */
	send_n(&c, 1, 1, 1);
	CU_ASSERT_EQUAL(c.owed, 0);
	/* then asks the shortfall again: marked, owed dropped */
	send_n(&c, 1, 1, 2);
	CU_ASSERT_TRUE(c.own_window);
	CU_ASSERT_EQUAL(c.owed + c.owed_wait + c.owed_next, 0);
	/* later: a request proving it read, a short answer: nothing owed,
	 * and answers grant what was asked only */
	c.S += 5;
	co_client_sent(&c, 200, 1, 1);
	co_synth_granted(&c, 1, 1, 0);
	CU_ASSERT_EQUAL(c.owed + c.owed_wait, 0);
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 2, &g));
	CU_ASSERT_EQUAL(g, 2);
	/* a client that always asks more (Samba's, impacket's 127) is
	 * marked at its first request after the first short answer, sent
	 * before it read it or not */
	co_credits_init(&c);
	c.S = c.C = 129;
	send_n(&c, 4, 1, 127);
	CU_ASSERT_FALSE(c.own_window);
	co_synth_granted(&c, 1, 127, 0);
	CU_ASSERT_EQUAL(c.owed_wait, 127);
	send_n(&c, 1, 1, 127);
	CU_ASSERT_TRUE(c.own_window);
	CU_ASSERT_EQUAL(c.owed_wait, 0);
}

/*
 * The last answer a client awaits pays also what waits for its proof: a
 * client with nothing else in flight sends nothing that could prove it,
 * and t_credits' raw client, after 1,500 pipelined 4 KiB writes asking 1,
 * was left with 1 or 2 credits for its 256 KiB READ (charge 4) in about
 * one run in five.  While the bank cannot pay it all, that answer waits
 * (for the answers to smbaccel's requests).  Paid so to a client that
 * then asks it again (go-smb2 drops credits above 128), it is in doubt:
 * the zero-credit rule does not count it.
 */
static void
test_owed_last_answer(void)
{
	struct co_credits c;
	uint16_t g;

	co_credits_init(&c);
	c.S = c.C = 65;
	send_n(&c, 64, 1, 1);                 /* 64 pipelined, asking 1 */
	co_synth_granted(&c, 1, 1, 0);        /* short: waits for proof */
	c.client_outstanding--;
	co_synth_granted(&c, 1, 1, 0);
	c.client_outstanding--;
	CU_ASSERT_EQUAL(c.owed, 0);
	CU_ASSERT_EQUAL(c.owed_wait + c.owed_next, 2);
	c.client_outstanding = 1;             /* the last one awaited */
	c.S = c.C + 2;                        /* the bank holds 2 */
	CU_ASSERT_FALSE(co_synth_grant(&c, 1, 1, &g));  /* 3 due: waits */
	CU_ASSERT_EQUAL(g, 2);
	c.S = c.C + 5;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 1, &g));
	CU_ASSERT_EQUAL(g, 3);                /* its 1 and the 2 unproven */
	co_synth_granted(&c, 1, 1, g);
	c.client_outstanding--;
	CU_ASSERT_EQUAL(c.owed + c.owed_wait + c.owed_next, 0);
	CU_ASSERT_EQUAL(c.unproven, 2);
	/* not the last: what waits for proof is not paid */
	co_credits_init(&c);
	c.S = c.C = 65;
	send_n(&c, 64, 1, 1);
	co_synth_granted(&c, 1, 1, 0);
	c.client_outstanding--;
	c.S = c.C + 10;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 1, &g));
	CU_ASSERT_EQUAL(g, 1);
	/* a proof that it does not ask again: nothing in doubt */
	co_credits_init(&c);
	c.S = c.C = 65;
	send_n(&c, 64, 1, 1);
	co_synth_granted(&c, 1, 1, 0);
	c.client_outstanding = 1;
	c.S = c.C + 4;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 1, &g));
	co_synth_granted(&c, 1, 1, g);        /* paid 1 unproven */
	c.client_outstanding = 0;
	CU_ASSERT_EQUAL(c.unproven, 1);
	co_client_sent(&c, c.client_next, 1, 2);   /* asks it again */
	CU_ASSERT_TRUE(c.own_window);
	CU_ASSERT_EQUAL(c.unproven, 0);
	CU_ASSERT_EQUAL(c.doubt, 1);
	/* the last answer must leave it a credit not counting the doubt:
	 * with the client at 1 in smbaccel's count, granting 0 waits */
	c.S = c.C;
	c.C = c.client_next + 1;
	c.S = c.C;
	CU_ASSERT_FALSE(co_synth_grant(&c, 1, 1, &g));
	c.S = c.C + 1;
	CU_ASSERT_TRUE(co_synth_grant(&c, 1, 1, &g));
	CU_ASSERT_EQUAL(g, 1);
}

/*
 * The grant of a CLOSE sent with its flush (smbd puts the whole
 * compound's grant on the last answer): the bank takes back what its
 * WRITEs would have been granted alone, the client keeps the rest and
 * never ends with no credit and nothing outstanding.
 */
static void
test_compound_split(void)
{
	struct co_credits c;

	co_credits_init(&c);
	/* smbd: WRITE (charge 1) + CLOSE asking 1: the CLOSE answer grants 2
	 * (already counted in C); the client holds plenty */
	c.S = c.C = 200;
	c.client_next = 100;
	c.client_outstanding = 0;
	CU_ASSERT_EQUAL(co_compound_split(&c, 2, 1), 1);
	/* three WRITEs of charge 2 and a CLOSE asking 10: 16 */
	CU_ASSERT_EQUAL(co_compound_split(&c, 16, 6), 6);
	/* the WRITE answers brought their own grants: nothing is due */
	CU_ASSERT_EQUAL(co_compound_split(&c, 10, 0), 0);
	/* a grant capped below what is due: the bank takes what there is */
	CU_ASSERT_EQUAL(co_compound_split(&c, 3, 6), 3);
	CU_ASSERT_EQUAL(co_compound_split(&c, 0, 6), 0);
	/* the client would be left with nothing and nothing in flight: it
	 * keeps one credit */
	c.C = 102;
	c.client_next = 100;
	CU_ASSERT_EQUAL(co_compound_split(&c, 2, 2), 1);
	c.C = 101;
	CU_ASSERT_EQUAL(co_compound_split(&c, 1, 1), 0);
	/* ... unless another request of its is outstanding */
	c.client_outstanding = 1;
	CU_ASSERT_EQUAL(co_compound_split(&c, 1, 1), 1);
	/* an interim answer: the request itself is outstanding, gone async,
	 * and its final answer may grant nothing: it keeps one */
	c.client_async = 1;
	CU_ASSERT_EQUAL(co_compound_split(&c, 1, 1), 0);
	/* with a second request, not async, it need not */
	c.client_outstanding = 2;
	CU_ASSERT_EQUAL(co_compound_split(&c, 1, 1), 1);
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

/* A refused write put back under what was absorbed after it: the newer
 * bytes win, only one run may result, an empty extent takes it as is. */
static void
test_extent_merge_under(void)
{
	struct co_extent x;
	uint8_t old[3000], nw[1000], *d;
	uint64_t off;
	size_t len, i;
	int ok = 1;

	memset(old, 'o', sizeof(old));
	memset(nw, 'n', sizeof(nw));
	co_extent_init(&x);
	/* empty: taken as it is */
	CU_ASSERT_EQUAL(co_extent_merge_under(&x, 100, old, 10, 5.0), 0);
	CU_ASSERT_EQUAL(x.off, 100);
	CU_ASSERT_EQUAL(x.len, 10);
	co_extent_free(&x);

	/* newer bytes [10000, 11000), the old [8000, 11000) under them */
	co_extent_init(&x);
	CU_ASSERT_EQUAL(co_extent_append(&x, 10000, nw, 1000, 7.0), 0);
	CU_ASSERT_EQUAL(co_extent_merge_under(&x, 8000, old, 3000, 3.0), 0);
	CU_ASSERT_EQUAL(x.off, 8000);
	CU_ASSERT_EQUAL(x.len, 3000);
	CU_ASSERT_EQUAL(x.first_ms, 3.0);
	for (i = 0; i < 3000; i++)
		if (x.data[i] != (i < 2000 ? 'o' : 'n'))
			ok = 0;
	CU_ASSERT_TRUE(ok);
	/* appending goes on after the merged run */
	CU_ASSERT_TRUE(co_extent_fits(&x, 11000, 1000, 65536));
	CU_ASSERT_EQUAL(co_extent_append(&x, 11000, nw, 1000, 8.0), 0);
	/* touching at the end: [12000, 13000) old, after the new bytes */
	CU_ASSERT_EQUAL(co_extent_merge_under(&x, 12000, old, 1000, 9.0), 0);
	CU_ASSERT_EQUAL(x.len, 5000);
	CU_ASSERT_EQUAL(x.first_ms, 3.0);
	/* apart from it (a gap on either side): not taken, x unchanged */
	CU_ASSERT_EQUAL(co_extent_merge_under(&x, 13001, old, 10, 1.0), 1);
	CU_ASSERT_EQUAL(co_extent_merge_under(&x, 7000, old, 999, 1.0), 1);
	CU_ASSERT_EQUAL(x.off, 8000);
	CU_ASSERT_EQUAL(x.len, 5000);
	d = co_extent_take(&x, &off, &len);
	CU_ASSERT_EQUAL(off, 8000);
	CU_ASSERT_EQUAL(len, 5000);
	CU_ASSERT_EQUAL(d[1999], 'o');
	CU_ASSERT_EQUAL(d[2000], 'n');
	CU_ASSERT_EQUAL(d[3999], 'n');
	CU_ASSERT_EQUAL(d[4000], 'o');
	free(d);
	/* newer bytes reaching past both ends of the old: nothing old left */
	co_extent_init(&x);
	CU_ASSERT_EQUAL(co_extent_append(&x, 0, old, 3000, 1.0), 0);
	memset(x.data, 'n', 3000);
	CU_ASSERT_EQUAL(co_extent_merge_under(&x, 1000, old, 1000, 2.0), 0);
	CU_ASSERT_EQUAL(x.off, 0);
	CU_ASSERT_EQUAL(x.len, 3000);
	CU_ASSERT_EQUAL(memchr(x.data, 'o', 3000), NULL);
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
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { UINT64_C(1) << 63, 1, 0, 0, true, false }, CO_FWD_SHAPE },
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { (UINT64_C(1) << 40) - 1024, 1024, 0, 0, true, false }, CO_ABSORB },
		{ CO_GATE_ALWAYS, { .write_access = true },
		  { (UINT64_C(1) << 44) - 65536, 1, 0, 0, true, false }, CO_FWD_SHAPE },
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

/* ---- read-ahead cache ---- */

static void
fill(uint8_t *b, uint64_t off, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)((off + i) * 7 + 3);
}

static void
test_ra_sequential(void)
{
	struct co_ra ra;
	uint8_t data[65536], out[8192], want[8192];
	uint64_t off;
	uint32_t len, n, st;
	struct co_chunk *c;

	co_ra_init(&ra);
	/* nothing known: a miss, and the first read is not sequential */
	CU_ASSERT_EQUAL(co_ra_lookup(&ra, 0, 4096), CO_RA_MISS);
	co_ra_note_read(&ra, 0, 4096);
	CU_ASSERT_FALSE(ra.seq);
	co_ra_note_read(&ra, 4096, 4096);
	CU_ASSERT_TRUE(ra.seq);
	/* a chunk in flight: a read inside it waits */
	c = co_ra_add(&ra, 8192, 65536);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(ra.fetch_end, 8192 + 65536);
	CU_ASSERT_EQUAL(co_ra_lookup(&ra, 8192, 4096), CO_RA_WAIT);
	CU_ASSERT_EQUAL(co_ra_lookup(&ra, 4096, 8192), CO_RA_MISS); /* before */
	CU_ASSERT_EQUAL(co_ra_lookup(&ra, 70000, 8192), CO_RA_MISS); /* past */
	/* a stale generation does not land */
	fill(data, 8192, 65536);
	CU_ASSERT_FALSE(co_ra_arrive(&ra, ra.gen + 1, 8192, true, data, 65536));
	CU_ASSERT_TRUE(co_ra_arrive(&ra, ra.gen, 8192, true, data, 65536));
	CU_ASSERT_EQUAL(co_ra_lookup(&ra, 8192, 4096), CO_RA_HIT);
	co_ra_serve(&ra, 8192, 4096, 0, out, &n, &st);
	fill(want, 8192, 4096);
	CU_ASSERT_EQUAL(n, 4096);
	CU_ASSERT_EQUAL(st, 0);
	CU_ASSERT_EQUAL(memcmp(out, want, 4096), 0);
	CU_ASSERT_TRUE(ra.seq);
	/* planning: ahead = 60 KiB of a 128 KiB window */
	len = co_ra_plan(&ra, 1 << 20, 1 << 30, &off);
	CU_ASSERT_EQUAL(off, 8192 + 65536);
	CU_ASSERT_EQUAL(len, 128 * 1024 - (65536 - 4096));
	/* too few ids for a real chunk while enough is ahead: wait */
	CU_ASSERT_EQUAL(co_ra_plan(&ra, 4096, 1 << 30, &off), 0);
	/* memory budget respected */
	CU_ASSERT_EQUAL(co_ra_plan(&ra, 1 << 20, 0, &off), 0);
	co_ra_grow(&ra, 256 * 1024);
	co_ra_grow(&ra, 256 * 1024);
	CU_ASSERT_EQUAL(ra.window, 256 * 1024);
	co_ra_invalidate(&ra);
	CU_ASSERT_EQUAL(ra.bytes, 0);
	CU_ASSERT_PTR_NULL(ra.chunks);
	CU_ASSERT_EQUAL(co_ra_lookup(&ra, 8192, 4096), CO_RA_MISS);
}

static void
test_ra_eof(void)
{
	struct co_ra ra;
	uint8_t data[10000], out[8192];
	uint32_t n, st;
	uint64_t off;

	co_ra_init(&ra);
	fill(data, 0, sizeof(data));
	CU_ASSERT_PTR_NOT_NULL(co_ra_add(&ra, 0, 65536));
	/* the file has 10000 bytes: a short answer */
	CU_ASSERT_TRUE(co_ra_arrive(&ra, ra.gen, 0, true, data, 10000));
	CU_ASSERT_TRUE(ra.eof_known);
	CU_ASSERT_EQUAL(ra.eof, 10000);
	/* across EOF: short data, as the server answers */
	CU_ASSERT_EQUAL(co_ra_lookup(&ra, 8192, 4096), CO_RA_HIT);
	co_ra_serve(&ra, 8192, 4096, 0, out, &n, &st);
	CU_ASSERT_EQUAL(n, 10000 - 8192);
	CU_ASSERT_EQUAL(st, 0);
	CU_ASSERT_EQUAL(memcmp(out, data + 8192, n), 0);
	/* MinimumCount above what is left: END_OF_FILE */
	co_ra_serve(&ra, 8192, 4096, 4096, out, &n, &st);
	CU_ASSERT_EQUAL(st, 0xC0000011u);
	CU_ASSERT_EQUAL(n, 0);
	/* at or past EOF: END_OF_FILE */
	CU_ASSERT_EQUAL(co_ra_lookup(&ra, 10000, 4096), CO_RA_HIT);
	co_ra_serve(&ra, 10000, 4096, 0, out, &n, &st);
	CU_ASSERT_EQUAL(st, 0xC0000011u);
	/* nothing more to fetch past a known end */
	CU_ASSERT_EQUAL(co_ra_plan(&ra, 1 << 20, 1 << 30, &off), 0);

	/* an empty file: END_OF_FILE with no data */
	co_ra_invalidate(&ra);
	CU_ASSERT_PTR_NOT_NULL(co_ra_add(&ra, 0, 65536));
	CU_ASSERT_TRUE(co_ra_arrive(&ra, ra.gen, 0, true, NULL, 0));
	co_ra_serve(&ra, 0, 4096, 0, out, &n, &st);
	CU_ASSERT_EQUAL(st, 0xC0000011u);
	/* an error answer drops everything */
	co_ra_invalidate(&ra);
	CU_ASSERT_PTR_NOT_NULL(co_ra_add(&ra, 0, 65536));
	CU_ASSERT_FALSE(co_ra_arrive(&ra, ra.gen, 0, false, NULL, 0));
	CU_ASSERT_PTR_NULL(ra.chunks);
}

static void
test_ra_spanning(void)
{
	struct co_ra ra;
	uint8_t a[4096], b[4096], out[4096], want[4096];
	uint32_t n, st;

	co_ra_init(&ra);
	fill(a, 0, 4096);
	fill(b, 4096, 4096);
	fill(want, 2048, 4096);
	CU_ASSERT_PTR_NOT_NULL(co_ra_add(&ra, 0, 4096));
	CU_ASSERT_PTR_NOT_NULL(co_ra_add(&ra, 4096, 4096));
	/* out of order arrival */
	CU_ASSERT_TRUE(co_ra_arrive(&ra, ra.gen, 4096, true, b, 4096));
	CU_ASSERT_EQUAL(co_ra_lookup(&ra, 2048, 4096), CO_RA_WAIT);
	CU_ASSERT_TRUE(co_ra_arrive(&ra, ra.gen, 0, true, a, 4096));
	CU_ASSERT_EQUAL(co_ra_lookup(&ra, 2048, 4096), CO_RA_HIT);
	co_ra_serve(&ra, 2048, 4096, 0, out, &n, &st);
	CU_ASSERT_EQUAL(n, 4096);
	CU_ASSERT_EQUAL(memcmp(out, want, 4096), 0);
	/* the first chunk is consumed and freed; the second is kept */
	CU_ASSERT_EQUAL(ra.chunks->off, 4096);
	CU_ASSERT_EQUAL(ra.bytes, 4096);
	co_ra_invalidate(&ra);
}

/*
 * The signing rule: what smbaccel learns of a server from one answer of an
 * unkeyed session, and what it may then alter.  Rows: an answer, the state
 * before, the state after.
 */
/* ---- byte-range locks (coalesce/brl.c) ---------------------------------------- */

/*
 * I/O against one lock, as MS-FSA 2.1.4.10 and Samba's brl_conflict_other
 * judge it: (lock, own?, I/O, write?) -> refused?
 */
static void
test_brl_check_table(void)
{
	static const struct {
		uint64_t loff, llen;
		bool excl, own;
		uint64_t off, len;
		bool write;
		enum co_brl_verdict want;
	} t[] = {
		/* another open's exclusive lock: reads and writes refused */
		{ 0, 100, true, false, 0, 10, false, CO_BRL_LOCKED },
		{ 0, 100, true, false, 0, 10, true, CO_BRL_LOCKED },
		{ 0, 100, true, false, 99, 1, false, CO_BRL_LOCKED },
		{ 0, 100, true, false, 90, 20, true, CO_BRL_LOCKED },
		{ 0, 100, true, false, 100, 10, false, CO_BRL_OK },
		{ 100, 100, true, false, 0, 100, true, CO_BRL_OK },
		{ 100, 100, true, false, 0, 101, true, CO_BRL_LOCKED },
		/* the owner's exclusive lock permits its own I/O */
		{ 0, 100, true, true, 0, 10, false, CO_BRL_OK },
		{ 0, 100, true, true, 0, 10, true, CO_BRL_OK },
		/* shared: writes refused for everyone, reads for nobody */
		{ 0, 100, false, false, 0, 10, false, CO_BRL_OK },
		{ 0, 100, false, true, 0, 10, false, CO_BRL_OK },
		{ 0, 100, false, false, 50, 10, true, CO_BRL_LOCKED },
		{ 0, 100, false, true, 50, 10, true, CO_BRL_LOCKED },
		{ 0, 100, false, true, 100, 10, true, CO_BRL_OK },
		/* zero-length I/O is never refused */
		{ 0, 100, true, false, 50, 0, true, CO_BRL_OK },
		/* a lock of length 0 at n: only I/O holding n - 1 and n */
		{ 50, 0, true, false, 40, 20, false, CO_BRL_LOCKED },
		{ 50, 0, true, false, 49, 2, true, CO_BRL_LOCKED },
		{ 50, 0, true, false, 50, 10, false, CO_BRL_OK },
		{ 50, 0, true, false, 40, 10, false, CO_BRL_OK },
		/* ... and the {0, 0} lock overlaps nothing */
		{ 0, 0, true, false, 0, 10, true, CO_BRL_OK },
		/* near the top of the 64-bit range */
		{ UINT64_MAX - 10, 10, true, false, UINT64_MAX - 1, 1, false,
		    CO_BRL_LOCKED },
		{ UINT64_MAX - 10, 10, true, false, UINT64_MAX - 20, 10, false,
		    CO_BRL_OK },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct co_brl b;

		memset(&b, 0, sizeof(b));
		CU_ASSERT_EQUAL_FATAL(co_brl_lock(&b, t[i].loff, t[i].llen,
		    t[i].excl), CO_BRL_KEPT);
		CU_ASSERT_EQUAL(co_brl_check(&b, t[i].own, t[i].off, t[i].len,
		    t[i].write), t[i].want);
		co_brl_free(&b);
	}
}

static void
test_brl_unlock(void)
{
	struct co_brl b;

	memset(&b, 0, sizeof(b));
	/* stacked: shared twice, one unlock leaves the other */
	CU_ASSERT_EQUAL(co_brl_lock(&b, 0, 10, false), CO_BRL_KEPT);
	CU_ASSERT_EQUAL(co_brl_lock(&b, 0, 10, false), CO_BRL_KEPT);
	CU_ASSERT_EQUAL(co_brl_unlock(&b, 0, 10), 1);
	CU_ASSERT_EQUAL(co_brl_check(&b, true, 0, 1, true), CO_BRL_LOCKED);
	CU_ASSERT_EQUAL(co_brl_unlock(&b, 0, 10), 1);
	CU_ASSERT_EQUAL(co_brl_check(&b, true, 0, 1, true), CO_BRL_OK);
	CU_ASSERT_EQUAL(co_brl_unlock(&b, 0, 10), -1);
	/* only the exact range unlocks */
	CU_ASSERT_EQUAL(co_brl_lock(&b, 0, 10, true), CO_BRL_KEPT);
	CU_ASSERT_EQUAL(co_brl_unlock(&b, 0, 5), -1);
	CU_ASSERT_EQUAL(b.n, 1);
	/* exclusive then shared on the same range: the exclusive one goes
	 * first (MS-FSA 2.1.5.9), the shared one still refuses writes */
	CU_ASSERT_EQUAL(co_brl_lock(&b, 0, 10, false), CO_BRL_KEPT);
	CU_ASSERT_EQUAL(co_brl_check(&b, false, 0, 1, false), CO_BRL_LOCKED);
	CU_ASSERT_EQUAL(co_brl_unlock(&b, 0, 10), 1);
	CU_ASSERT_EQUAL(b.n, 1);
	CU_ASSERT_FALSE(b.r[0].excl);
	CU_ASSERT_EQUAL(co_brl_check(&b, false, 0, 1, false), CO_BRL_OK);
	CU_ASSERT_EQUAL(co_brl_check(&b, false, 0, 1, true), CO_BRL_LOCKED);
	co_brl_free(&b);
	CU_ASSERT_PTR_NULL(b.r);
	CU_ASSERT_EQUAL(b.n, 0);
}

static void
test_brl_bound(void)
{
	struct co_brl b;
	int i;

	memset(&b, 0, sizeof(b));
	for (i = 0; i < CO_BRL_MAX; i++)
		CU_ASSERT_EQUAL(co_brl_lock(&b, 1000 + 2 * (uint64_t)i, 1, true),
		    CO_BRL_KEPT);
	CU_ASSERT_EQUAL(b.cap, CO_BRL_MAX);
	/* past the bound: counted, by kind */
	CU_ASSERT_EQUAL(co_brl_lock(&b, 5000, 1, true), CO_BRL_LOST);
	CU_ASSERT_EQUAL(b.n, CO_BRL_MAX);
	CU_ASSERT_EQUAL(b.lost, 1);
	CU_ASSERT_EQUAL(b.lost_x, 1);
	CU_ASSERT_EQUAL(b.lost_s, 0);
	/* an exclusive lock may be anywhere: other opens' I/O refused, the
	 * owner's permitted (an own exclusive lock never refuses it) */
	CU_ASSERT_EQUAL(co_brl_check(&b, false, 0, 10, false), CO_BRL_UNKNOWN);
	CU_ASSERT_EQUAL(co_brl_check(&b, false, 0, 10, true), CO_BRL_UNKNOWN);
	CU_ASSERT_EQUAL(co_brl_check(&b, true, 0, 10, true), CO_BRL_OK);
	CU_ASSERT_EQUAL(co_brl_check(&b, true, 0, 10, false), CO_BRL_OK);
	/* a kept one still answers LOCKED where it lies */
	CU_ASSERT_EQUAL(co_brl_check(&b, false, 1000, 1, false), CO_BRL_LOCKED);
	/* a shared one lost: the owner's writes too */
	CU_ASSERT_EQUAL(co_brl_lock(&b, 6000, 1, false), CO_BRL_LOST);
	CU_ASSERT_EQUAL(co_brl_check(&b, true, 0, 10, true), CO_BRL_UNKNOWN);
	CU_ASSERT_EQUAL(co_brl_check(&b, true, 0, 10, false), CO_BRL_OK);
	/* unlocks of ranges not kept take lost ones, of a kind unknown:
	 * both counts stay upper bounds */
	CU_ASSERT_EQUAL(co_brl_unlock(&b, 5000, 1), 0);
	CU_ASSERT_EQUAL(b.lost, 1);
	CU_ASSERT_EQUAL(b.lost_x, 1);
	CU_ASSERT_EQUAL(b.lost_s, 1);
	CU_ASSERT_EQUAL(co_brl_check(&b, true, 0, 10, true), CO_BRL_UNKNOWN);
	CU_ASSERT_EQUAL(co_brl_unlock(&b, 6000, 1), 0);
	CU_ASSERT_EQUAL(b.lost, 0);
	CU_ASSERT_EQUAL(b.lost_x + b.lost_s, 0);
	CU_ASSERT_EQUAL(co_brl_check(&b, false, 0, 10, true), CO_BRL_OK);
	CU_ASSERT_EQUAL(co_brl_unlock(&b, 7000, 1), -1);
	/* room again once kept ones go */
	CU_ASSERT_EQUAL(co_brl_unlock(&b, 1000, 1), 1);
	CU_ASSERT_EQUAL(co_brl_lock(&b, 8000, 1, false), CO_BRL_KEPT);
	/* a grant whose elements are not known counts as both kinds */
	co_brl_lock_unknown(&b);
	CU_ASSERT_EQUAL(co_brl_check(&b, false, 0, 1, false), CO_BRL_UNKNOWN);
	CU_ASSERT_EQUAL(co_brl_check(&b, true, 0, 1, true), CO_BRL_UNKNOWN);
	CU_ASSERT_EQUAL(co_brl_check(&b, true, 0, 1, false), CO_BRL_OK);
	co_brl_free(&b);
}

static void
test_signs_rule(void)
{
	static const struct {
		enum co_signs before;
		uint16_t dialect, command;
		uint32_t status;
		bool interim, req_signed, rsp_signed, sealed;
		enum co_signs after;
	} rows[] = {
		/* an ordinary unsigned request answered unsigned: Samba */
		{ CO_SIGNS_UNKNOWN, 0x0302, 5, 0, false, false, false, false, CO_SIGNS_REQUIRED },
		/* ... answered signed: impacket, some NAS firmware */
		{ CO_SIGNS_UNKNOWN, 0x0202, 3, 0, false, false, true, false, CO_SIGNS_ALL },
		{ CO_SIGNS_UNKNOWN, 0x0311, 5, 0, false, false, true, false, CO_SIGNS_ALL },
		/* a later signed answer overrides an earlier unsigned one */
		{ CO_SIGNS_REQUIRED, 0x0210, 8, 0, false, false, true, false, CO_SIGNS_ALL },
		/* ... but an unsigned one never undoes "all" */
		{ CO_SIGNS_ALL, 0x0210, 8, 0, false, false, false, false, CO_SIGNS_ALL },
		/* answers MS-SMB2 requires signed say nothing */
		{ CO_SIGNS_UNKNOWN, 0x0311, 1, 0, false, false, true, false, CO_SIGNS_UNKNOWN },  /* SESSION_SETUP */
		{ CO_SIGNS_UNKNOWN, 0x0311, 3, 0, false, false, true, false, CO_SIGNS_UNKNOWN },  /* TREE_CONNECT 3.1.1 */
		{ CO_SIGNS_UNKNOWN, 0x0300, 11, 0, false, false, true, false, CO_SIGNS_UNKNOWN }, /* IOCTL (VALIDATE_NEGOTIATE) */
		{ CO_SIGNS_UNKNOWN, 0x0300, 0, 0, false, false, false, false, CO_SIGNS_UNKNOWN }, /* NEGOTIATE */
		/* TREE_CONNECT below 3.1.1 is ordinary */
		{ CO_SIGNS_UNKNOWN, 0x0300, 3, 0, false, false, false, false, CO_SIGNS_REQUIRED },
		/* the answer to a signed request: signed because the request was */
		{ CO_SIGNS_UNKNOWN, 0x0210, 5, 0, false, true, true, false, CO_SIGNS_UNKNOWN },
		/* interim, failed and sealed answers say nothing */
		{ CO_SIGNS_UNKNOWN, 0x0210, 15, 0x103, true, false, false, false, CO_SIGNS_UNKNOWN },
		{ CO_SIGNS_UNKNOWN, 0x0210, 5, 0xC0000034, false, false, false, false, CO_SIGNS_UNKNOWN },
		{ CO_SIGNS_UNKNOWN, 0x0210, 5, 0xC0000034, false, false, true, false, CO_SIGNS_UNKNOWN },
		{ CO_SIGNS_UNKNOWN, 0x0311, 5, 0, false, false, false, true, CO_SIGNS_UNKNOWN },
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct co_sign_facts f = {
			.dialect = rows[i].dialect, .command = rows[i].command,
			.status = rows[i].status, .interim = rows[i].interim,
			.req_signed = rows[i].req_signed,
			.rsp_signed = rows[i].rsp_signed, .sealed = rows[i].sealed,
		};

		CU_ASSERT_EQUAL(co_signs_observe(rows[i].before, &f),
		    rows[i].after);
	}
	/* nothing is altered until the server is known */
	CU_ASSERT_FALSE(co_may_alter(CO_ALTER_SYNTH, CO_SIGNS_UNKNOWN, false));
	CU_ASSERT_FALSE(co_may_alter(CO_ALTER_REWRITE, CO_SIGNS_UNKNOWN, false));
	/* a server that signs only what it must: both */
	CU_ASSERT_TRUE(co_may_alter(CO_ALTER_SYNTH, CO_SIGNS_REQUIRED, false));
	CU_ASSERT_TRUE(co_may_alter(CO_ALTER_REWRITE, CO_SIGNS_REQUIRED, false));
	/* one that signs everything: own answers only, never a rewrite */
	CU_ASSERT_TRUE(co_may_alter(CO_ALTER_SYNTH, CO_SIGNS_ALL, false));
	CU_ASSERT_FALSE(co_may_alter(CO_ALTER_REWRITE, CO_SIGNS_ALL, false));
	/* a server remembered for signing an altered answer: no rewrite in
	 * any later session, whatever that session learned */
	CU_ASSERT_TRUE(co_may_alter(CO_ALTER_SYNTH, CO_SIGNS_REQUIRED, true));
	CU_ASSERT_FALSE(co_may_alter(CO_ALTER_REWRITE, CO_SIGNS_REQUIRED, true));
	CU_ASSERT_STRING_EQUAL(co_signs_name(CO_SIGNS_ALL), "all");
	CU_ASSERT_STRING_EQUAL(co_signs_name(CO_SIGNS_REQUIRED), "when-required");
}

void
ut_register_coalesce(void)
{
	CU_pSuite s = CU_add_suite("coalesce", NULL, NULL);

	CU_add_test(s, "pool merge/take/overlap", test_pool_merge);
	CU_add_test(s, "pool run table bounded", test_pool_runs_bounded);
	CU_add_test(s, "pool hoard bound", test_pool_hoard_bound);
	CU_add_test(s, "acknowledgement reserve", test_reserve);
	CU_add_test(s, "bank grants", test_bank_grants);
	CU_add_test(s, "zero-credit rule", test_zero_credit_rule);
	CU_add_test(s, "compound grant split", test_compound_split);
	CU_add_test(s, "credits asked for absorbed requests", test_proxy_ask);
	CU_add_test(s, "answers replace the charge", test_synth_target);
	CU_add_test(s, "owed to a client asking its charge", test_owed_exact);
	CU_add_test(s, "nothing owed to a client asking again",
	    test_owed_own_window);
	CU_add_test(s, "the last answer pays what waits for proof",
	    test_owed_last_answer);
	CU_add_test(s, "extent append/take", test_extent);
	CU_add_test(s, "extent growth", test_extent_grow);
	CU_add_test(s, "extent merge under", test_extent_merge_under);
	CU_add_test(s, "absorb decision table", test_write_decide);
	CU_add_test(s, "read-ahead sequential cache", test_ra_sequential);
	CU_add_test(s, "read-ahead EOF answers", test_ra_eof);
	CU_add_test(s, "read-ahead spanning chunks", test_ra_spanning);
	CU_add_test(s, "signing rule: what may be altered", test_signs_rule);
	CU_add_test(s, "byte-range lock checks", test_brl_check_table);
	CU_add_test(s, "byte-range unlocks", test_brl_unlock);
	CU_add_test(s, "byte-range lock bound", test_brl_bound);
}
