/*
 * secrets.c - the secrets file: [DOMAIN\]user -> NT hash (DESIGN.md 7).
 *
 * The file holds password equivalents, so it is refused unless it is a
 * regular file (not a symbolic link, not a FIFO or device) owned by root
 * with no group or other permission bits; the checks are made on the
 * opened descriptor (fstat), not on the path.  A
 * file with one bad line is refused whole, with the line number, so that
 * a typo never silently drops a user.  Sizes are bounded (file, line,
 * entry count).  Hashes are wiped when the table is freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "proxy/auth/auth.h"
#include "proxy/auth/der.h"

struct px_secret {
	char domain[PX_SECRETS_NAME_MAX + 1];   /* "" = any domain */
	char user[PX_SECRETS_NAME_MAX + 1];
	uint8_t nthash[16];
	unsigned line;
};

struct px_secrets {
	size_t n;
	struct px_secret *e;
};

static const char FORMAT[] =
    "expected [DOMAIN\\]user:nthash:<32 hex digits> or "
    "[DOMAIN\\]user:password:<text>";

static bool
blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Trim blanks on both ends of [*s, *s + *n). */
static void
trim(const char **s, size_t *n)
{
	while (*n > 0 && blank(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && blank((*s)[*n - 1]))
		(*n)--;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A user or domain name: non-empty, bounded, no control characters and
 * none of the separators. */
static int
name_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > PX_SECRETS_NAME_MAX)
		return -1;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f ||
		    s[i] == '\\' || s[i] == ':')
			return -1;
	return 0;
}

/*
 * Parse one non-blank, non-comment line into e.  0, or -1 with a reason
 * (without the line number) in err.
 */
static int
parse_line(const char *l, size_t len, struct px_secret *e, char *err,
    size_t errlen)
{
	const char *c1, *c2, *bs, *prin, *type, *val;
	size_t nprin, ntype, nval, i;
	int hi, lo;

	if ((c1 = memchr(l, ':', len)) == NULL ||
	    (c2 = memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - l))) == NULL) {
		snprintf(err, errlen, "%s", FORMAT);
		return -1;
	}
	prin = l;
	nprin = (size_t)(c1 - l);
	type = c1 + 1;
	ntype = (size_t)(c2 - type);
	val = c2 + 1;
	nval = len - (size_t)(val - l);
	trim(&prin, &nprin);
	trim(&type, &ntype);

	if ((bs = memchr(prin, '\\', nprin)) != NULL) {
		const char *d = prin, *u = bs + 1;
		size_t nd = (size_t)(bs - prin), nu = nprin - nd - 1;

		trim(&d, &nd);
		trim(&u, &nu);
		if (name_ok(d, nd) == -1 || name_ok(u, nu) == -1) {
			snprintf(err, errlen, "bad DOMAIN\\user \"%.*s\"",
			    (int)nprin, prin);
			return -1;
		}
		memcpy(e->domain, d, nd);
		e->domain[nd] = '\0';
		memcpy(e->user, u, nu);
		e->user[nu] = '\0';
	} else {
		if (name_ok(prin, nprin) == -1) {
			snprintf(err, errlen, "bad user name \"%.*s\"",
			    (int)nprin, prin);
			return -1;
		}
		e->domain[0] = '\0';
		memcpy(e->user, prin, nprin);
		e->user[nprin] = '\0';
	}

	if (ntype == 6 && strncmp(type, "nthash", 6) == 0) {
		trim(&val, &nval);
		if (nval != 32) {
			snprintf(err, errlen, "nthash must be 32 hex digits, "
			    "found %zu characters", nval);
			return -1;
		}
		for (i = 0; i < 16; i++) {
			hi = hexval(val[2 * i]);
			lo = hexval(val[2 * i + 1]);
			if (hi < 0 || lo < 0) {
				snprintf(err, errlen, "nthash has a non-hex "
				    "digit");
				return -1;
			}
			e->nthash[i] = (uint8_t)(hi << 4 | lo);
		}
		return 0;
	}
	if (ntype == 8 && strncmp(type, "password", 8) == 0) {
		/* Verbatim: blanks may be part of a password. */
		if (px_nt_hash(val, nval, e->nthash) == -1) {
			snprintf(err, errlen, "password is not valid UTF-8 "
			    "or is too long");
			return -1;
		}
		return 0;
	}
	snprintf(err, errlen, "unknown type \"%.*s\" (%s)", (int)ntype, type,
	    FORMAT);
	return -1;
}

