/*
 * proxy.h - what every file of the engine (proxy/, outside the pure
 * proxy/smb2/ and proxy/auth/) shares: logging, the byte buffer, the
 * statistics, the process-wide runtime and two small helpers.
 *
 * The engine's layers, each with its own header, call one way only
 * (docs/design.md, "Layers"):
 *
 *   daemon.h    main, signals, reload            (daemon.c, main.c)
 *   listener.h  listening sockets                (listener.c, tproxy.c)
 *   control.h   the control socket               (control.c)
 *   conn.h      sockets, buffers, timers of one connection (conn.c)
 *   relay.h     what conn hands frames to: the dispatcher (relay.c) and,
 *               each with its own header, its feature glue: coherence.h,
 *               readahead.h, compound.h, writebehind.h, alter.h, emit.h, keyed.h; the
 *               connection they all work on is conn_state.h
 *   ledger.h    message ids, credits, sessions, trees, opens (ledger.c)
 *
 * A lower layer reaches a higher one only through callbacks that the
 * higher one registers at start (struct px_conn_ops, struct
 * px_conn_hooks, the control socket's reload callback).
 */
#ifndef SMBACCEL_PROXY_H
#define SMBACCEL_PROXY_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "proxy/smb2/smb2.h"
#include "coalesce/coalesce.h"
#include "policy/policy.h"

/* ---- logging ------------------------------------------------------------ */

enum px_log_level { PX_LOG_ERROR = 0, PX_LOG_WARN, PX_LOG_INFO, PX_LOG_DEBUG };

void log_init(int level, bool to_stderr);
void log_set_level(int level);
void log_set_prefix(const char *prefix);
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
/* Is stderr journald's stream ($JOURNAL_STREAM): lines carry "<N>"
 * priority prefixes, no time.  Policy errors printed for people, with
 * the error priority there. */
bool log_to_journal(void);
void log_policy_errors(const struct pol_errors *errs);

/*
 * Lines a remote party can cause at any rate (a flood of connections
 * refused, of bad signatures): at most `burst` of one kind per
 * `interval_ms`, so that they cannot crowd out the rest (journald drops
 * all of a service's lines past its own rate limit).  px_lograte_ok says
 * whether to log this one; px_lograte_more gives the text that line
 * ends with, " (N more like it not logged)" when some were held back.
 */
struct px_lograte {
	double start_ms;
	unsigned int n;
	unsigned long long held;    /* held back since the last line */
	unsigned long long told;    /* held back before this line */
};
bool px_lograte_ok(struct px_lograte *r, double now_ms, unsigned int burst,
    double interval_ms);
const char *px_lograte_more(const struct px_lograte *r, char *buf,
    size_t len);
#define PX_LOGRATE_BURST 5
#define PX_LOGRATE_MS 10000.0
/* px_lograte_ok at PX_LOGRATE_BURST per PX_LOGRATE_MS, now; more gets
 * px_lograte_more's text when it says yes.  PX_WARN_RATED(r, fmt, ...):
 * log_warnx of the literal fmt, with that text after it, at that rate. */
bool px_lograte_now(struct px_lograte *r, char *more, size_t len);
#define PX_WARN_RATED(r, fmt, ...) do {					\
	char more_[64];							\
	if (px_lograte_now((r), more_, sizeof(more_)))			\
		log_warnx(fmt "%s", __VA_ARGS__, more_);		\
} while (0)

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
	PX_CLOSE_CANNOT_SIGN,     /* a message to sign or seal, no key */
	PX_CLOSE_NOT_AUTHENTIC,   /* a server answer smbaccel acts on fails
	                           * its session's signature or sealing */
	PX_CLOSE_UNREADABLE,      /* a server message smbaccel cannot read
	                           * while it holds state of its own */
	PX_CLOSE_BAD_IDS,         /* a client's message id of a request in
	                           * flight, or too many in flight */
	PX_CLOSE_NREASONS
};
const char *px_close_reason_name(enum px_close_reason r);
/* The closes px_conn_close logs even for a connection past the log rate
 * (c->quiet): smbaccel or the server ended it for a reason of its own.
 * A new reason is not among them unless named here. */
