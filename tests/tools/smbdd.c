/*
 * smbdd - dd-style SMB client on libsmbclient: the "unmodified client doing
 * small writes" of the tests and benchmarks.
 *
 *   smbdd write|read|verify|mix URL BLOCK COUNT [options]
 *
 * write creates/truncates URL and writes COUNT blocks of BLOCK bytes; read
 * reads them back and checks every byte against the pattern; verify is read
 * plus a check that the file is exactly COUNT*BLOCK bytes long.  mix
 * creates/truncates URL and runs COUNT seeded random operations of up to
 * BLOCK bytes (writes, sequential and random reads, truncations, fstat,
 * close and reopen) against it and an in-memory model of the file: every
 * read, fstat and the final read of the whole file must match the model
 * (mix_run()).
 *
 * The data is a function of (seed, absolute offset) only: byte o is byte
 * o%8 (little-endian) of mix64(seed, o/8).  It has no period at any power
 * of two, so a block written at the wrong offset, two blocks swapped, or a
 * stale block is caught by read, whatever BLOCK and order were used.
 *
 * With -R SIZE (read or verify), the file is SIZE bytes of that pattern
 * and COUNT reads go to seeded random offsets instead (aligned to -a,
 * default BLOCK; -V: every read's length random in 1..BLOCK, offsets
 * then byte-aligned by default): what an application opening a document
 * does.  Reads past the end must come back short, exactly at SIZE.
 *
 * Exit status: 0 ok, 1 libsmbclient/system error, 2 usage, 3 data mismatch
 * (wrong byte, unexpected EOF, wrong size).  The last line on stdout is
 *   bytes=N seconds=S MBps=M ops=N cpu_user=U cpu_sys=Y cpu_per_op_us=Z
 * with MB = 1e6 bytes; seconds run from the return of smbc_open() to the
 * return of smbc_close(), so connection setup is not counted but a flush
 * on close is.  With -H PATH the session stays logged on after that line
 * (file closed, tree still connected) until PATH exists, at most
 * HOLD_MAX_S seconds: a caller's smbstatus or smbaccelctl conns can then
 * see a session that a short run would have ended before it looked.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The Makefile adds no samba include path; this header needs none. */
#include <samba-4.0/libsmbclient.h>

enum dd_mode {
	DD_WRITE = 0,
	DD_READ,
	DD_VERIFY,
	DD_MIX,
};

enum {
	EX_OK = 0,
	EX_ERR = 1,
	EX_USAGE = 2,
	EX_MISMATCH = 3,
};

struct dd_opts {
	enum dd_mode	 mode;
	const char	*url;
	size_t		 block;
	uint64_t	 count;
	uint64_t	 seed;
	char		 user[256];
	char		 pass[256];
	char		 domain[256];
	const char	*proto_min;
	const char	*proto_max;
	bool		 random_order;
	uint64_t	 rand_size;	/* -R: random offsets in a file this big */
	uint64_t	 align;		/* -a */
	bool		 vary;		/* -V */
	bool		 quiet;
	bool		 progress;
	bool		 strict_close;
	bool		 no_verify;
	bool		 kerberos;	/* -k: Kerberos only, from the ccache */
	int		 debug;
	uint64_t	 mix_gap;	/* -G: mix writes may start this far past EOF */
	char		 mix_trunc;	/* -t: mix truncates 'a'ny, 'g'row only, 'n'one */
	const char	*model_out;	/* -o: mix writes its model here */
	const char	*hold_until;	/* -H: stay logged on until this exists */
	unsigned int	 timeout_s;	/* -T; 0: libsmbclient's default */
	uint16_t	 port;		/* -p; 0: from URL or 445 */
};

/* -H: the longest the session is held after the result line */
#define HOLD_MAX_S	20

/* mix: the file never grows past this (the model is kept in memory). */
#define MIX_MAX_SIZE	(32ULL * 1024 * 1024)

static struct dd_opts opt;
static SMBCCTX *ctx;		/* the one libsmbclient context */
static bool progress_shown;	/* a "\r..." line is on stderr */
/* File scope so that exit() from die() leaves them reachable (LSan). */
static uint8_t *iobuf, *wantbuf;
static uint64_t *order;

