/*
 * fuzz_relay.c - libFuzzer driver for the whole relay: framing, cut-through,
 * ledger, write-behind, read-ahead, deferred errors, drain and shutdown
 * (proxy/conn.c, the relay layer, ledger.c, coalesce/), driven through real
 * sockets and the real libev callbacks.
 *
 * Each input is one connection.  The client is one end of a socketpair
 * handed to px_conn_new(); the "server" is an AF_UNIX listener with an
 * abstract name (the daemon connects to it as it would to smbd), so no TCP
 * port is used.  The input is a list of records:
 *
 *   u8 op, u16 len (little-endian), len bytes      (len only for ops 0, 1)
 *   op % 8: 0 bytes from the client, 1 bytes from the server,
 *           2 client EOF, 3 server EOF, 4 flush everything (idle timer),
 *           5 SIGTERM drain (px_conn_shutdown_all), 6 client reset,
 *           7 run the connection's timer callback
 *
 * After each record the event loop runs without blocking until nothing
 * moves, and whatever the daemon wrote to either peer is read and
 * dropped.  Policy: write_behind = always, read_ahead = always, small
 * queue_limit, so that every path is reachable; inputs of odd length run
 * with the default gates (leased, proxy_lease on) instead, so that the
 * CREATE rewrites and the breaks of leases held for clients are reached
 * too (lease.c, create.c).  At the end the connection
 * is closed and the global accounting must be back to zero (connections,
 * write-behind and read-ahead bytes): a leak there would, in the daemon,
 * slowly eat the global memory budget and stall every client.
 *
 * Seeds: tests/fuzz/seeds/relay/ (real sessions, tests/fuzz/mkseeds.sh).
 *
 * Built by `make fuzz-build` (build-fuzz/fuzz_relay) from this file and
 * every source of bin/smbaccel but proxy/main.c:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 \
 *       -D_GNU_SOURCE -I. -I/usr/include/libnl3 tests/fuzz/fuzz_relay.c \
 *       $(SMBACCEL_SRC without proxy/main.c) $(LIBS_DAEMON) -o fuzz_relay
 *
 * Replay one input with its log: FUZZ_RELAY_LOG=3 build-fuzz/fuzz_relay FILE
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "proxy/conn.h"
#include "proxy/doccache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Share settings in [global] are every share's defaults. */
static const char policy[] =
    "[global]\n"
    "listen = 127.0.0.1:1\n"
    "upstream = 127.0.0.1:2\n"
    "mode = forward\n"
    "control_socket = /nonexistent/fuzz.sock\n"
    "queue_limit = 256K\n"
    "write_behind_memory = 1M\n"
    "read_ahead_memory = 1M\n"
    "read_cache_memory = 2M\n"
    "log_level = error\n"
    "write_behind = always\n"
    "read_ahead = always\n"
    "coalesce_size = 64K\n"
    "flush_idle = 60s\n"
    "flush_max_age = 60s\n"
    "write_behind_per_open = 1M\n"
    "read_ahead_max = 256K\n";
/* The same with the default gates: leased, proxy_lease on. */
static const char policy_leased[] =
    "[global]\n"
    "listen = 127.0.0.1:1\n"
    "upstream = 127.0.0.1:2\n"
    "mode = forward\n"
    "control_socket = /nonexistent/fuzz.sock\n"
    "queue_limit = 256K\n"
    "write_behind_memory = 1M\n"
    "read_ahead_memory = 1M\n"
    "log_level = error\n"
    "coalesce_size = 64K\n"
    "flush_idle = 60s\n"
    "flush_max_age = 60s\n"
    "write_behind_per_open = 1M\n"
    "read_ahead_max = 256K\n";
static struct pol_config *cfg_always, *cfg_leased;

static int lfd = -1;                 /* the fake server's listener */
static struct sockaddr_storage dst;  /* its address, as the daemon sees it */
static uint8_t sink[256 * 1024];

static void
die(const char *what)
{
	perror(what);
	abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct pol_errors errs = { 0 };
	struct sockaddr_un *sun = (struct sockaddr_un *)&dst;
	const char *lvl = getenv("FUZZ_RELAY_LOG");
	char name[16];

	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	log_init(lvl ? atoi(lvl) : PX_LOG_ERROR, true);
	px_rt.loop = ev_default_loop(EVFLAG_AUTO);
	px_conn_init(NULL);
	cfg_always = pol_load_string(policy, "fuzz_relay.conf", &errs);
	cfg_leased = pol_load_string(policy_leased, "fuzz_relay_leased.conf",
	    &errs);
	if (cfg_always == NULL || cfg_leased == NULL) {
		pol_errors_print(&errs, stderr);
		abort();
	}
	px_rt.cfg = cfg_always;
	/* the document cache too (no store: no file I/O) */
	px_dc_start(pol_global(px_rt.cfg));
	/* An abstract AF_UNIX name, zero-padded to the length the daemon
	 * passes to connect() for a non-IPv4 address (sizeof sockaddr_in6). */
	memset(&dst, 0, sizeof(dst));
	sun->sun_family = AF_UNIX;
	snprintf(name, sizeof(name), "fzr%08x", (unsigned int)getpid());
	memcpy(sun->sun_path + 1, name, strlen(name));
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd == -1)
		die("socket");
	if (bind(lfd, (struct sockaddr *)sun, sizeof(struct sockaddr_in6)) == -1)
		die("bind");
	if (listen(lfd, 16) == -1)
		die("listen");
	return 0;
}

