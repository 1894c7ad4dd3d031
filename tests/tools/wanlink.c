/*
 * wanlink - a packet-level WAN link between two network namespaces, for
 * the tests and the benchmarks (the test kernel has no netem, and drop
 * rules on a veth drop whole 64 KB GSO bursts rather than packets).
 *
 *   wanlink -a [NS:]IFNAME -b [NS:]IFNAME -d MS [-r RATE] [-l LOSS] [-q BYTES]
 *           [-s SEED] [--delay-up MS] [--delay-down MS] [--rate-up R]
 *           [--rate-down R] [--loss-up P] [--loss-down P] [--queue-up B]
 *           [--queue-down B] [--mem BYTES] [-S STATSFILE] [-c FIFO]
 *           [-D DROPLOG] [-v]
 *
 * wanlink creates one TUN device (IFF_TUN | IFF_NO_PI) in each of two
 * network namespaces and carries the IP packets between them: what the
 * kernel of namespace A sends into device a comes out of device b into
 * namespace B, and back.  "up" is a -> b, "down" is b -> a.  Addresses,
 * routes and "ip link set up" are left to the caller; the devices vanish
 * when wanlink exits.  Without IFF_VNET_HDR the kernel hands a TUN device
 * no GSO/TSO super-packets, so every packet here is one wire packet of at
 * most the device's MTU, and loss hits single packets as on a real link.
 *
 * Link model, per direction, in this order:
 *   1. loss: every packet draws one number from a splitmix64 generator
 *      seeded with (seed, direction) and is dropped with probability
 *      `loss` (drop_loss).  The draw depends only on the packet's index in
 *      its direction, so two runs with the same seed and the same packets
 *      drop the same ones.  A "burst" command raises the probability for a
 *      while; the draws stay the same.
 *   2. a tail-drop queue in front of a serializer of `rate` bit/s (IP bytes;
 *      no link-layer overhead): a packet that would make the bytes waiting
 *      to be serialized exceed `queue` is dropped (drop_queue).  Default
 *      queue: one bandwidth-delay product, rate x (delay up + delay down),
 *      at least 32 KiB.
 *   3. the serializer: the packet leaves at max(arrival, end of the previous
 *      packet) + size / rate, exact to the nanosecond (no token bucket).
 *   4. delay: it is written into the other device `delay` after it left.
 * Departure times only grow and the delay is constant, so one FIFO per
 * direction holds every packet in flight.  The FIFO is a byte ring of
 * fixed size, allocated at start: 2 x (queue + rate x delay) + 1 MiB, or
 * --mem if that is larger or the rate is unlimited (default 32 MiB); a
 * packet that finds it full is dropped (drop_full).  Memory is therefore bounded whatever is
 * sent.  Rate 0 means unlimited (no queue, no serializer).
 *
 * Timing: one thread, ppoll() with nanosecond timeouts and 1 us timer
 * slack; a packet is written at the first wake-up at or after its due
 * time, so on a busy machine it may be late (never early), and the mean
 * rate still cannot exceed `rate` (departure times are computed, not
 * measured).  Reads are batched (up to 64 per device per wake-up).
 *
 * Counters per direction (pkts_in, bytes_in, pkts_out, bytes_out,
 * drop_loss, drop_queue, drop_full, write_errors, queue_peak, ...) are
 * printed to stderr at exit and on SIGUSR1, and with -S written to a file
 * (rewritten atomically every 200 ms and at exit).  -D logs every drop as
 * "DIR INDEX REASON" (INDEX counts the packets of that direction from 1).
 *
 * Control (-c FIFO, created if missing), one command per line:
 *   loss P [up|down]            set the loss probability (percent)
 *   burst P SECONDS [up|down]   loss P for SECONDS, then back to the setting
 *   set KEY=VALUE... [up|down]  change delay=MS, rate=R, loss=P, queue=B or
 *                               queue=auto (one BDP) of a running link; meant
 *                               for an idle link (packets in flight keep
 *                               their times); size the ring with --mem
 *   stats                       write the stats file now
 * After each line (a bad one included) the stats file is rewritten, its
 * first line carrying ctl_seq=N (lines executed so far) and ctl_bad=N
 * (of them, refused): a script that has written its Nth line waits for
 * ctl_seq >= N and then knows the command took effect (wanlink.sh).
 * SIGINT or SIGTERM: write the counters and exit 0 (packets still in
 * flight are dropped, as when a cable is pulled).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_tun.h>

#define PKT_MAX		65536		/* largest packet read from a TUN */
#define READ_BATCH	64		/* packets read per device per wake-up */
#define QUEUE_MIN	(32 * 1024)
#define MEM_DEFAULT	(32u * 1024 * 1024)
#define MEM_MAX		((uint64_t)1 << 30)
#define STATS_EVERY_NS	200000000ull
#define REC_WRAP	UINT32_MAX	/* ring record: continue at offset 0 */
#define NSEC		1000000000ull

