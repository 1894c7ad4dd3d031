/*
 * credits.c - the id pool and the credit bank (DESIGN.md section 3).
 *
 * The relay never renumbers client message ids.  Ids of requests the proxy
 * absorbed are donated to the pool; the proxy spends them on its own
 * upstream requests, a contiguous run as one request's CreditCharge
 * (MS-SMB2 3.3.5.2.5 allows a charge above the payload's need) and
 * singletons on ECHOs.  An id never spent pins smbd's window for good
 * (smb2_validate_sequence_number), hence the hoard bound.
 */
#include <string.h>

#include "coalesce/coalesce.h"

void
co_pool_init(struct co_pool *p)
{
	memset(p, 0, sizeof(*p));
}

static void
pool_recount(struct co_pool *p)
{
	p->oldest = p->nruns ? p->runs[0].lo : 0;
}

int
co_pool_add(struct co_pool *p, uint64_t lo, uint64_t n)
{
	unsigned int i;

	if (n == 0)
		return 0;
	if (lo + n < lo)
		return -1;
	/* find the first run that starts after lo */
	for (i = 0; i < p->nruns && p->runs[i].lo <= lo; i++)
		;
	/* overlap with the previous run or the next one? */
	if (i > 0 && p->runs[i - 1].lo + p->runs[i - 1].n > lo)
		return -1;
	if (i < p->nruns && lo + n > p->runs[i].lo)
		return -1;
	if (i > 0 && p->runs[i - 1].lo + p->runs[i - 1].n == lo) {
		p->runs[i - 1].n += n;
		/* merge with the next run if now adjacent */
		if (i < p->nruns && p->runs[i - 1].lo + p->runs[i - 1].n ==
		    p->runs[i].lo) {
			p->runs[i - 1].n += p->runs[i].n;
			memmove(&p->runs[i], &p->runs[i + 1],
			    (p->nruns - i - 1) * sizeof(p->runs[0]));
			p->nruns--;
		}
	} else if (i < p->nruns && lo + n == p->runs[i].lo) {
		p->runs[i].lo = lo;
		p->runs[i].n += n;
	} else {
		if (p->nruns == CO_POOL_MAX_RUNS)
			return -1;
		memmove(&p->runs[i + 1], &p->runs[i],
		    (p->nruns - i) * sizeof(p->runs[0]));
		p->runs[i].lo = lo;
		p->runs[i].n = n;
		p->nruns++;
	}
	p->count += n;
	pool_recount(p);
	return 0;
}

uint64_t
co_pool_first_run(const struct co_pool *p)
{
	return p->nruns ? p->runs[0].n : 0;
}

uint64_t
co_pool_take_run(struct co_pool *p, uint64_t max, uint64_t *lo)
{
	uint64_t n;

	if (p->nruns == 0 || max == 0)
		return 0;
	n = p->runs[0].n < max ? p->runs[0].n : max;
	*lo = p->runs[0].lo;
	p->runs[0].lo += n;
	p->runs[0].n -= n;
	if (p->runs[0].n == 0) {
		memmove(&p->runs[0], &p->runs[1],
		    (p->nruns - 1) * sizeof(p->runs[0]));
		p->nruns--;
	}
	p->count -= n;
	pool_recount(p);
	return n;
}

static uint64_t hoard_bound(uint64_t window);

bool
co_pool_over_bound(const struct co_pool *p, uint64_t next_id,
    uint64_t window)
{
	uint64_t bound = hoard_bound(window);

	if (p->count == 0)
		return false;
	if (p->count >= bound || p->nruns >= CO_POOL_MAX_RUNS - 1)
		return true;
	/* the oldest id must not fall too far behind the client's front */
	return next_id > p->oldest && next_id - p->oldest >= bound;
}

/* The hoard bound of co_pool_over_bound: a quarter of the window, at most
 * CO_POOL_HOARD_MAX, at least 1. */
