/*
 * smb2.h - NetBIOS framing, the bounds-checked wire reader, and SMB2
 * header/command decoders and encoders.
 *
 * Everything here is pure: it reads and writes byte buffers and never
 * touches sockets.  Every length and offset taken from the wire is checked
 * where it is decoded; a decoder either fills its output completely and
 * returns 0, or returns -1 and leaves the caller to treat the message as
 * not understood.  Offsets inside a command body are relative to the start
 * of that element's 64-byte SMB2 header (MS-SMB2 2.2).
 */
#ifndef SMBACCEL_SMB2_H
#define SMBACCEL_SMB2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PX_MUSTCHECK __attribute__((warn_unused_result))

/* ---- NetBIOS session service framing (RFC 1002, MS-SMB2 2.1) ---------- */

#define PX_NBSS_HDR      4
#define PX_NBSS_MAX      0xFFFFFFu /* 24-bit length field */
#define PX_NBSS_MESSAGE  0x00
#define PX_NBSS_KEEPALIVE 0x85

enum px_frame_rc {
	PX_FRAME_NEED = 0,  /* not enough bytes yet */
	PX_FRAME_OK = 1,    /* *frame_len = 4 + payload length */
	PX_FRAME_BAD = -1,  /* not a direct-TCP SMB frame, or over max_len */
};

/*
 * Look at the start of buf.  On PX_FRAME_OK, *frame_len is the length of
 * the whole frame including its 4-byte header, and *type the NBSS type byte
 * (0x00 message, 0x85 keep-alive).  A payload longer than max_len, or a type
 * other than 0x00/0x85, is PX_FRAME_BAD.
 */
enum px_frame_rc px_frame_parse(const uint8_t *buf, size_t len,
    size_t max_len, size_t *frame_len, uint8_t *type);
/* Write a 4-byte NBSS message header for a payload of len bytes. */
void px_frame_put_hdr(uint8_t *dst, size_t len);

enum px_magic {
	PX_MAGIC_UNKNOWN = 0,
	PX_MAGIC_SMB1,        /* 0xFF 'SMB' */
	PX_MAGIC_SMB2,        /* 0xFE 'SMB' */
	PX_MAGIC_TRANSFORM,   /* 0xFD 'SMB' (encrypted) */
	PX_MAGIC_COMPRESSED,  /* 0xFC 'SMB' */
};
enum px_magic px_classify(const uint8_t *msg, size_t len);
const char *px_magic_name(enum px_magic m);
/* "2.0.2" .. "3.1.1", "2.???" (the wildcard), "-" (none yet). */
const char *px_dialect_name(uint16_t d);

/* ---- bounds-checked reader ------------------------------------------- */

/*
 * Sticky-error reader: once any read runs past the end, err is set, every
 * later read returns 0 and the caller tests err once at the end.
 */
struct px_rd {
	const uint8_t *p;
	size_t len;
	size_t off;
	bool err;
};

void px_rd_init(struct px_rd *r, const uint8_t *p, size_t len);
uint8_t px_rd_u8(struct px_rd *r);
uint16_t px_rd_u16(struct px_rd *r);   /* little endian */
uint32_t px_rd_u32(struct px_rd *r);
uint64_t px_rd_u64(struct px_rd *r);
void px_rd_bytes(struct px_rd *r, void *dst, size_t n);
void px_rd_skip(struct px_rd *r, size_t n);
void px_rd_seek(struct px_rd *r, size_t off); /* err if off > len */
/* Return a pointer to n bytes at the cursor and advance, or NULL + err. */
const uint8_t *px_rd_ptr(struct px_rd *r, size_t n);

/* Little-endian stores used by the encoders. */
void px_put_u16(uint8_t *p, uint16_t v);
void px_put_u32(uint8_t *p, uint32_t v);
void px_put_u64(uint8_t *p, uint64_t v);
uint16_t px_get_u16(const uint8_t *p);
uint32_t px_get_u32(const uint8_t *p);
uint64_t px_get_u64(const uint8_t *p);

/* ---- SMB2 header (MS-SMB2 2.2.1) --------------------------------------- */

#define SMB2_HDR_LEN 64

enum smb2_cmd {
	SMB2_NEGOTIATE = 0x00,
	SMB2_SESSION_SETUP = 0x01,
	SMB2_LOGOFF = 0x02,
	SMB2_TREE_CONNECT = 0x03,
	SMB2_TREE_DISCONNECT = 0x04,
	SMB2_CREATE = 0x05,
	SMB2_CLOSE = 0x06,
	SMB2_FLUSH = 0x07,
	SMB2_READ = 0x08,
	SMB2_WRITE = 0x09,
	SMB2_LOCK = 0x0A,
	SMB2_IOCTL = 0x0B,
	SMB2_CANCEL = 0x0C,
	SMB2_ECHO = 0x0D,
	SMB2_QUERY_DIRECTORY = 0x0E,
	SMB2_CHANGE_NOTIFY = 0x0F,
	SMB2_QUERY_INFO = 0x10,
	SMB2_SET_INFO = 0x11,
	SMB2_OPLOCK_BREAK = 0x12,
	SMB2_NCMDS = 0x13,
};
const char *px_smb2_cmd_name(uint16_t cmd); /* "WRITE", or "0x0042" style for unknown */