#define PX_CLOSE_ALWAYS_LOGGED(r) ((r) == PX_CLOSE_NO_MEMORY ||		\
	(r) == PX_CLOSE_SERVER_TIMEOUT || (r) == PX_CLOSE_CANNOT_SIGN ||	\
	(r) == PX_CLOSE_NOT_AUTHENTIC || (r) == PX_CLOSE_UNREADABLE)

enum px_ra_cause {
	PX_RA_WRITE = 0, PX_RA_SETINFO, PX_RA_LOCK, PX_RA_BREAK, PX_RA_CLOSE,
	PX_RA_PEER, PX_RA_RANDOM, PX_RA_ERROR, PX_RA_NCAUSES
};
const char *px_ra_cause_name(enum px_ra_cause c);

/* Why a CLOSE of a file with buffered writes was not sent with them as
 * one compound (compound.c). */
enum px_cmp_decline {
	PX_CMP_OFF = 0,       /* close_compound = no */
	PX_CMP_ALTER,         /* the CLOSE may not be changed (signing) */
	PX_CMP_BUSY,          /* writes of the file in flight */
	PX_CMP_IDS,           /* the id pool cannot pay for every WRITE */
	PX_CMP_EXPIRY,        /* the server may expire the session unseen */
	PX_CMP_OTHER,         /* a deferred error, a held answer, ... */
	PX_CMP_NDECLINES
};
const char *px_cmp_decline_name(enum px_cmp_decline d);
/* Why a document-cache copy was dropped (DESIGN.md section 5a). */
enum px_dc_cause {
	PX_DC_WRITE = 0, PX_DC_SETINFO, PX_DC_RENAME, PX_DC_DELETE,
	PX_DC_OVERWRITE, PX_DC_BREAK, PX_DC_LOCK, PX_DC_STALE, PX_DC_SHORT,
	PX_DC_CORRUPT, PX_DC_NCAUSES
};
const char *px_dc_cause_name(enum px_dc_cause c);

#define PX_UNKEYED_MAX 24

