/*
 * proxy.h - the daemon: connections, the message ledger, logging, stats.
 *
 * One client TCP connection <-> one upstream TCP connection (struct
 * px_conn, two struct px_side that point at each other).  Frames are cut
 * from each side's input buffer, decoded far enough to keep the ledger
 * (DESIGN.md section 3) and to decide, and then forwarded, absorbed, or
 * answered.
 */
#ifndef SMBACCEL_PROXY_H
#define SMBACCEL_PROXY_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "proxy/smb2/smb2.h"
#include "proxy/auth/auth.h"
#include "coalesce/coalesce.h"
#include "policy/policy.h"

/* ---- logging ------------------------------------------------------------ */

enum px_log_level { PX_LOG_ERROR = 0, PX_LOG_WARN, PX_LOG_INFO, PX_LOG_DEBUG };

void log_init(int level, bool to_stderr);
void log_set_level(int level);
int log_get_level(void);
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
#define log_debug_on() (log_get_level() >= PX_LOG_DEBUG)

/* ---- byte buffer ------------------------------------------------------- */

/*
 * Invariant (px_buf_sane): head <= tail <= cap.  Bytes [0, head) are done
 * (sent, or parsed and handed on), [head, tail) are pending (to send, or to
 * parse), [tail, cap) is free space.
 */
struct px_buf {
	uint8_t *data;
	size_t head;
	size_t tail;
	size_t cap;
};
bool px_buf_sane(const struct px_buf *b);
static inline size_t px_buf_len(const struct px_buf *b)
{
	return b->tail - b->head;
}
/* Make room for n more bytes at tail (compacting or growing).  -1 on OOM. */
int px_buf_reserve(struct px_buf *b, size_t n) PX_MUSTCHECK;
int px_buf_append(struct px_buf *b, const void *p, size_t n) PX_MUSTCHECK;
void px_buf_consume(struct px_buf *b, size_t n);
void px_buf_free(struct px_buf *b);
/* Give memory back when the buffer is empty and larger than keep. */
void px_buf_shrink(struct px_buf *b, size_t keep);

/* ---- stats --------------------------------------------------------------- */

enum px_opaque_reason {
	PX_OPAQUE_NONE = 0,
	PX_OPAQUE_SMB1,
	PX_OPAQUE_ENCRYPTED_NO_KEY,
	PX_OPAQUE_SIGNED_NO_KEY,
	PX_OPAQUE_COMPRESSED,
	PX_OPAQUE_DECODE_ERROR,
	PX_OPAQUE_UNKNOWN_MAGIC,
	PX_OPAQUE_LEDGER,
	PX_OPAQUE_NREASONS
};
const char *px_opaque_reason_name(enum px_opaque_reason r);

/* Reasons a connection was closed by the proxy (not by a peer). */
enum px_close_reason {
	PX_CLOSE_NONE = 0,
	PX_CLOSE_BAD_FRAME,
	PX_CLOSE_CONNECT_FAILED,
	PX_CLOSE_CONNECT_TIMEOUT,
	PX_CLOSE_NO_MEMORY,
	PX_CLOSE_SHUTDOWN,
	PX_CLOSE_IDLE,
	PX_CLOSE_SERVER_TIMEOUT,
	PX_CLOSE_NREASONS
};
const char *px_close_reason_name(enum px_close_reason r);

enum px_ra_cause {
	PX_RA_WRITE = 0, PX_RA_SETINFO, PX_RA_LOCK, PX_RA_BREAK, PX_RA_CLOSE,
	PX_RA_PEER, PX_RA_RANDOM, PX_RA_ERROR, PX_RA_NCAUSES
};
const char *px_ra_cause_name(enum px_ra_cause c);