static void die(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

static void
die(int status, const char *fmt, ...)
{
	va_list ap;

	if (progress_shown)
		fputc('\n', stderr);
	fputs("smbdd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: smbdd write|read|verify|mix smb://host[:port]/share/path BLOCK COUNT [options]\n"
	    "  BLOCK    bytes per I/O, suffix K or M (1024-based); mix: the largest\n"
	    "  COUNT    blocks; mix: operations\n"
	    "  -U user%%pass  credentials (default $SMBDD_USER/$SMBDD_PASS, else testuser%%testpass)\n"
	    "  -W domain      workgroup/domain for the login (with -k: the realm)\n"
	    "  -k             Kerberos only, no NTLM fallback; give -W REALM and\n"
	    "                 -U user (libsmbclient asks for user@SHORTDOMAIN\n"
	    "                 otherwise) and a URL with the server's FQDN.  With\n"
	    "                 a password libsmbclient gets a TGT and tickets of\n"
	    "                 its own; with an empty one (-U user%%) it takes them\n"
	    "                 from the credential cache ($KRB5CCNAME)\n"
	    "  -p port        TCP port (alternative to host:port in the URL)\n"
	    "  -s seed        pattern seed (default 1)\n"
	    "  -r             random block order (seeded permutation)\n"
	    "  -R size        read: COUNT reads at seeded random offsets of a\n"
	    "                 file of size bytes (short only at its end)\n"
	    "  -a align       -R: offsets aligned to this (default BLOCK, 1 with -V)\n"
	    "  -V             -R: read lengths random in 1..BLOCK\n"
	    "  -m [MIN:]MAX   client max (and min) protocol, e.g. SMB2_02, SMB3_11\n"
	    "  -n             read: do not verify the data\n"
	    "  -f             write: after close, stat the file and check its size\n"
	    "  -P             progress line on stderr every 0.5 s\n"
	    "  -q             quiet: only errors and the result line\n"
	    "  -D level       libsmbclient debug level (to stderr)\n"
	    "  -T seconds     libsmbclient timeout for the connection and each\n"
	    "                 request (default libsmbclient's own, 20)\n"
	    "  -G bytes       mix: writes may start up to this far past EOF\n"
	    "                 (default 0: never past EOF)\n"
	    "  -t any|grow|none  mix: truncations that shrink or grow the file\n"
	    "                 (default), only grow it, or none\n"
	    "  -o path        mix: write the model (the expected file) here\n"
	    "  -H path        after the result line, stay logged on (tree\n"
	    "                 connected) until path exists, at most 20 s\n");
	exit(EX_USAGE);
}

/* Splitmix64 finaliser over (seed, word index): a bijection of the word
 * index for a fixed seed, so no two words of one file repeat by design. */
static inline uint64_t
mix64(uint64_t seed, uint64_t w)
{
	uint64_t z = w * 0x9E3779B97F4A7C15ULL + (seed ^ 0xD1B54A32D192ED03ULL) *
	    0xBF58476D1CE4E5B9ULL;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static inline uint8_t
pattern_byte(uint64_t seed, uint64_t off)
{
	return (uint8_t)(mix64(seed, off >> 3) >> (8 * (off & 7)));
}

/* Fill dst with the pattern bytes of file offsets [off, off+len). */
static void
pattern_fill(uint8_t *dst, uint64_t off, size_t len, uint64_t seed)
{
	size_t i = 0;

	while (i < len && ((off + i) & 7) != 0) {
		dst[i] = pattern_byte(seed, off + i);
		i++;
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t v = mix64(seed, (off + i) >> 3);
		uint8_t b[8];
		int k;

		for (k = 0; k < 8; k++)
			b[k] = (uint8_t)(v >> (8 * k));
		memcpy(dst + i, b, 8);
	}
	for (; i < len; i++)
		dst[i] = pattern_byte(seed, off + i);
}

/* Parse a non-negative integer with an optional K/M/G suffix (1024-based). */
static int
parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (*s == '\0' || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return -1;
	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		mul = 1024;
		end++;
		break;
	case 'm': case 'M':
		mul = 1024 * 1024;
		end++;
		break;
	case 'g': case 'G':
		mul = 1024ULL * 1024 * 1024;
		end++;
		break;
	default:
		return -1;
	}
	if (*end == 'i' || *end == 'B' || *end == 'b')	/* 1KiB, 1KB */
		end++;
	if (*end == 'B')
		end++;
	if (*end != '\0' || (v != 0 && mul > UINT64_MAX / v))
		return -1;
	*out = v * mul;
	return 0;
}

static void
set_cred(char *dst, size_t dstlen, const char *src)
{
	if (strlen(src) >= dstlen)
		die(EX_USAGE, "credential too long");
	strcpy(dst, src);
}

/* "user%pass" or "user"; the password never appears in messages. */
static void
parse_userpass(const char *s)
{
	const char *pct = strchr(s, '%');
	size_t ulen = pct != NULL ? (size_t)(pct - s) : strlen(s);

	if (ulen >= sizeof(opt.user))
		die(EX_USAGE, "user name too long");
	memcpy(opt.user, s, ulen);
	opt.user[ulen] = '\0';
	if (pct != NULL)
		set_cred(opt.pass, sizeof(opt.pass), pct + 1);
}

static void
auth_fn(SMBCCTX *c, const char *srv, const char *shr, char *wg, int wglen,
    char *un, int unlen, char *pw, int pwlen)
{
	(void)c;
	(void)srv;
	(void)shr;
	if (opt.domain[0] != '\0')
		snprintf(wg, (size_t)wglen, "%s", opt.domain);
	snprintf(un, (size_t)unlen, "%s", opt.user);
	snprintf(pw, (size_t)pwlen, "%s", opt.pass);
}

static double
now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * -H: the result line is out (flushed, for a caller reading it through a
 * pipe); keep the session until the caller has looked at it and says so
 * by creating opt.hold_until, or HOLD_MAX_S have passed.
 */
static void
hold_session(void)
{
	double end = now_mono() + HOLD_MAX_S;
	struct timespec tick = { 0, 50 * 1000 * 1000 };

	if (opt.hold_until == NULL)
		return;
	fflush(stdout);
	while (access(opt.hold_until, F_OK) == -1 && now_mono() < end)
		nanosleep(&tick, NULL);
}

/* Seeded Fisher-Yates permutation of 0..n-1 (block indices for -r). */
static uint64_t *
make_order(uint64_t n, uint64_t seed)
{
	uint64_t *perm, i, state = seed ^ 0x5EEDF00DCAFEULL;

	if (n > SIZE_MAX / sizeof(*perm))
		die(EX_USAGE, "COUNT too large for -r");
	perm = malloc((size_t)n * sizeof(*perm));
	if (perm == NULL)
		die(EX_ERR, "malloc: %s", strerror(errno));
	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n; i > 1; i--) {
		uint64_t j, t;

		state += 0x9E3779B97F4A7C15ULL;
		j = mix64(0, state) % i;
		t = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = t;
	}
	return perm;
}

