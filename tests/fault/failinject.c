/*
 * failinject.c - LD_PRELOAD shim that makes one call fail, for fault
 * injection tests (libsmb2's ALLOC_FAIL, as a preload instead of a build
 * flag).  Counts calls of malloc/calloc/realloc (together), read, write,
 * connect and accept/accept4, and fails the Nth of a kind.
 *
 *   cc -shared -fPIC -O2 -o failinject.so tests/fault/failinject.c -ldl
 *   LD_PRELOAD=./failinject.so FI_MALLOC=17 FI_ARM=accept bin/smbaccel ...
 *
 * Environment (read once at start-up):
 *   FI_MALLOC=N   fail the Nth allocation (NULL, errno ENOMEM)
 *   FI_READ=N     fail the Nth read() on a socket (-1, FI_READ_ERRNO,
 *                 default ECONNRESET)
 *   FI_WRITE=N    fail the Nth write() on a socket (-1, FI_WRITE_ERRNO,
 *                 default EPIPE)
 *   FI_CONNECT=N  fail the Nth connect() (-1, FI_CONNECT_ERRNO, default
 *                 ECONNREFUSED)
 *   FI_ACCEPT=N   fail the Nth accept/accept4 (-1, FI_ACCEPT_ERRNO, default
 *                 EMFILE)
 *   FI_STICKY=1   fail every call of the kind from the Nth on, not just it
 *   FI_ARM=accept count nothing until an accept succeeds, and restart every
 *                 count at each successful accept: N then means "the Nth
 *                 call since the client connected", so one daemon serves a
 *                 whole series of sessions, each with its own fault.
 *   FI_CTL=FILE   with FI_ARM: at each accept re-read "KIND N [sticky]"
 *                 lines from FILE (KIND malloc, read, write, connect,
 *                 accept; sticky as FI_STICKY for that kind); kinds not
 *                 named are not failed.  The test writes the next N
 *                 there before each session.
 *   FI_SKIP=NAME  never fail an allocation made directly by a shared
 *                 object whose path contains NAME (e.g. "libev": libev
 *                 aborts on a failed allocation unless the program
 *                 installs an allocator with ev_set_allocator)
 *   FI_LOG=FILE   append one line per failed call, and at each accept the
 *                 counts of the previous session ("session malloc=M
 *                 read=R write=W connect=C accept=A"), so a test learns how
 *                 many allocations a session makes.
 * Reads and writes on fds 0-2 (logging) are neither counted nor failed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);

enum kind { K_MALLOC, K_READ, K_WRITE, K_CONNECT, K_ACCEPT, K_N };
static const char *const kname[K_N] = {
	"malloc", "read", "write", "connect", "accept",
};
static const int kerrno_def[K_N] = {
	ENOMEM, ECONNRESET, EPIPE, ECONNREFUSED, EMFILE,
};

static struct {
	int inited;              /* 0 no, 1 in progress, 2 done */
	int armed;
	int arm_on_accept;
	int sticky[K_N];
	unsigned long long target[K_N];   /* 0: never */
	unsigned long long count[K_N];
	int err[K_N];
	char ctl[512];
	char log[512];
	char skip[64];
} fi;

static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_connect)(int, const struct sockaddr *, socklen_t);
static int (*real_accept)(int, struct sockaddr *, socklen_t *);
static int (*real_accept4)(int, struct sockaddr *, socklen_t *, int);

static unsigned long long
env_ull(const char *name)
{
	const char *v = getenv(name);

	return v ? strtoull(v, NULL, 10) : 0;
}

static void
logf_(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int fd, n;

	if (fi.log[0] == '\0')
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	fd = open(fi.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd == -1)
		return;
	(void)syscall(SYS_write, fd, buf, (size_t)n);
	close(fd);
}

static void
init(void)
{
	const char *v;
	int k;

	if (fi.inited)
		return;
	fi.inited = 1;
	fi.target[K_MALLOC] = env_ull("FI_MALLOC");
	fi.target[K_READ] = env_ull("FI_READ");
	fi.target[K_WRITE] = env_ull("FI_WRITE");
	fi.target[K_CONNECT] = env_ull("FI_CONNECT");
	fi.target[K_ACCEPT] = env_ull("FI_ACCEPT");
	fi.err[K_MALLOC] = ENOMEM;
	fi.err[K_READ] = (int)env_ull("FI_READ_ERRNO");
	fi.err[K_WRITE] = (int)env_ull("FI_WRITE_ERRNO");
	fi.err[K_CONNECT] = (int)env_ull("FI_CONNECT_ERRNO");
	fi.err[K_ACCEPT] = (int)env_ull("FI_ACCEPT_ERRNO");
	for (k = 0; k < K_N; k++)
		if (fi.err[k] == 0)
			fi.err[k] = kerrno_def[k];
	for (k = 0; k < K_N; k++)
		fi.sticky[k] = env_ull("FI_STICKY") != 0;
	v = getenv("FI_ARM");
	fi.arm_on_accept = v && strcmp(v, "accept") == 0;
	fi.armed = !fi.arm_on_accept;
	if ((v = getenv("FI_CTL")) != NULL)
		snprintf(fi.ctl, sizeof(fi.ctl), "%s", v);
	if ((v = getenv("FI_LOG")) != NULL)
		snprintf(fi.log, sizeof(fi.log), "%s", v);
	if ((v = getenv("FI_SKIP")) != NULL)
		snprintf(fi.skip, sizeof(fi.skip), "%s", v);
	fi.inited = 2;
}

