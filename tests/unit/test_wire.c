/*
 * test_wire.c - the bounds-checked reader, SMB2 header/compound decoding,
 * every command decoder (valid, truncated at every length, lying lengths and
 * offsets), encoder round trips and UTF-16 conversion.
 *
 * The sample elements below are laid out by hand from MS-SMB2 2.2; the
 * absolute offsets the mutation table patches are noted next to each one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "proxy/smb2/smb2.h"
#include "tests/unit/unit.h"

/* Assertion that names the failing table row. */
#define UT_CHECK(cond, ...) do {					\
	if (cond)							\
		CU_assertImplementation(CU_TRUE, __LINE__, #cond,	\
		    __FILE__, "", CU_FALSE);				\
	else {								\
		char m_[300];						\
		snprintf(m_, sizeof(m_), __VA_ARGS__);			\
		CU_assertImplementation(CU_FALSE, __LINE__, m_,	\
		    __FILE__, "", CU_FALSE);				\
	}								\
} while (0)

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define BUFSZ 1024

static const struct smb2_fileid FID = { 0x1122334455667788ull,
    0x99AABBCCDDEEFF00ull };
static const struct smb2_fileid FID_RELATED = { UINT64_MAX, UINT64_MAX };
static const uint8_t LEASE_KEY[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
    13, 14, 15, 16 };

/* ---- sample builders --------------------------------------------------- */

static void
mk_hdr(uint8_t *b, uint16_t cmd, uint32_t flags, uint32_t status)
{
	struct smb2_hdr_out h = { .command = cmd, .credit_charge = 1,
	    .credit = 1, .status = status, .flags = flags, .message_id = 7,
	    .tree_id = 5, .session_id = 0x400000000001ull };

	memset(b, 0, BUFSZ);
	px_smb2_hdr_encode(b, &h);
}

static void
put_fid(uint8_t *p, const struct smb2_fileid *f)
{
	px_put_u64(p, f->persistent);
	px_put_u64(p + 8, f->volatile_);
}

/* ASCII as UTF-16LE; returns the byte count. */
static size_t
put_u16str(uint8_t *p, const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		px_put_u16(p + 2 * i, (uint16_t)(unsigned char)s[i]);
	return 2 * i;
}

/* SMB2_CREATE_CONTEXT with a 4-byte name at 16 and data at 24. */
static void
put_cctx(uint8_t *p, uint32_t next, const char *tag, uint32_t dlen)
{
	px_put_u32(p, next);
	px_put_u16(p + 4, 16);
	px_put_u16(p + 6, 4);
	px_put_u16(p + 10, dlen ? 24 : 0);
	px_put_u32(p + 12, dlen);
	memcpy(p + 16, tag, 4);
}

/* Negotiate context header; returns the offset of its data. */
static size_t
put_negctx(uint8_t *b, size_t off, uint16_t type, uint16_t dlen)
{
	px_put_u16(b + off, type);
	px_put_u16(b + off + 2, dlen);
	return off + 8;
}

/*
 * NEGOTIATE request, 210 bytes: DialectCount @66, NegotiateContextOffset
 * @92 (= 112), NegotiateContextCount @96 (= 4), dialects @100..110.
 * Contexts: PREAUTH @112 (DataLength @114, HashAlgorithmCount @120,
 * SaltLength @122), ENCRYPTION @160 (DataLength @162, CipherCount @168),
 * SIGNING @176, unknown type 5 @192 (10 bytes, last, unpadded).
 */
static size_t
mk_negotiate_req(uint8_t *b)
{
	static const uint16_t d[] = { 0x0202, 0x0210, 0x0300, 0x0302, 0x0311 };
	uint8_t *p = b + 64;
	size_t i, o;

	mk_hdr(b, SMB2_NEGOTIATE, 0, 0);
	px_put_u16(p, 36);
	px_put_u16(p + 2, NELEM(d));
	px_put_u16(p + 4, SMB2_NEGOTIATE_SIGNING_ENABLED);
	px_put_u32(p + 8, 0x7F);
	memset(p + 12, 0xC1, 16);
	px_put_u32(p + 28, 112);
	px_put_u16(p + 32, 4);
	for (i = 0; i < NELEM(d); i++)
		px_put_u16(b + 100 + 2 * i, d[i]);
	o = put_negctx(b, 112, SMB2_PREAUTH_INTEGRITY_CAPABILITIES, 38);
	px_put_u16(b + o, 1);
	px_put_u16(b + o + 2, 32);
	px_put_u16(b + o + 4, 1);
	memset(b + o + 6, 0xA5, 32);
	o = put_negctx(b, 160, SMB2_ENCRYPTION_CAPABILITIES, 6);
	px_put_u16(b + o, 2);
	px_put_u16(b + o + 2, 2);
	px_put_u16(b + o + 4, 1);
	o = put_negctx(b, 176, SMB2_SIGNING_CAPABILITIES, 6);
	px_put_u16(b + o, 2);
	px_put_u16(b + o + 2, 2);
	px_put_u16(b + o + 4, 1);
	o = put_negctx(b, 192, 0x0005, 10);
	put_u16str(b + o, "srv01");
	return 210;
}

/*
 * NEGOTIATE response, 220 bytes: DialectRevision @68, NegotiateContextCount
 * @70, SecurityBufferOffset @120 (= 128), Length @122 (= 16),
 * NegotiateContextOffset @124 (= 144).  PREAUTH @144, ENCRYPTION @192
 * (CipherCount @200), SIGNING @208.
 */
static size_t
mk_negotiate_rsp(uint8_t *b)
{
	uint8_t *p = b + 64;
	size_t o;

	mk_hdr(b, SMB2_NEGOTIATE, SMB2_FLAGS_SERVER_TO_REDIR, 0);
	px_put_u16(p, 65);
	px_put_u16(p + 2, SMB2_NEGOTIATE_SIGNING_ENABLED);
	px_put_u16(p + 4, SMB2_DIALECT_0311);
	px_put_u16(p + 6, 3);
	memset(p + 8, 0x5E, 16);
	px_put_u32(p + 24, 0x2F);
	px_put_u32(p + 28, 8u << 20);
	px_put_u32(p + 32, 8u << 20);
	px_put_u32(p + 36, 4u << 20);
	px_put_u64(p + 40, 0x01DD641A2B3C4D5EULL);     /* SystemTime */
	px_put_u64(p + 48, 0x0102030405060708ULL);     /* ServerStartTime */
	px_put_u16(p + 56, 128);
	px_put_u16(p + 58, 16);
	px_put_u32(p + 60, 144);
	memset(b + 128, 0x60, 16);
	o = put_negctx(b, 144, SMB2_PREAUTH_INTEGRITY_CAPABILITIES, 38);
	px_put_u16(b + o, 1);
	px_put_u16(b + o + 2, 32);
	px_put_u16(b + o + 4, 1);
	memset(b + o + 6, 0x3C, 32);
	o = put_negctx(b, 192, SMB2_ENCRYPTION_CAPABILITIES, 4);
	px_put_u16(b + o, 1);
	px_put_u16(b + o + 2, 2);
	o = put_negctx(b, 208, SMB2_SIGNING_CAPABILITIES, 4);
	px_put_u16(b + o, 1);
	px_put_u16(b + o + 2, 2);
	return 220;
}

/* SESSION_SETUP request, 108 bytes: SecBufOffset @76 (88), Length @78 (20). */
static size_t
mk_sess_req(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_SESSION_SETUP, 0, 0);
	px_put_u16(p, 25);
	p[2] = 0;
	p[3] = SMB2_NEGOTIATE_SIGNING_ENABLED;
	px_put_u32(p + 4, 1);
	px_put_u16(p + 12, 88);
	px_put_u16(p + 14, 20);
	px_put_u64(p + 16, 0x0102030405060708ull);
	memcpy(b + 88, "NTLMSSP\0\1\0\0\0abcdefgh", 20);
	return 108;
}

/* SESSION_SETUP response (MORE_PROCESSING), 84 bytes: offset @68, len @70. */
static size_t
mk_sess_rsp(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_SESSION_SETUP, SMB2_FLAGS_SERVER_TO_REDIR,
	    NT_STATUS_MORE_PROCESSING_REQUIRED);
	px_put_u16(p, 9);
	px_put_u16(p + 2, 0);
	px_put_u16(p + 4, 72);
	px_put_u16(p + 6, 12);
	memcpy(b + 72, "NTLMSSP\0\2\0\0\0", 12);
	return 84;
}

/*
 * TREE_CONNECT request, 94 bytes: Flags @66, PathOffset @68 (72),
 * PathLength @70 (22), path "\\srv\dépôt".
 */
static const uint16_t TCON_PATH[] = { '\\', '\\', 's', 'r', 'v', '\\', 'd',
    0x00E9, 'p', 0x00F4, 't' };
static const char TCON_PATH_UTF8[] = "\\\\srv\\d\xC3\xA9p\xC3\xB4t";

static size_t
mk_tcon_req(uint8_t *b)
{
	uint8_t *p = b + 64;
	size_t i;

	mk_hdr(b, SMB2_TREE_CONNECT, 0, 0);
	px_put_u16(p, 9);
	px_put_u16(p + 4, 72);
	px_put_u16(p + 6, 2 * NELEM(TCON_PATH));
	for (i = 0; i < NELEM(TCON_PATH); i++)
		px_put_u16(b + 72 + 2 * i, TCON_PATH[i]);
	return 72 + 2 * NELEM(TCON_PATH);
}

static size_t
mk_tcon_rsp(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_TREE_CONNECT, SMB2_FLAGS_SERVER_TO_REDIR, 0);
	px_put_u16(p, 16);
	p[2] = SMB2_SHARE_TYPE_DISK;
	px_put_u32(p + 4, 0x800);
	px_put_u32(p + 8, 0x8);
	px_put_u32(p + 12, 0x1F01FF);
	return 80;
}

/*
 * CREATE request, 304 bytes: NameOffset @108 (120), NameLength @110 (24),
 * CreateContextsOffset @112 (144), CreateContextsLength @116 (160).
 * Contexts: RqLs v2 @144 (Next @144 = 80, NameOffset @148, NameLength @150,
 * DataOffset @154, DataLength @156 = 52), MxAc @224 (no data), DH2Q @248
 * (DataLength @260 = 32, last).
 */
static size_t
mk_create_req(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_CREATE, 0, 0);
	px_put_u16(p, 57);
	p[3] = SMB2_OPLOCK_LEVEL_LEASE;
	px_put_u32(p + 4, 2);
	px_put_u32(p + 24, 0x0012019F);
	px_put_u32(p + 28, 0x80);
	px_put_u32(p + 32, 7);
	px_put_u32(p + 36, FILE_OPEN_IF);
	px_put_u32(p + 40, FILE_NON_DIRECTORY_FILE);
	px_put_u16(p + 44, 120);
	px_put_u16(p + 46, (uint16_t)put_u16str(b + 120, "dir\\file.txt"));
	px_put_u32(p + 48, 144);
	px_put_u32(p + 52, 160);
	put_cctx(b + 144, 80, "RqLs", 52);
	memcpy(b + 168, LEASE_KEY, 16);
	px_put_u32(b + 184, SMB2_LEASE_READ | SMB2_LEASE_HANDLE |
	    SMB2_LEASE_WRITE);
	put_cctx(b + 224, 24, "MxAc", 0);
	put_cctx(b + 248, 0, "DH2Q", 32);
	px_put_u32(b + 272, 60000);
	return 304;
}

/*
 * CREATE response, 240 bytes: CreateContextsOffset @144 (152), Length @148
 * (88).  MxAc @152 (8 bytes data), RqLs v1 @184 (32 bytes data, last).
 */
static size_t
mk_create_rsp(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_CREATE, SMB2_FLAGS_SERVER_TO_REDIR, 0);
	px_put_u16(p, 89);
	p[2] = SMB2_OPLOCK_LEVEL_LEASE;
	p[3] = 0;
	px_put_u32(p + 4, 2);
	px_put_u64(p + 8, 0x01D9000000000001ULL);     /* CreationTime */
	px_put_u64(p + 16, 0x01D9000000000002ULL);    /* LastAccessTime */
	px_put_u64(p + 24, 0x01D9000000000003ULL);    /* LastWriteTime */
	px_put_u64(p + 32, 0x01D9000000000004ULL);    /* ChangeTime */
	px_put_u64(p + 40, 4096);
	px_put_u64(p + 48, 12345);
	px_put_u32(p + 56, 0x20);
	put_fid(p + 64, &FID);
	px_put_u32(p + 80, 152);
	px_put_u32(p + 84, 88);
	put_cctx(b + 152, 32, "MxAc", 8);
	px_put_u32(b + 176, 0);
	px_put_u32(b + 180, 0x001F01FF);
	put_cctx(b + 184, 0, "RqLs", 32);
	memcpy(b + 208, LEASE_KEY, 16);
	px_put_u32(b + 224, SMB2_LEASE_READ | SMB2_LEASE_WRITE);
	return 240;
}

static size_t
mk_close_req(uint8_t *b)
{
	mk_hdr(b, SMB2_CLOSE, 0, 0);
	px_put_u16(b + 64, 24);
	px_put_u16(b + 66, 1);
	put_fid(b + 72, &FID);
	return 88;
}

static size_t
mk_flush_req(uint8_t *b)
{
	mk_hdr(b, SMB2_FLUSH, 0, 0);
	px_put_u16(b + 64, 24);
	put_fid(b + 72, &FID);
	return 88;
}

/*
 * READ request, 113 bytes (one pad byte): Length @68, Offset @72,
 * ReadChannelInfoOffset @108, Length @110.
 */
static size_t
mk_read_req(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_READ, 0, 0);
	px_put_u16(p, 49);
	p[2] = 0x50;
	px_put_u32(p + 4, 65536);
	px_put_u64(p + 8, 1u << 20);
	put_fid(p + 16, &FID);
	px_put_u32(p + 32, 1);
	return 113;
}

/* READ response, 90 bytes: DataOffset @66 (1 byte, 80), DataLength @68 (10). */
static size_t
mk_read_rsp(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_READ, SMB2_FLAGS_SERVER_TO_REDIR, 0);
	px_put_u16(p, 17);
	p[2] = 80;
	px_put_u32(p + 4, 10);
	px_put_u32(p + 8, 3);
	memcpy(b + 80, "0123456789", 10);
	return 90;
}

/*
 * WRITE request, 122 bytes: DataOffset @66 (112), Length @68 (10),
 * Offset @72, WriteChannelInfoOffset @104, Length @106, Flags @108.
 */
static size_t
mk_write_req(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_WRITE, 0, 0);
	px_put_u16(p, 49);
	px_put_u16(p + 2, 112);
	px_put_u32(p + 4, 10);
	px_put_u64(p + 8, 4096);
	put_fid(p + 16, &FID);
	px_put_u32(p + 44, SMB2_WRITEFLAG_WRITE_THROUGH);
	memcpy(b + 112, "abcdefghij", 10);
	return 122;
}

static size_t
mk_write_rsp(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_WRITE, SMB2_FLAGS_SERVER_TO_REDIR, 0);
	px_put_u16(p, 17);
	px_put_u32(p + 4, 10);
	px_put_u32(p + 8, 0);
	return 81;
}

static size_t
mk_oplock_brk(uint8_t *b)
{
	mk_hdr(b, SMB2_OPLOCK_BREAK, SMB2_FLAGS_SERVER_TO_REDIR, 0);
	px_put_u64(b + 24, SMB2_NOTIFY_MESSAGE_ID);
	px_put_u16(b + 64, 24);
	b[66] = SMB2_OPLOCK_LEVEL_II;
	put_fid(b + 72, &FID);
	return 88;
}

static size_t
mk_lease_brk(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_OPLOCK_BREAK, SMB2_FLAGS_SERVER_TO_REDIR, 0);
	px_put_u64(b + 24, SMB2_NOTIFY_MESSAGE_ID);
	px_put_u16(p, 44);
	px_put_u16(p + 2, 3);
	px_put_u32(p + 4, 1);
	memcpy(p + 8, LEASE_KEY, 16);
	px_put_u32(p + 24, 7);
	px_put_u32(p + 28, 1);
	return 108;
}

static size_t
mk_lease_ack(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_OPLOCK_BREAK, 0, 0);
	px_put_u16(p, 36);
	px_put_u32(p + 4, 0);
	memcpy(p + 8, LEASE_KEY, 16);
	px_put_u32(p + 24, SMB2_LEASE_READ);
	return 100;
}

/* SET_INFO request, 104 bytes: BufferLength @68 (8), BufferOffset @72 (96). */
static size_t
mk_set_info(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_SET_INFO, 0, 0);
	px_put_u16(p, 33);
	p[2] = SMB2_0_INFO_FILE;
	p[3] = FILE_END_OF_FILE_INFORMATION;
	px_put_u32(p + 4, 8);
	px_put_u16(p + 8, 96);
	put_fid(p + 16, &FID);
	px_put_u64(b + 96, 777);
	return 104;
}

/* IOCTL request (2.2.31), 120 bytes, no buffers: CtlCode @68, FileId @72
 * (all FF), MaxOutputResponse @108, Flags @112 (FSCTL). */
