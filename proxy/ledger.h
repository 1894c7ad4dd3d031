/*
 * ledger.h - the per-connection ledger of DESIGN.md section 3: message ids
 * and credits (S, C, the id pool), the requests in flight, and the
 * sessions, trees and opens the relayed messages created.  ledger.c keeps
 * it from the messages it is shown and cross-checks every one; it sends
 * nothing and knows no socket.
 */
#ifndef SMBACCEL_LEDGER_H
#define SMBACCEL_LEDGER_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proxy/proxy.h"
#include "proxy/smb2/smb2.h"
#include "proxy/auth/auth.h"
#include "coalesce/coalesce.h"
#include "policy/policy.h"

/* Keys and NTLM state of a session (keyed.c). */
struct px_keyed {
	bool have_chal;
	struct px_ntlm_challenge chal;
	/* Kerberos: the key of an AP-REP that came in a MORE_PROCESSING
	 * response (SPNEGO's mechListMIC round), for the final response */
	bool have_krb_key;
	size_t krb_keylen;
	uint8_t krb_key[PX_KRB_KEY_MAX];
	int64_t krb_end;                 /* ... and its ticket's end, taken
	                                  * when the exchange succeeds */
	bool have_krb_user;              /* ... and its ticket's client */
	uint8_t krb_user[16];            /* (px_user_id_principal) */
	struct px_smb_keys keys;
	struct px_nonce_gen nonce_s2c;   /* what smbaccel sends the client */
	struct px_nonce_gen nonce_c2s;   /* what smbaccel sends the server */
	struct px_smb_ctx *ctx;          /* OpenSSL contexts for keys (made
	                                  * on first use by keyed.c) */
	int64_t tkt_end;                 /* Kerberos: when the session's
	                                  * ticket ends (Unix time; 0: NTLM,
	                                  * the session does not expire) */
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
	bool client_signs;          /* a request came signed though neither
	                             * side requires signing (go-smb2 signs
	                             * every request): counted keyed
	                             * or unkeyed once */
	bool expiring;              /* its ticket ends within
	                             * kerberos_expiry_margin: not acted on */
	bool srv_expired;           /* the server answered one of its requests
	                             * STATUS_NETWORK_SESSION_EXPIRED: not
	                             * acted on, its buffers held, until a
	                             * re-authentication succeeds */
	bool srv_reauth;            /* ... and the client's re-authentication
	                             * is on its way */
	bool reauthing;             /* a re-authentication of the established
	                             * session is on its way: not acted on
	                             * until it succeeds */
	bool srv_gone;              /* the server refused a re-authentication,
	                             * and so deleted the session (MS-SMB2
	                             * 3.3.5.5.3): never acted on again */
	bool multichannel;          /* a second connection is bound to it:
	                             * not acted on (coherence.c) */
	bool client_seals;          /* its client sent a sealed request:
	                             * smbaccel's own requests are sealed too */
	bool user_known;            /* user_id names the session's user, for
	                             * smbaccel's lease keys (lease.c): its
	                             * NTLM AUTHENTICATE's domain and user, or
	                             * its Kerberos ticket's client where the
	                             * keytab opens it (px_user_id); not for a
	                             * guest or anonymous session (keyed.c) */
	uint8_t user_id[16];
	const char *why_not;        /* why not keyed (static string) */
	const char *auth;           /* mechanism of its SESSION_SETUP
	                             * ("ntlmssp", "kerberos", ...), static */
	enum co_signs srv_signs;    /* what the server signs (coalesce.h;
	                             * learned by alter.c) */
	uint8_t preauth[64];        /* 3.1.1 preauth integrity hash */
	struct px_keyed *kx;
};

/*
 * Totals of one share, by server and share name as the clients' TREE
 * CONNECTs name them (compared without case), for `smbaccelctl stats` and
 * `metrics`.  Kept for the life of the process: at most
 * PX_SHARE_STATS_MAX of them, and past that one more, named "*", counts
 * for every further share.  Disk shares only.
 */
