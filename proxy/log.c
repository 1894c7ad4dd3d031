/*
 * log.c - logging in the OpenBSD style: log_warn appends strerror(errno),
 * log_warnx does not; fatal/fatalx exit.  Lines go to stderr (journald
 * picks them up under systemd) or to syslog when detached.  When stderr
 * is journald's stream ($JOURNAL_STREAM names it), each line starts with
 * its priority as sd-daemon(3) prescribes ("<4>" for a warning) instead
 * of a time and a level: journald keeps the time itself, and the priority
 * is what `journalctl -p warning` selects on and what journald rate-limits
 * by.  Also the two helpers every engine file uses for its lines: the
 * monotonic clock in ms and address formatting; and the check of a
 * directory smbaccel keeps files in (px_private_dir).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "proxy/proxy.h"

static int log_level = PX_LOG_INFO;
static bool log_stderr = true;
static int log_journal = -1;     /* stderr is journald's stream; -1: not
                                  * looked at yet */
static const char *log_prefix;   /* smbaccel -t: "FILE: why", no time */

static size_t safe_len(const char *s);

bool
log_to_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (log_journal == -1)
		log_journal = e != NULL &&
		    sscanf(e, "%llu:%llu", &dev, &ino) == 2 &&
		    fstat(STDERR_FILENO, &st) == 0 &&
		    (unsigned long long)st.st_dev == dev &&
		    (unsigned long long)st.st_ino == ino;
	return log_journal == 1;
}

