/*
 * test_policy.c - CUnit tests of policy/: good files, precedence, every
 * kind of error with its exact line, bounded error lists, reload diff,
 * dump round trip.  Files under deploy/ and docs/ are read relative to
 * the current directory, the source tree root (as "make unit" runs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "policy/policy.h"
#include "tests/unit/unit.h"

#define NAME "t.conf"

/* Three lines that make a valid [global]; a bad line after them is line 4. */
#define G3 "[global]\nlisten = 127.0.0.1:4445\nupstream = 127.0.0.1:445\n"

static const char minimal[] =
    "[global]\n"
    "listen = 127.0.0.1:4445          ; one or more, comma-separated\n"
    "upstream = 127.0.0.1:445         "
    "; forward mode: where listen connects to\n"
    "mode = forward                   ; forward | transparent | tproxy\n"
    "control_socket = /run/smbaccel/control.sock\n"
    "\n"
    "[share backup]\n"
    "write_behind = always            ; leased | always | off\n"
    "read_ahead = leased\n";

static char *
slurp(const char *path)
{
	FILE *fp;
	char *buf;
	long len;

	if ((fp = fopen(path, "r")) == NULL)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == -1 || (len = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET) == -1 ||
	    (buf = malloc((size_t)len + 1)) == NULL) {
		fclose(fp);
		return NULL;
	}
	if (fread(buf, 1, (size_t)len, fp) != (size_t)len) {
		free(buf);
		fclose(fp);
		return NULL;
	}
	buf[len] = '\0';
	fclose(fp);
	return buf;
}

static void
show(const char *what, const char *text, const struct pol_errors *errs)
{
	fprintf(stderr, "\n--- %s\n%s--- errors:\n", what, text);
	pol_errors_print(errs, stderr);
}

/* text loads without errors; the caller frees the config. */
static struct pol_config *
load_ok(const char *text)
{
	struct pol_errors errs = { 0 };
	struct pol_config *cfg;

	cfg = pol_load_string(text, NAME, &errs);
	if (cfg == NULL || errs.n != 0)
		show("expected to load", text, &errs);
	pol_errors_free(&errs);
	return cfg;
}

/* Does some message read exactly "t.conf:LINE: ..." and contain needle? */
static bool
has_error(const struct pol_errors *errs, int line, const char *needle)
{
	char prefix[64];
	size_t i;

	snprintf(prefix, sizeof(prefix), "%s:%d: ", NAME, line);
	for (i = 0; i < errs->n; i++)
		if (strncmp(errs->msg[i], prefix, strlen(prefix)) == 0 &&
		    strstr(errs->msg[i] + strlen(prefix), needle) != NULL)
			return true;
	return false;
}

/*
 * text fails to load, with exactly `count` errors (0: any number), one of
 * them at line `line` containing needle.
 */
static bool
fails(const char *text, size_t count, int line, const char *needle)
{
	struct pol_errors errs = { 0 };
	struct pol_config *cfg;
	bool ok;

	cfg = pol_load_string(text, NAME, &errs);
	ok = cfg == NULL && errs.n > 0 && has_error(&errs, line, needle) &&
	    (count == 0 || errs.n == count);
	if (!ok) {
		char what[256];

		snprintf(what, sizeof(what), "expected %zu error(s), one at "
		    "line %d with \"%s\"", count, line, needle);
		show(what, text, &errs);
	}
	pol_free(cfg);
	pol_errors_free(&errs);
	return ok;
}

static void
expect_defaults(const struct pol_share *s)
{
	CU_ASSERT_EQUAL(s->write_behind, POL_GATE_LEASED);
	CU_ASSERT_EQUAL(s->read_ahead, POL_GATE_LEASED);
	CU_ASSERT_EQUAL(s->coalesce_size, 1024 * 1024);
	CU_ASSERT_EQUAL(s->flush_idle_ms, 200);
	CU_ASSERT_EQUAL(s->flush_max_age_ms, 2000);
	CU_ASSERT_EQUAL(s->write_behind_per_open, 64 * 1024 * 1024);
	CU_ASSERT_EQUAL(s->read_ahead_max, 8 * 1024 * 1024);
	CU_ASSERT_TRUE(s->close_compound);
	CU_ASSERT_TRUE(s->proxy_lease);
	CU_ASSERT_EQUAL(s->read_cache, true);
	CU_ASSERT_EQUAL(s->read_cache_file_max, 64 * 1024 * 1024);
}

static void
expect_global_defaults(const struct pol_global *g)
{
	CU_ASSERT_STRING_EQUAL(g->control_socket, "/run/smbaccel/control.sock");
	CU_ASSERT_EQUAL(g->connect_timeout_ms, 15000);
	CU_ASSERT_EQUAL(g->idle_timeout_ms, 0);
	CU_ASSERT_EQUAL(g->client_keepalive_ms, 7200000);
	CU_ASSERT_EQUAL(g->max_connections, 1024);
	CU_ASSERT_EQUAL(g->max_connecting, 32);
	CU_ASSERT_EQUAL(g->queue_limit, 4 * 1024 * 1024);
	CU_ASSERT_EQUAL(g->write_behind_memory, 256ULL * 1024 * 1024);
	CU_ASSERT_EQUAL(g->read_ahead_memory, 256ULL * 1024 * 1024);
	CU_ASSERT_EQUAL(g->read_cache_memory, 256ULL * 1024 * 1024);
	CU_ASSERT_STRING_EQUAL(g->read_cache_dir, "");
	CU_ASSERT_STRING_EQUAL(g->state_dir, "");
	CU_ASSERT_EQUAL(g->read_cache_disk, 1024ULL * 1024 * 1024);
	CU_ASSERT_STRING_EQUAL(g->secrets, "");
	CU_ASSERT_EQUAL(g->log_level, POL_LOG_INFO);
	CU_ASSERT_EQUAL(g->tproxy_mark, 1);
	CU_ASSERT_EQUAL(g->tproxy_table, 100);
	CU_ASSERT_EQUAL(g->drain_timeout_ms, 60000);
	CU_ASSERT_EQUAL(g->multichannel, POL_MC_HIDE);
}

/* ---- good files ------------------------------------------------------- */

static void
test_minimal(void)
{
	struct pol_config *cfg = load_ok(minimal);
	const struct pol_global *g;
	struct pol_share s;

	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	g = pol_global(cfg);
	CU_ASSERT_STRING_EQUAL(pol_name(cfg), NAME);
	CU_ASSERT_EQUAL(g->n_listen, 1);
	CU_ASSERT_STRING_EQUAL(g->listen[0].host, "127.0.0.1");
	CU_ASSERT_EQUAL(g->listen[0].port, 4445);
	CU_ASSERT_EQUAL(g->listen[0].kind, POL_ADDR_IPV4);
	CU_ASSERT_STRING_EQUAL(g->upstream.host, "127.0.0.1");
	CU_ASSERT_EQUAL(g->upstream.port, 445);
	CU_ASSERT_EQUAL(g->mode, POL_MODE_FORWARD);
	expect_global_defaults(g);

	pol_share_lookup(cfg, "nas1", "backup", &s);
	CU_ASSERT_EQUAL(s.write_behind, POL_GATE_ALWAYS);
	CU_ASSERT_EQUAL(s.read_ahead, POL_GATE_LEASED);
	CU_ASSERT_EQUAL(s.coalesce_size, 1024 * 1024);
	pol_share_lookup(cfg, "nas1", "other", &s);
	expect_defaults(&s);
	pol_share_lookup(cfg, NULL, "backup", &s);
	CU_ASSERT_EQUAL(s.write_behind, POL_GATE_ALWAYS);
	pol_free(cfg);
}

/* The defaults, but for the one setting the shipped file sets on purpose
 * beside the required ones: state_dir, the unit's StateDirectory. */
static void
expect_shipped_globals(const struct pol_global *g)
{
	struct pol_global gg = *g;

	CU_ASSERT_STRING_EQUAL(gg.state_dir, "/var/lib/smbaccel");
	gg.state_dir[0] = '\0';
	expect_global_defaults(&gg);
}

/*
 * The shipped file loads, and so does the file with every "#name = value"
 * and "#[section]" line uncommented: its commented values are the real
 * built-in defaults.
 */