#define PX_SHARE_STATS_MAX 256
struct px_share_stats {
	struct px_share_stats *next;
	char server[256];
	char share[256];
	uint64_t tree_connects;
	uint64_t writes_absorbed;
	uint64_t bytes_absorbed;
	uint64_t ra_served_bytes;   /* reads served from read-ahead */
	uint64_t dc_served_bytes;   /* ... from the document cache */
	uint64_t deferred_errors;   /* acknowledged writes the server refused */
	uint64_t lost_bytes;        /* as px_stats.lost_bytes */
};

struct px_tree {
	struct px_tree *next;
	struct px_share_stats *stats;   /* NULL: not a disk share */
	uint64_t session_id;
	uint32_t tree_id;
	char server[256];
	char share[256];
	uint32_t share_flags;
	uint32_t maximal_access;
	struct pol_share policy;     /* effective settings at connect time */
};

struct px_open;
/* The elements of a LOCK request in flight (locks.c; one malloc'd block,
 * freed with its pending entry). */
struct px_brl_req;

/* A request in flight upstream (forwarded, or originated by the proxy). */
enum px_origin { PX_ORIGIN_CLIENT = 0, PX_ORIGIN_PROXY };

struct px_pending {
	uint64_t mid;
	uint16_t command;
	uint16_t charge;
	enum px_origin origin;
	bool in_compound;
	uint16_t with_cmd;          /* in_compound WRITE: the client's request
	                             * it went with (compound.c) */
	bool related;
	bool signed_rq;             /* the request carried SMB2_FLAGS_SIGNED */
	bool replay;                /* ... SMB2_FLAGS_REPLAY_OPERATION */
	uint32_t expiry_gen;        /* the ledger's expiry_gen when sent */
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
			/* a request smbaccel rewrote (create.c): the
			 * contexts it added, removed from the answer, and
			 * the OplockLevel to restore (-1: as answered) */
			uint8_t rw_nstrip;
			char rw_strip[4][4];
			int16_t rw_oplock;
			/* smbaccel's own lease or oplock asked in it
			 * (lease.c): its kind (PX_PL_*), key, state */
			uint8_t pl_kind;
			uint8_t pl_key[16];
			uint32_t pl_state;
			/* a durable reconnect, of the open with this
			 * persistent FileId */
			bool reconnect;
			uint64_t reconnect_persistent;
		} create;
		struct {
			char *path;      /* malloc'd \\server\share */
		} tcon;
		struct {
			uint8_t security_mode;
			bool binding;            /* SMB2_SESSION_FLAG_BINDING */
			uint8_t preauth[64];     /* hash including this request */
			void *auth;              /* keyed.c's, malloc'd */
			void (*auth_free)(void *); /* frees (and wipes) it */
		} sess;
		struct {
			struct px_brl_req *req; /* its elements (locks.c) */
		} lock;
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
			uint64_t open_serial;   /* ... its px_open.serial */
			/* proxy write: its share's totals (the open may
			 * be gone when the answer comes) */
			struct px_share_stats *share_stats;
			uint32_t gen;           /* read-ahead generation */
			uint32_t client_len;    /* widened read: what the */
			uint32_t client_min;    /* client asked for */
			uint64_t client_off;    /* ... and where */
			uint64_t dc_serial;     /* document-cache entry fed */
			bool doc;               /* ... by this READ */
			bool widened;
			bool prot_sign;         /* the request was signed */
			bool prot_encrypt;      /* ... or sealed */
			uint8_t *keep;          /* proxy write: its data, to
			                         * send it again if the server
			                         * has expired the session:
			                         * in kept */
			struct px_kept *kept;
		} io;
	} u;
};

/*
 * A lease or oplock smbaccel holds on an open for a client that asked for
 * none (lease.c, DESIGN.md section 6).  The client's own (oplock,
 * has_lease, lease_state of struct px_open) stays what the client was
 * answered: no oplock.  state is what smbaccel may cache, in lease bits
 * (an exclusive oplock is R|W, level II is R).
 */