struct px_stats {
	uint64_t conns_total;
	uint64_t conns_active;
	uint64_t conns_queued;              /* waited for max_connecting */
	uint64_t conns_queue_now;
	uint64_t conns_refused;             /* at max_connections */
	uint64_t conns_unredirected;        /* straight to the listener, or
	                                     * no original destination */
	uint64_t reloads;                   /* policy reloads that took effect */
	uint64_t reloads_failed;            /* ... refused, old policy kept */
	uint64_t reload_ok;                 /* 1: the last reload took effect
	                                     * (or none was tried); 0: refused */
	uint64_t policy_loaded;             /* when the policy in force was
	                                     * read, seconds since the epoch */
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
	uint64_t wb_overlap_waits;      /* absorbed writes that waited for a
	                                 * write in flight they overlap */
	uint64_t upstream_writes;
	uint64_t upstream_write_bytes;
	uint64_t upstream_echoes;
	uint64_t upstream_pace_refreshes; /* bbr start-up rate refreshed
	                                   * (upstream.c, px_upstream_pace) */
	uint64_t flushes[CO_FLUSH_NCAUSES];
	uint64_t deferred_errors;
	uint64_t deferred_unreported; /* ... whose CLOSE could not carry it
	                               * (a client's compound, a signed
	                               * answer without the key) */
	uint64_t lost_reconnected;  /* durable opens that lost data, whose
	                             * reconnect carries the error
	                             * (writebehind.c) */
	uint64_t lost_bytes;        /* acknowledged, never confirmed written:
	                             * failed, or in flight or buffered when
	                             * the connection went */
	uint64_t delayed_responses;
	uint64_t wb_bytes_now;      /* buffered, not yet acknowledged upstream */
	uint64_t wb_bytes_peak;
	uint64_t pool_ids_now;
	/* CLOSE sent with its flush as one compound (compound.c) */
	uint64_t cmp_closes;          /* such compounds */
	uint64_t cmp_others;          /* ... of a FLUSH, SET_INFO, QUERY_INFO */
	uint64_t cmp_writes;          /* WRITEs they carried */
	uint64_t cmp_write_errors;    /* ... of which one failed */
	uint64_t cmp_proxy_closes;    /* handles smbaccel closed itself */
	uint64_t cmp_handles_left;    /* ... that waited for an id */
	uint64_t cmp_declined[PX_CMP_NDECLINES];
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
	/* document cache (doccache.c, docstore.c; DESIGN.md section 5a) */
	uint64_t dc_hits;             /* reads served from it */
	uint64_t dc_served_bytes;
	uint64_t dc_waits;            /* reads that waited for a fetch */
	uint64_t dc_widened;          /* misses widened to whole chunks */
	uint64_t dc_misses;           /* misses forwarded as they came */
	uint64_t dc_fetches;          /* its own upstream READs */
	uint64_t dc_fetch_bytes;      /* bytes they and widened misses asked */
	uint64_t dc_fetch_ids;        /* pooled ids they spent */
	uint64_t dc_kept_ids;         /* ... of them ids the connection had
	                               * kept from before the open's first read */
	uint64_t dc_stored_bytes;     /* bytes that arrived into it */
	uint64_t dc_attached;         /* opens served by an existing copy */
	uint64_t dc_started;          /* copies started for random readers */
	uint64_t dc_no_room;          /* ... not started: memory busy */
	uint64_t dc_valid_ok;         /* CREATE answers that matched a copy */
	uint64_t dc_valid_failed[CO_DC_NCAUSES];   /* ... that did not, why */
	uint64_t dc_drops[PX_DC_NCAUSES];          /* copies dropped, why */
	uint64_t dc_bytes_now;        /* memory held (data and bookkeeping) */
	uint64_t dc_entries_now;
	uint64_t dc_evicted;          /* copies dropped for memory */
	/* its on-disk store */
	uint64_t ds_files;
	uint64_t ds_bytes;            /* in whole 4 KiB blocks */
	uint64_t ds_index_bytes;      /* memory of its index (estimated) */
	uint64_t ds_writes;           /* copies written */
	uint64_t ds_loads;            /* copies read back at an open */
	uint64_t ds_chunk_reads;
	uint64_t ds_corrupt;          /* copies found corrupt (discarded) */
	uint64_t ds_evicted;          /* copies removed for read_cache_disk */
	uint64_t ds_errors;           /* I/O errors */
	/* keyed sessions */
	uint64_t sessions_keyed;
	uint64_t sessions_unkeyed;      /* signed/sealed sessions without key */
	/* ... by why_not_keyed, in the order first seen; the reasons are
	 * string literals, so the pointers stay valid; a reason beyond
	 * PX_UNKEYED_MAX counts in the last slot as "other" */
	struct {
		const char *why;
		uint64_t n;
	} unkeyed_by[PX_UNKEYED_MAX];
	uint64_t signed_out;            /* messages smbaccel signed */
	uint64_t encrypted_out;         /* messages smbaccel encrypted */
	uint64_t decrypted_in;          /* messages smbaccel decrypted */
	uint64_t decrypted_head_only;   /* sealed (AES-GCM) messages it
	                                 * authenticated whole and decrypted
	                                 * only the head of: large WRITEs that
	                                 * go upstream as the client sealed
	                                 * them */
	uint64_t decrypt_skipped_bytes; /* ... bytes not decrypted so */
	uint64_t bad_signatures;
	uint64_t server_not_authentic;  /* server answers smbaccel would act
	                                 * on, failing their protection */
	uint64_t sessions_server_signs_all;  /* unkeyed sessions whose server
	                                      * signs answers it need not */
	uint64_t sessions_expiring;     /* Kerberos-keyed sessions left alone
	                                 * before their ticket ended */
	uint64_t bad_message_ids;  /* client frames with a message id in use,
	                            * or too many in flight (closed) */
	uint64_t sessions_reauth_refused; /* established sessions whose
	                                   * re-authentication the server
	                                   * refused (it deletes them) */
	uint64_t sessions_server_expired; /* sessions the server said had
	                                   * expired (left alone until the
	                                   * client re-authenticated) */
	uint64_t expiry_kept_bytes;     /* flushed bytes the server refused
	                                 * as its session had expired, kept
	                                 * to be written again */
	uint64_t expiry_resent_bytes;   /* ... written again after the
	                                 * client re-authenticated */
	uint64_t expiry_answered;       /* a CLOSE or LOCK of a file with
	                                 * data held in such a session,
	                                 * answered the expiry here */
	uint64_t sessions_multichannel; /* sessions left alone since a second
	                                 * channel was bound to them */
	uint64_t clients_timed_out;     /* client sockets that timed out
	                                 * (client_keepalive, conn.c) */
	uint64_t servers_timed_out;     /* server sockets that timed out
	                                 * (upstream_keepalive) */
	uint64_t client_requests_dropped; /* frames a vanished client sent
	                                   * and smbaccel had not handled,
	                                   * dropped when its reconnect went
	                                   * ahead of the drain (side.c) */
	uint64_t reopen_waits;          /* durable reconnects that waited for
	                                 * the close of the client's previous
	                                 * connection (coherence.c) */
	uint64_t interface_queries_hidden; /* FSCTL_QUERY_NETWORK_INTERFACE_INFO
	                                    * answered NOT_SUPPORTED */
	/* CREATEs rewritten (create.c) and leases smbaccel holds on a
	 * client's behalf (lease.c, DESIGN.md section 6) */
	uint64_t creates_rewritten;
	uint64_t pl_asked;              /* CREATEs sent with smbaccel's lease
	                                 * or oplock request */
	uint64_t pl_granted;            /* ... answered with read caching */
	uint64_t pl_granted_write;      /* ... and write caching */
	uint64_t pl_create_failed;      /* ... answered with an error */
	uint64_t pl_breaks;             /* breaks of them handled */
	uint64_t pl_breaks_acked;       /* acknowledgements sent */
	uint64_t breaks_unacked;        /* no id left for one: left to the
	                                 * server's break timeout */
	uint64_t pl_ack_refused;        /* acknowledgements the server
	                                 * refused (its timeout had passed) */
	uint64_t pl_ack_ms_sum;         /* break -> acknowledgement sent */
	uint64_t pl_ack_ms_max;
	uint64_t pl_locked;             /* CREATEs of a file locked through
	                                 * smbaccel: no lease asked */
	uint64_t pl_joined;             /* CREATEs that would get no lease
	                                 * (a locked file, no data access)
	                                 * joining the one with W the client
	                                 * held (lease.c) */
	uint64_t lock_conflicts;        /* FILE_LOCK_CONFLICT answered by
	                                 * smbaccel (locks.c) */
	uint64_t locks_unchecked;       /* ... it could not answer: forwarded */
	uint64_t locks_overflow;        /* opens past CO_BRL_MAX locks */
	uint64_t pl_starve_ended;       /* unacknowledged breaks whose opens
	                                 * stopped absorbing (lease.c) */
	uint64_t reserve_aged;          /* reserves given back unused at the
	                                 * hoard bound */
};
extern struct px_stats px_stats;