struct px_stats {
	uint64_t conns_total;
	uint64_t conns_active;
	uint64_t conns_queued;              /* waited for max_connecting */
	uint64_t conns_queue_now;
	uint64_t bytes_c2s;
	uint64_t bytes_s2c;
	uint64_t requests[SMB2_NCMDS + 1];  /* last slot: unknown commands */
	uint64_t opaque[PX_OPAQUE_NREASONS];
	uint64_t closed[PX_CLOSE_NREASONS];
	uint64_t ledger_errors;
	/* write-behind */
	uint64_t writes_absorbed;
	uint64_t bytes_absorbed;
	uint64_t writes_forwarded;
	uint64_t upstream_writes;
	uint64_t upstream_write_bytes;
	uint64_t upstream_echoes;
	uint64_t flushes[CO_FLUSH_NCAUSES];
	uint64_t deferred_errors;
	uint64_t delayed_responses;
	uint64_t wb_bytes_now;      /* buffered, not yet acknowledged upstream */
	uint64_t wb_bytes_peak;
	uint64_t pool_ids_now;
	/* read-ahead */
	uint64_t ra_hits;             /* reads served from the cache */
	uint64_t ra_waits;            /* reads that waited for a fetch */
	uint64_t ra_widened;
	uint64_t ra_fetches;          /* upstream read-ahead READs */
	uint64_t ra_fetch_bytes;      /* bytes asked upstream */
	uint64_t ra_served_bytes;     /* bytes delivered from the cache */
	uint64_t ra_bytes_now;
	uint64_t ra_window_max;
	uint64_t ra_invalidations[PX_RA_NCAUSES];
	/* keyed sessions */
	uint64_t sessions_keyed;
	uint64_t sessions_unkeyed;      /* signed/sealed sessions without key */
	uint64_t signed_out;            /* messages smbaccel signed */
	uint64_t encrypted_out;         /* messages smbaccel encrypted */
	uint64_t decrypted_in;          /* messages smbaccel decrypted */
	uint64_t bad_signatures;
};
extern struct px_stats px_stats;

/* ---- ledger (DESIGN.md section 3) --------------------------------------- */

/* Keys and NTLM state of a session (keyed.c). */
struct px_keyed {
	bool have_chal;
	struct px_ntlm_challenge chal;
	struct px_smb_keys keys;
	struct px_nonce_gen nonce_s2c;   /* what smbaccel sends the client */
	struct px_nonce_gen nonce_c2s;   /* what smbaccel sends the server */
};

struct px_session {
	struct px_session *next;
	uint64_t id;
	bool established;
	bool signing_required;
	bool encrypt;
	bool guest;
	bool anonymous;
	bool keyed;                 /* smbaccel holds the session's keys */
	const char *why_not;        /* why not keyed (static string) */
	uint8_t preauth[64];        /* 3.1.1 preauth integrity hash */
	struct px_keyed *kx;
};

struct px_tree {
	struct px_tree *next;
	uint64_t session_id;
	uint32_t tree_id;
	char server[256];
	char share[256];
	uint32_t share_flags;
	uint32_t maximal_access;
	struct pol_share policy;     /* effective settings at connect time */
};

struct px_open;
struct px_conn;

/* A request in flight upstream (forwarded, or originated by the proxy). */
enum px_origin { PX_ORIGIN_CLIENT = 0, PX_ORIGIN_PROXY };

struct px_pending {
	uint64_t mid;
	uint16_t command;
	uint16_t charge;
	enum px_origin origin;
	bool in_compound;
	bool related;
	uint64_t session_id;
	uint32_t tree_id;
	uint64_t async_id;
	struct smb2_fileid fid;
	/* request facts needed when the response arrives */
	union {
		struct {
			uint32_t desired_access;
			uint32_t create_options;
			uint32_t disposition;
			uint8_t oplock;
			char *name;      /* malloc'd */
		} create;
		struct {
			char *path;      /* malloc'd \\server\share */
		} tcon;
		struct {
			uint8_t security_mode;
			uint8_t preauth[64];     /* hash including this request */
			void *auth;              /* struct px_ntlm_auth, malloc'd */
		} sess;
		struct {
			uint8_t oplock_level;   /* oplock break ack */
			uint32_t lease_state;   /* lease break ack */
			uint8_t lease_key[16];
			bool lease;
		} ack;
		struct {
			uint64_t offset;
			uint32_t length;
			struct px_open *open;   /* proxy write/read: whose */
			uint32_t gen;           /* read-ahead generation */
			uint32_t client_len;    /* widened read: what the */
			uint32_t client_min;    /* client asked for */
			bool widened;
			bool prot_sign;         /* the request was signed */
			bool prot_encrypt;      /* ... or sealed */
		} io;
	} u;
};