#define SMB2_FLAGS_SERVER_TO_REDIR    0x00000001u
#define SMB2_FLAGS_ASYNC_COMMAND      0x00000002u
#define SMB2_FLAGS_RELATED_OPERATIONS 0x00000004u
#define SMB2_FLAGS_SIGNED             0x00000008u
#define SMB2_FLAGS_PRIORITY_MASK      0x00000070u
#define SMB2_FLAGS_DFS_OPERATIONS     0x10000000u
#define SMB2_FLAGS_REPLAY_OPERATION   0x20000000u

#define SMB2_NOTIFY_MESSAGE_ID UINT64_C(0xFFFFFFFFFFFFFFFF)

/* NTSTATUS values we look at or synthesize. */
#define NT_STATUS_SUCCESS                  0x00000000u
#define NT_STATUS_PENDING                  0x00000103u
#define NT_STATUS_MORE_PROCESSING_REQUIRED 0xC0000016u
#define NT_STATUS_INVALID_PARAMETER        0xC000000Du
#define NT_STATUS_ACCESS_DENIED            0xC0000022u
#define NT_STATUS_RANGE_NOT_LOCKED         0xC000007Eu
#define NT_STATUS_DISK_FULL                0xC000007Fu
#define NT_STATUS_INSUFFICIENT_RESOURCES   0xC000009Au
#define NT_STATUS_NOT_SUPPORTED            0xC00000BBu
#define NT_STATUS_FILE_CLOSED              0xC0000128u
#define NT_STATUS_END_OF_FILE              0xC0000011u
#define NT_STATUS_CANCELLED                0xC0000120u
#define NT_STATUS_NETWORK_NAME_DELETED     0xC00000C9u
#define NT_STATUS_UNEXPECTED_IO_ERROR      0xC00000E9u
#define NT_STATUS_NETWORK_SESSION_EXPIRED  0xC000035Cu
#define NT_STATUS_USER_SESSION_DELETED     0xC0000203u
#define NT_STATUS_LOST_WRITEBEHIND_DATA    0xC0000222u

struct smb2_hdr {
	uint16_t credit_charge;
	uint32_t status;        /* ChannelSequence/Reserved in requests */
	uint16_t command;
	uint16_t credit;        /* CreditRequest or CreditResponse */
	uint32_t flags;
	uint32_t next_command;
	uint64_t message_id;
	uint64_t async_id;      /* valid when flags & ASYNC */
	uint32_t tree_id;       /* valid when !(flags & ASYNC) */
	uint64_t session_id;
	uint8_t signature[16];
	/* derived by the decoder */
	size_t elem_off;        /* offset of this element in the message */
	size_t elem_len;        /* NextCommand, or rest of the message */
	bool is_response;
};

/*
 * Decode the compound element starting at msg[off].  Checks the protocol id,
 * StructureSize 64, and that NextCommand (if non-zero) is a multiple of 8,
 * at least 64, and inside the message.  Returns 0 or -1.
 */
int px_smb2_hdr_decode(const uint8_t *msg, size_t len, size_t off,
    struct smb2_hdr *h) PX_MUSTCHECK;

/*
 * Count the elements of a compound and check that every header decodes.
 * Returns the count (>= 1) or -1.
 */
int px_smb2_compound_count(const uint8_t *msg, size_t len);
/* Does each of the n elements of msg decode and say it is a response
 * (SMB2_FLAGS_SERVER_TO_REDIR)? */
bool px_smb2_all_responses(const uint8_t *msg, size_t len, int n);

/* Body of an element: pointer and length after its header. */
struct smb2_elem {
	const uint8_t *hdr;   /* element start (offsets are relative to this) */
	size_t len;           /* element length including header */
};

/* 16-byte SMB2_FILEID */
struct smb2_fileid {
	uint64_t persistent;
	uint64_t volatile_;
};
bool px_fileid_eq(const struct smb2_fileid *a, const struct smb2_fileid *b);
bool px_fileid_is_related(const struct smb2_fileid *f); /* all ones */

/* ---- NEGOTIATE (2.2.3, 2.2.4) ------------------------------------------ */

