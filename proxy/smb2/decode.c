/*
 * decode.c - SMB2 header and command decoders (MS-SMB2 2.2).
 *
 * Conventions shared by every decoder here:
 * - e->hdr is the element's 64-byte header, e->len the element length
 *   including it; every offset carried in a body is relative to e->hdr
 *   (MS-SMB2 2.2).
 * - StructureSize must equal the value of MS-SMB2 for the command.  An odd
 *   StructureSize counts the first byte of the variable buffer, which may be
 *   absent when that buffer is empty: the body must then hold at least
 *   StructureSize - 1 bytes (smbd_smb2_request_verify_sizes() checks the
 *   fixed part the same way).
 * - A variable buffer named by an (offset, length) pair must begin after
 *   the fixed part of the body and end inside the element.  A zero-length
 *   buffer is accepted whatever its offset; its pointer is then the end of
 *   the element, never NULL, so that memcpy of zero bytes from it is valid.
 * - Decoders do not look at the header's Command or direction: the caller
 *   dispatches on the header it has already decoded.  On -1 the output is
 *   zeroed.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proxy/smb2/smb2.h"

/* MS-ERREF 2.3.1; only used to recognise responses that keep their body. */
#define NT_STATUS_BUFFER_OVERFLOW 0x80000005u

/* MS-SMB2 2.2.9 Flags (3.1.1) */
#define SMB2_TREE_CONNECT_FLAG_EXTENSION_PRESENT 0x0004

/* ---- header (MS-SMB2 2.2.1) -------------------------------------------- */

static const char *const cmd_names[SMB2_NCMDS] = {
	"NEGOTIATE", "SESSION_SETUP", "LOGOFF", "TREE_CONNECT",
	"TREE_DISCONNECT", "CREATE", "CLOSE", "FLUSH", "READ", "WRITE",
	"LOCK", "IOCTL", "CANCEL", "ECHO", "QUERY_DIRECTORY",
	"CHANGE_NOTIFY", "QUERY_INFO", "SET_INFO", "OPLOCK_BREAK",
};

/*
 * Unknown commands are formatted into a small per-thread ring, so that a
 * few calls can share one log statement.
 */
const char *
px_smb2_cmd_name(uint16_t cmd)
{
	static _Thread_local char ring[4][8];
	static _Thread_local unsigned int next;
	char *s;

	if (cmd < SMB2_NCMDS)
		return cmd_names[cmd];
	s = ring[next++ % 4];
	snprintf(s, sizeof(ring[0]), "0x%04x", (unsigned int)cmd);
	return s;
}

/*
 * MS-SMB2 2.2.1.1/2.2.1.2, 3.3.5.2.7: NextCommand is 8-byte aligned, and
 * here also at least one header long and leaving room for a whole header
 * of the next element inside the message.
 */
int
px_smb2_hdr_decode(const uint8_t *msg, size_t len, size_t off,
    struct smb2_hdr *h)
{
	const uint8_t *p;

	memset(h, 0, sizeof(*h));
	if (msg == NULL || off > len || len - off < SMB2_HDR_LEN)
		return -1;
	p = msg + off;
	if (p[0] != 0xFE || p[1] != 'S' || p[2] != 'M' || p[3] != 'B')
		return -1;
	if (px_get_u16(p + 4) != SMB2_HDR_LEN)
		return -1;

	h->credit_charge = px_get_u16(p + 6);
	h->status = px_get_u32(p + 8);
	h->command = px_get_u16(p + 12);
	h->credit = px_get_u16(p + 14);
	h->flags = px_get_u32(p + 16);
	h->next_command = px_get_u32(p + 20);
	h->message_id = px_get_u64(p + 24);
	if (h->flags & SMB2_FLAGS_ASYNC_COMMAND)
		h->async_id = px_get_u64(p + 32);
	else
		h->tree_id = px_get_u32(p + 36);
	h->session_id = px_get_u64(p + 40);
	memcpy(h->signature, p + 48, sizeof(h->signature));

	if (h->next_command != 0) {
		if (h->next_command % 8 != 0 ||
		    h->next_command < SMB2_HDR_LEN ||
		    h->next_command > len - off - SMB2_HDR_LEN)
			goto fail;
		h->elem_len = h->next_command;
	} else
		h->elem_len = len - off;
	h->elem_off = off;
	h->is_response = (h->flags & SMB2_FLAGS_SERVER_TO_REDIR) != 0;
	return 0;
fail:
	memset(h, 0, sizeof(*h));
	return -1;
}

int
px_smb2_compound_count(const uint8_t *msg, size_t len)
{
	struct smb2_hdr h;
	size_t off = 0;
	int n = 0;

	for (;;) {
		if (px_smb2_hdr_decode(msg, len, off, &h) == -1)
			return -1;
		n++;
		if (h.next_command == 0)
			return n;
		off += h.next_command;
	}
}

/* Does every element of the server's compound say it is a response
 * (SMB2_FLAGS_SERVER_TO_REDIR, which a server sets on all it sends,
 * MS-SMB2 2.2.1)?  One that does not is not read as an answer. */
bool
px_smb2_all_responses(const uint8_t *msg, size_t mlen, int n)
{
	struct smb2_hdr h;
	size_t off = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (px_smb2_hdr_decode(msg, mlen, off, &h) == -1 ||
		    !h.is_response)
			return false;
		off += h.elem_len;
	}
	return true;
}

bool
px_fileid_eq(const struct smb2_fileid *a, const struct smb2_fileid *b)
{
	return a->persistent == b->persistent && a->volatile_ == b->volatile_;
}