/* An open file the ledger saw created on this connection. */
struct px_open {
	struct px_open *next;
	struct smb2_fileid fid;
	uint64_t session_id;
	uint32_t tree_id;
	char *name;
	uint32_t desired_access;
	uint32_t maximal_access;    /* from MxAc, 0 when unknown */
	uint32_t create_options;
	uint8_t oplock;             /* granted oplock level */
	bool has_lease;
	uint8_t lease_key[16];
	uint32_t lease_state;
	/* write-behind state */
	struct co_extent wb;        /* absorbed, not yet sent */
	uint32_t wb_inflight;       /* proxy writes awaiting their response */
	uint64_t wb_inflight_bytes;
	uint64_t wb_inflight_lo;    /* hull of the ranges in flight */
	uint64_t wb_inflight_hi;
	uint32_t failed_status;     /* deferred NTSTATUS, 0 = none */
	struct co_ra ra;            /* read-ahead cache */
	uint64_t size_hint;         /* EndOfFile at CREATE, grown by writes */
	bool is_dir;                /* a directory (attributes or options) */
	bool locked;                /* a LOCK was seen on this file */
	bool lock_checked;          /* other opens' locks looked at */
	bool breaking;
	bool closed;                /* CLOSE forwarded; drop on response */
};

struct px_ledger {
	struct co_credits cr;
	struct co_pool pool;
	uint64_t window;            /* largest S - lowest outstanding id seen */
	struct px_pending **tab;    /* open-addressing table keyed by mid */
	size_t tab_cap;             /* power of two */
	size_t npending;
	size_t nasync;              /* of them, gone async (interim answer) */
	struct px_session *sessions;
	struct px_tree *trees;
	struct px_open *opens;
	size_t nopens;
	/* negotiated */
	bool negotiated;
	bool smb1_negotiate;        /* SMB1 NEGOTIATE forwarded, no answer yet */
	uint16_t dialect;
	uint16_t client_security_mode;
	uint16_t server_security_mode;
	uint32_t capabilities;
	uint32_t max_read;
	uint32_t max_write;
	uint16_t cipher;            /* 3.1.1 ENCRYPTION_CAPABILITIES answer */
	uint16_t signing_alg;       /* 3.1.1 SIGNING_CAPABILITIES answer */
	uint8_t preauth_req[64];    /* hash over the last NEGOTIATE request */
	uint8_t preauth[64];        /* connection preauth hash (3.1.1) */
	uint64_t errors;
	uint64_t conn_id;           /* for log lines */
	const struct pol_config *cfg; /* for share lookups; NULL = defaults */
};

void px_ledger_init(struct px_ledger *l, uint64_t conn_id);
void px_ledger_free(struct px_ledger *l);

struct px_pending *px_pending_add(struct px_ledger *l, uint64_t mid);
struct px_pending *px_pending_find(struct px_ledger *l, uint64_t mid);
struct px_pending *px_pending_find_async(struct px_ledger *l,
    uint64_t async_id);
void px_pending_del(struct px_ledger *l, struct px_pending *p);

struct px_session *px_session_find(struct px_ledger *l, uint64_t id);
void px_session_free(struct px_session *s);
struct px_tree *px_tree_find(struct px_ledger *l, uint64_t sid, uint32_t tid);
struct px_open *px_open_find(struct px_ledger *l,
    const struct smb2_fileid *fid);
struct px_open *px_open_find_lease(struct px_ledger *l, const uint8_t *key);
void px_open_free(struct px_open *o);

/* Record a client request element (ledger cross-checks; pending entry for
 * responses).  Returns the pending entry, or NULL for CANCEL and errors. */
struct px_pending *px_ledger_client_request(struct px_ledger *l,
    const struct smb2_hdr *h, const struct smb2_elem *e,
    bool in_compound, const struct smb2_fileid *related_fid);
/*
 * Account a server response element: grants to S (and to C when origin
 * is the client), session/tree/open state.  *pp gets the matching pending
 * entry (removed from the table unless the response is an interim one;
 * caller frees it with px_pending_free), or NULL when none matched.
 */
void px_ledger_server_response(struct px_ledger *l, const struct smb2_hdr *h,
    const struct smb2_elem *e, struct smb2_fileid *last_create_fid,
    struct px_pending **pp, bool *interim);
void px_pending_free(struct px_pending *p);
/* Oplock/lease break notification from the server. */
void px_ledger_break(struct px_ledger *l, const struct smb2_elem *e);

bool px_open_write_access(const struct px_open *o);
bool px_open_read_access(const struct px_open *o);
bool px_open_write_caching(const struct px_open *o);
bool px_open_read_caching(const struct px_open *o);
const char *px_dialect_name(uint16_t d);

/* ---- connections ---------------------------------------------------------- */

struct ev_loop;

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

/* Global runtime shared by the listener, connections and control. */
struct px_runtime {
	struct ev_loop *loop;
	struct pol_config *cfg;
	const char *cfg_path;
	bool stopping;
	bool force_debug;           /* -d: debug logging whatever the policy */
	uint64_t next_conn_id;
	struct px_conn *conns;      /* all live connections */
};
extern struct px_runtime px_rt;

