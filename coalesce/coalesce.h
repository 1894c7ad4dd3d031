/*
 * coalesce.h - pure decisions for write-behind and read-ahead.
 *
 * Nothing here touches sockets or the event loop.  proxy/ feeds decoded
 * facts in and acts on what comes out, so every rule below can be driven
 * directly by CUnit.
 *
 * The pieces:
 *  - the credit ledger arithmetic of DESIGN.md section 3: the id pool of
 *    donated message ids and the credit bank (S - C);
 *  - the per-open write extent: one contiguous run of absorbed bytes;
 *  - the read-ahead chunk cache;
 *  - the signing rule: what may be altered in a session without its key.
 */
#ifndef SMBACCEL_COALESCE_H
#define SMBACCEL_COALESCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CO_MUSTCHECK __attribute__((warn_unused_result))

/* ---- id pool ---------------------------------------------------------- */

/*
 * Donated message ids, kept as sorted, disjoint, non-adjacent runs
 * [lo, lo + n).  Clients number requests sequentially, so in practice the
 * pool is one or a few runs.  The pool is bounded by CO_POOL_MAX_RUNS; a
 * caller that cannot add (pool full) must flush first.
 */
#define CO_POOL_MAX_RUNS 64

struct co_run {
	uint64_t lo;
	uint64_t n;
};

struct co_pool {
	struct co_run runs[CO_POOL_MAX_RUNS];
	unsigned int nruns;
	uint64_t count;         /* total ids held */
	uint64_t oldest;        /* lowest id held (valid when count > 0) */
};

void co_pool_init(struct co_pool *p);
/* Add ids [lo, lo+n).  -1 if they overlap ids already held or the run table
 * is full. */
int co_pool_add(struct co_pool *p, uint64_t lo, uint64_t n) CO_MUSTCHECK;
/* Take up to max contiguous ids from the lowest run; returns the count taken
 * (0 if empty) and the first id in *lo. */
uint64_t co_pool_take_run(struct co_pool *p, uint64_t max, uint64_t *lo);
/* Length of the lowest run (what take_run could hand out at most). */
uint64_t co_pool_first_run(const struct co_pool *p);

/* ---- credit bank -------------------------------------------------------- */

/*
 * S: one past the highest id the server accepts (1 + server grants).
 * C: one past the highest id the client may use (1 + grants the client saw).
 * Invariant C <= S; S - C is the bank.
 * client_next: one past the highest id the client has used.
 * client_outstanding: client requests awaiting a response (forwarded or
 * absorbed-but-unanswered).
 */
struct co_credits {
	uint64_t S;
	uint64_t C;
	uint64_t client_next;
	uint64_t client_outstanding;
};

void co_credits_init(struct co_credits *c);
static inline uint64_t co_bank(const struct co_credits *c)
{
	return c->S - c->C;
}

/*
 * How many credits a synthesized response to an absorbed request may
 * grant.  requested is the request's CreditRequest, charge its charge.
 * Grants what the client asked for (at least 1), capped by the bank.
 *
 * Returns false when the response must wait: granting what the bank holds
 * would leave the client with zero credits and nothing else in flight
 * (DESIGN.md section 3 rule 3).  The caller keeps the response and triggers
 * a flush; the absorbed request itself must already be counted in
 * client_outstanding.
 */
bool co_synth_grant(const struct co_credits *c, uint16_t requested,
    uint16_t *grant) CO_MUSTCHECK;

/*
 * Hoard bound: the pool must be spent before its oldest id falls a quarter
 * of the server's window behind, and never holds more than 512 ids
 * (DESIGN.md section 3 rule 4).  window is the server's credit window
 * (S - oldest outstanding id as seen by the proxy, or the largest grant
 * total seen).
 */
bool co_pool_over_bound(const struct co_pool *p, uint64_t next_id,
    uint64_t window);
#define CO_POOL_HOARD_MAX 512

/* ---- acknowledgement reserve ------------------------------------------------ */

