/*
 * conn.h - connection internals shared by conn.c (sockets, buffers,
 * lifecycle) and relay.c (what each SMB2 message means and what to do
 * with it).  Not included outside proxy/.
 */
#ifndef SMBACCEL_CONN_H
#define SMBACCEL_CONN_H

#include <ev.h>

#include "proxy/proxy.h"

struct px_side {
	int fd;
	ev_io rio;
	ev_io wio;
	struct px_buf in;          /* bytes read, not yet handled */
	struct px_buf out;         /* bytes to write to this side */
	struct px_buf hold;        /* messages waiting for a cut-through frame
	                            * from the peer to end (see px_conn_outbuf) */
	bool rd_eof;               /* read returned 0 or an error */
	bool rd_reset;             /* ... and it was a reset */
	bool wr_shut;              /* shutdown(SHUT_WR) done */
	uint64_t bytes_in;
	size_t rd_want;            /* bytes asked of the next read (adaptive) */
	size_t stream_left;        /* bytes of a cut-through frame to pass on */
	struct px_conn *conn;
	struct px_side *peer;
	const char *name;          /* "client" / "server" */
};

/* How a message the proxy makes must travel: signed, sealed, or plain. */
struct px_prot {
	bool sign;
	bool encrypt;
	uint64_t sid;
};

/* A synthesized response waiting for credits (DESIGN.md section 3 rule 3)
 * or for write-behind memory. */
struct px_delayed {
	struct px_delayed *next;
	uint8_t *msg;              /* whole SMB2 response; credit patched */
	size_t len;
	uint16_t credit_request;
	struct px_prot prot;
};

/* What a stalled client frame waits for before it can be handled. */
enum px_stall {
	PX_STALL_NONE = 0,
	PX_STALL_OPEN_IDLE,        /* one open: no buffered/in-flight writes */
	PX_STALL_CONN_IDLE,        /* every open of this connection */
	PX_STALL_PEERS,            /* other connections flushing the path */
	PX_STALL_MEMORY,           /* write-behind budget */
	PX_STALL_CREDITS,          /* a delayed response must go first */
	PX_STALL_READ,             /* read-ahead data for it is in flight */
};

struct px_conn {
	struct px_conn *next;
	struct px_conn *prev;
	uint64_t id;
	enum px_conn_state state;
	struct px_side cli;
	struct px_side srv;
	struct sockaddr_storage peer_addr;   /* the client */
	struct sockaddr_storage dst_addr;    /* the server */
	ev_timer timer;
	double started_ms;
	double last_ms;                      /* last activity either way */
	double connect_deadline_ms;
	double opened_ms;                    /* upstream connect completed */
	bool opening;                        /* counts against max_connecting */
	struct px_conn *qnext;               /* FIFO of connections waiting */
	struct px_conn **qprev;              /* for max_connecting (NULL: not
	                                      * in it) */
	struct px_upstream up;               /* the upstream socket (upstream.c) */
	double srv_rx_ms;                    /* last bytes from the server */
	double srv_wait_ms;                  /* first watchdog tick that saw
	                                      * requests outstanding upstream
	                                      * (0: none outstanding) */
	struct px_ledger led;
	enum px_opaque_reason opaque;
	enum px_close_reason close_reason;
	/* relay state */
	enum px_stall stall;
	struct smb2_fileid stall_fid;
	uint64_t stall_mem;                  /* open's memory when it stalled */
	uint64_t stall_off;                  /* read waiting for read-ahead */
	uint32_t stall_len;
	struct px_delayed *delayed;          /* FIFO */
	struct px_delayed **delayed_tail;
	unsigned int ndelayed;
	uint64_t wb_bytes;                   /* buffered + in flight */
	uint64_t absorbed;
	uint64_t up_writes;
	uint64_t up_write_bytes;
	uint32_t proxy_inflight;             /* proxy requests in flight */
	unsigned int depth;                  /* entry points on the stack */
	bool free_pending;                   /* closed; free at depth 0 */
	/* the message being handled */
	bool cur_encrypted;                  /* arrived sealed */
	uint64_t cur_enc_sid;                /* ... under this session */
	struct px_prot cur_prot;             /* how answers to it travel */
	bool smb2_seen;
};

/* waiting in the max_connecting queue */
static inline bool
px_conn_queued(const struct px_conn *c)
{
	return c->qprev != NULL;
}

/* conn.c services for relay.c */
int px_conn_send(struct px_side *s, const uint8_t *msg, size_t len)
    PX_MUSTCHECK; /* adds the NBSS header */
int px_conn_send_frame(struct px_side *s, const uint8_t *frame, size_t len)
    PX_MUSTCHECK; /* frame already has its NBSS header */
struct px_buf *px_conn_outbuf(struct px_side *s);
void px_conn_out_commit(struct px_side *s, size_t n);
void px_conn_set_state(struct px_conn *c, enum px_conn_state st);
void px_conn_go_opaque(struct px_conn *c, enum px_opaque_reason r,
    const char *detail);
/* Re-run handling of buffered client input (a stall may have cleared). */
void px_conn_kick(struct px_conn *c);
void px_conn_close(struct px_conn *c, enum px_close_reason r);
void px_conn_arm_timer(struct px_conn *c);
struct px_conn *px_conn_first(void);

/* relay.c */
enum px_rc { PX_RC_DONE = 0, PX_RC_STALL, PX_RC_CLOSE };
enum px_rc px_relay_client_frame(struct px_conn *c, const uint8_t *frame,
    size_t len);
enum px_rc px_relay_server_frame(struct px_conn *c, const uint8_t *frame,
    size_t len);
/*
 * Cut-through: may a large frame (full bytes with its NBSS header, of which
 * at least PX_STREAM_HEAD are at frame) be forwarded before it is
 * complete?  True means yes, and the ledger has recorded it.  Only
 * standalone WRITE requests that will not be absorbed and READ responses
 * to the client qualify.
 */
#define PX_STREAM_HEAD (PX_NBSS_HDR + SMB2_HDR_LEN + 48)
#define PX_STREAM_MIN  (256 * 1024)
bool px_relay_client_stream(struct px_conn *c, const uint8_t *frame,
    size_t full);
bool px_relay_server_stream(struct px_conn *c, const uint8_t *frame,
    size_t full);
/* Flush every open of the connection (absorbed data goes upstream). */
void px_relay_flush_all(struct px_conn *c, enum co_flush_cause cause);
/* True when nothing absorbed is buffered or in flight and no proxy request
 * is outstanding: the connection may be closed or turned opaque. */
bool px_relay_quiet(const struct px_conn *c);
/* Timer work: idle/age flushes.  Returns the next deadline (ms) or 0. */
double px_relay_timer(struct px_conn *c, double now_ms);
/* Check whether the stalled client frame may go now. */
bool px_relay_stall_cleared(struct px_conn *c);
void px_relay_free(struct px_conn *c);

#endif