struct progress {
	double		 start;
	double		 last;
	uint64_t	 last_bytes;
};

static void
progress_tick(struct progress *p, uint64_t bytes, bool final)
{
	double t = now_mono();

	if (!final && t - p->last < 0.5)
		return;
	/* The running line shows the last interval, the final one the mean. */
	if (final)
		fprintf(stderr, "\r%10.1f MB  %8.1f MB/s average\n",
		    (double)bytes / 1e6, t > p->start ?
		    (double)bytes / 1e6 / (t - p->start) : 0.0);
	else
		fprintf(stderr, "\r%10.1f MB  %8.1f MB/s ", (double)bytes / 1e6,
		    (double)(bytes - p->last_bytes) / 1e6 / (t - p->last));
	progress_shown = !final;
	p->last = t;
	p->last_bytes = bytes;
}

/* Report the first differing byte of a block and exit 3. */
static void
mismatch(const uint8_t *got, const uint8_t *want, size_t len, uint64_t off)
{
	size_t i;

	for (i = 0; i < len && got[i] == want[i]; i++)
		;
	die(EX_MISMATCH, "mismatch at offset %" PRIu64
	    " (expected 0x%02x, got 0x%02x, seed %" PRIu64 ")",
	    off + i, want[i], got[i], opt.seed);
}

/* Full write of len bytes; libsmbclient may return short counts. */
static void
write_block_n(SMBCFILE *f, const uint8_t *data, uint64_t off, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = smbc_getFunctionWrite(ctx)(ctx, f, data + done,
		    len - done);

		if (n < 0)
			die(EX_ERR, "write at offset %" PRIu64 ": %s",
			    off + done, strerror(errno));
		if (n == 0)
			die(EX_ERR, "write at offset %" PRIu64
			    ": wrote 0 bytes", off + done);
		done += (size_t)n;
	}
}

static void
write_block(SMBCFILE *f, const uint8_t *data, uint64_t off)
{
	write_block_n(f, data, off, opt.block);
}

static void
read_block(SMBCFILE *f, uint8_t *data, uint64_t off)
{
	size_t done = 0;

	while (done < opt.block) {
		ssize_t n = smbc_getFunctionRead(ctx)(ctx, f, data + done,
		    opt.block - done);

		if (n < 0)
			die(EX_ERR, "read at offset %" PRIu64 ": %s",
			    off + done, strerror(errno));
		if (n == 0)
			die(EX_MISMATCH, "unexpected EOF at offset %" PRIu64,
			    off + done);
		done += (size_t)n;
	}
}

