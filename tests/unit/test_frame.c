/*
 * test_frame.c - NetBIOS framing (RFC 1002 4.3.1, MS-SMB2 2.1) and the
 * protocol-id classifier.
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

struct frame_case {
	const char *name;
	uint8_t bytes[8];
	size_t len;
	size_t max_len;
	enum px_frame_rc rc;
	size_t frame_len;       /* when rc == OK */
	uint8_t type;
};

static const struct frame_case frame_cases[] = {
	{ "empty", { 0 }, 0, 1024, PX_FRAME_NEED, 0, 0 },
	{ "one byte", { 0x00 }, 1, 1024, PX_FRAME_NEED, 0, 0 },
	{ "three bytes", { 0x00, 0x00, 0x00 }, 3, 1024, PX_FRAME_NEED, 0, 0 },
	{ "header only, payload 4", { 0x00, 0x00, 0x00, 0x04 }, 4, 1024,
	    PX_FRAME_NEED, 0, 0 },
	{ "payload 4 complete", { 0x00, 0x00, 0x00, 0x04, 0xFE, 'S', 'M', 'B' },
	    8, 1024, PX_FRAME_OK, 8, 0x00 },
	{ "empty message", { 0x00, 0x00, 0x00, 0x00 }, 4, 1024, PX_FRAME_OK,
	    4, 0x00 },
	{ "keepalive", { 0x85, 0x00, 0x00, 0x00 }, 4, 1024, PX_FRAME_OK,
	    4, 0x85 },
	{ "keepalive + next bytes", { 0x85, 0x00, 0x00, 0x00, 0x00 }, 5, 1024,
	    PX_FRAME_OK, 4, 0x85 },
	{ "keepalive with length", { 0x85, 0x00, 0x00, 0x01, 0x00 }, 5, 1024,
	    PX_FRAME_BAD, 0, 0 },
	{ "session request 0x81", { 0x81, 0x00, 0x00, 0x44 }, 4, 1024,
	    PX_FRAME_BAD, 0, 0 },
	{ "bad type seen at byte 1", { 0x82 }, 1, 1024, PX_FRAME_BAD, 0, 0 },
	{ "http", { 'G', 'E', 'T', ' ' }, 4, 1024, PX_FRAME_BAD, 0, 0 },
	{ "at max_len", { 0x00, 0x00, 0x04, 0x00 }, 4, 1024, PX_FRAME_NEED,
	    0, 0 },
	{ "over max_len", { 0x00, 0x00, 0x04, 0x01 }, 4, 1024, PX_FRAME_BAD,
	    0, 0 },
	{ "24-bit max over small max", { 0x00, 0xFF, 0xFF, 0xFF }, 4, 1 << 20,
	    PX_FRAME_BAD, 0, 0 },
	{ "24-bit max allowed", { 0x00, 0xFF, 0xFF, 0xFF }, 4, PX_NBSS_MAX,
	    PX_FRAME_NEED, 0, 0 },
	{ "big-endian length", { 0x00, 0x00, 0x01, 0x02 }, 4, 1 << 20,
	    PX_FRAME_NEED, 0, 0 },
	{ "max_len 0 keepalive", { 0x85, 0x00, 0x00, 0x00 }, 4, 0,
	    PX_FRAME_OK, 4, 0x85 },
	{ "max_len 0 message", { 0x00, 0x00, 0x00, 0x01 }, 4, 0,
	    PX_FRAME_BAD, 0, 0 },
};

static void
test_frame_table(void)
{
	size_t i;

	for (i = 0; i < sizeof(frame_cases) / sizeof(frame_cases[0]); i++) {
		const struct frame_case *c = &frame_cases[i];
		size_t flen = 12345;
		uint8_t type = 0x42;
		uint8_t *buf;
		enum px_frame_rc rc;

		/* exact-size copy so that ASan sees any over-read */
		buf = malloc(c->len ? c->len : 1);
		CU_ASSERT_FATAL(buf != NULL);
		memcpy(buf, c->bytes, c->len);
		rc = px_frame_parse(buf, c->len, c->max_len, &flen, &type);
		UT_CHECK(rc == c->rc, "%s: rc %d want %d", c->name, rc, c->rc);
		if (c->rc == PX_FRAME_OK) {
			UT_CHECK(flen == c->frame_len, "%s: frame_len %zu",
			    c->name, flen);
			UT_CHECK(type == c->type, "%s: type %u", c->name, type);
		}
		free(buf);
	}
}

/* A NEED with the header known already reports the frame length. */
static void
test_frame_need_reports_len(void)
{
	const uint8_t hdr[4] = { 0x00, 0x01, 0x00, 0x00 };
	size_t flen = 0;
	uint8_t type = 0xAA;

	CU_ASSERT_EQUAL(px_frame_parse(hdr, 4, 1 << 20, &flen, &type),
	    PX_FRAME_NEED);
	CU_ASSERT_EQUAL(flen, 4 + 0x10000);
	CU_ASSERT_EQUAL(type, 0x00);
}

