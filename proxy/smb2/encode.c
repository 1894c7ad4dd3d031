/*
 * encode.c - encoders for the messages smbaccel builds itself: synthesized
 * responses (WRITE, READ, error), proxy-originated requests (WRITE, READ,
 * ECHO, FLUSH, CLOSE, oplock/lease break acknowledgements).  Each checks that the
 * whole message fits in the caller's buffer and returns its length, or 0.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proxy/smb2/smb2.h"

/* ---- encoders ------------------------------------------------------------- */

/*
 * MS-SMB2 2.2.1.2 (sync header).  NextCommand, Reserved (ProcessId) and the
 * signature are zero; the caller patches NextCommand when chaining and signs
 * afterwards.  h->flags is written as given, so an ASYNC flag would make
 * bytes 32..39 read as an AsyncId of (tree_id << 32): do not set it here.
 */
void
px_smb2_hdr_encode(uint8_t *dst, const struct smb2_hdr_out *h)
{
	memset(dst, 0, SMB2_HDR_LEN);
	dst[0] = 0xFE;
	dst[1] = 'S';
	dst[2] = 'M';
	dst[3] = 'B';
	px_put_u16(dst + 4, SMB2_HDR_LEN);
	px_put_u16(dst + 6, h->credit_charge);
	px_put_u32(dst + 8, h->status);
	px_put_u16(dst + 12, h->command);
	px_put_u16(dst + 14, h->credit);
	px_put_u32(dst + 16, h->flags);
	px_put_u64(dst + 24, h->message_id);
	px_put_u32(dst + 36, h->tree_id);
	px_put_u64(dst + 40, h->session_id);
}

/*
 * Common start of the body encoders: check that total bytes fit, write the
 * header with the encoder's command and direction (SERVER_TO_REDIR set for
 * responses, cleared for requests, other flags as given), zero the body up
 * to the variable data (which the encoder copies itself) and store its
 * StructureSize.
 */
static bool
enc_begin(uint8_t *dst, size_t cap, size_t total, const struct smb2_hdr_out *h,
    uint16_t cmd, bool response, uint16_t ss)
{
	size_t zero;

	struct smb2_hdr_out o;

	if (dst == NULL || h == NULL || cap < total)
		return false;
	o = *h;
	o.command = cmd;
	if (response)
		o.flags |= SMB2_FLAGS_SERVER_TO_REDIR;
	else
		o.flags &= ~SMB2_FLAGS_SERVER_TO_REDIR;
	px_smb2_hdr_encode(dst, &o);
	zero = total - SMB2_HDR_LEN;
	if (zero > (size_t)ss)
		zero = ss;
	memset(dst + SMB2_HDR_LEN, 0, zero);
	px_put_u16(dst + SMB2_HDR_LEN, ss);
	return true;
}

/* Total of header + fixed body + data; SIZE_MAX if it cannot be sized. */
static size_t
enc_total(size_t fixed, uint32_t data_len)
{
	if ((size_t)data_len > SIZE_MAX - SMB2_HDR_LEN - fixed)
		return SIZE_MAX;
	return SMB2_HDR_LEN + fixed + data_len;
}

static void
put_fileid(uint8_t *p, const struct smb2_fileid *f)
{
	px_put_u64(p, f->persistent);
	px_put_u64(p + 8, f->volatile_);
}

/*
 * 2.2.21: DataOffset 64 + 48 = 112.  An empty write still carries the one
 * byte of Buffer that StructureSize 49 counts.
 */
size_t
px_smb2_write_req_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const struct smb2_fileid *fid,
    uint64_t offset, const uint8_t *data, uint32_t len, uint32_t flags)
{
	size_t total = enc_total(48, len > 0 ? len : 1);
	uint8_t *b;

	if (fid == NULL || (len > 0 && data == NULL) ||
	    !enc_begin(dst, cap, total, h, SMB2_WRITE, false, 49))
		return 0;
	b = dst + SMB2_HDR_LEN;
	px_put_u16(b + 2, SMB2_HDR_LEN + 48);
	px_put_u32(b + 4, len);
	px_put_u64(b + 8, offset);
	put_fileid(b + 16, fid);
	px_put_u32(b + 44, flags);
	if (len > 0)
		memcpy(b + 48, data, len);
	return total;
}

/* 2.2.22, with the pad byte counted by StructureSize 17. */
size_t
px_smb2_write_rsp_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, uint32_t count)
{
	size_t total = SMB2_HDR_LEN + 17;
	uint8_t *b;

	if (!enc_begin(dst, cap, total, h, SMB2_WRITE, true, 17))
		return 0;
	b = dst + SMB2_HDR_LEN;
	px_put_u32(b + 4, count);
	return total;
}

/*
 * 2.2.19: Padding asks for the data at 64 + 16 = 80 in the response, no
 * channel, and the one Buffer byte of StructureSize 49.
 */
