/*
 * side.h - the transport of a connection: struct px_link, which embeds the
 * relay's struct px_conn (conn_state.h) as its first member beside the two
 * ends' sockets, buffers and watchers and the connection's timers; and
 * side.c, which handles the bytes of one end.  For conn.c (conn.h).
 */
#ifndef SMBACCEL_SIDE_H
#define SMBACCEL_SIDE_H

#include <ev.h>

#include "proxy/proxy.h"
#include "proxy/conn_state.h"
#include "proxy/upstream.h"

struct px_link;

/* Reads start small and double while they fill what they were given, so
 * an idle or chatty connection holds kilobytes and a stream gets 256 KiB
 * reads; an emptied input buffer larger than READ_IDLE_KEEP is given back
 * once the reads are small again. */
#define READ_CHUNK  (256 * 1024)
#define READ_FIRST  (16 * 1024)
#define READ_IDLE_KEEP (64 * 1024)
#define FRAME_MAX   (PX_NBSS_MAX)

/* One end of a connection (relayd's se_in/se_out). */
struct px_side {
	int fd;
	ev_io rio;
	ev_io wio;
	struct px_buf in;          /* bytes read, not yet handled */
	struct px_buf out;         /* bytes to write to this side */
	struct px_buf hold;        /* messages waiting for a cut-through frame
	                            * from the peer to end (see px_side_outbuf) */
	bool rd_eof;               /* read returned 0 or an error */
	bool rd_reset;             /* ... and it was a reset */
	bool wr_shut;              /* shutdown(SHUT_WR) done */
	uint64_t bytes_in;
	size_t rd_want;            /* bytes asked of the next read (adaptive) */
	size_t stream_left;        /* bytes of a cut-through frame to pass on */
	bool out_stopped;          /* the client's frames wait for its own
	                            * output queue to go under queue_limit
	                            * (px_side_out_full) */
	int lowat;                 /* SO_RCVLOWAT set on fd (0: the default,
	                            * -1: setting it failed, not used) */
	struct px_link *link;
	struct px_side *peer;
	const char *name;          /* "client" / "server" */
};

struct px_link {
	struct px_conn c;                    /* the relay's part; first */
	struct px_side cli;
	struct px_side srv;
	ev_timer timer;
	double started_ms;
	double last_ms;                      /* last activity either way */
	double connect_deadline_ms;
	double opened_ms;                    /* upstream connect completed */
	bool opening;                        /* counts against max_connecting */
	struct px_link *qnext;               /* FIFO of connections waiting */
	struct px_link **qprev;              /* for max_connecting (NULL: not
	                                      * in it) */
	struct px_upstream up;               /* the upstream socket (upstream.c) */
	struct sockaddr_storage up_local;    /* ... its own address, once
	                                      * connecting (listener.c: a
	                                      * connection from it is a loop) */
	double srv_rx_ms;                    /* last bytes from the server */
	double srv_wait_ms;                  /* first watchdog tick that saw
	                                      * requests outstanding upstream
	                                      * (0: none outstanding) */
	double cli_check_ms;                 /* next px_side_unanswered check
	                                      * of the client (0: none due) */
	/* the client left inside a WRITE cut through to the server: the
	 * server connection takes nothing more (conn.c srv_spend) */
	bool srv_spent;
	uint64_t cut_mid;                    /* MessageId of the client's
	                                      * WRITE being cut through */
	uint64_t *await;                     /* srv_spend: requests sent
	                                      * before it, still unanswered */
	size_t nawait;
	unsigned int depth;                  /* entry points on the stack */
	bool free_pending;                   /* closed; free at depth 0 */
};

static inline struct px_link *
px_link_of(struct px_conn *c)
{
	return (struct px_link *)c;   /* c is the first member */
}

static inline const struct px_link *
px_link_of_const(const struct px_conn *c)
{
	return (const struct px_link *)c;
}

/* waiting in the max_connecting queue */
static inline bool
px_conn_queued(const struct px_conn *c)
{
	return px_link_of_const(c)->qprev != NULL;
}

/* ---- one end's bytes (side.c, for conn.c) ---------------------------------- */

void px_side_init(struct px_link *l, struct px_side *s, struct px_side *peer,
    int fd, const char *name, void (*rcb)(struct ev_loop *, ev_io *, int),
    void (*wcb)(struct ev_loop *, ev_io *, int));