enum { UP = 0, DOWN = 1 };

/* A packet in flight: header, then len bytes, padded to 8. */
struct rec {
	uint64_t	 due_ns;	/* when it is written out */
	uint32_t	 len;		/* or REC_WRAP */
	uint32_t	 pad;
};

/*
 * Ring of records.  Invariant: count == 0 implies head == tail == 0;
 * otherwise the records run from head to tail, wrapping once through a
 * REC_WRAP record (or an end gap too short for a header).  tail <= head
 * with count > 0 means the live bytes wrap.
 */
struct ring {
	uint8_t		*buf;
	size_t		 cap;
	size_t		 head;
	size_t		 tail;
	size_t		 count;
	size_t		 bytes;		/* payload bytes held */
};

struct dirn {
	const char	*name;		/* "up" / "down" */
	int		 in_fd;
	int		 out_fd;
	/* settings */
	uint64_t	 delay_ns;
	uint64_t	 rate_bps;	/* 0: unlimited */
	uint64_t	 queue;		/* bytes waiting to be serialized, at most */
	bool		 queue_auto;	/* queue is one BDP, follows delay/rate */
	double		 loss;		/* probability 0..1 */
	double		 burst_loss;
	uint64_t	 burst_until_ns;	/* 0: no burst */
	/* state */
	uint64_t	 busy_until_ns;	/* serializer busy until */
	uint64_t	 rng;
	struct ring	 ring;
	/* counters */
	uint64_t	 pkts_in, bytes_in, pkts_out, bytes_out;
	uint64_t	 drop_loss, drop_queue, drop_full, write_errors;
	uint64_t	 queue_peak;	/* bytes waiting for the serializer */
	uint64_t	 inflight_peak;	/* bytes in the ring */
	uint64_t	 late_max_ns;	/* worst lateness of a write */
};

static struct dirn dirs[2];
static volatile sig_atomic_t got_stop, got_usr1;
static const char *stats_path, *ctl_path, *droplog_path;
static FILE *droplog;
static int ctl_fd = -1;
static char ctl_buf[1024];
static size_t ctl_len;
static uint64_t ctl_seq, ctl_bad;	/* control lines executed, refused */
static uint64_t seed = 1;
static int verbose;
static uint64_t start_ns;