#define SMB2_DIALECT_0202 0x0202
#define SMB2_DIALECT_0210 0x0210
#define SMB2_DIALECT_0300 0x0300
#define SMB2_DIALECT_0302 0x0302
#define SMB2_DIALECT_0311 0x0311
#define SMB2_DIALECT_WILDCARD 0x02FF

#define SMB2_NEGOTIATE_SIGNING_ENABLED  0x0001
#define SMB2_NEGOTIATE_SIGNING_REQUIRED 0x0002

#define SMB2_GLOBAL_CAP_DFS                0x00000001u
#define SMB2_GLOBAL_CAP_LEASING            0x00000002u
#define SMB2_GLOBAL_CAP_LARGE_MTU          0x00000004u
#define SMB2_GLOBAL_CAP_MULTI_CHANNEL      0x00000008u
#define SMB2_GLOBAL_CAP_PERSISTENT_HANDLES 0x00000010u
#define SMB2_GLOBAL_CAP_DIRECTORY_LEASING  0x00000020u
#define SMB2_GLOBAL_CAP_ENCRYPTION         0x00000040u

#define SMB2_PREAUTH_INTEGRITY_CAPABILITIES 0x0001
#define SMB2_ENCRYPTION_CAPABILITIES        0x0002
#define SMB2_COMPRESSION_CAPABILITIES       0x0003
#define SMB2_SIGNING_CAPABILITIES           0x0008

#define SMB2_MAX_DIALECTS 16

struct smb2_negotiate_req {
	uint16_t dialect_count;
	uint16_t security_mode;
	uint32_t capabilities;
	uint8_t client_guid[16];
	uint16_t dialects[SMB2_MAX_DIALECTS]; /* first min(count, MAX) */
	/* 3.1.1 contexts (0 / absent when not present) */
	uint16_t n_ciphers;
	uint16_t ciphers[8];
	uint16_t n_signing_algs;
	uint16_t signing_algs[8];
	uint16_t preauth_hash_alg;   /* 1 = SHA-512, 0 = none */
};
int px_smb2_negotiate_req_decode(const struct smb2_elem *e,
    struct smb2_negotiate_req *out) PX_MUSTCHECK;

struct smb2_negotiate_rsp {
	uint16_t security_mode;
	uint16_t dialect;
	uint8_t server_guid[16];
	uint32_t capabilities;
	uint32_t max_transact;
	uint32_t max_read;
	uint32_t max_write;
	uint64_t system_time;        /* the server's clock (FILETIME); 0: none */
	uint16_t sec_buf_off, sec_buf_len;
	/* 3.1.1 contexts: the server picks exactly one of each (0 = absent) */
	uint16_t cipher;             /* 1 CCM128, 2 GCM128, 3 CCM256, 4 GCM256 */
	bool has_signing_alg;
	uint16_t signing_alg;        /* 0 HMAC-SHA256, 1 CMAC, 2 GMAC */
	uint16_t preauth_hash_alg;
	bool compression;            /* COMPRESSION_CAPABILITIES answered with
	                              * an algorithm (2.2.4.1.3): the server
	                              * may send compressed messages */
};
int px_smb2_negotiate_rsp_decode(const struct smb2_elem *e,
    struct smb2_negotiate_rsp *out) PX_MUSTCHECK;

/* ---- SESSION_SETUP (2.2.5, 2.2.6) --------------------------------------- */

#define SMB2_SESSION_FLAG_BINDING 0x01
#define SMB2_SESSION_FLAG_IS_GUEST 0x0001
#define SMB2_SESSION_FLAG_IS_NULL 0x0002
#define SMB2_SESSION_FLAG_ENCRYPT_DATA 0x0004

struct smb2_session_setup_req {
	uint8_t flags;
	uint8_t security_mode;
	uint32_t capabilities;
	uint64_t previous_session_id;
	const uint8_t *sec_buf; /* points into the message */
	uint16_t sec_buf_len;
};
int px_smb2_session_setup_req_decode(const struct smb2_elem *e,
    struct smb2_session_setup_req *out) PX_MUSTCHECK;

struct smb2_ioctl_req {
	uint32_t ctl_code;
	uint32_t flags;         /* SMB2_0_IOCTL_IS_FSCTL */
	struct smb2_fileid file_id;
	const uint8_t *in;      /* the input buffer, inside the element */
	uint32_t in_len;
};
int px_smb2_ioctl_req_decode(const struct smb2_elem *e,
    struct smb2_ioctl_req *out) PX_MUSTCHECK;
/* An IOCTL response (2.2.32) of status SUCCESS: its output buffer. */
struct smb2_ioctl_rsp {
	uint32_t ctl_code;
	struct smb2_fileid file_id;
	const uint8_t *out;     /* inside the element */
	uint32_t out_len;
};
int px_smb2_ioctl_rsp_decode(const struct smb2_elem *e,
    struct smb2_ioctl_rsp *out) PX_MUSTCHECK;