static void
test_deploy_file(void)
{
	struct pol_errors errs = { 0 };
	struct pol_config *cfg;
	struct pol_share s;
	char *text, *line, *out, *o;
	size_t i;

	cfg = pol_load_file("deploy/smbaccel.conf", &errs);
	if (cfg == NULL)
		pol_errors_print(&errs, stderr);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	expect_shipped_globals(pol_global(cfg));
	pol_share_lookup(cfg, "nas1", "backup", &s);
	expect_defaults(&s);
	pol_free(cfg);
	pol_errors_free(&errs);

	text = slurp("deploy/smbaccel.conf");
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	/* Every setting of the table is shown in the shipped file. */
	for (i = 0; pol_setting_name(i) != NULL; i++) {
		char pat[64];

		snprintf(pat, sizeof(pat), "\n#%s =", pol_setting_name(i));
		if (strstr(text, pat) == NULL) {
			snprintf(pat, sizeof(pat), "\n%s =",
			    pol_setting_name(i));
			if (strstr(text, pat) == NULL)
				fprintf(stderr, "\nnot in deploy/smbaccel.conf:"
				    " %s\n", pol_setting_name(i));
		}
		CU_ASSERT_PTR_NOT_NULL(strstr(text, pat));
	}
	out = o = malloc(strlen(text) + 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	for (line = text; *line != '\0'; ) {
		if (line[0] == '#' && (line[1] == '[' || line[1] == '_' ||
		    (line[1] >= 'a' && line[1] <= 'z')))
			line++;
		while (*line != '\0' && *line != '\n')
			*o++ = *line++;
		if (*line == '\n')
			*o++ = *line++;
	}
	*o = '\0';
	cfg = load_ok(out);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	expect_shipped_globals(pol_global(cfg));
	pol_share_lookup(cfg, "nas2", "other", &s);
	expect_defaults(&s);
	pol_share_lookup(cfg, "nas2", "backup", &s);
	CU_ASSERT_EQUAL(s.write_behind, POL_GATE_ALWAYS);
	pol_share_lookup(cfg, "NAS1", "Media", &s);
	CU_ASSERT_EQUAL(s.read_ahead, POL_GATE_ALWAYS);
	CU_ASSERT_EQUAL(s.read_ahead_max, 32 * 1024 * 1024);
	CU_ASSERT_EQUAL(s.write_behind, POL_GATE_LEASED);
	pol_free(cfg);
	free(out);
	free(text);
}

/* Every setting has an entry (".B name") in the man page. */
static void
test_man_page(void)
{
	char *text = slurp("docs/smbaccel.conf.5"), pat[64], example[2048];
	char *p, *end, *o;
	struct pol_config *cfg;
	size_t i, n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	for (i = 0; pol_setting_name(i) != NULL; i++) {
		snprintf(pat, sizeof(pat), "\n.B %s\n", pol_setting_name(i));
		if (strstr(text, pat) == NULL)
			fprintf(stderr, "\nnot in smbaccel.conf.5: %s\n",
			    pol_setting_name(i));
		CU_ASSERT_PTR_NOT_NULL(strstr(text, pat));
	}
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "stale data"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "may be\nacknowledged"));

	/* The examples (.nf ... .fi) are valid policy files. */
	for (p = text, n = 0; (p = strstr(p, "\n.nf\n")) != NULL; n++) {
		p += 5;
		CU_ASSERT_PTR_NOT_NULL_FATAL(end = strstr(p, "\n.fi\n"));
		for (o = example; p < end && o < example + sizeof(example) - 2;
		    p++) {
			if (p[0] == '\\' && p[1] == '-')
				continue;       /* roff "\-" is "-" */
			*o++ = *p;
		}
		*o++ = '\n';
		*o = '\0';
		cfg = load_ok(example);
		CU_ASSERT_PTR_NOT_NULL(cfg);
		pol_free(cfg);
	}
	CU_ASSERT_EQUAL(n, 2);
	free(text);
}

/* [//server/share] > [share NAME] > [global] > built-in, per setting. */
static void
test_precedence(void)
{
	static const char text[] =
	    G3
	    "coalesce_size = 2M\n"
	    "flush_idle = 100ms\n"
	    "[share data]\n"
	    "coalesce_size = 4M\n"
	    "read_ahead = off\n"
	    "[//nas1/data]\n"
	    "coalesce_size = 8M\n"
	    "write_behind = off\n"
	    "close_compound = no\n"
	    "[//nas1/logs]\n"
	    "flush_max_age = 10s\n";
	struct pol_config *cfg = load_ok(text);
	struct pol_share s;

	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	pol_share_lookup(cfg, "nas1", "data", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 8 << 20);       /* [//nas1/data] */
	CU_ASSERT_EQUAL(s.write_behind, POL_GATE_OFF);   /* [//nas1/data] */
	CU_ASSERT_EQUAL(s.read_ahead, POL_GATE_OFF);     /* [share data] */
	CU_ASSERT_EQUAL(s.flush_idle_ms, 100);           /* [global] */
	CU_ASSERT_EQUAL(s.flush_max_age_ms, 2000);       /* built-in */
	CU_ASSERT_FALSE(s.close_compound);               /* [//nas1/data] */

	pol_share_lookup(cfg, "nas2", "data", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 4 << 20);
	CU_ASSERT_TRUE(s.close_compound);
	CU_ASSERT_EQUAL(s.write_behind, POL_GATE_LEASED);
	CU_ASSERT_EQUAL(s.read_ahead, POL_GATE_OFF);

	pol_share_lookup(cfg, "nas1", "logs", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 2 << 20);
	CU_ASSERT_EQUAL(s.flush_max_age_ms, 10000);
	CU_ASSERT_EQUAL(s.read_ahead, POL_GATE_LEASED);

	pol_share_lookup(cfg, "nas2", "logs", &s);
	CU_ASSERT_EQUAL(s.flush_max_age_ms, 2000);

	pol_share_lookup(cfg, NULL, "data", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 4 << 20);
	pol_share_lookup(cfg, "nas1", NULL, &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 2 << 20);
	pol_free(cfg);
}

static void
test_case_insensitive(void)
{
	static const char text[] =
	    "[GLOBAL]\n"
	    "Listen = 127.0.0.1:4445\n"
	    "UPSTREAM = NAS1.example.com:445\n"
	    "Mode = Forward\n"
	    "[Share Data]\n"
	    "Write_Behind = ALWAYS\n"
	    "[//NAS1/Data]\n"
	    "read_ahead = Off\n"
	    "[//192.168.1.10/Data]\n"
	    "coalesce_size = 2m\n"
	    "[//2001:DB8::0:1/data]\n"
	    "coalesce_size = 4M\n"
	    "[\\\\fe80::1%eth0\\data]\n"
	    "coalesce_size = 256k\n";
	struct pol_config *cfg = load_ok(text);
	struct pol_share s;

	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	CU_ASSERT_STRING_EQUAL(pol_global(cfg)->upstream.host,
	    "NAS1.example.com");
	CU_ASSERT_EQUAL(pol_global(cfg)->upstream.kind, POL_ADDR_NAME);
	pol_share_lookup(cfg, "nas1", "DATA", &s);
	CU_ASSERT_EQUAL(s.write_behind, POL_GATE_ALWAYS);
	CU_ASSERT_EQUAL(s.read_ahead, POL_GATE_OFF);
	pol_share_lookup(cfg, "Nas1", "data", &s);
	CU_ASSERT_EQUAL(s.read_ahead, POL_GATE_OFF);
	pol_share_lookup(cfg, "nas10", "data", &s);
	CU_ASSERT_EQUAL(s.read_ahead, POL_GATE_LEASED);
	pol_share_lookup(cfg, "192.168.1.10", "data", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 2 << 20);
	/* IP literals compare in canonical form. */
	pol_share_lookup(cfg, "2001:db8::1", "Data", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 4 << 20);
	pol_share_lookup(cfg, "2001:0db8:0:0::1", "data", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 4 << 20);
	pol_share_lookup(cfg, "fe80::1%eth0", "data", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 256 << 10);
	/* smbclient //[2001:db8::1]/data sends \\[2001:db8::1]\data */
	pol_share_lookup(cfg, "[2001:DB8::1]", "data", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 4 << 20);
	pol_share_lookup(cfg, "[fe80::1%eth0]", "data", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 256 << 10);
	/* brackets are no part of a name or of an IPv4 address */
	pol_share_lookup(cfg, "[192.168.1.10]", "data", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 1 << 20);
	pol_share_lookup(cfg, "[2001:db8::1", "data", &s);
	CU_ASSERT_EQUAL(s.coalesce_size, 1 << 20);
	pol_free(cfg);
}

