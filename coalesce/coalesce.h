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
 *  - the signing rule: what may be altered in a session without its key;
 *  - the document cache: whole files in chunks, validators, LRU, checksums;
 *  - the byte-range locks of one open, and the MS-FSA lock check of I/O.
 */
#ifndef SMBACCEL_COALESCE_H
#define SMBACCEL_COALESCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
 * client_async: of them, those the server answered STATUS_PENDING, whose
 * final answer may never come (a CHANGE_NOTIFY waits for a change) and
 * is not counted on to bring the client credits.
 */
struct co_credits {
	uint64_t S;
	uint64_t C;
	uint64_t client_next;
	uint64_t client_outstanding;
	uint64_t client_async;
	uint64_t ask;           /* asked by absorbed requests, not yet granted
	                         * nor asked of the server (co_proxy_ask) */
	/* what answers to absorbed requests granted short of their target
	 * (co_synth_grant), for clients that do not ask for it again: */
	uint64_t owed;          /* payable on later synthesized answers */
	uint64_t owed_wait;     /* not yet: the client has not shown it saw
	                         * the shortfall and did not ask it again */
	uint64_t owed_after;    /* C after the short answer owed_wait counts:
	                         * a request with ids CO_OWED_MARGIN past it
	                         * was sent after the client read that
	                         * answer */
	uint64_t owed_next;     /* shortfalls after those, waiting for their
	                         * own proof (owed_next_after), so that new
	                         * ones do not hold back the older */
	uint64_t owed_next_after;
	uint64_t unproven;      /* of owed_wait and owed_next, paid on a last
	                         * awaited answer before their proof */
	uint64_t doubt;         /* credits of C the client may have dropped:
	                         * paid unproven to one that then asked them
	                         * again (go-smb2 drops above 128) */
	bool shorted;           /* an answer was short of its target */
	bool own_window;        /* since then a request asked more than its
	                         * charge: the client asks its shortfalls
	                         * again itself; nothing is owed, for good */
};

void co_credits_init(struct co_credits *c);
static inline uint64_t co_bank(const struct co_credits *c)
{
	return c->S - c->C;
}

/*
 * A client request of charge ids (1 without LARGE_MTU, or for 0) from mid
 * on, asking requested credits, was forwarded or absorbed: client_next and
 * client_outstanding grow.  After an answer smbaccel made was short of its
 * target, a request asking more than its charge marks the client as one
 * that asks its shortfalls again (go-smb2 adds them to its next request,
 * and keeps at most 128 credits, dropping the rest): what is owed is
 * dropped and never kept again, or the client would be paid twice.  A
 * request asking no more, with ids past owed_after (and CO_OWED_MARGIN),
 * shows the client read the short answer and did not ask again (go-smb2
 * sends its requests in id order, and the first it makes after reading
 * asks the shortfall again): owed_wait becomes payable, and owed_next,
 * the shortfalls after it, waits for its own proof.
 */
void co_client_sent(struct co_credits *c, uint64_t mid, uint64_t charge,
    uint16_t requested);
/* go-smb2 counts credits, not ids, and sends its NEGOTIATE, SESSION_SETUPs
 * and TREE_CONNECT without spending one: it may use a few ids it was not
 * yet granted.  The proof above asks this many more. */
#define CO_OWED_MARGIN 16

/*
 * How many credits a synthesized response to an absorbed request may
 * grant.  charge is the ids the request took (at least 1), requested its
 * CreditRequest.  The target is max(requested, charge, 1): what the
 * request spent is replaced, more only if asked (smbd grants charge +
 * requested - 1; a client asking no more than its charge keeps its window
 * so).  Plus what earlier answers owe (owed), unless the client manages
 * its own window; the last answer the client awaits also pays what waits
 * for its proof (owed_wait, owed_next): a client with nothing else in
 * flight sends no request that could prove it, and one asking exactly its
 * charge was left with 1 or 2 credits and could not send a 256 KiB READ
 * (charge 4).  Capped by the bank.  The credits the client will hold
 * count without doubt (credits it may have dropped).
 *
 * Returns false when the response must wait: granting what the bank holds
 * would leave the client with zero credits and nothing else in flight
 * (DESIGN.md section 3 rule 3), or, for a multi-credit request, with fewer
 * than its charge; or the last answer cannot pay all that is owed.  The
 * caller keeps the response and triggers a flush (the answers refill the
 * bank), and sends it with what the bank holds once none of smbaccel's
 * requests is in flight; the absorbed request itself must already be
 * counted in client_outstanding.
 */