#define SMB2_0_IOCTL_IS_FSCTL 0x00000001u
#define FSCTL_QUERY_NETWORK_INTERFACE_INFO 0x001401FCu
#define FSCTL_SRV_REQUEST_RESUME_KEY 0x00140078u
#define FSCTL_SRV_COPYCHUNK 0x001440F2u
#define FSCTL_SRV_COPYCHUNK_WRITE 0x001480F2u
#define FSCTL_SET_ZERO_DATA 0x000980C8u
#define FSCTL_WRITE_RAW_ENCRYPTED 0x000900DFu
#define FSCTL_DUPLICATE_EXTENTS_TO_FILE 0x00098344u
/* May an FSCTL change the data of the file its IOCTL names?  The server-side
 * copies into it (MS-SMB2 2.2.31: COPYCHUNK and COPYCHUNK_WRITE), raw
 * encrypted writes, and every file-system control that needs
 * FILE_WRITE_DATA (its CTL_CODE's access bits, MS-FSCC 2.3): zeroing,
 * trimming, offload writes, duplicating extents into it, ... */
bool px_smb2_fsctl_changes_data(uint32_t ctl_code);
#define SMB2_RESUME_KEY_LEN 24

/*
 * SRV_COPYCHUNK_COPY (2.2.31.1): the source's resume key and ChunkCount
 * chunks of 24 bytes, each SourceOffset, TargetOffset, Length.  -1 when
 * the buffer is shorter than its count says.
 */
struct smb2_copychunk {
	const uint8_t *key;     /* SMB2_RESUME_KEY_LEN bytes */
	uint32_t count;
	const uint8_t *chunks;  /* count x 24 bytes */
};
int px_smb2_copychunk_decode(const uint8_t *in, uint32_t len,
    struct smb2_copychunk *out) PX_MUSTCHECK;
void px_smb2_copychunk_chunk(const struct smb2_copychunk *cc, uint32_t i,
    uint64_t *src, uint64_t *dst, uint32_t *len);

struct smb2_session_setup_rsp {
	uint16_t session_flags;
	const uint8_t *sec_buf;
	uint16_t sec_buf_len;
};
int px_smb2_session_setup_rsp_decode(const struct smb2_elem *e,
    struct smb2_session_setup_rsp *out) PX_MUSTCHECK;

/* ---- TREE_CONNECT (2.2.9, 2.2.10) --------------------------------------- */

#define SMB2_SHARE_TYPE_DISK 0x01
#define SMB2_SHARE_TYPE_PIPE 0x02
#define SMB2_SHAREFLAG_ENCRYPT_DATA 0x00008000u
#define SMB2_SHAREFLAG_COMPRESS_DATA 0x00100000u
#define SMB2_READFLAG_REQUEST_COMPRESSED 0x02

struct smb2_tree_connect_req {
	uint16_t flags;
	/* Path \\server\share converted from UTF-16LE to UTF-8; non-ASCII
	 * characters are encoded as UTF-8, invalid UTF-16 is a decode error. */
	char path[512];
};
int px_smb2_tree_connect_req_decode(const struct smb2_elem *e,
    struct smb2_tree_connect_req *out) PX_MUSTCHECK;

struct smb2_tree_connect_rsp {
	uint8_t share_type;
	uint32_t share_flags;
	uint32_t capabilities;
	uint32_t maximal_access;
};
int px_smb2_tree_connect_rsp_decode(const struct smb2_elem *e,
    struct smb2_tree_connect_rsp *out) PX_MUSTCHECK;

/* ---- CREATE (2.2.13, 2.2.14) --------------------------------------------- */

#define SMB2_OPLOCK_LEVEL_NONE      0x00
#define SMB2_OPLOCK_LEVEL_II        0x01
#define SMB2_OPLOCK_LEVEL_EXCLUSIVE 0x08
#define SMB2_OPLOCK_LEVEL_BATCH     0x09
#define SMB2_OPLOCK_LEVEL_LEASE     0xFF

#define SMB2_LEASE_READ   0x01u
#define SMB2_LEASE_HANDLE 0x02u
#define SMB2_LEASE_WRITE  0x04u

/* access mask bits (MS-DTYP 2.4.3, MS-SMB2 2.2.13.1) */
#define FILE_READ_DATA        0x00000001u
#define FILE_WRITE_DATA       0x00000002u
#define FILE_APPEND_DATA      0x00000004u
#define FILE_READ_ATTRIBUTES  0x00000080u
#define DELETE_ACCESS         0x00010000u
#define MAXIMUM_ALLOWED       0x02000000u
#define GENERIC_ALL           0x10000000u
#define GENERIC_EXECUTE       0x20000000u
#define GENERIC_WRITE         0x40000000u
#define GENERIC_READ          0x80000000u