static void __attribute__((format(printf, 1, 2), noreturn))
fatalx(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "wanlink: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void __attribute__((format(printf, 1, 2), noreturn))
fatal(const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	fprintf(stderr, "wanlink: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(e));
	exit(1);
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

/* splitmix64 (Steele, Lea, Flood 2014): one 64-bit draw per packet. */
static uint64_t
rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- ring ------------------------------------------------------------- */

static size_t
rec_size(size_t len)
{
	return sizeof(struct rec) + ((len + 7) & ~(size_t)7);
}

/* Append a packet; false when it does not fit. */
static bool
ring_push(struct ring *r, uint64_t due, const uint8_t *p, size_t len)
{
	size_t need = rec_size(len);
	struct rec h = { .due_ns = due, .len = (uint32_t)len };

	if (r->count > 0 && r->tail <= r->head) {
		/* wrapped: free space is [tail, head) */
		if (r->head - r->tail < need)
			return false;
	} else if (r->cap - r->tail < need) {
		/* linear, no room at the end: wrap if the start has room */
		if (r->count == 0 || r->head < need)
			return false;	/* empty: head == 0, so it never fits */
		if (r->cap - r->tail >= sizeof(struct rec)) {
			struct rec w = { .len = REC_WRAP };

			memcpy(r->buf + r->tail, &w, sizeof(w));
		}
		r->tail = 0;
	}
	memcpy(r->buf + r->tail, &h, sizeof(h));
	memcpy(r->buf + r->tail + sizeof(h), p, len);
	r->tail += need;
	r->count++;
	r->bytes += len;
	return true;
}

/* The oldest record (NULL when empty); its payload follows it. */
static const struct rec *
ring_front(struct ring *r)
{
	const struct rec *h;

	if (r->count == 0)
		return NULL;
	if (r->cap - r->head < sizeof(struct rec))
		r->head = 0;
	h = (const struct rec *)(r->buf + r->head);
	if (h->len == REC_WRAP) {
		r->head = 0;
		h = (const struct rec *)r->buf;
	}
	return h;
}

static void
ring_pop(struct ring *r)
{
	const struct rec *h = ring_front(r);

	r->head += rec_size(h->len);
	r->bytes -= h->len;
	if (--r->count == 0)
		r->head = r->tail = 0;
}

/* ---- the link --------------------------------------------------------- */

static void
log_drop(const struct dirn *d, const char *why)
{
	if (droplog != NULL)
		fprintf(droplog, "%s %" PRIu64 " %s\n", d->name, d->pkts_in,
		    why);
}

static uint64_t
backlog_bytes(const struct dirn *d, uint64_t now)
{
	if (d->rate_bps == 0 || d->busy_until_ns <= now)
		return 0;
	return (uint64_t)((double)(d->busy_until_ns - now) *
	    (double)d->rate_bps / 8e9);
}

/* A packet read from d's input device at time now. */
static void
arrive(struct dirn *d, uint64_t now, const uint8_t *p, size_t len)
{
	double loss = d->loss;
	uint64_t u, due, q;

	d->pkts_in++;
	d->bytes_in += len;
	if (d->burst_until_ns != 0) {
		if (now < d->burst_until_ns) {
			loss = d->burst_loss;
		} else {
			d->burst_until_ns = 0;
			if (verbose)
				fprintf(stderr, "wanlink: %s burst over\n",
				    d->name);
		}
	}
	u = rng_next(&d->rng);
	if (loss > 0 && (double)u < loss * 18446744073709551616.0) {
		d->drop_loss++;
		log_drop(d, "loss");
		return;
	}
	if (d->rate_bps != 0) {
		q = backlog_bytes(d, now);
		if (q + len > d->queue) {
			d->drop_queue++;
			log_drop(d, "queue");
			return;
		}
		if (q + len > d->queue_peak)
			d->queue_peak = q + len;
		if (d->busy_until_ns < now)
			d->busy_until_ns = now;
		d->busy_until_ns += (uint64_t)ceil((double)len * 8e9 /
		    (double)d->rate_bps);
		due = d->busy_until_ns + d->delay_ns;
	} else {
		due = now + d->delay_ns;
	}
	if (!ring_push(&d->ring, due, p, len)) {
		d->drop_full++;
		log_drop(d, "full");
		return;
	}
	if (d->ring.bytes > d->inflight_peak)
		d->inflight_peak = d->ring.bytes;
}

/* Write out every packet due by now. */
static void
deliver(struct dirn *d, uint64_t now)
{
	const struct rec *h;

	while ((h = ring_front(&d->ring)) != NULL && h->due_ns <= now) {
		if (now - h->due_ns > d->late_max_ns)
			d->late_max_ns = now - h->due_ns;
		if (write(d->out_fd, (const uint8_t *)(h + 1), h->len) ==
		    (ssize_t)h->len) {
			d->pkts_out++;
			d->bytes_out += h->len;
		} else {
			d->write_errors++;
		}
		ring_pop(&d->ring);
	}
}

static uint64_t
next_due(struct dirn *d)
{
	const struct rec *h = ring_front(&d->ring);

	return h == NULL ? UINT64_MAX : h->due_ns;
}

/* ---- counters --------------------------------------------------------- */

static void
print_dir(FILE *f, const struct dirn *d, uint64_t now)
{
	fprintf(f, "%s pkts_in=%" PRIu64 " bytes_in=%" PRIu64 " pkts_out=%"
	    PRIu64 " bytes_out=%" PRIu64 " drop_loss=%" PRIu64 " drop_queue=%"
	    PRIu64 " drop_full=%" PRIu64 " write_errors=%" PRIu64
	    " in_flight=%zu queue_now=%" PRIu64 " queue_peak=%" PRIu64
	    " in_flight_peak=%" PRIu64 " late_max_us=%" PRIu64
	    " loss=%g delay_ms=%g rate_bps=%" PRIu64 " queue=%" PRIu64 "\n",
	    d->name, d->pkts_in, d->bytes_in, d->pkts_out, d->bytes_out,
	    d->drop_loss, d->drop_queue, d->drop_full, d->write_errors,
	    d->ring.count, backlog_bytes(d, now), d->queue_peak,
	    d->inflight_peak, d->late_max_ns / 1000,
	    (d->burst_until_ns ? d->burst_loss : d->loss) * 100,
	    (double)d->delay_ns / 1e6, d->rate_bps, d->queue);
}

static void
write_stats(uint64_t now)
{
	char tmp[4096 + 8];
	FILE *f;

	if (stats_path == NULL)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", stats_path);
	if ((f = fopen(tmp, "w")) == NULL)
		return;
	fprintf(f, "uptime_ms=%" PRIu64 " seed=%" PRIu64 " ctl_seq=%" PRIu64
	    " ctl_bad=%" PRIu64 "\n", (now - start_ns) / 1000000, seed,
	    ctl_seq, ctl_bad);
	print_dir(f, &dirs[UP], now);
	print_dir(f, &dirs[DOWN], now);
	if (fclose(f) == 0)
		(void)rename(tmp, stats_path);
}

/* ---- control FIFO ------------------------------------------------------ */

static bool parse_num(const char *s, const char *units, double *v);
static void dir_queue_auto(struct dirn *d, const struct dirn *other);

static bool
parse_pct(const char *s, double *p)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || (*end != '\0' && strcmp(end, "%") != 0)
	    || !(v >= 0) || v > 100)
		return false;
	*p = v / 100;
	return true;
}

/* Ring bytes the link's settings call for (see the top comment). */
static size_t
ring_need(const struct dirn *d)
{
	double inflight, cap;

	inflight = (double)d->rate_bps / 8 * (double)d->delay_ns / 1e9;
	cap = 2 * ((double)d->queue + inflight) + 1024 * 1024;
	if (cap > (double)MEM_MAX)
		cap = (double)MEM_MAX;
	return (size_t)cap & ~(size_t)7;
}

/* One KEY=VALUE of a "set" command, applied to directions lo..hi. */
static bool
ctl_set(const char *kv, int lo, int hi)
{
	const char *v = strchr(kv, '=');
	double x;
	int i;

	if (v == NULL)
		return false;
	v++;
	for (i = lo; i <= hi; i++) {
		struct dirn *d = &dirs[i];

		if (strncmp(kv, "delay=", 6) == 0 && parse_num(v, "ms", &x) &&
		    x <= 1e6)
			d->delay_ns = (uint64_t)llround(x * 1e6);
		else if (strncmp(kv, "rate=", 5) == 0 && parse_num(v, "rate",
		    &x))
			d->rate_bps = (uint64_t)llround(x);
		else if (strncmp(kv, "loss=", 5) == 0 && parse_pct(v, &x))
			d->loss = x;
		else if (strcmp(kv, "queue=auto") == 0)
			d->queue_auto = true;
		else if (strncmp(kv, "queue=", 6) == 0 && parse_num(v, "bytes",
		    &x) && x <= (double)MEM_MAX) {
			d->queue = (uint64_t)x;
			d->queue_auto = false;
		} else
			return false;
	}
	return true;
}

/* Apply one control line; false if it was refused (and said why). */
static bool
ctl_apply(char *line, uint64_t now)
{
	char *w[8], *save = NULL, *t, *end;
	int n = 0, i, k, lo = UP, hi = DOWN;
	double p, secs;

	for (t = strtok_r(line, " \t\r", &save); t && n < 8;
	    t = strtok_r(NULL, " \t\r", &save))
		w[n++] = t;
	if (n == 0)
		return true;
	if (n >= 2 && (strcmp(w[n - 1], "up") == 0 ||
	    strcmp(w[n - 1], "down") == 0)) {
		lo = hi = strcmp(w[n - 1], "up") == 0 ? UP : DOWN;
		n--;
	}
	if (strcmp(w[0], "loss") == 0 && n == 2 && parse_pct(w[1], &p)) {
		for (i = lo; i <= hi; i++)
			dirs[i].loss = p;
	} else if (strcmp(w[0], "burst") == 0 && n == 3 &&
	    parse_pct(w[1], &p) && (secs = strtod(w[2], &end)) > 0 &&
	    *end == '\0' && end != w[2] && secs <= 3600) {
		for (i = lo; i <= hi; i++) {
			dirs[i].burst_loss = p;
			dirs[i].burst_until_ns = now + (uint64_t)(secs * 1e9);
		}
	} else if (strcmp(w[0], "set") == 0 && n >= 2) {
		/* all or nothing: a refused line changes no setting */
		struct dirn was[2] = { dirs[UP], dirs[DOWN] };

		for (k = 1; k < n; k++)
			if (!ctl_set(w[k], lo, hi))
				break;
		if (k < n) {
			for (i = UP; i <= DOWN; i++) {
				dirs[i].delay_ns = was[i].delay_ns;
				dirs[i].rate_bps = was[i].rate_bps;
				dirs[i].loss = was[i].loss;
				dirs[i].queue = was[i].queue;
				dirs[i].queue_auto = was[i].queue_auto;
			}
			fprintf(stderr, "wanlink: control: bad '%s' (delay=MS, "
			    "rate=R, loss=P, queue=BYTES or queue=auto)\n",
			    w[k]);
			return false;
		}
		for (i = UP; i <= DOWN; i++) {	/* a BDP spans both ways */
			if (dirs[i].queue_auto)
				dir_queue_auto(&dirs[i], &dirs[1 - i]);
			if (ring_need(&dirs[i]) > dirs[i].ring.cap)
				fprintf(stderr, "wanlink: control: %s: the "
				    "ring (%zu B) is smaller than this link "
				    "needs (%zu B): packets may be dropped as "
				    "full (start with a larger --mem)\n",
				    dirs[i].name, dirs[i].ring.cap,
				    ring_need(&dirs[i]));
		}
	} else if (strcmp(w[0], "stats") == 0 && n == 1) {
		return true;	/* ctl_command writes the stats file */
	} else {
		fprintf(stderr, "wanlink: control: bad command '%s' (loss P "
		    "[up|down], burst P SECONDS [up|down], set KEY=VALUE... "
		    "[up|down], stats)\n", w[0]);
		return false;
	}
	fprintf(stderr, "wanlink: control: %s%s%s applied\n", w[0],
	    lo == hi ? " " : "", lo == hi ? dirs[lo].name : "");
	return true;
}

/* One control line: apply it, count it, and write the stats file so that
 * the count (ctl_seq) tells the writer it has taken effect. */
static void
ctl_command(char *line)
{
	uint64_t now = mono_ns();

	if (!ctl_apply(line, now))
		ctl_bad++;
	ctl_seq++;
	write_stats(now);
}

static void
ctl_read(void)
{
	ssize_t n;
	char *nl;

	for (;;) {
		n = read(ctl_fd, ctl_buf + ctl_len, sizeof(ctl_buf) - 1 -
		    ctl_len);
		if (n <= 0)
			return;
		ctl_len += (size_t)n;
		ctl_buf[ctl_len] = '\0';
		while ((nl = strchr(ctl_buf, '\n')) != NULL) {
			*nl = '\0';
			ctl_command(ctl_buf);
			ctl_len -= (size_t)(nl + 1 - ctl_buf);
			memmove(ctl_buf, nl + 1, ctl_len + 1);
		}
		if (ctl_len == sizeof(ctl_buf) - 1) {
			fprintf(stderr, "wanlink: control: line too long, "
			    "discarded\n");
			ctl_len = 0;
		}
	}
}

/* ---- devices ----------------------------------------------------------- */

/*
 * Create TUN device ifname in the network namespace ns (a name under
 * /run/netns, or a path such as /proc/PID/ns/net; NULL: our own).  A TUN
 * device belongs to the namespace of the process that opened
 * /dev/net/tun, so we enter ns for the open and come back.
 */
static int
open_tun(const char *ns, const char *ifname)
{
	char path[PATH_MAX];
	struct ifreq ifr;
	int self = -1, nsfd, fd;

	if (strlen(ifname) >= IFNAMSIZ || *ifname == '\0')
		fatalx("bad interface name '%s'", ifname);
	if (ns != NULL) {
		if (strchr(ns, '/') != NULL)
			snprintf(path, sizeof(path), "%s", ns);
		else
			snprintf(path, sizeof(path), "/run/netns/%s", ns);
		if ((self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC))
		    == -1)
			fatal("/proc/self/ns/net");
		if ((nsfd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			fatal("network namespace %s", path);
		if (setns(nsfd, CLONE_NEWNET) == -1)
			fatal("setns %s", path);
		close(nsfd);
	}
	if ((fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC)) == -1)
		fatal("/dev/net/tun");
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, TUNSETIFF, &ifr) == -1)
		fatal("TUNSETIFF %s%s%s", ns ? ns : "", ns ? ":" : "", ifname);
	if (self != -1) {
		if (setns(self, CLONE_NEWNET) == -1)
			fatal("setns back");
		close(self);
	}
	return fd;
}