static size_t
mk_ioctl_req(uint8_t *b)
{
	uint8_t *p = b + 64;

	mk_hdr(b, SMB2_IOCTL, 0, 0);
	px_put_u16(p, 57);
	px_put_u32(p + 4, FSCTL_QUERY_NETWORK_INTERFACE_INFO);
	memset(p + 8, 0xFF, 16);
	px_put_u32(p + 24, 120);
	px_put_u32(p + 36, 120);
	px_put_u32(p + 44, 65536);
	px_put_u32(p + 48, SMB2_0_IOCTL_IS_FSCTL);
	return 120;
}

/* ---- decoder wrappers (uniform signature for the tables) --------------- */

#define WRAP(fn, type)							\
static int								\
w_##fn(const struct smb2_elem *e)					\
{									\
	struct type o;							\
	return px_smb2_##fn##_decode(e, &o);				\
}
WRAP(negotiate_req, smb2_negotiate_req)
WRAP(negotiate_rsp, smb2_negotiate_rsp)
WRAP(session_setup_req, smb2_session_setup_req)
WRAP(session_setup_rsp, smb2_session_setup_rsp)
WRAP(tree_connect_req, smb2_tree_connect_req)
WRAP(tree_connect_rsp, smb2_tree_connect_rsp)
WRAP(create_req, smb2_create_req)
WRAP(create_rsp, smb2_create_rsp)
WRAP(close_req, smb2_close_req)
WRAP(flush_req, smb2_flush_req)
WRAP(read_req, smb2_read_req)
WRAP(read_rsp, smb2_read_rsp)
WRAP(write_req, smb2_write_req)
WRAP(write_rsp, smb2_write_rsp)
WRAP(oplock_break, smb2_oplock_break)
WRAP(set_info_req, smb2_set_info_req)
WRAP(ioctl_req, smb2_ioctl_req)

enum sample_id {
	S_NEG_REQ, S_NEG_RSP, S_SESS_REQ, S_SESS_RSP, S_TCON_REQ, S_TCON_RSP,
	S_CREATE_REQ, S_CREATE_RSP, S_CLOSE, S_FLUSH, S_READ_REQ, S_READ_RSP,
	S_WRITE_REQ, S_WRITE_RSP, S_OPLOCK_BRK, S_LEASE_BRK, S_LEASE_ACK,
	S_SET_INFO, S_IOCTL,
};

static const struct sample {
	const char *name;
	size_t (*mk)(uint8_t *);
	int (*dec)(const struct smb2_elem *);
	size_t ok_from;         /* shortest truncation that still decodes */
} samples[] = {
	[S_NEG_REQ] = { "negotiate req", mk_negotiate_req, w_negotiate_req, 210 },
	[S_NEG_RSP] = { "negotiate rsp", mk_negotiate_rsp, w_negotiate_rsp, 220 },
	[S_SESS_REQ] = { "session_setup req", mk_sess_req,
	    w_session_setup_req, 108 },
	[S_SESS_RSP] = { "session_setup rsp", mk_sess_rsp,
	    w_session_setup_rsp, 84 },
	[S_TCON_REQ] = { "tree_connect req", mk_tcon_req, w_tree_connect_req,
	    94 },
	[S_TCON_RSP] = { "tree_connect rsp", mk_tcon_rsp, w_tree_connect_rsp,
	    80 },
	[S_CREATE_REQ] = { "create req", mk_create_req, w_create_req, 304 },
	[S_CREATE_RSP] = { "create rsp", mk_create_rsp, w_create_rsp, 240 },
	[S_CLOSE] = { "close req", mk_close_req, w_close_req, 88 },
	[S_FLUSH] = { "flush req", mk_flush_req, w_flush_req, 88 },
	[S_READ_REQ] = { "read req", mk_read_req, w_read_req, 112 },
	[S_READ_RSP] = { "read rsp", mk_read_rsp, w_read_rsp, 90 },
	[S_WRITE_REQ] = { "write req", mk_write_req, w_write_req, 122 },
	[S_WRITE_RSP] = { "write rsp", mk_write_rsp, w_write_rsp, 80 },
	[S_OPLOCK_BRK] = { "oplock break", mk_oplock_brk, w_oplock_break, 88 },
	[S_LEASE_BRK] = { "lease break", mk_lease_brk, w_oplock_break, 108 },
	[S_LEASE_ACK] = { "lease ack", mk_lease_ack, w_oplock_break, 100 },
	[S_SET_INFO] = { "set_info req", mk_set_info, w_set_info_req, 104 },
	[S_IOCTL] = { "ioctl req", mk_ioctl_req, w_ioctl_req, 120 },
};

/* Decode a copy of exactly len bytes, so that ASan catches over-reads. */
static int
dec_exact(int (*dec)(const struct smb2_elem *), const uint8_t *b, size_t len)
{
	struct smb2_elem e;
	uint8_t *copy;
	int rc;

	copy = malloc(len > 0 ? len : 1);
	CU_ASSERT_FATAL(copy != NULL);
	memcpy(copy, b, len);
	e.hdr = copy;
	e.len = len;
	rc = dec(&e);
	free(copy);
	return rc;
}

/* ---- reader and LE helpers --------------------------------------------- */

static void
test_reader(void)
{
	static const uint8_t buf[] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
	    0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F };
	struct px_rd r;
	uint8_t tmp[4];
	const uint8_t *q;

	px_rd_init(&r, buf, sizeof(buf));
	CU_ASSERT_EQUAL(px_rd_u8(&r), 0x01);
	CU_ASSERT_EQUAL(px_rd_u16(&r), 0x0302);
	CU_ASSERT_EQUAL(px_rd_u32(&r), 0x07060504u);
	CU_ASSERT_EQUAL(px_rd_u64(&r), 0x0F0E0D0C0B0A0908ull);
	CU_ASSERT_FALSE(r.err);
	CU_ASSERT_EQUAL(r.off, 15);
	/* at the end: a zero-length read is fine, one more byte is not */
	CU_ASSERT_PTR_NOT_NULL(px_rd_ptr(&r, 0));
	CU_ASSERT_FALSE(r.err);
	CU_ASSERT_EQUAL(px_rd_u8(&r), 0);
	CU_ASSERT_TRUE(r.err);
	/* sticky: later reads return 0 even after a seek back */
	px_rd_seek(&r, 0);
	CU_ASSERT_EQUAL(px_rd_u8(&r), 0);
	CU_ASSERT_TRUE(r.err);

	/* a wide read that does not fit leaves the cursor and errs */
	px_rd_init(&r, buf, 3);
	px_rd_skip(&r, 1);
	CU_ASSERT_EQUAL(px_rd_u32(&r), 0);
	CU_ASSERT_TRUE(r.err);
	CU_ASSERT_EQUAL(r.off, 1);

	px_rd_init(&r, buf, 7);
	CU_ASSERT_EQUAL(px_rd_u64(&r), 0);
	CU_ASSERT_TRUE(r.err);

	px_rd_init(&r, buf, sizeof(buf));
	px_rd_seek(&r, sizeof(buf));
	CU_ASSERT_FALSE(r.err);
	px_rd_seek(&r, sizeof(buf) + 1);
	CU_ASSERT_TRUE(r.err);

	px_rd_init(&r, buf, sizeof(buf));
	px_rd_seek(&r, 13);
	q = px_rd_ptr(&r, 2);
	CU_ASSERT_PTR_EQUAL(q, buf + 13);
	CU_ASSERT_EQUAL(r.off, 15);
	CU_ASSERT_PTR_NULL(px_rd_ptr(&r, 1));
	CU_ASSERT_TRUE(r.err);

	/* bytes: copied, or zero-filled on error */
	px_rd_init(&r, buf, sizeof(buf));
	px_rd_bytes(&r, tmp, 4);
	CU_ASSERT_EQUAL(memcmp(tmp, buf, 4), 0);
	px_rd_skip(&r, 10);
	memset(tmp, 0xEE, sizeof(tmp));
	px_rd_bytes(&r, tmp, 4);
	CU_ASSERT_TRUE(r.err);
	CU_ASSERT(tmp[0] == 0 && tmp[1] == 0 && tmp[2] == 0 && tmp[3] == 0);

	/* skip past the end */
	px_rd_init(&r, buf, 4);
	px_rd_skip(&r, 5);
	CU_ASSERT_TRUE(r.err);
	/* huge skip must not wrap */
	px_rd_init(&r, buf, 4);
	px_rd_skip(&r, 2);
	px_rd_skip(&r, SIZE_MAX);
	CU_ASSERT_TRUE(r.err);

	/* empty reader */
	px_rd_init(&r, NULL, 0);
	CU_ASSERT_EQUAL(px_rd_u16(&r), 0);
	CU_ASSERT_TRUE(r.err);
}

static void
test_le_helpers(void)
{
	uint8_t b[8];

	px_put_u16(b, 0xA1B2);
	CU_ASSERT(b[0] == 0xB2 && b[1] == 0xA1);
	CU_ASSERT_EQUAL(px_get_u16(b), 0xA1B2);
	px_put_u32(b, 0xA1B2C3D4u);
	CU_ASSERT(b[0] == 0xD4 && b[3] == 0xA1);
	CU_ASSERT_EQUAL(px_get_u32(b), 0xA1B2C3D4u);
	px_put_u64(b, 0x0102030405060708ull);
	CU_ASSERT(b[0] == 0x08 && b[7] == 0x01);
	CU_ASSERT_EQUAL(px_get_u64(b), 0x0102030405060708ull);
	px_put_u64(b, UINT64_MAX);
	CU_ASSERT_EQUAL(px_get_u64(b), UINT64_MAX);
}

static void
test_cmd_name(void)
{
	static const struct {
		uint16_t cmd;
		const char *name;
	} cases[] = {
		{ SMB2_NEGOTIATE, "NEGOTIATE" }, { SMB2_WRITE, "WRITE" },
		{ SMB2_READ, "READ" }, { SMB2_OPLOCK_BREAK, "OPLOCK_BREAK" },
		{ SMB2_QUERY_DIRECTORY, "QUERY_DIRECTORY" },
		{ SMB2_SET_INFO, "SET_INFO" }, { 0x0013, "0x0013" },
		{ 0x0042, "0x0042" }, { 0xFFFF, "0xffff" },
	};
	const char *a, *b;
	size_t i;

	for (i = 0; i < NELEM(cases); i++)
		UT_CHECK(strcmp(px_smb2_cmd_name(cases[i].cmd),
		    cases[i].name) == 0, "cmd 0x%x: %s", cases[i].cmd,
		    px_smb2_cmd_name(cases[i].cmd));
	for (i = 0; i < SMB2_NCMDS; i++)
		UT_CHECK(strncmp(px_smb2_cmd_name((uint16_t)i), "0x", 2) != 0,
		    "cmd %zu has no name", i);
	/* two unknown names in one statement do not clobber each other */
	a = px_smb2_cmd_name(0x100);
	b = px_smb2_cmd_name(0x200);
	CU_ASSERT_STRING_EQUAL(a, "0x0100");
	CU_ASSERT_STRING_EQUAL(b, "0x0200");
}

static void
test_fileid(void)
{
	struct smb2_fileid a = FID, b = FID, half = { UINT64_MAX, 0 };

	CU_ASSERT_TRUE(px_fileid_eq(&a, &b));
	b.volatile_++;
	CU_ASSERT_FALSE(px_fileid_eq(&a, &b));
	b = a;
	b.persistent++;
	CU_ASSERT_FALSE(px_fileid_eq(&a, &b));
	CU_ASSERT_TRUE(px_fileid_is_related(&FID_RELATED));
	CU_ASSERT_FALSE(px_fileid_is_related(&FID));
	CU_ASSERT_FALSE(px_fileid_is_related(&half));
}

/* ---- header and compounds ------------------------------------------------ */

static void
test_hdr_valid(void)
{
	uint8_t b[BUFSZ];
	struct smb2_hdr h;
	size_t n;

	n = mk_write_req(b);
	px_put_u16(b + 6, 3);
	px_put_u32(b + 32, 0xFEFF);
	memset(b + 48, 0x77, 16);
	CU_ASSERT_EQUAL_FATAL(px_smb2_hdr_decode(b, n, 0, &h), 0);
	CU_ASSERT_EQUAL(h.credit_charge, 3);
	CU_ASSERT_EQUAL(h.status, 0);
	CU_ASSERT_EQUAL(h.command, SMB2_WRITE);
	CU_ASSERT_EQUAL(h.credit, 1);
	CU_ASSERT_EQUAL(h.flags, 0);
	CU_ASSERT_EQUAL(h.next_command, 0);
	CU_ASSERT_EQUAL(h.message_id, 7);
	CU_ASSERT_EQUAL(h.tree_id, 5);
	CU_ASSERT_EQUAL(h.async_id, 0);
	CU_ASSERT_EQUAL(h.session_id, 0x400000000001ull);
	CU_ASSERT_EQUAL(h.signature[0], 0x77);
	CU_ASSERT_EQUAL(h.signature[15], 0x77);
	CU_ASSERT_EQUAL(h.elem_off, 0);
	CU_ASSERT_EQUAL(h.elem_len, n);
	CU_ASSERT_FALSE(h.is_response);
	CU_ASSERT_EQUAL(px_smb2_compound_count(b, n), 1);

	/* async: bytes 32..39 are the AsyncId, no TreeId */
	n = mk_read_rsp(b);
	px_put_u32(b + 8, NT_STATUS_PENDING);
	px_put_u32(b + 16, SMB2_FLAGS_SERVER_TO_REDIR | SMB2_FLAGS_ASYNC_COMMAND);
	px_put_u64(b + 32, 0xABCDEF0123ull);
	CU_ASSERT_EQUAL_FATAL(px_smb2_hdr_decode(b, n, 0, &h), 0);
	CU_ASSERT_TRUE(h.is_response);
	CU_ASSERT_EQUAL(h.status, NT_STATUS_PENDING);
	CU_ASSERT_EQUAL(h.async_id, 0xABCDEF0123ull);
	CU_ASSERT_EQUAL(h.tree_id, 0);
}

static void
test_hdr_truncated(void)
{
	uint8_t b[BUFSZ];
	struct smb2_hdr h;
	size_t n, len;

	n = mk_flush_req(b);
	for (len = 0; len <= n; len++) {
		uint8_t *c = malloc(len ? len : 1);
		int rc;

		CU_ASSERT_FATAL(c != NULL);
		memcpy(c, b, len);
		rc = px_smb2_hdr_decode(c, len, 0, &h);
		UT_CHECK(rc == (len >= 64 ? 0 : -1), "len %zu: rc %d", len, rc);
		rc = px_smb2_compound_count(c, len);
		UT_CHECK(rc == (len >= 64 ? 1 : -1), "count len %zu: %d", len,
		    rc);
		free(c);
	}
	/* offset past the end, and offset leaving less than a header */
	CU_ASSERT_EQUAL(px_smb2_hdr_decode(b, n, n + 1, &h), -1);
	CU_ASSERT_EQUAL(px_smb2_hdr_decode(b, n, 25, &h), -1);
	CU_ASSERT_EQUAL(px_smb2_hdr_decode(NULL, 0, 0, &h), -1);
}

/* Header fields that make the element not SMB2 or not well chained. */
static void
test_hdr_bad(void)
{
	static const struct {
		const char *name;
		size_t off;
		int width;
		uint32_t value;
		int rc;
	} cases[] = {
		{ "protocol 0xFF", 0, 1, 0xFF, -1 },
		{ "protocol 0xFD", 0, 1, 0xFD, -1 },
		{ "protocol 'smb'", 1, 1, 's', -1 },
		{ "StructureSize 63", 4, 2, 63, -1 },
		{ "StructureSize 0", 4, 2, 0, -1 },
		{ "NextCommand 4", 20, 4, 4, -1 },
		{ "NextCommand 60", 20, 4, 60, -1 },
		{ "NextCommand 65", 20, 4, 65, -1 },
		{ "NextCommand 100 (not x8)", 20, 4, 100, -1 },
		{ "NextCommand 128 (ok)", 20, 4, 128, 0 },
		{ "NextCommand 136 (<64 left)", 20, 4, 136, -1 },
		{ "NextCommand 192 (= end)", 20, 4, 192, -1 },
		{ "NextCommand 200 (past end)", 20, 4, 200, -1 },
		{ "NextCommand huge", 20, 4, 0xFFFFFFF8u, -1 },
		{ "command unknown (header still fine)", 12, 2, 0x99, 0 },
	};
	static const struct smb2_hdr_out echo = { .command = SMB2_ECHO };
	uint8_t b[BUFSZ];
	struct smb2_hdr h;
	size_t i;

	for (i = 0; i < NELEM(cases); i++) {
		int rc;

		/* a 192-byte message: element of 128 + one more header */
		mk_flush_req(b);
		px_smb2_hdr_encode(b + 128, &echo);
		if (cases[i].width == 1)
			b[cases[i].off] = (uint8_t)cases[i].value;
		else if (cases[i].width == 2)
			px_put_u16(b + cases[i].off, (uint16_t)cases[i].value);
		else
			px_put_u32(b + cases[i].off, cases[i].value);
		rc = px_smb2_hdr_decode(b, 192, 0, &h);
		UT_CHECK(rc == cases[i].rc, "%s: rc %d", cases[i].name, rc);
	}
}

/*
 * CREATE + WRITE + CLOSE sent as a related compound: the WRITE and CLOSE
 * name the file with the all-ones id (MS-SMB2 3.2.4.1.4).
 */