/* CreateOptions */
#define FILE_DIRECTORY_FILE     0x00000001u
#define FILE_WRITE_THROUGH      0x00000002u
#define FILE_SEQUENTIAL_ONLY    0x00000004u
#define FILE_NO_INTERMEDIATE_BUFFERING 0x00000008u
#define FILE_NON_DIRECTORY_FILE 0x00000040u
#define FILE_DELETE_ON_CLOSE    0x00001000u

/* CreateDisposition */
#define FILE_SUPERSEDE    0
#define FILE_OPEN         1
#define FILE_CREATE       2
#define FILE_OPEN_IF      3
#define FILE_OVERWRITE    4
#define FILE_OVERWRITE_IF 5

struct smb2_create_req {
	uint8_t requested_oplock;
	uint32_t desired_access;
	uint32_t file_attributes;
	uint32_t share_access;
	uint32_t create_disposition;
	uint32_t create_options;
	/* name relative to the share, UTF-8, '\\' separators as sent */
	char name[1024];
	bool has_lease;           /* RqLs context present */
	uint8_t lease_key[16];
	uint32_t lease_state;     /* requested */
	bool has_mxac;            /* MxAc context present */
	bool has_durable;         /* DHnQ or DH2Q present */
	bool has_reconnect;       /* DHnC or DH2C present */
	struct smb2_fileid reconnect_fid; /* the open it reconnects (its
	                                   * FileId; 0 if the context was
	                                   * not of its size) */
	bool has_qfid;            /* QFid present (2.2.13.2.9) */
};
int px_smb2_create_req_decode(const struct smb2_elem *e,
    struct smb2_create_req *out) PX_MUSTCHECK;

struct smb2_create_rsp {
	uint8_t oplock_level;
	uint8_t flags;
	uint32_t create_action;
	uint64_t creation_time;     /* FILETIME, as the server sent them */
	uint64_t last_access_time;
	uint64_t last_write_time;
	uint64_t change_time;
	uint64_t end_of_file;
	uint32_t file_attributes;
	struct smb2_fileid file_id;
	bool has_lease;           /* RqLs context in the response */
	uint8_t lease_key[16];
	uint32_t lease_state;     /* granted */
	uint32_t lease_flags;     /* SMB2_LEASE_FLAG_BREAK_IN_PROGRESS */
	bool has_mxac;            /* MxAc response context */
	uint32_t mxac_status;
	uint32_t maximal_access;
	bool has_disk_id;         /* QFid response context (2.2.14.2.9) */
	uint8_t disk_id[32];      /* DiskFileId, VolumeId, Reserved */
	bool durable;             /* DHnQ or DH2Q response context: the
	                           * open is durable (2.2.14.2.3, .12) */
};
int px_smb2_create_rsp_decode(const struct smb2_elem *e,
    struct smb2_create_rsp *out) PX_MUSTCHECK;

/* ---- CREATE contexts: walking, rewriting a request, restoring an answer -- */

/*
 * cctx.c.  smbaccel may add create contexts of its own to a CREATE request
 * (a lease on the client's behalf, SMB2_CREATE_QUERY_ON_DISK_ID) and must
 * then give the client the answer it would have had: the server's answer
 * without those contexts and with the OplockLevel it would have granted.
 * Contexts it keeps are copied byte for byte (the offsets inside a context
 * are relative to the context, MS-SMB2 2.2.13.2), only laid out again.
 */

/* One context of a chain as px_smb2_cctx_next found it. */
struct smb2_cctx_view {
	const uint8_t *start;    /* its first byte (the Next field) */
	size_t ext;              /* up to Next, or to the chain's end */
	size_t used;             /* header, name and data: the bytes to copy */
	const uint8_t *name;
	uint16_t name_len;
	const uint8_t *data;     /* NULL when DataLength is 0 */
	uint32_t data_len;
};

struct smb2_cctx_iter {
	const uint8_t *p;
	size_t rem;
	bool done;
	bool bad;
};

/* Walk the chain at chain[0, len) (len 0: no contexts). */
void px_smb2_cctx_iter(struct smb2_cctx_iter *it, const uint8_t *chain,
    size_t len);
/*
 * The next context: 1 and *v filled, 0 at the end, -1 when the chain is
 * malformed (MS-SMB2 2.2.13.2: Next 8-byte aligned and leaving room for a
 * whole context header, name and data inside the context; once -1, always
 * -1).
 */
int px_smb2_cctx_next(struct smb2_cctx_iter *it, struct smb2_cctx_view *v)
    PX_MUSTCHECK;
/* Is v's name the 4-byte tag (e.g. "RqLs")? */
bool px_smb2_cctx_is(const struct smb2_cctx_view *v, const char *tag);

