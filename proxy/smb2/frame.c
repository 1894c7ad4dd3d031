/*
 * frame.c - NetBIOS session service framing of direct-TCP SMB (RFC 1002
 * 4.3.1, MS-SMB2 2.1) and classification of the message it carries by its
 * protocol id; the names of dialects.
 *
 * Pure functions over byte buffers: no allocation, no I/O.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/smb2/smb2.h"

/*
 * PX_FRAME_OK means the whole frame (4-byte header + payload) is in buf.
 * The type byte is checked as soon as it is there, so a stream that is not
 * SMB is refused after one byte.  When the 4-byte header is complete but the
 * payload is not, PX_FRAME_NEED is returned and *frame_len and *type are
 * already set, so that the caller can size its buffer; on PX_FRAME_BAD and
 * on a NEED with fewer than 4 bytes they are left untouched.
 */
enum px_frame_rc
px_frame_parse(const uint8_t *buf, size_t len, size_t max_len,
    size_t *frame_len, uint8_t *type)
{
	size_t plen;

	if (len < 1)
		return PX_FRAME_NEED;
	if (buf[0] != PX_NBSS_MESSAGE && buf[0] != PX_NBSS_KEEPALIVE)
		return PX_FRAME_BAD;
	if (len < PX_NBSS_HDR)
		return PX_FRAME_NEED;

	/* 24-bit big-endian length (MS-SMB2 2.1: StreamProtocolLength). */
	plen = (size_t)buf[1] << 16 | (size_t)buf[2] << 8 | (size_t)buf[3];
	if (buf[0] == PX_NBSS_KEEPALIVE && plen != 0)
		return PX_FRAME_BAD;
	if (plen > max_len)
		return PX_FRAME_BAD;

	*frame_len = PX_NBSS_HDR + plen;
	*type = buf[0];
	if (len < PX_NBSS_HDR + plen)
		return PX_FRAME_NEED;
	return PX_FRAME_OK;
}

void
px_frame_put_hdr(uint8_t *dst, size_t len)
{
	assert(len <= PX_NBSS_MAX);
	dst[0] = PX_NBSS_MESSAGE;
	dst[1] = (uint8_t)(len >> 16);
	dst[2] = (uint8_t)(len >> 8);
	dst[3] = (uint8_t)len;
}

/* MS-SMB2 2.2.1 (0xFE), 2.2.41 (0xFD), 2.2.42 (0xFC); MS-CIFS 2.2.3.1. */
enum px_magic
px_classify(const uint8_t *msg, size_t len)
{
	if (len < 4 || msg[1] != 'S' || msg[2] != 'M' || msg[3] != 'B')
		return PX_MAGIC_UNKNOWN;
	switch (msg[0]) {
	case 0xFF:
		return PX_MAGIC_SMB1;
	case 0xFE:
		return PX_MAGIC_SMB2;
	case 0xFD:
		return PX_MAGIC_TRANSFORM;
	case 0xFC:
		return PX_MAGIC_COMPRESSED;
	default:
		return PX_MAGIC_UNKNOWN;
	}
}

const char *
px_magic_name(enum px_magic m)
{
	switch (m) {
	case PX_MAGIC_SMB1:
		return "smb1";
	case PX_MAGIC_SMB2:
		return "smb2";
	case PX_MAGIC_TRANSFORM:
		return "transform";
	case PX_MAGIC_COMPRESSED:
		return "compressed";
	case PX_MAGIC_UNKNOWN:
		break;
	}
	return "unknown";
}

const char *
px_dialect_name(uint16_t d)
{
	switch (d) {
	case SMB2_DIALECT_0202: return "2.0.2";
	case SMB2_DIALECT_0210: return "2.1";
	case SMB2_DIALECT_0300: return "3.0";
	case SMB2_DIALECT_0302: return "3.0.2";
	case SMB2_DIALECT_0311: return "3.1.1";
	case SMB2_DIALECT_WILDCARD: return "2.???";
	case 0: return "-";
	default: return "unknown";
	}
}