static size_t
mk_compound3(uint8_t *msg, size_t *offs)
{
	uint8_t b[BUFSZ];
	size_t n, off = 0;

	n = mk_create_req(b);                   /* 304, multiple of 8 */
	memcpy(msg, b, n);
	px_put_u32(msg + 20, (uint32_t)n);
	offs[0] = 0;
	off = n;

	n = mk_write_req(b);                    /* 122, padded to 128 */
	px_put_u32(b + 16, SMB2_FLAGS_RELATED_OPERATIONS);
	put_fid(b + 64 + 16, &FID_RELATED);
	memcpy(msg + off, b, n);
	memset(msg + off + n, 0, 128 - n);
	px_put_u32(msg + off + 20, 128);
	offs[1] = off;
	off += 128;

	n = mk_close_req(b);                    /* 88, last */
	px_put_u32(b + 16, SMB2_FLAGS_RELATED_OPERATIONS);
	put_fid(b + 72, &FID_RELATED);
	memcpy(msg + off, b, n);
	offs[2] = off;
	return off + n;
}

static void
test_compound3(void)
{
	static const uint16_t cmds[3] = { SMB2_CREATE, SMB2_WRITE, SMB2_CLOSE };
	static const size_t lens[3] = { 304, 128, 88 };
	uint8_t msg[2048];
	size_t offs[3], len, off = 0;
	struct smb2_hdr h;
	struct smb2_elem e;
	struct smb2_fileid fid;
	struct smb2_write_req w;
	struct smb2_create_req c;
	int i;

	len = mk_compound3(msg, offs);
	CU_ASSERT_EQUAL(len, 520);
	CU_ASSERT_EQUAL(px_smb2_compound_count(msg, len), 3);
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(px_smb2_hdr_decode(msg, len, off, &h), 0);
		CU_ASSERT_EQUAL(h.command, cmds[i]);
		CU_ASSERT_EQUAL(h.elem_off, offs[i]);
		CU_ASSERT_EQUAL(h.elem_len, lens[i]);
		CU_ASSERT_EQUAL(!!(h.flags & SMB2_FLAGS_RELATED_OPERATIONS),
		    i > 0);
		e.hdr = msg + h.elem_off;
		e.len = h.elem_len;
		CU_ASSERT_EQUAL(px_smb2_check_structure_size(&e, &h), 0);
		if (i == 0) {
			CU_ASSERT_EQUAL(px_smb2_create_req_decode(&e, &c), 0);
			CU_ASSERT_STRING_EQUAL(c.name, "dir\\file.txt");
			CU_ASSERT_EQUAL(px_smb2_req_file_id(&e, h.command,
			    &fid), -1);
		} else {
			CU_ASSERT_EQUAL(px_smb2_req_file_id(&e, h.command,
			    &fid), 0);
			CU_ASSERT_TRUE(px_fileid_is_related(&fid));
		}
		if (i == 1) {
			CU_ASSERT_EQUAL(px_smb2_write_req_decode(&e, &w), 0);
			CU_ASSERT_EQUAL(w.length, 10);
			CU_ASSERT_TRUE(px_fileid_is_related(&w.file_id));
			CU_ASSERT_EQUAL(memcmp(w.data, "abcdefghij", 10), 0);
		}
		off += h.next_command;
		CU_ASSERT_EQUAL(h.next_command == 0, i == 2);
	}

	/* the middle element's NextCommand lying past the end */
	px_put_u32(msg + offs[1] + 20, 256);
	CU_ASSERT_EQUAL(px_smb2_compound_count(msg, len), -1);
	px_put_u32(msg + offs[1] + 20, 128);
	/* the last element cut short of a header */
	CU_ASSERT_EQUAL(px_smb2_compound_count(msg, offs[2] + 63), -1);
	/* a bad protocol id in the third element */
	msg[offs[2]] = 0xFF;
	CU_ASSERT_EQUAL(px_smb2_compound_count(msg, len), -1);
}

/* ---- valid decodes, field by field -------------------------------------- */

static void
elem_of(struct smb2_elem *e, const uint8_t *b, size_t len)
{
	e->hdr = b;
	e->len = len;
}

static void
test_negotiate_valid(void)
{
	uint8_t b[BUFSZ];
	struct smb2_elem e;
	struct smb2_negotiate_req q;
	struct smb2_negotiate_rsp r;
	size_t i, n;

	elem_of(&e, b, mk_negotiate_req(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_negotiate_req_decode(&e, &q), 0);
	CU_ASSERT_EQUAL(q.dialect_count, 5);
	CU_ASSERT_EQUAL(q.security_mode, SMB2_NEGOTIATE_SIGNING_ENABLED);
	CU_ASSERT_EQUAL(q.capabilities, 0x7F);
	CU_ASSERT_EQUAL(q.client_guid[0], 0xC1);
	CU_ASSERT_EQUAL(q.client_guid[15], 0xC1);
	CU_ASSERT_EQUAL(q.dialects[0], 0x0202);
	CU_ASSERT_EQUAL(q.dialects[4], 0x0311);
	CU_ASSERT_EQUAL(q.preauth_hash_alg, 1);
	CU_ASSERT_EQUAL(q.n_ciphers, 2);
	CU_ASSERT(q.ciphers[0] == 2 && q.ciphers[1] == 1);
	CU_ASSERT_EQUAL(q.n_signing_algs, 2);
	CU_ASSERT(q.signing_algs[0] == 2 && q.signing_algs[1] == 1);

	/* more dialects than the array holds: count kept, first 16 stored */
	n = 64 + 36 + 2 * 20;
	mk_hdr(b, SMB2_NEGOTIATE, 0, 0);
	px_put_u16(b + 64, 36);
	px_put_u16(b + 66, 20);
	for (i = 0; i < 20; i++)
		px_put_u16(b + 100 + 2 * i, (uint16_t)(0x0200 + i));
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_negotiate_req_decode(&e, &q), 0);
	CU_ASSERT_EQUAL(q.dialect_count, 20);
	CU_ASSERT_EQUAL(q.dialects[15], 0x020F);
	CU_ASSERT_EQUAL(q.n_ciphers, 0);
	CU_ASSERT_EQUAL(q.preauth_hash_alg, 0);

	elem_of(&e, b, mk_negotiate_rsp(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_negotiate_rsp_decode(&e, &r), 0);
	CU_ASSERT_EQUAL(r.dialect, SMB2_DIALECT_0311);
	CU_ASSERT_EQUAL(r.security_mode, SMB2_NEGOTIATE_SIGNING_ENABLED);
	CU_ASSERT_EQUAL(r.server_guid[0], 0x5E);
	CU_ASSERT_EQUAL(r.capabilities, 0x2F);
	CU_ASSERT_EQUAL(r.max_transact, 8u << 20);
	CU_ASSERT_EQUAL(r.max_read, 8u << 20);
	CU_ASSERT_EQUAL(r.max_write, 4u << 20);
	CU_ASSERT_EQUAL(r.system_time, 0x01DD641A2B3C4D5EULL);
	CU_ASSERT_EQUAL(r.sec_buf_off, 128);
	CU_ASSERT_EQUAL(r.sec_buf_len, 16);
	CU_ASSERT_EQUAL(r.preauth_hash_alg, 1);
	CU_ASSERT_EQUAL(r.cipher, 2);
	CU_ASSERT_TRUE(r.has_signing_alg);
	CU_ASSERT_EQUAL(r.signing_alg, 2);

	/* 3.0.2: no contexts, whatever the context fields say */
	n = mk_negotiate_rsp(b);
	px_put_u16(b + 68, SMB2_DIALECT_0302);
	px_put_u32(b + 124, 0xFFFFFFF0u);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_negotiate_rsp_decode(&e, &r), 0);
	CU_ASSERT_EQUAL(r.cipher, 0);
	CU_ASSERT_FALSE(r.has_signing_alg);
	CU_ASSERT_EQUAL(r.preauth_hash_alg, 0);
}

/* A COMPRESSION_CAPABILITIES answer (2.2.4.1.3) naming an algorithm:
 * compressed messages may come; naming NONE only, or absent: not. */
static void
test_negotiate_compression(void)
{
	uint8_t b[BUFSZ];
	struct smb2_elem e;
	struct smb2_negotiate_rsp r;
	size_t n, o;

	elem_of(&e, b, mk_negotiate_rsp(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_negotiate_rsp_decode(&e, &r), 0);
	CU_ASSERT_FALSE(r.compression);
	n = mk_negotiate_rsp(b);
	memset(b + n, 0, 4);                    /* pad to 224 */
	px_put_u16(b + 70, 4);                  /* four contexts */
	o = put_negctx(b, 224, SMB2_COMPRESSION_CAPABILITIES, 10);
	px_put_u16(b + o, 1);                   /* one algorithm */
	px_put_u16(b + o + 2, 0);
	px_put_u32(b + o + 4, 0);
	px_put_u16(b + o + 8, 0x0002);          /* LZ77 */
	elem_of(&e, b, o + 10);
	CU_ASSERT_EQUAL_FATAL(px_smb2_negotiate_rsp_decode(&e, &r), 0);
	CU_ASSERT_TRUE(r.compression);
	CU_ASSERT_EQUAL(r.signing_alg, 2);      /* the others still read */
	px_put_u16(b + o + 8, 0x0000);          /* NONE */
	CU_ASSERT_EQUAL_FATAL(px_smb2_negotiate_rsp_decode(&e, &r), 0);
	CU_ASSERT_FALSE(r.compression);
	px_put_u16(b + o, 7);                   /* a count the data lacks */
	CU_ASSERT_EQUAL_FATAL(px_smb2_negotiate_rsp_decode(&e, &r), 0);
	CU_ASSERT_TRUE(r.compression);
}

static void
test_session_tcon_valid(void)
{
	uint8_t b[BUFSZ];
	struct smb2_elem e;
	struct smb2_session_setup_req sq;
	struct smb2_session_setup_rsp sr;
	struct smb2_tree_connect_req tq;
	struct smb2_tree_connect_rsp tr;

	elem_of(&e, b, mk_sess_req(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_session_setup_req_decode(&e, &sq), 0);
	CU_ASSERT_EQUAL(sq.flags, 0);
	CU_ASSERT_EQUAL(sq.security_mode, SMB2_NEGOTIATE_SIGNING_ENABLED);
	CU_ASSERT_EQUAL(sq.capabilities, 1);
	CU_ASSERT_EQUAL(sq.previous_session_id, 0x0102030405060708ull);
	CU_ASSERT_PTR_EQUAL(sq.sec_buf, e.hdr + 88);
	CU_ASSERT_EQUAL(sq.sec_buf_len, 20);

	elem_of(&e, b, mk_sess_rsp(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_session_setup_rsp_decode(&e, &sr), 0);
	CU_ASSERT_PTR_EQUAL(sr.sec_buf, e.hdr + 72);
	CU_ASSERT_EQUAL(sr.sec_buf_len, 12);
	CU_ASSERT_EQUAL(memcmp(sr.sec_buf, "NTLMSSP", 8), 0);

	/* final SUCCESS without a token: zero length, non-NULL pointer */
	mk_sess_rsp(b);
	px_put_u32(b + 8, NT_STATUS_SUCCESS);
	px_put_u16(b + 66, SMB2_SESSION_FLAG_IS_GUEST);
	px_put_u16(b + 68, 0);
	px_put_u16(b + 70, 0);
	elem_of(&e, b, 72);
	CU_ASSERT_EQUAL_FATAL(px_smb2_session_setup_rsp_decode(&e, &sr), 0);
	CU_ASSERT_EQUAL(sr.session_flags, SMB2_SESSION_FLAG_IS_GUEST);
	CU_ASSERT_EQUAL(sr.sec_buf_len, 0);
	CU_ASSERT_PTR_NOT_NULL(sr.sec_buf);

	elem_of(&e, b, mk_tcon_req(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_tree_connect_req_decode(&e, &tq), 0);
	CU_ASSERT_EQUAL(tq.flags, 0);
	CU_ASSERT_STRING_EQUAL(tq.path, TCON_PATH_UTF8);

	elem_of(&e, b, mk_tcon_rsp(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_tree_connect_rsp_decode(&e, &tr), 0);
	CU_ASSERT_EQUAL(tr.share_type, SMB2_SHARE_TYPE_DISK);
	CU_ASSERT_EQUAL(tr.share_flags, 0x800);
	CU_ASSERT_EQUAL(tr.capabilities, 0x8);
	CU_ASSERT_EQUAL(tr.maximal_access, 0x1F01FF);
}

static void
test_create_valid(void)
{
	uint8_t b[BUFSZ];
	struct smb2_elem e;
	struct smb2_create_req q;
	struct smb2_create_rsp r;
	size_t n;
	int i;

	elem_of(&e, b, mk_create_req(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_req_decode(&e, &q), 0);
	CU_ASSERT_EQUAL(q.requested_oplock, SMB2_OPLOCK_LEVEL_LEASE);
	CU_ASSERT_EQUAL(q.desired_access, 0x0012019F);
	CU_ASSERT_EQUAL(q.file_attributes, 0x80);
	CU_ASSERT_EQUAL(q.share_access, 7);
	CU_ASSERT_EQUAL(q.create_disposition, FILE_OPEN_IF);
	CU_ASSERT_EQUAL(q.create_options, FILE_NON_DIRECTORY_FILE);
	CU_ASSERT_STRING_EQUAL(q.name, "dir\\file.txt");
	CU_ASSERT_TRUE(q.has_lease);
	CU_ASSERT_EQUAL(memcmp(q.lease_key, LEASE_KEY, 16), 0);
	CU_ASSERT_EQUAL(q.lease_state, 7);
	CU_ASSERT_TRUE(q.has_mxac);
	CU_ASSERT_TRUE(q.has_durable);
	CU_ASSERT_FALSE(q.has_reconnect);
	CU_ASSERT_FALSE(q.has_qfid);
	/* MxAc renamed QFid: the client asks for the on-disk id */
	n = mk_create_req(b);
	memcpy(b + 240, "QFid", 4);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_req_decode(&e, &q), 0);
	CU_ASSERT_TRUE(q.has_qfid);
	CU_ASSERT_FALSE(q.has_mxac);

	/* DH2Q -> DH2C, empty name, no RqLs (renamed), GUID-named context */
	n = mk_create_req(b);
	memcpy(b + 264, "DH2C", 4);
	memcpy(b + 160, "RqLx", 4);
	px_put_u16(b + 110, 0);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_req_decode(&e, &q), 0);
	CU_ASSERT_STRING_EQUAL(q.name, "");
	CU_ASSERT_FALSE(q.has_lease);
	CU_ASSERT_FALSE(q.has_durable);
	CU_ASSERT_TRUE(q.has_reconnect);
	/* ... of the wrong size (32 bytes, DH2C has 36): no FileId */
	CU_ASSERT_EQUAL(q.reconnect_fid.persistent, 0);
	/* DHnC with its 16-byte FileId */
	n = mk_create_req(b);
	memcpy(b + 264, "DHnC", 4);
	px_put_u32(b + 260, 16);
	px_put_u64(b + 272, 0x1122334455667788ULL);
	px_put_u64(b + 280, 0x99);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_req_decode(&e, &q), 0);
	CU_ASSERT_TRUE(q.has_reconnect);
	CU_ASSERT_EQUAL(q.reconnect_fid.persistent, 0x1122334455667788ULL);
	CU_ASSERT_EQUAL(q.reconnect_fid.volatile_, 0x99);
	/* a 16-byte name (e.g. an AppInstanceId GUID) is skipped */
	n = mk_create_req(b);
	px_put_u16(b + 150, 16);                /* RqLs name now 16 bytes */
	px_put_u16(b + 154, 32);
	px_put_u32(b + 156, 32);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_req_decode(&e, &q), 0);
	CU_ASSERT_FALSE(q.has_lease);
	CU_ASSERT_TRUE(q.has_mxac);
	/* no contexts at all */
	n = mk_create_req(b);
	px_put_u32(b + 112, 0);
	px_put_u32(b + 116, 0);
	elem_of(&e, b, 144);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_req_decode(&e, &q), 0);
	CU_ASSERT_FALSE(q.has_lease || q.has_mxac || q.has_durable);

	elem_of(&e, b, mk_create_rsp(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_rsp_decode(&e, &r), 0);
	CU_ASSERT_EQUAL(r.oplock_level, SMB2_OPLOCK_LEVEL_LEASE);
	CU_ASSERT_EQUAL(r.create_action, 2);
	CU_ASSERT_EQUAL(r.end_of_file, 12345);
	CU_ASSERT_EQUAL(r.file_attributes, 0x20);
	CU_ASSERT_TRUE(px_fileid_eq(&r.file_id, &FID));
	CU_ASSERT_TRUE(r.has_mxac);
	CU_ASSERT_EQUAL(r.mxac_status, 0);
	CU_ASSERT_EQUAL(r.maximal_access, 0x001F01FF);
	CU_ASSERT_TRUE(r.has_lease);
	CU_ASSERT_EQUAL(memcmp(r.lease_key, LEASE_KEY, 16), 0);
	CU_ASSERT_EQUAL(r.lease_state, SMB2_LEASE_READ | SMB2_LEASE_WRITE);
	CU_ASSERT_EQUAL(r.creation_time, 0x01D9000000000001ULL);
	CU_ASSERT_EQUAL(r.last_access_time, 0x01D9000000000002ULL);
	CU_ASSERT_EQUAL(r.last_write_time, 0x01D9000000000003ULL);
	CU_ASSERT_EQUAL(r.change_time, 0x01D9000000000004ULL);
	CU_ASSERT_FALSE(r.has_disk_id);
	CU_ASSERT_FALSE(r.durable);
	/* MxAc renamed DHnQ (8 reserved bytes): a durable open */
	n = mk_create_rsp(b);
	memcpy(b + 168, "DHnQ", 4);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_rsp_decode(&e, &r), 0);
	CU_ASSERT_TRUE(r.durable);
	CU_ASSERT_FALSE(r.has_mxac);
	CU_ASSERT_TRUE(r.has_lease);

	/* QFid instead of RqLs: the on-disk id; a wrong length is refused */
	n = mk_create_rsp(b);
	put_cctx(b + 184, 0, "QFid", 32);
	for (i = 0; i < 32; i++)
		b[208 + i] = (uint8_t)(0xA0 + i);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_rsp_decode(&e, &r), 0);
	CU_ASSERT_TRUE(r.has_disk_id);
	CU_ASSERT_FALSE(r.has_lease);
	CU_ASSERT_EQUAL(r.disk_id[0], 0xA0);
	CU_ASSERT_EQUAL(r.disk_id[31], 0xA0 + 31);
	put_cctx(b + 184, 0, "QFid", 24);
	CU_ASSERT_EQUAL(px_smb2_create_rsp_decode(&e, &r), -1);
}