/* Read and drop what the daemon sent to fd; true if anything came. */
static bool
drain(int fd)
{
	bool any = false;
	ssize_t n;

	if (fd == -1)
		return false;
	while ((n = read(fd, sink, sizeof(sink))) > 0)
		any = true;
	return any;
}

static struct px_conn *
conn(void)
{
	return px_rt.conns;
}

/* Run the loop until nothing moves (bounded). */
static void
pump(int cfd, int sfd)
{
	int i;

	for (i = 0; i < 16; i++) {
		bool moved;

		ev_run(px_rt.loop, EVRUN_NOWAIT);
		moved = drain(cfd);
		moved = drain(sfd) || moved;
		if (!moved && i > 0)
			break;
	}
}

/* Write all of p to fd, pumping the loop when the socket is full. */
static void
feed(int fd, const uint8_t *p, size_t n, int cfd, int sfd)
{
	int tries = 0;

	while (n > 0 && fd != -1 && tries < 64) {
		ssize_t w = write(fd, p, n);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w == -1 && errno != EAGAIN && errno != EINTR)
			return;     /* the daemon closed it */
		pump(cfd, sfd);
		tries++;
	}
	pump(cfd, sfd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_storage peer;
	struct sockaddr_in *sin = (struct sockaddr_in *)&peer;
	int sv[2], cfd, sfd = -1;
	size_t pos = 0;

	if (size > 1024 * 1024)
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		die("socketpair");
	cfd = sv[0];
	if (fcntl(cfd, F_SETFL, O_NONBLOCK) == -1)
		die("fcntl");
	memset(&peer, 0, sizeof(peer));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(40000);
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	px_rt.cfg = (size & 1) ? cfg_leased : cfg_always;
	px_conn_new(sv[1], &peer, &dst);
	if (conn() != NULL) {
		ev_run(px_rt.loop, EVRUN_NOWAIT);
		sfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		pump(cfd, sfd);
	}

	while (pos < size && conn() != NULL) {
		uint8_t op = data[pos++] % 8;
		size_t len = 0;

		if (op <= 1) {
			if (size - pos < 2)
				break;
			len = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
			pos += 2;
			if (len > size - pos)
				len = size - pos;
		}
		switch (op) {
		case 0:
			feed(cfd, data + pos, len, cfd, sfd);
			break;
		case 1:
			feed(sfd, data + pos, len, cfd, sfd);
			break;
		case 2:
			(void)shutdown(cfd, SHUT_WR);
			break;
		case 3:
			if (sfd != -1)
				(void)shutdown(sfd, SHUT_WR);
			break;
		case 4:
			px_relay_flush_all(conn(), CO_FLUSH_IDLE);
			break;
		case 5:
			px_rt.stopping = true;
			px_conn_shutdown_all();
			break;
		case 6: {
			struct linger lg = { 1, 0 };

			(void)setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg,
			    sizeof(lg));
			close(cfd);
			cfd = -1;
			break;
		}
		case 7:
			ev_invoke(px_rt.loop, &px_link_of(conn())->timer, EV_TIMER);
			break;
		}
		pos += len;
		if (conn() != NULL)
			pump(cfd, sfd);
	}

	while (conn() != NULL)
		px_conn_close(conn(), PX_CLOSE_SHUTDOWN);
	ev_run(px_rt.loop, EVRUN_NOWAIT);
	px_rt.stopping = false;
	if (cfd != -1)
		close(cfd);
	if (sfd != -1)
		close(sfd);
	/* nothing may stay accounted to a connection that is gone */
	if (px_stats.conns_active != 0 || px_stats.wb_bytes_now != 0 ||
	    px_stats.ra_bytes_now != 0) {
		fprintf(stderr, "accounting leak: conns_active=%llu "
		    "wb_bytes_now=%llu ra_bytes_now=%llu\n",
		    (unsigned long long)px_stats.conns_active,
		    (unsigned long long)px_stats.wb_bytes_now,
		    (unsigned long long)px_stats.ra_bytes_now);
		abort();
	}
	return 0;
}