enum px_pl_kind { PX_PL_NONE = 0, PX_PL_LEASE, PX_PL_OPLOCK };

struct px_plock {
	uint8_t kind;               /* enum px_pl_kind */
	uint8_t key[16];            /* PX_PL_LEASE */
	uint8_t oplock;             /* PX_PL_OPLOCK: granted level */
	uint32_t state;             /* SMB2_LEASE_READ | SMB2_LEASE_WRITE */
	bool breaking;              /* a break is being handled: no caching */
	bool starved;               /* ... but its acknowledgement has no id
	                             * yet: writes are still absorbed (W is
	                             * held until it is acknowledged) for the
	                             * ids they donate */
	bool renamed;               /* its file was renamed: the key is no
	                             * longer its old path's (lease.c) */
};

/* An open file the ledger saw created on this connection. */
struct px_open {
	uint64_t serial;            /* unique for the process's life: an
	                             * answer finds its open by it, not
	                             * by an address a new open may reuse */
	struct px_open *next;       /* l->opens (openidx.c) */
	struct px_open **pprev;     /* ... what points at it; NULL: not on it */
	struct px_open *busy_next;  /* l->busy (openidx.c) */
	struct px_open **busy_pprev; /* ... NULL: not on it */
	struct px_share_stats *share_stats;  /* its tree's, or NULL */
	struct smb2_fileid fid;
	uint64_t session_id;
	uint32_t tree_id;
	char *name;
	uint32_t name_hash;         /* px_name_hash(name): a pre-filter */
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
	/* flushed, and refused because the server had expired the session
	 * (a Kerberos ticket smbaccel cannot read ended): written again
	 * after the client re-authenticates (writebehind.c) */
	struct co_extent refused;
	uint32_t refused_ids;       /* ids sending it again takes */
	uint32_t wb_keep_ids;       /* ids the pool keeps back for this
	                             * open: refused, or writes in flight
	                             * that could be (px_emit_spend_pool) */
	struct co_ra ra;            /* read-ahead cache */
	uint64_t size_hint;         /* EndOfFile at CREATE, grown by writes */
	/* document cache (doccache.c) */
	struct co_dc_valid dcv;     /* what the CREATE answer said */
	uint64_t dc_serial;         /* the cached copy it reads, 0 = none */
	uint64_t dc_first_mid;      /* its first READ through the copy */
	bool dc_stale;              /* dcv no longer describes the file */
	bool is_dir;                /* a directory (attributes or options) */
	bool locked;                /* a LOCK was seen on this file */
	struct co_brl brl;          /* locks granted to it (locks.c) */
	/* the key FSCTL_SRV_REQUEST_RESUME_KEY gave the client for it: a
	 * copychunk names its source by it (locks.c) */
	uint8_t resume_key[SMB2_RESUME_KEY_LEN];
	bool has_resume_key;
	/* the server's Open.ChannelSequence as the client's requests set it
	 * (MS-SMB2 3.3.5.2.10; 0 for a new open, as smbd starts it):
	 * smbaccel's own requests on the open carry it, since a WRITE with
	 * an older one is failed FILE_NOT_AVAILABLE (a client raises it
	 * after a reconnect) */
	uint16_t csn;
	/* durable (granted, or reconnected), and the open a reconnect made
	 * it again (by the FileId the client named): what smbaccel lost of
	 * that one is reported on this one (coherence.c) */
	bool durable;
	bool reopened;
	uint64_t reopened_persistent;
	struct px_plock pl;         /* smbaccel's lease on the client's behalf */
	bool breaking;
	bool closed;                /* CLOSE forwarded; drop on response */
};