static void
test_modes_and_addresses(void)
{
	struct pol_config *cfg;
	const struct pol_global *g;

	cfg = load_ok("[global]\n"
	    "listen = 0.0.0.0:445, [::]:445 ,[fe80::1%eth0]:4445,"
	    "proxy-1.example:1\n"
	    "mode = tproxy\n"
	    "tproxy_mark = 0xFF00\n"
	    "tproxy_table = 252\n"
	    "max_connections = 0x10\n"
	    "idle_timeout = 5m\n"
	    "client_keepalive = 0\n"
	    "drain_timeout = 1h\n"
	    "secrets = /etc/smbaccel/secrets\n"
	    "log_level = debug\nmultichannel = relay\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	g = pol_global(cfg);
	CU_ASSERT_EQUAL(g->mode, POL_MODE_TPROXY);
	CU_ASSERT_EQUAL(g->n_listen, 4);
	CU_ASSERT_STRING_EQUAL(g->listen[0].host, "0.0.0.0");
	CU_ASSERT_EQUAL(g->listen[0].port, 445);
	CU_ASSERT_STRING_EQUAL(g->listen[1].host, "::");
	CU_ASSERT_EQUAL(g->listen[1].kind, POL_ADDR_IPV6);
	CU_ASSERT_STRING_EQUAL(g->listen[2].host, "fe80::1%eth0");
	CU_ASSERT_EQUAL(g->listen[2].port, 4445);
	CU_ASSERT_STRING_EQUAL(g->listen[3].host, "proxy-1.example");
	CU_ASSERT_EQUAL(g->listen[3].port, 1);
	CU_ASSERT_EQUAL(g->listen[3].kind, POL_ADDR_NAME);
	CU_ASSERT_STRING_EQUAL(g->upstream.host, "");
	CU_ASSERT_EQUAL(g->tproxy_mark, 0xff00);
	CU_ASSERT_EQUAL(g->tproxy_table, 252);
	CU_ASSERT_EQUAL(g->max_connections, 16);
	CU_ASSERT_EQUAL(g->idle_timeout_ms, 300000);
	CU_ASSERT_EQUAL(g->client_keepalive_ms, 0);
	CU_ASSERT_EQUAL(g->drain_timeout_ms, 3600000);
	CU_ASSERT_STRING_EQUAL(g->secrets, "/etc/smbaccel/secrets");
	CU_ASSERT_EQUAL(g->log_level, POL_LOG_DEBUG);
	CU_ASSERT_EQUAL(g->multichannel, POL_MC_RELAY);
	pol_free(cfg);

	/* transparent and tproxy do not need upstream */
	cfg = load_ok("[global]\nlisten = 127.0.0.1:4445\n"
	    "mode = transparent\n");
	CU_ASSERT_PTR_NOT_NULL(cfg);
	pol_free(cfg);
}

/* Indentation, CRLF, a BOM, inline comments, ':' as separator. */
static void
test_syntax_variants(void)
{
	static const char text[] =
	    "\xEF\xBB\xBF; policy\r\n"
	    "  [global]   ; the global section\r\n"
	    "\tlisten = 127.0.0.1:4445 ; inline\r\n"
	    "    upstream: 127.0.0.1:445\r\n"
	    "    # a comment\r\n"
	    "    connect_timeout = 250ms\r\n"
	    "[share  two words ]\r\n"
	    "    write_behind = off ; a comment that is long enough to go past "
	    "the line buffer of inih, which holds two hundred bytes, so it is "
	    "cut before inih sees the line; the setting still counts\r\n"
	    "    read_ahead = always";      /* no final newline */
	struct pol_config *cfg = load_ok(text);
	struct pol_share s;

	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	CU_ASSERT_EQUAL(pol_global(cfg)->upstream.port, 445);
	CU_ASSERT_EQUAL(pol_global(cfg)->connect_timeout_ms, 250);
	pol_share_lookup(cfg, "x", "Two Words", &s);
	CU_ASSERT_EQUAL(s.write_behind, POL_GATE_OFF);
	CU_ASSERT_EQUAL(s.read_ahead, POL_GATE_ALWAYS);
	pol_free(cfg);
}

static void
test_value_syntax(void)
{
	static const struct { const char *s; int rc; uint64_t v; } sizes[] = {
		{ "0", 0, 0 }, { "4096", 0, 4096 }, { "64K", 0, 65536 },
		{ "64k", 0, 65536 }, { "1M", 0, 1 << 20 },
		{ "2G", 0, 2ULL << 30 }, { "1T", 0, 1ULL << 40 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -1, ERANGE },
		{ "16777216T", -1, ERANGE }, { "16777215T", 0, UINT64_MAX -
		  (1ULL << 40) + 1 }, { "99999999999999999999K", -1, ERANGE },
		{ "99999999999999999999KB", -1, EINVAL },
		{ "", -1, EINVAL }, { "K", -1, EINVAL }, { "1KB", -1, EINVAL },
		{ "1.5M", -1, EINVAL }, { "-1", -1, EINVAL },
		{ " 1", -1, EINVAL }, { "1 M", -1, EINVAL },
		{ "0x10", -1, EINVAL },
	};
	static const struct { const char *s; int rc; uint64_t v; } durs[] = {
		{ "0", 0, 0 }, { "0s", 0, 0 }, { "200ms", 0, 200 },
		{ "5s", 0, 5000 }, { "2m", 0, 120000 }, { "1h", 0, 3600000 },
		{ "5", -1, EINVAL }, { "5S", -1, EINVAL },
		{ "5sec", -1, EINVAL }, { "ms", -1, EINVAL },
		{ "", -1, EINVAL }, { "1.5s", -1, EINVAL },
		{ "18446744073709551615ms", 0, UINT64_MAX },
		{ "18446744073709551616ms", -1, ERANGE },
		{ "5124095576030h", 0, 5124095576030ULL * 3600000 },
		{ "5124095576031h", -1, ERANGE },
		{ "99999999999999999999", -1, EINVAL },
	};
	static const struct { const char *s; int rc; bool v; } bools[] = {
		{ "yes", 0, true }, { "On", 0, true }, { "TRUE", 0, true },
		{ "1", 0, true }, { "no", 0, false }, { "off", 0, false },
		{ "False", 0, false }, { "0", 0, false }, { "y", -1, false },
		{ "", -1, false }, { "2", -1, false },
	};
	uint64_t v;
	bool b;
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		v = 12345;
		errno = 0;
		CU_ASSERT_EQUAL(pol_parse_size(sizes[i].s, &v), sizes[i].rc);
		if (sizes[i].rc == 0)
			CU_ASSERT_EQUAL(v, sizes[i].v);
		if (sizes[i].rc == -1)  /* then v is errno */
			CU_ASSERT_EQUAL(errno, (int)sizes[i].v);
	}
	for (i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
		v = 12345;
		errno = 0;
		CU_ASSERT_EQUAL(pol_parse_duration(durs[i].s, &v), durs[i].rc);
		if (durs[i].rc == 0)
			CU_ASSERT_EQUAL(v, durs[i].v);
		if (durs[i].rc == -1)
			CU_ASSERT_EQUAL(errno, (int)durs[i].v);
	}
	for (i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		CU_ASSERT_EQUAL(pol_parse_bool(bools[i].s, &b), bools[i].rc);
		if (bools[i].rc == 0)
			CU_ASSERT_EQUAL(b, bools[i].v);
	}
	CU_ASSERT_STRING_EQUAL(pol_gate_name(POL_GATE_ALWAYS), "always");
	CU_ASSERT_STRING_EQUAL(pol_mode_name(POL_MODE_TPROXY), "tproxy");
	CU_ASSERT_STRING_EQUAL(pol_log_level_name(POL_LOG_WARN), "warn");
}

/* ---- errors, each with its line --------------------------------------- */