/* MS-FSCC 2.4.37.2, the SMB2 form of FileRenameInformation. */
static void
test_rename_info(void)
{
	uint8_t b[64];
	char name[32];
	bool replace = false;

	memset(b, 0, sizeof(b));
	b[0] = 1;
	px_put_u32(b + 16, 10);
	memcpy(b + 20, "d\0i\0r\0\\\0x\0", 10);
	CU_ASSERT_EQUAL(px_smb2_rename_info_decode(b, 30, &replace, name,
	    sizeof(name)), 0);
	CU_ASSERT_TRUE(replace);
	CU_ASSERT_STRING_EQUAL(name, "dir\\x");
	/* the name must lie inside the buffer, in whole code units */
	CU_ASSERT_EQUAL(px_smb2_rename_info_decode(b, 29, &replace, name,
	    sizeof(name)), -1);
	px_put_u32(b + 16, 9);
	CU_ASSERT_EQUAL(px_smb2_rename_info_decode(b, 30, &replace, name,
	    sizeof(name)), -1);
	px_put_u32(b + 16, 0xFFFFFFF0u);
	CU_ASSERT_EQUAL(px_smb2_rename_info_decode(b, 30, &replace, name,
	    sizeof(name)), -1);
	CU_ASSERT_EQUAL(px_smb2_rename_info_decode(b, 19, &replace, name,
	    sizeof(name)), -1);
	/* too long for the caller's buffer */
	px_put_u32(b + 16, 10);
	CU_ASSERT_EQUAL(px_smb2_rename_info_decode(b, 30, &replace, name, 3),
	    -1);
	/* FileRenameInformationEx: Flags over ReplaceIfExists and its
	 * padding, the rest where it was */
	px_put_u32(b, 0);
	CU_ASSERT_EQUAL(px_smb2_rename_info_decode(b, 30, &replace, name,
	    sizeof(name)), 0);
	CU_ASSERT_FALSE(replace);
	px_put_u32(b, 0x3);    /* REPLACE_IF_EXISTS | POSIX_SEMANTICS */
	CU_ASSERT_EQUAL(px_smb2_rename_info_decode(b, 30, &replace, name,
	    sizeof(name)), 0);
	CU_ASSERT_TRUE(replace);
	CU_ASSERT_STRING_EQUAL(name, "dir\\x");
}

/* Both forms of rename and delete are seen as such: the Ex classes are
 * what Windows 10 and later send to servers that take them. */
static void
test_info_classes(void)
{
	CU_ASSERT_TRUE(px_smb2_info_renames(10));
	CU_ASSERT_TRUE(px_smb2_info_renames(65));
	CU_ASSERT_FALSE(px_smb2_info_renames(13));
	CU_ASSERT_FALSE(px_smb2_info_renames(64));
	CU_ASSERT_TRUE(px_smb2_info_deletes(13));
	CU_ASSERT_TRUE(px_smb2_info_deletes(64));
	CU_ASSERT_FALSE(px_smb2_info_deletes(65));
	CU_ASSERT_FALSE(px_smb2_info_deletes(20));
	CU_ASSERT_FALSE(px_smb2_info_renames(4));   /* FileBasicInformation */
	/* FSCTLs that change the data of the IOCTL's file */
	CU_ASSERT_TRUE(px_smb2_fsctl_changes_data(FSCTL_SET_ZERO_DATA));
	CU_ASSERT_TRUE(px_smb2_fsctl_changes_data(FSCTL_SRV_COPYCHUNK));
	CU_ASSERT_TRUE(px_smb2_fsctl_changes_data(FSCTL_SRV_COPYCHUNK_WRITE));
	CU_ASSERT_TRUE(px_smb2_fsctl_changes_data(FSCTL_DUPLICATE_EXTENTS_TO_FILE));
	CU_ASSERT_TRUE(px_smb2_fsctl_changes_data(0x000983E8)); /* ..._EX */
	CU_ASSERT_TRUE(px_smb2_fsctl_changes_data(0x00098208)); /* FILE_LEVEL_TRIM */
	CU_ASSERT_TRUE(px_smb2_fsctl_changes_data(0x00098268)); /* OFFLOAD_WRITE */
	CU_ASSERT_TRUE(px_smb2_fsctl_changes_data(FSCTL_WRITE_RAW_ENCRYPTED));
	CU_ASSERT_FALSE(px_smb2_fsctl_changes_data(FSCTL_SRV_REQUEST_RESUME_KEY));
	CU_ASSERT_FALSE(px_smb2_fsctl_changes_data(FSCTL_QUERY_NETWORK_INTERFACE_INFO));
	CU_ASSERT_FALSE(px_smb2_fsctl_changes_data(0x000900C4)); /* SET_SPARSE */
	CU_ASSERT_FALSE(px_smb2_fsctl_changes_data(0x00060194)); /* DFS referral */
	CU_ASSERT_FALSE(px_smb2_fsctl_changes_data(0x00140204)); /* VALIDATE_NEGOTIATE */
}

