/*
 * fuzz_policy.c - libFuzzer driver for the policy parser (policy/policy.c).
 *
 * The input is a policy file.  It is parsed with pol_load_string() (after
 * NUL-terminating a copy; an input with NULs is cut at the first one, as
 * the daemon's own string path would).  Whatever the outcome, the promises
 * of policy.h are checked:
 *  - a NULL result has at least one error message, a config has none, and
 *    never more than POL_ERRORS_MAX + 1 messages are stored;
 *  - every message starts with "NAME:" and a line number;
 *  - a loaded config has at least one listen address, and in forward mode
 *    an upstream; pol_share_lookup() gives values inside the table's
 *    ranges for arbitrary server/share names taken from the input;
 *  - pol_diff_reloadable(cfg, cfg) is 0;
 *  - pol_dump() output parses back, and dumping that gives the same
 *    settings (comments aside), with no reloadable difference.
 * The value parsers pol_parse_size/duration/bool get the input's first
 * line too.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 \
 *       -D_GNU_SOURCE -I. tests/fuzz/fuzz_policy.c policy/policy.c \
 *       -linih -o fuzz_policy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fz.conf"

static void
check_errors(const struct pol_errors *e, bool loaded)
{
	size_t i;

	if (loaded && e->n != 0)
		abort();
	if (!loaded && e->n == 0 && e->dropped == 0)
		abort();
	if (e->n > POL_ERRORS_MAX + 1)
		abort();
	for (i = 0; i < e->n; i++) {
		const char *m = e->msg[i];

		if (m == NULL || strncmp(m, NAME ":", sizeof(NAME)) != 0 ||
		    m[sizeof(NAME)] < '0' || m[sizeof(NAME)] > '9')
			abort();
	}
}

static void
check_share(const struct pol_share *s)
{
	if (s->write_behind > POL_GATE_ALWAYS || s->read_ahead > POL_GATE_ALWAYS)
		abort();
	if (s->coalesce_size < 64 * 1024 || s->coalesce_size > 8 << 20)
		abort();
	if (s->flush_idle_ms < 1 || s->flush_max_age_ms < 1)
		abort();
	if (s->write_behind_per_open < (1 << 20) || s->read_ahead_max < 65536)
		abort();
}

/*
 * pol_dump() into a malloc'd string without its comments (they name the
 * file and the line each value came from, which differ between the two).
 */
static char *
dump(const struct pol_config *cfg)
{
	char *buf = NULL, *out, *o;
	const char *p, *e;
	size_t len = 0;
	FILE *fp;

	if ((fp = open_memstream(&buf, &len)) == NULL)
		abort();
	pol_dump(cfg, fp);
	if (fclose(fp) != 0)
		abort();
	if ((out = malloc(len + 1)) == NULL)
		abort();
	o = out;
	for (p = buf; *p; p = *e ? e + 1 : e) {
		const char *c;

		e = strchr(p, '\n');
		if (e == NULL)
			e = p + strlen(p);
		for (c = p; c < e && *c != ';'; c++)
			;
		while (c > p && (c[-1] == ' ' || c[-1] == '\t'))
			c--;
		if (c == p)
			continue;
		memcpy(o, p, (size_t)(c - p));
		o += c - p;
		*o++ = '\n';
	}
	*o = '\0';
	free(buf);
	return out;
}

static void
roundtrip(const struct pol_config *cfg)
{
	struct pol_errors errs = { 0 };
	struct pol_config *again;
	char *d1, *d2, *full = NULL;
	size_t len = 0;
	FILE *fp;

	if ((fp = open_memstream(&full, &len)) == NULL)
		abort();
	pol_dump(cfg, fp);
	if (fclose(fp) != 0)
		abort();
	again = pol_load_string(full, NAME, &errs);
	if (again == NULL) {
		/* the dump of a valid config must parse back */
		pol_errors_print(&errs, stderr);
		fprintf(stderr, "---- dump:\n%s", full);
		abort();
	}
	check_errors(&errs, true);
	if (pol_diff_reloadable(cfg, again, &errs) != 0)
		abort();
	d1 = dump(cfg);
	d2 = dump(again);
	if (strcmp(d1, d2) != 0) {
		fprintf(stderr, "---- first dump:\n%s---- second dump:\n%s", d1,
		    d2);
		abort();
	}
	free(d1);
	free(d2);
	free(full);
	pol_free(again);
	pol_errors_free(&errs);
}

static void
values(const char *text)
{
	char line[256];
	size_t n = strcspn(text, "\n");
	uint64_t v;
	bool b;

	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	memcpy(line, text, n);
	line[n] = '\0';
	(void)!pol_parse_size(line, &v);
	(void)!pol_parse_duration(line, &v);
	(void)!pol_parse_bool(line, &b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pol_errors errs = { 0 };
	struct pol_config *cfg;
	struct pol_share sh;
	const struct pol_global *g;
	char *text, *names, *server, *share;

	if (size > 64 * 1024)
		return -1;
	if ((text = malloc(size + 1)) == NULL)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	values(text);

	cfg = pol_load_string(text, NAME, &errs);
	check_errors(&errs, cfg != NULL);
	pol_errors_free(&errs);
	if (errs.n != 0)
		abort();
	if (cfg == NULL) {
		free(text);
		return 0;
	}
	g = pol_global(cfg);
	if (g->n_listen < 1 || g->n_listen > POL_LISTEN_MAX)
		abort();
	if (g->mode == POL_MODE_FORWARD && g->upstream.host[0] == '\0')
		abort();
	if (strcmp(pol_name(cfg), NAME) != 0)
		abort();

	/* lookups with names taken from the input's last line */
	if ((names = strdup(strrchr(text, '\n') ? strrchr(text, '\n') + 1 :
	    text)) == NULL)
		abort();
	server = names;
	share = strchr(names, '/');
	if (share)
		*share++ = '\0';
	pol_share_lookup(cfg, NULL, NULL, &sh);
	check_share(&sh);
	pol_share_lookup(cfg, NULL, server, &sh);
	check_share(&sh);
	pol_share_lookup(cfg, server, share ? share : "", &sh);
	check_share(&sh);
	free(names);

	if (pol_diff_reloadable(cfg, cfg, &errs) != 0)
		abort();
	pol_errors_free(&errs);
	roundtrip(cfg);
	pol_free(cfg);
	free(text);
	return 0;
}