/* MS-SMB2 3.2.4.1.4: related operations use the all-ones file id. */
bool
px_fileid_is_related(const struct smb2_fileid *f)
{
	return f->persistent == UINT64_MAX && f->volatile_ == UINT64_MAX;
}

/* ---- body helpers -------------------------------------------------------- */

/* Length of the fixed part of a body whose StructureSize is ss. */
static size_t
fixed_len(uint16_t ss)
{
	return (size_t)(ss & ~1u);
}

/*
 * Check StructureSize ss and the length of the fixed body; position r at
 * the first field after StructureSize, reading the whole element so that
 * header-relative offsets can be used directly.
 */
static int
body_open(const struct smb2_elem *e, uint16_t ss, struct px_rd *r)
{
	if (e == NULL || e->hdr == NULL || e->len < SMB2_HDR_LEN + 2)
		return -1;
	if (e->len - SMB2_HDR_LEN < fixed_len(ss))
		return -1;
	if (px_get_u16(e->hdr + SMB2_HDR_LEN) != ss)
		return -1;
	px_rd_init(r, e->hdr, e->len);
	px_rd_seek(r, SMB2_HDR_LEN + 2);
	return 0;
}

/*
 * Variable buffer [off, off + len) of a body with StructureSize ss: after
 * the fixed part, inside the element.  See the file comment for len == 0.
 */
static int
elem_buf(const struct smb2_elem *e, uint16_t ss, uint64_t off, uint64_t len,
    const uint8_t **out)
{
	if (len == 0) {
		if (out != NULL)
			*out = e->hdr + e->len;
		return 0;
	}
	if (off < SMB2_HDR_LEN + fixed_len(ss) || off > e->len ||
	    len > e->len - off)
		return -1;
	if (out != NULL)
		*out = e->hdr + off;
	return 0;
}

/*
 * A UTF-16LE name in the variable buffer, converted to UTF-8.  Offset and
 * length must be even (MS-SMB2 2.2.13 requires an 8-byte aligned name; we
 * only insist on code-unit alignment).  An empty name is "".
 */
static int
elem_utf16(const struct smb2_elem *e, uint16_t ss, uint32_t off,
    uint32_t len, char *dst, size_t cap)
{
	const uint8_t *p;

	if (len == 0) {
		dst[0] = '\0';
		return 0;
	}
	if (off % 2 != 0 || len % 2 != 0)
		return -1;
	if (elem_buf(e, ss, off, len, &p) == -1)
		return -1;
	return px_utf16le_to_utf8(p, len, dst, cap);
}

static void
rd_fileid(struct px_rd *r, struct smb2_fileid *f)
{
	f->persistent = px_rd_u64(r);
	f->volatile_ = px_rd_u64(r);
}

/* ---- NEGOTIATE (2.2.3, 2.2.4) ------------------------------------------ */

typedef int (*negctx_fn)(void *arg, uint16_t type, const uint8_t *data,
    uint16_t len);

/*
 * MS-SMB2 2.2.3.1: count contexts, the first at off (8-byte aligned, not
 * before min_off), each ContextType(2) DataLength(2) Reserved(4) Data, the
 * next one at the following 8-byte boundary.  The last one need not be
 * padded.
 */
static int
negctx_walk(const struct smb2_elem *e, size_t min_off, uint32_t off,
    uint16_t count, negctx_fn fn, void *arg)
{
	size_t pos = off;
	uint16_t i, type, dlen;

	if (count == 0)
		return 0;
	if (off % 8 != 0 || off < min_off)
		return -1;
	for (i = 0; i < count; i++) {
		if (i > 0)
			pos = (pos + 7) & ~(size_t)7;
		if (pos > e->len || e->len - pos < 8)
			return -1;
		type = px_get_u16(e->hdr + pos);
		dlen = px_get_u16(e->hdr + pos + 2);
		if (dlen > e->len - pos - 8)
			return -1;
		if (fn(arg, type, e->hdr + pos + 8, dlen) == -1)
			return -1;
		pos += 8 + (size_t)dlen;
	}
	return 0;
}

/*
 * Algorithm list "Count(2) [prefix(2)] Alg(2)*Count" at data: *n is
 * Count, the list must fit in len after hdr_len bytes of counts.
 */
static int
alg_list(const uint8_t *data, uint16_t len, size_t hdr_len, uint16_t *n)
{
	if (len < hdr_len)
		return -1;
	*n = px_get_u16(data);
	if (*n == 0 || (size_t)*n * 2 > len - hdr_len)
		return -1;
	return 0;
}

struct negctx_seen {
	void *out;
	unsigned int seen;      /* bit per context type already met */
};

/*
 * A context we read may appear only once (MS-SMB2 3.3.5.4), so that there
 * is a single reading of the message.
 */
static int
negctx_once(struct negctx_seen *s, uint16_t type)
{
	unsigned int bit;

	if (type != SMB2_PREAUTH_INTEGRITY_CAPABILITIES &&
	    type != SMB2_ENCRYPTION_CAPABILITIES &&
	    type != SMB2_SIGNING_CAPABILITIES)
		return 0;
	bit = 1u << type;
	if (s->seen & bit)
		return -1;
	s->seen |= bit;
	return 0;
}

