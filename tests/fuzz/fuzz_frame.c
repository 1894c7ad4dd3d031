/*
 * fuzz_frame.c - libFuzzer driver for NBSS framing and classification.
 *
 * Treats the input as a byte stream from a socket: walks it frame by frame
 * with several max_len bounds and checks the promises of px_frame_parse().
 *
 *   clang -fsanitize=fuzzer,address,undefined -I. tests/fuzz/fuzz_frame.c \
 *       proxy/smb2/frame.c -o fuzz_frame
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/smb2/smb2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
walk(const uint8_t *data, size_t size, size_t max_len)
{
	size_t off = 0, flen;
	uint8_t type;
	enum px_frame_rc rc;

	while (off < size) {
		flen = 0;
		type = 0x42;
		rc = px_frame_parse(data + off, size - off, max_len, &flen, &type);
		if (rc == PX_FRAME_BAD)
			return;
		if (rc == PX_FRAME_NEED) {
			/* a NEED with a known header names a longer frame */
			if (size - off >= PX_NBSS_HDR && flen <= size - off)
				abort();
			return;
		}
		if (flen < PX_NBSS_HDR || flen > size - off ||
		    flen - PX_NBSS_HDR > max_len)
			abort();
		if (type != PX_NBSS_MESSAGE && type != PX_NBSS_KEEPALIVE)
			abort();
		if (type == PX_NBSS_KEEPALIVE && flen != PX_NBSS_HDR)
			abort();
		(void)px_magic_name(px_classify(data + off + PX_NBSS_HDR,
		    flen - PX_NBSS_HDR));
		off += flen;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[PX_NBSS_HDR];
	size_t flen;
	uint8_t type;

	walk(data, size, 0);
	walk(data, size, 64);
	walk(data, size, 1 << 16);
	walk(data, size, PX_NBSS_MAX);

	/* put_hdr -> parse round trip for the input's length */
	px_frame_put_hdr(hdr, size & PX_NBSS_MAX);
	if (px_frame_parse(hdr, sizeof(hdr), PX_NBSS_MAX, &flen, &type) ==
	    PX_FRAME_BAD || flen != (size & PX_NBSS_MAX) + PX_NBSS_HDR)
		abort();
	return 0;
}