bool co_synth_grant(const struct co_credits *c, uint16_t charge,
    uint16_t requested, uint16_t *grant) CO_MUSTCHECK;

/*
 * A synthesized response granted g credits to a request of that charge
 * that asked for requested (0 counts as 1): C grows by g; what the client
 * asked beyond g is remembered in ask (at most CO_ASK_MAX), for
 * co_proxy_ask; what g falls short of the target is owed (owed_wait if
 * nothing waits yet, else owed_next; at most CO_ASK_MAX in all) unless
 * own_window; what it grants beyond the target pays owed.
 */
void co_synth_granted(struct co_credits *c, uint16_t charge,
    uint16_t requested, uint16_t g);
#define CO_ASK_MAX 8192
#define CO_ASK_STEP 512
/*
 * The CreditRequest of a proxy request: 1 plus what absorbed requests asked
 * and were not given (at most CO_ASK_STEP a request).  smbd grants a
 * request its charge plus CreditRequest - 1, so with 1 the server's window
 * only replaces the ids the proxy spends; a client that absorbed requests
 * ask more of (its window still growing) gets it through the bank, as it
 * would directly.  The server caps its grants (smbd at 8192 in all).
 */
uint16_t co_proxy_ask(struct co_credits *c);

/*
 * A compound that carried proxy requests and one client request (a CLOSE
 * sent with its flush): the server may put the grant of the whole compound
 * on the client's answer (smbd: every answer but the last grants 0).
 * Returns how much of g, the grant on the client's answer (already
 * counted in C), goes back to the bank: what its own requests would have
 * been granted alone and their answers did not bring (due), never more
 * than g, and never so much that the client is left with no credit while
 * nothing else of its is outstanding (the zero-credit rule of DESIGN.md
 * section 3).  The caller subtracts it from C and from the answer.
 */
uint16_t co_compound_split(const struct co_credits *c, uint16_t g,
    uint64_t due);

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
/*
 * Put [off, off + len) under x: older bytes than x's (a refused write to
 * be sent again), kept where x has none.  Only when the two overlap or
 * touch (their union is one run); 1 when they do not (x unchanged), -1 on
 * allocation failure.  first_ms becomes now_ms if that is earlier.
 */
