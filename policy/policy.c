/*
 * policy.c - the policy file (DESIGN.md section 8, docs/smbaccel.conf.5).
 *
 * One table, settings[], describes every setting; parsing, validation,
 * defaults, lookup, pol_dump() and pol_diff_reloadable() all walk it, so
 * adding a setting is one row plus a field in policy.h.
 *
 * libinih splits "name = value" lines, strips comments and reports lines
 * it cannot parse.  We feed it through ini_parse_stream() with our own
 * reader, one physical line per call, which buys us:
 *  - the line number of every line (Debian's inih is built without
 *    INI_HANDLER_LINENO), hence "FILE:LINE:" on every error, not just the
 *    first one inih returns;
 *  - section headers interpreted here, in full: inih would truncate a
 *    long "[//server/share]" to its 50-byte section buffer and report
 *    only the first bad header.  Headers reach inih as blank lines;
 *  - leading blanks stripped, so an indented "key = value" is not taken
 *    for a continuation of the previous value (INI_ALLOW_MULTILINE);
 *  - a line inih rejects is detected as a key line after which the
 *    handler was not called, so every such line is reported;
 *  - a line too long for inih's line buffer is reported instead of being
 *    split in two.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* asprintf, reallocarray, strndup */
#endif
#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "policy/policy.h"

#define KIB	((uint64_t)1024)
#define MIB	(KIB * 1024)
#define GIB	(MIB * 1024)
#define TIB	(GIB * 1024)
#define SEC	((uint64_t)1000)
#define MINUTE	(SEC * 60)
#define HOUR	(MINUTE * 60)

enum pol_type {
	T_BOOL,
	T_INT,          /* decimal or 0x hex */
	T_SIZE,         /* bytes, K/M/G/T suffix */
	T_DURATION,     /* milliseconds, ms/s/m/h suffix */
	T_ENUM,         /* index into names[] */
	T_STRING,       /* char array of the field's size */
	T_ADDR,         /* struct pol_addr */
	T_ADDRLIST,     /* struct pol_addr[max], count at off2 */
};

enum pol_scope {
	S_GLOBAL,       /* [global] only, field of struct pol_global */
	S_SHARE,        /* any section, field of struct pol_share */
	S_SERVER,       /* [global] and [//server/share], of struct pol_server */
};

#define F_RELOAD   0x01  /* a reload may change it */
#define F_REQUIRED 0x02  /* must be given in [global] */
#define F_HEX      0x04  /* printed in hex */
#define F_ABSPATH  0x08  /* string: an absolute path when not empty */
#define F_CCNAME   0x10  /* string: a congestion control name */

struct setting {
	const char *name;
	enum pol_type type;
	enum pol_scope scope;
	unsigned flags;
	const char *def;              /* default, in file syntax */
	uint64_t min, max;            /* value, string length or list length */
	const char *const *names;     /* T_ENUM, NULL-terminated */
	size_t off, size;             /* the field in pol_global / pol_share */
	size_t off2;                  /* T_ADDRLIST: the count field */
};

static const char *const mode_names[] =
    { "forward", "transparent", "tproxy", NULL };
static const char *const gate_names[] = { "off", "leased", "always", NULL };
static const char *const log_names[] =
    { "error", "warn", "info", "debug", NULL };
static const char *const multichannel_names[] = { "hide", "relay", NULL };

#define GLOB(f) .scope = S_GLOBAL, .off = offsetof(struct pol_global, f), \
	.size = sizeof(((struct pol_global *)NULL)->f)
#define SHARE(f) .scope = S_SHARE, .off = offsetof(struct pol_share, f), \
	.size = sizeof(((struct pol_share *)NULL)->f)
#define SERVER(f) .scope = S_SERVER, .off = offsetof(struct pol_server, f), \
	.size = sizeof(((struct pol_server *)NULL)->f)

/* Keep in step with docs/smbaccel.conf.5 and deploy/smbaccel.conf. */
static const struct setting settings[] = {
	{ .name = "listen", .type = T_ADDRLIST, GLOB(listen),
	  .off2 = offsetof(struct pol_global, n_listen),
	  .flags = F_REQUIRED, .def = "", .min = 1, .max = POL_LISTEN_MAX },
	{ .name = "upstream", .type = T_ADDR, GLOB(upstream),
	  .flags = F_RELOAD, .def = "" },
	{ .name = "mode", .type = T_ENUM, GLOB(mode), .names = mode_names,
	  .def = "forward" },
	{ .name = "control_socket", .type = T_STRING, GLOB(control_socket),
	  .flags = F_ABSPATH, .def = "/run/smbaccel/control.sock",
	  .min = 1, .max = POL_SOCKPATH_MAX },
	{ .name = "connect_timeout", .type = T_DURATION,
	  GLOB(connect_timeout_ms), .flags = F_RELOAD, .def = "15s",
	  .min = 100, .max = 5 * MINUTE },
	{ .name = "idle_timeout", .type = T_DURATION, GLOB(idle_timeout_ms),
	  .flags = F_RELOAD, .def = "0", .min = 0, .max = 168 * HOUR },
	{ .name = "server_timeout", .type = T_DURATION,
	  GLOB(server_timeout_ms), .flags = F_RELOAD, .def = "120s",
	  .min = 0, .max = 24 * HOUR },
	/* the keepalives: at most 9h, inside Linux's limit for
	 * TCP_KEEPIDLE (32767 s), which refuses anything above */
	{ .name = "client_keepalive", .type = T_DURATION,
	  GLOB(client_keepalive_ms), .flags = F_RELOAD, .def = "2h",
	  .min = 0, .max = 9 * HOUR },
	{ .name = "max_connections", .type = T_INT, GLOB(max_connections),
	  .flags = F_RELOAD, .def = "1024", .min = 1, .max = 1000000 },
	{ .name = "max_connecting", .type = T_INT, GLOB(max_connecting),
	  .flags = F_RELOAD, .def = "32", .min = 0, .max = 1000000 },
	{ .name = "queue_limit", .type = T_SIZE, GLOB(queue_limit),
	  .flags = F_RELOAD, .def = "4M", .min = 256 * KIB, .max = GIB },
	{ .name = "write_behind_memory", .type = T_SIZE,
	  GLOB(write_behind_memory), .def = "256M", .min = MIB, .max = TIB },
	{ .name = "read_ahead_memory", .type = T_SIZE,
	  GLOB(read_ahead_memory), .def = "256M", .min = MIB, .max = TIB },
	{ .name = "read_cache_memory", .type = T_SIZE,
	  GLOB(read_cache_memory), .def = "256M", .min = MIB, .max = TIB },
	{ .name = "read_cache_dir", .type = T_STRING, GLOB(read_cache_dir),
	  .flags = F_ABSPATH, .def = "", .min = 0, .max = POL_PATH_MAX - 32 },
	{ .name = "state_dir", .type = T_STRING, GLOB(state_dir),
	  .flags = F_ABSPATH, .def = "", .min = 0, .max = POL_PATH_MAX - 32 },
	{ .name = "read_cache_disk", .type = T_SIZE, GLOB(read_cache_disk),
	  .def = "1G", .min = MIB, .max = 64 * TIB },
	{ .name = "secrets", .type = T_STRING, GLOB(secrets),
	  .flags = F_RELOAD | F_ABSPATH, .def = "", .min = 0,
	  .max = POL_PATH_MAX },
	{ .name = "log_level", .type = T_ENUM, GLOB(log_level),
	  .names = log_names, .flags = F_RELOAD, .def = "info" },
	{ .name = "tproxy_mark", .type = T_INT, GLOB(tproxy_mark),
	  .flags = F_HEX, .def = "0x1", .min = 1, .max = UINT32_MAX },
	{ .name = "tproxy_table", .type = T_INT, GLOB(tproxy_table),
	  .def = "100", .min = 1, .max = 252 },
	{ .name = "drain_timeout", .type = T_DURATION, GLOB(drain_timeout_ms),
	  .flags = F_RELOAD, .def = "60s", .min = SEC, .max = HOUR },
	{ .name = "kerberos_expiry_margin", .type = T_DURATION,
	  GLOB(kerberos_expiry_margin_ms), .flags = F_RELOAD, .def = "5m",
	  .min = 0, .max = 12 * HOUR },
	{ .name = "multichannel", .type = T_ENUM, GLOB(multichannel),
	  .names = multichannel_names, .flags = F_RELOAD, .def = "hide" },

	{ .name = "write_behind", .type = T_ENUM, SHARE(write_behind),
	  .names = gate_names, .flags = F_RELOAD, .def = "leased" },
	{ .name = "read_ahead", .type = T_ENUM, SHARE(read_ahead),
	  .names = gate_names, .flags = F_RELOAD, .def = "leased" },
	{ .name = "coalesce_size", .type = T_SIZE, SHARE(coalesce_size),
	  .flags = F_RELOAD, .def = "1M", .min = 64 * KIB, .max = 8 * MIB },
	{ .name = "flush_idle", .type = T_DURATION, SHARE(flush_idle_ms),
	  .flags = F_RELOAD, .def = "200ms", .min = 1, .max = 60 * SEC },
	{ .name = "flush_max_age", .type = T_DURATION, SHARE(flush_max_age_ms),
	  .flags = F_RELOAD, .def = "2s", .min = 1, .max = 10 * MINUTE },
	{ .name = "write_behind_per_open", .type = T_SIZE,
	  SHARE(write_behind_per_open), .flags = F_RELOAD, .def = "64M",
	  .min = MIB, .max = 16 * GIB },
	{ .name = "read_ahead_max", .type = T_SIZE, SHARE(read_ahead_max),
	  .flags = F_RELOAD, .def = "8M", .min = 64 * KIB, .max = 64 * MIB },
	{ .name = "close_compound", .type = T_BOOL, SHARE(close_compound),
	  .flags = F_RELOAD, .def = "yes" },
	{ .name = "read_cache", .type = T_BOOL, SHARE(read_cache),
	  .flags = F_RELOAD, .def = "on" },
	{ .name = "read_cache_file_max", .type = T_SIZE,
	  SHARE(read_cache_file_max), .flags = F_RELOAD, .def = "64M",
	  .min = 64 * KIB, .max = GIB },
	{ .name = "proxy_lease", .type = T_BOOL, SHARE(proxy_lease),
	  .flags = F_RELOAD, .def = "on" },

	/* Kerberos keys of the server (proxy/auth/keytab.c) */
	{ .name = "keytab", .type = T_STRING, SERVER(keytab),
	  .flags = F_RELOAD | F_ABSPATH, .def = "", .min = 0,
	  .max = POL_PATH_MAX },
	/* the upstream socket (proxy/upstream.c); 0 sizes: autotuning */
	{ .name = "upstream_congestion", .type = T_STRING,
	  SERVER(upstream_congestion), .flags = F_RELOAD | F_CCNAME,
	  .def = "auto", .min = 1, .max = POL_CC_MAX },
	{ .name = "upstream_sndbuf", .type = T_SIZE, SERVER(upstream_sndbuf),
	  .flags = F_RELOAD, .def = "0", .min = 0, .max = 512 * MIB },
	{ .name = "upstream_rcvbuf", .type = T_SIZE, SERVER(upstream_rcvbuf),
	  .flags = F_RELOAD, .def = "0", .min = 0, .max = 512 * MIB },
	{ .name = "upstream_keepalive", .type = T_DURATION,
	  SERVER(upstream_keepalive_ms), .flags = F_RELOAD, .def = "5m",
	  .min = 0, .max = 9 * HOUR },
};