static void
test_bad_values(void)
{
	static const struct { const char *line, *needle; } rows[] = {
		{ "connect_timeout = 5", "'5' is not a duration" },
		{ "connect_timeout = 5x", "not a duration" },
		{ "connect_timeout = 50ms",
		  "'50ms' is below the minimum 100ms" },
		{ "idle_timeout = 169h", "'169h' is above the maximum 168h" },
		{ "client_keepalive = 25h", "'25h' is above the maximum 9h" },
		{ "client_keepalive = 10h", "'10h' is above the maximum 9h" },
		{ "client_keepalive = soon", "'soon' is not a duration" },
		{ "flush_idle = 0", "below the minimum 1ms" },
		{ "coalesce_size = 16M", "'16M' is above the maximum 8M" },
		{ "coalesce_size = 32K", "'32K' is below the minimum 64K" },
		{ "coalesce_size = 1MB", "not a size" },
		/* past 2^64 - 1: too large, like any value past the
		 * maximum, not malformed */
		{ "coalesce_size = 99999999999999999999",
		  "'99999999999999999999' is above the maximum 8M" },
		{ "read_cache_memory = 99999999999T",
		  "'99999999999T' is above the maximum 1T" },
		{ "coalesce_size = 99999999999999999999Q", "not a size" },
		{ "idle_timeout = 9999999999999999h",
		  "'9999999999999999h' is above the maximum 168h" },
		{ "flush_idle = 99999999999999999999ms",
		  "above the maximum 1m" },
		{ "idle_timeout = 99999999999999999999x", "not a duration" },
		{ "max_connections = 99999999999999999999",
		  "'99999999999999999999' is above the maximum 1000000" },
		{ "tproxy_mark = 0x10000000000000000",
		  "'0x10000000000000000' is above the maximum 0xffffffff" },
		{ "tproxy_mark = 0x10000000000000000z", "not a number" },
		{ "queue_limit = 128K", "below the minimum 256K" },
		{ "max_connecting = -1", "'-1' is not a number" },
		{ "max_connecting = 1000001", "above the maximum 1000000" },
		{ "write_behind_per_open = 512K", "below the minimum 1M" },
		{ "read_ahead_max = 128M", "above the maximum 64M" },
		{ "write_behind = sometimes",
		  "'sometimes' is not one of off, leased, always" },
		{ "read_ahead = yes", "not one of" },
		{ "close_compound = maybe",
		  "'maybe' is not a boolean (on or off)" },
		{ "mode = reverse", "not one of forward, transparent, tproxy" },
		{ "log_level = verbose",
		  "not one of error, warn, info, debug" },
		{ "multichannel = off", "'off' is not one of hide, relay" },
		{ "mode =", "bad value for 'mode': empty value" },
		{ "max_connections = -1", "'-1' is not a number" },
		{ "max_connections = 1e3", "not a number" },
		{ "max_connections = 0", "'0' is below the minimum 1" },
		{ "tproxy_table = 253", "'253' is above the maximum 252" },
		{ "tproxy_table = 0", "below the minimum 1" },
		{ "tproxy_mark = 0xzz", "not a number" },
		{ "tproxy_mark = 0x100000000", "above the maximum 0xffffffff" },
		{ "tproxy_mark = 0", "below the minimum 0x1" },
		{ "control_socket = run/ctl.sock", "not an absolute path" },
		{ "control_socket = /run/smbaccel/a-very-long-directory-name/"
		  "another-very-long-directory-name/"
		  "and-finally-the-control-socket.sock",
		  "longer than 107 characters" },
		{ "control_socket =", "empty value" },
		{ "secrets = secrets.txt", "not an absolute path" },
		{ "drain_timeout = 0", "below the minimum 1s" },
		{ "write_behind_memory = 2T", "above the maximum 1T" },
		{ "read_cache = sometimes", "not a boolean" },
		{ "read_cache_file_max = 2G", "above the maximum 1G" },
		{ "read_cache_file_max = 4K", "below the minimum 64K" },
		{ "read_cache_memory = 512K", "below the minimum 1M" },
		{ "read_cache_dir = var/cache/smbaccel", "not an absolute path" },
		{ "state_dir = var/lib/smbaccel", "not an absolute path" },
		{ "read_cache_disk = 65T", "above the maximum 64T" },
		{ "proxy_lease = maybe",
		  "bad value for 'proxy_lease': 'maybe' is not a boolean (on "
		  "or off)" },
		{ "proxy_lease = onn", "not a boolean" },
		{ "proxy_lease =", "empty value" },
	};
	/* listen is replaced, so these are line 2 */
	static const struct { const char *value, *needle; } addrs[] = {
		{ "127.0.0.1", "missing port in '127.0.0.1'" },
		{ "127.0.0.1:0", "bad port '0'" },
		{ "127.0.0.1:65536", "bad port '65536'" },
		{ "127.0.0.1:44x", "bad port '44x'" },
		{ "127.0.0.1:", "bad port ''" },
		{ "256.1.1.1:80", "'256.1.1.1' is not an IPv4 address" },
		{ "1.2.3:80", "'1.2.3' is not an IPv4 address" },
		{ "::1:445", "must be in brackets" },
		{ "[::1]445", "missing port after ']'" },
		{ "[::1:445", "missing ']'" },
		{ "[1.2.3.4]:80", "in brackets is not an IPv6 address" },
		{ "[::g]:80", "'::g' is not an IPv6 address" },
		{ "[fe80::1%]:80", "bad zone" },
		{ ":445", "empty host" },
		{ "bad_host!:445", "invalid character '!'" },
		{ "-x:445", "not a valid host name" },
		{ "a:1,,b:2", "empty address in list" },
		{ "a:1,", "empty address in list" },
		{ "127.0.0.1:1, 127.0.0.1:1", "127.0.0.1:1 is listed twice" },
		{ "[::1]:1,[0::1]:1", "[::1]:1 is listed twice" },
		{ "a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9,a:10,a:11,a:12,a:13,"
		  "a:14,a:15,a:16,a:17", "more than 16 addresses" },
	};
	char text[1024];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(text, sizeof(text), G3 "%s\n", rows[i].line);
		CU_ASSERT(fails(text, 1, 4, rows[i].needle));
	}
	/* share-level ones in a share section too */
	CU_ASSERT(fails(G3 "\n[share x]\ncoalesce_size = 9M\n", 1, 6,
	    "bad value for 'coalesce_size': '9M' is above the maximum 8M"));
	/* fits the parser's line as given ("a,b"), not as written out
	 * ("a, b"): refused, or pol_dump would print a line the parser
	 * rejects (found by fuzz_policy) */
	{
		char *o = text + sprintf(text, "[global]\nlisten=");

		for (i = 0; i < 16; i++)
			o += sprintf(o, "%shostnam%02zu:1", i ? "," : "", i);
		sprintf(o, "\nupstream = 127.0.0.1:445\n");
		CU_ASSERT(strlen("listen=") + 16 * 11 + 15 <= 199);
		CU_ASSERT(fails(text, 1, 2, "value of 'listen' too long (206 "
		    "characters written out, at most 190)"));
	}
	for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		snprintf(text, sizeof(text), "[global]\nlisten = %s\n"
		    "upstream = 127.0.0.1:445\n", addrs[i].value);
		CU_ASSERT(fails(text, 1, 2, addrs[i].needle));
		snprintf(text, sizeof(text), "[global]\n"
		    "listen = 127.0.0.1:445\nupstream = %s\n", addrs[i].value);
		if (strchr(addrs[i].value, ',') == NULL)
			CU_ASSERT(fails(text, 1, 3, addrs[i].needle));
	}
}

static void
test_bad_keys(void)
{
	CU_ASSERT(fails(G3 "bogus = 1\n", 1, 4, "unknown setting 'bogus'"));
	CU_ASSERT(fails(G3 "write-behind = off\n", 1, 4,
	    "unknown setting 'write-behind'"));
	CU_ASSERT(fails(G3 "[share x]\nlisten = 127.0.0.1:1\n", 1, 5,
	    "'listen' is a global setting, not allowed in [share x]"));
	CU_ASSERT(fails(G3 "[//nas/x]\n\nmode = forward\n", 1, 6,
	    "'mode' is a global setting, not allowed in [//nas/x]"));
	CU_ASSERT(fails(G3 "mode = forward\nmode = transparent\n", 1, 5,
	    "'mode' already set on line 4"));
	CU_ASSERT(fails(G3 "[share x]\nread_ahead = off\nREAD_AHEAD = off\n",
	    1, 6, "'read_ahead' already set on line 5"));
	CU_ASSERT(fails("; comment\nmode = forward\n" G3, 1, 2,
	    "'mode' outside any section"));
	CU_ASSERT(fails(G3 "= off\n", 1, 4, "missing setting name"));
}

static void
test_bad_sections(void)
{
	CU_ASSERT(fails(G3 "[share]\nwrite_behind = off\n", 1, 4,
	    "[share] needs a share name"));
	CU_ASSERT(fails(G3 "[share   ]\n", 1, 4, "[share] needs a share name"));
	CU_ASSERT(fails(G3 "[//nas1]\n", 1, 4,
	    "[//nas1] needs a share name, as in [//server/share]"));
	CU_ASSERT(fails(G3 "[//nas1/]\n", 1, 4, "needs a share name"));
	CU_ASSERT(fails(G3 "[///share]\n", 1, 4, "needs a server name"));
	CU_ASSERT(fails(G3 "[//nas1/a/b]\n", 1, 4,
	    "invalid character '/' in share name 'a/b'"));
	CU_ASSERT(fails(G3 "[share a:b]\n", 1, 4, "invalid character ':'"));
	CU_ASSERT(fails(G3 "[//bad!host/x]\n", 1, 4, "bad server in section "
	    "header: invalid character '!'"));
	CU_ASSERT(fails(G3 "[//300.1.1.1/x]\n", 1, 4, "not an IPv4 address"));
	/* an IPv6 server in brackets, as in a URL: one error that says how
	 * to write it (two that hid it before), keys under it checked */
	CU_ASSERT(fails(G3 "[//[2001:db8::5]/docs]\nwrite_behind = off\n", 1,
	    4, "bad server in section header: write the IPv6 address "
	    "without brackets, as in [//2001:db8::5/docs]"));
	CU_ASSERT(fails(G3 "[\\\\[fe80::1%eth0]\\data] ; x\n", 1, 4,
	    "as in [\\\\fe80::1%eth0\\data]"));
	CU_ASSERT(fails(G3 "[//[::1]/docs]\nwrite_behind = maybe\n", 2, 5,
	    "not one of"));
	CU_ASSERT(fails(G3 "[//[::1]/a:b]\n", 2, 4,
	    "invalid character ':' in share name 'a:b'"));
	CU_ASSERT(fails(G3 "[//[nas1]/docs]\n", 1, 4,
	    "'nas1' in brackets is not an IPv6 address"));
	CU_ASSERT(fails(G3 "[shares]\nbogus_but_ignored = 1\n", 2, 4,
	    "unknown section [shares]: expected [global], [share NAME] or "
	    "[//server/share]"));
	CU_ASSERT(fails(G3 "[]\n", 1, 4, "unknown section []"));
	CU_ASSERT(fails(G3 "[share x\nwrite_behind = off\n", 1, 4,
	    "section header without closing ']'"));
	CU_ASSERT(fails(G3 "[share x] junk\n", 1, 4,
	    "unexpected text after [share x]"));
	/* keys under a malformed share header are still checked */
	CU_ASSERT(fails(G3 "[share]\nwrite_behind = maybe\n", 2, 5,
	    "not one of"));
	/* keys under an unknown header are checked too */
	CU_ASSERT(fails(G3 "[foo]\nwrite_behind = maybe\nxyz = 1\n", 3, 6,
	    "unknown setting 'xyz'"));
	CU_ASSERT(fails(G3 "[foo]\nwrite_behind = maybe\nxyz = 1\n", 3, 5,
	    "bad value for 'write_behind'"));
	/* a long server name is not truncated */
	CU_ASSERT(fails(G3 "[//a-rather-long-server-name.branch-office."
	    "example.com/share]\n[//A-RATHER-LONG-SERVER-NAME.branch-office."
	    "example.com/SHARE]\n", 1, 5, "duplicate section [//A-RATHER-LONG-"
	    "SERVER-NAME.branch-office.example.com/SHARE] (first on line 4)"));
}

/*
 * After a bad section header (no ']', unknown name) the settings below it
 * are still checked: each of their errors is reported too, with its line.
 */