/* "[NS:]IFNAME" */
static int
open_side(const char *arg)
{
	char buf[PATH_MAX];
	char *colon;

	snprintf(buf, sizeof(buf), "%s", arg);
	if ((colon = strrchr(buf, ':')) == NULL)
		return open_tun(NULL, buf);
	*colon = '\0';
	return open_tun(buf, colon + 1);
}

/* ---- options ----------------------------------------------------------- */

/*
 * A number with units: "ms" (milliseconds, optional suffix ms), "rate"
 * (bit/s: 100M, 1G, 100mbit, 500k, 64000), "bytes" (K/M/G, 1024-based).
 */
static bool
parse_num(const char *arg, const char *units, double *out)
{
	char *end;
	double v, mul = 1;

	errno = 0;
	v = strtod(arg, &end);
	if (errno != 0 || end == arg || !(v >= 0) || *arg == '-')
		return false;
	if (strcmp(units, "ms") == 0) {
		if (*end != '\0' && strcmp(end, "ms") != 0)
			return false;
		*out = v;
		return true;
	}
	if (*end == 'k' || *end == 'K')
		mul = strcmp(units, "rate") == 0 ? 1e3 : 1024;
	else if (*end == 'm' || *end == 'M')
		mul = strcmp(units, "rate") == 0 ? 1e6 : 1024 * 1024;
	else if (*end == 'g' || *end == 'G')
		mul = strcmp(units, "rate") == 0 ? 1e9 : 1024 * 1024 * 1024;
	if (mul != 1)
		end++;
	if (strcmp(units, "rate") == 0 && (strcasecmp(end, "bit") == 0 ||
	    strcasecmp(end, "bps") == 0 || strcasecmp(end, "bit/s") == 0))
		end += strlen(end);
	if (*end != '\0')
		return false;
	*out = v * mul;
	return strcmp(units, "rate") == 0 ? *out <= 1e11 :
	    *out <= (double)MEM_MAX && v == floor(v);
}