static void
make_context(void)
{
	ctx = smbc_new_context();
	if (ctx == NULL)
		die(EX_ERR, "smbc_new_context: %s", strerror(errno));
	smbc_setDebug(ctx, opt.debug);
	if (opt.timeout_s != 0)
		smbc_setTimeout(ctx, (int)(opt.timeout_s * 1000));
	smbc_setOptionDebugToStderr(ctx, 1);	/* stdout is for results */
	smbc_setOptionUseKerberos(ctx, opt.kerberos);
	smbc_setOptionFallbackAfterKerberos(ctx, !opt.kerberos);
	smbc_setOptionUseCCache(ctx, 0);	/* winbind's, not $KRB5CCNAME */
	smbc_setOptionNoAutoAnonymousLogin(ctx, 1);
	smbc_setOptionOneSharePerServer(ctx, 1);
	smbc_setFunctionAuthDataWithContext(ctx, auth_fn);
	smbc_setUser(ctx, opt.user);
	if (opt.port != 0)
		smbc_setPort(ctx, opt.port);
	if (opt.domain[0] != '\0')
		smbc_setWorkgroup(ctx, opt.domain);
	/*
	 * smbc_init_context() loads $HOME/.smb/smb.conf if it exists and only
	 * otherwise the system smb.conf; the tests give every client its own
	 * HOME.  -m goes through lp_set_cmdline and overrides both.
	 */
	if (smbc_init_context(ctx) == NULL)
		die(EX_ERR, "smbc_init_context: %s", strerror(errno));
	if ((opt.proto_min != NULL || opt.proto_max != NULL) &&
	    !smbc_setOptionProtocols(ctx, opt.proto_min, opt.proto_max))
		die(EX_USAGE, "bad protocol in -m");
}