static void
test_io_valid(void)
{
	uint8_t b[BUFSZ];
	struct smb2_elem e;
	struct smb2_close_req c;
	struct smb2_flush_req f;
	struct smb2_read_req rq;
	struct smb2_read_rsp rr;
	struct smb2_write_req wq;
	struct smb2_write_rsp wr;
	struct smb2_set_info_req si;
	struct smb2_ioctl_req io;
	size_t n;

	elem_of(&e, b, mk_close_req(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_close_req_decode(&e, &c), 0);
	CU_ASSERT_EQUAL(c.flags, 1);
	CU_ASSERT_TRUE(px_fileid_eq(&c.file_id, &FID));

	elem_of(&e, b, mk_flush_req(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_flush_req_decode(&e, &f), 0);
	CU_ASSERT_TRUE(px_fileid_eq(&f.file_id, &FID));

	elem_of(&e, b, mk_read_req(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_read_req_decode(&e, &rq), 0);
	CU_ASSERT_EQUAL(rq.flags, 0);
	CU_ASSERT_EQUAL(rq.length, 65536);
	CU_ASSERT_EQUAL(rq.offset, 1u << 20);
	CU_ASSERT_TRUE(px_fileid_eq(&rq.file_id, &FID));
	CU_ASSERT_EQUAL(rq.minimum_count, 1);
	CU_ASSERT_EQUAL(rq.channel, SMB2_CHANNEL_NONE);
	CU_ASSERT_EQUAL(rq.channel_info_len, 0);

	elem_of(&e, b, mk_read_rsp(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_read_rsp_decode(&e, &rr), 0);
	CU_ASSERT_EQUAL(rr.data_len, 10);
	CU_ASSERT_EQUAL(rr.data_remaining, 3);
	CU_ASSERT_PTR_EQUAL(rr.data, e.hdr + 80);

	elem_of(&e, b, mk_write_req(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_write_req_decode(&e, &wq), 0);
	CU_ASSERT_EQUAL(wq.data_offset, 112);
	CU_ASSERT_EQUAL(wq.length, 10);
	CU_ASSERT_EQUAL(wq.offset, 4096);
	CU_ASSERT_TRUE(px_fileid_eq(&wq.file_id, &FID));
	CU_ASSERT_EQUAL(wq.flags, SMB2_WRITEFLAG_WRITE_THROUGH);
	CU_ASSERT_PTR_EQUAL(wq.data, e.hdr + 112);

	/* append marker is exempt from the overflow check */
	n = mk_write_req(b);
	px_put_u64(b + 72, SMB2_WRITE_APPEND_OFFSET);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_write_req_decode(&e, &wq), 0);
	CU_ASSERT_EQUAL(wq.offset, SMB2_WRITE_APPEND_OFFSET);

	elem_of(&e, b, mk_write_rsp(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_write_rsp_decode(&e, &wr), 0);
	CU_ASSERT_EQUAL(wr.count, 10);
	CU_ASSERT_EQUAL(wr.remaining, 0);

	elem_of(&e, b, mk_set_info(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_set_info_req_decode(&e, &si), 0);
	CU_ASSERT_EQUAL(si.info_type, SMB2_0_INFO_FILE);
	CU_ASSERT_EQUAL(si.info_class, FILE_END_OF_FILE_INFORMATION);
	CU_ASSERT_EQUAL(si.buffer_len, 8);
	CU_ASSERT_TRUE(px_fileid_eq(&si.file_id, &FID));
	CU_ASSERT_EQUAL(px_get_u64(si.buffer), 777);

	elem_of(&e, b, mk_ioctl_req(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_ioctl_req_decode(&e, &io), 0);
	CU_ASSERT_EQUAL(io.ctl_code, FSCTL_QUERY_NETWORK_INTERFACE_INFO);
	CU_ASSERT_EQUAL(io.flags, SMB2_0_IOCTL_IS_FSCTL);
	CU_ASSERT_TRUE(px_fileid_is_related(&io.file_id));
}

/* LOCK request (2.2.26) with n elements of 24 bytes from body offset 24:
 * [4096, +512) exclusive|fail-immediately, then [i * 100, +10) shared. */
static size_t
mk_lock_req(uint8_t *b, uint16_t n)
{
	uint8_t *p = b + 64;
	uint16_t i;

	mk_hdr(b, SMB2_LOCK, 0, 0);
	px_put_u16(p, 48);
	px_put_u16(p + 2, n);
	px_put_u32(p + 4, 0x21);
	put_fid(p + 8, &FID);
	for (i = 0; i < n; i++) {
		uint8_t *l = p + 24 + 24 * (size_t)i;

		px_put_u64(l, i == 0 ? 4096 : (uint64_t)i * 100);
		px_put_u64(l + 8, i == 0 ? 512 : 10);
		px_put_u32(l + 16, i == 0 ? SMB2_LOCKFLAG_EXCLUSIVE_LOCK |
		    SMB2_LOCKFLAG_FAIL_IMMEDIATELY : SMB2_LOCKFLAG_SHARED_LOCK);
	}
	return 64 + 24 + 24 * (size_t)n;
}

static void
test_lock_req(void)
{
	uint8_t b[BUFSZ];
	struct smb2_elem e;
	struct smb2_lock_req rq;
	struct smb2_lock_elem el;
	struct smb2_fileid fid;
	size_t n;

	elem_of(&e, b, mk_lock_req(b, 3));
	CU_ASSERT_EQUAL_FATAL(px_smb2_lock_req_decode(&e, &rq), 0);
	CU_ASSERT_EQUAL(rq.count, 3);
	CU_ASSERT_EQUAL(rq.sequence, 0x21);
	CU_ASSERT_TRUE(px_fileid_eq(&rq.file_id, &FID));
	CU_ASSERT_PTR_EQUAL(rq.locks, e.hdr + 88);
	px_smb2_lock_elem_get(&rq, 0, &el);
	CU_ASSERT_EQUAL(el.offset, 4096);
	CU_ASSERT_EQUAL(el.length, 512);
	CU_ASSERT_EQUAL(el.flags, SMB2_LOCKFLAG_EXCLUSIVE_LOCK |
	    SMB2_LOCKFLAG_FAIL_IMMEDIATELY);
	px_smb2_lock_elem_get(&rq, 2, &el);
	CU_ASSERT_EQUAL(el.offset, 200);
	CU_ASSERT_EQUAL(el.length, 10);
	CU_ASSERT_EQUAL(el.flags, SMB2_LOCKFLAG_SHARED_LOCK);
	CU_ASSERT_EQUAL(px_smb2_req_file_id(&e, SMB2_LOCK, &fid), 0);
	CU_ASSERT_TRUE(px_fileid_eq(&fid, &FID));

	/* one element: exactly the StructureSize */
	elem_of(&e, b, mk_lock_req(b, 1));
	CU_ASSERT_EQUAL(e.len, 112);
	CU_ASSERT_EQUAL(px_smb2_lock_req_decode(&e, &rq), 0);
	CU_ASSERT_EQUAL(rq.count, 1);

	/* LockCount claims an element that is not there */
	n = mk_lock_req(b, 2);
	px_put_u16(b + 66, 3);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_lock_req_decode(&e, &rq), -1);
	CU_ASSERT_EQUAL(rq.count, 0);
	CU_ASSERT_PTR_NULL(rq.locks);
	/* ... or one byte of it is missing */
	elem_of(&e, b, mk_lock_req(b, 2) - 1);
	CU_ASSERT_EQUAL(px_smb2_lock_req_decode(&e, &rq), -1);
	/* LockCount 0 */
	n = mk_lock_req(b, 1);
	px_put_u16(b + 66, 0);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_lock_req_decode(&e, &rq), -1);
	/* wrong StructureSize, and a body shorter than one element */
	n = mk_lock_req(b, 1);
	px_put_u16(b + 64, 49);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_lock_req_decode(&e, &rq), -1);
	elem_of(&e, b, mk_lock_req(b, 1) - 8);
	CU_ASSERT_EQUAL(px_smb2_lock_req_decode(&e, &rq), -1);
	/* the largest count that fits: LockCount 0xFFFF in a short element */
	n = mk_lock_req(b, 4);
	px_put_u16(b + 66, 0xFFFF);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_lock_req_decode(&e, &rq), -1);
}

static void
test_oplock_break_kinds(void)
{
	uint8_t b[BUFSZ];
	struct smb2_elem e;
	struct smb2_oplock_break o;

	elem_of(&e, b, mk_oplock_brk(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_oplock_break_decode(&e, &o), 0);
	CU_ASSERT_EQUAL(o.kind, SMB2_BREAK_OPLOCK);
	CU_ASSERT_EQUAL(o.oplock_level, SMB2_OPLOCK_LEVEL_II);
	CU_ASSERT_TRUE(px_fileid_eq(&o.file_id, &FID));

	elem_of(&e, b, mk_lease_brk(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_oplock_break_decode(&e, &o), 0);
	CU_ASSERT_EQUAL(o.kind, SMB2_BREAK_LEASE_NOTIFY);
	CU_ASSERT_EQUAL(o.new_epoch, 3);
	CU_ASSERT_EQUAL(o.lease_flags, 1);
	CU_ASSERT_EQUAL(memcmp(o.lease_key, LEASE_KEY, 16), 0);
	CU_ASSERT_EQUAL(o.current_state, 7);
	CU_ASSERT_EQUAL(o.new_state, 1);

	elem_of(&e, b, mk_lease_ack(b));
	CU_ASSERT_EQUAL_FATAL(px_smb2_oplock_break_decode(&e, &o), 0);
	CU_ASSERT_EQUAL(o.kind, SMB2_BREAK_LEASE_ACK);
	CU_ASSERT_EQUAL(memcmp(o.lease_key, LEASE_KEY, 16), 0);
	CU_ASSERT_EQUAL(o.new_state, SMB2_LEASE_READ);
}

/* ---- truncation at every length ------------------------------------------ */

static void
test_truncated_every_length(void)
{
	uint8_t b[BUFSZ];
	size_t i, n, len;

	for (i = 0; i < NELEM(samples); i++) {
		const struct sample *s = &samples[i];

		n = s->mk(b);
		UT_CHECK(s->ok_from <= n, "%s: ok_from", s->name);
		for (len = 0; len <= n; len++) {
			int rc = dec_exact(s->dec, b, len);
			int want = len >= s->ok_from ? 0 : -1;

			UT_CHECK(rc == want, "%s: len %zu of %zu: rc %d",
			    s->name, len, n, rc);
		}
	}
}

/* Bodies too long are fine: trailing padding after the last buffer. */
static void
test_oversized(void)
{
	uint8_t b[BUFSZ];
	size_t i, n;

	for (i = 0; i < NELEM(samples); i++) {
		int rc;

		n = samples[i].mk(b);
		rc = dec_exact(samples[i].dec, b, n + 7);
		UT_CHECK(rc == 0, "%s: +7 bytes: rc %d", samples[i].name, rc);
	}
}

/* ---- lying lengths and offsets -------------------------------------------- */

static const struct mutation {
	const char *name;
	enum sample_id s;
	size_t off;
	int width;              /* 1, 2, 4, 8 */
	uint64_t value;
	int rc;
} mutations[] = {
	/* StructureSize */
	{ "write ss 48", S_WRITE_REQ, 64, 2, 48, -1 },
	{ "write ss 50", S_WRITE_REQ, 64, 2, 50, -1 },
	{ "read rsp ss 9", S_READ_RSP, 64, 2, 9, -1 },
	{ "create ss 56", S_CREATE_REQ, 64, 2, 56, -1 },
	{ "oplock ss 25", S_OPLOCK_BRK, 64, 2, 25, -1 },
	{ "oplock ss 44, body 24", S_OPLOCK_BRK, 64, 2, 44, -1 },
	{ "oplock ss 36, body 24", S_OPLOCK_BRK, 64, 2, 36, -1 },
	{ "lease brk ss 36 (body big enough)", S_LEASE_BRK, 64, 2, 36, 0 },
	/* WRITE data */
	{ "write DataOffset 0", S_WRITE_REQ, 66, 2, 0, -1 },
	{ "write DataOffset 64", S_WRITE_REQ, 66, 2, 64, -1 },
	{ "write DataOffset 111", S_WRITE_REQ, 66, 2, 111, -1 },
	{ "write DataOffset 113", S_WRITE_REQ, 66, 2, 113, -1 },
	{ "write DataOffset 0xFFFF", S_WRITE_REQ, 66, 2, 0xFFFF, -1 },
	{ "write Length 11", S_WRITE_REQ, 68, 4, 11, -1 },
	{ "write Length 9", S_WRITE_REQ, 68, 4, 9, 0 },
	{ "write Length 0", S_WRITE_REQ, 68, 4, 0, 0 },
	{ "write Length 0xFFFFFFFF", S_WRITE_REQ, 68, 4, 0xFFFFFFFF, -1 },
	{ "write Offset wraps", S_WRITE_REQ, 72, 8, UINT64_MAX - 5, -1 },
	{ "write Offset max-10", S_WRITE_REQ, 72, 8, UINT64_MAX - 10, 0 },
	{ "write ChannelInfoOffset 0 + len", S_WRITE_REQ, 106, 2, 4, -1 },
	/* READ request */
	{ "read Offset wraps", S_READ_REQ, 72, 8, UINT64_MAX - 100, -1 },
	{ "read ChannelInfoLength 1 at 0", S_READ_REQ, 110, 2, 1, -1 },
	/* READ response data (DataOffset is one byte) */
	{ "read rsp DataOffset 79", S_READ_RSP, 66, 1, 79, -1 },
	{ "read rsp DataOffset 81", S_READ_RSP, 66, 1, 81, -1 },
	{ "read rsp DataOffset 0", S_READ_RSP, 66, 1, 0, -1 },
	{ "read rsp DataOffset 255", S_READ_RSP, 66, 1, 255, -1 },
	{ "read rsp DataLength 11", S_READ_RSP, 68, 4, 11, -1 },
	{ "read rsp DataLength 0", S_READ_RSP, 68, 4, 0, 0 },
	{ "read rsp DataLength max", S_READ_RSP, 68, 4, 0xFFFFFFFF, -1 },
	/* SESSION_SETUP security buffers */
	{ "sess SecBufOffset 87", S_SESS_REQ, 76, 2, 87, -1 },
	{ "sess SecBufOffset 89", S_SESS_REQ, 76, 2, 89, -1 },
	{ "sess SecBufOffset 0xFFFF", S_SESS_REQ, 76, 2, 0xFFFF, -1 },
	{ "sess SecBufLength 21", S_SESS_REQ, 78, 2, 21, -1 },
	{ "sess SecBufLength 0", S_SESS_REQ, 78, 2, 0, 0 },
	{ "sess rsp SecBufOffset 71", S_SESS_RSP, 68, 2, 71, -1 },
	{ "sess rsp SecBufOffset 0", S_SESS_RSP, 68, 2, 0, -1 },
	{ "sess rsp SecBufLength 13", S_SESS_RSP, 70, 2, 13, -1 },
	{ "sess rsp LOGON_FAILURE", S_SESS_RSP, 8, 4, 0xC000006D, -1 },
	{ "sess rsp PENDING", S_SESS_RSP, 8, 4, NT_STATUS_PENDING, -1 },
	{ "sess rsp SUCCESS", S_SESS_RSP, 8, 4, 0, 0 },
	/* TREE_CONNECT path */
	{ "tcon PathOffset odd", S_TCON_REQ, 68, 2, 73, -1 },
	{ "tcon PathLength odd", S_TCON_REQ, 70, 2, 21, -1 },
	{ "tcon PathOffset 70", S_TCON_REQ, 68, 2, 70, -1 },
	{ "tcon PathOffset 74", S_TCON_REQ, 68, 2, 74, -1 },
	{ "tcon PathLength 24", S_TCON_REQ, 70, 2, 24, -1 },
	{ "tcon PathLength 0", S_TCON_REQ, 70, 2, 0, 0 },
	{ "tcon PathLength 20", S_TCON_REQ, 70, 2, 20, 0 },
	{ "tcon lone high surrogate", S_TCON_REQ, 72, 2, 0xD800, -1 },
	{ "tcon lone low surrogate", S_TCON_REQ, 92, 2, 0xDC00, -1 },
	{ "tcon NUL in path", S_TCON_REQ, 80, 2, 0, -1 },
	{ "tcon extension flag", S_TCON_REQ, 66, 2, 0x0004, -1 },
	{ "tcon cluster reconnect flag", S_TCON_REQ, 66, 2, 0x0001, 0 },
	/* CREATE name */
	{ "create NameOffset odd", S_CREATE_REQ, 108, 2, 121, -1 },
	{ "create NameLength odd", S_CREATE_REQ, 110, 2, 23, -1 },
	{ "create NameOffset 118", S_CREATE_REQ, 108, 2, 118, -1 },
	{ "create NameOffset past end", S_CREATE_REQ, 108, 2, 304, -1 },
	{ "create NameLength past end", S_CREATE_REQ, 110, 2, 186, -1 },
	{ "create NameLength 0", S_CREATE_REQ, 110, 2, 0, 0 },
	/* CREATE context region */
	{ "create CtxOffset 152", S_CREATE_REQ, 112, 4, 152, -1 },
	{ "create CtxOffset 100", S_CREATE_REQ, 112, 4, 100, -1 },
	{ "create CtxOffset huge", S_CREATE_REQ, 112, 4, 0xFFFFFFF8u, -1 },
	{ "create CtxLength 161", S_CREATE_REQ, 116, 4, 161, -1 },
	{ "create CtxLength 159", S_CREATE_REQ, 116, 4, 159, -1 },
	{ "create CtxLength 8", S_CREATE_REQ, 116, 4, 8, -1 },
	{ "create CtxLength 0", S_CREATE_REQ, 116, 4, 0, 0 },
	/* CREATE context chain */
	{ "cctx Next 81", S_CREATE_REQ, 144, 4, 81, -1 },
	{ "cctx Next 8", S_CREATE_REQ, 144, 4, 8, -1 },
	{ "cctx Next 152", S_CREATE_REQ, 144, 4, 152, -1 },
	{ "cctx Next 160", S_CREATE_REQ, 144, 4, 160, -1 },
	{ "cctx Next huge", S_CREATE_REQ, 144, 4, 0xFFFFFFF8u, -1 },
	{ "cctx Next 72 (data cut)", S_CREATE_REQ, 144, 4, 72, -1 },
	{ "cctx Next 0 (one context)", S_CREATE_REQ, 144, 4, 0, 0 },
	{ "cctx NameOffset 8", S_CREATE_REQ, 148, 2, 8, -1 },
	{ "cctx NameOffset 78", S_CREATE_REQ, 148, 2, 78, -1 },
	{ "cctx NameOffset 0xFFFF", S_CREATE_REQ, 148, 2, 0xFFFF, -1 },
	{ "cctx NameLength 0", S_CREATE_REQ, 150, 2, 0, -1 },
	{ "cctx NameLength 65", S_CREATE_REQ, 150, 2, 65, -1 },
	{ "cctx DataOffset 16", S_CREATE_REQ, 154, 2, 16, -1 },
	{ "cctx DataOffset 29", S_CREATE_REQ, 154, 2, 29, -1 },
	{ "cctx DataOffset 0xFFFF", S_CREATE_REQ, 154, 2, 0xFFFF, -1 },
	{ "cctx DataLength 57", S_CREATE_REQ, 156, 4, 57, -1 },
	{ "cctx DataLength max", S_CREATE_REQ, 156, 4, 0xFFFFFFFF, -1 },
	{ "cctx RqLs DataLength 33", S_CREATE_REQ, 156, 4, 33, -1 },
	{ "cctx RqLs DataLength 32 (v1)", S_CREATE_REQ, 156, 4, 32, 0 },
	{ "cctx last DataLength 33", S_CREATE_REQ, 260, 4, 33, -1 },
	{ "cctx MxAc Next 16", S_CREATE_REQ, 224, 4, 16, -1 },
	{ "create rsp CtxOffset 151", S_CREATE_RSP, 144, 4, 151, -1 },
	{ "create rsp CtxLength 89", S_CREATE_RSP, 148, 4, 89, -1 },
	{ "create rsp MxAc DataLength 4", S_CREATE_RSP, 164, 4, 4, -1 },
	{ "create rsp RqLs DataLength 31", S_CREATE_RSP, 196, 4, 31, -1 },
	/* NEGOTIATE request */
	{ "neg DialectCount 0", S_NEG_REQ, 66, 2, 0, -1 },
	{ "neg DialectCount 200", S_NEG_REQ, 66, 2, 200, -1 },
	{ "neg CtxOffset unaligned", S_NEG_REQ, 92, 4, 113, -1 },
	{ "neg CtxOffset over dialects", S_NEG_REQ, 92, 4, 104, -1 },
	{ "neg CtxOffset 0", S_NEG_REQ, 92, 4, 0, -1 },
	{ "neg CtxOffset huge", S_NEG_REQ, 92, 4, 0xFFFFFFF8u, -1 },
	{ "neg CtxCount 5", S_NEG_REQ, 96, 2, 5, -1 },
	{ "neg CtxCount 0", S_NEG_REQ, 96, 2, 0, 0 },
	{ "neg CtxCount 3", S_NEG_REQ, 96, 2, 3, 0 },
	{ "neg preauth DataLength 200", S_NEG_REQ, 114, 2, 200, -1 },
	{ "neg preauth DataLength 3", S_NEG_REQ, 114, 2, 3, -1 },
	{ "neg preauth DataLength 37", S_NEG_REQ, 114, 2, 37, -1 },
	{ "neg preauth HashCount 0", S_NEG_REQ, 120, 2, 0, -1 },
	{ "neg preauth HashCount 20", S_NEG_REQ, 120, 2, 20, -1 },
	{ "neg preauth SaltLength 33", S_NEG_REQ, 122, 2, 33, -1 },
	{ "neg enc DataLength 5", S_NEG_REQ, 162, 2, 5, -1 },
	{ "neg enc CipherCount 3", S_NEG_REQ, 168, 2, 3, -1 },
	{ "neg enc CipherCount 0", S_NEG_REQ, 168, 2, 0, -1 },
	{ "neg duplicate enc ctx", S_NEG_REQ, 176, 2, 2, -1 },
	{ "neg unknown type skipped", S_NEG_REQ, 192, 2, 0x7777, 0 },
	{ "neg no 0x0311: ctx ignored", S_NEG_REQ, 108, 2, 0x0300, 0 },
	/* NEGOTIATE response */
	{ "negr SecBufOffset 127", S_NEG_RSP, 120, 2, 127, -1 },
	{ "negr SecBufOffset 0", S_NEG_RSP, 120, 2, 0, -1 },
	{ "negr SecBufLength 200", S_NEG_RSP, 122, 2, 200, -1 },
	{ "negr SecBufLength 0", S_NEG_RSP, 122, 2, 0, 0 },
	{ "negr CtxOffset unaligned", S_NEG_RSP, 124, 4, 145, -1 },
	{ "negr CtxOffset 120", S_NEG_RSP, 124, 4, 120, -1 },
	{ "negr CtxOffset huge", S_NEG_RSP, 124, 4, 0x10000, -1 },
	{ "negr CtxCount 4", S_NEG_RSP, 70, 2, 4, -1 },
	{ "negr preauth DataLength 200", S_NEG_RSP, 146, 2, 200, -1 },
	{ "negr preauth HashCount 2", S_NEG_RSP, 152, 2, 2, -1 },
	{ "negr preauth SaltLength 33", S_NEG_RSP, 154, 2, 33, -1 },
	{ "negr enc CipherCount 2", S_NEG_RSP, 200, 2, 2, -1 },
	{ "negr enc DataLength 2", S_NEG_RSP, 194, 2, 2, -1 },
	{ "negr sign DataLength 30", S_NEG_RSP, 210, 2, 30, -1 },
	/* SET_INFO buffer */
	{ "setinfo BufferOffset 95", S_SET_INFO, 72, 2, 95, -1 },
	{ "setinfo BufferOffset 97", S_SET_INFO, 72, 2, 97, -1 },
	{ "setinfo BufferLength 9", S_SET_INFO, 68, 4, 9, -1 },
	{ "setinfo BufferLength 0", S_SET_INFO, 68, 4, 0, 0 },
};

static void
patch(uint8_t *b, size_t off, int width, uint64_t v)
{
	switch (width) {
	case 1:
		b[off] = (uint8_t)v;
		break;
	case 2:
		px_put_u16(b + off, (uint16_t)v);
		break;
	case 4:
		px_put_u32(b + off, (uint32_t)v);
		break;
	default:
		px_put_u64(b + off, v);
		break;
	}
}

static void
test_mutations(void)
{
	uint8_t b[BUFSZ];
	size_t i, n;

	for (i = 0; i < NELEM(mutations); i++) {
		const struct mutation *m = &mutations[i];
		const struct sample *s = &samples[m->s];
		int rc;

		n = s->mk(b);
		/* the unmutated sample must decode, or the row proves nothing */
		UT_CHECK(dec_exact(s->dec, b, n) == 0, "%s: base", m->name);
		patch(b, m->off, m->width, m->value);
		rc = dec_exact(s->dec, b, n);
		UT_CHECK(rc == m->rc, "%s: rc %d want %d", m->name, rc, m->rc);
	}
}

/*
 * Alignment rules checked on layouts that are otherwise consistent, so
 * that nothing but the alignment can make them fail.
 */
static void
test_alignment(void)
{
	static const uint32_t nexts[2] = { 80, 76 };
	static const uint32_t ctx_offs[2] = { 112, 110 };
	uint8_t b[BUFSZ];
	struct smb2_elem e;
	struct smb2_create_req c;
	struct smb2_negotiate_req q;
	size_t o;
	int i, rc;

	/* CREATE: RqLs v2 then MxAc, Next 80 (aligned) vs 76 (not) */
	for (i = 0; i < 2; i++) {
		mk_create_req(b);
		memset(b + 144, 0, BUFSZ - 144);
		put_cctx(b + 144, nexts[i], "RqLs", 52);
		put_cctx(b + 144 + nexts[i], 0, "MxAc", 0);
		px_put_u32(b + 116, nexts[i] + 20);
		elem_of(&e, b, 144 + nexts[i] + 20);
		rc = px_smb2_create_req_decode(&e, &c);
		UT_CHECK(rc == (i == 0 ? 0 : -1), "cctx Next %u: rc %d",
		    nexts[i], rc);
		if (i == 0)
			CU_ASSERT(c.has_lease && c.has_mxac);
	}

	/* NEGOTIATE: one ENCRYPTION context at 112 (aligned) vs 110 (not) */
	for (i = 0; i < 2; i++) {
		mk_negotiate_req(b);
		memset(b + 110, 0, BUFSZ - 110);
		px_put_u32(b + 92, ctx_offs[i]);
		px_put_u16(b + 96, 1);
		o = put_negctx(b, ctx_offs[i], SMB2_ENCRYPTION_CAPABILITIES, 4);
		px_put_u16(b + o, 1);
		px_put_u16(b + o + 2, 4);
		elem_of(&e, b, o + 4);
		rc = px_smb2_negotiate_req_decode(&e, &q);
		UT_CHECK(rc == (i == 0 ? 0 : -1), "negctx at %u: rc %d",
		    ctx_offs[i], rc);
		if (i == 0)
			CU_ASSERT(q.n_ciphers == 1 && q.ciphers[0] == 4);
	}
}

/* ---- file ids per command -------------------------------------------------- */

static int
fid_exact(const uint8_t *b, size_t len, uint16_t cmd)
{
	struct smb2_elem e;
	struct smb2_fileid f;
	uint8_t *copy;
	int rc;

	copy = malloc(len > 0 ? len : 1);
	CU_ASSERT_FATAL(copy != NULL);
	memcpy(copy, b, len);
	elem_of(&e, copy, len);
	rc = px_smb2_req_file_id(&e, cmd, &f);
	free(copy);
	return rc;
}

static void
test_req_file_id(void)
{
	/* StructureSize and FileId offset in the body; fid_off 0 = none */
	static const struct {
		uint16_t ss;
		uint16_t fid_off;
	} t[SMB2_NCMDS] = {
		{ 36, 0 }, { 25, 0 }, { 4, 0 }, { 9, 0 }, { 4, 0 }, { 57, 0 },
		{ 24, 8 }, { 24, 8 }, { 49, 16 }, { 49, 16 }, { 48, 8 },
		{ 57, 8 }, { 4, 0 }, { 4, 0 }, { 33, 8 }, { 32, 8 },
		{ 41, 24 }, { 33, 16 }, { 24, 8 },
	};
	uint8_t b[BUFSZ];
	struct smb2_elem e;
	struct smb2_fileid f;
	uint16_t cmd;
	size_t n;

	for (cmd = 0; cmd < SMB2_NCMDS; cmd++) {
		int rc;

		mk_hdr(b, cmd, 0, 0);
		px_put_u16(b + 64, t[cmd].ss);
		if (t[cmd].fid_off != 0)
			put_fid(b + 64 + t[cmd].fid_off, &FID);
		n = 64 + (t[cmd].ss & ~1u);
		elem_of(&e, b, n);
		rc = px_smb2_req_file_id(&e, cmd, &f);
		UT_CHECK(rc == (t[cmd].fid_off ? 0 : -1), "%s: rc %d",
		    px_smb2_cmd_name(cmd), rc);
		if (rc == 0)
			UT_CHECK(px_fileid_eq(&f, &FID), "%s: fid",
			    px_smb2_cmd_name(cmd));
		if (t[cmd].fid_off != 0) {
			/* one byte short, and a wrong StructureSize */
			rc = fid_exact(b, n - 1, cmd);
			UT_CHECK(rc == -1, "%s: short: rc %d",
			    px_smb2_cmd_name(cmd), rc);
			px_put_u16(b + 64, t[cmd].ss + 2);
			rc = px_smb2_req_file_id(&e, cmd, &f);
			UT_CHECK(rc == -1, "%s: bad ss: rc %d",
			    px_smb2_cmd_name(cmd), rc);
		}
	}
	/* lease ack is an OPLOCK_BREAK that names no file id */
	elem_of(&e, b, mk_lease_ack(b));
	CU_ASSERT_EQUAL(px_smb2_req_file_id(&e, SMB2_OPLOCK_BREAK, &f), -1);
	elem_of(&e, b, mk_flush_req(b));
	CU_ASSERT_EQUAL(px_smb2_req_file_id(&e, 0x55, &f), -1);
}

/* ---- StructureSize table -------------------------------------------------- */

static void
test_structure_size(void)
{
	static const uint16_t req[SMB2_NCMDS] = { 36, 25, 4, 9, 4, 57, 24, 24,
	    49, 49, 48, 57, 4, 4, 33, 32, 41, 33, 24 };
	static const uint16_t rsp[SMB2_NCMDS] = { 65, 9, 4, 16, 4, 89, 60, 4,
	    17, 17, 4, 49, 0, 4, 9, 9, 9, 2, 24 };
	static const struct {
		const char *name;
		uint16_t cmd;
		bool rsp;
		uint32_t status;
		uint16_t ss;
		size_t body;    /* body bytes present */
		int rc;
	} extra[] = {
		{ "read req ss 49, body 48", SMB2_READ, false, 0, 49, 48, 0 },
		{ "read req ss 49, body 47", SMB2_READ, false, 0, 49, 47, -1 },
		{ "lease ack req 36", SMB2_OPLOCK_BREAK, false, 0, 36, 36, 0 },
		{ "oplock req 44", SMB2_OPLOCK_BREAK, false, 0, 44, 44, -1 },
		{ "lease break 44", SMB2_OPLOCK_BREAK, true, 0, 44, 44, 0 },
		{ "lease rsp 36", SMB2_OPLOCK_BREAK, true, 0, 36, 36, 0 },
		{ "oplock rsp 25", SMB2_OPLOCK_BREAK, true, 0, 25, 25, -1 },
		{ "error rsp", SMB2_CREATE, true, NT_STATUS_ACCESS_DENIED, 9,
		    9, 0 },
		{ "error rsp, body 8", SMB2_CREATE, true,
		    NT_STATUS_ACCESS_DENIED, 9, 8, 0 },
		{ "error rsp, body 7", SMB2_CREATE, true,
		    NT_STATUS_ACCESS_DENIED, 9, 7, -1 },
		{ "error with create body", SMB2_CREATE, true,
		    NT_STATUS_ACCESS_DENIED, 89, 88, -1 },
		{ "pending interim", SMB2_WRITE, true, NT_STATUS_PENDING, 9, 9,
		    0 },
		{ "pending with write body", SMB2_WRITE, true,
		    NT_STATUS_PENDING, 17, 16, -1 },
		{ "sess more processing", SMB2_SESSION_SETUP, true,
		    NT_STATUS_MORE_PROCESSING_REQUIRED, 9, 8, 0 },
		{ "read buffer overflow", SMB2_READ, true, 0x80000005u, 17, 16,
		    0 },
		{ "read buffer overflow, error body", SMB2_READ, true,
		    0x80000005u, 9, 8, 0 },
		{ "write buffer overflow body", SMB2_WRITE, true, 0x80000005u,
		    17, 16, -1 },
		{ "query_info buffer overflow", SMB2_QUERY_INFO, true,
		    0x80000005u, 9, 8, 0 },
		{ "ioctl buffer overflow", SMB2_IOCTL, true, 0x80000005u, 49,
		    48, 0 },
		{ "ioctl copychunk invalid param", SMB2_IOCTL, true,
		    NT_STATUS_INVALID_PARAMETER, 49, 48, 0 },
		{ "read end of file", SMB2_READ, true, NT_STATUS_END_OF_FILE,
		    9, 8, 0 },
		{ "read end of file, read body", SMB2_READ, true,
		    NT_STATUS_END_OF_FILE, 17, 16, -1 },
		{ "cancel rsp", SMB2_CANCEL, true, 0, 4, 4, -1 },
		{ "cancel error rsp", SMB2_CANCEL, true,
		    NT_STATUS_CANCELLED, 9, 8, 0 },
		{ "set_info rsp 2", SMB2_SET_INFO, true, 0, 2, 2, 0 },
		{ "set_info rsp 2, body 1", SMB2_SET_INFO, true, 0, 2, 1, -1 },
		{ "unknown cmd", 0x13, false, 0, 4, 4, -1 },
	};
	uint8_t b[BUFSZ];
	struct smb2_elem e;
	struct smb2_hdr h;
	uint16_t cmd;
	size_t i, body;
	int rc;

	/* every request and success response at its size, then off by 2 */
	for (cmd = 0; cmd < SMB2_NCMDS; cmd++) {
		for (i = 0; i < 2; i++) {
			uint16_t ss = i == 0 ? req[cmd] : rsp[cmd];
			uint32_t fl = i == 0 ? 0 : SMB2_FLAGS_SERVER_TO_REDIR;

			if (ss == 0)
				continue;
			mk_hdr(b, cmd, fl, 0);
			px_put_u16(b + 64, ss);
			body = ss;
			CU_ASSERT_EQUAL_FATAL(px_smb2_hdr_decode(b, 64 + body,
			    0, &h), 0);
			elem_of(&e, b, 64 + body);
			rc = px_smb2_check_structure_size(&e, &h);
			UT_CHECK(rc == 0, "%s %s: rc %d", px_smb2_cmd_name(cmd),
			    i ? "rsp" : "req", rc);
			/* shorter than the fixed part */
			elem_of(&e, b, 64 + (ss & ~1u) - 1);
			rc = px_smb2_check_structure_size(&e, &h);
			UT_CHECK(rc == -1, "%s %s short: rc %d",
			    px_smb2_cmd_name(cmd), i ? "rsp" : "req", rc);
			px_put_u16(b + 64, ss + 2);
			elem_of(&e, b, 64 + body + 2);
			rc = px_smb2_check_structure_size(&e, &h);
			UT_CHECK(rc == -1, "%s %s ss+2: rc %d",
			    px_smb2_cmd_name(cmd), i ? "rsp" : "req", rc);
		}
	}
	for (i = 0; i < NELEM(extra); i++) {
		mk_hdr(b, extra[i].cmd,
		    extra[i].rsp ? SMB2_FLAGS_SERVER_TO_REDIR : 0,
		    extra[i].status);
		px_put_u16(b + 64, extra[i].ss);
		CU_ASSERT_EQUAL_FATAL(px_smb2_hdr_decode(b, BUFSZ, 0, &h), 0);
		elem_of(&e, b, 64 + extra[i].body);
		rc = px_smb2_check_structure_size(&e, &h);
		UT_CHECK(rc == extra[i].rc, "%s: rc %d", extra[i].name, rc);
	}
	/* no body at all */
	mk_hdr(b, SMB2_ECHO, 0, 0);
	CU_ASSERT_EQUAL_FATAL(px_smb2_hdr_decode(b, 64, 0, &h), 0);
	elem_of(&e, b, 64);
	CU_ASSERT_EQUAL(px_smb2_check_structure_size(&e, &h), -1);
}

/* ---- encoders ---------------------------------------------------------------- */

static const struct smb2_hdr_out HOUT = {
	.command = 0x77,        /* body encoders set the right command */
	.credit_charge = 16,
	.credit = 256,
	.status = 0,
	.flags = SMB2_FLAGS_SIGNED,
	.message_id = 0x1000,
	.tree_id = 9,
	.session_id = 0x55AA,
};

/* Decode the header of an encoded element and check what HOUT put there. */
static void
check_hdr_out(const uint8_t *b, size_t n, uint16_t cmd, bool rsp,
    struct smb2_hdr *h)
{
	CU_ASSERT_EQUAL_FATAL(px_smb2_hdr_decode(b, n, 0, h), 0);
	CU_ASSERT_EQUAL(h->command, cmd);
	CU_ASSERT_EQUAL(h->is_response, rsp);
	CU_ASSERT_EQUAL(h->flags & ~SMB2_FLAGS_SERVER_TO_REDIR,
	    SMB2_FLAGS_SIGNED);
	CU_ASSERT_EQUAL(h->credit_charge, 16);
	CU_ASSERT_EQUAL(h->credit, 256);
	CU_ASSERT_EQUAL(h->message_id, 0x1000);
	CU_ASSERT_EQUAL(h->tree_id, 9);
	CU_ASSERT_EQUAL(h->session_id, 0x55AA);
	CU_ASSERT_EQUAL(h->next_command, 0);
	CU_ASSERT_EQUAL(px_get_u32(b + 32), 0);
	CU_ASSERT_EQUAL(h->signature[0] | h->signature[15], 0);
	CU_ASSERT_EQUAL(h->elem_len, n);
}

static void
test_hdr_encode(void)
{
	uint8_t b[64];
	struct smb2_hdr h;
	struct smb2_hdr_out o = HOUT;

	o.status = NT_STATUS_DISK_FULL;
	o.flags = SMB2_FLAGS_SERVER_TO_REDIR | SMB2_FLAGS_RELATED_OPERATIONS;
	memset(b, 0xEE, sizeof(b));
	px_smb2_hdr_encode(b, &o);
	CU_ASSERT(b[0] == 0xFE && b[1] == 'S' && b[2] == 'M' && b[3] == 'B');
	CU_ASSERT_EQUAL(px_get_u16(b + 4), 64);
	CU_ASSERT_EQUAL_FATAL(px_smb2_hdr_decode(b, 64, 0, &h), 0);
	CU_ASSERT_EQUAL(h.command, 0x77);
	CU_ASSERT_EQUAL(h.status, NT_STATUS_DISK_FULL);
	CU_ASSERT_EQUAL(h.flags, o.flags);
	CU_ASSERT_TRUE(h.is_response);
}

static void
test_encode_roundtrip(void)
{
	static const uint8_t data[] = "The quick brown fox";
	uint8_t b[BUFSZ];
	struct smb2_hdr h;
	struct smb2_elem e;
	struct smb2_write_req wq;
	struct smb2_write_rsp wr;
	struct smb2_read_req rq;
	struct smb2_read_rsp rr;
	struct smb2_flush_req fq;
	struct smb2_close_req cq;
	struct smb2_oplock_break ob;
	struct smb2_fileid f;
	struct smb2_hdr_out o;
	size_t n;

	n = px_smb2_write_req_encode(b, sizeof(b), &HOUT, &FID, 1ull << 40,
	    data, sizeof(data), SMB2_WRITEFLAG_WRITE_UNBUFFERED);
	CU_ASSERT_EQUAL_FATAL(n, 112 + sizeof(data));
	check_hdr_out(b, n, SMB2_WRITE, false, &h);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_check_structure_size(&e, &h), 0);
	CU_ASSERT_EQUAL_FATAL(px_smb2_write_req_decode(&e, &wq), 0);
	CU_ASSERT_EQUAL(wq.data_offset, 112);
	CU_ASSERT_EQUAL(wq.length, sizeof(data));
	CU_ASSERT_EQUAL(wq.offset, 1ull << 40);
	CU_ASSERT_TRUE(px_fileid_eq(&wq.file_id, &FID));
	CU_ASSERT_EQUAL(wq.flags, SMB2_WRITEFLAG_WRITE_UNBUFFERED);
	CU_ASSERT_EQUAL(wq.channel, 0);
	CU_ASSERT_EQUAL(memcmp(wq.data, data, sizeof(data)), 0);
	CU_ASSERT_EQUAL(px_smb2_req_file_id(&e, SMB2_WRITE, &f), 0);
	CU_ASSERT_TRUE(px_fileid_eq(&f, &FID));

	/* empty write keeps the pad byte: 64 + 49 */
	n = px_smb2_write_req_encode(b, sizeof(b), &HOUT, &FID, 0, NULL, 0, 0);
	CU_ASSERT_EQUAL_FATAL(n, 113);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_write_req_decode(&e, &wq), 0);
	CU_ASSERT_EQUAL(wq.length, 0);

	n = px_smb2_write_rsp_encode(b, sizeof(b), &HOUT, 65536);
	CU_ASSERT_EQUAL_FATAL(n, 81);
	check_hdr_out(b, n, SMB2_WRITE, true, &h);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_check_structure_size(&e, &h), 0);
	CU_ASSERT_EQUAL_FATAL(px_smb2_write_rsp_decode(&e, &wr), 0);
	CU_ASSERT_EQUAL(wr.count, 65536);

	n = px_smb2_read_req_encode(b, sizeof(b), &HOUT, &FID, 8192, 1u << 20,
	    1);
	CU_ASSERT_EQUAL_FATAL(n, 113);
	check_hdr_out(b, n, SMB2_READ, false, &h);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_check_structure_size(&e, &h), 0);
	CU_ASSERT_EQUAL_FATAL(px_smb2_read_req_decode(&e, &rq), 0);
	CU_ASSERT_EQUAL(rq.length, 1u << 20);
	CU_ASSERT_EQUAL(rq.offset, 8192);
	CU_ASSERT_EQUAL(rq.minimum_count, 1);
	CU_ASSERT_TRUE(px_fileid_eq(&rq.file_id, &FID));
	CU_ASSERT_EQUAL(b[66], 80);             /* Padding */

	n = px_smb2_read_rsp_encode(b, sizeof(b), &HOUT, data, sizeof(data));
	CU_ASSERT_EQUAL_FATAL(n, 80 + sizeof(data));
	check_hdr_out(b, n, SMB2_READ, true, &h);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_check_structure_size(&e, &h), 0);
	CU_ASSERT_EQUAL_FATAL(px_smb2_read_rsp_decode(&e, &rr), 0);
	CU_ASSERT_EQUAL(rr.data_len, sizeof(data));
	CU_ASSERT_PTR_EQUAL(rr.data, b + 80);
	CU_ASSERT_EQUAL(memcmp(rr.data, data, sizeof(data)), 0);

	n = px_smb2_read_rsp_encode(b, sizeof(b), &HOUT, NULL, 0);
	CU_ASSERT_EQUAL_FATAL(n, 81);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_read_rsp_decode(&e, &rr), 0);
	CU_ASSERT_EQUAL(rr.data_len, 0);

	n = px_smb2_echo_req_encode(b, sizeof(b), &HOUT);
	CU_ASSERT_EQUAL_FATAL(n, 68);
	check_hdr_out(b, n, SMB2_ECHO, false, &h);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_check_structure_size(&e, &h), 0);
	CU_ASSERT_EQUAL(px_get_u16(b + 64), 4);

	n = px_smb2_flush_req_encode(b, sizeof(b), &HOUT, &FID);
	CU_ASSERT_EQUAL_FATAL(n, 88);
	check_hdr_out(b, n, SMB2_FLUSH, false, &h);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_check_structure_size(&e, &h), 0);
	CU_ASSERT_EQUAL_FATAL(px_smb2_flush_req_decode(&e, &fq), 0);
	CU_ASSERT_TRUE(px_fileid_eq(&fq.file_id, &FID));

	n = px_smb2_close_req_encode(b, sizeof(b), &HOUT, &FID);
	CU_ASSERT_EQUAL_FATAL(n, 88);
	check_hdr_out(b, n, SMB2_CLOSE, false, &h);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_check_structure_size(&e, &h), 0);
	CU_ASSERT_EQUAL_FATAL(px_smb2_close_req_decode(&e, &cq), 0);
	CU_ASSERT_TRUE(px_fileid_eq(&cq.file_id, &FID));
	CU_ASSERT_EQUAL(cq.flags, 0);

	o = HOUT;
	o.command = SMB2_WRITE;
	o.status = NT_STATUS_DISK_FULL;
	n = px_smb2_error_rsp_encode(b, sizeof(b), &o);
	CU_ASSERT_EQUAL_FATAL(n, 73);
	check_hdr_out(b, n, SMB2_WRITE, true, &h);
	CU_ASSERT_EQUAL(h.status, NT_STATUS_DISK_FULL);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_check_structure_size(&e, &h), 0);
	CU_ASSERT_EQUAL(px_get_u16(b + 64), 9);
	CU_ASSERT_EQUAL(px_get_u32(b + 68), 0);         /* ByteCount */
	/* an error body is not a WRITE response */
	CU_ASSERT_EQUAL(px_smb2_write_rsp_decode(&e, &wr), -1);

	n = px_smb2_oplock_ack_encode(b, sizeof(b), &HOUT, &FID,
	    SMB2_OPLOCK_LEVEL_II);
	CU_ASSERT_EQUAL_FATAL(n, 88);
	check_hdr_out(b, n, SMB2_OPLOCK_BREAK, false, &h);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_check_structure_size(&e, &h), 0);
	CU_ASSERT_EQUAL_FATAL(px_smb2_oplock_break_decode(&e, &ob), 0);
	CU_ASSERT_EQUAL(ob.kind, SMB2_BREAK_OPLOCK);
	CU_ASSERT_EQUAL(ob.oplock_level, SMB2_OPLOCK_LEVEL_II);
	CU_ASSERT_TRUE(px_fileid_eq(&ob.file_id, &FID));
	CU_ASSERT_EQUAL(px_smb2_req_file_id(&e, SMB2_OPLOCK_BREAK, &f), 0);
}