static uint64_t
parse_ms(const char *what, const char *arg)
{
	double v;

	if (!parse_num(arg, "ms", &v) || v > 1e6)
		fatalx("%s: bad delay '%s' (milliseconds)", what, arg);
	return (uint64_t)llround(v * 1e6);
}

static uint64_t
parse_rate(const char *what, const char *arg)
{
	double v;

	if (!parse_num(arg, "rate", &v))
		fatalx("%s: bad rate '%s' (e.g. 100M, 1G, 100mbit)", what, arg);
	return (uint64_t)llround(v);
}

static uint64_t
parse_bytes(const char *what, const char *arg)
{
	double v;

	if (!parse_num(arg, "bytes", &v))
		fatalx("%s: bad size '%s' (e.g. 256K, 4M; at most 1G)", what,
		    arg);
	return (uint64_t)v;
}

static double
parse_loss(const char *what, const char *arg)
{
	double p;

	if (!parse_pct(arg, &p))
		fatalx("%s: bad loss '%s' (percent, 0 to 100)", what, arg);
	return p;
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr,
	    "usage: wanlink -a [NS:]IFNAME -b [NS:]IFNAME -d MS [-r RATE] "
	    "[-l LOSS%%] [-q BYTES]\n"
	    "               [-s SEED] [--delay-up MS] [--delay-down MS] "
	    "[--rate-up R] [--rate-down R]\n"
	    "               [--loss-up P] [--loss-down P] [--queue-up B] "
	    "[--queue-down B] [--mem B]\n"
	    "               [-S STATSFILE] [-c CONTROL_FIFO] [-D DROPLOG] "
	    "[-v]\n"
	    "  up = a -> b, down = b -> a; -d, -r, -l and -q set both "
	    "directions\n");
	exit(2);
}