/* MS-SMB2 2.2.3.1.1, 2.2.3.1.2, 2.2.3.1.7 (client lists). */
static int
negctx_req(void *arg, uint16_t type, const uint8_t *data, uint16_t len)
{
	struct negctx_seen *s = arg;
	struct smb2_negotiate_req *out = s->out;
	uint16_t n, i, salt;

	if (negctx_once(s, type) == -1)
		return -1;
	switch (type) {
	case SMB2_PREAUTH_INTEGRITY_CAPABILITIES:
		/* HashAlgorithmCount(2) SaltLength(2) HashAlgorithms Salt */
		if (alg_list(data, len, 4, &n) == -1)
			return -1;
		salt = px_get_u16(data + 2);
		if (salt > len - 4 - (size_t)n * 2)
			return -1;
		for (i = 0; i < n; i++)
			if (px_get_u16(data + 4 + 2 * i) == 0x0001)
				out->preauth_hash_alg = 0x0001;
		break;
	case SMB2_ENCRYPTION_CAPABILITIES:
		if (alg_list(data, len, 2, &n) == -1)
			return -1;
		for (i = 0; i < n && i < 8; i++)
			out->ciphers[i] = px_get_u16(data + 2 + 2 * i);
		out->n_ciphers = i;
		break;
	case SMB2_SIGNING_CAPABILITIES:
		if (alg_list(data, len, 2, &n) == -1)
			return -1;
		for (i = 0; i < n && i < 8; i++)
			out->signing_algs[i] = px_get_u16(data + 2 + 2 * i);
		out->n_signing_algs = i;
		break;
	default:
		break;          /* unknown types are skipped */
	}
	return 0;
}

/* The server's choice: exactly one algorithm per context (2.2.4.1.x). */
static int
negctx_rsp(void *arg, uint16_t type, const uint8_t *data, uint16_t len)
{
	struct negctx_seen *s = arg;
	struct smb2_negotiate_rsp *out = s->out;
	uint16_t n;

	if (negctx_once(s, type) == -1)
		return -1;
	switch (type) {
	case SMB2_PREAUTH_INTEGRITY_CAPABILITIES:
		if (alg_list(data, len, 4, &n) == -1 || n != 1)
			return -1;
		if (px_get_u16(data + 2) > len - 6)
			return -1;
		out->preauth_hash_alg = px_get_u16(data + 4);
		break;
	case SMB2_ENCRYPTION_CAPABILITIES:
		if (alg_list(data, len, 2, &n) == -1 || n != 1)
			return -1;
		out->cipher = px_get_u16(data + 2);
		break;
	case SMB2_SIGNING_CAPABILITIES:
		if (alg_list(data, len, 2, &n) == -1 || n != 1)
			return -1;
		out->has_signing_alg = true;
		out->signing_alg = px_get_u16(data + 2);
		break;
	case SMB2_COMPRESSION_CAPABILITIES: {
		/* CompressionAlgorithmCount(2) Padding(2) Flags(4) ids: any
		 * id but NONE (0) means compressed messages may come; one
		 * that does not parse is taken to mean so too */
		uint16_t i, cnt;

		if (len < 8 || (cnt = px_get_u16(data)) > (len - 8) / 2) {
			out->compression = true;
			break;
		}
		for (i = 0; i < cnt; i++)
			if (px_get_u16(data + 8 + 2 * i) != 0)
				out->compression = true;
		break;
	}
	default:
		break;
	}
	return 0;
}

/*
 * MS-SMB2 2.2.3.  A DialectCount of 0 is refused (3.3.5.3.1 fails it).
 * Contexts are parsed only when 0x0311 is offered; they must lie after the
 * dialect array.  preauth_hash_alg is 1 when SHA-512 is offered.
 */
