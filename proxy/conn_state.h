/*
 * conn_state.h - one connection as the relay layer sees it (struct
 * px_conn: its state, its ledger, what the relay is waiting for), and the
 * services the relay needs from the transport (struct px_conn_ops), which
 * conn.c registers at start (px_relay_init, relay.h).
 *
 * Shared by the relay layer (relay.c and its glue) and conn.c, which
 * embeds struct px_conn in its struct px_link (conn.h) beside the
 * sockets, buffers, watchers and timers that the relay never sees.
 */
#ifndef SMBACCEL_CONN_STATE_H
#define SMBACCEL_CONN_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proxy/proxy.h"
#include "proxy/ledger.h"

enum px_conn_state {
	PX_CONN_CONNECTING = 0,  /* upstream connect in progress */
	PX_CONN_WAITING,         /* waiting for a same-client drain to finish,
	                          * or for max_connecting */
	PX_CONN_RELAY,           /* SMB2-aware relay */
	PX_CONN_OPAQUE,          /* byte relay for the rest of its life */
	PX_CONN_DRAINING,        /* client gone; writing buffered data */
	PX_CONN_CLOSED,
};
const char *px_conn_state_name(enum px_conn_state s);

/* The two ends of a connection, as destinations of what the relay sends. */
enum px_end { PX_CLIENT = 0, PX_SERVER = 1 };

/* How a message the proxy makes must travel: signed, sealed, or plain. */
struct px_prot {
	bool sign;
	bool encrypt;
	uint64_t sid;
};

struct px_cmp;

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

struct px_lease_owed;   /* a break acknowledgement owed (lease.c) */

/*
 * One client connection and its upstream connection, as the relay sees
 * them.  conn.c embeds it in its transport (struct px_link, conn.h), which
 * holds the sockets, buffers, watchers and timers; the relay layer never
 * looks there.
 */
struct px_conn {
	struct px_conn *next;                /* px_rt.conns */
	struct px_conn *prev;
	uint64_t id;
	enum px_conn_state state;            /* changed by conn.c only */
	bool client_gone;                    /* the client closed or reset
	                                      * its side (conn.c) */
	bool client_timed_out;               /* ... its socket timed out
	                                      * (client_keepalive), logged */
	bool server_timed_out;               /* the server's socket timed out
	                                      * (upstream_keepalive), logged */
	bool quiet;                          /* accepted past the rate of
	                                      * connection lines: its routine
	                                      * info lines are not logged */
	struct sockaddr_storage peer_addr;   /* the client */
	struct sockaddr_storage dst_addr;    /* the server */
	char dst_str[64];                    /* px_addr_str(dst_addr), made
	                                      * once (the document cache's keys
	                                      * name the server by it) */
	struct px_ledger led;
	enum px_opaque_reason opaque;
	enum px_close_reason close_reason;
	enum px_close_reason fail;           /* why the relay asked to close
	                                      * (PX_RC_CLOSE); none: no memory */
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
	struct px_cmp *cmp;                  /* CLOSEs sent with their flush
	                                      * (compound.c) */
	uint32_t ids_wanted;                 /* proxy requests waiting for a
	                                      * pool id: leftovers are kept
	                                      * from ECHOs (emit.c) */
	double dc_keep_until;                /* pooled ids are kept for
	                                      * document fetches until then */
	uint32_t dc_inflight;                /* document fetch chunks in
	                                      * flight */
	double dc_hold_until;                /* pooled ids held for the next
	                                      * miss until then (doccache.c) */
	double reopen_until;                 /* a durable reconnect waits for
	                                      * the client's previous
	                                      * connection to close until then
	                                      * (coherence.c) */
	uint64_t reopen_gave_up;             /* the one it stopped waiting
	                                      * for */
	/* smbaccel's leases on the client's behalf (lease.c) */
	struct px_lease_owed *pl_owed;       /* breaks to acknowledge */
	uint64_t pl_breaks;                  /* breaks handled */
	bool no_reserve;                     /* turning opaque: keep no id */
	/* the message being handled */
	bool cur_encrypted;                  /* arrived sealed */
	uint64_t cur_enc_sid;                /* ... under this session */
	bool cur_partial;                    /* ... and only its head was
	                                      * decrypted (relay.c) */
	struct px_prot cur_prot;             /* how answers to it travel */
	bool smb2_seen;
};

/*
 * What the relay needs from the transport.  conn.c fills this in and
 * registers it with px_relay_init() before the first connection.
 *   send_frame  queue a frame (NBSS header included) for one end; 0 also
 *               when that end is gone (nothing to deliver to), -1 on OOM
 *   send        the same for a bare SMB2 message (the header is added)
 *   outbuf      the buffer a message for `to` must be built in place in
 *               (messages never interleave with a frame cut through);
 *               out_commit accounts n bytes placed there and starts writing
 *   connected   false once that end's socket is closed; for the client,
 *               also once it stopped sending (EOF)
 *   go_opaque   the connection becomes a byte relay for good (logged)
 *   kick        handle the connection's buffered client input again (a
 *               stall may have cleared)
 *   hold        keep the connection's memory until release, should it be
 *               closed meanwhile (a kick of one connection may close
 *               another: px_emit_kick_each)
 *   arm_timer   re-arm the connection's timer (write-behind deadlines)
 */
struct px_conn_ops {
	int (*send_frame)(struct px_conn *c, enum px_end to,
	    const uint8_t *frame, size_t len);
	int (*send)(struct px_conn *c, enum px_end to, const uint8_t *msg,
	    size_t len);
	struct px_buf *(*outbuf)(struct px_conn *c, enum px_end to);
	void (*out_commit)(struct px_conn *c, enum px_end to, size_t n);
	bool (*connected)(const struct px_conn *c, enum px_end end);
	void (*go_opaque)(struct px_conn *c, enum px_opaque_reason r,
	    const char *detail);
	void (*kick)(struct px_conn *c);
	void (*hold)(struct px_conn *c);
	void (*release)(struct px_conn *c);
	void (*arm_timer)(struct px_conn *c);
};

#endif