/* Encoders given too little room return 0 and write nothing past cap. */
enum enc_id { E_WRITE_REQ, E_WRITE_RSP, E_READ_REQ, E_READ_RSP, E_ECHO,
    E_FLUSH, E_ERROR, E_OPLOCK_ACK, E_WRITE_EMPTY, E_READ_RSP_EMPTY,
    E_CLOSE, E_N };

static size_t
enc_by_id(enum enc_id id, uint8_t *dst, size_t cap)
{
	static const uint8_t data[40] = { 1, 2, 3 };

	switch (id) {
	case E_WRITE_REQ:
		return px_smb2_write_req_encode(dst, cap, &HOUT, &FID, 0, data,
		    sizeof(data), 0);
	case E_WRITE_EMPTY:
		return px_smb2_write_req_encode(dst, cap, &HOUT, &FID, 0, NULL,
		    0, 0);
	case E_WRITE_RSP:
		return px_smb2_write_rsp_encode(dst, cap, &HOUT, 1);
	case E_READ_REQ:
		return px_smb2_read_req_encode(dst, cap, &HOUT, &FID, 0, 1, 0);
	case E_READ_RSP:
		return px_smb2_read_rsp_encode(dst, cap, &HOUT, data,
		    sizeof(data));
	case E_READ_RSP_EMPTY:
		return px_smb2_read_rsp_encode(dst, cap, &HOUT, NULL, 0);
	case E_ECHO:
		return px_smb2_echo_req_encode(dst, cap, &HOUT);
	case E_FLUSH:
		return px_smb2_flush_req_encode(dst, cap, &HOUT, &FID);
	case E_CLOSE:
		return px_smb2_close_req_encode(dst, cap, &HOUT, &FID);
	case E_ERROR:
		return px_smb2_error_rsp_encode(dst, cap, &HOUT);
	case E_OPLOCK_ACK:
		return px_smb2_oplock_ack_encode(dst, cap, &HOUT, &FID, 0);
	case E_N:
		break;
	}
	return 0;
}