#define NSET	(sizeof(settings) / sizeof(settings[0]))
_Static_assert(NSET <= 64, "settings are tracked in a 64-bit mask");

enum sect_kind {
	SK_GLOBAL,
	SK_SHARE,       /* [share NAME] */
	SK_UNC,         /* [//server/share] */
	SK_BAD,         /* malformed share header: keys checked, no match */
	SK_UNKNOWN,     /* unknown section: keys of any scope checked, into
	                 * scratch, no match */
};

struct section {
	enum sect_kind kind;
	bool dup;                 /* duplicate: reported, never matched */
	char *server;             /* SK_UNC; IP literals in canonical form */
	char *share;              /* SK_SHARE, SK_UNC */
	char *label;              /* the header text, for messages */
	int line;
	struct pol_share vals;    /* share-level values given here */
	struct pol_server svals;  /* server-level values given here */
	uint64_t seen;            /* bit i: settings[i] given here */
	uint64_t set;             /* ... and its value is valid */
	int key_line[NSET];       /* where seen */
};

struct pol_config {
	char *name;
	struct pol_global global;      /* defaults, then [global] */
	struct pol_share share_def;    /* built-in share defaults */
	struct pol_server server_def;  /* built-in server defaults */
	struct section *sect;
	size_t nsect, capsect;
	int gsect;                     /* index of [global], -1 if none */
};

#define CUR_NONE	(-1)   /* before the first section header */
#define CUR_IGNORE	(-2)   /* after a header we could not record (stop) */

struct parser {
	struct pol_config *cfg;
	struct pol_errors *errs;
	const char *name;
	const char *pos, *end;    /* text still to read */
	int line;                 /* line last handed to inih */
	bool key_line;            /* ... was a "name = value" candidate */
	bool handled;             /* ... and inih called the handler for it */
	int first_syntax;         /* first line inih rejected, 0 if none */
	int cur;                  /* section index or CUR_* */
	size_t nerr;
	bool stop;                /* stop reading: too many errors, ENOMEM */
	struct pol_global scratch; /* global values given in SK_UNKNOWN */
};

/* ---- errors ----------------------------------------------------------- */

static void errs_vadd(struct pol_errors *, const char *, int, const char *,
    va_list) __attribute__((format(printf, 4, 0)));
static void errs_add(struct pol_errors *, const char *, int, const char *,
    ...) __attribute__((format(printf, 4, 5)));
static void perr(struct parser *, int, const char *, ...)
    __attribute__((format(printf, 3, 4)));

/* Messages quote file contents; keep control characters off terminals. */
static void
sanitize(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

static void
errs_vadd(struct pol_errors *errs, const char *file, int line,
    const char *fmt, va_list ap)
{
	char body[1024];
	char *m;

	if (errs == NULL)
		return;
	if (errs->n > POL_ERRORS_MAX) {
		errs->dropped++;
		return;
	}
	if (errs->n == POL_ERRORS_MAX) {
		errs->dropped++;
		if (asprintf(&m, "%s:%d: too many errors, giving up", file,
		    line) == -1)
			return;
		sanitize(m);
		errs->msg[errs->n++] = m;
		return;
	}
	vsnprintf(body, sizeof(body), fmt, ap);
	if (asprintf(&m, "%s:%d: %s", file, line, body) == -1) {
		errs->dropped++;
		return;
	}
	sanitize(m);
	errs->msg[errs->n++] = m;
}

static void
errs_add(struct pol_errors *errs, const char *file, int line,
    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errs_vadd(errs, file, line, fmt, ap);
	va_end(ap);
}

/* A parse error; reading stops once the list is full. */
static void
perr(struct parser *ps, int line, const char *fmt, ...)
{
	va_list ap;

	ps->nerr++;
	va_start(ap, fmt);
	errs_vadd(ps->errs, ps->name, line, fmt, ap);
	va_end(ap);
	if (ps->nerr > POL_ERRORS_MAX)
		ps->stop = true;
}

void
pol_errors_free(struct pol_errors *errs)
{
	size_t i;

	if (errs == NULL)
		return;
	for (i = 0; i < errs->n; i++) {
		free(errs->msg[i]); errs->msg[i] = NULL;
	}
	errs->n = 0;
	errs->dropped = 0;
}

void
pol_errors_print_prefixed(const struct pol_errors *errs, FILE *fp,
    const char *prefix)
{
	size_t i;

	for (i = 0; i < errs->n; i++)
		fprintf(fp, "%s%s\n", prefix, errs->msg[i]);
	if (errs->dropped > 0)
		fprintf(fp, "%s(%zu more errors not shown)\n", prefix,
		    errs->dropped);
}

void
pol_errors_print(const struct pol_errors *errs, FILE *fp)
{
	pol_errors_print_prefixed(errs, fp, "");
}

/* ---- value syntax ----------------------------------------------------- */

/*
 * Decimal digits, at least one, no sign or blanks; *end past the last.
 * A number past UINT64_MAX is still read to its end, as UINT64_MAX with
 * *big set, so that what follows it is checked like after any number.
 */
static int
parse_dec(const char *s, uint64_t *v, const char **end, bool *big)
{
	uint64_t n = 0, d;

	*big = false;
	if (!isdigit((unsigned char)*s))
		return -1;
	for (; isdigit((unsigned char)*s); s++) {
		d = (uint64_t)(*s - '0');
		if (*big || n > (UINT64_MAX - d) / 10) {
			*big = true;
			n = UINT64_MAX;
		} else
			n = n * 10 + d;
	}
	*v = n;
	*end = s;
	return 0;
}

/*
 * An integer: decimal, or hex with 0x.  -1 with errno EINVAL when it is
 * no number, ERANGE when it is one past UINT64_MAX.
 */
static int
parse_int(const char *s, uint64_t *v)
{
	const char *end;
	uint64_t n = 0;
	bool big = false;
	int d;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		if (*s == '\0' || s[strspn(s, "0123456789abcdefABCDEF")] !=
		    '\0') {
			errno = EINVAL;
			return -1;
		}
		for (; *s != '\0'; s++) {
			if (n > UINT64_MAX >> 4)
				big = true;
			d = isdigit((unsigned char)*s) ? *s - '0' :
			    tolower((unsigned char)*s) - 'a' + 10;
			n = n << 4 | (uint64_t)d;
		}
	} else if (parse_dec(s, &n, &end, &big) == -1 || *end != '\0') {
		errno = EINVAL;
		return -1;
	}
	if (big) {
		errno = ERANGE;
		return -1;
	}
	*v = n;
	return 0;
}

