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
 *   op 0x08, 0x09 (client, server): one SMB2 message, compound or not,
 *           without its NBSS header, whose elements flagged SIGNED are
 *           signed here with their session's key as their sender would
 *   op 0x10, 0x11: one SMB2 message sealed here (TRANSFORM) with the key
 *           of the session its first element names, as its sender would
 *   In both, a WRITE request or READ answer whose data runs past the
 *   record is completed with zeros up to its length (at most 1 MiB), so
 *   that large messages behind a good signature or tag are reached too;
 *   a message whose session smbaccel holds no key for goes as it is.
 *
 * Sessions are keyed because smbaccel holds the secret of the user of the
 * integration tests (smbtest, password testpass), as the daemon would from
 * `secrets =`: a recorded NTLM SESSION_SETUP of that user keys the session
 * exactly as it did when it was recorded, so what follows it can be signed
 * or sealed with that session's keys (seeds: mkseeds-keyed.sh).
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
 * Seeds: tests/fuzz/seeds/relay/ (real sessions, tests/fuzz/mkseeds.sh),
 * and seeds/relay/keyed/ (keyed sessions whose signed messages this driver
 * signs or seals, mkseeds-keyed.sh; t_fuzz checks that they key their
 * sessions and pass smbaccel's checks).
 *
 * FUZZ_RELAY_LOG=N also prints, after each input, the keyed counters
 * since the start (sessions keyed, bad signatures, messages signed and
 * sealed, here and by smbaccel, sealed messages smbaccel opened).
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
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "proxy/conn.h"
#include "proxy/doccache.h"
#include "proxy/keyed.h"
#include "proxy/keyfiles.h"
#include "proxy/smb2/smb2.h"

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

/* the secrets file smbaccel holds: the integration tests' user */
static const char secrets[] =
    "smbtest:password:testpass\n"
    "SMBACCEL\\smbtest:password:testpass\n";

/* a signed or sealed record's message: NBSS header, TRANSFORM header,
 * the message completed up to WRAP_DATA_MAX of data */
#define WRAP_DATA_MAX (1024 * 1024)
#define TRANSFORM_LEN 52
static uint8_t wrapped[PX_NBSS_HDR + TRANSFORM_LEN + SMB2_HDR_LEN + 64 +
    WRAP_DATA_MAX];

static int lfd = -1;                 /* the fake server's listener */
static struct sockaddr_storage dst;  /* its address, as the daemon sees it */
static uint8_t sink[256 * 1024];

static void
die(const char *what)
{
	perror(what);
	abort();
}

/*
 * Give smbaccel the secrets, as `secrets =` would.  The file must be
 * root's and private (px_secrets_load): as root a failure is the
 * driver's bug; otherwise the keyed paths are not reached, and said so.
 */
static void
load_secrets(void)
{
	char path[] = "/tmp/fuzz_relay_secrets.XXXXXX";
	int fd = mkstemp(path);

	if (fd == -1)
		die("mkstemp");
	if (fchmod(fd, 0600) == -1 ||
	    write(fd, secrets, sizeof(secrets) - 1) !=
	    (ssize_t)(sizeof(secrets) - 1))
		die("secrets file");
	close(fd);
	if (px_keyfiles_load_secrets(path) == -1) {
		if (geteuid() == 0) {
			fprintf(stderr, "fuzz_relay: smbaccel refused the "
			    "secrets file %s\n", path);
			abort();
		}
		fprintf(stderr, "fuzz_relay: not root, so smbaccel holds no "
		    "secret: keyed sessions are not reached\n");
	}
	unlink(path);
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
	load_secrets();
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

/*
 * The length of message m (n bytes in the record) once a lone WRITE
 * request or READ answer is completed with zeros up to its data's end.
 */
static size_t
completed_len(const uint8_t *m, size_t n)
{
	bool answer;
	uint32_t cmd;
	size_t end;

	if (n < SMB2_HDR_LEN + 8 || px_get_u32(m + 20) != 0)
		return n;
	cmd = px_get_u16(m + 12);
	answer = (px_get_u32(m + 16) & SMB2_FLAGS_SERVER_TO_REDIR) != 0;
	if (cmd == SMB2_WRITE && !answer)
		end = px_get_u16(m + SMB2_HDR_LEN + 2);
	else if (cmd == SMB2_READ && answer)
		end = m[SMB2_HDR_LEN + 2];
	else
		return n;
	end += px_get_u32(m + SMB2_HDR_LEN + 4);
	return end > n && end <= SMB2_HDR_LEN + 64 + WRAP_DATA_MAX ? end : n;
}

/*
 * A record of op 0x08-0x11: its message signed or sealed with its
 * session's key as the sender (the server if from_server) would, framed
 * in wrapped[]: *frame is set to the frame, its length returned.
 */
static size_t
wrap(const uint8_t *p, size_t n, bool from_server, bool seal,
    const uint8_t **frame)
{
	struct px_conn *c = conn();
	uint8_t *m = wrapped + PX_NBSS_HDR + TRANSFORM_LEN;
	size_t len = completed_len(p, n), off;
	uint32_t next;

	memcpy(m, p, n);
	memset(m + n, 0, len - n);
	if (seal && len >= SMB2_HDR_LEN && px_keyed_seal(c, from_server ?
	    PX_CLIENT : PX_SERVER, px_get_u64(m + 40), m, len,
	    wrapped + PX_NBSS_HDR) == 0) {
		px_frame_put_hdr(wrapped, TRANSFORM_LEN + len);
		*frame = wrapped;
		return PX_NBSS_HDR + TRANSFORM_LEN + len;
	}
	/* signed: each element flagged SIGNED, as far as the chain holds
	 * (an element whose NextCommand is 0 or past the end is the last) */
	for (off = 0; !seal && len - off >= SMB2_HDR_LEN; off += next) {
		uint8_t *e = m + off;

		next = px_get_u32(e + 20);
		if (next == 0 || next > len - off)
			next = (uint32_t)(len - off);
		if (px_get_u32(e + 16) & SMB2_FLAGS_SIGNED)
			(void)px_keyed_sign(c, px_get_u64(e + 40), e, next,
			    from_server);
	}
	/* signed, or sealed wanted but no key for it: framed as it is */
	px_frame_put_hdr(m - PX_NBSS_HDR, len);
	*frame = m - PX_NBSS_HDR;
	return PX_NBSS_HDR + len;
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
		uint8_t raw = data[pos++], op = raw % 8;
		size_t len = 0;

		if (op <= 1) {
			if (size - pos < 2)
				break;
			len = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
			pos += 2;
			if (len > size - pos)
				len = size - pos;
		}
		switch (raw >= 0x08 && raw <= 0x11 && raw % 8 <= 1 ? 8 : op) {
		case 0:
			feed(cfd, data + pos, len, cfd, sfd);
			break;
		case 1:
			feed(sfd, data + pos, len, cfd, sfd);
			break;
		case 8: {
			const uint8_t *frame;
			size_t flen = wrap(data + pos, len, op == 1, raw >= 0x10,
			    &frame);

			feed(op == 0 ? cfd : sfd, frame, flen, cfd, sfd);
			break;
		}
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
	if (getenv("FUZZ_RELAY_LOG") != NULL)
		fprintf(stderr, "fuzz_relay: since start: sessions keyed %llu, "
		    "bad signatures %llu, signed %llu, sealed %llu, opened "
		    "%llu (head only %llu)\n",
		    (unsigned long long)px_stats.sessions_keyed,
		    (unsigned long long)px_stats.bad_signatures,
		    (unsigned long long)px_stats.signed_out,
		    (unsigned long long)px_stats.encrypted_out,
		    (unsigned long long)px_stats.decrypted_in,
		    (unsigned long long)px_stats.decrypted_head_only);
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