static void
test_encode_cap(void)
{
	static const size_t want[E_N] = {
		[E_WRITE_REQ] = 152, [E_WRITE_RSP] = 81, [E_READ_REQ] = 113,
		[E_READ_RSP] = 120, [E_ECHO] = 68, [E_FLUSH] = 88,
		[E_ERROR] = 73, [E_OPLOCK_ACK] = 88, [E_WRITE_EMPTY] = 113,
		[E_READ_RSP_EMPTY] = 81, [E_CLOSE] = 88,
	};
	uint8_t canary[BUFSZ];
	int id;
	size_t cap, i, n;

	for (id = 0; id < E_N; id++) {
		for (cap = 0; cap <= want[id]; cap++) {
			/* exact-size heap buffer for ASan, canary for the rest */
			uint8_t *dst = malloc(cap + 32);

			CU_ASSERT_FATAL(dst != NULL);
			memset(dst, 0xAB, cap + 32);
			n = enc_by_id((enum enc_id)id, dst, cap);
			UT_CHECK(n == (cap == want[id] ? want[id] : 0),
			    "encoder %d cap %zu: %zu", id, cap, n);
			for (i = cap; i < cap + 32; i++)
				if (dst[i] != 0xAB)
					break;
			UT_CHECK(i == cap + 32, "encoder %d cap %zu wrote "
			    "past cap at %zu", id, cap, i);
			free(dst);
		}
	}
	memset(canary, 0, sizeof(canary));
	CU_ASSERT_EQUAL(px_smb2_echo_req_encode(NULL, 100, &HOUT), 0);
	CU_ASSERT_EQUAL(px_smb2_flush_req_encode(canary, sizeof(canary), &HOUT,
	    NULL), 0);
	CU_ASSERT_EQUAL(px_smb2_write_req_encode(canary, sizeof(canary), &HOUT,
	    &FID, 0, NULL, 5, 0), 0);
}

/* ---- UTF-16LE -> UTF-8 ------------------------------------------------------ */

static void
test_utf16(void)
{
	static const struct {
		const char *name;
		uint8_t src[16];
		size_t len;
		size_t cap;
		int rc;
		const char *out;
	} cases[] = {
		{ "empty", { 0 }, 0, 1, 0, "" },
		{ "ascii", { 'a', 0, 'B', 0, '\\', 0 }, 6, 16, 0, "aB\\" },
		{ "U+007F", { 0x7F, 0 }, 2, 2, 0, "\x7F" },
		{ "U+0080", { 0x80, 0 }, 2, 3, 0, "\xC2\x80" },
		{ "e acute", { 0xE9, 0x00 }, 2, 3, 0, "\xC3\xA9" },
		{ "U+07FF", { 0xFF, 0x07 }, 2, 3, 0, "\xDF\xBF" },
		{ "U+0800", { 0x00, 0x08 }, 2, 4, 0, "\xE0\xA0\x80" },
		{ "euro", { 0xAC, 0x20 }, 2, 4, 0, "\xE2\x82\xAC" },
		{ "U+FFFF", { 0xFF, 0xFF }, 2, 4, 0, "\xEF\xBF\xBF" },
		{ "U+1F600 pair", { 0x3D, 0xD8, 0x00, 0xDE }, 4, 5, 0,
		    "\xF0\x9F\x98\x80" },
		{ "U+10000 pair", { 0x00, 0xD8, 0x00, 0xDC }, 4, 5, 0,
		    "\xF0\x90\x80\x80" },
		{ "U+10FFFF pair", { 0xFF, 0xDB, 0xFF, 0xDF }, 4, 5, 0,
		    "\xF4\x8F\xBF\xBF" },
		{ "pair then ascii", { 0x3D, 0xD8, 0x00, 0xDE, 'x', 0 }, 6, 6,
		    0, "\xF0\x9F\x98\x80x" },
		{ "lone high at end", { 'a', 0, 0x3D, 0xD8 }, 4, 16, -1, "" },
		{ "high + ascii", { 0x3D, 0xD8, 'a', 0 }, 4, 16, -1, "" },
		{ "high + high", { 0x3D, 0xD8, 0x3D, 0xD8 }, 4, 16, -1, "" },
		{ "lone low", { 0x00, 0xDE }, 2, 16, -1, "" },
		{ "low + high (reversed)", { 0x00, 0xDE, 0x3D, 0xD8 }, 4, 16,
		    -1, "" },
		{ "NUL", { 'a', 0, 0, 0 }, 4, 16, -1, "" },
		{ "odd length", { 'a', 0, 'b' }, 3, 16, -1, "" },
		{ "cap exact", { 'a', 0, 'b', 0 }, 4, 3, 0, "ab" },
		{ "cap one short", { 'a', 0, 'b', 0 }, 4, 2, -1, "" },
		{ "cap short in 3-byte seq", { 0xAC, 0x20 }, 2, 3, -1, "" },
		{ "cap short in 4-byte seq", { 0x3D, 0xD8, 0x00, 0xDE }, 4, 4,
		    -1, "" },
		{ "cap 0", { 'a', 0 }, 2, 0, -1, NULL },
	};
	char out[32];
	size_t i;

	for (i = 0; i < NELEM(cases); i++) {
		uint8_t *src = malloc(cases[i].len ? cases[i].len : 1);
		char *dst = malloc(cases[i].cap + 1);
		int rc;

		CU_ASSERT_FATAL(src != NULL && dst != NULL);
		memcpy(src, cases[i].src, cases[i].len);
		memset(dst, 'Z', cases[i].cap + 1);
		rc = px_utf16le_to_utf8(src, cases[i].len, dst, cases[i].cap);
		UT_CHECK(rc == cases[i].rc, "%s: rc %d", cases[i].name, rc);
		if (cases[i].out != NULL)
			UT_CHECK(strcmp(dst, cases[i].out) == 0, "%s: output",
			    cases[i].name);
		UT_CHECK(dst[cases[i].cap] == 'Z', "%s: wrote past cap",
		    cases[i].name);
		free(src);
		free(dst);
	}
	CU_ASSERT_EQUAL(px_utf16le_to_utf8(NULL, 0, out, sizeof(out)), 0);
	CU_ASSERT_EQUAL(px_utf16le_to_utf8(NULL, 2, out, sizeof(out)), -1);
}

/* A CREATE name that fills the 1024-byte field exactly, and one more. */
static void
test_create_long_name(void)
{
	static uint8_t b[4096];
	struct smb2_elem e;
	struct smb2_create_req q;
	size_t i, nchars;

	for (nchars = 1022; nchars <= 1024; nchars++) {
		memset(b, 0, sizeof(b));
		mk_hdr(b, SMB2_CREATE, 0, 0);
		px_put_u16(b + 64, 57);
		px_put_u16(b + 108, 120);
		px_put_u16(b + 110, (uint16_t)(2 * nchars));
		for (i = 0; i < nchars; i++)
			px_put_u16(b + 120 + 2 * i, 'x');
		elem_of(&e, b, 120 + 2 * nchars);
		UT_CHECK(px_smb2_create_req_decode(&e, &q) ==
		    (nchars < 1024 ? 0 : -1), "%zu chars", nchars);
	}
}

/* ---- CREATE contexts: rewrite, restore (cctx.c) -------------------------- */

/* Walk a chain and list its tags ("RqLs,MxAc"); checks every context starts
 * 8-byte aligned relative to the header.  -1 if malformed. */
static int
chain_tags(const uint8_t *hdr, size_t off, size_t len, char *out, size_t cap)
{
	struct smb2_cctx_iter it;
	struct smb2_cctx_view v;
	int rc;

	out[0] = '\0';
	px_smb2_cctx_iter(&it, len ? hdr + off : NULL, len);
	while ((rc = px_smb2_cctx_next(&it, &v)) == 1) {
		if ((size_t)(v.start - hdr) % 8 != 0)
			return -1;
		if (out[0] != '\0')
			strncat(out, ",", cap - strlen(out) - 1);
		strncat(out, (const char *)v.name,
		    v.name_len < cap - strlen(out) - 1 ? v.name_len :
		    cap - strlen(out) - 1);
	}
	return rc;
}

static void
test_cctx_request_rewrite(void)
{
	uint8_t b[BUFSZ], o[BUFSZ], lease[SMB2_LEASE_V2_LEN];
	static const uint8_t key2[16] = { 0xA5, 0xA5, 0x01 };
	struct smb2_cctx add[2];
	struct smb2_elem e, eo;
	struct smb2_create_req q;
	char tags[128];
	size_t n, need, i;

	/* the client's three contexts, then QFid (no data) and a v2 lease */
	n = mk_create_req(b);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_lease_ctx_encode(lease, sizeof(lease), key2,
	    SMB2_LEASE_READ | SMB2_LEASE_WRITE, true), SMB2_LEASE_V2_LEN);
	CU_ASSERT_EQUAL(px_smb2_lease_ctx_encode(lease, 51, key2, 1, true), 0);
	memcpy(add[0].tag, "QFid", 4);
	add[0].data = NULL;
	add[0].len = 0;
	memcpy(add[1].tag, "RqLx", 4);  /* a second lease would be refused */
	add[1].data = lease;
	add[1].len = SMB2_LEASE_V2_LEN;
	need = px_smb2_create_req_rewrite(&e, -1, add, 2, NULL, 0);
	/* 304 - trailing padding 0 + QFid: 8-aligned 304 + 20, then RqLx at
	 * 328: 24 + 52 = 404 */
	CU_ASSERT_EQUAL(need, 404);
	CU_ASSERT_EQUAL(px_smb2_create_req_rewrite(&e, -1, add, 2, o, need - 1), 0);
	memset(o, 0xEE, sizeof(o));
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_req_rewrite(&e, -1, add, 2, o,
	    sizeof(o)), need);
	CU_ASSERT_EQUAL(o[need], 0xEE);
	CU_ASSERT_EQUAL(memcmp(o, b, 64 + 44), 0);      /* header, fixed body */
	CU_ASSERT_EQUAL(px_get_u16(o + 108), 120);
	CU_ASSERT_EQUAL(memcmp(o + 120, b + 120, 24), 0);
	CU_ASSERT_EQUAL(px_get_u32(o + 112), 144);
	CU_ASSERT_EQUAL(px_get_u32(o + 116), need - 144);
	CU_ASSERT_EQUAL(chain_tags(o, 144, need - 144, tags, sizeof(tags)), 0);
	CU_ASSERT_STRING_EQUAL(tags, "RqLs,MxAc,DH2Q,QFid,RqLx");
	elem_of(&eo, o, need);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_req_decode(&eo, &q), 0);
	CU_ASSERT_STRING_EQUAL(q.name, "dir\\file.txt");
	CU_ASSERT_TRUE(q.has_lease && q.has_mxac && q.has_durable);
	CU_ASSERT_EQUAL(memcmp(q.lease_key, LEASE_KEY, 16), 0); /* client's */
	{
		const uint8_t *d;
		uint32_t dl;

		CU_ASSERT_EQUAL(px_smb2_create_ctx_find(&eo, false, "RqLx", &d,
		    &dl), 0);
		CU_ASSERT_EQUAL(dl, SMB2_LEASE_V2_LEN);
		CU_ASSERT_EQUAL(memcmp(d, key2, 16), 0);
		CU_ASSERT_EQUAL(px_get_u32(d + 16), 5);
		CU_ASSERT_EQUAL(px_smb2_create_ctx_find(&eo, false, "QFid", &d,
		    &dl), 0);
		CU_ASSERT_EQUAL(dl, 0);
		CU_ASSERT_PTR_NULL(d);
		CU_ASSERT_EQUAL(px_smb2_create_ctx_find(&eo, false, "DH2C", &d,
		    &dl), -1);
		/* the DH2Q data travelled with its context */
		CU_ASSERT_EQUAL(px_smb2_create_ctx_find(&eo, false, "DH2Q", &d,
		    &dl), 0);
		CU_ASSERT_EQUAL(dl, 32);
		CU_ASSERT_EQUAL(px_get_u32(d), 60000);
	}

	/* no contexts, a 10-byte name: lease context at align8(130) = 136,
	 * RequestedOplockLevel set to LEASE */
	memset(b, 0, sizeof(b));
	mk_hdr(b, SMB2_CREATE, 0, 0);
	px_put_u16(b + 64, 57);
	px_put_u16(b + 108, 120);
	px_put_u16(b + 110, (uint16_t)put_u16str(b + 120, "a.txt"));
	elem_of(&e, b, 130);
	add[0] = add[1];
	memcpy(add[0].tag, "RqLs", 4);
	n = px_smb2_create_req_rewrite(&e, SMB2_OPLOCK_LEVEL_LEASE, add, 1, o,
	    sizeof(o));
	CU_ASSERT_EQUAL(n, 136 + 24 + 52);
	elem_of(&eo, o, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_req_decode(&eo, &q), 0);
	CU_ASSERT_EQUAL(q.requested_oplock, SMB2_OPLOCK_LEVEL_LEASE);
	CU_ASSERT_TRUE(q.has_lease);
	CU_ASSERT_EQUAL(memcmp(q.lease_key, key2, 16), 0);
	CU_ASSERT_EQUAL(q.lease_state, 5);
	CU_ASSERT_STRING_EQUAL(q.name, "a.txt");
	CU_ASSERT_EQUAL(px_get_u32(o + 112), 136);
	CU_ASSERT_EQUAL(o[130], 0);                     /* padding zeroed */

	/* a name, nothing added, oplock changed: no padding after the name
	 * (nothing follows it), not a byte more */
	memset(o, 0xEE, sizeof(o));
	CU_ASSERT_EQUAL(px_smb2_create_req_rewrite(&e, SMB2_OPLOCK_LEVEL_EXCLUSIVE,
	    NULL, 0, NULL, 0), 130);
	CU_ASSERT_EQUAL(px_smb2_create_req_rewrite(&e, SMB2_OPLOCK_LEVEL_EXCLUSIVE,
	    NULL, 0, o, 130), 130);
	CU_ASSERT_EQUAL(o[130], 0xEE);
	CU_ASSERT_EQUAL(o[67], SMB2_OPLOCK_LEVEL_EXCLUSIVE);
	CU_ASSERT_EQUAL(px_get_u32(o + 112), 0);
	CU_ASSERT_EQUAL(px_get_u32(o + 116), 0);
	elem_of(&eo, o, 130);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_req_decode(&eo, &q), 0);
	CU_ASSERT_STRING_EQUAL(q.name, "a.txt");
	CU_ASSERT_EQUAL(q.requested_oplock, SMB2_OPLOCK_LEVEL_EXCLUSIVE);
	/* empty name, nothing added, oplock changed: the one Buffer byte */
	px_put_u16(b + 110, 0);
	elem_of(&e, b, 120);
	CU_ASSERT_EQUAL(px_smb2_create_req_rewrite(&e, SMB2_OPLOCK_LEVEL_II,
	    NULL, 0, o, sizeof(o)), 121);
	CU_ASSERT_EQUAL(o[67], SMB2_OPLOCK_LEVEL_II);
	elem_of(&eo, o, 121);
	CU_ASSERT_EQUAL(px_smb2_create_req_decode(&eo, &q), 0);

	/* malformed inputs are refused, at every truncation no crash */
	n = mk_create_req(b);
	px_put_u16(b + 64, 56);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_create_req_rewrite(&e, -1, add, 1, NULL, 0), 0);
	n = mk_create_req(b);
	px_put_u32(b + 144, 81);                        /* Next unaligned */
	CU_ASSERT_EQUAL(px_smb2_create_req_rewrite(&e, -1, add, 1, NULL, 0), 0);
	/* the same chain, whole, moved 4 bytes on: its contexts are not
	 * 8-byte aligned (MS-SMB2 2.2.13), so the request is not rewritten */
	n = mk_create_req(b);
	elem_of(&e, b, n);
	CU_ASSERT_NOT_EQUAL(px_smb2_create_req_rewrite(&e, -1, add, 1, NULL, 0), 0);
	{
		uint32_t coff = px_get_u32(b + 112), clen = px_get_u32(b + 116);

		CU_ASSERT_EQUAL_FATAL(coff + clen, n);
		memmove(b + coff + 4, b + coff, clen);
		px_put_u32(b + 112, coff + 4);
		elem_of(&e, b, n + 4);
		CU_ASSERT_EQUAL(px_smb2_create_req_rewrite(&e, -1, add, 1, NULL,
		    0), 0);
	}
	n = mk_create_req(b);
	for (i = 0; i < n; i++) {
		size_t r;

		elem_of(&e, b, i);
		r = px_smb2_create_req_rewrite(&e, -1, add, 1, o, sizeof(o));
		UT_CHECK(r == 0, "truncated to %zu: %zu", i, r);
	}
	/* a context larger than a context can say is refused */
	add[0].len = 0x10000;
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_create_req_rewrite(&e, -1, add, 1, NULL, 0), 0);
}