int
pol_parse_size(const char *s, uint64_t *bytes)
{
	const char *p;
	uint64_t v, mult;
	bool big;

	if (parse_dec(s, &v, &p, &big) == -1)
		goto bad;
	switch (*p) {
	case '\0': mult = 1; break;
	case 'k': case 'K': mult = KIB; p++; break;
	case 'm': case 'M': mult = MIB; p++; break;
	case 'g': case 'G': mult = GIB; p++; break;
	case 't': case 'T': mult = TIB; p++; break;
	default: goto bad;
	}
	if (*p != '\0')
		goto bad;
	if (big || v > UINT64_MAX / mult) {
		errno = ERANGE;
		return -1;
	}
	*bytes = v * mult;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int
pol_parse_duration(const char *s, uint64_t *ms)
{
	const char *p;
	uint64_t v, mult;
	bool big;

	if (parse_dec(s, &v, &p, &big) == -1)
		goto bad;
	if (strcmp(p, "ms") == 0)
		mult = 1;
	else if (strcmp(p, "s") == 0)
		mult = SEC;
	else if (strcmp(p, "m") == 0)
		mult = MINUTE;
	else if (strcmp(p, "h") == 0)
		mult = HOUR;
	else if (*p == '\0' && v == 0)
		mult = 1;       /* "0" is 0 in every unit */
	else
		goto bad;
	if (big || v > UINT64_MAX / mult) {
		errno = ERANGE;
		return -1;
	}
	*ms = v * mult;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int
pol_parse_bool(const char *s, bool *b)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*b = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*b = false;
			return 0;
		}
	}
	return -1;
}

static void
fmt_size(uint64_t v, char *buf, size_t sz)
{
	if (v != 0 && v % TIB == 0)
		snprintf(buf, sz, "%lluT", (unsigned long long)(v / TIB));
	else if (v != 0 && v % GIB == 0)
		snprintf(buf, sz, "%lluG", (unsigned long long)(v / GIB));
	else if (v != 0 && v % MIB == 0)
		snprintf(buf, sz, "%lluM", (unsigned long long)(v / MIB));
	else if (v != 0 && v % KIB == 0)
		snprintf(buf, sz, "%lluK", (unsigned long long)(v / KIB));
	else
		snprintf(buf, sz, "%llu", (unsigned long long)v);
}

static void
fmt_duration(uint64_t v, char *buf, size_t sz)
{
	if (v == 0)
		snprintf(buf, sz, "0");
	else if (v % HOUR == 0)
		snprintf(buf, sz, "%lluh", (unsigned long long)(v / HOUR));
	else if (v % MINUTE == 0)
		snprintf(buf, sz, "%llum", (unsigned long long)(v / MINUTE));
	else if (v % SEC == 0)
		snprintf(buf, sz, "%llus", (unsigned long long)(v / SEC));
	else
		snprintf(buf, sz, "%llums", (unsigned long long)v);
}

#define ZONE_CHARS "abcdefghijklmnopqrstuvwxyz" \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"

/*
 * A host: an IPv4 literal, an IPv6 literal (optionally %zone), or a name.
 * Anything made of digits and dots must be a valid IPv4 address, anything
 * with a colon a valid IPv6 address.  canon receives the literal in
 * inet_ntop form (so that "2001:DB8::0:1" matches "2001:db8::1") or the
 * name as written.
 */
static int
check_host(const char *h, char *canon, size_t canonsz,
    enum pol_addr_kind *kind, char *why, size_t whysz)
{
	char tmp[POL_HOST_MAX + 1], ntop[INET6_ADDRSTRLEN];
	struct in6_addr a6;
	struct in_addr a4;
	size_t len = strlen(h);
	const char *zone = NULL, *p;
	char *pct;

	if (len == 0) {
		snprintf(why, whysz, "empty host");
		return -1;
	}
	if (len > POL_HOST_MAX || len >= canonsz) {
		snprintf(why, whysz, "host '%.40s...' is too long", h);
		return -1;
	}
	if (strchr(h, ':') != NULL) {
		memcpy(tmp, h, len + 1);
		if ((pct = strchr(tmp, '%')) != NULL) {
			*pct = '\0';
			zone = pct + 1;
			if (*zone == '\0' || zone[strspn(zone, ZONE_CHARS)] !=
			    '\0') {
				snprintf(why, whysz, "bad zone in '%s'", h);
				return -1;
			}
		}
		if (inet_pton(AF_INET6, tmp, &a6) != 1 ||
		    inet_ntop(AF_INET6, &a6, ntop, sizeof(ntop)) == NULL) {
			snprintf(why, whysz, "'%s' is not an IPv6 address", h);
			return -1;
		}
		snprintf(canon, canonsz, "%s%s%s", ntop, zone ? "%" : "",
		    zone ? zone : "");
		*kind = POL_ADDR_IPV6;
		return 0;
	}
	if (strspn(h, "0123456789.") == len) {
		if (inet_pton(AF_INET, h, &a4) != 1 ||
		    inet_ntop(AF_INET, &a4, ntop, sizeof(ntop)) == NULL) {
			snprintf(why, whysz, "'%s' is not an IPv4 address", h);
			return -1;
		}
		snprintf(canon, canonsz, "%s", ntop);
		*kind = POL_ADDR_IPV4;
		return 0;
	}
	for (p = h; *p != '\0'; p++) {
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' &&
		    *p != '_') {
			snprintf(why, whysz, "invalid character '%c' in host "
			    "name '%s'", *p, h);
			return -1;
		}
	}
	if (h[0] == '.' || h[0] == '-' || strstr(h, "..") != NULL) {
		snprintf(why, whysz, "'%s' is not a valid host name", h);
		return -1;
	}
	memcpy(canon, h, len + 1);
	*kind = POL_ADDR_NAME;
	return 0;
}

/* host:port, IPv4:port or [IPv6]:port; the port 1..65535 is required. */
static int
parse_addr(const char *s, struct pol_addr *out, char *why, size_t whysz)
{
	char host[POL_HOST_MAX + 1];
	const char *port, *end, *close, *colon;
	uint64_t v;
	size_t hlen;
	bool bracketed = *s == '[', big;

	if (bracketed) {
		if ((close = strchr(s, ']')) == NULL) {
			snprintf(why, whysz, "missing ']' in '%s'", s);
			return -1;
		}
		if (close[1] != ':') {
			snprintf(why, whysz, "missing port after ']' in '%s' "
			    "(expected [IPv6]:port)", s);
			return -1;
		}
		s++;
		hlen = (size_t)(close - s);
		port = close + 2;
	} else {
		if ((colon = strrchr(s, ':')) == NULL) {
			snprintf(why, whysz, "missing port in '%s' (expected "
			    "host:port)", s);
			return -1;
		}
		hlen = (size_t)(colon - s);
		if (memchr(s, ':', hlen) != NULL) {
			snprintf(why, whysz, "IPv6 address in '%s' must be in "
			    "brackets, as in [::1]:445", s);
			return -1;
		}
		port = colon + 1;
	}
	if (hlen > POL_HOST_MAX) {
		snprintf(why, whysz, "host in '%.40s...' is too long", s);
		return -1;
	}
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	if (check_host(host, out->host, sizeof(out->host), &out->kind, why,
	    whysz) == -1)
		return -1;
	if (bracketed && out->kind != POL_ADDR_IPV6) {
		snprintf(why, whysz, "'%s' in brackets is not an IPv6 address",
		    host);
		return -1;
	}
	if (parse_dec(port, &v, &end, &big) == -1 || *end != '\0' || v < 1 ||
	    v > 65535) {
		snprintf(why, whysz, "bad port '%s' (expected 1..65535)", port);
		return -1;
	}
	out->port = (uint16_t)v;
	return 0;
}