/* Accept a client socket; dst is where to connect upstream. */
void px_conn_new(int cfd, const struct sockaddr_storage *peer,
    const struct sockaddr_storage *dst);
/* Close every connection (graceful: drain write-behind first). */
void px_conn_shutdown_all(void);
size_t px_conn_count(void);
/* The policy changed (max_connecting may have grown). */
void px_conn_reloaded(void);
/* Render connection table (human or JSON) into f. */
void px_conn_dump(FILE *f, bool json);

/* ---- keyed sessions (keyed.c) --------------------------------------------- */

struct px_conn;
struct px_side;
int px_keyed_load_secrets(const char *path) PX_MUSTCHECK;
void px_keyed_shutdown(void);
void px_keyed_negotiate_req(struct px_conn *c, const uint8_t *msg, size_t len);
void px_keyed_negotiate_rsp(struct px_conn *c, const uint8_t *msg, size_t len);
void px_keyed_setup_req(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t len, struct px_pending *p);
void px_keyed_setup_rsp(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t len, struct px_pending *p);
bool px_keyed_verify(struct px_conn *c, struct px_session *s,
    const uint8_t *msg, size_t len, uint16_t command);
int px_keyed_sign(struct px_conn *c, uint64_t session_id, uint8_t *msg,
    size_t len, bool from_server) PX_MUSTCHECK;
uint8_t *px_keyed_decrypt(struct px_conn *c, const uint8_t *msg, size_t len,
    bool from_server, size_t *outlen, struct px_session **sp);
int px_keyed_send_encrypted(struct px_conn *c, struct px_side *to,
    uint64_t session_id, const uint8_t *msg, size_t len) PX_MUSTCHECK;

/* ---- the upstream socket (upstream.c) ------------------------------------ */

/*
 * What one upstream socket was asked for (server settings of the policy)
 * and what the kernel gave it.  Filled by px_upstream_prepare() before the
 * connect and px_upstream_connected() after it; shown by px_upstream_dump().
 */
#define PX_CC_LEN 16                /* TCP_CA_NAME_MAX */
struct px_upstream {
	char setting[PX_CC_LEN];    /* upstream_congestion as configured */
	char want[PX_CC_LEN];       /* algorithm asked for, "" = none */
	char got[PX_CC_LEN];        /* what the socket has once connected */
	bool fallback;              /* want refused: got is something else */
	int cc_errno;
	uint64_t sndbuf_want, rcvbuf_want;  /* 0: autotuning */
	int sndbuf_got, rcvbuf_got;         /* SO_SNDBUF/SO_RCVBUF read back */
	int sndbuf_errno, rcvbuf_errno;
};
void px_upstream_prepare(struct px_upstream *u, int fd,
    const struct sockaddr_storage *dst, uint64_t conn_id);
void px_upstream_connected(struct px_upstream *u, int fd, uint64_t conn_id);
/* Congestion control, RTT, cwnd, retransmits (TCP_INFO) of fd: text
 * columns (PX_UPSTREAM_HDR) or a JSON member ",\"upstream_tcp\":{...}". */
#define PX_UPSTREAM_HDR " CC       RTT(ms)   CWND RETRANS"
void px_upstream_dump(FILE *f, const struct px_upstream *u, int fd,
    bool json);
/* smbaccel -t: every server setting of cfg against this kernel; problems
 * as "FILE:LINE: ..." lines on f; returns the number of errors. */
int px_upstream_check(const struct pol_config *cfg, FILE *f);

/* ---- listener / control / daemon ----------------------------------------- */

int px_listen_start(const struct pol_global *g) PX_MUSTCHECK;
void px_listen_stop(void);
void px_listen_pause(const char *what);
/* Forward mode: re-resolve the upstream after a reload. */
int px_listen_reload(const struct pol_global *g) PX_MUSTCHECK;
int px_control_start(const char *path) PX_MUSTCHECK;
void px_control_stop(void);
void px_stats_dump(FILE *f, bool json);
/* Reload the policy file; 0 on success (new policy in force). */
int px_reload(void);
int px_daemon_run(const char *cfg_path, bool foreground);

/* address formatting helper: "1.2.3.4:445" / "[::1]:445" */
const char *px_addr_str(const struct sockaddr_storage *ss, char *buf,
    size_t len);
double px_now_ms(void);

#endif