static void
parse_args(int argc, char **argv)
{
	const char *env;
	uint64_t v;
	char *colon;
	int c;

	snprintf(opt.user, sizeof(opt.user), "testuser");
	snprintf(opt.pass, sizeof(opt.pass), "testpass");
	if ((env = getenv("SMBDD_USER")) != NULL)
		set_cred(opt.user, sizeof(opt.user), env);
	if ((env = getenv("SMBDD_PASS")) != NULL)
		set_cred(opt.pass, sizeof(opt.pass), env);
	opt.seed = 1;
	opt.mix_trunc = 'a';

	if (argc < 2)
		usage();
	if (strcmp(argv[1], "write") == 0)
		opt.mode = DD_WRITE;
	else if (strcmp(argv[1], "read") == 0)
		opt.mode = DD_READ;
	else if (strcmp(argv[1], "verify") == 0)
		opt.mode = DD_VERIFY;
	else if (strcmp(argv[1], "mix") == 0)
		opt.mode = DD_MIX;
	else
		usage();
	argc--;
	argv++;

	/* Options may come before or after the positional arguments. */
	while ((c = getopt(argc, argv, "U:W:p:s:rR:a:Vm:nfkPqD:T:G:t:o:H:h")) != -1) {
		switch (c) {
		case 'U':
			parse_userpass(optarg);
			break;
		case 'W':
			set_cred(opt.domain, sizeof(opt.domain), optarg);
			break;
		case 'p':
			if (parse_size(optarg, &v) == -1 || v == 0 || v > 65535)
				die(EX_USAGE, "bad port '%s'", optarg);
			opt.port = (uint16_t)v;
			break;
		case 's':
			if (parse_size(optarg, &opt.seed) == -1)
				die(EX_USAGE, "bad seed '%s'", optarg);
			break;
		case 'r':
			opt.random_order = true;
			break;
		case 'R':
			if (parse_size(optarg, &opt.rand_size) == -1 ||
			    opt.rand_size == 0)
				die(EX_USAGE, "bad size '%s'", optarg);
			break;
		case 'a':
			if (parse_size(optarg, &opt.align) == -1 ||
			    opt.align == 0)
				die(EX_USAGE, "bad alignment '%s'", optarg);
			break;
		case 'V':
			opt.vary = true;
			break;
		case 'm':
			if ((colon = strchr(optarg, ':')) != NULL) {
				*colon = '\0';
				opt.proto_min = optarg;
				opt.proto_max = colon + 1;
			} else
				opt.proto_max = optarg;
			break;
		case 'n':
			opt.no_verify = true;
			break;
		case 'k':
			opt.kerberos = true;
			break;
		case 'f':
			opt.strict_close = true;
			break;
		case 'P':
			opt.progress = true;
			break;
		case 'q':
			opt.quiet = true;
			break;
		case 'D':
			if (parse_size(optarg, &v) == -1 || v > 10)
				die(EX_USAGE, "bad debug level '%s'", optarg);
			opt.debug = (int)v;
			break;
		case 'G':
			if (parse_size(optarg, &opt.mix_gap) == -1 ||
			    opt.mix_gap > MIX_MAX_SIZE)
				die(EX_USAGE, "bad gap '%s'", optarg);
			break;
		case 'o':
			opt.model_out = optarg;
			break;
		case 'H':
			opt.hold_until = optarg;
			break;
		case 't':
			if (strcmp(optarg, "any") != 0 && strcmp(optarg, "grow") != 0 &&
			    strcmp(optarg, "none") != 0)
				die(EX_USAGE, "bad -t '%s' (any, grow, none)", optarg);
			opt.mix_trunc = optarg[0];
			break;
		case 'T':
			if (parse_size(optarg, &v) == -1 || v == 0 || v > 3600)
				die(EX_USAGE, "bad timeout '%s' (1 .. 3600 s)",
				    optarg);
			opt.timeout_s = (unsigned int)v;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 3)
		usage();
	opt.url = argv[optind];
	if (strncmp(opt.url, "smb://", 6) != 0)
		die(EX_USAGE, "URL must start with smb://");
	if (parse_size(argv[optind + 1], &v) == -1 || v == 0 ||
	    v > 64 * 1024 * 1024)
		die(EX_USAGE, "bad BLOCK '%s' (1 byte .. 64M)", argv[optind + 1]);
	opt.block = (size_t)v;
	if (parse_size(argv[optind + 2], &opt.count) == -1)
		die(EX_USAGE, "bad COUNT '%s'", argv[optind + 2]);
	if (opt.count != 0 && opt.block > (uint64_t)INT64_MAX / opt.count)
		die(EX_USAGE, "BLOCK*COUNT too large");
	if (opt.rand_size && (opt.mode == DD_WRITE || opt.random_order))
		die(EX_USAGE, "-R is for read and verify, without -r");
	if (opt.align == 0)
		opt.align = opt.vary ? 1 : opt.block;
}

/*
 * -R: COUNT reads at seeded offsets (and lengths, -V) of a file of
 * rand_size bytes, each checked against the pattern; a read that runs
 * past the end must stop exactly there.  Returns the bytes read.
 */
static uint64_t
random_reads(SMBCFILE *f)
{
	uint64_t state = opt.seed ^ 0xD0C5EEDULL, i, bytes = 0;
	uint64_t slots = (opt.rand_size + opt.align - 1) / opt.align;

	for (i = 0; i < opt.count; i++) {
		uint64_t off, want, len = opt.block;
		size_t done = 0;

		state += 0x9E3779B97F4A7C15ULL;
		off = mix64(1, state) % slots * opt.align;
		if (opt.vary)
			len = 1 + mix64(2, state) % opt.block;
		want = off + len <= opt.rand_size ? len : opt.rand_size - off;
		if (smbc_getFunctionLseek(ctx)(ctx, f, (off_t)off, SEEK_SET) ==
		    (off_t)-1)
			die(EX_ERR, "lseek to offset %" PRIu64 ": %s", off,
			    strerror(errno));
		while (done < len) {
			ssize_t n = smbc_getFunctionRead(ctx)(ctx, f,
			    iobuf + done, len - done);

			if (n < 0)
				die(EX_ERR, "read at offset %" PRIu64 ": %s",
				    off + done, strerror(errno));
			if (n == 0)
				break;
			done += (size_t)n;
		}
		if (done != want)
			die(EX_MISMATCH, "read of %" PRIu64 " bytes at offset %"
			    PRIu64 " returned %zu, expected %" PRIu64
			    " (file of %" PRIu64 ")", len, off, done, want,
			    opt.rand_size);
		if (!opt.no_verify || opt.mode == DD_VERIFY) {
			pattern_fill(wantbuf, off, done, opt.seed);
			if (memcmp(iobuf, wantbuf, done) != 0)
				mismatch(iobuf, wantbuf, done, off);
		}
		bytes += done;
	}
	return bytes;
}


/* ------------------------------------------------------------ mix */

/*
 * mix: COUNT seeded operations on one file, each checked against a model
 * of the file in memory (the model is what the file must hold; any read,
 * fstat or final content that differs is a mismatch, exit 3).  Operations,
 * by weight: write (appends that coalesce, rewrites anywhere, and with -G
 * writes starting past EOF, the gap reading as zeros), sequential 4 KiB
 * reads (read-ahead), random reads (also across EOF: a short read must end
 * exactly at EOF), ftruncate (shrink to at least half the size, or grow;
 * -t grow or none for servers that cannot shrink a file), fstat, close +
 * reopen.
 * Write data is the pattern of (seed + op number, offset), so a write
 * landing at the wrong offset or a stale one is caught.  At the end the
 * file is reopened and read whole.  The file never exceeds MIX_MAX_SIZE.
 */

static uint8_t *model;
static uint64_t mix_state;

static uint64_t
mix_rand(uint64_t n)
{
	mix_state += 0x9E3779B97F4A7C15ULL;
	return n == 0 ? 0 : mix64(opt.seed, mix_state) % n;
}

/* A length in [1, max]: half of them at most 1 KiB (small client I/O). */
static size_t
mix_len(size_t max)
{
	size_t small = max < 1024 ? max : 1024;

	return 1 + (size_t)(mix_rand(2) ? mix_rand(small) : mix_rand(max));
}

static SMBCFILE *
mix_open(int flags)
{
	SMBCFILE *f = smbc_getFunctionOpen(ctx)(ctx, opt.url, flags, 0644);

	if (f == NULL)
		die(EX_ERR, "open %s: %s", opt.url, strerror(errno));
	return f;
}

static void
mix_seek(SMBCFILE *f, uint64_t off)
{
	if (smbc_getFunctionLseek(ctx)(ctx, f, (off_t)off, SEEK_SET) == (off_t)-1)
		die(EX_ERR, "lseek to offset %" PRIu64 ": %s", off, strerror(errno));
}

/* Read up to len bytes at off (short only at EOF); returns the count. */
static size_t
mix_read(SMBCFILE *f, uint8_t *buf, uint64_t off, size_t len)
{
	size_t done = 0;

	mix_seek(f, off);
	while (done < len) {
		ssize_t n = smbc_getFunctionRead(ctx)(ctx, f, buf + done, len - done);

		if (n < 0)
			die(EX_ERR, "read at offset %" PRIu64 ": %s", off + done,
			    strerror(errno));
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return done;
}

/* Compare a read of [off, off+len) with the model of size msize. */
static void
mix_check(const uint8_t *got, size_t n, uint64_t off, size_t len,
    uint64_t msize, uint64_t op)
{
	uint64_t want = off >= msize ? 0 : (msize - off < len ? msize - off : len);

	if (n != want)
		die(EX_MISMATCH, "op %" PRIu64 ": read of %zu at offset %" PRIu64
		    " returned %zu bytes, expected %" PRIu64 " (file size %" PRIu64
		    ", seed %" PRIu64 ")", op, len, off, n, want, msize, opt.seed);
	if (n > 0 && memcmp(got, model + off, n) != 0)
		mismatch(got, model + off, n, off);
}

static int
mix_run(void)
{
	SMBCFILE *f;
	struct stat st;
	uint64_t op, msize = 0, seqpos = 0, bytes = 0;
	uint64_t nw = 0, nr = 0, nt = 0, ns = 0, nc = 0, wbytes = 0;
	double t0, secs;

	if (opt.block > 4 * 1024 * 1024)
		die(EX_USAGE, "mix: BLOCK at most 4M");
	model = calloc(1, MIX_MAX_SIZE + opt.block);
	iobuf = malloc(opt.block);
	if (model == NULL || iobuf == NULL)
		die(EX_ERR, "malloc: %s", strerror(errno));
	mix_state = opt.seed ^ 0x4D49584D4958ULL;
	f = mix_open(O_RDWR | O_CREAT | O_TRUNC);
	t0 = now_mono();
	for (op = 0; op < opt.count; op++) {
		uint64_t r = mix_rand(100), off;
		size_t len, n;

		if (r < 45) {			/* write */
			len = mix_len(opt.block);
			r = mix_rand(10);
			if (r < 6)
				off = msize;		/* append */
			else if (r < 9 || opt.mix_gap == 0)
				off = mix_rand(msize + 1);
			else
				off = msize + 1 + mix_rand(opt.mix_gap);
			if (off + len > MIX_MAX_SIZE)
				off = mix_rand(msize + 1), len = 1;
			if (off + len > MIX_MAX_SIZE)
				continue;
			pattern_fill(iobuf, off, len, opt.seed + op);
			mix_seek(f, off);
			write_block_n(f, iobuf, off, len);
			memcpy(model + off, iobuf, len);	/* a gap stays zero */
			if (off + len > msize)
				msize = off + len;
			nw++, wbytes += len;
		} else if (r < 65) {		/* sequential 4 KiB reads */
			if (seqpos >= msize || mix_rand(20) == 0)
				seqpos = mix_rand(msize + 1) & ~4095ULL;
			len = opt.block < 4096 ? opt.block : 4096;
			n = mix_read(f, iobuf, seqpos, len);
			mix_check(iobuf, n, seqpos, len, msize, op);
			seqpos += len;
			nr++, bytes += n;
		} else if (r < 85) {		/* random read, also across EOF */
			len = mix_len(opt.block);
			off = mix_rand(msize + opt.block);
			n = mix_read(f, iobuf, off, len);
			mix_check(iobuf, n, off, len, msize, op);
			nr++, bytes += n;
		} else if (r < 89) {		/* ftruncate: shrink or grow */
			uint64_t sz = msize / 2 + mix_rand(msize - msize / 2 + opt.block + 1);

			if (opt.mix_trunc == 'n')
				continue;
			if (opt.mix_trunc == 'g' && sz < msize)
				sz = msize + (sz - msize / 2) % (opt.block + 1);
			if (sz > MIX_MAX_SIZE)
				sz = msize;
			if (smbc_getFunctionFtruncate(ctx)(ctx, f, (off_t)sz) < 0)
				die(EX_ERR, "op %" PRIu64 ": ftruncate to %" PRIu64 ": %s",
				    op, sz, strerror(errno));
			if (sz < msize)
				memset(model + sz, 0, msize - sz);
			msize = sz;
			nt++;
		} else if (r < 96) {		/* fstat */
			if (smbc_getFunctionFstat(ctx)(ctx, f, &st) < 0)
				die(EX_ERR, "op %" PRIu64 ": fstat: %s", op, strerror(errno));
			if ((uint64_t)st.st_size != msize)
				die(EX_MISMATCH, "op %" PRIu64 ": fstat size %jd, expected %"
				    PRIu64 " (seed %" PRIu64 ")", op, (intmax_t)st.st_size,
				    msize, opt.seed);
			ns++;
		} else {			/* close (a flush point) + reopen */
			if (smbc_getFunctionClose(ctx)(ctx, f) < 0)
				die(EX_ERR, "op %" PRIu64 ": close: %s", op, strerror(errno));
			f = mix_open(O_RDWR);
			nc++;
		}
	}
	if (smbc_getFunctionClose(ctx)(ctx, f) < 0)
		die(EX_ERR, "close %s: %s", opt.url, strerror(errno));
	/* The whole file, read back on a fresh open. */
	f = mix_open(O_RDONLY);
	if (smbc_getFunctionFstat(ctx)(ctx, f, &st) < 0)
		die(EX_ERR, "fstat: %s", strerror(errno));
	if ((uint64_t)st.st_size != msize)
		die(EX_MISMATCH, "final size %jd, expected %" PRIu64 " (seed %" PRIu64 ")",
		    (intmax_t)st.st_size, msize, opt.seed);
	for (op = 0; op < msize; op += opt.block) {
		size_t len = msize - op < opt.block ? (size_t)(msize - op) : opt.block;
		size_t n = mix_read(f, iobuf, op, len);

		mix_check(iobuf, n, op, len, msize, opt.count);
	}
	if (smbc_getFunctionClose(ctx)(ctx, f) < 0)
		die(EX_ERR, "close %s: %s", opt.url, strerror(errno));
	secs = now_mono() - t0;
	if (opt.model_out != NULL) {
		FILE *m = fopen(opt.model_out, "wb");

		if (m == NULL || (msize > 0 && fwrite(model, 1, msize, m) != msize) ||
		    fclose(m) != 0)
			die(EX_ERR, "cannot write the model to %s", opt.model_out);
	}
	if (!opt.quiet)
		fprintf(stderr, "smbdd: mix %s: %" PRIu64 " ops (writes %" PRIu64
		    " = %" PRIu64 " bytes, reads %" PRIu64 ", truncates %" PRIu64
		    ", fstats %" PRIu64 ", reopens %" PRIu64 "), final size %" PRIu64
		    ", seed %" PRIu64 "\n", opt.url, opt.count, nw, wbytes, nr, nt,
		    ns, nc, msize, opt.seed);
	printf("bytes=%" PRIu64 " seconds=%.6f MBps=%.3f ops=%" PRIu64
	    " size=%" PRIu64 "\n", wbytes + bytes, secs,
	    secs > 0 ? (double)(wbytes + bytes) / 1e6 / secs : 0.0, opt.count, msize);
	hold_session();
	free(model); model = NULL;
	free(iobuf); iobuf = NULL;
	smbc_free_context(ctx, 1); ctx = NULL;
	return EX_OK;
}

int
main(int argc, char **argv)
{
	SMBCFILE *f;
	struct rusage ru;
	struct progress prog;
	struct stat st;
	uint64_t i, bytes = 0;
	double t0, t1, t_open, secs, cpu_u, cpu_s;
	bool sequential;

	parse_args(argc, argv);
	make_context();
	if (opt.mode == DD_MIX)
		return mix_run();

	iobuf = malloc(opt.block);
	wantbuf = malloc(opt.block);
	if (iobuf == NULL || wantbuf == NULL)
		die(EX_ERR, "malloc: %s", strerror(errno));
	if (opt.random_order)
		order = make_order(opt.count, opt.seed);
	sequential = order == NULL;

	t_open = now_mono();
	f = smbc_getFunctionOpen(ctx)(ctx, opt.url, opt.mode == DD_WRITE ?
	    O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY, 0644);
	if (f == NULL)
		die(EX_ERR, "open %s: %s", opt.url, strerror(errno));
	t0 = now_mono();
	t_open = t0 - t_open;

	if (opt.mode == DD_VERIFY) {
		uint64_t want_size = opt.rand_size ? opt.rand_size :
		    opt.block * opt.count;

		if (smbc_getFunctionFstat(ctx)(ctx, f, &st) < 0)
			die(EX_ERR, "fstat %s: %s", opt.url, strerror(errno));
		if ((uint64_t)st.st_size != want_size)
			die(EX_MISMATCH, "size of %s is %jd, expected %" PRIu64,
			    opt.url, (intmax_t)st.st_size, want_size);
	}

	memset(&prog, 0, sizeof(prog));
	prog.start = prog.last = t0;
	if (opt.rand_size)
		bytes = random_reads(f);
	for (i = 0; i < opt.count && !opt.rand_size; i++) {
		uint64_t blk = sequential ? i : order[i];
		uint64_t off = blk * opt.block;

		if (!sequential && smbc_getFunctionLseek(ctx)(ctx, f,
		    (off_t)off, SEEK_SET) == (off_t)-1)
			die(EX_ERR, "lseek to offset %" PRIu64 ": %s", off,
			    strerror(errno));
		if (opt.mode == DD_WRITE) {
			pattern_fill(iobuf, off, opt.block, opt.seed);
			write_block(f, iobuf, off);
		} else {
			read_block(f, iobuf, off);
			if (!opt.no_verify || opt.mode == DD_VERIFY) {
				pattern_fill(wantbuf, off, opt.block, opt.seed);
				if (memcmp(iobuf, wantbuf, opt.block) != 0)
					mismatch(iobuf, wantbuf, opt.block, off);
			}
		}
		bytes += opt.block;
		if (opt.progress)
			progress_tick(&prog, bytes, false);
	}

	/* A write-behind cache may only report a lost write here. */
	if (smbc_getFunctionClose(ctx)(ctx, f) < 0)
		die(EX_ERR, "close %s after %" PRIu64 " bytes: %s", opt.url,
		    bytes, strerror(errno));
	t1 = now_mono();
	if (opt.progress)
		progress_tick(&prog, bytes, true);

	if (opt.strict_close && opt.mode == DD_WRITE) {
		if (smbc_getFunctionStat(ctx)(ctx, opt.url, &st) < 0)
			die(EX_ERR, "stat %s after close: %s", opt.url,
			    strerror(errno));
		if ((uint64_t)st.st_size != opt.block * opt.count)
			die(EX_MISMATCH, "size of %s after close is %jd, "
			    "expected %" PRIu64, opt.url, (intmax_t)st.st_size,
			    opt.block * opt.count);
	}

	if (getrusage(RUSAGE_SELF, &ru) == -1)
		die(EX_ERR, "getrusage: %s", strerror(errno));
	cpu_u = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	cpu_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	secs = t1 - t0;
	if (!opt.quiet)
		fprintf(stderr, "smbdd: %s %s: %" PRIu64 " x %zu bytes%s, "
		    "open %.3f s, I/O+close %.3f s\n",
		    opt.mode == DD_WRITE ? "wrote" : "read", opt.url,
		    opt.count, opt.block, sequential ? "" : " (random order)",
		    t_open, secs);
	printf("bytes=%" PRIu64 " seconds=%.6f MBps=%.3f ops=%" PRIu64
	    " cpu_user=%.3f cpu_sys=%.3f cpu_per_op_us=%.3f\n",
	    bytes, secs, secs > 0 ? (double)bytes / 1e6 / secs : 0.0,
	    opt.count, cpu_u, cpu_s,
	    opt.count > 0 ? (cpu_u + cpu_s) * 1e6 / (double)opt.count : 0.0);

	hold_session();
	free(order); order = NULL;
	free(iobuf); iobuf = NULL;
	free(wantbuf); wantbuf = NULL;
	smbc_free_context(ctx, 1); ctx = NULL;
	return EX_OK;
}