void
log_init(int level, bool to_stderr)
{
	log_level = level;
	log_stderr = to_stderr;
	log_journal = -1;
	if (!to_stderr)
		openlog("smbaccel", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

/* smbaccel -t: each line on stderr is "PREFIX: why", as the policy's
 * errors are, instead of a time and a level (NULL: back to those). */
void
log_set_prefix(const char *prefix)
{
	log_prefix = prefix;
}

void
log_policy_errors(const struct pol_errors *errs)
{
	pol_errors_print_prefixed(errs, stderr, log_to_journal() ? SD_ERR : "");
}

void
log_set_level(int level)
{
	log_level = level;
}

int
log_get_level(void)
{
	return log_level;
}

static void
vlog(int level, int errnum, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	static const char *const tag[] = { "error", "warn", "info", "debug" };
	static const char *const sd[] = { SD_ERR, SD_WARNING, SD_INFO,
	    SD_DEBUG };
	char msg[2048], safe[sizeof(msg)];
	const char *out = msg;
	int n;

	if (level > log_level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	if (errnum && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s",
		    strerror(errnum));
	/* names from clients (a tree's server name, a ticket's service
	 * name) may hold a newline or a terminal's escape: one message stays
	 * one line, and shows them escaped */
	if (safe_len(msg) != strlen(msg))
		out = px_str_safe(msg, safe, sizeof(safe));
	if (log_stderr && log_prefix != NULL)
		fprintf(stderr, "%s%s: %s\n", log_to_journal() ? sd[level] : "",
		    log_prefix, out);
	else if (log_stderr && log_to_journal())
		fprintf(stderr, "%s%s\n", sd[level], out);
	else if (log_stderr) {
		struct timespec ts;
		struct tm tm;
		char when[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld smbaccel[%s] %s\n", when,
		    ts.tv_nsec / 1000000, tag[level], out);
	} else
		syslog(prio[level], "%s", out);
}

#define LOGFN(name, level, witherr)			\
void							\
name(const char *fmt, ...)				\
{							\
	int saved = errno;				\
	va_list ap;					\
							\
	va_start(ap, fmt);				\
	vlog(level, witherr ? saved : 0, fmt, ap);	\
	va_end(ap);					\
	errno = saved;					\
}

LOGFN(log_warn, PX_LOG_WARN, 1)
LOGFN(log_warnx, PX_LOG_WARN, 0)
LOGFN(log_info, PX_LOG_INFO, 0)
LOGFN(log_debug, PX_LOG_DEBUG, 0)

void
fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog(PX_LOG_ERROR, saved, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(PX_LOG_ERROR, 0, fmt, ap);
	va_end(ap);
	exit(1);
}

/* ---- helpers of log lines ---------------------------------------------------- */

bool
px_lograte_ok(struct px_lograte *r, double now_ms, unsigned int burst,
    double interval_ms)
{
	if (r->n == 0 || now_ms - r->start_ms >= interval_ms) {
		r->start_ms = now_ms;
		r->n = 0;
	}
	if (r->n >= burst) {
		r->held++;
		return false;
	}
	r->n++;
	r->told = r->held;
	r->held = 0;
	return true;
}

bool
px_lograte_now(struct px_lograte *r, char *more, size_t len)
{
	if (!px_lograte_ok(r, px_now_ms(), PX_LOGRATE_BURST, PX_LOGRATE_MS))
		return false;
	px_lograte_more(r, more, len);
	return true;
}

const char *
px_lograte_more(const struct px_lograte *r, char *buf, size_t len)
{
	if (r->told == 0)
		snprintf(buf, len, "%s", "");
	else
		snprintf(buf, len, " (%llu more like it not logged)", r->told);
	return buf;
}

/* Bytes of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * form, no surrogate, nothing past U+10FFFF), 0 if there is none. */
static size_t
utf8_seq(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/*
 * The length of the next piece of s as px_str_safe writes it, through *in
 * the number of bytes of s it stands for: a control character (C0, DEL)
 * or a byte of no well-formed UTF-8 sequence becomes \xNN, a C1 control
 * (U+0080-U+009F, UTF-8 C2 80-9F) \u00NN, anything else stays.
 */
static size_t
safe_piece(const unsigned char *s, size_t *in)
{
	size_t n = utf8_seq(s);

	if (n == 0 || s[0] < 0x20 || s[0] == 0x7f) {
		*in = 1;
		return 4;
	}
	*in = n;
	if (s[0] == 0xc2 && s[1] <= 0x9f)
		return 6;
	return n;
}

static size_t
safe_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0, in;

	while (*p) {
		n += safe_piece(p, &in);
		p += in;
	}
	return n;
}

const char *
px_str_safe(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t o = 0, in, w;

	if (len == 0)
		return buf;
	while (*p) {
		w = safe_piece(p, &in);
		if (o + w >= len)
			break;          /* cut before, never inside, an escape */
		if (in == 1 && w == 4)
			snprintf(buf + o, 5, "\\x%02x", p[0]);
		else if (in == 2 && w == 6)
			snprintf(buf + o, 7, "\\u%04x", p[1]);
		else
			memcpy(buf + o, p, w);
		o += w;
		p += in;
	}
	buf[o] = '\0';
	return buf;
}

double
px_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int64_t
px_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *
px_addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(sin->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else
		snprintf(buf, len, "-");
	return buf;
}

bool
px_same_host(const struct sockaddr_storage *a,
    const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		    &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
	return false;
}

/*
 * Open directory dir, creating it (0700) if missing: not through a
 * symbolic link, and only if it is owned by root or by the user smbaccel
 * runs as and nobody else may write in it (another user could otherwise
 * put files of their own, or links, where smbaccel reads and writes).
 * One that cannot be written (a read-only mount: the unit's
 * ProtectSystem=strict outside its own directories) is said once here,
 * not at every write.  The descriptor, or -1, logged as "WHAT: ...: ELSE"
 * (what is then done without it).  With check (smbaccel -t) nothing is
 * created or written: a missing directory is fine (made at start) and
 * the write test is the permission's; 0 when usable.
 */
int
px_private_dir(const char *dir, const char *what, const char *otherwise,
    bool check)
{
	struct stat st;
	int dfd;

	if (check && lstat(dir, &st) == -1 && errno == ENOENT)
		return 0;
	if (!check && mkdir(dir, 0700) == -1 && errno != EEXIST) {
		log_warn("%s: cannot create %s: %s", what, dir, otherwise);
		return -1;
	}
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		log_warn("%s: cannot open %s (it must be a directory, not a "
		    "symbolic link): %s", what, dir, otherwise);
		return -1;
	}
	if (fstat(dfd, &st) == -1) {
		log_warn("%s: cannot stat %s: %s", what, dir, otherwise);
		close(dfd);
		return -1;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		log_warnx("%s: %s is owned by uid %u, not by root: %s (chown "
		    "root %s)", what, dir, (unsigned int)st.st_uid, otherwise,
		    dir);
		close(dfd);
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		log_warnx("%s: %s is writable by its group or by others (mode "
		    "%04o): %s (chmod go-w %s)", what, dir,
		    (unsigned int)(st.st_mode & 07777), otherwise, dir);
		close(dfd);
		return -1;
	}
	if (!check)     /* one left by a crash */
		(void)unlinkat(dfd, ".probe", AT_REMOVEDIR);
	if (faccessat(dfd, ".", W_OK, AT_EACCESS) == -1 || (!check &&
	    (mkdirat(dfd, ".probe", 0700) == -1 || unlinkat(dfd, ".probe",
	    AT_REMOVEDIR) == -1))) {
		log_warn("%s: cannot write in %s: %s", what, dir, otherwise);
		close(dfd);
		return -1;
	}
	if (check) {
		close(dfd);
		return 0;
	}
	return dfd;
}