/* Close the socket (reset: with an RST); the buffers stay. */
void px_side_close(struct px_side *s, bool reset);
/* Why the peer counts as gone (its kernel acknowledged nothing for ms,
 * with data or window probes waiting), or NULL. */
const char *px_side_unanswered(const struct px_side *s, uint32_t ms);
/* Is l's client looked at by client_keepalive now, and why it counts as
 * gone (NULL: it does not). */
bool px_side_client_checked(const struct px_link *l);
const char *px_side_client_gone(const struct px_link *l, double now);
/* c's client was found gone by client_keepalive (why): logged, counted
 * once. */
void px_client_timed_out(struct px_conn *c, const char *why);
/* c's server socket timed out (upstream_keepalive): logged, counted. */
void px_server_timed_out(struct px_conn *c);
/* why, when the client's socket failed ETIMEDOUT: the kernel gave up on
 * its keepalive probes, or on retransmitting (tcp_retries2) */
#define PX_KA_WHY "stopped answering TCP (keepalive probes or retransmissions)"
/* s is gone: what it would have got is dropped, its reads are over. */
void px_side_lost(struct px_side *s);
/* Is a previous connection of c's client (same client address, same
 * server) still draining?  c waits for it (DESIGN.md section 4). */
bool px_side_draining_peer(const struct px_conn *c);
/* Before that question: previous connections of c's client whose client
 * went while smbaccel was not reading it are read to their end and
 * kicked, so that they drain (logged). */
void px_side_find_gone(const struct px_conn *c,
    void (*kick)(struct px_conn *));
/* c goes ahead of those drains (connect_timeout): what their clients
 * sent and smbaccel had not handled is dropped (logged, counted), and
 * each drain is kicked. */
void px_side_overtake_drains(struct px_conn *c,
    void (*kick)(struct px_conn *));
/* Read from s's socket into s->in: bytes read; 0 at EOF or on an error
 * (rd_eof, rd_reset for an error; reading stopped); -1 nothing yet; -2
 * out of memory. */
ssize_t px_side_read(struct px_side *s);
/* Write s->out until the socket takes no more; false if it failed (s is
 * lost: px_side_lost). */
bool px_side_write(struct px_side *s);
/* Start or stop s's watchers for what it may do now. */
void px_side_update(struct px_side *s);
/* Is what waits for s (its output and hold queues) at queue_limit?  The
 * client's requests then wait too: the answers smbaccel makes itself
 * (cache hits, absorbed WRITEs) go to that queue. */
bool px_side_out_full(const struct px_side *s);
/*
 * Where a message for side s goes: its output queue, or, while the other
 * side is cutting a large frame through to s, a hold queue appended once
 * that frame is complete (messages must never interleave with it).
 */
struct px_buf *px_side_outbuf(struct px_side *s);
/* Account n bytes just placed in px_side_outbuf(s) and start writing. */
void px_side_out_commit(struct px_side *s, size_t n);
/* Queue a frame / a message (NBSS header added) for s: 0 also when s is
 * gone (nothing to deliver to), -1 out of memory. */
int px_side_send_frame(struct px_side *s, const uint8_t *frame, size_t len)
    PX_MUSTCHECK;
int px_side_send(struct px_side *s, const uint8_t *msg, size_t len)
    PX_MUSTCHECK;
/* Bytes of a frame being cut through (peer -> s): straight to s->out. */
int px_side_stream(struct px_side *s, const uint8_t *p, size_t len)
    PX_MUSTCHECK;
/* The cut-through frame to s is complete: release what was held. */
int px_side_release_hold(struct px_side *s) PX_MUSTCHECK;
/* The incomplete frame p[0..have) read from s can never become a message
 * smbaccel would pass on (unknown signature, impossible length). */
bool px_side_implausible(const struct px_side *s, const uint8_t *p,
    size_t have);
/* The client's SO_RCVLOWAT for the frame at the head of its input. */
void px_side_set_lowat(struct px_side *s);
/*
 * The buffers an emptied connection keeps between messages (an input
 * buffer that held a large frame, an output queue that held up to 4 MiB)
 * save copying while data streams, not while it sits idle: the empty ones
 * of every connection quiet for PX_IDLE_TRIM_MS are given back, its reads
 * start small again, and the heap's free memory goes back to the system
 * (malloc_trim; daemon.c's status timer, every 5 s).
 */
#define PX_IDLE_TRIM_MS 5000.0
void px_side_trim_idle(double now_ms);

#endif