/* Every prefix of a frame is NEED, the whole frame OK; extra bytes ignored. */
static void
test_frame_truncated_every_length(void)
{
	uint8_t msg[4 + 100 + 7];
	size_t n, flen;
	uint8_t type;
	enum px_frame_rc rc;

	memset(msg, 0x5A, sizeof(msg));
	px_frame_put_hdr(msg, 100);
	for (n = 0; n <= sizeof(msg); n++) {
		uint8_t *buf = malloc(n ? n : 1);

		CU_ASSERT_FATAL(buf != NULL);
		memcpy(buf, msg, n);
		flen = 0;
		rc = px_frame_parse(buf, n, 1000, &flen, &type);
		if (n < 104)
			UT_CHECK(rc == PX_FRAME_NEED, "len %zu: rc %d", n, rc);
		else {
			UT_CHECK(rc == PX_FRAME_OK, "len %zu: rc %d", n, rc);
			UT_CHECK(flen == 104, "len %zu: frame_len %zu", n, flen);
		}
		free(buf);
	}
	/* the same frame with max_len one short of its payload */
	CU_ASSERT_EQUAL(px_frame_parse(msg, sizeof(msg), 99, &flen, &type),
	    PX_FRAME_BAD);
}

static void
test_frame_put_hdr(void)
{
	static const size_t lens[] = { 0, 1, 0xFF, 0x100, 0x10000, 0x123456,
	    PX_NBSS_MAX };
	uint8_t b[4];
	size_t i, flen;
	uint8_t type;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(b, 0xEE, sizeof(b));
		px_frame_put_hdr(b, lens[i]);
		UT_CHECK(b[0] == 0, "len %zu: type %u", lens[i], b[0]);
		UT_CHECK(px_frame_parse(b, 4, PX_NBSS_MAX, &flen, &type) ==
		    (lens[i] == 0 ? PX_FRAME_OK : PX_FRAME_NEED),
		    "len %zu: parse", lens[i]);
		UT_CHECK(flen == lens[i] + 4, "len %zu: round trip %zu",
		    lens[i], flen);
	}
	px_frame_put_hdr(b, 0x123456);
	CU_ASSERT(b[1] == 0x12 && b[2] == 0x34 && b[3] == 0x56);
}

static void
test_classify(void)
{
	static const struct {
		uint8_t b[5];
		size_t len;
		enum px_magic m;
		const char *name;
	} cases[] = {
		{ { 0xFF, 'S', 'M', 'B', 0x72 }, 5, PX_MAGIC_SMB1, "smb1" },
		{ { 0xFE, 'S', 'M', 'B', 0x40 }, 5, PX_MAGIC_SMB2, "smb2" },
		{ { 0xFD, 'S', 'M', 'B' }, 4, PX_MAGIC_TRANSFORM, "transform" },
		{ { 0xFC, 'S', 'M', 'B' }, 4, PX_MAGIC_COMPRESSED,
		    "compressed" },
		{ { 0xFB, 'S', 'M', 'B' }, 4, PX_MAGIC_UNKNOWN, "unknown" },
		{ { 0xFE, 'S', 'M', 'C' }, 4, PX_MAGIC_UNKNOWN, "unknown" },
		{ { 0xFE, 's', 'm', 'b' }, 4, PX_MAGIC_UNKNOWN, "unknown" },
		{ { 0xFE, 'S', 'M' }, 3, PX_MAGIC_UNKNOWN, "unknown" },
		{ { 0 }, 0, PX_MAGIC_UNKNOWN, "unknown" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t *buf = malloc(cases[i].len ? cases[i].len : 1);
		enum px_magic m;

		CU_ASSERT_FATAL(buf != NULL);
		memcpy(buf, cases[i].b, cases[i].len);
		m = px_classify(buf, cases[i].len);
		UT_CHECK(m == cases[i].m, "row %zu: magic %d", i, m);
		UT_CHECK(strcmp(px_magic_name(m), cases[i].name) == 0,
		    "row %zu: name %s", i, px_magic_name(m));
		free(buf);
	}
	CU_ASSERT_STRING_EQUAL(px_magic_name((enum px_magic)99), "unknown");
}

void
ut_register_frame(void)
{
	CU_pSuite s;

	s = CU_add_suite("frame", NULL, NULL);
	if (s == NULL)
		return;
	CU_add_test(s, "parse table", test_frame_table);
	CU_add_test(s, "need reports length", test_frame_need_reports_len);
	CU_add_test(s, "truncated at every length",
	    test_frame_truncated_every_length);
	CU_add_test(s, "put_hdr round trip", test_frame_put_hdr);
	CU_add_test(s, "classify", test_classify);
}