/* A context to append to a CREATE request: a 4-byte name and its data. */
struct smb2_cctx {
	char tag[4];
	const uint8_t *data;
	uint32_t len;
};

/*
 * The CREATE request element e again, with RequestedOplockLevel oplock
 * (-1: as sent) and the contexts add[0, nadd) after the client's own.  The
 * header and the fixed body are copied (the caller signs; a signature the
 * copy carries is stale), the name follows the fixed body at offset 120,
 * the chain starts 8-byte aligned after it, every context starts 8-byte
 * aligned, Next and CreateContextsOffset/Length are set anew.  Returns the
 * length written, or the length needed when dst is NULL; 0 when e is not a
 * well-formed CREATE request or cap is too small.
 */
size_t px_smb2_create_req_rewrite(const struct smb2_elem *e, int oplock,
    const struct smb2_cctx *add, unsigned int nadd, uint8_t *dst,
    size_t cap);

/*
 * The CREATE response element e again, without its contexts named in
 * strip[0, nstrip) and with OplockLevel oplock (-1: as sent).  Header and
 * fixed body are copied; the contexts kept follow the fixed body (offset
 * 152) in their order, each but the last padded to 8 bytes; with none
 * left, CreateContextsOffset and Length are 0 and the message ends after
 * the fixed body, as a server's answer without contexts does.  Length
 * written (or needed, dst NULL), 0 when e is not a well-formed CREATE
 * response or cap is too small.
 */
size_t px_smb2_create_rsp_restore(const struct smb2_elem *e, int oplock,
    const char (*strip)[4], unsigned int nstrip, uint8_t *dst, size_t cap);

/*
 * The data of the first context tagged tag in CREATE request (response
 * false) or response element e: 0 with data and len set (data NULL when
 * empty), -1 when absent or the element or chain is malformed.
 */
int px_smb2_create_ctx_find(const struct smb2_elem *e, bool response,
    const char *tag, const uint8_t **data, uint32_t *len) PX_MUSTCHECK;

#define SMB2_LEASE_V1_LEN 32      /* 2.2.13.2.8 */
#define SMB2_LEASE_V2_LEN 52      /* 2.2.13.2.10 */
#define SMB2_LEASE_FLAG_BREAK_IN_PROGRESS 0x02u
#define SMB2_NOTIFY_BREAK_LEASE_FLAG_ACK_REQUIRED 0x01u

/* Data of a lease request context (v2 with a zero parent key and epoch,
 * else v1) at dst; its length, or 0 if cap is too small. */
size_t px_smb2_lease_ctx_encode(uint8_t *dst, size_t cap, const uint8_t *key,
    uint32_t state, bool v2);

/* ---- CLOSE, FLUSH (2.2.15, 2.2.17) --------------------------------------- */

struct smb2_close_req {
	uint16_t flags;
	struct smb2_fileid file_id;
};
int px_smb2_close_req_decode(const struct smb2_elem *e,
    struct smb2_close_req *out) PX_MUSTCHECK;

struct smb2_flush_req {
	struct smb2_fileid file_id;
};
int px_smb2_flush_req_decode(const struct smb2_elem *e,
    struct smb2_flush_req *out) PX_MUSTCHECK;

/* ---- READ (2.2.19, 2.2.20) ----------------------------------------------- */

#define SMB2_READFLAG_READ_UNBUFFERED 0x01
#define SMB2_CHANNEL_NONE 0

struct smb2_read_req {
	uint8_t flags;
	uint32_t length;
	uint64_t offset;
	struct smb2_fileid file_id;
	uint32_t minimum_count;
	uint32_t channel;
	uint32_t remaining;
	uint16_t channel_info_off, channel_info_len;
};
int px_smb2_read_req_decode(const struct smb2_elem *e,
    struct smb2_read_req *out) PX_MUSTCHECK;

struct smb2_read_rsp {
	const uint8_t *data;    /* points into the message */
	uint32_t data_len;
	uint32_t data_remaining;
};
int px_smb2_read_rsp_decode(const struct smb2_elem *e,
    struct smb2_read_rsp *out) PX_MUSTCHECK;

/* ---- WRITE (2.2.21, 2.2.22) ------------------------------------------------ */

#define SMB2_WRITEFLAG_WRITE_THROUGH    0x00000001u
#define SMB2_WRITEFLAG_WRITE_UNBUFFERED 0x00000002u
#define SMB2_WRITE_APPEND_OFFSET UINT64_C(0xFFFFFFFFFFFFFFFF)