static void
on_stop(int sig)
{
	(void)sig;
	got_stop = 1;
}

static void
on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

/* One bandwidth-delay product (round trip), at least QUEUE_MIN. */
static void
dir_queue_auto(struct dirn *d, const struct dirn *other)
{
	double bdp = (double)d->rate_bps / 8 * (double)(d->delay_ns +
	    other->delay_ns) / 1e9;

	d->queue = bdp < QUEUE_MIN ? QUEUE_MIN : (uint64_t)bdp;
}

/* Queue default and ring size, once every option is known. */
static void
dir_finish(struct dirn *d, const struct dirn *other, int64_t queue,
    uint64_t mem, bool mem_given, int idx)
{
	size_t need;

	if (queue >= 0) {
		d->queue = (uint64_t)queue;
	} else {
		d->queue_auto = true;
		dir_queue_auto(d, other);
	}
	need = ring_need(d);
	if (d->rate_bps == 0 || (mem_given && mem > need))
		need = (size_t)mem & ~(size_t)7;
	d->ring.cap = need;
	if ((d->ring.buf = malloc(d->ring.cap)) == NULL)
		fatalx("out of memory for a %zu-byte ring", d->ring.cap);
	d->rng = seed * 2 + (uint64_t)idx;
	(void)rng_next(&d->rng);
}