static void
test_keys_after_bad_header(void)
{
	/* no ']': read as if the header ended the line */
	CU_ASSERT(fails(G3 "[//srv/share\ncoalesce_size = 16M\n", 2, 4,
	    "section header without closing ']'"));
	CU_ASSERT(fails(G3 "[//srv/share\ncoalesce_size = 16M\n", 2, 5,
	    "bad value for 'coalesce_size': '16M' is above the maximum 8M"));
	CU_ASSERT(fails(G3 "[share x\nread_ahead = maybe\n", 2, 5,
	    "bad value for 'read_ahead'"));
	CU_ASSERT(fails(G3 "[//srv/share\nlisten = 127.0.0.1:1\n", 2, 5,
	    "'listen' is a global setting, not allowed in [//srv/share]"));
	CU_ASSERT(fails(G3 "[//bad!host/x\n", 2, 4,
	    "bad server in section header"));
	/* an unclosed [global] is still the [global]: nothing missing */
	CU_ASSERT(fails("[global\nlisten = 127.0.0.1:4445\n"
	    "upstream = 127.0.0.1:445\n", 1, 1,
	    "section header without closing ']'"));
	/* one error for the header, not "unknown section" on top */
	CU_ASSERT(fails(G3 "[foo\nwrite_behind = maybe\n", 2, 4,
	    "section header without closing ']'"));
	CU_ASSERT(fails(G3 "[foo\nwrite_behind = maybe\n", 2, 5,
	    "bad value for 'write_behind'"));
	/* unknown section: settings of every scope checked */
	CU_ASSERT(fails(G3 "[foo]\ncoalesce_size = 16M\n", 2, 4,
	    "unknown section [foo]"));
	CU_ASSERT(fails(G3 "[foo]\ncoalesce_size = 16M\n", 2, 5,
	    "'16M' is above the maximum 8M"));
	CU_ASSERT(fails(G3 "[foo]\nlog_level = loud\n", 2, 5,
	    "bad value for 'log_level'"));
	CU_ASSERT(fails(G3 "[foo]\nkeytab = relative.keytab\n", 2, 5,
	    "not an absolute path"));
	CU_ASSERT(fails(G3 "[foo]\nwrite_behind = off\nwrite_behind = off\n",
	    2, 6, "'write_behind' already set on line 5"));
	/* good settings there add no error, and do not reach [global]'s */
	CU_ASSERT(fails(G3 "[foo]\nlog_level = debug\nmode = tproxy\n"
	    "write_behind = off\n", 1, 4, "unknown section [foo]"));
}

/* A bad value that holds '#' or ';' gets a hint about comments. */
static void
test_comment_hint(void)
{
	struct pol_errors errs = { 0 };
	struct pol_config *cfg;

	CU_ASSERT(fails(G3 "log_level = info # comment\n", 1, 4,
	    "bad value for 'log_level': 'info # comment' is not one of "
	    "error, warn, info, debug (a comment goes on a line of its own: "
	    "'#' starts one only at the start of a line; after a value, ' ;' "
	    "does)"));
	CU_ASSERT(fails(G3 "drain_timeout = 5s#x\n", 1, 4,
	    "'#' starts one only at the start of a line"));
	CU_ASSERT(fails(G3 "log_level = info;x\n", 1, 4,
	    "'info;x' is not one of error, warn, info, debug (';' starts a "
	    "comment after a value only with a blank before it)"));
	/* ' ;' is a comment: the value is good */
	cfg = load_ok(G3 "log_level = debug ; comment\n");
	CU_ASSERT_PTR_NOT_NULL(cfg);
	if (cfg != NULL)
		CU_ASSERT_EQUAL(pol_global(cfg)->log_level, POL_LOG_DEBUG);
	pol_free(cfg);
	/* no hint where there is nothing like a comment */
	cfg = pol_load_string(G3 "log_level = loud\n", NAME, &errs);
	CU_ASSERT_PTR_NULL(cfg);
	CU_ASSERT_EQUAL(errs.n, 1);
	CU_ASSERT(has_error(&errs, 4, "'loud' is not one of"));
	CU_ASSERT(!has_error(&errs, 4, "comment"));
	pol_errors_free(&errs);
}

/*
 * A path or name with '#' after a blank: a comment after the value, which
 * was taken as part of it (a control socket named "x.sock # note").
 */
static void
test_comment_in_string(void)
{
	static const char *const lines[] = {
		"control_socket = /run/x.sock # for smbaccelctl",
		"read_cache_dir = /var/cache/s # survives restarts",
		"secrets = /etc/smbaccel/secrets\t# root only",
		"keytab = /etc/smbaccel/k.keytab # from the DC",
		"upstream_congestion = bbr # or cubic",
	};
	const struct pol_global *g;
	struct pol_config *cfg;
	char text[512];
	size_t i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		snprintf(text, sizeof(text), G3 "\n%s\n", lines[i]);
		CU_ASSERT(fails(text, 1, 5, "has '#' after a blank (a comment "
		    "goes on a line of its own"));
	}
	CU_ASSERT(fails(G3 "control_socket = /run/x.sock # note\n", 1, 4,
	    "bad value for 'control_socket': '/run/x.sock # note' has '#' "
	    "after a blank (a comment goes on a line of its own"));
	/* '#' inside a name is a name; ' ;' is a comment, cut before */
	cfg = load_ok(G3 "read_cache_dir = /var/cache/a#b\n"
	    "control_socket = /run/x.sock ; for smbaccelctl\n"
	    "secrets = /etc/#s#\n");
	CU_ASSERT_PTR_NOT_NULL(cfg);
	if (cfg != NULL) {
		g = pol_global(cfg);
		CU_ASSERT_STRING_EQUAL(g->read_cache_dir, "/var/cache/a#b");
		CU_ASSERT_STRING_EQUAL(g->control_socket, "/run/x.sock");
		CU_ASSERT_STRING_EQUAL(g->secrets, "/etc/#s#");
	}
	pol_free(cfg);
}

static void
test_duplicate_sections(void)
{
	CU_ASSERT(fails(G3 "[global]\n", 1, 4,
	    "duplicate section [global] (first on line 1)"));
	CU_ASSERT(fails(G3 "[share Data]\n\n[share data]\n", 1, 6,
	    "duplicate section [share data] (first on line 4)"));
	CU_ASSERT(fails(G3 "[//nas/x]\n[//nas/y]\n[//NAS/X]\n", 1, 6,
	    "duplicate section [//NAS/X] (first on line 4)"));
	CU_ASSERT(fails(G3 "[//::1/x]\n[//0::1/x]\n", 1, 5,
	    "duplicate section [//0::1/x] (first on line 4)"));
	/* [share x] and [//nas/x] are different sections */
	pol_free(load_ok(G3 "[share x]\n[//nas/x]\n"));
	/* the duplicate's keys are still checked */
	CU_ASSERT(fails(G3 "[share x]\n[share x]\nread_ahead = never\n", 2, 6,
	    "not one of"));
}

static void
test_unparseable_lines(void)
{
	/* every line inih rejects is reported, not just the first */
	static const char text[] =
	    G3
	    "just some words\n"
	    "write_behind = off\n"
	    "mode forward\n"
	    "foo ; = bar\n";
	struct pol_errors errs = { 0 };
	struct pol_config *cfg;

	cfg = pol_load_string(text, NAME, &errs);
	CU_ASSERT_PTR_NULL(cfg);
	CU_ASSERT_EQUAL(errs.n, 3);
	CU_ASSERT(has_error(&errs, 4, "expected 'name = value'"));
	CU_ASSERT(has_error(&errs, 6, "expected 'name = value'"));
	CU_ASSERT(has_error(&errs, 7, "expected 'name = value'"));
	if (errs.n != 3)
		show("three unparseable lines", text, &errs);
	pol_errors_free(&errs);

	/* the last line, without a newline */
	CU_ASSERT(fails(G3 "oops", 1, 4, "expected 'name = value'"));
}

static void
test_long_line(void)
{
	char text[1024];
	char val[300];

	memset(val, 'a', sizeof(val) - 1);
	val[sizeof(val) - 1] = '\0';
	snprintf(text, sizeof(text), G3 "secrets = /%s\nmode = nope\n", val);
	/* the long line is one line: the next one is still line 5 */
	CU_ASSERT(fails(text, 2, 4, "line too long"));
	CU_ASSERT(fails(text, 2, 5, "not one of"));
}

static void
test_missing_required(void)
{
	CU_ASSERT(fails("# c\n[global]\nupstream = 127.0.0.1:445\n", 1, 2,
	    "missing required setting 'listen' in [global]"));
	CU_ASSERT(fails("[global]\nlisten = 127.0.0.1:4445\n", 1, 1,
	    "'upstream' is required with mode = forward"));
	CU_ASSERT(fails("[global]\nlisten = 127.0.0.1:4445\n"
	    "mode = forward\n", 1, 3,
	    "'upstream' is required with mode = forward"));
	CU_ASSERT(fails("[share x]\nwrite_behind = off\n", 1, 2,
	    "no [global] section"));
	CU_ASSERT(fails("", 1, 1, "no [global] section"));
	/* listen and upstream missing: both reported */
	CU_ASSERT(fails("\n[global]\nlog_level = info\n", 2, 2,
	    "missing required setting 'listen'"));
	CU_ASSERT(fails("\n[global]\nlog_level = info\n", 2, 2,
	    "'upstream' is required"));
}