static void
fmt_addr(const struct pol_addr *a, char *buf, size_t sz)
{
	if (a->host[0] == '\0')
		snprintf(buf, sz, "(none)");
	else if (a->kind == POL_ADDR_IPV6)
		snprintf(buf, sz, "[%s]:%u", a->host, a->port);
	else
		snprintf(buf, sz, "%s:%u", a->host, a->port);
}

static bool
addr_equal(const struct pol_addr *a, const struct pol_addr *b)
{
	return a->port == b->port && strcasecmp(a->host, b->host) == 0;
}

/* ---- table-driven values ---------------------------------------------- */

static void *
field(void *base, const struct setting *st)
{
	return (char *)base + st->off;
}

static const void *
cfield(const void *base, const struct setting *st)
{
	return (const char *)base + st->off;
}

/* Integers, enums and bools live in fields of 1, 2, 4 or 8 bytes. */
static void
put_num(void *p, size_t size, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	switch (size) {
	case 1: memcpy(p, &u8, 1); break;
	case 2: memcpy(p, &u16, 2); break;
	case 4: memcpy(p, &u32, 4); break;
	default: memcpy(p, &v, 8); break;
	}
}

static uint64_t
get_num(const void *p, size_t size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1: memcpy(&u8, p, 1); return u8;
	case 2: memcpy(&u16, p, 2); return u16;
	case 4: memcpy(&u32, p, 4); return u32;
	default: memcpy(&u64, p, 8); return u64;
	}
}

/* Entries of a T_ADDRLIST. */
static size_t
list_len(const void *base, const struct setting *st)
{
	size_t n;

	memcpy(&n, (const char *)base + st->off2, sizeof(n));
	return n;
}

static void
fmt_num(const struct setting *st, uint64_t v, char *buf, size_t sz)
{
	switch (st->type) {
	case T_SIZE:
		fmt_size(v, buf, sz);
		break;
	case T_DURATION:
		fmt_duration(v, buf, sz);
		break;
	case T_BOOL:
		snprintf(buf, sz, "%s", v ? "on" : "off");
		break;
	case T_ENUM:
		snprintf(buf, sz, "%s", st->names[v]);
		break;
	default:
		snprintf(buf, sz, (st->flags & F_HEX) ? "0x%llx" : "%llu",
		    (unsigned long long)v);
		break;
	}
}

/* Longest line (comment stripped) the parser takes: libinih's
 * INI_MAX_LINE buffer less its terminating NUL. */
#define DUMP_LINE_MAX (INI_MAX_LINE - 1)

/* The value of setting st in base, in file syntax; "" for an unset string. */
static void
fmt_value(const struct setting *st, const void *base, char *buf, size_t sz)
{
	const struct pol_addr *a = cfield(base, st);
	size_t i, n, used;

	switch (st->type) {
	case T_STRING:
		snprintf(buf, sz, "%s", (const char *)cfield(base, st));
		break;
	case T_ADDR:
		fmt_addr(a, buf, sz);
		break;
	case T_ADDRLIST:
		n = list_len(base, st);
		buf[0] = '\0';
		for (i = 0; i < n; i++) {
			used = strlen(buf);
			if (i > 0 && used + 2 < sz) {
				memcpy(buf + used, ", ", 3);
				used += 2;
			}
			fmt_addr(&a[i], buf + used, sz - used);
		}
		break;
	default:
		fmt_num(st, get_num(cfield(base, st), st->size), buf, sz);
		break;
	}
}

static bool
value_equal(const struct setting *st, const void *a, const void *b)
{
	const struct pol_addr *la = cfield(a, st), *lb = cfield(b, st);
	size_t i, j, na, nb;

	switch (st->type) {
	case T_STRING:
		return strcmp(cfield(a, st), cfield(b, st)) == 0;
	case T_ADDR:
		return addr_equal(la, lb);
	case T_ADDRLIST:
		/* The same addresses in any order. */
		na = list_len(a, st);
		nb = list_len(b, st);
		if (na != nb)
			return false;
		for (i = 0; i < na; i++) {
			for (j = 0; j < nb && !addr_equal(&la[i], &lb[j]); j++)
				;
			if (j == nb)
				return false;
		}
		return true;
	default:
		return get_num(cfield(a, st), st->size) ==
		    get_num(cfield(b, st), st->size);
	}
}

static int
parse_addrlist(const struct setting *st, const char *value, void *base,
    char *why, size_t whysz)
{
	struct pol_addr *list = field(base, st);
	char item[POL_HOST_MAX + 16];
	const char *p = value, *comma, *b, *e;
	size_t n = 0, i, len;
	char a1[POL_HOST_MAX + 16];

	for (;;) {
		comma = strchr(p, ',');
		b = p;
		e = comma ? comma : p + strlen(p);
		while (b < e && isspace((unsigned char)*b))
			b++;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		len = (size_t)(e - b);
		if (len == 0) {
			snprintf(why, whysz, "empty address in list '%s'",
			    value);
			return -1;
		}
		if (n == st->max) {
			snprintf(why, whysz, "more than %llu addresses",
			    (unsigned long long)st->max);
			return -1;
		}
		if (len >= sizeof(item)) {
			snprintf(why, whysz, "address '%.40s...' is too long",
			    b);
			return -1;
		}
		memcpy(item, b, len);
		item[len] = '\0';
		memset(&list[n], 0, sizeof(list[n]));
		if (parse_addr(item, &list[n], why, whysz) == -1)
			return -1;
		for (i = 0; i < n; i++) {
			if (addr_equal(&list[i], &list[n])) {
				fmt_addr(&list[n], a1, sizeof(a1));
				snprintf(why, whysz, "%s is listed twice", a1);
				return -1;
			}
		}
		n++;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	memcpy((char *)base + st->off2, &n, sizeof(n));
	return 0;
}

/* Parse value for st into its field in base; on error, why says why. */
static int
parse_value(const struct setting *st, const char *value, void *base,
    char *why, size_t whysz)
{
	struct pol_addr addr;
	uint64_t v = 0;
	size_t i, len, used;
	bool b, big = false;
	int rc = 0;

	if (*value == '\0' && st->type != T_STRING) {
		snprintf(why, whysz, "empty value");
		return -1;
	}
	switch (st->type) {
	case T_BOOL:
		if ((rc = pol_parse_bool(value, &b)) == 0)
			v = b;
		else
			snprintf(why, whysz, "'%s' is not a boolean (on or "
			    "off)", value);
		break;
	case T_INT:
		rc = parse_int(value, &v);
		big = rc == -1 && errno == ERANGE;
		if (rc == -1 && !big)
			snprintf(why, whysz, "'%s' is not a number", value);
		break;
	case T_SIZE:
		rc = pol_parse_size(value, &v);
		big = rc == -1 && errno == ERANGE;
		if (rc == -1 && !big)
			snprintf(why, whysz, "'%s' is not a size (a number "
			    "with an optional K, M, G or T suffix)", value);
		break;
	case T_DURATION:
		rc = pol_parse_duration(value, &v);
		big = rc == -1 && errno == ERANGE;
		if (rc == -1 && !big)
			snprintf(why, whysz, "'%s' is not a duration (a "
			    "number with ms, s, m or h)", value);
		break;
	case T_ENUM:
		for (i = 0; st->names[i] != NULL; i++)
			if (strcasecmp(value, st->names[i]) == 0)
				break;
		if (st->names[i] == NULL) {
			used = (size_t)snprintf(why, whysz, "'%s' is not one "
			    "of ", value);
			for (i = 0; st->names[i] != NULL && used < whysz; i++)
				used += (size_t)snprintf(why + used,
				    whysz - used, "%s%s", i ? ", " : "",
				    st->names[i]);
			return -1;
		}
		v = i;
		break;
	case T_STRING:
		len = strlen(value);
		if (len < st->min) {
			snprintf(why, whysz, "empty value");
			return -1;
		}
		if (len > st->max || len >= st->size) {
			snprintf(why, whysz, "longer than %llu characters",
			    (unsigned long long)st->max);
			return -1;
		}
		if ((st->flags & F_ABSPATH) && len > 0 && value[0] != '/') {
			snprintf(why, whysz, "'%s' is not an absolute path",
			    value);
			return -1;
		}
		/* '#' is no comment after a value: a path that ends in
		 * " # note" would name a socket or directory so */
		for (i = 1; i < len; i++)
			if (value[i] == '#' && (value[i - 1] == ' ' ||
			    value[i - 1] == '\t'))
				break;
		if (i < len) {
			snprintf(why, whysz, "'%s' has '#' after a blank",
			    value);
			return -1;
		}
		/* what the kernel's names are made of (tcp_cong.c) */
		if ((st->flags & F_CCNAME) && strspn(value,
		    "abcdefghijklmnopqrstuvwxyz0123456789_") != len) {
			snprintf(why, whysz, "'%s' is not a congestion control "
			    "name (auto, system, or an algorithm such as bbr "
			    "or cubic)", value);
			return -1;
		}
		memcpy(field(base, st), value, len + 1);
		return 0;
	case T_ADDR:
		memset(&addr, 0, sizeof(addr));
		if (parse_addr(value, &addr, why, whysz) == -1)
			return -1;
		memcpy(field(base, st), &addr, sizeof(addr));
		return 0;
	case T_ADDRLIST:
		return parse_addrlist(st, value, base, why, whysz);
	}
	if (rc == -1 && !big)
		return -1;
	/* past 2^64 - 1 is above every maximum, and said so alike */
	if (big)
		v = UINT64_MAX;
	if (st->type != T_ENUM && st->type != T_BOOL &&
	    (big || v < st->min || v > st->max)) {
		char lim[32];

		fmt_num(st, v < st->min ? st->min : st->max, lim, sizeof(lim));
		snprintf(why, whysz, "'%s' is %s the %s %s", value,
		    v < st->min ? "below" : "above",
		    v < st->min ? "minimum" : "maximum", lim);
		return -1;
	}
	put_num(field(base, st), st->size, v);
	return 0;
}

static const struct setting *
find_setting(const char *name)
{
	size_t i;

	for (i = 0; i < NSET; i++)
		if (strcasecmp(settings[i].name, name) == 0)
			return &settings[i];
	return NULL;
}

const char *
pol_setting_name(size_t i)
{
	return i < NSET ? settings[i].name : NULL;
}

const char *
pol_mode_name(enum pol_mode mode)
{
	return (unsigned)mode < 3 ? mode_names[mode] : "?";
}

const char *
pol_gate_name(enum pol_gate gate)
{
	return (unsigned)gate < 3 ? gate_names[gate] : "?";
}

const char *
pol_log_level_name(enum pol_log_level level)
{
	return (unsigned)level < 4 ? log_names[level] : "?";
}

/* ---- sections --------------------------------------------------------- */

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Share names may not hold what Windows forbids in them. */
static int
check_share_name(const char *s, char *why, size_t whysz)
{
	const char *p;

	if (strlen(s) > POL_HOST_MAX) {
		snprintf(why, whysz, "share name '%.40s...' is too long", s);
		return -1;
	}
	for (p = s; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f ||
		    strchr("\"/\\[]:|<>+=;,*?", *p) != NULL) {
			snprintf(why, whysz, "invalid character '%c' in share "
			    "name '%s'", *p, s);
			return -1;
		}
	}
	return 0;
}

