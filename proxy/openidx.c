/*
 * openidx.c - a connection's opens, indexed (declared in ledger.h).
 *
 * Owns the list l->opens (doubly linked: an open leaves it, or moves to
 * its front, without a walk), the table that finds an open by its FileId,
 * the list of opens that may hold write-behind data (l->busy) and the
 * count of opens that saw a LOCK (l->nlocked).  Every request looked its
 * open up by walking the list, and the rules between connections walked
 * every open of every connection to the same server for the few that
 * were busy or locked: 16,000 opens on one connection cost every small
 * request of another 300 us (docs/design.md, Known limits).
 *
 * Invariants (px_opens_sane checks them):
 *  - every open of l->opens is in the table exactly once, under its fid,
 *    and the table holds nothing else; no two opens share a fid (the
 *    ledger refuses a second one, ledger.c on_create);
 *  - every open for which px_open_wb_busy() holds is on l->busy (a few
 *    that are no longer busy may be too, until px_open_busy_sync looks
 *    at them again): who asks "is any open busy" walks l->busy and tests
 *    each;
 *  - l->nlocked is the number of opens of l->opens with locked set
 *    (set only through px_open_lock; never cleared but with the open).
 * Memory: the table has 16 slots, or at most 4 per open of the
 * connection's peak (it grows, never shrinks), and is freed with the
 * ledger.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/ledger.h"

static size_t
fid_slot(const struct smb2_fileid *fid, size_t cap)
{
	uint64_t h = (fid->persistent ^ (fid->volatile_ * UINT64_C(31))) *
	    UINT64_C(0x9E3779B97F4A7C15);

	return (size_t)(h >> 32) & (cap - 1);
}

static void
fid_put(struct px_open **tab, size_t cap, struct px_open *o)
{
	size_t s;

	for (s = fid_slot(&o->fid, cap); tab[s]; s = (s + 1) & (cap - 1))
		;
	tab[s] = o;
}

/* Room for one more open: the table stays at most half full. */
static int
fid_reserve(struct px_ledger *l)
{
	struct px_open **tab;
	size_t cap, i;

	if ((l->nopens + 1) * 2 <= l->fid_cap)
		return 0;
	cap = l->fid_cap ? l->fid_cap * 2 : 16;
	if ((tab = calloc(cap, sizeof(*tab))) == NULL)
		return -1;
	for (i = 0; i < l->fid_cap; i++)
		if (l->fid_tab[i])
			fid_put(tab, cap, l->fid_tab[i]);
	free(l->fid_tab);
	l->fid_tab = tab;
	l->fid_cap = cap;
	return 0;
}

/* Linear probing, deletion by backward shift (as the pending table). */
static void
fid_del(struct px_ledger *l, const struct px_open *o)
{
	size_t s, j, mask = l->fid_cap - 1;

	if (l->fid_cap == 0)
		return;
	for (s = fid_slot(&o->fid, l->fid_cap); l->fid_tab[s] != o;
	    s = (s + 1) & mask)
		if (l->fid_tab[s] == NULL)
			return;
	l->fid_tab[s] = NULL;
	for (j = (s + 1) & mask; l->fid_tab[j]; j = (j + 1) & mask) {
		size_t home = fid_slot(&l->fid_tab[j]->fid, l->fid_cap);

		if ((j > s && (home <= s || home > j)) ||
		    (j < s && (home <= s && home > j))) {
			l->fid_tab[s] = l->fid_tab[j];
			l->fid_tab[j] = NULL;
			s = j;
		}
	}
}

struct px_open *
px_opens_get(const struct px_ledger *l, const struct smb2_fileid *fid)
{
	struct px_open *o;
	size_t s;

	if (l->fid_cap == 0)
		return NULL;
	for (s = fid_slot(fid, l->fid_cap); (o = l->fid_tab[s]) != NULL;
	    s = (s + 1) & (l->fid_cap - 1))
		if (px_fileid_eq(&o->fid, fid))
			return o;
	return NULL;
}

static void
list_push(struct px_open **head, struct px_open *o)
{
	o->next = *head;
	if (*head)
		(*head)->pprev = &o->next;
	o->pprev = head;
	*head = o;
}

static void
list_cut(struct px_open *o)
{
	*o->pprev = o->next;
	if (o->next)
		o->next->pprev = o->pprev;
	o->pprev = NULL;
	o->next = NULL;
}

int
px_opens_link(struct px_ledger *l, struct px_open *o)
{
	if (fid_reserve(l) == -1)
		return -1;
	fid_put(l->fid_tab, l->fid_cap, o);
	list_push(&l->opens, o);
	l->nopens++;
	if (o->locked)
		l->nlocked++;
	px_open_busy_sync(l, o);
	return 0;
}

/* o off the busy list, if it is on it. */
static void
busy_cut(struct px_open *o)
{
	if (o->busy_pprev == NULL)
		return;
	*o->busy_pprev = o->busy_next;
	if (o->busy_next)
		o->busy_next->busy_pprev = o->busy_pprev;
	o->busy_pprev = NULL;
	o->busy_next = NULL;
}

void
px_opens_unlink(struct px_ledger *l, struct px_open *o)
{
	if (o->pprev == NULL)
		return;
	fid_del(l, o);
	list_cut(o);
	l->nopens--;
	if (o->locked)
		l->nlocked--;
	busy_cut(o);
}

void
px_opens_front(struct px_ledger *l, struct px_open *o)
{
	if (l->opens == o || o->pprev == NULL)
		return;
	list_cut(o);
	list_push(&l->opens, o);
}

void
px_opens_free(struct px_ledger *l)
{
	while (l->opens) {
		struct px_open *o = l->opens;

		px_opens_unlink(l, o);
		px_open_free(o);
	}
	free(l->fid_tab); l->fid_tab = NULL;
	l->fid_cap = 0;
}

void
px_open_busy_sync(struct px_ledger *l, struct px_open *o)
{
	bool busy = px_open_wb_busy(o);

	if (busy && o->busy_pprev == NULL && o->pprev != NULL) {
		o->busy_next = l->busy;
		if (l->busy)
			l->busy->busy_pprev = &o->busy_next;
		o->busy_pprev = &l->busy;
		l->busy = o;
	} else if (!busy)
		busy_cut(o);
}

void
px_open_lock(struct px_ledger *l, struct px_open *o)
{
	if (o->locked)
		return;
	o->locked = true;
	if (o->pprev != NULL)
		l->nlocked++;
}

bool
px_opens_sane(const struct px_ledger *l)
{
	const struct px_open *o;
	size_t n = 0, nt = 0, nl = 0, i;

	for (o = l->opens; o; o = o->next) {
		if (px_opens_get(l, &o->fid) != o ||
		    (o->next && o->next->pprev != &o->next))
			return false;
		if (px_open_wb_busy(o) && o->busy_pprev == NULL)
			return false;
		nl += o->locked;
		n++;
	}
	for (i = 0; i < l->fid_cap; i++)
		nt += l->fid_tab[i] != NULL;
	for (o = l->busy; o; o = o->busy_next)
		if (o->pprev == NULL)
			return false;
	return n == l->nopens && nt == n && nl == l->nlocked;
}