int
px_smb2_negotiate_req_decode(const struct smb2_elem *e,
    struct smb2_negotiate_req *out)
{
	struct negctx_seen seen = { out, 0 };
	struct px_rd r;
	uint32_t ctx_off;
	uint16_t ctx_count, d, i;
	bool has311 = false;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 36, &r) == -1)
		goto fail;
	out->dialect_count = px_rd_u16(&r);
	out->security_mode = px_rd_u16(&r);
	px_rd_skip(&r, 2);                      /* Reserved */
	out->capabilities = px_rd_u32(&r);
	px_rd_bytes(&r, out->client_guid, sizeof(out->client_guid));
	ctx_off = px_rd_u32(&r);
	ctx_count = px_rd_u16(&r);
	px_rd_skip(&r, 2);                      /* Reserved2 */
	if (out->dialect_count == 0)
		goto fail;
	for (i = 0; i < out->dialect_count; i++) {
		d = px_rd_u16(&r);
		if (i < SMB2_MAX_DIALECTS)
			out->dialects[i] = d;
		if (d == SMB2_DIALECT_0311)
			has311 = true;
	}
	if (r.err)
		goto fail;
	if (has311 && negctx_walk(e, r.off, ctx_off, ctx_count, negctx_req,
	    &seen) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* MS-SMB2 2.2.4; contexts only when the dialect is 0x0311. */
int
px_smb2_negotiate_rsp_decode(const struct smb2_elem *e,
    struct smb2_negotiate_rsp *out)
{
	struct negctx_seen seen = { out, 0 };
	struct px_rd r;
	uint32_t ctx_off;
	uint16_t ctx_count;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 65, &r) == -1)
		goto fail;
	out->security_mode = px_rd_u16(&r);
	out->dialect = px_rd_u16(&r);
	ctx_count = px_rd_u16(&r);
	px_rd_bytes(&r, out->server_guid, sizeof(out->server_guid));
	out->capabilities = px_rd_u32(&r);
	out->max_transact = px_rd_u32(&r);
	out->max_read = px_rd_u32(&r);
	out->max_write = px_rd_u32(&r);
	out->system_time = px_rd_u64(&r);
	px_rd_skip(&r, 8);                      /* ServerStartTime */
	out->sec_buf_off = px_rd_u16(&r);
	out->sec_buf_len = px_rd_u16(&r);
	ctx_off = px_rd_u32(&r);
	if (r.err)
		goto fail;
	if (elem_buf(e, 65, out->sec_buf_off, out->sec_buf_len, NULL) == -1)
		goto fail;
	if (out->dialect == SMB2_DIALECT_0311 &&
	    negctx_walk(e, SMB2_HDR_LEN + fixed_len(65), ctx_off, ctx_count,
	    negctx_rsp, &seen) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* ---- SESSION_SETUP (2.2.5, 2.2.6) --------------------------------------- */

int
px_smb2_session_setup_req_decode(const struct smb2_elem *e,
    struct smb2_session_setup_req *out)
{
	struct px_rd r;
	uint16_t off;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 25, &r) == -1)
		goto fail;
	out->flags = px_rd_u8(&r);
	out->security_mode = px_rd_u8(&r);
	out->capabilities = px_rd_u32(&r);
	px_rd_skip(&r, 4);                      /* Channel */
	off = px_rd_u16(&r);
	out->sec_buf_len = px_rd_u16(&r);
	out->previous_session_id = px_rd_u64(&r);
	if (r.err || elem_buf(e, 25, off, out->sec_buf_len,
	    &out->sec_buf) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* An IOCTL request (2.2.31): the fixed part and where its input is. */
int
px_smb2_ioctl_req_decode(const struct smb2_elem *e, struct smb2_ioctl_req *out)
{
	struct px_rd r;
	uint32_t in_off;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 57, &r) == -1)
		goto fail;
	px_rd_skip(&r, 2);                      /* Reserved */
	out->ctl_code = px_rd_u32(&r);
	rd_fileid(&r, &out->file_id);
	in_off = px_rd_u32(&r);
	out->in_len = px_rd_u32(&r);
	px_rd_skip(&r, 16);     /* MaxInputResponse, output offset, count, max */
	out->flags = px_rd_u32(&r);
	if (r.err || elem_buf(e, 57, in_off, out->in_len, &out->in) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* The output of an IOCTL response of status SUCCESS (2.2.32). */
int
px_smb2_ioctl_rsp_decode(const struct smb2_elem *e, struct smb2_ioctl_rsp *out)
{
	struct px_rd r;
	uint32_t out_off;

	memset(out, 0, sizeof(*out));
	if (px_get_u32(e->hdr + 8) != 0 || body_open(e, 49, &r) == -1)
		goto fail;
	px_rd_skip(&r, 2);                      /* Reserved */
	out->ctl_code = px_rd_u32(&r);
	rd_fileid(&r, &out->file_id);
	px_rd_skip(&r, 8);                      /* InputOffset, InputCount */
	out_off = px_rd_u32(&r);
	out->out_len = px_rd_u32(&r);
	if (r.err || elem_buf(e, 49, out_off, out->out_len, &out->out) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

int
px_smb2_copychunk_decode(const uint8_t *in, uint32_t len,
    struct smb2_copychunk *out)
{
	memset(out, 0, sizeof(*out));
	if (in == NULL || len < SMB2_RESUME_KEY_LEN + 8)
		return -1;
	out->key = in;
	out->count = px_get_u32(in + SMB2_RESUME_KEY_LEN);
	if (out->count > (len - SMB2_RESUME_KEY_LEN - 8) / 24) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
	out->chunks = in + SMB2_RESUME_KEY_LEN + 8;
	return 0;
}

void
px_smb2_copychunk_chunk(const struct smb2_copychunk *cc, uint32_t i,
    uint64_t *src, uint64_t *dst, uint32_t *len)
{
	const uint8_t *c = cc->chunks + (size_t)i * 24;

	*src = px_get_u64(c);
	*dst = px_get_u64(c + 8);
	*len = px_get_u32(c + 16);
}

/*
 * Only SUCCESS and MORE_PROCESSING_REQUIRED carry this body (3.3.4.4);
 * any other status means an error response, whose StructureSize is also 9,
 * so the status in the header is what tells them apart.
 */
int
px_smb2_session_setup_rsp_decode(const struct smb2_elem *e,
    struct smb2_session_setup_rsp *out)
{
	struct px_rd r;
	uint32_t status;
	uint16_t off;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 9, &r) == -1)
		goto fail;
	status = px_get_u32(e->hdr + 8);
	if (status != NT_STATUS_SUCCESS &&
	    status != NT_STATUS_MORE_PROCESSING_REQUIRED)
		goto fail;
	out->session_flags = px_rd_u16(&r);
	off = px_rd_u16(&r);
	out->sec_buf_len = px_rd_u16(&r);
	if (r.err || elem_buf(e, 9, off, out->sec_buf_len, &out->sec_buf) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* ---- TREE_CONNECT (2.2.9, 2.2.10) --------------------------------------- */

/*
 * With SMB2_TREE_CONNECT_FLAG_EXTENSION_PRESENT (2.2.9.1) the Buffer starts
 * with a request extension and the spec does not say plainly what PathOffset
 * is then relative to; smbd 4.17 does not accept such requests either.  We
 * return -1 (not understood) rather than guess.
 */
int
px_smb2_tree_connect_req_decode(const struct smb2_elem *e,
    struct smb2_tree_connect_req *out)
{
	struct px_rd r;
	uint16_t off, len;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 9, &r) == -1)
		goto fail;
	out->flags = px_rd_u16(&r);
	off = px_rd_u16(&r);
	len = px_rd_u16(&r);
	if (r.err || (out->flags & SMB2_TREE_CONNECT_FLAG_EXTENSION_PRESENT))
		goto fail;
	if (elem_utf16(e, 9, off, len, out->path, sizeof(out->path)) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

int
px_smb2_tree_connect_rsp_decode(const struct smb2_elem *e,
    struct smb2_tree_connect_rsp *out)
{
	struct px_rd r;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 16, &r) == -1)
		goto fail;
	out->share_type = px_rd_u8(&r);
	px_rd_skip(&r, 1);
	out->share_flags = px_rd_u32(&r);
	out->capabilities = px_rd_u32(&r);
	out->maximal_access = px_rd_u32(&r);
	if (r.err)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* ---- CREATE (2.2.13, 2.2.14) --------------------------------------------- */

typedef int (*cctx_fn)(void *arg, const uint8_t *name, uint16_t nlen,
    const uint8_t *data, uint32_t dlen);

/*
 * MS-SMB2 2.2.13.2: a chain of SMB2_CREATE_CONTEXT in [off, off + len),
 * walked by px_smb2_cctx_next (cctx.c), which checks Next, the name and the
 * data of every context.  The name is not limited to 4 bytes (some are
 * GUIDs).
 */
static int
cctx_walk(const struct smb2_elem *e, uint16_t ss, uint32_t off, uint32_t len,
    cctx_fn fn, void *arg)
{
	struct smb2_cctx_iter it;
	struct smb2_cctx_view v;
	const uint8_t *p;
	int rc;

	if (len == 0)
		return 0;
	if (elem_buf(e, ss, off, len, &p) == -1)
		return -1;
	px_smb2_cctx_iter(&it, p, len);
	while ((rc = px_smb2_cctx_next(&it, &v)) == 1)
		if (fn(arg, v.name, v.name_len, v.data ? v.data : v.name,
		    v.data_len) == -1)
			return -1;
	return rc;
}

static bool
tag_is(const uint8_t *name, uint16_t nlen, const char *tag)
{
	return nlen == 4 && memcmp(name, tag, 4) == 0;
}

/* 2.2.13.2.8 / 2.2.13.2.10: lease request v1 (32) or v2 (52 bytes). */
static int
cctx_req(void *arg, const uint8_t *name, uint16_t nlen, const uint8_t *data,
    uint32_t dlen)
{
	struct smb2_create_req *out = arg;

	if (tag_is(name, nlen, "RqLs")) {
		if (dlen != 32 && dlen != 52)
			return -1;
		if (!out->has_lease) {
			out->has_lease = true;
			memcpy(out->lease_key, data, 16);
			out->lease_state = px_get_u32(data + 16);
		}
	} else if (tag_is(name, nlen, "MxAc"))
		out->has_mxac = true;
	else if (tag_is(name, nlen, "DHnQ") || tag_is(name, nlen, "DH2Q"))
		out->has_durable = true;
	else if (tag_is(name, nlen, "DHnC") || tag_is(name, nlen, "DH2C")) {
		/* 2.2.13.2.4: the FileId; 2.2.13.2.12: FileId, CreateGuid,
		 * Flags */
		if (!out->has_reconnect &&
		    dlen == (tag_is(name, nlen, "DHnC") ? 16 : 36)) {
			out->reconnect_fid.persistent = px_get_u64(data);
			out->reconnect_fid.volatile_ = px_get_u64(data + 8);
		}
		out->has_reconnect = true;
	} else if (tag_is(name, nlen, "QFid"))
		out->has_qfid = true;
	return 0;
}

/* 2.2.14.2.5 (MxAc: QueryStatus, MaximalAccess), 2.2.14.2.10/11 (RqLs). */
static int
cctx_rsp(void *arg, const uint8_t *name, uint16_t nlen, const uint8_t *data,
    uint32_t dlen)
{
	struct smb2_create_rsp *out = arg;

	if (tag_is(name, nlen, "RqLs")) {
		if (dlen != 32 && dlen != 52)
			return -1;
		if (!out->has_lease) {
			out->has_lease = true;
			memcpy(out->lease_key, data, 16);
			out->lease_state = px_get_u32(data + 16);
			out->lease_flags = px_get_u32(data + 20);
		}
	} else if (tag_is(name, nlen, "MxAc")) {
		if (dlen != 8)
			return -1;
		if (!out->has_mxac) {
			out->has_mxac = true;
			out->mxac_status = px_get_u32(data);
			out->maximal_access = px_get_u32(data + 4);
		}
	} else if (tag_is(name, nlen, "DHnQ") || tag_is(name, nlen, "DH2Q")) {
		out->durable = true;
	} else if (tag_is(name, nlen, "QFid")) {
		/* 2.2.14.2.9: DiskFileId, VolumeId, Reserved (32 bytes) */
		if (dlen != 32)
			return -1;
		/* a DiskFileId of 0 is no id (an object store without
		 * file ids): taken as one, every file would be the same */
		if (!out->has_disk_id && px_get_u64(data) != 0) {
			out->has_disk_id = true;
			memcpy(out->disk_id, data, 32);
		}
	}
	return 0;
}

/*
 * MS-SMB2 2.2.13.  has_lease reports the RqLs context whatever
 * RequestedOplockLevel says; the caller checks for SMB2_OPLOCK_LEVEL_LEASE.
 * A name that is not valid UTF-16 or too long for out->name is an error.
 */
int
px_smb2_create_req_decode(const struct smb2_elem *e,
    struct smb2_create_req *out)
{
	struct px_rd r;
	uint32_t ctx_off, ctx_len;
	uint16_t name_off, name_len;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 57, &r) == -1)
		goto fail;
	px_rd_skip(&r, 1);                      /* SecurityFlags */
	out->requested_oplock = px_rd_u8(&r);
	px_rd_skip(&r, 4 + 8 + 8);              /* Impersonation, SmbCreateFlags, Reserved */
	out->desired_access = px_rd_u32(&r);
	out->file_attributes = px_rd_u32(&r);
	out->share_access = px_rd_u32(&r);
	out->create_disposition = px_rd_u32(&r);
	out->create_options = px_rd_u32(&r);
	name_off = px_rd_u16(&r);
	name_len = px_rd_u16(&r);
	ctx_off = px_rd_u32(&r);
	ctx_len = px_rd_u32(&r);
	if (r.err)
		goto fail;
	if (elem_utf16(e, 57, name_off, name_len, out->name,
	    sizeof(out->name)) == -1)
		goto fail;
	if (cctx_walk(e, 57, ctx_off, ctx_len, cctx_req, out) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

int
px_smb2_create_rsp_decode(const struct smb2_elem *e,
    struct smb2_create_rsp *out)
{
	struct px_rd r;
	uint32_t ctx_off, ctx_len;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 89, &r) == -1)
		goto fail;
	out->oplock_level = px_rd_u8(&r);
	out->flags = px_rd_u8(&r);
	out->create_action = px_rd_u32(&r);
	out->creation_time = px_rd_u64(&r);
	out->last_access_time = px_rd_u64(&r);
	out->last_write_time = px_rd_u64(&r);
	out->change_time = px_rd_u64(&r);
	px_rd_skip(&r, 8);                      /* AllocationSize */
	out->end_of_file = px_rd_u64(&r);
	out->file_attributes = px_rd_u32(&r);
	px_rd_skip(&r, 4);                      /* Reserved2 */
	rd_fileid(&r, &out->file_id);
	ctx_off = px_rd_u32(&r);
	ctx_len = px_rd_u32(&r);
	if (r.err)
		goto fail;
	if (cctx_walk(e, 89, ctx_off, ctx_len, cctx_rsp, out) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* ---- CLOSE, FLUSH (2.2.15, 2.2.17) --------------------------------------- */

int
px_smb2_close_req_decode(const struct smb2_elem *e, struct smb2_close_req *out)
{
	struct px_rd r;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 24, &r) == -1)
		goto fail;
	out->flags = px_rd_u16(&r);
	px_rd_skip(&r, 4);
	rd_fileid(&r, &out->file_id);
	if (r.err)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

int
px_smb2_flush_req_decode(const struct smb2_elem *e, struct smb2_flush_req *out)
{
	struct px_rd r;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 24, &r) == -1)
		goto fail;
	px_rd_skip(&r, 2 + 4);
	rd_fileid(&r, &out->file_id);
	if (r.err)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* ---- LOCK (2.2.26) ---------------------------------------------------------- */