struct smb2_write_req {
	uint16_t data_offset;
	uint32_t length;
	uint64_t offset;
	struct smb2_fileid file_id;
	uint32_t channel;
	uint32_t remaining;
	uint16_t channel_info_off, channel_info_len;
	uint32_t flags;
	const uint8_t *data;    /* points into the message, length bytes */
};
/* Checks StructureSize 49 and that [data_offset, +length) lies inside the
 * element; offset + length must not overflow. */
int px_smb2_write_req_decode(const struct smb2_elem *e,
    struct smb2_write_req *out) PX_MUSTCHECK;

struct smb2_write_rsp {
	uint32_t count;
	uint32_t remaining;
};
int px_smb2_write_rsp_decode(const struct smb2_elem *e,
    struct smb2_write_rsp *out) PX_MUSTCHECK;

/* ---- LOCK (2.2.26) ---------------------------------------------------------- */

#define SMB2_LOCKFLAG_SHARED_LOCK      0x00000001u
#define SMB2_LOCKFLAG_EXCLUSIVE_LOCK   0x00000002u
#define SMB2_LOCKFLAG_UNLOCK           0x00000004u
#define SMB2_LOCKFLAG_FAIL_IMMEDIATELY 0x00000010u
#define SMB2_LOCK_ELEM_LEN 24           /* 2.2.26.1 */

struct smb2_lock_req {
	uint16_t count;                 /* LockCount, at least 1 */
	uint32_t sequence;              /* LockSequenceNumber/Index */
	struct smb2_fileid file_id;
	const uint8_t *locks;           /* count elements, inside the message */
};
/* One SMB2_LOCK_ELEMENT (2.2.26.1). */
struct smb2_lock_elem {
	uint64_t offset;
	uint64_t length;
	uint32_t flags;
};
/* Checks StructureSize 48, LockCount >= 1 and that all LockCount elements
 * lie inside the element.  Values are not judged (the server does). */
int px_smb2_lock_req_decode(const struct smb2_elem *e,
    struct smb2_lock_req *out) PX_MUSTCHECK;
/* Element i (< count) of a decoded request. */
void px_smb2_lock_elem_get(const struct smb2_lock_req *rq, uint16_t i,
    struct smb2_lock_elem *out);

/* ---- OPLOCK_BREAK (2.2.23, 2.2.24, 2.2.25, 2.2.26) ----------------------- */

enum smb2_break_kind {
	SMB2_BREAK_OPLOCK = 1,  /* StructureSize 24: notification/ack/response */
	SMB2_BREAK_LEASE_NOTIFY, /* StructureSize 44, server -> client */
	SMB2_BREAK_LEASE_ACK,    /* StructureSize 36, both directions */
};
struct smb2_oplock_break {
	enum smb2_break_kind kind;
	uint8_t oplock_level;             /* OPLOCK */
	struct smb2_fileid file_id;       /* OPLOCK */
	uint16_t new_epoch;               /* LEASE_NOTIFY */
	uint32_t lease_flags;             /* LEASE_NOTIFY / ACK */
	uint8_t lease_key[16];            /* LEASE_* */
	uint32_t current_state;           /* LEASE_NOTIFY */
	uint32_t new_state;               /* LEASE_NOTIFY new; LEASE_ACK state */
};
int px_smb2_oplock_break_decode(const struct smb2_elem *e,
    struct smb2_oplock_break *out) PX_MUSTCHECK;

/*
 * File id of a request that names one: CLOSE, FLUSH, READ, WRITE, LOCK,
 * IOCTL, QUERY_DIRECTORY, CHANGE_NOTIFY, QUERY_INFO, SET_INFO, OPLOCK_BREAK
 * (oplock kind).  Returns 0 and fills *fid, or -1 when the command names no
 * file or the body is too short.
 */
int px_smb2_req_file_id(const struct smb2_elem *e, uint16_t command,
    struct smb2_fileid *fid) PX_MUSTCHECK;

/* SET_INFO (2.2.39) fields needed to see end-of-file / rename / delete. */
#define SMB2_0_INFO_FILE 0x01
#define SMB2_0_INFO_FILESYSTEM 0x02
#define SMB2_0_INFO_QUOTA 0x04

/* A QUERY_INFO (2.2.37) of the volume's information or quotas (free
 * space: what every file's buffered writes change), not of its file. */
static inline bool
px_smb2_query_info_of_volume(const struct smb2_elem *e)
{
	return e->len >= SMB2_HDR_LEN + 3 &&
	    (e->hdr[SMB2_HDR_LEN + 2] == SMB2_0_INFO_FILESYSTEM ||
	    e->hdr[SMB2_HDR_LEN + 2] == SMB2_0_INFO_QUOTA);
}
#define FILE_RENAME_INFORMATION      10
#define FILE_DISPOSITION_INFORMATION 13
#define FILE_ALLOCATION_INFORMATION  19
#define FILE_END_OF_FILE_INFORMATION 20
/* the forms with flags Windows 10 and later send to servers that take
 * them (MS-FSCC 2.4.11.2, 2.4.37.2: Windows Server; Samba 4.17 refuses
 * them) */
