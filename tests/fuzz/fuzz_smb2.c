/*
 * fuzz_smb2.c - libFuzzer driver for the SMB2 header, compound walking and
 * every command decoder.
 *
 * The input is one SMB2 message (no NBSS header).  Each compound element is
 * copied into a heap buffer of exactly its length, so that a decoder reading
 * past its element (into the next one) is caught by ASan, and then handed to
 * every decoder, request and response alike, whatever its Command says.  The
 * whole input is also decoded as one element, so that bodies get fuzzed
 * even when the header is broken.  Pointers and lengths a decoder returns
 * are checked to lie inside the element.  A trailing part of the input
 * drives one encoder -> decoder round trip.  Every element is also
 * rewritten as a CREATE request with two contexts added and restored as a
 * CREATE answer with RqLs removed (cctx.c): a result must decode as the
 * input did, keep its name and contexts, and carry the added ones.
 *
 *   clang -fsanitize=fuzzer,address,undefined -I. tests/fuzz/fuzz_smb2.c \
 *       proxy/smb2/[a-z]*.c -o fuzz_smb2   (or: make fuzz-build)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/smb2/smb2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* [p, p + n) must lie inside the element. */
static void
inside(const struct smb2_elem *e, const uint8_t *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, lo = (uintptr_t)e->hdr;

	if (p == NULL || a < lo || a - lo > e->len || n > e->len - (a - lo))
		abort();
}

static void
decode_all(const struct smb2_elem *e, const struct smb2_hdr *h)
{
	union {
		struct smb2_negotiate_req negq;
		struct smb2_negotiate_rsp negr;
		struct smb2_session_setup_req sq;
		struct smb2_session_setup_rsp sr;
		struct smb2_tree_connect_req tq;
		struct smb2_tree_connect_rsp tr;
		struct smb2_create_req cq;
		struct smb2_create_rsp cr;
		struct smb2_close_req cl;
		struct smb2_flush_req fl;
		struct smb2_read_req rq;
		struct smb2_read_rsp rr;
		struct smb2_write_req wq;
		struct smb2_write_rsp wr;
		struct smb2_oplock_break ob;
		struct smb2_set_info_req si;
		struct smb2_lock_req lk;
		struct smb2_ioctl_req io;
	} u;
	struct smb2_fileid fid;
	uint16_t cmd;
	int rc = 0;

	if (px_smb2_negotiate_req_decode(e, &u.negq) == 0 &&
	    (u.negq.dialect_count == 0 || u.negq.n_ciphers > 8 ||
	    u.negq.n_signing_algs > 8))
		abort();
	if (px_smb2_negotiate_rsp_decode(e, &u.negr) == 0 &&
	    u.negr.sec_buf_len > 0)
		inside(e, e->hdr + u.negr.sec_buf_off, u.negr.sec_buf_len);
	if (px_smb2_session_setup_req_decode(e, &u.sq) == 0)
		inside(e, u.sq.sec_buf, u.sq.sec_buf_len);
	if (px_smb2_session_setup_rsp_decode(e, &u.sr) == 0)
		inside(e, u.sr.sec_buf, u.sr.sec_buf_len);
	if (px_smb2_tree_connect_req_decode(e, &u.tq) == 0 &&
	    strnlen(u.tq.path, sizeof(u.tq.path)) == sizeof(u.tq.path))
		abort();
	rc |= px_smb2_tree_connect_rsp_decode(e, &u.tr);
	if (px_smb2_create_req_decode(e, &u.cq) == 0 &&
	    strnlen(u.cq.name, sizeof(u.cq.name)) == sizeof(u.cq.name))
		abort();
	rc |= px_smb2_create_rsp_decode(e, &u.cr);
	if (px_smb2_close_req_decode(e, &u.cl) == 0 &&
	    px_fileid_is_related(&u.cl.file_id) !=
	    (u.cl.file_id.persistent == UINT64_MAX &&
	    u.cl.file_id.volatile_ == UINT64_MAX))
		abort();
	rc |= px_smb2_flush_req_decode(e, &u.fl);
	if (px_smb2_read_req_decode(e, &u.rq) == 0 &&
	    u.rq.length > UINT64_MAX - u.rq.offset)
		abort();
	if (px_smb2_read_rsp_decode(e, &u.rr) == 0)
		inside(e, u.rr.data, u.rr.data_len);
	if (px_smb2_write_req_decode(e, &u.wq) == 0) {
		inside(e, u.wq.data, u.wq.length);
		if (u.wq.offset != SMB2_WRITE_APPEND_OFFSET &&
		    u.wq.length > UINT64_MAX - u.wq.offset)
			abort();
	}
	rc |= px_smb2_write_rsp_decode(e, &u.wr);
	if (px_smb2_oplock_break_decode(e, &u.ob) == 0 &&
	    u.ob.kind != SMB2_BREAK_OPLOCK &&
	    u.ob.kind != SMB2_BREAK_LEASE_NOTIFY &&
	    u.ob.kind != SMB2_BREAK_LEASE_ACK)
		abort();
	if (px_smb2_set_info_req_decode(e, &u.si) == 0)
		inside(e, u.si.buffer, u.si.buffer_len);
	rc |= px_smb2_ioctl_req_decode(e, &u.io);
	if (px_smb2_lock_req_decode(e, &u.lk) == 0) {
		struct smb2_lock_elem el;
		uint16_t i;

		if (u.lk.count == 0)
			abort();
		inside(e, u.lk.locks, (size_t)u.lk.count * SMB2_LOCK_ELEM_LEN);
		for (i = 0; i < u.lk.count; i++)
			px_smb2_lock_elem_get(&u.lk, i, &el);
	}
	for (cmd = 0; cmd <= SMB2_NCMDS; cmd++)
		rc |= px_smb2_req_file_id(e, cmd, &fid);
	if (h != NULL)
		rc |= px_smb2_check_structure_size(e, h);
	/* every one of these returns 0 or -1 */
	if (rc != 0 && rc != -1)
		abort();
}