/*
 * StructureSize 48 counts the first of the LockCount elements; all of
 * them must lie inside the element (a LockCount of 0 is invalid, MS-SMB2
 * 3.3.5.14).
 */
int
px_smb2_lock_req_decode(const struct smb2_elem *e, struct smb2_lock_req *out)
{
	struct px_rd r;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 48, &r) == -1)
		goto fail;
	out->count = px_rd_u16(&r);
	out->sequence = px_rd_u32(&r);
	rd_fileid(&r, &out->file_id);
	if (r.err || out->count == 0)
		goto fail;
	/* the elements start right after the FileId, at body offset 24 */
	if ((size_t)out->count * SMB2_LOCK_ELEM_LEN >
	    e->len - (SMB2_HDR_LEN + 24))
		goto fail;
	out->locks = e->hdr + SMB2_HDR_LEN + 24;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

void
px_smb2_lock_elem_get(const struct smb2_lock_req *rq, uint16_t i,
    struct smb2_lock_elem *out)
{
	const uint8_t *p = rq->locks + (size_t)i * SMB2_LOCK_ELEM_LEN;

	out->offset = px_get_u64(p);
	out->length = px_get_u64(p + 8);
	out->flags = px_get_u32(p + 16);
}

/* ---- READ (2.2.19, 2.2.20) ----------------------------------------------- */