/*
 * While smbaccel holds write caching on a connection on a client's behalf
 * (a lease with W it asked for itself, DESIGN.md section 6), a break of it
 * must be acknowledged, and the acknowledgement needs a message id.  One
 * donated id is kept out of the pool for it.  Order of the pool's ids:
 * buffered data first (a flush is always funded), then the reserve, then
 * other proxy requests, then ECHOs.  The reserve is the pool's oldest id
 * when taken, so that it splits no run of ids (a proxy WRITE's charge is
 * one contiguous run): the id kept back always lies below the pool.  It
 * is refreshed with a newer id as they arrive, and let go rather than age
 * past the hoard bound (it would pin the server's window like any unspent
 * id); an id let go is spent at once on its own (an ECHO), not pooled,
 * where it would cut the next flush into pieces.
 */
struct co_reserve {
	bool held;
	uint64_t id;
};

enum co_rsv_act {
	CO_RSV_KEEP = 0,        /* nothing to do */
	CO_RSV_TAKE,            /* take the pool's oldest id */
	CO_RSV_REFRESH,         /* take the pool's oldest, let the old go */
	CO_RSV_RELEASE,         /* let the reserve go */
};

void co_reserve_init(struct co_reserve *r);
/*
 * What the reserve should do now.  need: a reserve is wanted (write
 * caching held, or a break waiting for its acknowledgement); spare: pool
 * ids beyond what buffered data needs; next_id, window: as for
 * co_pool_over_bound.  A reserve is taken only from spare ids, refreshed
 * once it is half the hoard bound old and the pool holds a newer id, and
 * let go when no longer needed or as old as the bound.
 */
enum co_rsv_act co_reserve_decide(const struct co_reserve *r,
    const struct co_pool *p, bool need, uint64_t spare, uint64_t next_id,
    uint64_t window);
/* Carry out co_reserve_decide's answer on r and p; returns it.  After
 * REFRESH and RELEASE, *gone is the id let go: the caller spends it. */
enum co_rsv_act co_reserve_tend(struct co_reserve *r, struct co_pool *p,
    bool need, uint64_t spare, uint64_t next_id, uint64_t window,
    uint64_t *gone);

/* ---- write extent ----------------------------------------------------------- */

/*
 * One contiguous run of absorbed bytes for an open: [off, off + len).
 * Only appends that start exactly at off + len are absorbed into it;
 * anything else is a flush trigger (DESIGN.md section 4).
 */
struct co_extent {
	uint64_t off;
	size_t len;
	size_t cap;
	uint8_t *data;
	double first_ms;      /* when the first byte was absorbed */
	double last_ms;       /* when the last write was absorbed */
};

void co_extent_init(struct co_extent *x);
void co_extent_free(struct co_extent *x);
/* True if a write [off, off+len) may be appended without a flush. */
bool co_extent_fits(const struct co_extent *x, uint64_t off, size_t len,
    size_t limit);
/* Append (co_extent_fits must hold).  -1 on allocation failure. */
int co_extent_append(struct co_extent *x, uint64_t off, const uint8_t *p,
    size_t len, double now_ms) CO_MUSTCHECK;
/* Hand the buffer to the caller (who frees it) and reset the extent. */
uint8_t *co_extent_take(struct co_extent *x, uint64_t *off, size_t *len);

/*
 * Why a flush happens; counted in the stats (flush causes).
 */
enum co_flush_cause {
	CO_FLUSH_FULL = 0,     /* coalesce_size reached */
	CO_FLUSH_NONCONTIG,    /* write not contiguous with the buffer */
	CO_FLUSH_POOL,         /* id-pool bound */
	CO_FLUSH_IDLE,         /* flush_idle timer */
	CO_FLUSH_AGE,          /* flush_max_age */
	CO_FLUSH_MEMORY,       /* memory budget */
	CO_FLUSH_REQUEST,      /* another request on the open */
	CO_FLUSH_OBSERVE,      /* request on the connection that could observe it */
	CO_FLUSH_PEER,         /* request on another connection */
	CO_FLUSH_BREAK,        /* oplock/lease break */
	CO_FLUSH_CREDITS,      /* zero-credit rule: response waiting */
	CO_FLUSH_DISCONNECT,   /* client disconnect */
	CO_FLUSH_SHUTDOWN,     /* daemon shutdown */
	CO_FLUSH_OPAQUE,       /* switch to opaque relay */
	CO_FLUSH_NCAUSES
};
const char *co_flush_cause_name(enum co_flush_cause c);

/* ---- absorb gate --------------------------------------------------------- */