struct px_ledger {
	struct co_credits cr;
	struct co_pool pool;
	struct co_reserve rsv;      /* an id kept for a break acknowledgement
	                             * (DESIGN.md section 3; emit.c) */
	uint64_t window;            /* largest S - lowest outstanding id seen */
	struct px_pending **tab;    /* open-addressing table keyed by mid */
	size_t tab_cap;             /* power of two */
	size_t npending;
	size_t nasync;              /* of them, gone async (interim answer) */
	uint32_t expiry_gen;        /* + 1 each time the server is seen to
	                             * expire a session (writebehind.c) */
	struct px_session *sessions;
	struct px_tree *trees;
	struct px_open *opens;      /* openidx.c keeps these five */
	size_t nopens;
	struct px_open **fid_tab;   /* the opens by FileId: open addressing */
	size_t fid_cap;             /* power of two (0: none yet) */
	struct px_open *busy;       /* every open with write-behind data
	                             * (px_open_wb_busy), maybe a few no
	                             * longer with any: test each */
	size_t nlocked;             /* opens with locked set */
	/* negotiated */
	bool negotiated;
	bool smb1_negotiate;        /* SMB1 NEGOTIATE forwarded, no answer yet */
	uint16_t dialect;
	uint16_t client_security_mode;
	uint8_t client_guid[16];    /* of the client's NEGOTIATE request */
	uint16_t server_security_mode;
	uint32_t capabilities;
	uint32_t max_read;
	uint32_t max_write;
	uint32_t max_transact;      /* an IOCTL's, QUERY_*'s or SET_INFO's
	                             * buffers: up to this (3.3.4.1.3) */
	uint64_t server_time;       /* NEGOTIATE answer's SystemTime (FILETIME,
	                             * 0: the server gave none) */
	bool server_clock_known;    /* server_clock_ms is set (keyed.c) */
	int64_t server_clock_ms;    /* the server's clock (ms since 1970)
	                             * minus px_now_ms() */
	uint16_t cipher;            /* 3.1.1 ENCRYPTION_CAPABILITIES answer */
	uint16_t signing_alg;       /* 3.1.1 SIGNING_CAPABILITIES answer */
	bool compression;           /* 3.1.1 compression negotiated */
	uint8_t preauth_req[64];    /* hash over the last NEGOTIATE request */
	uint8_t preauth[64];        /* connection preauth hash (3.1.1) */
	uint64_t errors;
	uint64_t conn_id;           /* for log lines */
	uint64_t chain_session_id;  /* the last client request's session and */
	uint32_t chain_tree_id;     /* tree: a related one after it in a
	                             * compound has these (MS-SMB2 3.3.5.2.7.2) */
	const struct pol_config *cfg; /* for share lookups; NULL = defaults */
};

void px_ledger_init(struct px_ledger *l, uint64_t conn_id);
void px_ledger_free(struct px_ledger *l);

struct px_pending *px_pending_add(struct px_ledger *l, uint64_t mid);
struct px_pending *px_pending_find(struct px_ledger *l, uint64_t mid);
struct px_pending *px_pending_find_async(struct px_ledger *l,
    uint64_t async_id);
void px_pending_del(struct px_ledger *l, struct px_pending *p);
/* Does one of smbaccel's own WRITEs of o in flight overlap [off, off+len)?
 * (A walk of the table: for writes inside the hull of o's writes in
 * flight, wb_inflight_lo/hi, which is all a write past it needs.) */
/* May the server answer a READ of the client's message msg compressed
 * (compression negotiated, and the READ asks for it or its share has
 * CompressData, MS-SMB2 3.3.5.12)?  smbaccel cannot read such an answer. */
bool px_ledger_read_compressed(struct px_ledger *l, const uint8_t *msg,
    size_t mlen);
/* Is a client READ smbaccel widened still unanswered (its answer must be
 * cut back: it cannot be relayed opaquely)? */
bool px_ledger_widened_pending(const struct px_ledger *l);
bool px_open_writes_overlap(const struct px_ledger *l,
    const struct px_open *o, uint64_t off, uint64_t len);