/* Tags of a chain of element e at [off, +len) with n contexts at most;
 * -1 if malformed.  Counts contexts tagged tag. */
static int
count_tag(const struct smb2_elem *e, uint32_t off, uint32_t len,
    const char *tag)
{
	struct smb2_cctx_iter it;
	struct smb2_cctx_view v;
	int n = 0, rc;

	if (len && (off > e->len || len > e->len - off))
		abort();
	px_smb2_cctx_iter(&it, len ? e->hdr + off : NULL, len);
	while ((rc = px_smb2_cctx_next(&it, &v)) == 1) {
		inside(e, v.start, v.used);
		if ((size_t)(v.start - e->hdr) % 8 != 0)
			abort();
		n += px_smb2_cctx_is(&v, tag);
	}
	return rc == -1 ? -1 : n;
}

static void
cctx_rewrite(const struct smb2_elem *e)
{
	static const uint8_t key[16] = { 1, 2, 3 };
	static const char strip[][4] = { { 'R', 'q', 'L', 's' } };
	uint8_t lease[SMB2_LEASE_V2_LEN];
	struct smb2_cctx add[2];
	struct smb2_create_req *q0, *q1;
	struct smb2_create_rsp r0, r1;
	struct smb2_elem o;
	uint8_t *out;
	size_t n, m;
	int before;

	if (px_smb2_lease_ctx_encode(lease, sizeof(lease), key, 5, true) == 0)
		abort();
	memcpy(add[0].tag, "QFid", 4);
	add[0].data = NULL;
	add[0].len = 0;
	memcpy(add[1].tag, "RqLs", 4);
	add[1].data = lease;
	add[1].len = sizeof(lease);
	q0 = malloc(sizeof(*q0));
	q1 = malloc(sizeof(*q1));
	if (q0 == NULL || q1 == NULL)
		abort();
	n = px_smb2_create_req_rewrite(e, SMB2_OPLOCK_LEVEL_LEASE, add, 2,
	    NULL, 0);
	if (n != 0) {
		/* exactly n bytes, so ASan sees a write past them */
		if ((out = malloc(n)) == NULL ||
		    px_smb2_create_req_rewrite(e, SMB2_OPLOCK_LEVEL_LEASE, add, 2,
		    out, n) != n || px_smb2_create_req_rewrite(e, -1, add, 2,
		    out, n - 1) != 0)
			abort();
		o.hdr = out;
		o.len = n;
		before = count_tag(e, px_get_u32(e->hdr + 112),
		    px_get_u32(e->hdr + 116), "QFid");
		if (before < 0 || count_tag(&o, px_get_u32(out + 112),
		    px_get_u32(out + 116), "QFid") != before + 1)
			abort();
		if (px_smb2_create_req_decode(e, q0) == 0 &&
		    (px_smb2_create_req_decode(&o, q1) == -1 ||
		    strcmp(q0->name, q1->name) != 0 ||
		    q1->requested_oplock != SMB2_OPLOCK_LEVEL_LEASE ||
		    q0->has_mxac != q1->has_mxac ||
		    q0->has_durable != q1->has_durable || !q1->has_lease))
			abort();
		free(out);
	}
	/* the oplock alone (2.0.2: an oplock instead of a lease) */
	n = px_smb2_create_req_rewrite(e, SMB2_OPLOCK_LEVEL_EXCLUSIVE, NULL, 0,
	    NULL, 0);
	if (n != 0) {
		if ((out = malloc(n)) == NULL ||
		    px_smb2_create_req_rewrite(e, SMB2_OPLOCK_LEVEL_EXCLUSIVE,
		    NULL, 0, out, n) != n || out[67] != SMB2_OPLOCK_LEVEL_EXCLUSIVE)
			abort();
		o.hdr = out;
		o.len = n;
		if (px_smb2_create_req_decode(e, q0) == 0 &&
		    (px_smb2_create_req_decode(&o, q1) == -1 ||
		    strcmp(q0->name, q1->name) != 0 ||
		    q0->has_lease != q1->has_lease))
			abort();
		free(out);
	}
	n = px_smb2_create_rsp_restore(e, 0, strip, 1, NULL, 0);
	if (n != 0) {
		if ((out = malloc(n)) == NULL ||
		    px_smb2_create_rsp_restore(e, 0, strip, 1, out, n) != n)
			abort();
		o.hdr = out;
		o.len = n;
		if (count_tag(&o, px_get_u32(out + 144), px_get_u32(out + 148),
		    "RqLs") != 0 || out[66] != 0)
			abort();
		if (px_smb2_create_rsp_decode(e, &r0) == 0 &&
		    (px_smb2_create_rsp_decode(&o, &r1) == -1 ||
		    r1.has_lease || r0.has_mxac != r1.has_mxac ||
		    !px_fileid_eq(&r0.file_id, &r1.file_id)))
			abort();
		/* restoring again changes nothing */
		m = px_smb2_create_rsp_restore(&o, 0, strip, 1, NULL, 0);
		if (m != n)
			abort();
		free(out);
	}
	free(q0);
	free(q1);
}