/* Like WRITE, offset + length must not overflow. */
int
px_smb2_read_req_decode(const struct smb2_elem *e, struct smb2_read_req *out)
{
	struct px_rd r;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 49, &r) == -1)
		goto fail;
	px_rd_skip(&r, 1);                      /* Padding */
	out->flags = px_rd_u8(&r);
	out->length = px_rd_u32(&r);
	out->offset = px_rd_u64(&r);
	rd_fileid(&r, &out->file_id);
	out->minimum_count = px_rd_u32(&r);
	out->channel = px_rd_u32(&r);
	out->remaining = px_rd_u32(&r);
	out->channel_info_off = px_rd_u16(&r);
	out->channel_info_len = px_rd_u16(&r);
	if (r.err || out->length > UINT64_MAX - out->offset)
		goto fail;
	if (elem_buf(e, 49, out->channel_info_off, out->channel_info_len,
	    NULL) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

int
px_smb2_read_rsp_decode(const struct smb2_elem *e, struct smb2_read_rsp *out)
{
	struct px_rd r;
	uint8_t off;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 17, &r) == -1)
		goto fail;
	off = px_rd_u8(&r);                     /* DataOffset is 1 byte */
	px_rd_skip(&r, 1);
	out->data_len = px_rd_u32(&r);
	out->data_remaining = px_rd_u32(&r);
	px_rd_skip(&r, 4);
	if (r.err || elem_buf(e, 17, off, out->data_len, &out->data) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* ---- WRITE (2.2.21, 2.2.22) ---------------------------------------------- */

/*
 * Offset 0xFFFFFFFFFFFFFFFF is the append marker (3.3.5.13) and is exempt
 * from the overflow check; every other offset + length must fit 64 bits.
 */
int
px_smb2_write_req_decode(const struct smb2_elem *e, struct smb2_write_req *out)
{
	struct px_rd r;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 49, &r) == -1)
		goto fail;
	out->data_offset = px_rd_u16(&r);
	out->length = px_rd_u32(&r);
	out->offset = px_rd_u64(&r);
	rd_fileid(&r, &out->file_id);
	out->channel = px_rd_u32(&r);
	out->remaining = px_rd_u32(&r);
	out->channel_info_off = px_rd_u16(&r);
	out->channel_info_len = px_rd_u16(&r);
	out->flags = px_rd_u32(&r);
	if (r.err)
		goto fail;
	if (out->offset != SMB2_WRITE_APPEND_OFFSET &&
	    out->length > UINT64_MAX - out->offset)
		goto fail;
	if (elem_buf(e, 49, out->data_offset, out->length, &out->data) == -1)
		goto fail;
	if (elem_buf(e, 49, out->channel_info_off, out->channel_info_len,
	    NULL) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

int
px_smb2_write_rsp_decode(const struct smb2_elem *e, struct smb2_write_rsp *out)
{
	struct px_rd r;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 17, &r) == -1)
		goto fail;
	px_rd_skip(&r, 2);
	out->count = px_rd_u32(&r);
	out->remaining = px_rd_u32(&r);
	if (r.err)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* ---- OPLOCK_BREAK (2.2.23, 2.2.24, 2.2.25) -------------------------------- */