enum co_gate { CO_GATE_OFF = 0, CO_GATE_LEASED, CO_GATE_ALWAYS };

/* What the ledger knows of an open, as far as the write gate needs it. */
struct co_open_facts {
	bool write_access;      /* asked FILE_WRITE_DATA / GENERIC_WRITE / ALL, or
	                         * MAXIMUM_ALLOWED with write in maximal access */
	bool write_through;     /* created with FILE_WRITE_THROUGH */
	bool write_caching;     /* holds exclusive/batch oplock or lease with W */
	bool read_caching;      /* level II/exclusive/batch or lease with R */
	bool locked;            /* a LOCK was seen on it */
	bool failed;            /* a deferred error is pending */
	bool breaking;          /* a break is in progress */
};

struct co_write_facts {
	uint64_t offset;
	uint32_t length;
	uint32_t flags;         /* SMB2_WRITEFLAG_* */
	uint32_t channel;
	bool standalone;        /* not part of a compound */
	bool signed_or_sealed;  /* request signed, or session needs signing or
	                         * encryption, without a key */
};

/*
 * Writes ending beyond 1 TiB are forwarded: near the largest file of
 * common file systems (ext4 with 4 KiB blocks: 16 TiB) the server answers
 * EFBIG/INVALID_PARAMETER, and such a write must not be acknowledged
 * early (smbtorture smb2.rw.invalid writes at 2^63 and just below 16 TiB).
 */
#define CO_ABSORB_END_MAX (UINT64_C(1) << 40)

enum co_absorb {
	CO_ABSORB = 0,
	CO_FWD_GATE,            /* policy gate says no */
	CO_FWD_FLAGS,           /* WRITE_THROUGH / UNBUFFERED */
	CO_FWD_OPEN,            /* open not eligible */
	CO_FWD_SHAPE,           /* request shape (size, channel, append, compound) */
	CO_FWD_SIGNED,          /* signed or sealed */
};
/* The absorb decision for one WRITE; see DESIGN.md section 4. */
enum co_absorb co_write_decide(enum co_gate gate,
    const struct co_open_facts *o, const struct co_write_facts *w,
    size_t coalesce_size);
const char *co_absorb_name(enum co_absorb a);

/* ---- read-ahead cache (DESIGN.md section 5) -------------------------------- */

/*
 * Per open: chunks of file data fetched ahead of a sequential reader, in
 * offset order, each either in flight or arrived.  A chunk that arrived
 * short (or with END_OF_FILE) tells where the file ends, so later reads
 * are answered exactly as the server would (MS-SMB2 3.3.5.12): offset at
 * or past EOF, or fewer bytes than MinimumCount, is STATUS_END_OF_FILE.
 */
struct co_chunk {
	struct co_chunk *next;
	uint64_t off;
	uint32_t len;          /* bytes asked for */
	uint32_t got;          /* bytes that arrived */
	bool arrived;
	uint8_t *data;         /* got bytes, once arrived */
};

struct co_ra {
	struct co_chunk *chunks;
	uint64_t next_expected;  /* end of the client's last read */
	uint64_t fetch_end;      /* end of what is cached or in flight */
	bool seq;                /* last read continued the previous one */
	uint32_t nreads;         /* client reads seen on the open */
	bool eof_known;
	uint64_t eof;
	uint64_t window;         /* how far ahead to fetch */
	uint64_t bytes;          /* memory held: sum of chunk lengths */
	uint32_t gen;            /* bumped by every invalidation */
};

enum co_ra_look {
	CO_RA_MISS = 0,          /* not cached: forward */
	CO_RA_HIT,               /* all bytes here (or EOF known): answer */
	CO_RA_WAIT,              /* covered by a chunk still in flight */
};

void co_ra_init(struct co_ra *ra);
/* Drop everything (data and in-flight chunks); responses to chunks in
 * flight will not find them (their generation is gone). */
void co_ra_invalidate(struct co_ra *ra);
/* Where would a client read [off, off+len) be answered from? */
enum co_ra_look co_ra_lookup(const struct co_ra *ra, uint64_t off,
    uint32_t len);
/*
 * Answer a HIT the way the server would: copies up to len bytes into buf
 * (cap >= len), sets *n and *status (SUCCESS or END_OF_FILE given
 * minimum).  Advances next_expected and frees chunks wholly consumed.
 */