/*
 * Is a client's WRITE, SET_INFO or IOCTL of file `name` of share `share`
 * in flight on l (forwarded, not yet answered), or of an open of l with
 * the on-disk id of `id` (when not NULL and it has one: another name of
 * the file, through any share)?  Every IOCTL of the file counts (the
 * ledger keeps no control code); one related to the CREATE of its
 * compound (FileId all FF) names the file by that CREATE, in flight
 * before it.  A walk of the table: for the read caches, which must not
 * fetch a file while a change of it may still land (smbd may complete a
 * later read first).  The order of l's opens is left as it is.
 */
bool px_ledger_changing(struct px_ledger *l, const char *share,
    const char *name, const struct co_dc_valid *id);

/* Requests in flight on a connection at most: servers grant 8,192
 * credits by default (Windows and smbd), a client can use no more. */
#define PX_PENDING_MAX 65536

/* Why h's message id(s) are ones smbaccel will not relay (the id of a
 * request still in flight, which the server refuses, MS-SMB2 3.3.5.2.3;
 * PX_PENDING_MAX requests in flight already), or NULL. */
const char *px_ledger_bad_ids(struct px_ledger *l,
    const struct smb2_hdr *h);
/* Does an element of the client's compound msg (n elements) carry such
 * ids?  Counted (bad_message_ids) and logged at a bounded rate: the
 * caller closes the connection (a flood of them was logged line by line
 * and recorded as pending without bound). */
bool px_ledger_frame_bad_ids(struct px_ledger *l, const uint8_t *msg,
    size_t mlen, int n);

/* Is a SESSION_SETUP of session sid on its way (not answered)? */
bool px_ledger_setup_pending(const struct px_ledger *l, uint64_t sid);
/* Has a session of l been established (a client that logged on)? */
bool px_ledger_logged_on(const struct px_ledger *l);

struct px_session *px_session_find(struct px_ledger *l, uint64_t id);
void px_session_free(struct px_session *s);
struct px_tree *px_tree_find(struct px_ledger *l, uint64_t sid, uint32_t tid);
struct px_open *px_open_find(struct px_ledger *l,
    const struct smb2_fileid *fid);
struct px_open *px_open_find_lease(struct px_ledger *l, const uint8_t *key);
/* Request h names o: a ChannelSequence as new as o's or newer becomes
 * o's (true); an older one (false) the server fails for a WRITE,
 * SET_INFO or IOCTL with STATUS_FILE_NOT_AVAILABLE (MS-SMB2 3.3.5.2.10;
 * before 3.0 the field is 0 in every request). */
bool px_open_csn_seen(struct px_open *o, const struct smb2_hdr *h);
/* x is o, or another open of o's file on this connection: with the same
 * on-disk id (through any share), or in the same share and named alike
 * (px_same_file_name). */
bool px_open_same_file(const struct px_ledger *l, const struct px_open *x,
    const struct px_open *o);
void px_open_free(struct px_open *o);

/* The session and tree of client request h, about to be recorded: a
 * related element of a compound has those of the element before it
 * (MS-SMB2 3.3.5.2.7.2), whatever its header says. */
void px_ledger_req_ids(const struct px_ledger *l, const struct smb2_hdr *h,
    uint64_t *sid, uint32_t *tid);
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

/*
 * A flush's data, kept for the WRITEs that carry it until each is answered
 * (writebehind.c wb_send): each one's pending entry points into it and
 * holds a reference.
 */
struct px_kept {
	unsigned int refs;
	uint8_t *data;          /* malloc'd */
};
/* Drop a reference to k (NULL: nothing); the last frees it. */
void px_kept_drop(struct px_kept *k);
/*
 * An SMB1 multi-protocol NEGOTIATE was forwarded: the server answers it in
 * SMB2 with MessageId 0 (MS-SMB2 3.3.5.3.1), with dialect 0x02FF (smbd: the
 * client then negotiates again) or directly 0x0202 (a server without 2.1,
 * such as impacket's), so its answer is expected as the NEGOTIATE of id 0.
 */