size_t
px_smb2_read_req_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const struct smb2_fileid *fid,
    uint64_t offset, uint32_t len, uint32_t minimum_count)
{
	size_t total = SMB2_HDR_LEN + 49;
	uint8_t *b;

	if (fid == NULL || !enc_begin(dst, cap, total, h, SMB2_READ, false, 49))
		return 0;
	b = dst + SMB2_HDR_LEN;
	b[2] = SMB2_HDR_LEN + 16;
	px_put_u32(b + 4, len);
	px_put_u64(b + 8, offset);
	put_fileid(b + 16, fid);
	px_put_u32(b + 32, minimum_count);
	return total;
}

/* 2.2.20: DataOffset 64 + 16 = 80; an empty read keeps the pad byte. */
size_t
px_smb2_read_rsp_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const uint8_t *data, uint32_t len)
{
	size_t total = enc_total(16, len > 0 ? len : 1);
	uint8_t *b;

	if ((len > 0 && data == NULL) ||
	    !enc_begin(dst, cap, total, h, SMB2_READ, true, 17))
		return 0;
	b = dst + SMB2_HDR_LEN;
	b[2] = SMB2_HDR_LEN + 16;
	px_put_u32(b + 4, len);
	if (len > 0)
		memcpy(b + 16, data, len);
	return total;
}

/* 2.2.28 */
size_t
px_smb2_echo_req_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h)
{
	size_t total = SMB2_HDR_LEN + 4;

	if (!enc_begin(dst, cap, total, h, SMB2_ECHO, false, 4))
		return 0;
	return total;
}

/* 2.2.17 */
size_t
px_smb2_flush_req_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const struct smb2_fileid *fid)
{
	size_t total = SMB2_HDR_LEN + 24;

	if (fid == NULL || !enc_begin(dst, cap, total, h, SMB2_FLUSH, false, 24))
		return 0;
	put_fileid(dst + SMB2_HDR_LEN + 8, fid);
	return total;
}

/* 2.2.15: Flags 0 (no POSTQUERY_ATTRIB), Reserved 0 */
size_t
px_smb2_close_req_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const struct smb2_fileid *fid)
{
	size_t total = SMB2_HDR_LEN + 24;

	if (fid == NULL || !enc_begin(dst, cap, total, h, SMB2_CLOSE, false, 24))
		return 0;
	put_fileid(dst + SMB2_HDR_LEN + 8, fid);
	return total;
}

/* 2.2.32: the output right after the 48-byte fixed part, InputOffset
 * there too with InputCount 0, as Samba sends it. */
size_t
px_smb2_ioctl_rsp_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, uint32_t ctl_code,
    const struct smb2_fileid *fid, const uint8_t *out, uint32_t out_len)
{
	size_t total = SMB2_HDR_LEN + 48 + (size_t)out_len;
	uint8_t *b;

	if (fid == NULL || (out_len > 0 && out == NULL) ||
	    !enc_begin(dst, cap, total, h, SMB2_IOCTL, true, 49))
		return 0;
	b = dst + SMB2_HDR_LEN;
	px_put_u32(b + 4, ctl_code);
	put_fileid(b + 8, fid);
	px_put_u32(b + 24, SMB2_HDR_LEN + 48);  /* InputOffset */
	px_put_u32(b + 32, SMB2_HDR_LEN + 48);  /* OutputOffset */
	px_put_u32(b + 36, out_len);
	if (out_len > 0)
		memcpy(b + 48, out, out_len);
	return total;
}

/*
 * 2.2.2: ErrorContextCount 0, ByteCount 0 and the one-byte ErrorData the
 * spec asks for when ByteCount is 0.  Command and status come from h.
 */
size_t
px_smb2_error_rsp_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h)
{
	size_t total = SMB2_HDR_LEN + 9;

	if (h == NULL || !enc_begin(dst, cap, total, h, h->command, true, 9))
		return 0;
	return total;
}

/* 2.2.24.1 */
size_t
px_smb2_oplock_ack_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const struct smb2_fileid *fid,
    uint8_t oplock_level)
{
	size_t total = SMB2_HDR_LEN + 24;
	uint8_t *b;

	if (fid == NULL ||
	    !enc_begin(dst, cap, total, h, SMB2_OPLOCK_BREAK, false, 24))
		return 0;
	b = dst + SMB2_HDR_LEN;
	b[2] = oplock_level;
	put_fileid(b + 8, fid);
	return total;
}

/* 2.2.24.2: Flags and LeaseDuration 0. */
size_t
px_smb2_lease_ack_encode(uint8_t *dst, size_t cap,
    const struct smb2_hdr_out *h, const uint8_t *key, uint32_t state)
{
	size_t total = SMB2_HDR_LEN + 36;
	uint8_t *b;

	if (key == NULL ||
	    !enc_begin(dst, cap, total, h, SMB2_OPLOCK_BREAK, false, 36))
		return 0;
	b = dst + SMB2_HDR_LEN;
	memcpy(b + 8, key, 16);
	px_put_u32(b + 24, state);
	return total;
}