/* One file, several kinds of error, all of them with their lines. */
static void
test_all_errors_collected(void)
{
	static const char text[] =
	    "mode = forward\n"                  /* 1 outside */
	    "[global]\n"                        /* 2 */
	    "listen = 127.0.0.1:99999\n"        /* 3 bad port */
	    "upstream = 127.0.0.1:445\n"        /* 4 */
	    "colesce_size = 1M\n"               /* 5 unknown */
	    "[share]\n"                         /* 6 no name */
	    "[share a]\n"                       /* 7 */
	    "tproxy_table = 7\n"                /* 8 scope */
	    "[share A]\n"                       /* 9 duplicate */
	    "garbage\n"                         /* 10 syntax */
	    "[nowhere]\n";                      /* 11 unknown section */
	struct pol_errors errs = { 0 };
	struct pol_config *cfg;

	cfg = pol_load_string(text, NAME, &errs);
	CU_ASSERT_PTR_NULL(cfg);
	CU_ASSERT_EQUAL(errs.n, 8);
	CU_ASSERT(has_error(&errs, 1, "outside any section"));
	CU_ASSERT(has_error(&errs, 3, "bad port '99999'"));
	CU_ASSERT(has_error(&errs, 5, "unknown setting 'colesce_size'"));
	CU_ASSERT(has_error(&errs, 6, "needs a share name"));
	CU_ASSERT(has_error(&errs, 8, "global setting"));
	CU_ASSERT(has_error(&errs, 9, "duplicate section"));
	CU_ASSERT(has_error(&errs, 10, "expected 'name = value'"));
	CU_ASSERT(has_error(&errs, 11, "unknown section"));
	if (errs.n != 8)
		show("eight errors", text, &errs);
	/* in file order */
	CU_ASSERT(errs.n > 0 && strncmp(errs.msg[0], NAME ":1: ", 8) == 0);
	pol_errors_free(&errs);
	CU_ASSERT_EQUAL(errs.n, 0);

	/* errs may be NULL */
	CU_ASSERT_PTR_NULL(pol_load_string(text, NAME, NULL));
	/* control characters in values are not echoed */
	CU_ASSERT(fails(G3 "mode = a\033[31mb\n", 1, 4, "'a?[31mb'"));
}

static void
check_many(const char *bad_line)
{
	struct pol_errors errs = { 0 };
	struct pol_config *cfg;
	size_t n = 10000, len = strlen(bad_line), i;
	char *text, *p;

	text = malloc(sizeof(G3) + n * (len + 1));
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	p = text + strlen(strcpy(text, G3));
	for (i = 0; i < n; i++) {
		memcpy(p, bad_line, len);
		p += len;
		*p++ = '\n';
	}
	*p = '\0';
	cfg = pol_load_string(text, NAME, &errs);
	CU_ASSERT_PTR_NULL(cfg);
	CU_ASSERT_EQUAL(errs.n, POL_ERRORS_MAX + 1);
	CU_ASSERT(has_error(&errs, 4, ""));
	CU_ASSERT(has_error(&errs, 103, ""));
	CU_ASSERT(has_error(&errs, 104, "too many errors"));
	CU_ASSERT(errs.n == POL_ERRORS_MAX + 1 &&
	    strstr(errs.msg[POL_ERRORS_MAX], "too many errors") != NULL);
	CU_ASSERT_EQUAL(errs.dropped, 1);   /* parsing stopped there */
	pol_errors_free(&errs);
	free(text);
}

/* 10,000 bad lines: 100 messages, a final "too many errors", then stop. */
static void
test_too_many_errors(void)
{
	struct pol_errors errs = { 0 };
	struct pol_config *cfg;
	int i;

	check_many("bogus = 1");
	check_many("not an ini line");
	check_many("[share]");

	/* several loads into one list stay bounded too */
	for (i = 0; i < 300; i++) {
		cfg = pol_load_string("[nope]\n", NAME, &errs);
		CU_ASSERT_PTR_NULL(cfg);
	}
	CU_ASSERT_EQUAL(errs.n, POL_ERRORS_MAX + 1);
	CU_ASSERT_EQUAL(errs.dropped, 600 - POL_ERRORS_MAX);
	pol_errors_free(&errs);
}

static void
test_files(void)
{
	struct pol_errors errs = { 0 };
	struct pol_config *cfg;
	char path[] = "/tmp/test_policy.XXXXXX", want[128];
	static const char nul[] = G3 "mode = for\0ward\n";
	FILE *fp;
	int fd;

	cfg = pol_load_file("/nonexistent/smbaccel.conf", &errs);
	CU_ASSERT_PTR_NULL(cfg);
	CU_ASSERT_EQUAL(errs.n, 1);
	CU_ASSERT(errs.n == 1 && strcmp(errs.msg[0], "/nonexistent/"
	    "smbaccel.conf:0: cannot open: No such file or directory") == 0);
	pol_errors_free(&errs);

	cfg = pol_load_file("/", &errs);
	CU_ASSERT_PTR_NULL(cfg);
	CU_ASSERT(errs.n == 1 && strcmp(errs.msg[0],
	    "/:0: cannot read: Is a directory") == 0);
	pol_errors_free(&errs);

	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd != -1);
	fp = fdopen(fd, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
	fwrite(nul, 1, sizeof(nul) - 1, fp);
	fclose(fp);
	cfg = pol_load_file(path, &errs);
	CU_ASSERT_PTR_NULL(cfg);
	snprintf(want, sizeof(want), "%s:4: line contains a NUL byte", path);
	CU_ASSERT(errs.n == 1 && strcmp(errs.msg[0], want) == 0);
	pol_errors_free(&errs);

	fp = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
	fputs(minimal, fp);
	fclose(fp);
	cfg = pol_load_file(path, &errs);
	CU_ASSERT_PTR_NOT_NULL(cfg);
	CU_ASSERT_EQUAL(errs.n, 0);
	CU_ASSERT(cfg != NULL && strcmp(pol_name(cfg), path) == 0);
	pol_free(cfg);

	/* too large */
	fp = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
	for (fd = 0; fd < POL_FILE_MAX / 8 + 1; fd++)
		fputs(";;;;;;;\n", fp);
	fclose(fp);
	cfg = pol_load_file(path, &errs);
	CU_ASSERT_PTR_NULL(cfg);
	CU_ASSERT(errs.n == 1 && strstr(errs.msg[0], ":0: file too large") !=
	    NULL);
	pol_errors_free(&errs);
	unlink(path);
}