static const struct px_secret *
find(const struct px_secrets *s, const char *domain, const char *user)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcasecmp(s->e[i].domain, domain) == 0 &&
		    strcasecmp(s->e[i].user, user) == 0)
			return &s->e[i];
	return NULL;
}

/*
 * The rules of a file of secrets, this one and a keytab (keytab.c), made
 * on the opened descriptor so that what is checked is what is read.  The
 * open itself must not block or follow anything: O_NONBLOCK, since opening
 * a FIFO for reading waits for a writer (start-up and reload would hang
 * before fstat could refuse it), cleared once the file is known to be
 * regular; O_NOFOLLOW, since a symbolic link lets whoever may change it,
 * or the directory it lies in, choose which file is read.
 */
int
px_secret_file_open(const char *what, const char *path, struct stat *st,
    char *err, size_t errlen)
{
	struct stat lst;
	int fd, fl, e;

	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC |
	    O_NOCTTY)) == -1) {
		e = errno;
		if (e == ELOOP && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
			snprintf(err, errlen, "%s %s: a symbolic link, not "
			    "followed (name the file itself)", what, path);
		else
			snprintf(err, errlen, "%s %s: %s", what, path,
			    strerror(e));
		return -1;
	}
	if (fstat(fd, st) == -1) {
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "%s %s: not a regular file", what, path);
		goto fail;
	}
	if (st->st_uid != 0) {
		snprintf(err, errlen, "%s %s: owned by uid %lu, must be owned "
		    "by root", what, path, (unsigned long)st->st_uid);
		goto fail;
	}
	if (st->st_mode & 077) {
		snprintf(err, errlen, "%s %s: mode %04o gives access to group "
		    "or others, must be 0600 or stricter", what, path,
		    (unsigned)(st->st_mode & 07777));
		goto fail;
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
		snprintf(err, errlen, "%s %s: fcntl: %s", what, path,
		    strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/* Read the whole file into a NUL-terminated buffer after the checks. */
static char *
read_checked(const char *path, size_t *lenp, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	ssize_t r;
	int fd;

	if ((fd = px_secret_file_open("secrets file", path, &st, err,
	    errlen)) == -1)
		return NULL;
	if (st.st_size < 0 || (uintmax_t)st.st_size > PX_SECRETS_MAX_SIZE) {
		snprintf(err, errlen, "secrets file %s: larger than %u bytes",
		    path, PX_SECRETS_MAX_SIZE);
		goto fail;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "secrets file %s: out of memory", path);
		goto fail;
	}
	/* Read to EOF but never past the size checked above. */
	for (;;) {
		r = read(fd, buf + len, (size_t)st.st_size + 1 - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errlen, "secrets file %s: %s", path,
			    strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > (size_t)st.st_size) {
			snprintf(err, errlen, "secrets file %s: grew while "
			    "being read", path);
			goto fail;
		}
	}
	close(fd);
	buf[len] = '\0';
	*lenp = len;
	return buf;
fail:
	if (buf != NULL) {
		OPENSSL_cleanse(buf, len);
		free(buf);
	}
	close(fd);
	return NULL;
}

struct px_secrets *
px_secrets_load(const char *path, char *err, size_t errlen)
{
	struct px_secrets *s = NULL;
	struct px_secret e;
	const struct px_secret *dup;
	char *buf, reason[200];
	const char *l, *nl, *t;
	size_t len, ll, cap = 0, tl;
	unsigned line = 0;
	struct px_secret *ne;

	if (px_crypto_init(err, errlen) == -1)
		return NULL;
	if ((buf = read_checked(path, &len, err, errlen)) == NULL)
		return NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "secrets file %s: out of memory", path);
		goto fail;
	}
	for (l = buf; l < buf + len; l = nl + 1) {
		line++;
		nl = memchr(l, '\n', (size_t)(buf + len - l));
		if (nl == NULL)
			nl = buf + len;
		ll = (size_t)(nl - l);
		if (ll > 0 && l[ll - 1] == '\r')
			ll--;
		if (ll > PX_SECRETS_MAX_LINE) {
			snprintf(err, errlen, "secrets file %s: line %u: "
			    "longer than %u bytes", path, line,
			    PX_SECRETS_MAX_LINE);
			goto fail;
		}
		if (memchr(l, '\0', ll) != NULL) {
			snprintf(err, errlen, "secrets file %s: line %u: "
			    "contains a NUL byte", path, line);
			goto fail;
		}
		t = l;
		tl = ll;
		trim(&t, &tl);
		if (tl == 0 || t[0] == '#')
			continue;
		memset(&e, 0, sizeof(e));
		if (parse_line(l, ll, &e, reason, sizeof(reason)) == -1) {
			snprintf(err, errlen, "secrets file %s: line %u: %s",
			    path, line, reason);
			OPENSSL_cleanse(&e, sizeof(e));
			goto fail;
		}
		e.line = line;
		if ((dup = find(s, e.domain, e.user)) != NULL) {
			snprintf(err, errlen, "secrets file %s: line %u: "
			    "duplicate entry for %s%s%s (first on line %u)",
			    path, line, e.domain, e.domain[0] ? "\\" : "",
			    e.user, dup->line);
			OPENSSL_cleanse(&e, sizeof(e));
			goto fail;
		}
		if (s->n == PX_SECRETS_MAX_ENTRIES) {
			snprintf(err, errlen, "secrets file %s: line %u: more "
			    "than %u entries", path, line,
			    PX_SECRETS_MAX_ENTRIES);
			OPENSSL_cleanse(&e, sizeof(e));
			goto fail;
		}
		if (s->n == cap) {
			/* Grow by hand so the old array can be wiped. */
			cap = cap ? cap * 2 : 16;
			if ((ne = calloc(cap, sizeof(*ne))) == NULL) {
				snprintf(err, errlen, "secrets file %s: out of "
				    "memory", path);
				OPENSSL_cleanse(&e, sizeof(e));
				goto fail;
			}
			if (s->n > 0) {
				memcpy(ne, s->e, s->n * sizeof(*ne));
				OPENSSL_cleanse(s->e, s->n * sizeof(*ne));
			}
			free(s->e);
			s->e = ne;
		}
		s->e[s->n++] = e;
		OPENSSL_cleanse(&e, sizeof(e));
	}
	OPENSSL_cleanse(buf, len);
	free(buf);
	return s;
fail:
	OPENSSL_cleanse(buf, len);
	free(buf);
	px_secrets_free(s);
	return NULL;
}

const uint8_t *
px_secrets_nthash(const struct px_secrets *s, const char *domain,
    const char *user)
{
	const struct px_secret *e;

	if (s == NULL || user == NULL || user[0] == '\0')
		return NULL;
	if (domain != NULL && domain[0] != '\0' &&
	    (e = find(s, domain, user)) != NULL)
		return e->nthash;
	if ((e = find(s, "", user)) != NULL)
		return e->nthash;
	return NULL;
}

size_t
px_secrets_count(const struct px_secrets *s)
{
	return s == NULL ? 0 : s->n;
}

void
px_secrets_free(struct px_secrets *s)
{
	if (s == NULL)
		return;
	if (s->e != NULL)
		OPENSSL_cleanse(s->e, s->n * sizeof(*s->e));
	free(s->e); s->e = NULL;
	free(s);
}