void co_ra_serve(struct co_ra *ra, uint64_t off, uint32_t len,
    uint32_t minimum, uint8_t *buf, uint32_t *n, uint32_t *status);
/* Record a client read that was forwarded (sequential detection). */
void co_ra_note_read(struct co_ra *ra, uint64_t off, uint32_t len);
/*
 * Next chunk to fetch, or 0: at most max_len bytes (ids, MaxRead, policy),
 * only while less than window bytes are ahead of the reader, the file end
 * is not known, and the memory budget mem_left allows.
 */
uint32_t co_ra_plan(const struct co_ra *ra, uint32_t max_len,
    uint64_t mem_left, uint64_t *off);
/* A chunk was requested: returns it (NULL on OOM). */
struct co_chunk *co_ra_add(struct co_ra *ra, uint64_t off, uint32_t len);
/*
 * A fetch answered: data (got bytes; 0 with END_OF_FILE) for the chunk at
 * off of generation gen.  Returns false when the chunk is gone (stale).
 * Other errors: pass ok=false; the cache is dropped.
 */
bool co_ra_arrive(struct co_ra *ra, uint32_t gen, uint64_t off, bool ok,
    const uint8_t *data, uint32_t got);
/* Grow the window after a chunk was consumed (Linux-style doubling). */
void co_ra_grow(struct co_ra *ra, uint64_t max_window);

/* ---- what may be altered in a session without its key (any server) --------- */

/*
 * MS-SMB2 requires a server to sign only some answers (the final
 * SESSION_SETUP, TREE_CONNECT at 3.1.1, VALIDATE_NEGOTIATE, and every
 * answer of a session that requires signing), but allows it to sign any:
 * impacket's server and some NAS firmware sign every answer once a session
 * key exists.  An answer to a request smbaccel rewrote (a widened READ) is
 * then signed over what the server sent, and smbaccel, holding no key,
 * can neither cut it back nor re-sign it.  So, per session, smbaccel
 * learns from the answers to ordinary unsigned requests (TREE_CONNECT
 * below 3.1.1, the first CREATE, ...) whether the server signs answers it
 * need not sign, and alters nothing until it knows.
 */
enum co_signs {
	CO_SIGNS_UNKNOWN = 0,   /* no ordinary answer seen yet */
	CO_SIGNS_REQUIRED,      /* the server signs only what it must */
	CO_SIGNS_ALL,           /* it signs answers it need not sign */
};
const char *co_signs_name(enum co_signs s);

/* One answer of an unkeyed session, as far as the rule needs it. */
struct co_sign_facts {
	uint16_t dialect;
	uint16_t command;
	uint32_t status;        /* of the answer */
	bool interim;           /* an interim (STATUS_PENDING) answer */
	bool req_signed;        /* the request carried SMB2_FLAGS_SIGNED */
	bool rsp_signed;        /* the answer does */
	bool sealed;            /* the answer arrived encrypted */
};

/*
 * What the answer tells of the server: CO_SIGNS_ALL when a successful final
 * answer to an ordinary unsigned request is signed (at any time: a later
 * signed answer overrides an earlier unsigned one), CO_SIGNS_REQUIRED when
 * such an answer is unsigned and nothing was known; otherwise cur.  Answers
 * MS-SMB2 requires signed, answers to signed requests, interim and failed
 * answers, and sealed ones say nothing.
 */
enum co_signs co_signs_observe(enum co_signs cur, const struct co_sign_facts *f);

enum co_alter {
	CO_ALTER_SYNTH = 0,     /* answer a request itself (an absorbed WRITE,
	                         * a READ served from cache); the client gets an
	                         * unsigned answer */
	CO_ALTER_REWRITE,       /* change a request whose answer comes back and
	                         * must be changed too (a widened READ, a
	                         * rewritten CREATE) */
};

/*
 * May smbaccel do `what` in a session it holds no key for (a keyed session
 * may do both: it signs what it changes)?  Nothing until the session's
 * server is known; a rewrite only where the server signs only what it
 * must and is not remembered (server_signs_all) as one that signed an
 * answer to an altered request.  Whether the client accepts an unsigned
 * answer at all (it does not require signing) is the caller's check.
 */
bool co_may_alter(enum co_alter what, enum co_signs session,
    bool server_signs_all);

#endif