static void
test_diff_reloadable(void)
{
	struct pol_errors errs = { 0 };
	struct pol_config *a, *b;

	a = load_ok(minimal);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);

	/* same settings, other order and share changes: reloadable */
	b = load_ok("[share backup]\nwrite_behind = off\n"
	    "[global]\nupstream = 10.0.0.1:445\nlisten = 127.0.0.1:4445\n"
	    "log_level = debug\nconnect_timeout = 1s\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(pol_diff_reloadable(a, b, &errs), 0);
	CU_ASSERT_EQUAL(errs.n, 0);
	pol_free(b);

	b = load_ok("[global]\n"                         /* 1 */
	    "listen = 127.0.0.1:4446, [::1]:4445\n"       /* 2 */
	    "mode = transparent\n"                        /* 3 */
	    "write_behind_memory = 1G\n"                  /* 4 */
	    "log_level = warn\n");                        /* 5 */
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(pol_diff_reloadable(a, b, &errs), 3);
	CU_ASSERT_EQUAL(errs.n, 3);
	CU_ASSERT(has_error(&errs, 2, "'listen' changed from '127.0.0.1:4445' "
	    "to '127.0.0.1:4446, [::1]:4445', which needs a restart"));
	CU_ASSERT(has_error(&errs, 3, "'mode' changed from 'forward' to "
	    "'transparent'"));
	CU_ASSERT(has_error(&errs, 4, "'write_behind_memory' changed from "
	    "'256M' to '1G'"));
	pol_errors_free(&errs);
	pol_free(b);

	b = load_ok("\n[global]\nlisten = 127.0.0.1:4445\n"
	    "upstream = 127.0.0.1:445\ncontrol_socket = /tmp/ctl\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(pol_diff_reloadable(a, b, &errs), 1);
	CU_ASSERT(has_error(&errs, 5, "'control_socket' changed from "
	    "'/run/smbaccel/control.sock' to '/tmp/ctl'"));
	pol_errors_free(&errs);
	pol_free(a);
	/* back to the default: reported at the [global] line */
	a = load_ok("\n\n" G3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(pol_diff_reloadable(b, a, &errs), 1);
	CU_ASSERT(has_error(&errs, 3, "'control_socket' changed from "
	    "'/tmp/ctl' to '/run/smbaccel/control.sock'"));
	pol_errors_free(&errs);
	pol_free(b);
	pol_free(a);
}

/* Strip comment lines and "; ..." annotations of a dump. */
static char *
dump_values(const struct pol_config *cfg)
{
	char *buf = NULL, *out, *o, *p, *semi;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	if (fp == NULL)
		return NULL;
	pol_dump(cfg, fp);
	fclose(fp);
	out = o = calloc(1, len + 1);
	for (p = strtok(buf, "\n"); p != NULL && out != NULL;
	    p = strtok(NULL, "\n")) {
		if (*p == ';')
			continue;
		if ((semi = strstr(p, " ;")) != NULL)
			*semi = '\0';
		o += sprintf(o, "%s\n", p);
	}
	free(buf);
	return out;
}

/* The dump is a policy file that loads back to the same settings. */
static void
test_dump_roundtrip(void)
{
	static const char text[] =
	    "[global]\n"
	    "listen = 127.0.0.1:4445, [2001:db8::1]:445\n"
	    "mode = transparent\n"
	    "tproxy_mark = 0x2a\n"
	    "secrets = /etc/smbaccel/secrets\n"
	    "flush_idle = 1500ms\n"
	    "[share data]\n"
	    "coalesce_size = 4M\n"
	    "[//10.0.0.1/data]\n"
	    "write_behind = always\n"
	    "upstream_congestion = cubic\n"
	    "upstream_sndbuf = 1M\n"
	    "[//nas/logs]\n"
	    "read_ahead_max = 100K\n"
	    "read_cache = off\n"
	    "read_cache_file_max = 8M\n"
	    "[//nas/other]\n"
	    "upstream_rcvbuf = 2M\n";
	struct pol_config *a, *b;
	char *va, *vb, *buf = NULL;
	size_t len = 0;
	FILE *fp;
	struct pol_share s;

	a = load_ok(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	fp = open_memstream(&buf, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
	pol_dump(a, fp);
	fclose(fp);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\ntproxy_mark           = 0x2a "));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "; line 4"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "; default"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\n[//10.0.0.1/data]\n"));
	b = load_ok(buf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	free(buf);

	va = dump_values(a);
	vb = dump_values(b);
	CU_ASSERT_PTR_NOT_NULL_FATAL(va);
	CU_ASSERT_PTR_NOT_NULL_FATAL(vb);
	CU_ASSERT_STRING_EQUAL(va, vb);
	CU_ASSERT_PTR_NOT_NULL(strstr(va, "\nflush_idle            = 1500ms"));
	CU_ASSERT_PTR_NOT_NULL(strstr(va, "\nread_ahead_max        = 100K"));
	pol_share_lookup(b, "10.0.0.1", "data", &s);
	CU_ASSERT_EQUAL(s.write_behind, POL_GATE_ALWAYS);
	CU_ASSERT_EQUAL(s.coalesce_size, 4 << 20);
	CU_ASSERT_EQUAL(s.flush_idle_ms, 1500);
	{
		struct pol_server v;

		CU_ASSERT_TRUE(pol_server_lookup(b, "10.0.0.1", &v));
		CU_ASSERT_STRING_EQUAL(v.upstream_congestion, "cubic");
		CU_ASSERT_EQUAL(v.upstream_sndbuf, 1 << 20);
		CU_ASSERT_TRUE(pol_server_lookup(b, "nas", &v));
		CU_ASSERT_STRING_EQUAL(v.upstream_congestion, "auto");
		CU_ASSERT_EQUAL(v.upstream_rcvbuf, 2 << 20);
		CU_ASSERT_FALSE(pol_server_lookup(b, "nas2", &v));
		CU_ASSERT_EQUAL(v.upstream_rcvbuf, 0);
	}
	CU_ASSERT_EQUAL(s.read_cache, true);
	pol_share_lookup(b, "nas", "logs", &s);
	CU_ASSERT_EQUAL(s.read_cache, false);
	CU_ASSERT_EQUAL(s.read_cache_file_max, 8 << 20);
	free(va);
	free(vb);
	pol_free(a);
	pol_free(b);
}

/* keytab: [global] or [//server/share], per server, distinct paths. */
static void
test_keytab(void)
{
	struct pol_config *cfg;
	struct pol_server sv;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;

	cfg = load_ok("[global]\nlisten = 127.0.0.1:4445\n"
	    "mode = transparent\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	CU_ASSERT_FALSE(pol_server_lookup(cfg, "nas1", &sv));
	CU_ASSERT_STRING_EQUAL(sv.keytab, "");
	CU_ASSERT_PTR_NULL(pol_keytab_path(cfg, 0));
	pol_free(cfg);

	cfg = load_ok("[global]\n"
	    "listen = 127.0.0.1:4445\n"
	    "mode = transparent\n"
	    "keytab = /etc/smbaccel/all.keytab\n"
	    "[//nas1.example.test/data]\n"
	    "keytab = /etc/smbaccel/nas1.keytab\n"
	    "[//NAS1.example.test/other]\n"
	    "keytab = /etc/smbaccel/nas1.keytab\n"
	    "[//10.0.0.2/x]\n"
	    "keytab = /etc/smbaccel/ten.keytab\n"
	    "[//nas3/y]\n"
	    "write_behind = always\n"
	    "[//nas4/z]\n"
	    "keytab = /etc/smbaccel/all.keytab\n"
	    "[share data]\n"
	    "write_behind = off\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	CU_ASSERT(pol_server_lookup(cfg, "nas1.example.test", &sv));
	CU_ASSERT_STRING_EQUAL(sv.keytab, "/etc/smbaccel/nas1.keytab");
	CU_ASSERT(pol_server_lookup(cfg, "Nas1.Example.Test", &sv));
	CU_ASSERT_STRING_EQUAL(sv.keytab, "/etc/smbaccel/nas1.keytab");
	CU_ASSERT(pol_server_lookup(cfg, "10.0.0.2", &sv));
	CU_ASSERT_STRING_EQUAL(sv.keytab, "/etc/smbaccel/ten.keytab");
	/* a server section that sets no per-server setting is not one */
	CU_ASSERT_FALSE(pol_server_lookup(cfg, "nas3", &sv));
	CU_ASSERT_STRING_EQUAL(sv.keytab, "/etc/smbaccel/all.keytab");
	CU_ASSERT_FALSE(pol_server_lookup(cfg, "nas2", &sv));
	CU_ASSERT_STRING_EQUAL(sv.keytab, "/etc/smbaccel/all.keytab");
	CU_ASSERT_FALSE(pol_server_lookup(cfg, NULL, &sv));
	CU_ASSERT_STRING_EQUAL(sv.keytab, "/etc/smbaccel/all.keytab");
	CU_ASSERT(pol_server_lookup(cfg, "nas4", &sv));
	/* distinct paths, [global] first */
	CU_ASSERT_STRING_EQUAL(pol_keytab_path(cfg, 0),
	    "/etc/smbaccel/all.keytab");
	CU_ASSERT_STRING_EQUAL(pol_keytab_path(cfg, 1),
	    "/etc/smbaccel/nas1.keytab");
	CU_ASSERT_STRING_EQUAL(pol_keytab_path(cfg, 2),
	    "/etc/smbaccel/ten.keytab");
	CU_ASSERT_PTR_NULL(pol_keytab_path(cfg, 3));
	/* the dump loads back to the same per-server settings */
	fp = open_memstream(&buf, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
	pol_dump(cfg, fp);
	fclose(fp);
	pol_free(cfg);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "keytab                = "
	    "/etc/smbaccel/all.keytab"));
	cfg = load_ok(buf);
	free(buf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	CU_ASSERT(pol_server_lookup(cfg, "nas1.example.test", &sv));
	CU_ASSERT_STRING_EQUAL(sv.keytab, "/etc/smbaccel/nas1.keytab");
	CU_ASSERT_FALSE(pol_server_lookup(cfg, "nas2", &sv));
	CU_ASSERT_STRING_EQUAL(sv.keytab, "/etc/smbaccel/all.keytab");
	pol_free(cfg);

	/* not in a [share NAME] section, absolute, one value per server */
	CU_ASSERT(fails("[global]\nlisten = 127.0.0.1:4445\n"
	    "mode = transparent\n[share data]\nkeytab = /k\n", 1, 5,
	    "'keytab' is a server setting, not allowed in [share data]"));
	CU_ASSERT(fails("[global]\nlisten = 127.0.0.1:4445\n"
	    "mode = transparent\nkeytab = k.keytab\n", 1, 4,
	    "not an absolute path"));
	CU_ASSERT(fails("[global]\nlisten = 127.0.0.1:4445\n"
	    "mode = transparent\n[//nas/a]\nkeytab = /a\n[//NAS/b]\n"
	    "keytab = /b\n", 1, 7, "'keytab = /b' for server NAS differs from "
	    "'/a' on line 5"));
	CU_ASSERT(fails("[global]\nlisten = 127.0.0.1:4445\n"
	    "mode = transparent\nkeytab = /a\nkeytab = /b\n", 1, 5,
	    "already set on line 4"));
	/* an empty value is "none", also over [global]'s */
	cfg = load_ok("[global]\nlisten = 127.0.0.1:4445\n"
	    "mode = transparent\nkeytab = /a\n[//nas/a]\nkeytab =\n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	CU_ASSERT(pol_server_lookup(cfg, "nas", &sv));
	CU_ASSERT_STRING_EQUAL(sv.keytab, "");
	CU_ASSERT_STRING_EQUAL(pol_keytab_path(cfg, 0), "/a");
	CU_ASSERT_PTR_NULL(pol_keytab_path(cfg, 1));
	pol_free(cfg);
}

/*
 * Server settings (the upstream socket): [global] for every server, a
 * [//server/share] section for its server whatever the share, never a
 * [share NAME] section; the sections of one server must agree.
 */
static void
test_server_settings(void)
{
	static const char text[] =
	    "[global]\n"
	    "listen = 127.0.0.1:4445\n"
	    "upstream = nas1.example:445\n"
	    "upstream_sndbuf = 4M\n"
	    "[//198.51.100.2/data]\n"
	    "upstream_congestion = cubic\n"
	    "[//198.51.100.2/logs]\n"
	    "upstream_congestion = cubic\n"
	    "upstream_rcvbuf = 2M\n"
	    "[//2001:DB8:0::1/x]\n"
	    "upstream_congestion = reno\n"
	    "[//nas1.example/y]\n"
	    "upstream_congestion = system\n"
	    "[share data]\n"
	    "write_behind = always\n";
	static const struct {
		const char *server;
		bool matched;
		const char *cc;
		uint64_t snd, rcv;
	} rows[] = {
		{ NULL, false, "auto", 4 << 20, 0 },
		{ "198.51.100.2", true, "cubic", 4 << 20, 2 << 20 },
		{ "203.0.113.9", false, "auto", 4 << 20, 0 },
		{ "2001:db8::1", true, "reno", 4 << 20, 0 },
		{ "2001:0db8:0:0::1", true, "reno", 4 << 20, 0 },
		{ "[2001:db8::1]", true, "reno", 4 << 20, 0 },
		{ "NAS1.example", true, "system", 4 << 20, 0 },
	};
	static const struct { const char *line; const char *needle; } bad[] = {
		{ "upstream_congestion = BBR", "'BBR' is not a congestion "
		    "control name" },
		{ "upstream_congestion = tcp-bbr", "not a congestion control" },
		{ "upstream_congestion = ", "empty value" },
		{ "upstream_congestion = abcdefghijklmnop",
		    "longer than 15 characters" },
		{ "upstream_sndbuf = 1G", "'1G' is above the maximum 512M" },
		{ "upstream_rcvbuf = -1", "not a size" },
		{ "upstream_rcvbuf = 1MB", "not a size" },
	};
	struct pol_config *cfg;
	struct pol_server v;
	const char *name, *section;
	char t[512];
	size_t i, n;
	int line;

	cfg = load_ok(G3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	CU_ASSERT_FALSE(pol_server_lookup(cfg, "10.0.0.1", &v));
	CU_ASSERT_STRING_EQUAL(v.upstream_congestion, "auto");
	CU_ASSERT_EQUAL(v.upstream_sndbuf, 0);
	CU_ASSERT_EQUAL(v.upstream_rcvbuf, 0);
	CU_ASSERT_FALSE(pol_server_setting_at(cfg, 0, &name, &section, &line,
	    &v));
	pol_free(cfg);

	cfg = load_ok(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		CU_ASSERT_EQUAL(pol_server_lookup(cfg, rows[i].server, &v),
		    rows[i].matched);
		CU_ASSERT_STRING_EQUAL(v.upstream_congestion, rows[i].cc);
		CU_ASSERT_EQUAL(v.upstream_sndbuf, rows[i].snd);
		CU_ASSERT_EQUAL(v.upstream_rcvbuf, rows[i].rcv);
	}
	/* every server setting given, in file order, with its line */
	for (n = 0; pol_server_setting_at(cfg, n, &name, &section, &line, &v);
	    n++) {
		if (n == 0) {
			CU_ASSERT_STRING_EQUAL(name, "upstream_sndbuf");
			CU_ASSERT_STRING_EQUAL(section, "global");
			CU_ASSERT_EQUAL(line, 4);
			CU_ASSERT_EQUAL(v.upstream_sndbuf, 4 << 20);
		} else if (n == 3) {
			CU_ASSERT_STRING_EQUAL(name, "upstream_rcvbuf");
			CU_ASSERT_STRING_EQUAL(section, "//198.51.100.2/logs");
			CU_ASSERT_EQUAL(line, 9);
			CU_ASSERT_EQUAL(v.upstream_rcvbuf, 2 << 20);
		} else if (n == 4) {
			CU_ASSERT_STRING_EQUAL(v.upstream_congestion, "reno");
			CU_ASSERT_EQUAL(line, 11);
		}
	}
	CU_ASSERT_EQUAL(n, 6);
	pol_free(cfg);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(t, sizeof(t), G3 "%s\n", bad[i].line);
		CU_ASSERT(fails(t, 1, 4, bad[i].needle));
		/* the same in a server's section */
		snprintf(t, sizeof(t), G3 "[//nas/s]\n%s\n", bad[i].line);
		CU_ASSERT(fails(t, 1, 5, bad[i].needle));
	}
	CU_ASSERT(fails(G3 "[share x]\nupstream_congestion = bbr\n", 1, 5,
	    "'upstream_congestion' is a server setting, not allowed in "
	    "[share x]: put it in [global] or a [//server/share] section"));
	/* one server, two values: refused at the second */
	CU_ASSERT(fails(G3 "[//nas/a]\nupstream_congestion = bbr\n"
	    "[//NAS/b]\nupstream_congestion = cubic\n", 1, 7,
	    "'upstream_congestion = cubic' for server NAS differs from 'bbr' "
	    "on line 5 ([//nas/a])"));
	CU_ASSERT(fails(G3 "[//10.0.0.1/a]\nupstream_sndbuf = 1M\n"
	    "[//10.0.0.01/b]\n[//10.0.0.1/c]\nupstream_sndbuf = 1024K\n"
	    "[//10.0.0.1/d]\nupstream_sndbuf = 2M\n", 0, 10,
	    "differs from '1M' on line 5"));
	/* the same value twice, and different servers, are fine */
	cfg = load_ok(G3 "[//nas/a]\nupstream_congestion = bbr\n"
	    "[//nas/b]\nupstream_congestion = bbr\n"
	    "[//nas2/a]\nupstream_congestion = reno\n");
	CU_ASSERT_PTR_NOT_NULL(cfg);
	pol_free(cfg);
}

/* proxy_lease (DESIGN.md section 6): a boolean per share, default on,
 * the most specific section wins, printed back as on/off. */
static void
test_proxy_lease(void)
{
	static const char text[] = G3
	    "proxy_lease = off\n"
	    "[share media]\n"
	    "proxy_lease = yes\n"
	    "[//nas1/media]\n"
	    "proxy_lease = 0\n"
	    "[share docs]\n"
	    "write_behind = always\n";
	struct pol_config *cfg, *again;
	struct pol_share s;
	char *v;

	cfg = load_ok(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	pol_share_lookup(cfg, "nas2", "other", &s);
	CU_ASSERT_FALSE(s.proxy_lease);         /* [global] default */
	pol_share_lookup(cfg, "nas2", "media", &s);
	CU_ASSERT_TRUE(s.proxy_lease);          /* [share media] */
	pol_share_lookup(cfg, "NAS1", "Media", &s);
	CU_ASSERT_FALSE(s.proxy_lease);         /* [//nas1/media] */
	pol_share_lookup(cfg, "nas2", "docs", &s);
	CU_ASSERT_FALSE(s.proxy_lease);         /* not set there: [global] */
	CU_ASSERT_EQUAL(s.write_behind, POL_GATE_ALWAYS);
	v = dump_values(cfg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	CU_ASSERT_PTR_NOT_NULL(strstr(v, "\nproxy_lease           = off"));
	CU_ASSERT_PTR_NOT_NULL(strstr(v, "\nproxy_lease           = on"));
	CU_ASSERT_PTR_NULL(strstr(v, "= yes"));
	free(v);
	/* the dump parses back to the same settings */
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *fp = open_memstream(&buf, &len);

		CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
		pol_dump(cfg, fp);
		fclose(fp);
		again = load_ok(buf);
		free(buf);
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(again);
	pol_share_lookup(again, "nas1", "media", &s);
	CU_ASSERT_FALSE(s.proxy_lease);
	pol_share_lookup(again, "x", "media", &s);
	CU_ASSERT_TRUE(s.proxy_lease);
	pol_free(again);
	pol_free(cfg);
	/* reloadable: a diff of only proxy_lease is no obstacle */
	{
		struct pol_errors errs = { 0 };
		struct pol_config *a = load_ok(G3), *b = load_ok(G3
		    "proxy_lease = off\n");

		CU_ASSERT_PTR_NOT_NULL_FATAL(a);
		CU_ASSERT_PTR_NOT_NULL_FATAL(b);
		CU_ASSERT_EQUAL(pol_diff_reloadable(a, b, &errs), 0);
		pol_errors_free(&errs);
		pol_free(a);
		pol_free(b);
	}
}

void
ut_register_policy(void)
{
	static const struct { const char *name; CU_TestFunc fn; } tests[] = {
		{ "minimal file", test_minimal },
		{ "deploy/smbaccel.conf", test_deploy_file },
		{ "man page lists every setting", test_man_page },
		{ "precedence", test_precedence },
		{ "case-insensitive names", test_case_insensitive },
		{ "modes and addresses", test_modes_and_addresses },
		{ "syntax variants", test_syntax_variants },
		{ "value syntax", test_value_syntax },
		{ "bad values", test_bad_values },
		{ "bad keys", test_bad_keys },
		{ "bad sections", test_bad_sections },
		{ "keys after a bad header", test_keys_after_bad_header },
		{ "comment hint", test_comment_hint },
		{ "comment in a path or name", test_comment_in_string },
		{ "duplicate sections", test_duplicate_sections },
		{ "unparseable lines", test_unparseable_lines },
		{ "long line", test_long_line },
		{ "missing required settings", test_missing_required },
		{ "all errors collected", test_all_errors_collected },
		{ "too many errors", test_too_many_errors },
		{ "files", test_files },
		{ "reload diff", test_diff_reloadable },
		{ "dump round trip", test_dump_roundtrip },
		{ "keytab per server", test_keytab },
		{ "server settings", test_server_settings },
		{ "proxy_lease", test_proxy_lease },
	};
	CU_pSuite suite;
	size_t i;

	if ((suite = CU_add_suite("policy", NULL, NULL)) == NULL)
		return;
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		CU_add_test(suite, tests[i].name, tests[i].fn);
}