#define FILE_DISPOSITION_INFORMATION_EX 64
#define FILE_RENAME_INFORMATION_EX      65
struct smb2_set_info_req {
	uint8_t info_type;
	uint8_t info_class;
	uint32_t buffer_len;
	struct smb2_fileid file_id;
	const uint8_t *buffer;
};
int px_smb2_set_info_req_decode(const struct smb2_elem *e,
    struct smb2_set_info_req *out) PX_MUSTCHECK;
/* Does a SET_INFO of this FileInformationClass rename its file, or set
 * (or clear) its delete disposition, in either form? */
bool px_smb2_info_renames(uint8_t info_class);
bool px_smb2_info_deletes(uint8_t info_class);
/* The target of a FileRenameInformation or FileRenameInformationEx buffer
 * (MS-FSCC 2.4.37.2, the SMB2 form; the Ex form's Flags lie over
 * ReplaceIfExists and its padding): whether it may replace
 * (ReplaceIfExists, or a flag in Flags' low byte, REPLACE_IF_EXISTS
 * among them) and the new name relative to the share, as UTF-8. */
int px_smb2_rename_info_decode(const uint8_t *buf, uint32_t len,
    bool *replace, char *name, size_t cap) PX_MUSTCHECK;

/* Check the StructureSize of a request or response element against the
 * table of MS-SMB2 (responses with an error status use 9).  0 or -1. */
int px_smb2_check_structure_size(const struct smb2_elem *e,
    const struct smb2_hdr *h) PX_MUSTCHECK;

/* ---- encoders (used for synthesized responses and proxy requests) ------ */

/*
 * Each encoder writes one complete SMB2 element (header + body) at dst and
 * returns its length, or 0 if cap is too small.  No NBSS header.
 */
struct smb2_hdr_out {
	uint16_t command;
	uint16_t credit_charge;
	uint16_t credit;      /* request or grant */
	uint32_t status;
	uint32_t flags;
	uint64_t message_id;
	uint32_t tree_id;
	uint64_t session_id;
};
void px_smb2_hdr_encode(uint8_t *dst, const struct smb2_hdr_out *h);

size_t px_smb2_write_req_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const struct smb2_fileid *fid,
    uint64_t offset, const uint8_t *data, uint32_t len, uint32_t flags);
size_t px_smb2_write_rsp_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, uint32_t count);
size_t px_smb2_read_req_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const struct smb2_fileid *fid,
    uint64_t offset, uint32_t len, uint32_t minimum_count);
/* READ response carrying len bytes of data (status SUCCESS). */
size_t px_smb2_read_rsp_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const uint8_t *data, uint32_t len);
size_t px_smb2_echo_req_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h);
size_t px_smb2_flush_req_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const struct smb2_fileid *fid);
/* CLOSE request (2.2.15) with Flags 0: no attributes asked for. */
size_t px_smb2_close_req_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const struct smb2_fileid *fid);
/* IOCTL response (2.2.32) with no input and out_len bytes of output
 * (an error status may carry one: SRV_COPYCHUNK_RESPONSE, 3.3.4.4). */
size_t px_smb2_ioctl_rsp_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, uint32_t ctl_code,
    const struct smb2_fileid *fid, const uint8_t *out, uint32_t out_len);
/* Error response (StructureSize 9, empty ErrorData), status from h. */
size_t px_smb2_error_rsp_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h);
size_t px_smb2_oplock_ack_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const struct smb2_fileid *fid,
    uint8_t oplock_level);
/* 2.2.24.2: Lease Break Acknowledgment for key, acknowledging state. */
size_t px_smb2_lease_ack_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const uint8_t *key, uint32_t state);

/* UTF-16LE -> UTF-8 (for names); returns 0 or -1 on invalid input or when
 * the result (with NUL) does not fit in cap. */
int px_utf16le_to_utf8(const uint8_t *src, size_t src_len, char *dst,
    size_t cap) PX_MUSTCHECK;

/* Names of files (reader.c). */
/* The length of a file's name without a final "::$DATA". */
size_t px_file_name_len(const char *name);
/* Do two names of files of one share name the same file (leading
 * separators, ASCII case and a final "::$DATA", the data stream named
 * explicitly, aside; other letters' case is not folded: the on-disk file
 * id catches those, doccache.c)? */
bool px_same_file_name(const char *a, const char *b);
/* A hash of a path as px_same_file_name compares it (ASCII folded), leading
 * separators skipped: equal paths hash equal, so a differing hash rules a
 * match out without comparing the strings. */
uint32_t px_name_hash(const char *name);

#endif