static bool
same_section(const struct section *a, const struct section *b)
{
	if (a->kind != b->kind || a->dup || b->dup)
		return false;
	switch (a->kind) {
	case SK_GLOBAL:
		return true;
	case SK_SHARE:
		return strcasecmp(a->share, b->share) == 0;
	case SK_UNC:
		return strcasecmp(a->server, b->server) == 0 &&
		    strcasecmp(a->share, b->share) == 0;
	default:
		return false;
	}
}

/*
 * Classify the header "[...]" (text of len bytes, trimmed, starting with
 * '[') and make it the current section.  A bad header is reported and
 * the keys under it are still checked, so that every error of the file
 * is reported at once: a header without its ']' is read as if it ended
 * the line; under a malformed share header keys go to a section that
 * never matches (SK_BAD), under an unknown one to a section that takes
 * settings of every scope (SK_UNKNOWN: we cannot tell which was meant).
 * A file with any error is never loaded, so neither kind is ever used.
 */
static void
section_header(struct parser *ps, const char *text, size_t len)
{
	struct pol_config *cfg = ps->cfg;
	struct section sec, *grown;
	char *h, *close, *rest, *inner, *name, *srv, *sep, sepc, *p, *q;
	char why[512], canon[POL_HOST_MAX + 1];
	enum pol_addr_kind kind;
	size_t i, ncap;
	bool unclosed = false, inbrackets = false, hostok;

	memset(&sec, 0, sizeof(sec));
	ps->cur = CUR_IGNORE;
	if ((h = strndup(text, len)) == NULL) {
		perr(ps, ps->line, "out of memory");
		ps->stop = true;
		return;
	}
	/* [//[2001:db8::5]/docs], an IPv6 server in brackets as in a URL
	 * (or smbclient //[2001:db8::5]/docs): its ']' would end the header.
	 * Read without the brackets, to say how it is written. */
	p = h + 1 + strspn(h + 1, " \t");
	if ((strncmp(p, "//[", 3) == 0 || strncmp(p, "\\\\[", 3) == 0) &&
	    (q = strchr(p + 3, ']')) != NULL && strchr(q + 1, ']') != NULL) {
		inbrackets = true;
		memmove(q, q + 1, strlen(q + 1) + 1);
		memmove(p + 2, p + 3, strlen(p + 3) + 1);
	}
	if ((close = strchr(h, ']')) == NULL) {
		perr(ps, ps->line, "section header without closing ']'");
		unclosed = true;
		close = h + strlen(h);
	}
	rest = unclosed ? close : close + 1;
	*close = '\0';
	while (isspace((unsigned char)*rest))
		rest++;
	inner = trim(h + 1);
	if (*rest != '\0' && *rest != ';' && *rest != '#')
		perr(ps, ps->line, "unexpected text after [%s]", inner);

	sec.line = ps->line;
	if (strcasecmp(inner, "global") == 0) {
		sec.kind = SK_GLOBAL;
	} else if (strncasecmp(inner, "share", 5) == 0 &&
	    (inner[5] == '\0' || isspace((unsigned char)inner[5]))) {
		name = trim(inner + 5);
		sec.kind = SK_SHARE;
		if (*name == '\0') {
			perr(ps, ps->line, "[share] needs a share name, as in "
			    "[share backup]");
			sec.kind = SK_BAD;
		} else if (check_share_name(name, why, sizeof(why)) == -1) {
			perr(ps, ps->line, "%s", why);
			sec.kind = SK_BAD;
		}
		sec.share = strdup(name);
	} else if ((inner[0] == '/' && inner[1] == '/') ||
	    (inner[0] == '\\' && inner[1] == '\\')) {
		sec.kind = SK_BAD;
		srv = inner + 2;
		if ((sep = strpbrk(srv, "/\\")) == NULL || sep[1] == '\0') {
			perr(ps, ps->line, "[%s] needs a share name, as in "
			    "[//server/share]", inner);
		} else if (sep == srv) {
			perr(ps, ps->line, "[%s] needs a server name, as in "
			    "[//server/share]", inner);
		} else {
			sepc = *sep;
			*sep = '\0';
			hostok = check_host(srv, canon, sizeof(canon), &kind,
			    why, sizeof(why)) == 0;
			if (!hostok)
				perr(ps, ps->line, "bad server in section "
				    "header: %s", why);
			else if (inbrackets && kind != POL_ADDR_IPV6)
				perr(ps, ps->line, "bad server in section "
				    "header: '%s' in brackets is not an IPv6 "
				    "address", srv);
			else if (inbrackets)
				perr(ps, ps->line, "bad server in section "
				    "header: write the IPv6 address without "
				    "brackets, as in [%s%c%s]", inner, sepc,
				    sep + 1);
			if (check_share_name(sep + 1, why, sizeof(why)) == -1)
				perr(ps, ps->line, "%s", why);
			else if (hostok && !inbrackets) {
				sec.kind = SK_UNC;
				sec.server = strdup(canon);
				sec.share = strdup(sep + 1);
			}
			*sep = sepc;
		}
	} else {
		if (!unclosed)
			perr(ps, ps->line, "unknown section [%s]: expected "
			    "[global], [share NAME] or [//server/share]", inner);
		sec.kind = SK_UNKNOWN;
	}
	if ((sec.kind == SK_SHARE || sec.kind == SK_UNC) &&
	    (sec.share == NULL || (sec.kind == SK_UNC && sec.server == NULL)))
		goto oom;
	for (i = 0; i < cfg->nsect; i++) {
		if (same_section(&cfg->sect[i], &sec)) {
			perr(ps, ps->line, "duplicate section [%s] (first on "
			    "line %d)", inner, cfg->sect[i].line);
			sec.dup = true;
			break;
		}
	}
	if (cfg->nsect == POL_SECTIONS_MAX) {
		perr(ps, ps->line, "too many sections (at most %d)",
		    POL_SECTIONS_MAX);
		ps->stop = true;
		goto out;
	}
	if (cfg->nsect == cfg->capsect) {
		ncap = cfg->capsect ? cfg->capsect * 2 : 8;
		if ((grown = reallocarray(cfg->sect, ncap,
		    sizeof(*grown))) == NULL)
			goto oom;
		cfg->sect = grown;
		cfg->capsect = ncap;
	}
	if ((sec.label = strdup(inner)) == NULL)
		goto oom;
	if (sec.kind == SK_GLOBAL && !sec.dup)
		cfg->gsect = (int)cfg->nsect;
	ps->cur = (int)cfg->nsect;
	cfg->sect[cfg->nsect++] = sec;
	free(h); h = NULL;
	return;
oom:
	perr(ps, ps->line, "out of memory");
	ps->stop = true;
out:
	free(sec.server); sec.server = NULL;
	free(sec.share); sec.share = NULL;
	free(sec.label); sec.label = NULL;
	free(h); h = NULL;
}