static uint64_t
hoard_bound(uint64_t window)
{
	uint64_t bound = window / 4;

	if (bound > CO_POOL_HOARD_MAX)
		bound = CO_POOL_HOARD_MAX;
	return bound ? bound : 1;
}

void
co_reserve_init(struct co_reserve *r)
{
	memset(r, 0, sizeof(*r));
}

enum co_rsv_act
co_reserve_decide(const struct co_reserve *r, const struct co_pool *p,
    bool need, uint64_t spare, uint64_t next_id, uint64_t window)
{
	uint64_t bound = hoard_bound(window), age;

	if (!r->held)
		return need && spare > 0 && p->count > 0 ? CO_RSV_TAKE :
		    CO_RSV_KEEP;
	if (!need)
		return CO_RSV_RELEASE;
	age = next_id > r->id ? next_id - r->id : 0;
	if (age * 2 < bound)
		return CO_RSV_KEEP;
	/* the pool's oldest id, if newer and spare, replaces it: the old one
	 * is handed back to be sent on its own, so the pool is one id short
	 * after it, and buffered data must never be left without the ids it
	 * travels with */
	if (spare > 0 && p->count > 0 && p->oldest > r->id)
		return CO_RSV_REFRESH;
	return age >= bound ? CO_RSV_RELEASE : CO_RSV_KEEP;
}

enum co_rsv_act
co_reserve_tend(struct co_reserve *r, struct co_pool *p, bool need,
    uint64_t spare, uint64_t next_id, uint64_t window, uint64_t *gone)
{
	enum co_rsv_act a = co_reserve_decide(r, p, need, spare, next_id,
	    window);
	uint64_t id;

	switch (a) {
	case CO_RSV_TAKE:
		if (co_pool_take_run(p, 1, &id) != 1)
			return CO_RSV_KEEP;
		r->id = id;
		r->held = true;
		break;
	case CO_RSV_REFRESH:
		if (co_pool_take_run(p, 1, &id) != 1)
			return CO_RSV_KEEP;
		*gone = r->id;
		r->id = id;
		break;
	case CO_RSV_RELEASE:
		*gone = r->id;
		r->held = false;
		break;
	case CO_RSV_KEEP:
		break;
	}
	return a;
}

void
co_credits_init(struct co_credits *c)
{
	memset(c, 0, sizeof(*c));
	c->S = 1;
	c->C = 1;
}

/* The grant an answer to a request of that charge asking requested aims
 * at: what it spent, more only if asked. */
static uint64_t
synth_target(uint16_t charge, uint16_t requested)
{
	uint64_t t = charge > requested ? charge : requested;

	return t ? t : 1;
}

/* The shortfalls after owed_wait's (owed_next) become the ones waiting
 * for their proof. */
static void
owed_advance(struct co_credits *c)
{
	c->owed_wait = c->owed_next;
	c->owed_after = c->owed_next_after;
	c->owed_next = 0;
}

void
co_client_sent(struct co_credits *c, uint64_t mid, uint64_t charge,
    uint16_t requested)
{
	uint64_t spent = charge ? charge : 1, left;

	if (mid + spent > c->client_next)
		c->client_next = mid + spent;
	c->client_outstanding++;
	if (c->own_window || !c->shorted)
		return;
	if (requested > spent) {
		/* asks again itself (or always asks more): paying what is
		 * owed too would pay twice; what a last answer paid before
		 * the proof may have been paid twice, and dropped by a
		 * client that keeps no more than a cap */
		c->own_window = true;
		c->owed = 0;
		c->owed_wait = 0;
		c->owed_next = 0;
		c->doubt += c->unproven;
		c->unproven = 0;
		goto used;
	}
	while (c->owed_wait && mid + spent > c->owed_after + CO_OWED_MARGIN) {
		c->owed += c->owed_wait;
		owed_advance(c);
		c->unproven = 0;        /* it does not ask again: paid once */
	}
used:
	/* ids it used it held: no more in doubt than it has not used */
	left = c->C > c->client_next ? c->C - c->client_next : 0;
	if (c->doubt > left)
		c->doubt = left;
}