int
main(int argc, char **argv)
{
	enum { O_DUP = 256, O_DDOWN, O_RUP, O_RDOWN, O_LUP, O_LDOWN, O_QUP,
	    O_QDOWN, O_MEM };
	static const struct option longopts[] = {
		{ "delay-up", required_argument, NULL, O_DUP },
		{ "delay-down", required_argument, NULL, O_DDOWN },
		{ "rate-up", required_argument, NULL, O_RUP },
		{ "rate-down", required_argument, NULL, O_RDOWN },
		{ "loss-up", required_argument, NULL, O_LUP },
		{ "loss-down", required_argument, NULL, O_LDOWN },
		{ "queue-up", required_argument, NULL, O_QUP },
		{ "queue-down", required_argument, NULL, O_QDOWN },
		{ "mem", required_argument, NULL, O_MEM },
		{ NULL, 0, NULL, 0 }
	};
	const char *aarg = NULL, *barg = NULL;
	int64_t queue[2] = { -1, -1 };
	uint64_t mem = MEM_DEFAULT, now, last_stats = 0, due;
	bool have_delay = false, mem_given = false;
	static uint8_t pkt[PKT_MAX];
	struct pollfd pfd[3];
	struct sigaction sa;
	sigset_t block, orig;
	int c, i, n, k;

	dirs[UP].name = "up";
	dirs[DOWN].name = "down";
	while ((c = getopt_long(argc, argv, "a:b:d:r:l:q:s:S:c:D:vh",
	    longopts, NULL)) != -1) {
		switch (c) {
		case 'a': aarg = optarg; break;
		case 'b': barg = optarg; break;
		case 'd':
			dirs[UP].delay_ns = dirs[DOWN].delay_ns =
			    parse_ms("-d", optarg);
			have_delay = true;
			break;
		case 'r':
			dirs[UP].rate_bps = dirs[DOWN].rate_bps =
			    parse_rate("-r", optarg);
			break;
		case 'l':
			dirs[UP].loss = dirs[DOWN].loss =
			    parse_loss("-l", optarg);
			break;
		case 'q':
			queue[UP] = queue[DOWN] =
			    (int64_t)parse_bytes("-q", optarg);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'S': stats_path = optarg; break;
		case 'c': ctl_path = optarg; break;
		case 'D': droplog_path = optarg; break;
		case 'v': verbose = 1; break;
		case O_DUP:
			dirs[UP].delay_ns = parse_ms("--delay-up", optarg);
			have_delay = true;
			break;
		case O_DDOWN:
			dirs[DOWN].delay_ns = parse_ms("--delay-down", optarg);
			have_delay = true;
			break;
		case O_RUP:
			dirs[UP].rate_bps = parse_rate("--rate-up", optarg);
			break;
		case O_RDOWN:
			dirs[DOWN].rate_bps = parse_rate("--rate-down", optarg);
			break;
		case O_LUP:
			dirs[UP].loss = parse_loss("--loss-up", optarg);
			break;
		case O_LDOWN:
			dirs[DOWN].loss = parse_loss("--loss-down", optarg);
			break;
		case O_QUP:
			queue[UP] = (int64_t)parse_bytes("--queue-up", optarg);
			break;
		case O_QDOWN:
			queue[DOWN] = (int64_t)parse_bytes("--queue-down",
			    optarg);
			break;
		case O_MEM:
			mem = parse_bytes("--mem", optarg);
			mem_given = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || aarg == NULL || barg == NULL || !have_delay)
		usage();
	if (mem < 1024 * 1024)
		fatalx("--mem: at least 1M");
	for (i = 0; i < 2; i++)
		dir_finish(&dirs[i], &dirs[1 - i], queue[i], mem, mem_given, i);

	/* signals are delivered only inside ppoll() */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &orig);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	(void)prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);

	dirs[UP].in_fd = dirs[DOWN].out_fd = open_side(aarg);
	dirs[DOWN].in_fd = dirs[UP].out_fd = open_side(barg);
	if (droplog_path != NULL &&
	    (droplog = fopen(droplog_path, "w")) == NULL)
		fatal("%s", droplog_path);
	if (ctl_path != NULL) {
		if (mkfifo(ctl_path, 0600) == -1 && errno != EEXIST)
			fatal("mkfifo %s", ctl_path);
		/* O_RDWR: no EOF when the last writer closes */
		if ((ctl_fd = open(ctl_path, O_RDWR | O_NONBLOCK | O_CLOEXEC))
		    == -1)
			fatal("%s", ctl_path);
	}
	start_ns = mono_ns();
	fprintf(stderr, "wanlink: a=%s b=%s seed=%" PRIu64 "; up: delay %g ms"
	    " rate %" PRIu64 " bit/s loss %g%% queue %" PRIu64 " B ring %zu B;"
	    " down: delay %g ms rate %" PRIu64 " bit/s loss %g%% queue %" PRIu64
	    " B ring %zu B\n", aarg, barg, seed,
	    (double)dirs[UP].delay_ns / 1e6, dirs[UP].rate_bps,
	    dirs[UP].loss * 100, dirs[UP].queue, dirs[UP].ring.cap,
	    (double)dirs[DOWN].delay_ns / 1e6, dirs[DOWN].rate_bps,
	    dirs[DOWN].loss * 100, dirs[DOWN].queue, dirs[DOWN].ring.cap);
	write_stats(start_ns);

	pfd[0].fd = dirs[UP].in_fd;
	pfd[1].fd = dirs[DOWN].in_fd;
	pfd[2].fd = ctl_fd;
	for (i = 0; i < 3; i++)
		pfd[i].events = POLLIN;
	while (!got_stop) {
		struct timespec ts, *tp = NULL;

		now = mono_ns();
		due = next_due(&dirs[UP]);
		if (next_due(&dirs[DOWN]) < due)
			due = next_due(&dirs[DOWN]);
		if (stats_path != NULL && last_stats + STATS_EVERY_NS < due)
			due = last_stats + STATS_EVERY_NS;
		if (due != UINT64_MAX) {
			uint64_t w = due > now ? due - now : 0;

			ts.tv_sec = (time_t)(w / NSEC);
			ts.tv_nsec = (long)(w % NSEC);
			tp = &ts;
		}
		n = ppoll(pfd, ctl_fd == -1 ? 2 : 3, tp, &orig);
		if (n == -1 && errno != EINTR)
			fatal("ppoll");
		if (got_usr1) {
			got_usr1 = 0;
			print_dir(stderr, &dirs[UP], mono_ns());
			print_dir(stderr, &dirs[DOWN], mono_ns());
		}
		for (i = 0; i < 2 && n > 0; i++) {
			if (!(pfd[i].revents & POLLIN))
				continue;
			for (k = 0; k < READ_BATCH; k++) {
				ssize_t r = read(dirs[i].in_fd, pkt,
				    sizeof(pkt));

				if (r <= 0)
					break;
				arrive(&dirs[i], mono_ns(), pkt, (size_t)r);
			}
		}
		if (n > 0 && ctl_fd != -1 && (pfd[2].revents & POLLIN))
			ctl_read();
		now = mono_ns();
		deliver(&dirs[UP], now);
		deliver(&dirs[DOWN], now);
		if (stats_path != NULL && now >= last_stats + STATS_EVERY_NS) {
			write_stats(now);
			last_stats = now;
		}
	}
	now = mono_ns();
	write_stats(now);
	fprintf(stderr, "wanlink: exit after %.1f s\n",
	    (double)(now - start_ns) / 1e9);
	print_dir(stderr, &dirs[UP], now);
	print_dir(stderr, &dirs[DOWN], now);
	if (droplog != NULL)
		fclose(droplog);
	return 0;
}