/* ---- runtime -------------------------------------------------------------- */

struct ev_loop;
struct px_conn;

/* Global runtime shared by the listener, connections and control. */
struct px_runtime {
	struct ev_loop *loop;
	struct pol_config *cfg;
	const char *cfg_path;
	bool stopping;
	bool force_debug;           /* -d: debug logging whatever the policy */
	uint64_t next_conn_id;
	struct px_conn *conns;      /* all live connections (conn.c) */
};
extern struct px_runtime px_rt;

static inline const struct pol_global *
px_glob(void)
{
	return pol_global(px_rt.cfg);
}

/* address formatting helper: "1.2.3.4:445" / "[::1]:445" */
const char *px_addr_str(const struct sockaddr_storage *ss, char *buf,
    size_t len);
/* Same host (address family and address; the ports may differ)? */
bool px_same_host(const struct sockaddr_storage *a,
    const struct sockaddr_storage *b);
double px_now_ms(void);
/* The wall clock, ms since 1970 (what outlives the process, or is
 * compared with another machine's). */
int64_t px_wall_ms(void);
/* A directory smbaccel keeps files in (log.c): created 0700 if missing,
 * refused unless private to root; its descriptor or -1 (logged).  check:
 * only look (smbaccel -t): nothing created, a missing one is fine, 0. */
int px_private_dir(const char *dir, const char *what, const char *otherwise,
    bool check);
/*
 * s as it may be shown in a log line, a table or a label: control
 * characters (C0, DEL, C1) written as \xNN / \u00NN, and so is any byte
 * of no well-formed UTF-8 sequence, so that a name a client chose cannot
 * start a line, drive the reader's terminal, or make the line binary.  Cut
 * to len - 1 bytes, never inside an escape.  Returns buf.
 */
const char *px_str_safe(const char *s, char *buf, size_t len);

#endif