void
co_synth_granted(struct co_credits *c, uint16_t charge, uint16_t requested,
    uint16_t g)
{
	uint64_t want = requested ? requested : 1;
	uint64_t target = synth_target(charge, requested), paid, owing;
	uint64_t short_by, extra;

	c->C += g;
	if (want > g) {
		c->ask += want - g;
		if (c->ask > CO_ASK_MAX)
			c->ask = CO_ASK_MAX;
	}
	if (g > target) {
		/* what is owed first, then (a last answer) what waited for
		 * its proof, oldest first */
		extra = g - target;
		paid = extra < c->owed ? extra : c->owed;
		c->owed -= paid;
		extra -= paid;
		while (extra > 0 && c->owed_wait > 0) {
			paid = extra < c->owed_wait ? extra : c->owed_wait;
			c->owed_wait -= paid;
			c->unproven += paid;
			extra -= paid;
			if (c->owed_wait == 0)
				owed_advance(c);
		}
	} else if (g < target) {
		c->shorted = true;
		if (c->own_window)
			return;
		owing = c->owed + c->owed_wait + c->owed_next;
		short_by = target - g;
		if (owing + short_by > CO_ASK_MAX)
			short_by = owing < CO_ASK_MAX ? CO_ASK_MAX - owing : 0;
		if (short_by == 0)
			return;
		if (c->owed_wait == 0) {
			c->owed_wait = short_by;
			c->owed_after = c->C;
		} else {
			c->owed_next += short_by;
			c->owed_next_after = c->C;
		}
	}
}

uint16_t
co_proxy_ask(struct co_credits *c)
{
	uint64_t n = c->ask < CO_ASK_STEP ? c->ask : CO_ASK_STEP;

	c->ask -= n;
	return (uint16_t)(1 + n);
}

/* Client requests whose answers will come and bring credits. */
static uint64_t
co_awaited(const struct co_credits *c)
{
	return c->client_outstanding > c->client_async ?
	    c->client_outstanding - c->client_async : 0;
}

bool
co_synth_grant(const struct co_credits *c, uint16_t charge,
    uint16_t requested, uint16_t *grant)
{
	uint64_t want = synth_target(charge, requested);
	uint64_t bank = c->S - c->C;
	uint64_t g, avail, owe = 0;
	bool last = co_awaited(c) <= 1;

	if (!c->own_window)
		owe = c->owed + (last ? c->owed_wait + c->owed_next : 0);
	want += owe;
	g = want < bank ? want : bank;
	if (g > UINT16_MAX)
		g = UINT16_MAX;
	*grant = (uint16_t)g;
	/* credits the client will hold after this response, less those it
	 * may have dropped */
	avail = c->C + g > c->client_next ? c->C + g - c->client_next : 0;
	avail = avail > c->doubt ? avail - c->doubt : 0;
	if (last && owe > 0 && g < want)
		return false;   /* the answers to smbaccel's requests pay it */
	/* this response is one of client_outstanding; the others will bring
	 * grants of their own, but for those gone async.  The last one must
	 * leave the client a credit, and as many as the request spent: a
	 * client sending 128 KiB writes (charge 2) one at a time was left
	 * with 1 by a short answer, and could send nothing more */
	if (avail < (charge ? charge : 1) && last)
		return false;
	return true;
}

uint16_t
co_compound_split(const struct co_credits *c, uint16_t g, uint64_t due)
{
	uint64_t m = g < due ? g : due;
	uint64_t avail = c->C > c->client_next ? c->C - c->client_next : 0;

	/* with nothing else outstanding the client must keep one credit:
	 * SMB2 has no unsolicited grant (a request gone async, this one at
	 * its interim answer included, may never bring one) */
	if (co_awaited(c) == 0 && m >= avail)
		m = avail > 0 ? avail - 1 : 0;
	return (uint16_t)m;
}