/* The kind is told by StructureSize: 24 oplock, 44 lease break, 36 ack. */
int
px_smb2_oplock_break_decode(const struct smb2_elem *e,
    struct smb2_oplock_break *out)
{
	struct px_rd r;
	uint16_t ss;

	memset(out, 0, sizeof(*out));
	if (e == NULL || e->hdr == NULL || e->len < SMB2_HDR_LEN + 2)
		goto fail;
	ss = px_get_u16(e->hdr + SMB2_HDR_LEN);
	if (body_open(e, ss, &r) == -1)
		goto fail;
	switch (ss) {
	case 24:        /* 2.2.23.1, 2.2.24.1, 2.2.25.1 */
		out->kind = SMB2_BREAK_OPLOCK;
		out->oplock_level = px_rd_u8(&r);
		px_rd_skip(&r, 1 + 4);
		rd_fileid(&r, &out->file_id);
		break;
	case 44:        /* 2.2.23.2 */
		out->kind = SMB2_BREAK_LEASE_NOTIFY;
		out->new_epoch = px_rd_u16(&r);
		out->lease_flags = px_rd_u32(&r);
		px_rd_bytes(&r, out->lease_key, sizeof(out->lease_key));
		out->current_state = px_rd_u32(&r);
		out->new_state = px_rd_u32(&r);
		break;
	case 36:        /* 2.2.24.2, 2.2.25.2 */
		out->kind = SMB2_BREAK_LEASE_ACK;
		px_rd_skip(&r, 2);
		out->lease_flags = px_rd_u32(&r);
		px_rd_bytes(&r, out->lease_key, sizeof(out->lease_key));
		out->new_state = px_rd_u32(&r);
		break;
	default:
		goto fail;
	}
	if (r.err)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* ---- file ids, SET_INFO -------------------------------------------------- */

/* StructureSize and FileId position (from the body start) per request. */
static const struct {
	uint16_t ss;
	uint16_t fid_off;
} req_fid[SMB2_NCMDS] = {
	[SMB2_CLOSE] = { 24, 8 },               /* 2.2.15 */
	[SMB2_FLUSH] = { 24, 8 },               /* 2.2.17 */
	[SMB2_READ] = { 49, 16 },               /* 2.2.19 */
	[SMB2_WRITE] = { 49, 16 },              /* 2.2.21 */
	[SMB2_LOCK] = { 48, 8 },                /* 2.2.26 */
	[SMB2_IOCTL] = { 57, 8 },               /* 2.2.31 */
	[SMB2_QUERY_DIRECTORY] = { 33, 8 },     /* 2.2.33 */
	[SMB2_CHANGE_NOTIFY] = { 32, 8 },       /* 2.2.35 */
	[SMB2_QUERY_INFO] = { 41, 24 },         /* 2.2.37 */
	[SMB2_SET_INFO] = { 33, 16 },           /* 2.2.39 */
	[SMB2_OPLOCK_BREAK] = { 24, 8 },        /* 2.2.24.1 */
};

int
px_smb2_req_file_id(const struct smb2_elem *e, uint16_t command,
    struct smb2_fileid *fid)
{
	struct px_rd r;

	memset(fid, 0, sizeof(*fid));
	if (command >= SMB2_NCMDS || req_fid[command].ss == 0)
		return -1;
	if (body_open(e, req_fid[command].ss, &r) == -1)
		return -1;
	px_rd_seek(&r, SMB2_HDR_LEN + req_fid[command].fid_off);
	rd_fileid(&r, fid);
	if (r.err) {
		memset(fid, 0, sizeof(*fid));
		return -1;
	}
	return 0;
}

int
px_smb2_set_info_req_decode(const struct smb2_elem *e,
    struct smb2_set_info_req *out)
{
	struct px_rd r;
	uint16_t off;