/* Decode a copy of [p, p + n) as one element. */
static void
decode_copy(const uint8_t *p, size_t n, const struct smb2_hdr *h)
{
	struct smb2_elem e;
	uint8_t *copy;

	copy = malloc(n > 0 ? n : 1);
	if (copy == NULL)
		abort();
	if (n > 0)
		memcpy(copy, p, n);
	e.hdr = copy;
	e.len = n;
	decode_all(&e, h);
	cctx_rewrite(&e);
	free(copy);
}

/* Encode a WRITE from fuzz data and read every field back. */
static void
roundtrip(const uint8_t *data, size_t size)
{
	static uint8_t out[SMB2_HDR_LEN + 48 + 4096];
	struct smb2_hdr_out ho;
	struct smb2_fileid fid;
	struct smb2_write_req w;
	struct smb2_elem e;
	struct smb2_hdr h;
	uint64_t offset;
	uint32_t len;
	size_t n;

	if (size < 32)
		return;
	memset(&ho, 0, sizeof(ho));
	ho.message_id = px_get_u64(data);
	ho.credit_charge = px_get_u16(data + 8);
	fid.persistent = px_get_u64(data + 10);
	fid.volatile_ = px_get_u64(data + 18);
	offset = px_get_u64(data + 24) & INT64_MAX;
	len = (uint32_t)(size - 32 > 4096 ? 4096 : size - 32);
	n = px_smb2_write_req_encode(out, sizeof(out), &ho, &fid, offset,
	    data + 32, len, 0);
	if (n == 0 || px_smb2_hdr_decode(out, n, 0, &h) == -1)
		abort();
	e.hdr = out;
	e.len = n;
	if (px_smb2_check_structure_size(&e, &h) == -1 ||
	    px_smb2_write_req_decode(&e, &w) == -1)
		abort();
	if (h.message_id != ho.message_id || w.offset != offset ||
	    w.length != len || !px_fileid_eq(&w.file_id, &fid) ||
	    (len > 0 && memcmp(w.data, data + 32, len) != 0))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smb2_hdr h;
	size_t off = 0;
	int count, n = 0;

	decode_copy(data, size, NULL);

	count = px_smb2_compound_count(data, size);
	for (;;) {
		if (px_smb2_hdr_decode(data, size, off, &h) == -1)
			break;
		if (h.elem_off != off || h.elem_len < SMB2_HDR_LEN ||
		    h.elem_len > size - off)
			abort();
		if (px_smb2_cmd_name(h.command) == NULL)
			abort();
		decode_copy(data + off, h.elem_len, &h);
		n++;
		if (h.next_command == 0)
			break;
		off += h.next_command;
	}
	/* compound_count agrees with the walk: all decoded, or -1 */
	if (count != -1 && count != n)
		abort();

	roundtrip(data, size);
	return 0;
}