void px_ledger_smb1_negotiate(struct px_ledger *l);
/* Oplock/lease break notification from the server. */
void px_ledger_break(struct px_ledger *l, const struct smb2_elem *e);

bool px_open_write_access(const struct px_open *o);
bool px_open_read_access(const struct px_open *o);
/* May writes (reads) of o be cached: the client's oplock or lease, or
 * smbaccel's own on its behalf (not while a break of it is handled). */
bool px_open_write_caching(const struct px_open *o);
bool px_open_read_caching(const struct px_open *o);
/* The read gate of o's tree (read_ahead: always, or leased and o may
 * cache reads): may reads of o be served from smbaccel's data? */
bool px_open_read_gate(const struct px_tree *t, const struct px_open *o);
/* smbaccel holds write caching on o for its client (breaking or not): a
 * break of it needs an acknowledgement. */
bool px_open_proxy_write(const struct px_open *o);
/* The totals of server's share, created at first sight (NULL only if
 * memory runs out) and named with both names as px_str_safe shows them;
 * the first of them all, in the order first seen; all of them freed (at
 * exit). */
struct px_share_stats *px_share_stats_get(const char *server,
    const char *share);
const struct px_share_stats *px_share_stats_first(void);
void px_share_stats_free(void);
/* Is o still one of l's opens, the one of that serial (a pointer and its
 * serial kept in a pending entry: a freed open's address may be a new
 * open's by now)? */
struct px_open *px_open_alive(struct px_ledger *l, struct px_open *o,
    uint64_t serial);
/* co_dc_same_file / co_dc_other_file on two opens' CREATE answers (false
 * when either open is missing). */
static inline bool
px_open_same_id(const struct px_open *a, const struct px_open *b)
{
	return a != NULL && b != NULL && co_dc_same_file(&a->dcv, &b->dcv);
}

static inline bool
px_open_other_file(const struct px_open *a, const struct px_open *b)
{
	return a != NULL && b != NULL && co_dc_other_file(&a->dcv, &b->dcv);
}

/* Does o hold write-behind data: absorbed, in flight, or refused at a
 * session's expiry (writebehind.c's px_wb_busy)? */
static inline bool
px_open_wb_busy(const struct px_open *o)
{
	return o->wb.len > 0 || o->wb_inflight > 0 || o->refused.len > 0;
}

/*
 * openidx.c: l's opens, indexed.  px_opens_link puts a new open at the
 * front of l->opens and in the FileId table (-1: out of memory, not
 * linked); px_opens_unlink takes it out of both and off l->busy (it is
 * not freed); px_opens_get finds the open of fid (no two have one fid);
 * px_opens_front moves o to the front of l->opens; px_opens_free frees
 * them all.  px_open_busy_sync puts o on l->busy when px_open_wb_busy(o),
 * and takes it off when not: called after each change of what o holds
 * (writebehind.c), so that every busy open is on the list.  px_open_lock
 * sets o->locked, counted in l->nlocked.  px_opens_sane checks the
 * invariants (unit tests).
 */
int px_opens_link(struct px_ledger *l, struct px_open *o)
    __attribute__((warn_unused_result));
void px_opens_unlink(struct px_ledger *l, struct px_open *o);
struct px_open *px_opens_get(const struct px_ledger *l,
    const struct smb2_fileid *fid);
void px_opens_front(struct px_ledger *l, struct px_open *o);
void px_opens_free(struct px_ledger *l);
void px_open_busy_sync(struct px_ledger *l, struct px_open *o);
void px_open_lock(struct px_ledger *l, struct px_open *o);
bool px_opens_sane(const struct px_ledger *l);

/* The open a pending READ or WRITE of smbaccel's was for, if it is still
 * open (px_open_alive on its u.io.open and u.io.open_serial). */
static inline struct px_open *
px_pending_open(struct px_ledger *l, const struct px_pending *p)
{
	return px_open_alive(l, p->u.io.open, p->u.io.open_serial);
}

#endif