/* ---- the inih reader and handler -------------------------------------- */

/* The line last handed to inih was a key line; did inih accept it? */
static void
end_line(struct parser *ps)
{
	if (ps->key_line && !ps->handled) {
		perr(ps, ps->line, "expected 'name = value'");
		if (ps->first_syntax == 0)
			ps->first_syntax = ps->line;
	}
	ps->key_line = false;
}

/*
 * inih's reader: one physical line per call, so that inih's line count
 * and ours agree.  Blank lines, comments and section headers are handled
 * here and reach inih as empty lines.
 */
static char *
read_line(char *buf, int num, void *arg)
{
	struct parser *ps = arg;
	const char *s, *e, *nl, *p;
	size_t len;

	end_line(ps);
	if (ps->stop || ps->pos >= ps->end)
		return NULL;
	s = ps->pos;
	nl = memchr(s, '\n', (size_t)(ps->end - s));
	e = nl ? nl : ps->end;
	ps->pos = nl ? nl + 1 : ps->end;
	ps->line++;
	buf[0] = '\0';
	if (ps->line == 1 && e - s >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
		s += 3;
	if (memchr(s, '\0', (size_t)(e - s)) != NULL) {
		perr(ps, ps->line, "line contains a NUL byte");
		return buf;
	}
	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	if (s == e || *s == ';' || *s == '#')
		return buf;
	if (*s == '[') {
		section_header(ps, s, (size_t)(e - s));
		return buf;
	}
	/*
	 * An inline comment (';' after a blank, inih's rule) does not count
	 * against inih's line buffer: cut it here.
	 */
	for (p = s + 1; p < e; p++) {
		if (*p == ';' && isspace((unsigned char)p[-1])) {
			for (e = p; e > s && isspace((unsigned char)e[-1]); e--)
				;
			break;
		}
	}
	len = (size_t)(e - s);
	if (num < 2 || len > (size_t)num - 1) {
		perr(ps, ps->line, "line too long (%zu characters, at most %d)",
		    len, num - 1);
		return buf;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	ps->key_line = true;
	ps->handled = false;
	return buf;
}

/*
 * What to add to a bad value's message when it looks like it ends in a
 * comment: '#' starts one only at the start of a line, and ';' after a
 * value only with a blank before it (read_line cuts those, so a ';' that
 * reaches a value has none).
 */
static const char *
comment_hint(const char *value)
{
	if (strchr(value, '#') != NULL)
		return " (a comment goes on a line of its own: '#' starts "
		    "one only at the start of a line; after a value, ' ;' "
		    "does)";
	if (strchr(value, ';') != NULL)
		return " (';' starts a comment after a value only with a "
		    "blank before it)";
	return "";
}

static void
set_key(struct parser *ps, const char *name, const char *value)
{
	struct pol_config *cfg = ps->cfg;
	const struct setting *st;
	struct section *sec;
	char why[512];
	size_t i;
	void *base;

	if (ps->cur == CUR_NONE) {
		perr(ps, ps->line, "'%s' outside any section (put it under "
		    "[global] or a share section)", name);
		return;
	}
	if (*name == '\0') {
		perr(ps, ps->line, "missing setting name before '='");
		return;
	}
	if ((st = find_setting(name)) == NULL) {
		perr(ps, ps->line, "unknown setting '%s'", name);
		return;
	}
	if (ps->cur == CUR_IGNORE)
		return;
	sec = &cfg->sect[ps->cur];
	i = (size_t)(st - settings);
	if (st->scope == S_GLOBAL && sec->kind != SK_GLOBAL &&
	    sec->kind != SK_UNKNOWN) {
		perr(ps, ps->line, "'%s' is a global setting, not allowed in "
		    "[%s]", st->name, sec->label);
		return;
	}
	if (st->scope == S_SERVER && sec->kind == SK_SHARE) {
		perr(ps, ps->line, "'%s' is a server setting, not allowed in "
		    "[%s]: put it in [global] or a [//server/share] section",
		    st->name, sec->label);
		return;
	}
	if (sec->seen & (UINT64_C(1) << i)) {
		perr(ps, ps->line, "'%s' already set on line %d", st->name,
		    sec->key_line[i]);
		return;
	}
	/* Given, even if its value is bad: no "missing" error on top. */
	sec->seen |= UINT64_C(1) << i;
	sec->key_line[i] = ps->line;
	base = st->scope == S_SERVER ? (void *)&sec->svals :
	    st->scope == S_SHARE ? (void *)&sec->vals :
	    sec->kind == SK_UNKNOWN ? (void *)&ps->scratch :
	    (void *)&cfg->global;
	if (parse_value(st, value, base, why, sizeof(why)) == -1) {
		perr(ps, ps->line, "bad value for '%s': %s%s", st->name, why,
		    comment_hint(value));
		return;
	}
	/* what is accepted must print back as one line the parser takes
	 * (pol_dump; smbaccel -t): the written form may be longer than the
	 * given one (", " between list entries, ":445" added) */
	{
		char v[1024];
		size_t most = DUMP_LINE_MAX - strlen(st->name) - 3;

		fmt_value(st, base, v, sizeof(v));
		if (strlen(v) > most) {
			perr(ps, ps->line, "value of '%s' too long (%zu "
			    "characters written out, at most %zu)", st->name,
			    strlen(v), most);
			return;
		}
	}
	sec->set |= UINT64_C(1) << i;
}

static int
on_pair(void *user, const char *section, const char *name,
    const char *value)
{
	struct parser *ps = user;

	(void)section;  /* ours is ps->cur; inih only ever sees "" */
	ps->handled = true;
	set_key(ps, name, value);
	return 1;
}

/* ---- load ------------------------------------------------------------- */

static int
set_defaults(struct parser *ps)
{
	struct pol_config *cfg = ps->cfg;
	const struct setting *st;
	char why[512];
	size_t i;

	for (i = 0; i < NSET; i++) {
		st = &settings[i];
		if (st->def[0] == '\0')
			continue;       /* unset: zeroed */
		if (parse_value(st, st->def, st->scope == S_GLOBAL ?
		    (void *)&cfg->global : st->scope == S_SERVER ?
		    (void *)&cfg->server_def : (void *)&cfg->share_def, why,
		    sizeof(why)) == -1) {
			perr(ps, 0, "internal error: default of '%s': %s",
			    st->name, why);
			return -1;
		}
	}
	return 0;
}

/* Settings that are checked only once the whole file is read. */
static void
check_required(struct parser *ps, int nlines)
{
	struct pol_config *cfg = ps->cfg;
	const struct section *g;
	const struct setting *mode = find_setting("mode");
	const struct setting *up = find_setting("upstream");
	size_t i, mi = (size_t)(mode - settings), ui = (size_t)(up - settings);

	if (cfg->gsect < 0) {
		perr(ps, nlines > 0 ? nlines : 1, "no [global] section "
		    "(it must set 'listen')");
		return;
	}
	g = &cfg->sect[cfg->gsect];
	for (i = 0; i < NSET; i++)
		if ((settings[i].flags & F_REQUIRED) &&
		    !(g->seen & (UINT64_C(1) << i)))
			perr(ps, g->line, "missing required setting '%s' in "
			    "[global]", settings[i].name);
	if (cfg->global.mode == POL_MODE_FORWARD &&
	    !(g->seen & (UINT64_C(1) << ui)))
		perr(ps, (g->seen & (UINT64_C(1) << mi)) ? g->key_line[mi] :
		    g->line, "'upstream' is required with mode = forward");
}

/*
 * A server setting belongs to the server: the [//server/share] sections
 * of one server that give it must give the same value.
 */
static void
check_servers(struct parser *ps)
{
	const struct pol_config *cfg = ps->cfg;
	const struct section *a, *b;
	const struct setting *st;
	char va[1024], vb[1024];
	size_t i, j, k;

	for (k = 0; k < NSET; k++) {
		st = &settings[k];
		if (st->scope != S_SERVER)
			continue;
		for (j = 0; j < cfg->nsect; j++) {
			b = &cfg->sect[j];
			if (b->kind != SK_UNC || b->dup ||
			    !(b->set & (UINT64_C(1) << k)))
				continue;
			for (i = 0; i < j; i++) {
				a = &cfg->sect[i];
				if (a->kind != SK_UNC || a->dup ||
				    !(a->set & (UINT64_C(1) << k)) ||
				    strcasecmp(a->server, b->server) != 0)
					continue;
				if (value_equal(st, &a->svals, &b->svals))
					break;
				fmt_value(st, &a->svals, va, sizeof(va));
				fmt_value(st, &b->svals, vb, sizeof(vb));
				perr(ps, b->key_line[k], "'%s = %s' for server "
				    "%s differs from '%s' on line %d ([%s]): a "
				    "server setting must be the same in every "
				    "section of that server", st->name, vb,
				    b->server, va, a->key_line[k], a->label);
				break;
			}
		}
	}
}

static struct pol_config *
load_text(const char *text, size_t len, const char *name,
    struct pol_errors *errs)
{
	struct parser ps;
	struct pol_config *cfg;
	int rc;

	memset(&ps, 0, sizeof(ps));
	ps.errs = errs;
	ps.name = name;
	ps.cur = CUR_NONE;
	ps.pos = text;
	ps.end = text + len;
	if ((cfg = calloc(1, sizeof(*cfg))) == NULL ||
	    (cfg->name = strdup(name)) == NULL) {
		errs_add(errs, name, 0, "out of memory");
		free(cfg); cfg = NULL;
		return NULL;
	}
	cfg->gsect = -1;
	ps.cfg = cfg;
	if (len > POL_FILE_MAX) {
		perr(&ps, 0, "file too large (more than %d bytes)",
		    POL_FILE_MAX);
		goto fail;
	}
	if (set_defaults(&ps) == -1)
		goto fail;

	rc = ini_parse_stream(read_line, &ps, on_pair, &ps);
	end_line(&ps);
	if (rc == -2)
		perr(&ps, ps.line, "out of memory");
	else if (rc > 0 && rc != ps.first_syntax && !ps.stop)
		perr(&ps, rc, "syntax error");  /* a rejection we missed */
	if (!ps.stop) {
		check_required(&ps, ps.line);
		check_servers(&ps);
	}
	if (ps.nerr > 0)
		goto fail;
	return cfg;
fail:
	pol_free(cfg);
	return NULL;
}

struct pol_config *
pol_load_string(const char *text, const char *name, struct pol_errors *errs)
{
	if (name == NULL)
		name = "<string>";
	return load_text(text, strlen(text), name, errs);
}

struct pol_config *
pol_load_file(const char *path, struct pol_errors *errs)
{
	struct pol_config *cfg = NULL;
	FILE *fp;
	char *buf = NULL, *grown;
	size_t len = 0, cap = 0, n;

	if ((fp = fopen(path, "r")) == NULL) {
		errs_add(errs, path, 0, "cannot open: %s", strerror(errno));
		return NULL;
	}
	for (;;) {
		if (len == cap) {
			if (cap > POL_FILE_MAX) {
				errs_add(errs, path, 0, "file too large (more "
				    "than %d bytes)", POL_FILE_MAX);
				goto fail;
			}
			cap = cap ? cap * 2 : 8192;
			if ((grown = realloc(buf, cap)) == NULL) {
				errs_add(errs, path, 0, "out of memory");
				goto fail;
			}
			buf = grown;
		}
		n = fread(buf + len, 1, cap - len, fp);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(fp)) {
		errs_add(errs, path, 0, "cannot read: %s", strerror(errno));
		goto fail;
	}
	cfg = load_text(buf, len, path, errs);
fail:
	free(buf); buf = NULL;
	fclose(fp);
	return cfg;
}

void
pol_free(struct pol_config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->nsect; i++) {
		free(cfg->sect[i].server); cfg->sect[i].server = NULL;
		free(cfg->sect[i].share); cfg->sect[i].share = NULL;
		free(cfg->sect[i].label); cfg->sect[i].label = NULL;
	}
	free(cfg->sect); cfg->sect = NULL;
	free(cfg->name); cfg->name = NULL;
	free(cfg);
}

const struct pol_global *
pol_global(const struct pol_config *cfg)
{
	return &cfg->global;
}

const char *
pol_name(const struct pol_config *cfg)
{
	return cfg->name;
}

/* ---- lookup ----------------------------------------------------------- */

static void
overlay(struct pol_share *out, const struct section *sec,
    const struct section **from)
{
	const struct setting *st;
	size_t i;

	if (sec == NULL)
		return;
	for (i = 0; i < NSET; i++) {
		st = &settings[i];
		if (st->scope != S_SHARE || !(sec->set & (UINT64_C(1) << i)))
			continue;
		memcpy(field(out, st), cfield(&sec->vals, st), st->size);
		if (from != NULL)
			from[i] = sec;
	}
}

/*
 * The server a client named, as the sections hold it: an IP literal in
 * canonical form, else as given.  An IPv6 literal may come in brackets:
 * smbclient //[2001:db8::5]/docs sends \\[2001:db8::5]\docs in its tree
 * connect (Windows writes 2001-db8--5.ipv6-literal.net, a name).
 */
static const char *
server_key(const char *server, char *canon, size_t canonsz)
{
	char tmp[POL_HOST_MAX + 1], why[512];
	enum pol_addr_kind kind;
	size_t len;

	if (server == NULL)
		return NULL;
	len = strlen(server);
	if (len > 2 && server[0] == '[' && server[len - 1] == ']' &&
	    len - 2 < sizeof(tmp)) {
		memcpy(tmp, server + 1, len - 2);
		tmp[len - 2] = '\0';
		if (check_host(tmp, canon, canonsz, &kind, why,
		    sizeof(why)) == 0 && kind == POL_ADDR_IPV6)
			return canon;
		return server;
	}
	if (check_host(server, canon, canonsz, &kind, why, sizeof(why)) == 0)
		return canon;
	return server;
}

/* pol_share_lookup(), also saying which section supplied each setting. */
static void
lookup(const struct pol_config *cfg, const char *server, const char *share,
    struct pol_share *out, const struct section **from)
{
	const struct section *sec, *by_share = NULL, *by_unc = NULL;
	char canon[POL_HOST_MAX + 1];
	size_t i;

	server = server_key(server, canon, sizeof(canon));
	for (i = 0; i < cfg->nsect && share != NULL; i++) {
		sec = &cfg->sect[i];
		if (sec->dup || strcasecmp(sec->share ? sec->share : "",
		    share) != 0)
			continue;
		if (sec->kind == SK_SHARE && by_share == NULL)
			by_share = sec;
		else if (sec->kind == SK_UNC && by_unc == NULL &&
		    server != NULL && strcasecmp(sec->server, server) == 0)
			by_unc = sec;
	}
	*out = cfg->share_def;
	overlay(out, cfg->gsect >= 0 ? &cfg->sect[cfg->gsect] : NULL, from);
	overlay(out, by_share, from);
	overlay(out, by_unc, from);
}

void
pol_share_lookup(const struct pol_config *cfg, const char *server,
    const char *share, struct pol_share *out)
{
	lookup(cfg, server, share, out, NULL);
}

/* Server settings of sec (set ones only) over out. */
static void
overlay_server(struct pol_server *out, const struct section *sec,
    const struct section **from)
{
	const struct setting *st;
	size_t i;

	for (i = 0; sec != NULL && i < NSET; i++) {
		st = &settings[i];
		if (st->scope != S_SERVER || !(sec->set & (UINT64_C(1) << i)))
			continue;
		memcpy(field(out, st), cfield(&sec->svals, st), st->size);
		if (from != NULL)
			from[i] = sec;
	}
}

/* pol_server_lookup(), also saying which section supplied each setting. */
static bool
lookup_server(const struct pol_config *cfg, const char *server,
    struct pol_server *out, const struct section **from)
{
	const struct section *sec;
	char canon[POL_HOST_MAX + 1];
	uint64_t mask = 0;
	size_t i;

	server = server_key(server, canon, sizeof(canon));
	*out = cfg->server_def;
	overlay_server(out, cfg->gsect >= 0 ? &cfg->sect[cfg->gsect] : NULL,
	    from);
	for (i = 0; i < cfg->nsect && server != NULL; i++) {
		sec = &cfg->sect[i];
		if (sec->kind != SK_UNC || sec->dup ||
		    strcasecmp(sec->server, server) != 0)
			continue;
		overlay_server(out, sec, from);
		mask |= sec->set;
	}
	for (i = 0; i < NSET; i++)
		if (settings[i].scope == S_SERVER &&
		    (mask & (UINT64_C(1) << i)))
			return true;
	return false;
}

bool
pol_server_lookup(const struct pol_config *cfg, const char *server,
    struct pol_server *out)
{
	return lookup_server(cfg, server, out, NULL);
}

const char *
pol_keytab_path(const struct pol_config *cfg, size_t n)
{
	const struct setting *st = find_setting("keytab");
	uint64_t bit = UINT64_C(1) << (size_t)(st - settings);
	const struct section *sec, *o;
	const char *p;
	size_t i, j, seen = 0;
	bool dup;

	/* [global] first, then the server sections in file order */
	for (i = 0; i <= cfg->nsect; i++) {
		sec = i == 0 ? (cfg->gsect >= 0 ? &cfg->sect[cfg->gsect] :
		    NULL) : &cfg->sect[i - 1];
		if (sec == NULL || sec->dup || !(sec->set & bit) ||
		    (i > 0 && sec->kind != SK_UNC) ||
		    *(p = sec->svals.keytab) == '\0')
			continue;
		for (dup = false, j = 0; j < i && !dup; j++) {
			o = j == 0 ? (cfg->gsect >= 0 ? &cfg->sect[cfg->gsect] :
			    NULL) : &cfg->sect[j - 1];
			dup = o != NULL && !o->dup && (o->set & bit) &&
			    (j == 0 || o->kind == SK_UNC) &&
			    strcmp(o->svals.keytab, p) == 0;
		}
		if (!dup && seen++ == n)
			return p;
	}
	return NULL;
}

bool
pol_server_setting_at(const struct pol_config *cfg, size_t i,
    const char **name, const char **section, int *line,
    struct pol_server *vals)
{
	const struct section *sec;
	size_t j, k;

	for (j = 0; j < cfg->nsect; j++) {
		sec = &cfg->sect[j];
		if (sec->dup || (sec->kind != SK_GLOBAL && sec->kind != SK_UNC))
			continue;
		for (k = 0; k < NSET; k++) {
			if (settings[k].scope != S_SERVER ||
			    !(sec->set & (UINT64_C(1) << k)) || i-- > 0)
				continue;
			*name = settings[k].name;
			*section = sec->label;
			*line = sec->key_line[k];
			*vals = sec->svals;
			return true;
		}
	}
	return false;
}

/* ---- reload and dump -------------------------------------------------- */

int
pol_diff_reloadable(const struct pol_config *old_cfg,
    const struct pol_config *new_cfg, struct pol_errors *errs)
{
	const struct setting *st;
	const struct section *g = new_cfg->gsect >= 0 ?
	    &new_cfg->sect[new_cfg->gsect] : NULL;
	char was[1024], now[1024];
	int n = 0, line;
	size_t i;

	for (i = 0; i < NSET; i++) {
		st = &settings[i];
		if (st->scope != S_GLOBAL || (st->flags & F_RELOAD) ||
		    value_equal(st, &old_cfg->global, &new_cfg->global))
			continue;
		fmt_value(st, &old_cfg->global, was, sizeof(was));
		fmt_value(st, &new_cfg->global, now, sizeof(now));
		line = g == NULL ? 0 : (g->set & (UINT64_C(1) << i)) ?
		    g->key_line[i] : g->line;
		errs_add(errs, new_cfg->name, line, "'%s' changed from '%s' to "
		    "'%s', which needs a restart", st->name, was, now);
		n++;
	}
	return n;
}

static void
dump_setting(FILE *fp, const struct setting *st, const void *base,
    const struct section *from)
{
	char val[1024], origin[32];

	if (from != NULL)
		snprintf(origin, sizeof(origin), "line %d", from->key_line[st -
		    settings]);
	else
		snprintf(origin, sizeof(origin), "default");
	if (st->type == T_ADDR && ((const struct pol_addr *)cfield(base,
	    st))->host[0] == '\0') {
		fprintf(fp, "; %-21s   (not set)\n", st->name);
		return;
	}
	fmt_value(st, base, val, sizeof(val));
	if (21 + 3 + strlen(val) <= DUMP_LINE_MAX)
		fprintf(fp, "%-21s = %-28s ; %s%s\n", st->name, val, origin,
		    (st->flags & F_RELOAD) ? "" : ", needs restart");
	else	/* no padding: accepted values always fit this way */
		fprintf(fp, "; %s%s\n%s = %s\n", origin,
		    (st->flags & F_RELOAD) ? "" : ", needs restart", st->name,
		    val);
}

void
pol_dump(const struct pol_config *cfg, FILE *fp)
{
	const struct section *g = cfg->gsect >= 0 ?
	    &cfg->sect[cfg->gsect] : NULL;
	const struct section *from[NSET];
	const struct section *sec;
	struct pol_share eff;
	struct pol_server srv;
	size_t i, j;

	fprintf(fp, "; effective settings of %s\n\n[global]\n", cfg->name);
	for (i = 0; i < NSET; i++)
		if (settings[i].scope == S_GLOBAL)
			dump_setting(fp, &settings[i], &cfg->global,
			    g != NULL && (g->set & (UINT64_C(1) << i)) ?
			    g : NULL);
	memset(from, 0, sizeof(from));
	lookup(cfg, NULL, NULL, &eff, from);
	fprintf(fp, "; defaults for every share\n");
	for (i = 0; i < NSET; i++)
		if (settings[i].scope == S_SHARE)
			dump_setting(fp, &settings[i], &eff, from[i]);
	memset(from, 0, sizeof(from));
	(void)lookup_server(cfg, NULL, &srv, from);
	fprintf(fp, "; defaults for every server\n");
	for (i = 0; i < NSET; i++)
		if (settings[i].scope == S_SERVER)
			dump_setting(fp, &settings[i], &srv, from[i]);
	for (j = 0; j < cfg->nsect; j++) {
		sec = &cfg->sect[j];
		if (sec->dup || (sec->kind != SK_SHARE && sec->kind != SK_UNC))
			continue;
		memset(from, 0, sizeof(from));
		if (sec->kind == SK_SHARE) {
			fprintf(fp, "\n[share %s]\n", sec->share);
			lookup(cfg, NULL, sec->share, &eff, from);
		} else {
			fprintf(fp, "\n[//%s/%s]\n", sec->server, sec->share);
			lookup(cfg, sec->server, sec->share, &eff, from);
		}
		for (i = 0; i < NSET; i++)
			if (settings[i].scope == S_SHARE)
				dump_setting(fp, &settings[i], &eff, from[i]);
		if (sec->kind != SK_UNC)
			continue;
		/* the server's settings, the same in each of its sections */
		(void)lookup_server(cfg, sec->server, &srv, from);
		for (i = 0; i < NSET; i++)
			if (settings[i].scope == S_SERVER)
				dump_setting(fp, &settings[i], &srv, from[i]);
	}
}