	memset(out, 0, sizeof(*out));
	if (body_open(e, 33, &r) == -1)
		goto fail;
	out->info_type = px_rd_u8(&r);
	out->info_class = px_rd_u8(&r);
	out->buffer_len = px_rd_u32(&r);
	off = px_rd_u16(&r);
	px_rd_skip(&r, 2 + 4);                  /* Reserved, AdditionalInformation */
	rd_fileid(&r, &out->file_id);
	if (r.err || elem_buf(e, 33, off, out->buffer_len, &out->buffer) == -1)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

bool
px_smb2_fsctl_changes_data(uint32_t ctl_code)
{
	/* CTL_CODE: device type << 16 | access << 14 | function << 2 |
	 * method; FILE_DEVICE_FILE_SYSTEM 9, FILE_WRITE_DATA access 2 */
	return ctl_code == FSCTL_SRV_COPYCHUNK ||
	    ctl_code == FSCTL_SRV_COPYCHUNK_WRITE ||
	    ctl_code == FSCTL_WRITE_RAW_ENCRYPTED ||
	    ((ctl_code >> 16) == 9 && ((ctl_code >> 14) & 3) == 2);
}

/* MS-FSCC 2.4.11, 2.4.37: both forms of each. */
bool
px_smb2_info_renames(uint8_t info_class)
{
	return info_class == FILE_RENAME_INFORMATION ||
	    info_class == FILE_RENAME_INFORMATION_EX;
}

bool
px_smb2_info_deletes(uint8_t info_class)
{
	return info_class == FILE_DISPOSITION_INFORMATION ||
	    info_class == FILE_DISPOSITION_INFORMATION_EX;
}

/*
 * MS-FSCC 2.4.37.2: ReplaceIfExists (1), Reserved (7) (the Ex form: Flags
 * (4), Reserved (4)), RootDirectory (8, zero in SMB2), FileNameLength (4),
 * FileName.  The name must lie inside the buffer and be valid UTF-16.
 */
int
px_smb2_rename_info_decode(const uint8_t *buf, uint32_t len, bool *replace,
    char *name, size_t cap)
{
	uint32_t nlen;

	if (buf == NULL || len < 20 || cap == 0)
		return -1;
	*replace = buf[0] != 0;
	nlen = px_get_u32(buf + 16);
	if (nlen % 2 != 0 || nlen > len - 20)
		return -1;
	if (nlen == 0) {
		name[0] = '\0';
		return 0;
	}
	return px_utf16le_to_utf8(buf + 20, nlen, name, cap);
}

/* ---- StructureSize table -------------------------------------------------- */

/* MS-SMB2 2.2.3 - 2.2.39; 0 = no such message.  OPLOCK_BREAK is special. */
static const uint16_t req_ss[SMB2_NCMDS] = {
	36, 25, 4, 9, 4, 57, 24, 24, 49, 49, 48, 57, 4, 4, 33, 32, 41, 33, 24,
};
static const uint16_t rsp_ss[SMB2_NCMDS] = {
	65, 9, 4, 16, 4, 89, 60, 4, 17, 17, 4, 49, 0, 4, 9, 9, 9, 2, 24,
};

/*
 * MS-SMB2 3.3.4.4: responses whose status is not SUCCESS carry the error
 * body (2.2.2, StructureSize 9) except these, which keep the command's
 * body.  IOCTL copychunk answers INVALID_PARAMETER with an IOCTL body
 * (3.3.5.15.6.2).
 */
static bool
status_keeps_body(uint16_t cmd, uint32_t status)
{
	switch (status) {
	case NT_STATUS_MORE_PROCESSING_REQUIRED:
		return cmd == SMB2_SESSION_SETUP;
	case NT_STATUS_BUFFER_OVERFLOW:
		return cmd == SMB2_READ || cmd == SMB2_QUERY_INFO ||
		    cmd == SMB2_IOCTL;
	case NT_STATUS_INVALID_PARAMETER:
		return cmd == SMB2_IOCTL;
	default:
		return false;
	}
}

/*
 * Checks StructureSize and that the body holds its fixed part.  A response
 * with a non-SUCCESS status may always carry the 9-byte error body
 * (STATUS_PENDING interim responses included); the command's own body is
 * accepted then only for the pairs of status_keeps_body().
 */
int
px_smb2_check_structure_size(const struct smb2_elem *e,
    const struct smb2_hdr *h)
{
	uint16_t cmd, ss;
	bool rsp;

	if (e == NULL || e->hdr == NULL || h == NULL ||
	    e->len < SMB2_HDR_LEN + 2 || h->command >= SMB2_NCMDS)
		return -1;
	cmd = h->command;
	ss = px_get_u16(e->hdr + SMB2_HDR_LEN);
	if (e->len - SMB2_HDR_LEN < fixed_len(ss))
		return -1;
	rsp = (h->flags & SMB2_FLAGS_SERVER_TO_REDIR) != 0;

	if (!rsp) {
		if (cmd == SMB2_OPLOCK_BREAK)   /* 2.2.24.1, 2.2.24.2 */
			return ss == 24 || ss == 36 ? 0 : -1;
		return ss == req_ss[cmd] ? 0 : -1;
	}
	if (h->status != NT_STATUS_SUCCESS) {
		if (ss == 9)
			return 0;
		if (!status_keeps_body(cmd, h->status))
			return -1;
	}
	if (cmd == SMB2_OPLOCK_BREAK)           /* 2.2.23.x, 2.2.25.x */
		return ss == 24 || ss == 44 || ss == 36 ? 0 : -1;
	return rsp_ss[cmd] != 0 && ss == rsp_ss[cmd] ? 0 : -1;
}
