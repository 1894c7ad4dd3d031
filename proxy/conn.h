/*
 * conn.h - the transport of a connection (conn.c): two sockets with their
 * buffers, watchers and timers, the connection lifecycle, and what the
 * listener, the daemon and the control socket ask of it.
 *
 * A struct px_link embeds the relay's struct px_conn (relay.h) as its
 * first member: conn.c hands the relay that part only, and the relay
 * reaches the sockets only through the px_conn_ops conn.c registers at
 * px_conn_init().  Included by conn.c and the layers above it (listener,
 * control, daemon), never by the relay layer.
 */
#ifndef SMBACCEL_CONN_H
#define SMBACCEL_CONN_H

#include <ev.h>

#include "proxy/proxy.h"
#include "proxy/relay.h"

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
	double srv_rx_ms;                    /* last bytes from the server */
	double srv_wait_ms;                  /* first watchdog tick that saw
	                                      * requests outstanding upstream
	                                      * (0: none outstanding) */
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
/* Start or stop s's watchers for what it may do now. */
void px_side_update(struct px_side *s);
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

/* ---- conn.c --------------------------------------------------------------- */

/*
 * What conn.c needs from the layers above it, registered at start:
 *   out_of_fds  the process ran out of descriptors (or memory for a
 *               socket) opening an upstream socket; the listener pauses
 *               accepting for a while (what names the call that failed)
 */
struct px_conn_hooks {
	void (*out_of_fds)(const char *what);
};
/* Register the hooks (NULL: none) and conn.c's services with the relay. */
void px_conn_init(const struct px_conn_hooks *hooks);

/* Accept a client socket; dst is where to connect upstream. */
void px_conn_new(int cfd, const struct sockaddr_storage *peer,
    const struct sockaddr_storage *dst);
/* Close every connection (graceful: drain write-behind first). */
void px_conn_shutdown_all(void);
size_t px_conn_count(void);
struct px_conn *px_conn_first(void);
/* The policy changed (max_connecting may have grown). */
void px_conn_reloaded(void);
void px_conn_close(struct px_conn *c, enum px_close_reason r);

#endif