static void
test_cctx_response_restore(void)
{
	uint8_t b[BUFSZ], o[BUFSZ];
	static const char rqls[][4] = { { 'R', 'q', 'L', 's' } };
	static const char both[][4] = { { 'R', 'q', 'L', 's' },
	    { 'M', 'x', 'A', 'c' } };
	static const char mxac[][4] = { { 'M', 'x', 'A', 'c' } };
	struct smb2_elem e, eo;
	struct smb2_create_rsp r;
	char tags[64];
	size_t n, i;

	n = mk_create_rsp(b);
	elem_of(&e, b, n);
	/* nothing stripped, nothing changed: the same bytes */
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_rsp_restore(&e, -1, NULL, 0, o,
	    sizeof(o)), n);
	CU_ASSERT_EQUAL(memcmp(o, b, n), 0);
	/* smbaccel's lease removed, OplockLevel restored to none */
	n = px_smb2_create_rsp_restore(&e, SMB2_OPLOCK_LEVEL_NONE, rqls, 1, o,
	    sizeof(o));
	CU_ASSERT_EQUAL(n, 152 + 32);
	CU_ASSERT_EQUAL(px_smb2_create_rsp_restore(&e, 0, rqls, 1, o, n - 1), 0);
	CU_ASSERT_EQUAL(px_smb2_create_rsp_restore(&e, 0, rqls, 1, NULL, 0), n);
	CU_ASSERT_EQUAL(memcmp(o, b, 66), 0);
	CU_ASSERT_EQUAL(memcmp(o + 67, b + 67, 144 - 67), 0);
	CU_ASSERT_EQUAL(o[66], SMB2_OPLOCK_LEVEL_NONE);
	elem_of(&eo, o, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_rsp_decode(&eo, &r), 0);
	CU_ASSERT_FALSE(r.has_lease);
	CU_ASSERT_TRUE(r.has_mxac);
	CU_ASSERT_EQUAL(r.maximal_access, 0x001F01FF);
	CU_ASSERT_EQUAL(r.end_of_file, 12345);
	CU_ASSERT_TRUE(px_fileid_eq(&r.file_id, &FID));
	CU_ASSERT_EQUAL(px_get_u32(o + 144), 152);
	CU_ASSERT_EQUAL(px_get_u32(o + 148), 32);
	CU_ASSERT_EQUAL(px_get_u32(o + 152), 0);        /* last: Next 0 */
	/* both removed: the fixed body only, offsets 0 */
	n = px_smb2_create_rsp_restore(&e, 0, both, 2, o, sizeof(o));
	CU_ASSERT_EQUAL(n, 152);
	CU_ASSERT_EQUAL(px_get_u32(o + 144), 0);
	CU_ASSERT_EQUAL(px_get_u32(o + 148), 0);
	elem_of(&eo, o, n);
	CU_ASSERT_EQUAL(px_smb2_create_rsp_decode(&eo, &r), 0);
	CU_ASSERT_FALSE(r.has_lease || r.has_mxac);
	/* the first removed: RqLs moves to 152, unpadded */
	n = px_smb2_create_rsp_restore(&e, -1, mxac, 1, o, sizeof(o));
	CU_ASSERT_EQUAL(n, 152 + 56);
	CU_ASSERT_EQUAL(o[66], SMB2_OPLOCK_LEVEL_LEASE);
	CU_ASSERT_EQUAL(chain_tags(o, 152, 56, tags, sizeof(tags)), 0);
	CU_ASSERT_STRING_EQUAL(tags, "RqLs");
	elem_of(&eo, o, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_create_rsp_decode(&eo, &r), 0);
	CU_ASSERT_TRUE(r.has_lease && !r.has_mxac);
	CU_ASSERT_EQUAL(r.lease_state, SMB2_LEASE_READ | SMB2_LEASE_WRITE);
	{
		const uint8_t *d;
		uint32_t dl;

		CU_ASSERT_EQUAL(px_smb2_create_ctx_find(&e, true, "MxAc", &d,
		    &dl), 0);
		CU_ASSERT_EQUAL(dl, 8);
		CU_ASSERT_EQUAL(px_get_u32(d + 4), 0x001F01FF);
	}
	/* a response without contexts stays as it is */
	n = mk_create_rsp(b);
	px_put_u32(b + 144, 0);
	px_put_u32(b + 148, 0);
	elem_of(&e, b, 152);
	CU_ASSERT_EQUAL(px_smb2_create_rsp_restore(&e, -1, rqls, 1, o,
	    sizeof(o)), 152);
	CU_ASSERT_EQUAL(memcmp(o, b, 152), 0);
	/* malformed: a chain past the end, a lying Next, truncation */
	n = mk_create_rsp(b);
	px_put_u32(b + 148, 89);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL(px_smb2_create_rsp_restore(&e, 0, rqls, 1, NULL, 0), 0);
	n = mk_create_rsp(b);
	px_put_u32(b + 152, 200);
	CU_ASSERT_EQUAL(px_smb2_create_rsp_restore(&e, 0, rqls, 1, NULL, 0), 0);
	n = mk_create_rsp(b);
	for (i = 0; i < n; i++) {
		elem_of(&e, b, i);
		UT_CHECK(px_smb2_create_rsp_restore(&e, 0, rqls, 1, o,
		    sizeof(o)) == 0, "truncated to %zu", i);
	}
}

/* FSCTL_SRV_COPYCHUNK request: input at 120, the key (bytes 0xA0..),
 * ChunkCount n, then n chunks [i * 4096 -> i * 4096 + 1, +4096). */
static size_t
mk_copychunk_req(uint8_t *b, uint32_t n, uint32_t count_said)
{
	uint8_t *p = b + 64, *in = b + 120;
	uint32_t i, len = SMB2_RESUME_KEY_LEN + 8 + n * 24;

	mk_ioctl_req(b);
	px_put_u32(p + 4, FSCTL_SRV_COPYCHUNK);
	put_fid(p + 8, &FID);
	px_put_u32(p + 28, len);        /* InputCount */
	px_put_u32(p + 36, 120 + len);  /* OutputOffset */
	for (i = 0; i < SMB2_RESUME_KEY_LEN; i++)
		in[i] = (uint8_t)(0xA0 + i);
	px_put_u32(in + SMB2_RESUME_KEY_LEN, count_said);
	for (i = 0; i < n; i++) {
		uint8_t *c = in + SMB2_RESUME_KEY_LEN + 8 + i * 24;

		px_put_u64(c, (uint64_t)i * 4096);
		px_put_u64(c + 8, (uint64_t)i * 4096 + 1);
		px_put_u32(c + 16, 4096);
	}
	return 120 + len;
}

static void
test_copychunk(void)
{
	uint8_t b[BUFSZ], out[12] = { 1, 2, 3 };
	struct smb2_elem e;
	struct smb2_ioctl_req io;
	struct smb2_ioctl_rsp rsp;
	struct smb2_copychunk cc;
	struct smb2_hdr_out h;
	uint64_t so, to;
	uint32_t len;
	size_t n;

	n = mk_copychunk_req(b, 2, 2);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_ioctl_req_decode(&e, &io), 0);
	CU_ASSERT_EQUAL(io.ctl_code, FSCTL_SRV_COPYCHUNK);
	CU_ASSERT_PTR_EQUAL(io.in, e.hdr + 120);
	CU_ASSERT_EQUAL(io.in_len, SMB2_RESUME_KEY_LEN + 8 + 48);
	CU_ASSERT_EQUAL_FATAL(px_smb2_copychunk_decode(io.in, io.in_len, &cc),
	    0);
	CU_ASSERT_EQUAL(cc.count, 2);
	CU_ASSERT_EQUAL(cc.key[0], 0xA0);
	CU_ASSERT_EQUAL(cc.key[23], 0xA0 + 23);
	px_smb2_copychunk_chunk(&cc, 1, &so, &to, &len);
	CU_ASSERT_EQUAL(so, 4096);
	CU_ASSERT_EQUAL(to, 4097);
	CU_ASSERT_EQUAL(len, 4096);
	/* a count the buffer does not hold; a buffer shorter than the key */
	n = mk_copychunk_req(b, 2, 3);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_ioctl_req_decode(&e, &io), 0);
	CU_ASSERT_EQUAL(px_smb2_copychunk_decode(io.in, io.in_len, &cc), -1);
	CU_ASSERT_EQUAL(px_smb2_copychunk_decode(io.in, SMB2_RESUME_KEY_LEN + 7,
	    &cc), -1);
	memset(b, 0, 40);
	CU_ASSERT_EQUAL(px_smb2_copychunk_decode(b, 40, &cc), 0);
	CU_ASSERT_EQUAL(cc.count, 0);
	px_put_u32(b + SMB2_RESUME_KEY_LEN, 0x80000000u);
	CU_ASSERT_EQUAL(px_smb2_copychunk_decode(b, 40, &cc), -1);
	/* an input buffer past the element: the request does not decode */
	n = mk_copychunk_req(b, 1, 1);
	elem_of(&e, b, n - 1);
	CU_ASSERT_EQUAL(px_smb2_ioctl_req_decode(&e, &io), -1);

	/* the answer smbaccel gives a copy it refuses, and its decoding */
	memset(&h, 0, sizeof(h));
	h.message_id = 9;
	h.status = 0xC0000054u;
	n = px_smb2_ioctl_rsp_encode(b, sizeof(b), &h, FSCTL_SRV_COPYCHUNK,
	    &FID, out, sizeof(out));
	CU_ASSERT_EQUAL_FATAL(n, 64 + 48 + 12);
	CU_ASSERT_EQUAL(px_smb2_ioctl_rsp_encode(b, n - 1, &h,
	    FSCTL_SRV_COPYCHUNK, &FID, out, sizeof(out)), 0);
	CU_ASSERT_EQUAL(px_get_u16(b + 64), 49);
	CU_ASSERT_EQUAL(px_get_u32(b + 64 + 32), 112);
	CU_ASSERT_EQUAL(px_get_u32(b + 64 + 36), 12);
	CU_ASSERT_EQUAL(memcmp(b + 112, out, 12), 0);
	CU_ASSERT_NOT_EQUAL(px_get_u32(b + 16) & SMB2_FLAGS_SERVER_TO_REDIR, 0);
	elem_of(&e, b, n);
	/* only a SUCCESS answer is read */
	CU_ASSERT_EQUAL(px_smb2_ioctl_rsp_decode(&e, &rsp), -1);
	px_put_u32(b + 8, 0);
	CU_ASSERT_EQUAL_FATAL(px_smb2_ioctl_rsp_decode(&e, &rsp), 0);
	CU_ASSERT_EQUAL(rsp.ctl_code, FSCTL_SRV_COPYCHUNK);
	CU_ASSERT_TRUE(px_fileid_eq(&rsp.file_id, &FID));
	CU_ASSERT_EQUAL(rsp.out_len, 12);
	CU_ASSERT_PTR_EQUAL(rsp.out, e.hdr + 112);
	/* an output count past the element */
	px_put_u32(b + 64 + 36, 13);
	CU_ASSERT_EQUAL(px_smb2_ioctl_rsp_decode(&e, &rsp), -1);
}

static void
test_lease_ack_encode(void)
{
	uint8_t b[BUFSZ];
	struct smb2_hdr_out h;
	struct smb2_oplock_break ob;
	struct smb2_elem e;
	size_t n;

	memset(&h, 0, sizeof(h));
	h.message_id = 77;
	h.credit_charge = 1;
	n = px_smb2_lease_ack_encode(b, sizeof(b), &h, LEASE_KEY,
	    SMB2_LEASE_READ);
	CU_ASSERT_EQUAL_FATAL(n, 100);
	CU_ASSERT_EQUAL(px_smb2_lease_ack_encode(b, 99, &h, LEASE_KEY, 1), 0);
	elem_of(&e, b, n);
	CU_ASSERT_EQUAL_FATAL(px_smb2_oplock_break_decode(&e, &ob), 0);
	CU_ASSERT_EQUAL(ob.kind, SMB2_BREAK_LEASE_ACK);
	CU_ASSERT_EQUAL(memcmp(ob.lease_key, LEASE_KEY, 16), 0);
	CU_ASSERT_EQUAL(ob.new_state, SMB2_LEASE_READ);
	CU_ASSERT_EQUAL(px_get_u16(b + 12), SMB2_OPLOCK_BREAK);
	CU_ASSERT_EQUAL(px_get_u32(b + 16) & SMB2_FLAGS_SERVER_TO_REDIR, 0);
}

void
ut_register_wire(void)
{
	CU_pSuite s;

	s = CU_add_suite("wire", NULL, NULL);
	if (s == NULL)
		return;
	CU_add_test(s, "reader", test_reader);
	CU_add_test(s, "LE helpers", test_le_helpers);
	CU_add_test(s, "command names", test_cmd_name);
	CU_add_test(s, "file ids", test_fileid);
	CU_add_test(s, "header valid", test_hdr_valid);
	CU_add_test(s, "header truncated", test_hdr_truncated);
	CU_add_test(s, "header bad fields", test_hdr_bad);
	CU_add_test(s, "compound of 3, related", test_compound3);
	CU_add_test(s, "negotiate valid", test_negotiate_valid);
	CU_add_test(s, "negotiate compression", test_negotiate_compression);
	CU_add_test(s, "session/tree connect valid", test_session_tcon_valid);
	CU_add_test(s, "create valid", test_create_valid);
	CU_add_test(s, "rename info", test_rename_info);
	CU_add_test(s, "rename and delete info classes, data-changing FSCTLs",
	    test_info_classes);
	CU_add_test(s, "close/flush/read/write/set_info valid", test_io_valid);
	CU_add_test(s, "copychunk request and answer", test_copychunk);
	CU_add_test(s, "oplock break kinds", test_oplock_break_kinds);
	CU_add_test(s, "lock request", test_lock_req);
	CU_add_test(s, "truncated at every length",
	    test_truncated_every_length);
	CU_add_test(s, "oversized", test_oversized);
	CU_add_test(s, "lying lengths and offsets", test_mutations);
	CU_add_test(s, "alignment", test_alignment);
	CU_add_test(s, "request file ids", test_req_file_id);
	CU_add_test(s, "structure sizes", test_structure_size);
	CU_add_test(s, "header encode", test_hdr_encode);
	CU_add_test(s, "encoder round trips", test_encode_roundtrip);
	CU_add_test(s, "encoder capacity", test_encode_cap);
	CU_add_test(s, "utf16", test_utf16);
	CU_add_test(s, "create long name", test_create_long_name);
	CU_add_test(s, "create request rewrite", test_cctx_request_rewrite);
	CU_add_test(s, "create answer restore", test_cctx_response_restore);
	CU_add_test(s, "lease ack encode", test_lease_ack_encode);
}
