/*
 * sharestats.c - the totals kept per share (server and share name as the
 * client's TREE_CONNECT gave them): what `smbaccelctl stats` and the
 * metrics show per share.  At most PX_SHARE_STATS_MAX of them; shares seen
 * after that are counted together under "*".  Made by the ledger at a
 * TREE_CONNECT's answer, freed at exit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/ledger.h"

static struct px_share_stats *share_stats, **share_stats_tail = &share_stats;
static unsigned int share_stats_n;

static struct px_share_stats *
share_stats_find(const char *server, const char *share)
{
	struct px_share_stats *ss;

	for (ss = share_stats; ss; ss = ss->next)
		if (strcasecmp(ss->server, server) == 0 &&
		    strcasecmp(ss->share, share) == 0)
			return ss;
	return NULL;
}

struct px_share_stats *
px_share_stats_get(const char *raw_server, const char *raw_share)
{
	struct px_share_stats *ss;
	char server[sizeof(ss->server)], share[sizeof(ss->share)];

	/* kept as shown: a client may put any character in the server
	 * part of its path, and these names go into tables and labels */
	px_str_safe(raw_server, server, sizeof(server));
	px_str_safe(raw_share, share, sizeof(share));
	if ((ss = share_stats_find(server, share)) != NULL)
		return ss;
	if (share_stats_n >= PX_SHARE_STATS_MAX) {
		snprintf(server, sizeof(server), "*");
		snprintf(share, sizeof(share), "*");
		if ((ss = share_stats_find(server, share)) != NULL)
			return ss;
	}
	if ((ss = calloc(1, sizeof(*ss))) == NULL)
		return NULL;
	snprintf(ss->server, sizeof(ss->server), "%s", server);
	snprintf(ss->share, sizeof(ss->share), "%s", share);
	*share_stats_tail = ss;
	share_stats_tail = &ss->next;
	share_stats_n++;
	return ss;
}

const struct px_share_stats *
px_share_stats_first(void)
{
	return share_stats;
}

void
px_share_stats_free(void)
{
	struct px_share_stats *ss;

	while ((ss = share_stats) != NULL) {
		share_stats = ss->next;
		free(ss);
	}
	share_stats_tail = &share_stats;
	share_stats_n = 0;
}