static int skipped(const void *caller);

/* Should this call of kind k (made from caller) fail?  Counts it. */
static int
hit(enum kind k, const void *caller)
{
	unsigned long long n;

	if (fi.inited != 2) {
		if (fi.inited == 1)
			return 0;       /* getenv inside init: never fail */
		init();
	}
	if (!fi.armed)
		return 0;
	n = ++fi.count[k];
	if (fi.target[k] != 0 &&
	    (n == fi.target[k] || (fi.sticky[k] && n > fi.target[k]))) {
		if (k == K_MALLOC && skipped(caller)) {
			logf_("failinject: not failing %s #%llu (in %s)\n",
			    kname[k], n, fi.skip);
			return 0;
		}
		logf_("failinject: failing %s #%llu\n", kname[k], n);
		return 1;
	}
	return 0;
}

/* A successful accept: report the last session and restart the counts. */
static void
rearm(void)
{
	char buf[512], kindbuf[16], mode[16];
	unsigned long long n;
	int fd, k;
	ssize_t len;
	char *line, *save = NULL;

	if (!fi.arm_on_accept)
		return;
	if (fi.armed)
		logf_("session malloc=%llu read=%llu write=%llu connect=%llu "
		    "accept=%llu\n", fi.count[K_MALLOC], fi.count[K_READ],
		    fi.count[K_WRITE], fi.count[K_CONNECT], fi.count[K_ACCEPT]);
	memset(fi.count, 0, sizeof(fi.count));
	fi.armed = 1;
	if (fi.ctl[0] == '\0')
		return;
	memset(fi.target, 0, sizeof(fi.target));
	memset(fi.sticky, 0, sizeof(fi.sticky));
	fd = open(fi.ctl, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return;
	len = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return;
	buf[len] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	    line = strtok_r(NULL, "\n", &save)) {
		mode[0] = '\0';
		if (sscanf(line, "%15s %llu %15s", kindbuf, &n, mode) < 2)
			continue;
		for (k = 0; k < K_N; k++)
			if (strcmp(kindbuf, kname[k]) == 0) {
				fi.target[k] = n;
				fi.sticky[k] = strcmp(mode, "sticky") == 0;
			}
	}
}

/* Is the allocation made by code in the FI_SKIP object? */
static int
skipped(const void *caller)
{
	Dl_info di;

	return fi.skip[0] && dladdr(caller, &di) && di.dli_fname &&
	    strstr(di.dli_fname, fi.skip) != NULL;
}

void *
malloc(size_t n)
{
	if (hit(K_MALLOC, __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(n);
}

void *
calloc(size_t a, size_t b)
{
	if (hit(K_MALLOC, __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_calloc(a, b);
}

void *
realloc(void *p, size_t n)
{
	if (n != 0 && hit(K_MALLOC, __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_realloc(p, n);
}

#define RESOLVE(var, name) do {						\
	if ((var) == NULL)						\
		*(void **)&(var) = dlsym(RTLD_NEXT, (name));		\
} while (0)

ssize_t
read(int fd, void *buf, size_t n)
{
	RESOLVE(real_read, "read");
	if (fd > 2 && hit(K_READ, NULL)) {
		errno = fi.err[K_READ];
		return -1;
	}
	return real_read(fd, buf, n);
}

ssize_t
write(int fd, const void *buf, size_t n)
{
	RESOLVE(real_write, "write");
	if (fd > 2 && hit(K_WRITE, NULL)) {
		errno = fi.err[K_WRITE];
		return -1;
	}
	return real_write(fd, buf, n);
}

int
connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	RESOLVE(real_connect, "connect");
	if (hit(K_CONNECT, NULL)) {
		errno = fi.err[K_CONNECT];
		return -1;
	}
	return real_connect(fd, sa, len);
}

int
accept(int fd, struct sockaddr *sa, socklen_t *len)
{
	int rc;

	RESOLVE(real_accept, "accept");
	if (hit(K_ACCEPT, NULL)) {
		errno = fi.err[K_ACCEPT];
		return -1;
	}
	rc = real_accept(fd, sa, len);
	if (rc != -1)
		rearm();
	return rc;
}

int
accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	int rc;

	RESOLVE(real_accept4, "accept4");
	if (hit(K_ACCEPT, NULL)) {
		errno = fi.err[K_ACCEPT];
		return -1;
	}
	rc = real_accept4(fd, sa, len, flags);
	if (rc != -1)
		rearm();
	return rc;
}