int co_extent_merge_under(struct co_extent *x, uint64_t off, const uint8_t *p,
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
	CO_FLUSH_EXPIRY,       /* the session's Kerberos ticket about to end */
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
 * Other errors: pass ok=false; the cache is dropped.  A short answer or
 * END_OF_FILE is taken for the file's end (at off + got): the READ must
 * have gone with MinimumCount 0, for which the server answers so only
 * there (MS-SMB2 3.3.5.12; a client's minimum is applied to what the
 * cache answers, co_ra_serve).
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

/* ---- byte-range locks of one open (proxy/locks.c) ------------------------------ */

/*
 * The ranges one open holds locked, as granted by the server: kept so that
 * smbaccel can check I/O the server would not check (an open holding
 * smbaccel's lease under Samba's strict locking = auto; proxy/locks.c).  At
 * most CO_BRL_MAX ranges are kept; the others are only counted, exclusive
 * and shared (lost_x, lost_s: upper bounds once an unlock of one of them,
 * whose kind is unknown, has arrived), and whatever they could refuse is
 * refused wherever they lie (co_brl_check).
 */
#define CO_BRL_MAX 64

struct co_brl_range {
	uint64_t off;
	uint64_t len;
	bool excl;
};

struct co_brl {
	struct co_brl_range *r;     /* malloc'd, n used of cap */
	uint16_t n, cap;
	uint32_t lost;              /* granted, not kept */
	uint32_t lost_x, lost_s;    /* ... exclusive, shared (at most) */
};

enum co_brl_kept {
	CO_BRL_KEPT = 0,
	CO_BRL_LOST,                /* past CO_BRL_MAX: counted */
	CO_BRL_NOMEM,               /* no memory: counted, as LOST */
};

/* I/O judged against one open's locks. */
enum co_brl_verdict {
	CO_BRL_OK = 0,
	CO_BRL_LOCKED,              /* a kept range refuses it */
	CO_BRL_UNKNOWN,             /* a range not kept might */
};

void co_brl_free(struct co_brl *b);
/* The open was granted [off, +len), exclusive or shared. */
enum co_brl_kept co_brl_lock(struct co_brl *b, uint64_t off, uint64_t len,
    bool excl);
/* The open was granted a lock it does not know (a request whose elements
 * were not kept): counted as lost of either kind. */
void co_brl_lock_unknown(struct co_brl *b);
/* The server unlocked [off, +len) of the open: the exact range is removed
 * (an exclusive one first, MS-FSA 2.1.5.9), 1; else one lost lock, 0; -1
 * neither was there (a lock smbaccel did not see granted). */
int co_brl_unlock(struct co_brl *b, uint64_t off, uint64_t len);
/*
 * I/O [off, +len) (len >= 1) of an open against b, the locks of `own` ?
 * that open : another open of the same file (MS-FSA 2.1.4.10 with the
 * read/write checks of 2.1.5.2 and 2.1.5.3): another open's exclusive lock
 * refuses reads and writes, a shared lock refuses writes of every open,
 * the owner's included; the owner's exclusive lock permits its own I/O.
 * A lock of length 0 at offset 0 overlaps nothing, one at offset n only
 * I/O that contains both n - 1 and n.
 */
enum co_brl_verdict co_brl_check(const struct co_brl *b, bool own,
    uint64_t off, uint64_t len, bool write);

/* ---- document cache (DESIGN.md section 5a) ------------------------------------ */

/*
 * Whole files (up to read_cache_file_max) fetched for random readers and
 * kept after CLOSE, keyed by server, share and path.  A file is split in
 * chunks of CO_DC_CHUNK bytes (one credit's worth, so a chunk is what one
 * donated id pays for); each chunk is absent, in flight, in memory, or
 * only in the on-disk store (its checksum known).  Entries are found by
 * key (at CREATE) and by serial (everywhere else: an open or a fetch in
 * flight keeps the serial, never a pointer, so a dropped entry simply is
 * not found any more).  Memory (data and bookkeeping) is bounded by the
 * cache's limit: the least recently used entries give their memory back
 * (an entry the store holds keeps its index, chunks turn DISK; any other
 * is dropped).  Nothing here does I/O; proxy/docstore.c writes and reads
 * the store, proxy/doccache.c drives the cache from the wire.
 */
#define CO_DC_CHUNK (64 * 1024)

/* What the CREATE answer said of the file; the cache is valid only for an
 * open whose answer says the same (close-to-open consistency). */
struct co_dc_valid {
	uint64_t creation;          /* CreationTime */
	uint64_t last_write;        /* LastWriteTime */
	uint64_t change;            /* ChangeTime */
	uint64_t eof;               /* EndOfFile */
	bool has_disk_id;           /* SMB2_CREATE_QUERY_ON_DISK_ID answered */
	uint8_t disk_id[32];        /* DiskFileId, VolumeId, Reserved */
};

/* Do two CREATE answers both carry the server's on-disk id, and the same
 * one (one file, through any name, link or share)?  co_dc_other_file:
 * both carry one and they differ (two files, however alike their names:
 * a case-sensitive share, a share whose path depends on the user).
 * Without an id on either side, neither is proven. */
static inline bool
co_dc_same_file(const struct co_dc_valid *a, const struct co_dc_valid *b)
{
	return a->has_disk_id && b->has_disk_id &&
	    memcmp(a->disk_id, b->disk_id, sizeof(a->disk_id)) == 0;
}

static inline bool
co_dc_other_file(const struct co_dc_valid *a, const struct co_dc_valid *b)
{
	return a->has_disk_id && b->has_disk_id &&
	    memcmp(a->disk_id, b->disk_id, sizeof(a->disk_id)) != 0;
}

/* Why a cached copy does not match an open (the first field that
 * differs, in this order); CO_DC_UNPROVEN is the glue's: the fields are
 * the same, but the open's answer does not show that no other handle of
 * the file was open (DESIGN.md section 5a), so they prove nothing. */
enum co_dc_cause {
	CO_DC_SAME = 0,
	CO_DC_CREATION,
	CO_DC_WRITE,
	CO_DC_CHANGE,
	CO_DC_SIZE,
	CO_DC_FILE_ID,
	CO_DC_UNPROVEN,
	CO_DC_NCAUSES
};
/* CO_DC_SAME only with the same on-disk id on both sides (a copy or an
 * open without one proves no file). */
enum co_dc_cause co_dc_compare(const struct co_dc_valid *cached,
    const struct co_dc_valid *now);
const char *co_dc_cause_name(enum co_dc_cause c);

enum co_dc_state {
	CO_DC_ABSENT = 0,
	CO_DC_INFLIGHT,             /* a READ for it is on its way */
	CO_DC_MEM,                  /* data here */
	CO_DC_DISK,                 /* only in the store; sum known */
};

struct co_dc_entry {
	struct co_dc_entry *knext;  /* key hash chain */
	struct co_dc_entry *snext;  /* serial hash chain */
	struct co_dc_entry *inext;  /* on-disk id hash chain (with an id) */
	struct co_dc_entry *lprev;  /* LRU list, head = most recent */
	struct co_dc_entry *lnext;
	char *key;
	uint64_t khash;             /* co_sum64 of the key: the store's name */
	uint64_t serial;            /* never reused */
	struct co_dc_valid v;
	uint32_t nchunks;
	uint32_t present;           /* chunks MEM or DISK */
	uint32_t inflight;
	uint32_t cursor;            /* where the next fetch plan starts */
	uint8_t *state;             /* per chunk, enum co_dc_state */
	uint8_t **data;             /* per chunk, MEM only */
	uint64_t *sum;              /* per chunk, MEM and DISK */
	uint64_t mem;               /* bytes charged to the cache */
	uint64_t stamp;             /* when last used (caller's clock) */
	bool on_disk;               /* the store holds all of it */
	bool persisting;            /* the store is writing it */
	bool persist_failed;        /* ... and gave up */
};

struct co_dcache {
	struct co_dc_entry **kb;    /* buckets by key hash */
	struct co_dc_entry **sb;    /* buckets by serial */
	struct co_dc_entry **ib;    /* buckets by on-disk id */
	size_t nb;                  /* power of two */
	struct co_dc_entry *lru_head, *lru_tail;
	size_t nentries;
	uint64_t mem, limit;
	uint64_t next_serial;
	uint64_t evicted;           /* entries dropped for memory */
	uint64_t released;          /* chunks turned back to DISK for memory */
	/* an entry is about to be freed: the store forgets a file it was
	 * writing for it, and (not evicted: dropped as stale) its copy */
	void (*on_drop)(void *arg, struct co_dc_entry *e, bool evicted);
	void *on_drop_arg;
};

/* 64-bit checksum of a chunk or a store header (not cryptographic: it
 * catches torn and corrupted store files). */
uint64_t co_sum64(const void *p, size_t n);

int co_dc_init(struct co_dcache *dc, uint64_t limit) CO_MUSTCHECK;
void co_dc_free(struct co_dcache *dc);
/* A new limit; entries are evicted down to it. */
void co_dc_set_limit(struct co_dcache *dc, uint64_t limit);
struct co_dc_entry *co_dc_lookup(struct co_dcache *dc, const char *key);
struct co_dc_entry *co_dc_find(struct co_dcache *dc, uint64_t serial);
/* The entries whose copy has on-disk id v's (v with an id): the first,
 * and the one after e; NULL at the end.  A walk that frees e takes the
 * next one first. */
struct co_dc_entry *co_dc_first_id(struct co_dcache *dc,
    const struct co_dc_valid *v);
struct co_dc_entry *co_dc_next_id(struct co_dc_entry *e,
    const struct co_dc_valid *v);
/*
 * A new, empty entry for key (there must be none) describing a file of
 * v->eof bytes; NULL if the file is empty, its bookkeeping does not fit
 * the limit, or on OOM.  disk: every chunk is DISK with sums[i] (an entry
 * read back from the store).
 */
struct co_dc_entry *co_dc_create(struct co_dcache *dc, const char *key,
    const struct co_dc_valid *v, const uint64_t *sums);
void co_dc_drop(struct co_dcache *dc, struct co_dc_entry *e);
/* Drop every entry whose key starts with prefix (a directory's entries);
 * returns how many. */
size_t co_dc_drop_prefix(struct co_dcache *dc, const char *prefix);
/* e is used at time now: most recently used. */
void co_dc_touch(struct co_dcache *dc, struct co_dc_entry *e, uint64_t now);
/* Bytes (memory and in flight) of the entries used at or after since:
 * what readers hold now, which a new entry would have to evict. */
uint64_t co_dc_recent(const struct co_dcache *dc, uint64_t since);
uint32_t co_dc_chunk_len(const struct co_dc_entry *e, uint32_t idx);
bool co_dc_complete(const struct co_dc_entry *e);

enum co_dc_look {
	CO_DC_MISS = 0,             /* some chunk absent */
	CO_DC_HIT,                  /* every byte in memory (or past EOF) */
	CO_DC_WAIT,                 /* nothing absent, some in flight */
	CO_DC_LOAD,                 /* chunk *idx must be read from the store */
};
enum co_dc_look co_dc_look(const struct co_dc_entry *e, uint64_t off,
    uint32_t len, uint32_t *idx);
/*
 * Answer a HIT the way the server would (MS-SMB2 3.3.5.12): up to len
 * bytes into buf, *status SUCCESS, or END_OF_FILE at or past the end or
 * below minimum (then *n is 0).
 */
void co_dc_copy(const struct co_dc_entry *e, uint64_t off, uint32_t len,
    uint32_t minimum, uint8_t *buf, uint32_t *n, uint32_t *status);
/* The next run of at most max absent chunks to fetch, from the cursor on
 * (wrapping); 0 when none.  Does not mark them. */
uint32_t co_dc_plan(const struct co_dc_entry *e, uint32_t max,
    uint32_t *first);
/* Could n more bytes be charged to e (evicting others if needed)? */
bool co_dc_room(struct co_dcache *dc, const struct co_dc_entry *e,
    uint64_t n);
/* Chunks [first, first+n) are being fetched (absent ones turn INFLIGHT);
 * the cursor moves past them. */
void co_dc_mark(struct co_dc_entry *e, uint32_t first, uint32_t n);
/*
 * A READ of [off, off+asked) (off chunk aligned) came back with got bytes:
 * every chunk it covers whole (or up to EOF) that is not yet in memory is
 * stored, others of the range turn ABSENT again.  Returns the number
 * stored, or -1 when the answer is shorter than the file the entry
 * describes (the file changed: the caller drops the entry).  *first and
 * *n get the range of chunks stored (for the store).
 */
int co_dc_arrive(struct co_dcache *dc, struct co_dc_entry *e, uint64_t off,
    uint32_t asked, const uint8_t *data, uint32_t got, uint32_t *first,
    uint32_t *n);
/* A fetch of [off, off+asked) failed: its in-flight chunks turn ABSENT. */
void co_dc_fail(struct co_dc_entry *e, uint64_t off, uint32_t asked);
/* Does data (read back from the store) carry chunk idx's checksum? */
bool co_dc_verify(const struct co_dc_entry *e, uint32_t idx,
    const uint8_t *data, uint32_t len);
/* Chunk idx (DISK) read back and verified: into memory, giving back (to
 * DISK) e's own chunks outside [keep_lo, keep_hi] if memory is short.  -1
 * when no memory can be had (it stays DISK). */
int co_dc_fill(struct co_dcache *dc, struct co_dc_entry *e, uint32_t idx,
    const uint8_t *data, uint32_t keep_lo, uint32_t keep_hi) CO_MUSTCHECK;
/* The store lost its copy: DISK chunks turn ABSENT. */
void co_dc_forget_disk(struct co_dcache *dc, struct co_dc_entry *e);

#endif
