/*
 * test_ledger.c - the message ledger: pending table, credit arithmetic
 * (S, C, bank), sessions, trees, opens, breaks, inconsistency detection.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <CUnit/CUnit.h>

#include "proxy/ledger.h"
#include "tests/unit/unit.h"

struct msg {
	uint8_t b[1024];
	struct smb2_elem e;
	struct smb2_hdr h;
};

/* Build one element: header from ho, then body bytes. */
static void
mk(struct msg *m, const struct smb2_hdr_out *ho, const uint8_t *body,
    size_t blen)
{
	memset(m, 0, sizeof(*m));
	px_smb2_hdr_encode(m->b, ho);
	memcpy(m->b + 64, body, blen);
	m->e.hdr = m->b;
	m->e.len = 64 + blen;
	CU_ASSERT_EQUAL_FATAL(px_smb2_hdr_decode(m->b, m->e.len, 0, &m->h), 0);
}

static struct smb2_hdr_out
rq(uint16_t cmd, uint64_t mid, uint16_t charge, uint16_t credit)
{
	struct smb2_hdr_out h;

	memset(&h, 0, sizeof(h));
	h.command = cmd;
	h.message_id = mid;
	h.credit_charge = charge;
	h.credit = credit;
	h.session_id = 0x1234;
	h.tree_id = 7;
	return h;
}

static struct smb2_hdr_out
rs(uint16_t cmd, uint64_t mid, uint16_t credit, uint32_t status)
{
	struct smb2_hdr_out h = rq(cmd, mid, 1, credit);

	h.flags = SMB2_FLAGS_SERVER_TO_REDIR;
	h.status = status;
	return h;
}

/* Record a client request; *sid and *tid: the session and tree the ledger
 * takes it to be of (px_ledger_req_ids). */
static void
client_req_ids(struct px_ledger *l, const struct smb2_hdr_out *ho,
    const uint8_t *body, size_t blen, uint64_t *sid, uint32_t *tid)
{
	struct msg m;

	mk(&m, ho, body, blen);
	px_ledger_req_ids(l, &m.h, sid, tid);
	(void)px_ledger_client_request(l, &m.h, &m.e, false, NULL);
}

static void
client_req(struct px_ledger *l, const struct smb2_hdr_out *ho,
    const uint8_t *body, size_t blen)
{
	uint64_t sid;
	uint32_t tid;

	client_req_ids(l, ho, body, blen, &sid, &tid);
}

static struct px_pending *
server_rsp(struct px_ledger *l, const struct smb2_hdr_out *ho,
    const uint8_t *body, size_t blen, bool *interim)
{
	struct msg m;
	struct px_pending *p;
	struct smb2_fileid last;
	bool dummy;

	mk(&m, ho, body, blen);
	memset(&last, 0xff, sizeof(last));
	px_ledger_server_response(l, &m.h, &m.e, &last, &p,
	    interim ? interim : &dummy);
	return p;
}

static const uint8_t echo_body[4] = { 4, 0, 0, 0 };
static const uint8_t err_body[9] = { 9, 0, 0, 0, 0, 0, 0, 0, 0 };

/* ---- pending table ----------------------------------------------------- */

static void
test_pending_table(void)
{
	struct px_ledger l;
	static uint8_t present[20000];
	unsigned int seed = 12345, i, bad = 0;
	uint64_t mid;

	px_ledger_init(&l, 1);
	memset(present, 0, sizeof(present));
	for (i = 0; i < 200000; i++) {
		seed = seed * 1103515245u + 12345u;
		mid = (seed >> 8) % 20000;
		if (present[mid]) {
			struct px_pending *p = px_pending_find(&l, mid);

			if (p == NULL || p->mid != mid)
				bad++;
			else {
				px_pending_del(&l, p);
				px_pending_free(p);
				present[mid] = 0;
			}
		} else {
			if (px_pending_find(&l, mid) != NULL)
				bad++;
			if (px_pending_add(&l, mid) == NULL)
				bad++;
			present[mid] = 1;
		}
	}
	for (mid = 0; mid < 20000; mid++)
		if ((px_pending_find(&l, mid) != NULL) != (present[mid] != 0))
			bad++;
	CU_ASSERT_EQUAL(bad, 0);
	px_ledger_free(&l);
}

/* ---- credits ------------------------------------------------------------- */

static void
test_credit_flow(void)
{
	struct px_ledger l;
	struct smb2_hdr_out h;
	struct px_pending *p;

	px_ledger_init(&l, 1);
	CU_ASSERT_EQUAL(l.cr.S, 1);
	CU_ASSERT_EQUAL(l.cr.C, 1);
	/* ECHO stands in for any request: mid 0 charge 0 asks 1 */
	h = rq(SMB2_ECHO, 0, 0, 1);
	client_req(&l, &h, echo_body, sizeof(echo_body));
	CU_ASSERT_EQUAL(l.cr.client_next, 1);
	CU_ASSERT_EQUAL(l.cr.client_outstanding, 1);
	h = rs(SMB2_ECHO, 0, 31, 0);
	p = server_rsp(&l, &h, echo_body, sizeof(echo_body), NULL);
	CU_ASSERT_PTR_NOT_NULL(p);
	px_pending_free(p);
	CU_ASSERT_EQUAL(l.cr.S, 32);
	CU_ASSERT_EQUAL(l.cr.C, 32);
	CU_ASSERT_EQUAL(l.cr.client_outstanding, 0);
	CU_ASSERT_EQUAL(l.errors, 0);
	/* a multi-credit request inside the window is fine ... */
	h = rq(SMB2_ECHO, 1, 16, 1);
	client_req(&l, &h, echo_body, sizeof(echo_body));
	CU_ASSERT_EQUAL(l.errors, 0);
	CU_ASSERT_EQUAL(l.cr.client_next, 17);
	/* ... one reaching past C is an inconsistency */
	h = rq(SMB2_ECHO, 17, 16, 1);
	client_req(&l, &h, echo_body, sizeof(echo_body));
	CU_ASSERT_EQUAL(l.errors, 1);
	/* so is reusing an id still in flight */
	h = rq(SMB2_ECHO, 1, 1, 1);
	client_req(&l, &h, echo_body, sizeof(echo_body));
	CU_ASSERT_EQUAL(l.errors, 2);
	/* and a response nobody asked for */
	h = rs(SMB2_ECHO, 999, 1, 0);
	p = server_rsp(&l, &h, echo_body, sizeof(echo_body), NULL);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_EQUAL(l.errors, 3);
	/* a CANCEL consumes no credit and expects no response */
	h = rq(SMB2_CANCEL, 1, 0, 0);
	client_req(&l, &h, echo_body, sizeof(echo_body));
	CU_ASSERT_EQUAL(l.cr.client_next, 33);
	px_ledger_free(&l);
}

static void
test_bank_from_proxy_requests(void)
{
	struct px_ledger l;
	struct smb2_hdr_out h;
	struct px_pending *p;

	px_ledger_init(&l, 1);
	l.cr.S = l.cr.C = 100;
	/* a proxy-originated request: its grant goes to the bank only */
	p = px_pending_add(&l, 50);
	p->origin = PX_ORIGIN_PROXY;
	p->command = SMB2_ECHO;
	h = rs(SMB2_ECHO, 50, 8, 0);
	p = server_rsp(&l, &h, echo_body, sizeof(echo_body), NULL);
	CU_ASSERT_PTR_NOT_NULL(p);
	px_pending_free(p);
	CU_ASSERT_EQUAL(l.cr.S, 108);
	CU_ASSERT_EQUAL(l.cr.C, 100);
	CU_ASSERT_EQUAL(co_bank(&l.cr), 8);
	CU_ASSERT_TRUE(l.cr.C <= l.cr.S);
	px_ledger_free(&l);
}

static void
test_async_interim(void)
{
	struct px_ledger l;
	struct smb2_hdr_out h;
	struct px_pending *p;
	bool interim = false;

	px_ledger_init(&l, 1);
	l.cr.S = l.cr.C = 10;
	h = rq(SMB2_ECHO, 3, 1, 1);
	client_req(&l, &h, echo_body, sizeof(echo_body));
	h = rs(SMB2_ECHO, 3, 1, NT_STATUS_PENDING);
	h.flags |= SMB2_FLAGS_ASYNC_COMMAND;
	p = server_rsp(&l, &h, err_body, sizeof(err_body), &interim);
	CU_ASSERT_TRUE(interim);
	CU_ASSERT_PTR_NOT_NULL(px_pending_find(&l, 3));
	CU_ASSERT_EQUAL(l.cr.C, 11);          /* credits ride on the interim */
	h = rs(SMB2_ECHO, 3, 0, 0);
	h.flags |= SMB2_FLAGS_ASYNC_COMMAND;
	p = server_rsp(&l, &h, echo_body, sizeof(echo_body), &interim);
	CU_ASSERT_FALSE(interim);
	CU_ASSERT_PTR_NOT_NULL(p);
	px_pending_free(p);
	CU_ASSERT_PTR_NULL(px_pending_find(&l, 3));
	CU_ASSERT_EQUAL(l.cr.C, 11);
	CU_ASSERT_EQUAL(l.errors, 0);
	px_ledger_free(&l);
}

/* ---- trees and opens -------------------------------------------------------- */

static size_t
tcon_req_body(uint8_t *b, const char *path)
{
	size_t i, n = strlen(path);

	memset(b, 0, 8);
	px_put_u16(b, 9);
	px_put_u16(b + 4, 64 + 8);
	px_put_u16(b + 6, (uint16_t)(2 * n));
	for (i = 0; i < n; i++)
		px_put_u16(b + 8 + 2 * i, (uint16_t)path[i]);
	return 8 + 2 * n;
}

static size_t
create_req_body(uint8_t *b, const char *name, uint32_t access,
    uint32_t options, uint8_t oplock)
{
	size_t i, n = strlen(name);

	memset(b, 0, 56);
	px_put_u16(b, 57);
	b[3] = oplock;
	px_put_u32(b + 4, 2);                 /* impersonation */
	px_put_u32(b + 24, access);
	px_put_u32(b + 32, 7);                /* share all */
	px_put_u32(b + 36, FILE_OPEN_IF);
	px_put_u32(b + 40, options);
	px_put_u16(b + 44, 64 + 56);
	px_put_u16(b + 46, (uint16_t)(2 * n));
	for (i = 0; i < n; i++)
		px_put_u16(b + 56 + 2 * i, (uint16_t)name[i]);
	if (n == 0)
		b[56] = 0, n = 1;
	return 56 + 2 * n;
}

static size_t
create_rsp_body(uint8_t *b, uint8_t oplock, uint64_t fid)
{
	memset(b, 0, 89);
	px_put_u16(b, 89);
	b[2] = oplock;
	px_put_u32(b + 4, 2);                 /* FILE_CREATED */
	px_put_u64(b + 64, fid);
	px_put_u64(b + 72, fid + 100);
	return 89;
}

static size_t
fid_body(uint8_t *b, uint16_t ssize, uint64_t fid)
{
	memset(b, 0, ssize);
	px_put_u16(b, ssize);
	px_put_u64(b + 8, fid);
	px_put_u64(b + 16, fid + 100);
	return ssize;
}

/* TREE_CONNECT of path as mid, answered for tree 7 of session 0x1234 (a
 * disk share with full access). */
static void
connect_tree(struct px_ledger *l, uint64_t mid, const char *path)
{
	struct smb2_hdr_out h;
	uint8_t body[512];
	size_t n;

	h = rq(SMB2_TREE_CONNECT, mid, 1, 1);
	n = tcon_req_body(body, path);
	client_req(l, &h, body, n);
	memset(body, 0, 16);
	px_put_u16(body, 16);
	body[2] = SMB2_SHARE_TYPE_DISK;
	px_put_u32(body + 12, 0x1f01ff);
	h = rs(SMB2_TREE_CONNECT, mid, 1, 0);
	px_pending_free(server_rsp(l, &h, body, 16, NULL));
}

/* A CREATE of name (read access, no oplock) as request mid of tree 7,
 * answered with file id {fid, fid + 100}. */
static void
open_file(struct px_ledger *l, uint64_t mid, const char *name, uint64_t fid)
{
	struct smb2_hdr_out h;
	uint8_t body[512];
	size_t n;

	h = rq(SMB2_CREATE, mid, 1, 1);
	n = create_req_body(body, name, GENERIC_READ, 0, 0);
	client_req(l, &h, body, n);
	h = rs(SMB2_CREATE, mid, 1, 0);
	n = create_rsp_body(body, 0, fid);
	px_pending_free(server_rsp(l, &h, body, n, NULL));
}

static void
test_tree_open_lifecycle(void)
{
	struct px_ledger l;
	struct smb2_hdr_out h;
	struct px_pending *p;
	struct px_tree *t;
	struct px_open *o;
	struct smb2_fileid fid = { 77, 177 };
	struct px_open *old;
	uint64_t old_serial;
	uint8_t body[512];
	size_t n;
	int i;

	struct pol_config *cfg = pol_load_string("[global]\nlisten = 127.0.0.1:1\n"
	    "upstream = 127.0.0.1:2\n[share other]\nwrite_behind = always\n",
	    "test", NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	px_ledger_init(&l, 1);
	l.cfg = cfg;
	l.cr.S = l.cr.C = 100;
	connect_tree(&l, 5, "\\\\127.0.0.1\\Backup");
	t = px_tree_find(&l, 0x1234, 7);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_STRING_EQUAL(t->server, "127.0.0.1");
	CU_ASSERT_STRING_EQUAL(t->share, "Backup");
	CU_ASSERT_EQUAL(t->maximal_access, 0x1f01ff);
	CU_ASSERT_EQUAL(t->policy.write_behind, POL_GATE_LEASED); /* default */

	/* CREATE asking for write access, with a batch oplock granted */
	h = rq(SMB2_CREATE, 6, 1, 1);
	n = create_req_body(body, "dir\\file.bin", GENERIC_WRITE, 0,
	    SMB2_OPLOCK_LEVEL_BATCH);
	client_req(&l, &h, body, n);
	h = rs(SMB2_CREATE, 6, 1, 0);
	n = create_rsp_body(body, SMB2_OPLOCK_LEVEL_BATCH, 77);
	p = server_rsp(&l, &h, body, n, NULL);
	px_pending_free(p);
	o = px_open_find(&l, &fid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(o->name, "dir\\file.bin");
	CU_ASSERT_TRUE(px_open_write_access(o));
	CU_ASSERT_TRUE(px_open_write_caching(o));
	CU_ASSERT_TRUE(px_open_read_caching(o));
	CU_ASSERT_EQUAL(l.nopens, 1);

	/* the server breaks to level II: absorption must stop */
	h = rs(SMB2_OPLOCK_BREAK, SMB2_NOTIFY_MESSAGE_ID, 0, 0);
	n = fid_body(body, 24, 77);
	body[2] = SMB2_OPLOCK_LEVEL_II;
	{
		struct msg m;

		mk(&m, &h, body, n);
		px_ledger_break(&l, &m.e);
	}
	CU_ASSERT_TRUE(o->breaking);
	/* the client acknowledges level II; the response settles it */
	h = rq(SMB2_OPLOCK_BREAK, 7, 1, 1);
	client_req(&l, &h, body, n);
	h = rs(SMB2_OPLOCK_BREAK, 7, 1, 0);
	p = server_rsp(&l, &h, body, n, NULL);
	px_pending_free(p);
	CU_ASSERT_FALSE(o->breaking);
	CU_ASSERT_EQUAL(o->oplock, SMB2_OPLOCK_LEVEL_II);
	CU_ASSERT_FALSE(px_open_write_caching(o));
	CU_ASSERT_TRUE(px_open_read_caching(o));

	/* a failed CREATE leaves no open */
	h = rq(SMB2_CREATE, 8, 1, 1);
	n = create_req_body(body, "nope", FILE_READ_DATA, 0, 0);
	client_req(&l, &h, body, n);
	h = rs(SMB2_CREATE, 8, 1, NT_STATUS_ACCESS_DENIED);
	p = server_rsp(&l, &h, err_body, sizeof(err_body), NULL);
	px_pending_free(p);
	CU_ASSERT_EQUAL(l.nopens, 1);

	/* a CLOSE naming it from a tree that does not exist fails and
	 * leaves it open (the server never looked for it) */
	h = rq(SMB2_CLOSE, 9, 1, 1);
	h.tree_id = 99;
	n = fid_body(body, 24, 77);
	client_req(&l, &h, body, n);
	h = rs(SMB2_CLOSE, 9, 1, NT_STATUS_NETWORK_NAME_DELETED);
	h.tree_id = 99;
	p = server_rsp(&l, &h, err_body, sizeof(err_body), NULL);
	px_pending_free(p);
	CU_ASSERT_PTR_EQUAL(px_open_find(&l, &fid), o);
	CU_ASSERT_EQUAL(l.nopens, 1);

	/* so do CLOSEs from its own session and tree that the server
	 * refuses before it looks for it: a bad signature, a header flag
	 * it does not allow; the mark px_wb_on_close set is undone */
	for (i = 0; i < 2; i++) {
		h = rq(SMB2_CLOSE, 10, 1, 1);
		n = fid_body(body, 24, 77);
		client_req(&l, &h, body, n);
		o->closed = true;
		h = rs(SMB2_CLOSE, 10, 1, i ? NT_STATUS_INVALID_PARAMETER :
		    NT_STATUS_ACCESS_DENIED);
		p = server_rsp(&l, &h, err_body, sizeof(err_body), NULL);
		px_pending_free(p);
		CU_ASSERT_PTR_EQUAL_FATAL(px_open_find(&l, &fid), o);
		CU_ASSERT_FALSE(o->closed);
	}
	CU_ASSERT_EQUAL(l.nopens, 1);

	/* CLOSE removes the open */
	old = o;
	old_serial = o->serial;
	CU_ASSERT_NOT_EQUAL(old_serial, 0);
	CU_ASSERT_PTR_EQUAL(px_open_alive(&l, old, old_serial), old);
	h = rq(SMB2_CLOSE, 11, 1, 1);
	n = fid_body(body, 24, 77);
	client_req(&l, &h, body, n);
	memset(body, 0, 60);
	px_put_u16(body, 60);
	h = rs(SMB2_CLOSE, 11, 1, 0);
	p = server_rsp(&l, &h, body, 60, NULL);
	px_pending_free(p);
	CU_ASSERT_PTR_NULL(px_open_find(&l, &fid));
	CU_ASSERT_EQUAL(l.nopens, 0);
	CU_ASSERT_EQUAL(l.errors, 0);
	CU_ASSERT_PTR_NULL(px_open_alive(&l, old, old_serial));

	/* a new open, most likely at the freed one's address: an answer
	 * kept for the old open (its pointer and serial) must not find it */
	h = rq(SMB2_CREATE, 20, 1, 1);
	n = create_req_body(body, "other.bin", FILE_READ_DATA, 0, 0);
	client_req(&l, &h, body, n);
	h = rs(SMB2_CREATE, 20, 1, 0);
	n = create_rsp_body(body, 0, 78);
	px_pending_free(server_rsp(&l, &h, body, n, NULL));
	{
		struct smb2_fileid fid2 = { 78, 178 };

		o = px_open_find(&l, &fid2);
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_NOT_EQUAL(o->serial, old_serial);
	CU_ASSERT_PTR_NULL(px_open_alive(&l, old, old_serial));
	CU_ASSERT_PTR_EQUAL(px_open_alive(&l, o, o->serial), o);
	/* what a reused address looks like, whatever the allocator did */
	CU_ASSERT_PTR_NULL(px_open_alive(&l, o, old_serial));
	/* the same through a pending READ's fields */
	{
		struct px_pending pend;

		memset(&pend, 0, sizeof(pend));
		pend.u.io.open = o;
		pend.u.io.open_serial = old_serial;
		CU_ASSERT_PTR_NULL(px_pending_open(&l, &pend));
		pend.u.io.open_serial = o->serial;
		CU_ASSERT_PTR_EQUAL(px_pending_open(&l, &pend), o);
	}
	/* a CLOSE from its own session and tree failed otherwise: gone
	 * (FILE_CLOSED: the server found no such handle) */
	h = rq(SMB2_CLOSE, 21, 1, 1);
	n = fid_body(body, 24, 78);
	client_req(&l, &h, body, n);
	h = rs(SMB2_CLOSE, 21, 1, NT_STATUS_FILE_CLOSED);
	px_pending_free(server_rsp(&l, &h, err_body, sizeof(err_body), NULL));
	CU_ASSERT_EQUAL(l.nopens, 0);

	/* TREE_DISCONNECT drops the tree */
	h = rq(SMB2_TREE_DISCONNECT, 10, 1, 1);
	memset(body, 0, 4);
	px_put_u16(body, 4);
	client_req(&l, &h, body, 4);
	h = rs(SMB2_TREE_DISCONNECT, 10, 1, 0);
	p = server_rsp(&l, &h, body, 4, NULL);
	px_pending_free(p);
	CU_ASSERT_PTR_NULL(px_tree_find(&l, 0x1234, 7));
	px_ledger_free(&l);
	pol_free(cfg);
}

/* A TREE_CONNECT whose path does not decode (the request extension flag,
 * 2.2.9.1) but which the server accepts gets no gate open: its share's
 * section cannot be known, and [global]'s settings are not its share's. */
static void
test_tree_path_undecoded(void)
{
	struct px_ledger l;
	struct smb2_hdr_out h;
	struct px_tree *t;
	uint8_t body[512];
	size_t n;
	struct pol_config *cfg = pol_load_string("[global]\nlisten = 127.0.0.1:1\n"
	    "upstream = 127.0.0.1:2\nwrite_behind = always\n"
	    "read_ahead = always\n[share db]\nwrite_behind = off\n"
	    "read_ahead = off\n", "test", NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	px_ledger_init(&l, 1);
	l.cfg = cfg;
	l.cr.S = l.cr.C = 100;
	/* as sent, the path decodes: [share db] */
	connect_tree(&l, 5, "\\\\srv\\db");
	t = px_tree_find(&l, 0x1234, 7);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(t->policy.write_behind, POL_GATE_OFF);
	CU_ASSERT_EQUAL(t->policy.read_ahead, POL_GATE_OFF);
	/* with the extension flag: not decoded, not [global]'s always */
	h = rq(SMB2_TREE_CONNECT, 6, 1, 1);
	n = tcon_req_body(body, "\\\\srv\\db");
	px_put_u16(body + 2, 0x0004);
	client_req(&l, &h, body, n);
	memset(body, 0, 16);
	px_put_u16(body, 16);
	body[2] = SMB2_SHARE_TYPE_DISK;
	px_put_u32(body + 12, 0x1f01ff);
	h = rs(SMB2_TREE_CONNECT, 6, 1, 0);
	h.tree_id = 8;
	px_pending_free(server_rsp(&l, &h, body, 16, NULL));
	t = px_tree_find(&l, 0x1234, 8);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(t->policy.write_behind, POL_GATE_OFF);
	CU_ASSERT_EQUAL(t->policy.read_ahead, POL_GATE_OFF);
	px_ledger_free(&l);
	pol_free(cfg);
}

/* A ledger with policy defaults and tree 7 of session 0x1234 connected to
 * \\srv\docs (mid 5); the policy is the caller's to free. */
static struct pol_config *
ledger_with_tree(struct px_ledger *l)
{
	struct pol_config *cfg = pol_load_string("[global]\nlisten = "
	    "127.0.0.1:1\nupstream = 127.0.0.1:2\n", "test", NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
	px_ledger_init(l, 1);
	l->cfg = cfg;
	l->cr.S = l->cr.C = 100;
	connect_tree(l, 5, "\\\\srv\\docs");
	return cfg;
}

/* A related compound of a CREATE and a LOCK of the file it opens (FileId
 * all 0xFF): the new open is marked locked when the LOCK's answer comes,
 * as one locked by its own FileId is (every gate of a locked file stays
 * shut: write-behind, read-ahead, the document cache). */
static void
test_related_lock(void)
{
	struct px_ledger l;
	struct smb2_hdr_out h;
	struct px_open *o;
	struct smb2_fileid fid = { 79, 179 }, last;
	struct msg m;
	uint8_t body[512];
	bool interim;
	struct px_pending *p;
	size_t n;
	struct pol_config *cfg = ledger_with_tree(&l);

	h = rq(SMB2_CREATE, 6, 1, 1);
	n = create_req_body(body, "db.mdb", GENERIC_READ | GENERIC_WRITE, 0,
	    0);
	client_req(&l, &h, body, n);
	h = rq(SMB2_LOCK, 7, 1, 1);
	h.flags |= SMB2_FLAGS_RELATED_OPERATIONS;
	memset(body, 0, 48);
	px_put_u16(body, 48);
	px_put_u16(body + 2, 1);                        /* one lock */
	memset(body + 8, 0xff, 16);                     /* the CREATE's */
	px_put_u64(body + 24, 0);
	px_put_u64(body + 32, 100);
	px_put_u32(body + 40, 0x2 | 0x10);  /* exclusive, fail immediately */
	client_req(&l, &h, body, 48);
	/* the answers, one compound: the CREATE's FileId carries over */
	memset(&last, 0xff, sizeof(last));
	h = rs(SMB2_CREATE, 6, 1, 0);
	n = create_rsp_body(body, 0, 79);
	mk(&m, &h, body, n);
	px_ledger_server_response(&l, &m.h, &m.e, &last, &p, &interim);
	px_pending_free(p);
	o = px_open_find(&l, &fid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_FALSE(o->locked);
	h = rs(SMB2_LOCK, 7, 1, 0);
	h.flags |= SMB2_FLAGS_RELATED_OPERATIONS;
	memset(body, 0, 4);
	px_put_u16(body, 4);
	mk(&m, &h, body, 4);
	px_ledger_server_response(&l, &m.h, &m.e, &last, &p, &interim);
	px_pending_free(p);
	CU_ASSERT_TRUE(o->locked);
	CU_ASSERT_EQUAL(l.errors, 0);
	px_ledger_free(&l);
	pol_free(cfg);
}

/* A READ the server may answer compressed (compression negotiated, and
 * the READ asks for it or its share has CompressData): smbaccel must turn
 * the connection opaque before it goes; not without compression. */
static void
test_read_compressed(void)
{
	struct px_ledger l;
	struct smb2_hdr_out h;
	struct msg m;
	uint8_t body[64];
	struct px_tree *t;
	struct pol_config *cfg = ledger_with_tree(&l);

	h = rq(SMB2_READ, 6, 1, 1);
	memset(body, 0, 49);
	px_put_u16(body, 49);
	px_put_u32(body + 4, 4096);
	body[3] = 0x02;                 /* SMB2_READFLAG_REQUEST_COMPRESSED */
	mk(&m, &h, body, 49);
	CU_ASSERT_FALSE(px_ledger_read_compressed(&l, m.b, m.e.len));
	l.compression = true;
	CU_ASSERT_TRUE(px_ledger_read_compressed(&l, m.b, m.e.len));
	body[3] = 0;
	mk(&m, &h, body, 49);
	CU_ASSERT_FALSE(px_ledger_read_compressed(&l, m.b, m.e.len));
	t = px_tree_find(&l, 0x1234, 7);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	t->share_flags |= 0x00100000;   /* SMB2_SHAREFLAG_COMPRESS_DATA */
	CU_ASSERT_TRUE(px_ledger_read_compressed(&l, m.b, m.e.len));
	px_ledger_free(&l);
	pol_free(cfg);
}

/* A CREATE the server answers async (STATUS_PENDING first: it waited for
 * another client's break): the final answer's header holds an AsyncId
 * where the tree id would be, so the open's tree is the request's. */
static void
test_async_create_tree(void)
{
	struct px_ledger l;
	struct smb2_hdr_out h;
	struct px_open *o;
	struct smb2_fileid fid = { 78, 178 };
	uint8_t body[512];
	bool interim = false;
	size_t n;
	struct pol_config *cfg = ledger_with_tree(&l);

	h = rq(SMB2_CREATE, 6, 1, 1);
	n = create_req_body(body, "report.docx", GENERIC_READ, 0, 0);
	client_req(&l, &h, body, n);
	h = rs(SMB2_CREATE, 6, 1, NT_STATUS_PENDING);
	h.flags |= SMB2_FLAGS_ASYNC_COMMAND;
	h.tree_id = 0x2a;       /* bytes 36..39: the AsyncId's high half */
	(void)server_rsp(&l, &h, err_body, sizeof(err_body), &interim);
	CU_ASSERT_TRUE(interim);        /* the entry waits for the final one */
	h = rs(SMB2_CREATE, 6, 0, 0);
	h.flags |= SMB2_FLAGS_ASYNC_COMMAND;
	h.tree_id = 0x2a;
	n = create_rsp_body(body, 0, 78);
	px_pending_free(server_rsp(&l, &h, body, n, &interim));
	CU_ASSERT_FALSE(interim);
	o = px_open_find(&l, &fid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->session_id, 0x1234);
	CU_ASSERT_EQUAL(o->tree_id, 7);
	CU_ASSERT_PTR_NOT_NULL(px_tree_find(&l, o->session_id, o->tree_id));
	CU_ASSERT_EQUAL(l.errors, 0);
	px_ledger_free(&l);
	pol_free(cfg);
}

/* Per-share totals: one entry per server and share, whatever the case;
 * a disk share's tree connects counted and its opens pointing at its
 * entry; at most PX_SHARE_STATS_MAX entries and one "*" past that. */
static void
test_share_stats(void)
{
	struct px_ledger l;
	struct px_share_stats *ss, *docs;
	const struct px_share_stats *it;
	struct px_open *o;
	struct smb2_fileid fid = { 80, 180 };
	char name[32];
	int i, count;
	struct pol_config *cfg;

	px_share_stats_free();
	cfg = ledger_with_tree(&l);     /* \\srv\docs, tree 7 */
	docs = px_share_stats_get("SRV", "Docs");
	CU_ASSERT_PTR_NOT_NULL_FATAL(docs);
	CU_ASSERT_STRING_EQUAL(docs->server, "srv");   /* as first seen */
	CU_ASSERT_EQUAL(docs->tree_connects, 1);
	connect_tree(&l, 6, "\\\\Srv\\DOCS");
	CU_ASSERT_EQUAL(docs->tree_connects, 2);
	CU_ASSERT_PTR_EQUAL(px_share_stats_first(), docs);
	CU_ASSERT_PTR_NULL(docs->next);
	/* an open of the tree points at the share's totals */
	open_file(&l, 8, "a.txt", 80);
	o = px_open_find(&l, &fid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_PTR_EQUAL(o->share_stats, docs);
	/* the bound: PX_SHARE_STATS_MAX entries, then "*" for the rest */
	for (i = 1; i < PX_SHARE_STATS_MAX + 20; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		ss = px_share_stats_get("srv", name);
		CU_ASSERT_PTR_NOT_NULL_FATAL(ss);
		CU_ASSERT_STRING_EQUAL(ss->share,
		    i < PX_SHARE_STATS_MAX ? name : "*");
	}
	for (count = 0, it = px_share_stats_first(); it; it = it->next)
		count++;
	CU_ASSERT_EQUAL(count, PX_SHARE_STATS_MAX + 1);
	/* an early share is still its own */
	CU_ASSERT_PTR_EQUAL(px_share_stats_get("srv", "docs"), docs);
	CU_ASSERT_EQUAL(l.errors, 0);
	px_ledger_free(&l);
	pol_free(cfg);
	px_share_stats_free();
	CU_ASSERT_PTR_NULL(px_share_stats_first());
}

/* smbaccel's WRITEs in flight against a client write of the same open:
 * only a real overlap counts (a write inside the hull of those in flight
 * but between them does not), touching is not overlapping, and neither
 * a READ in flight nor a WRITE of another open counts. */
static void
test_writes_overlap(void)
{
	struct px_ledger l;
	struct px_open a, b;
	struct px_pending *p;
	const struct {
		uint64_t mid;
		uint16_t cmd;
		struct px_open *o;
		uint64_t off;
		uint32_t len;
	} fl[] = {
		{ 100, SMB2_WRITE, &a, 0, 1024 },
		{ 101, SMB2_WRITE, &a, 8192, 1024 },
		{ 102, SMB2_READ, &a, 4096, 1024 },
		{ 103, SMB2_WRITE, &b, 2048, 1024 },
	};
	size_t i;

	px_ledger_init(&l, 1);
	for (i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
		p = px_pending_add(&l, fl[i].mid);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		p->origin = PX_ORIGIN_PROXY;
		p->command = fl[i].cmd;
		p->u.io.open = fl[i].o;
		p->u.io.offset = fl[i].off;
		p->u.io.length = fl[i].len;
	}
	CU_ASSERT_TRUE(px_open_writes_overlap(&l, &a, 512, 1024));
	CU_ASSERT_TRUE(px_open_writes_overlap(&l, &a, 9215, 1));
	CU_ASSERT_TRUE(px_open_writes_overlap(&l, &a, 0, 65536));
	CU_ASSERT_FALSE(px_open_writes_overlap(&l, &a, 1024, 1024));  /* touches */
	CU_ASSERT_FALSE(px_open_writes_overlap(&l, &a, 2048, 1024));  /* b's */
	CU_ASSERT_FALSE(px_open_writes_overlap(&l, &a, 4096, 1024));  /* a READ */
	CU_ASSERT_FALSE(px_open_writes_overlap(&l, &a, 7168, 1024));
	CU_ASSERT_TRUE(px_open_writes_overlap(&l, &b, 3000, 10));
	/* a client's own WRITE in flight is not smbaccel's */
	p = px_pending_add(&l, 104);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	p->origin = PX_ORIGIN_CLIENT;
	p->command = SMB2_WRITE;
	p->u.io.open = &a;
	p->u.io.offset = 20000;
	p->u.io.length = 100;
	CU_ASSERT_FALSE(px_open_writes_overlap(&l, &a, 20000, 100));
	px_ledger_free(&l);
}

/* A client's WRITE, SET_INFO or IOCTL of a file in flight (for the read
 * caches, px_ledger_changing): by its open's name (leading separator and
 * case aside) and share, until answered; a READ is none; a WRITE related
 * to the CREATE of its compound names the file by that CREATE. */
static void
test_changing(void)
{
	struct px_ledger l;
	struct smb2_hdr_out h;
	uint8_t body[512];
	size_t n;
	struct pol_config *cfg = ledger_with_tree(&l);     /* \\srv\docs */

	open_file(&l, 6, "dir\\Report.doc", 77);
	CU_ASSERT_FALSE(px_ledger_changing(&l, "docs", "dir\\report.doc", NULL));
	/* a READ in flight changes nothing */
	h = rq(SMB2_READ, 7, 1, 1);
	n = fid_body(body, 49, 77);
	memmove(body + 16, body + 8, 16);     /* FileId at 16 (2.2.19) */
	client_req(&l, &h, body, n);
	CU_ASSERT_FALSE(px_ledger_changing(&l, "docs", "dir\\report.doc", NULL));
	/* a WRITE does, until its answer */
	h = rq(SMB2_WRITE, 8, 1, 1);
	n = fid_body(body, 49, 77);
	memmove(body + 16, body + 8, 16);     /* FileId at 16 (2.2.21) */
	client_req(&l, &h, body, n);
	CU_ASSERT_TRUE(px_ledger_changing(&l, "docs", "dir\\report.doc", NULL));
	CU_ASSERT_TRUE(px_ledger_changing(&l, "DOCS", "\\DIR\\REPORT.DOC", NULL));
	CU_ASSERT_FALSE(px_ledger_changing(&l, "docs", "dir\\other.doc", NULL));
	CU_ASSERT_FALSE(px_ledger_changing(&l, "other", "dir\\report.doc", NULL));
	memset(body, 0, 17);
	px_put_u16(body, 17);
	h = rs(SMB2_WRITE, 8, 1, 0);
	px_pending_free(server_rsp(&l, &h, body, 17, NULL));
	CU_ASSERT_FALSE(px_ledger_changing(&l, "docs", "dir\\report.doc", NULL));
	/* SET_INFO and IOCTL of it */
	h = rq(SMB2_SET_INFO, 9, 1, 1);
	n = fid_body(body, 33, 77);
	memmove(body + 16, body + 8, 16);     /* FileId at 16 (2.2.39) */
	client_req(&l, &h, body, n);
	CU_ASSERT_TRUE(px_ledger_changing(&l, "docs", "dir\\report.doc", NULL));
	h = rs(SMB2_SET_INFO, 9, 1, 0);
	px_pending_free(server_rsp(&l, &h, err_body, 2, NULL));
	CU_ASSERT_FALSE(px_ledger_changing(&l, "docs", "dir\\report.doc", NULL));
	h = rq(SMB2_IOCTL, 10, 1, 1);
	n = fid_body(body, 57, 77);
	client_req(&l, &h, body, n);
	CU_ASSERT_TRUE(px_ledger_changing(&l, "docs", "dir\\report.doc", NULL));
	/* by the on-disk id of the open it changes: another name of the
	 * file, through another share; the opens' order is left alone */
	{
		struct smb2_fileid fid77 = { 77, 177 };
		struct px_open *o = px_open_find(&l, &fid77), *head;
		struct co_dc_valid id;

		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		open_file(&l, 13, "else.doc", 78);
		head = l.opens;
		CU_ASSERT_PTR_NOT_EQUAL(head, o);
		memset(&id, 0, sizeof(id));
		id.disk_id[0] = 5;
		CU_ASSERT_FALSE(px_ledger_changing(&l, "other", "link.doc", &id));
		id.has_disk_id = true;
		CU_ASSERT_FALSE(px_ledger_changing(&l, "other", "link.doc", &id));
		o->dcv.has_disk_id = true;
		o->dcv.disk_id[0] = 5;
		CU_ASSERT_TRUE(px_ledger_changing(&l, "other", "link.doc", &id));
		id.disk_id[0] = 6;
		CU_ASSERT_FALSE(px_ledger_changing(&l, "other", "link.doc", &id));
		CU_ASSERT_PTR_EQUAL(l.opens, head);
	}
	/* a related WRITE (FileId all FF) after a CREATE of another file,
	 * both in flight */
	h = rq(SMB2_CREATE, 11, 1, 1);
	n = create_req_body(body, "new.txt", GENERIC_WRITE, 0, 0);
	client_req(&l, &h, body, n);
	h = rq(SMB2_WRITE, 12, 1, 1);
	h.flags = SMB2_FLAGS_RELATED_OPERATIONS;
	n = fid_body(body, 49, 0);
	memset(body + 16, 0xFF, 16);
	client_req(&l, &h, body, n);
	CU_ASSERT_TRUE(px_ledger_changing(&l, "docs", "new.txt", NULL));
	CU_ASSERT_FALSE(px_ledger_changing(&l, "docs", "old.txt", NULL));
	CU_ASSERT_EQUAL(l.errors, 0);
	px_ledger_free(&l);
	pol_free(cfg);
}

/* Names a client chose, as shown: control characters (C0, DEL, C1)
 * escaped, everything else (UTF-8 letters, backslashes) as it is; the cut
 * never splits an escape. */
static void
test_str_safe(void)
{
	char b[64], small[8];

	CU_ASSERT_STRING_EQUAL(px_str_safe("docs", b, sizeof(b)), "docs");
	CU_ASSERT_STRING_EQUAL(px_str_safe("a\nb\r", b, sizeof(b)),
	    "a\\x0ab\\x0d");
	CU_ASSERT_STRING_EQUAL(px_str_safe("\x1b[31mred\x7f", b, sizeof(b)),
	    "\\x1b[31mred\\x7f");
	/* U+009B (CSI in C1) and U+0085 (NEL) escaped; U+00A0, U+00E9 and
	 * U+65E5 kept */
	CU_ASSERT_STRING_EQUAL(px_str_safe("\xc2\x9b" "2J\xc2\x85", b, sizeof(b)),
	    "\\u009b2J\\u0085");
	CU_ASSERT_STRING_EQUAL(px_str_safe("\xc2\xa0" "caf\xc3\xa9 \xe6\x97\xa5", b,
	    sizeof(b)), "\xc2\xa0" "caf\xc3\xa9 \xe6\x97\xa5");
	/* bytes of no well-formed UTF-8 sequence: a lone continuation, a
	 * cut sequence, an overlong "/", a surrogate, past U+10FFFF; then a
	 * 4-byte sequence kept */
	CU_ASSERT_STRING_EQUAL(px_str_safe("a\x80" "b\xe6\x97" "c", b, sizeof(b)),
	    "a\\x80b\\xe6\\x97c");
	CU_ASSERT_STRING_EQUAL(px_str_safe("\xc0\xaf\xed\xa0\x80", b, sizeof(b)),
	    "\\xc0\\xaf\\xed\\xa0\\x80");
	CU_ASSERT_STRING_EQUAL(px_str_safe("\xf4\x90\x80\x80|\xf0\x9f\x98\x80", b,
	    sizeof(b)), "\\xf4\\x90\\x80\\x80|\xf0\x9f\x98\x80");
	CU_ASSERT_STRING_EQUAL(px_str_safe("\xe6\x97", b, sizeof(b)),
	    "\\xe6\\x97");
	CU_ASSERT_STRING_EQUAL(px_str_safe("dir\\file", b, sizeof(b)),
	    "dir\\file");
	CU_ASSERT_STRING_EQUAL(px_str_safe(NULL, b, sizeof(b)), "");
	/* 7 bytes of room: "ab" and one escape fit, the second does not */
	CU_ASSERT_STRING_EQUAL(px_str_safe("ab\n\n", small, sizeof(small)),
	    "ab\\x0a");
	CU_ASSERT_STRING_EQUAL(px_str_safe("abcdefghij", small, sizeof(small)),
	    "abcdefg");
	CU_ASSERT_STRING_EQUAL(px_str_safe("abcd\xc2\x9b", small, sizeof(small)),
	    "abcd");
}

/* What emit logs at level info, into a temporary file standing for
 * stderr, with $JOURNAL_STREAM set to js ("" for that file's device:inode,
 * NULL for unset); out gets what was written. */
static void
log_capture(const char *js, void (*emit)(void), char *out, size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO), level = log_get_level();
	struct stat st;
	char env[64];
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
	CU_ASSERT_FATAL(saved >= 0 && fstat(fileno(tmp), &st) == 0);
	if (js == NULL)
		unsetenv("JOURNAL_STREAM");
	else {
		if (*js == '\0') {
			snprintf(env, sizeof(env), "%llu:%llu",
			    (unsigned long long)st.st_dev,
			    (unsigned long long)st.st_ino);
			js = env;
		}
		setenv("JOURNAL_STREAM", js, 1);
	}
	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	log_init(PX_LOG_INFO, true);
	emit();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	unsetenv("JOURNAL_STREAM");
	log_init(level, true);          /* looks at stderr again */
	rewind(tmp);
	n = fread(out, 1, len - 1, tmp);
	fclose(tmp);
	out[n] = '\0';
}

static void
emit_forged(void)
{
	log_info("share=%s file=%s done", "ev\n12:00:00.000 smbaccel[error] "
	    "forged", "x\x1b[2J");
	log_info("plain %s", "caf\xc3\xa9");
}

/* A log line is one line, whatever the names in it: a newline or an
 * escape in an argument comes out escaped, the line's own text as it is. */
static void
test_log_one_line(void)
{
	char out[512], *nl;

	log_capture(NULL, emit_forged, out, sizeof(out));
	/* two lines, the first with the names escaped */
	nl = strchr(out, '\n');
	CU_ASSERT_PTR_NOT_NULL_FATAL(nl);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "smbaccel[info] share=ev\\x0a12:00:00.000 "
	    "smbaccel[error] forged file=x\\x1b[2J done\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(nl + 1, "smbaccel[info] plain caf\xc3\xa9\n"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(strchr(nl + 1, '\n'));
	CU_ASSERT_PTR_NULL(strchr(strchr(nl + 1, '\n') + 1, '\n'));
	CU_ASSERT_PTR_NULL(strchr(out, '\x1b'));
}

static void
emit_levels(void)
{
	log_warnx("w %s", "a\nb");
	log_info("i");
	log_debug("d");
}

/* Under journald (stderr is the stream $JOURNAL_STREAM names) a line is
 * its priority prefix and the message; anywhere else (not set, or naming
 * another stream, as for a child of a unit whose stderr was redirected)
 * a time and a level tag. */
static void
test_log_journal(void)
{
	char out[512];

	log_capture("", emit_levels, out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "<4>w a\\x0ab\n<6>i\n");
	log_capture("1:2", emit_levels, out, sizeof(out));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " smbaccel[warn] w a\\x0ab\n"));
	CU_ASSERT_PTR_NULL(strchr(out, '<'));
	log_capture(NULL, emit_levels, out, sizeof(out));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " smbaccel[info] i\n"));
	log_capture("junk", emit_levels, out, sizeof(out));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " smbaccel[info] i\n"));
}

/* Lines a flood can cause: `burst` per interval, the rest counted and
 * named by the next line logged; a quiet spell starts a new interval. */
static void
test_lograte(void)
{
	struct px_lograte r;
	char more[64];
	int i, logged = 0;
	unsigned long long told = 0;

	memset(&r, 0, sizeof(r));
	for (i = 0; i < 100; i++)       /* 100 in the first second */
		logged += px_lograte_ok(&r, 1000.0 + i * 10, 5, 10000.0);
	CU_ASSERT_EQUAL(logged, 5);
	CU_ASSERT_EQUAL(r.held, 95);
	CU_ASSERT_STRING_EQUAL(px_lograte_more(&r, more, sizeof(more)), "");
	/* still the same interval at 10.9 s */
	CU_ASSERT_FALSE(px_lograte_ok(&r, 10999.0, 5, 10000.0));
	/* the next interval: logged, saying how many were not */
	CU_ASSERT_TRUE(px_lograte_ok(&r, 11000.0, 5, 10000.0));
	CU_ASSERT_STRING_EQUAL(px_lograte_more(&r, more, sizeof(more)),
	    " (96 more like it not logged)");
	CU_ASSERT_EQUAL(r.held, 0);
	CU_ASSERT_TRUE(px_lograte_ok(&r, 11001.0, 5, 10000.0));
	CU_ASSERT_STRING_EQUAL(px_lograte_more(&r, more, sizeof(more)), "");
	/* over 100 s, 10 a second: every call logged or counted once */
	for (i = 0, logged = 0; i < 1000; i++)
		if (px_lograte_ok(&r, 12000.0 + i * 100, 5, 10000.0)) {
			logged++;
			told += r.told;
		}
	CU_ASSERT_EQUAL(logged + told + r.held, 1000);
	CU_ASSERT(logged >= 5 * 10 && logged <= 5 * 11);
}

/* A server name with a newline and an escape (the client chose it) is
 * kept, and shown, escaped; the same name again is the same entry. */
static void
test_share_stats_names(void)
{
	struct px_share_stats *ss;

	px_share_stats_free();
	ss = px_share_stats_get("ev\nil\x1b[31m", "share");
	CU_ASSERT_PTR_NOT_NULL_FATAL(ss);
	CU_ASSERT_STRING_EQUAL(ss->server, "ev\\x0ail\\x1b[31m");
	CU_ASSERT_PTR_EQUAL(px_share_stats_get("EV\nIL\x1b[31m", "SHARE"), ss);
	CU_ASSERT_PTR_NULL(ss->next);
	px_share_stats_free();
}

/* A related element of a compound is of the session and tree of the one
 * before it, whatever its header says (MS-SMB2 3.3.5.2.7.2): a client
 * that puts 0 there (and a server that echoes it) still has its open
 * filed under the tree, and a related TREE_DISCONNECT drops that tree. */
static void
test_related_ids(void)
{
	struct px_ledger l;
	struct smb2_hdr_out h;
	struct px_open *o;
	struct smb2_fileid fid = { 79, 179 };
	uint8_t body[512];
	uint64_t sid;
	uint32_t tid;
	size_t n;
	struct pol_config *cfg = ledger_with_tree(&l);

	/* an ECHO of the tree, then a related CREATE with ids 0 */
	h = rq(SMB2_ECHO, 6, 1, 1);
	client_req(&l, &h, echo_body, sizeof(echo_body));
	h = rq(SMB2_CREATE, 7, 1, 1);
	h.flags |= SMB2_FLAGS_RELATED_OPERATIONS;
	h.session_id = 0;
	h.tree_id = 0;
	n = create_req_body(body, "memo.txt", GENERIC_READ, 0, 0);
	client_req_ids(&l, &h, body, n, &sid, &tid);
	CU_ASSERT_EQUAL(sid, 0x1234);
	CU_ASSERT_EQUAL(tid, 7);
	h = rs(SMB2_ECHO, 6, 1, 0);
	px_pending_free(server_rsp(&l, &h, echo_body, sizeof(echo_body), NULL));
	h = rs(SMB2_CREATE, 7, 1, 0);
	h.flags |= SMB2_FLAGS_RELATED_OPERATIONS;
	h.session_id = 0;
	h.tree_id = 0;
	n = create_rsp_body(body, 0, 79);
	px_pending_free(server_rsp(&l, &h, body, n, NULL));
	o = px_open_find(&l, &fid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(o->session_id, 0x1234);
	CU_ASSERT_EQUAL(o->tree_id, 7);
	/* a standalone request is of its own header's ids */
	h = rq(SMB2_ECHO, 8, 1, 1);
	h.tree_id = 9;
	client_req_ids(&l, &h, echo_body, sizeof(echo_body), &sid, &tid);
	CU_ASSERT_EQUAL(tid, 9);
	h = rs(SMB2_ECHO, 8, 1, 0);
	px_pending_free(server_rsp(&l, &h, echo_body, sizeof(echo_body), NULL));
	/* a related TREE_DISCONNECT after an element of tree 7 */
	h = rq(SMB2_ECHO, 9, 1, 1);
	client_req(&l, &h, echo_body, sizeof(echo_body));
	h = rq(SMB2_TREE_DISCONNECT, 10, 1, 1);
	h.flags |= SMB2_FLAGS_RELATED_OPERATIONS;
	h.tree_id = 0xFFFFFFFF;
	client_req(&l, &h, echo_body, sizeof(echo_body));
	h = rs(SMB2_ECHO, 9, 1, 0);
	px_pending_free(server_rsp(&l, &h, echo_body, sizeof(echo_body), NULL));
	h = rs(SMB2_TREE_DISCONNECT, 10, 1, 0);
	px_pending_free(server_rsp(&l, &h, echo_body, sizeof(echo_body), NULL));
	CU_ASSERT_PTR_NULL(px_tree_find(&l, 0x1234, 7));
	CU_ASSERT_EQUAL(l.errors, 0);
	/* an open on a tree the ledger does not know is an inconsistency */
	open_file(&l, 11, "memo.txt", 80);
	CU_ASSERT_EQUAL(l.errors, 1);
	px_ledger_free(&l);
	pol_free(cfg);
}

/* px_name_hash: paths strcasecmp finds equal (after leading separators)
 * hash equal, so the hash may rule a match out; others mostly differ. */
static void
test_name_hash(void)
{
	CU_ASSERT_EQUAL(px_name_hash("Docs\\Report.DOCX"),
	    px_name_hash("docs\\report.docx"));
	CU_ASSERT_EQUAL(px_name_hash("\\docs\\a.txt"),
	    px_name_hash("docs\\A.TXT"));
	CU_ASSERT_EQUAL(px_name_hash("/x"), px_name_hash("X"));
	CU_ASSERT_EQUAL(px_name_hash(""), px_name_hash("\\"));
	CU_ASSERT_NOT_EQUAL(px_name_hash("a.txt"), px_name_hash("b.txt"));
	CU_ASSERT_NOT_EQUAL(px_name_hash("dir\\a"), px_name_hash("dir\\a\\b"));
	CU_ASSERT_NOT_EQUAL(px_name_hash("ab"), px_name_hash("ba"));
	/* the names px_same_file_name takes for one file: ::$DATA too */
	CU_ASSERT_TRUE(px_same_file_name("Docs\\a.txt::$DATA", "docs\\A.TXT"));
	CU_ASSERT_EQUAL(px_name_hash("Docs\\a.txt::$DATA"),
	    px_name_hash("docs\\A.TXT"));
	CU_ASSERT_NOT_EQUAL(px_name_hash("a.txt:s:$DATA"), px_name_hash("a.txt"));
	CU_ASSERT_EQUAL(px_name_hash(NULL), 0);
}

static void
test_access_rules(void)
{
	struct px_open o;

	memset(&o, 0, sizeof(o));
	o.desired_access = FILE_READ_DATA;
	CU_ASSERT_FALSE(px_open_write_access(&o));
	o.desired_access = FILE_WRITE_DATA;
	CU_ASSERT_TRUE(px_open_write_access(&o));
	o.desired_access = GENERIC_ALL;
	CU_ASSERT_TRUE(px_open_write_access(&o));
	/* MAXIMUM_ALLOWED only with write in the maximal-access answer */
	o.desired_access = MAXIMUM_ALLOWED;
	CU_ASSERT_FALSE(px_open_write_access(&o));
	o.maximal_access = FILE_READ_DATA;
	CU_ASSERT_FALSE(px_open_write_access(&o));
	o.maximal_access = 0x1f01ff;
	CU_ASSERT_TRUE(px_open_write_access(&o));
	/* leases: W for writes, R for reads */
	o.oplock = SMB2_OPLOCK_LEVEL_LEASE;
	o.has_lease = true;
	o.lease_state = SMB2_LEASE_READ | SMB2_LEASE_HANDLE;
	CU_ASSERT_FALSE(px_open_write_caching(&o));
	CU_ASSERT_TRUE(px_open_read_caching(&o));
	o.lease_state |= SMB2_LEASE_WRITE;
	CU_ASSERT_TRUE(px_open_write_caching(&o));
	o.oplock = SMB2_OPLOCK_LEVEL_NONE;
	CU_ASSERT_FALSE(px_open_read_caching(&o));
	o.oplock = SMB2_OPLOCK_LEVEL_EXCLUSIVE;
	CU_ASSERT_TRUE(px_open_write_caching(&o));
}

/*
 * A server that answers an SMB1 multi-protocol NEGOTIATE in SMB2 with
 * MessageId 0: smbd with the wildcard 0x02FF (the client negotiates again
 * with id 1), impacket's server directly with 0x0202.  Either answer is
 * the NEGOTIATE of id 0: no inconsistency, the dialect is known.
 */
static void
neg_rsp_body(uint8_t *b, uint16_t dialect)
{
	memset(b, 0, 65);
	b[0] = 65;                       /* StructureSize */
	b[4] = (uint8_t)dialect;         /* DialectRevision */
	b[5] = (uint8_t)(dialect >> 8);
	b[28] = 0; b[29] = 0; b[30] = 1; /* MaxTransactSize 64 KiB */
	b[32] = 0; b[33] = 0; b[34] = 1; /* MaxReadSize */
	b[36] = 0; b[37] = 0; b[38] = 1; /* MaxWriteSize */
	b[56] = 128;                     /* SecurityBufferOffset, length 0 */
}

static void
test_smb1_negotiate(void)
{
	static const uint16_t dialects[] = { SMB2_DIALECT_0202,
	    SMB2_DIALECT_WILDCARD };
	size_t i;

	for (i = 0; i < 2; i++) {
		struct px_ledger l;
		uint8_t body[65];
		struct smb2_hdr_out h = rs(SMB2_NEGOTIATE, 0, 1, 0);
		struct px_pending *p;

		px_ledger_init(&l, 1);
		px_ledger_smb1_negotiate(&l);
		neg_rsp_body(body, dialects[i]);
		h.session_id = 0;
		h.tree_id = 0;
		p = server_rsp(&l, &h, body, sizeof(body), NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		CU_ASSERT_EQUAL(p->command, SMB2_NEGOTIATE);
		px_pending_free(p);
		CU_ASSERT_EQUAL(l.errors, 0);
		CU_ASSERT_EQUAL(l.dialect, dialects[i]);
		CU_ASSERT_EQUAL(l.negotiated, dialects[i] == SMB2_DIALECT_0202);
		CU_ASSERT_EQUAL(l.max_write, 65536);
		CU_ASSERT_EQUAL(l.cr.client_next, 1);
		/* the client's next request is id 1, inside its grant */
		{
			struct smb2_hdr_out q = rq(SMB2_NEGOTIATE, 1, 1, 1);
			struct msg m;

			q.session_id = 0;
			mk(&m, &q, echo_body, sizeof(echo_body));
			p = px_ledger_client_request(&l, &m.h, &m.e, false, NULL);
			CU_ASSERT_PTR_NOT_NULL(p);
			CU_ASSERT_EQUAL(l.errors, 0);
		}
		px_ledger_free(&l);
	}
}

/* openidx.c: the opens by FileId, the busy list, the locked count,
 * against a plain array; fids chosen to collide in the table. */
static struct px_open *
idx_open(uint64_t persistent, uint64_t vol)
{
	struct px_open *o = calloc(1, sizeof(*o));

	if (o == NULL)
		return NULL;
	o->fid.persistent = persistent;
	o->fid.volatile_ = vol;
	co_extent_init(&o->wb);
	co_ra_init(&o->ra);
	return o;
}

static void
test_open_index(void)
{
	enum { N = 5000 };
	static struct px_open *ref[N];
	struct px_ledger l;
	struct smb2_fileid f;
	size_t i, n = 0, busy;
	unsigned int seed = 7;

	px_ledger_init(&l, 1);
	CU_ASSERT_PTR_NULL(px_opens_get(&l, &(struct smb2_fileid){ 1, 1 }));
	/* many, some with one persistent id (collisions by construction),
	 * checked after each */
	for (i = 0; i < N; i++) {
		ref[n] = idx_open(i % 3 == 0 ? 42 : i, i * 16);
		CU_ASSERT_FATAL(ref[n] != NULL);
		CU_ASSERT_EQUAL(px_opens_link(&l, ref[n]), 0);
		CU_ASSERT_PTR_EQUAL(l.opens, ref[n]);
		n++;
	}
	CU_ASSERT_EQUAL(l.nopens, N);
	CU_ASSERT(px_opens_sane(&l));
	for (i = 0; i < n; i++)
		CU_ASSERT_PTR_EQUAL(px_opens_get(&l, &ref[i]->fid), ref[i]);
	f.persistent = 42;
	f.volatile_ = 17;               /* no open has it */
	CU_ASSERT_PTR_NULL(px_opens_get(&l, &f));
	/* to the front, as px_open_find does */
	px_opens_front(&l, ref[10]);
	CU_ASSERT_PTR_EQUAL(l.opens, ref[10]);
	CU_ASSERT_PTR_EQUAL(px_open_find(&l, &ref[N - 1]->fid), ref[N - 1]);
	CU_ASSERT_PTR_EQUAL(l.opens, ref[N - 1]);
	CU_ASSERT(px_opens_sane(&l));
	/* busy ones on l.busy, and off it when they are no longer */
	CU_ASSERT_PTR_NULL(l.busy);
	for (i = 0; i < n; i += 100) {
		ref[i]->wb_inflight = 1;
		px_open_busy_sync(&l, ref[i]);
		px_open_busy_sync(&l, ref[i]);  /* twice: once on the list */
	}
	px_open_lock(&l, ref[5]);
	px_open_lock(&l, ref[5]);
	px_open_lock(&l, ref[6]);
	CU_ASSERT_EQUAL(l.nlocked, 2);
	CU_ASSERT(px_opens_sane(&l));
	for (busy = 0, i = 0; i < n; i++)
		busy += ref[i]->busy_pprev != NULL;
	CU_ASSERT_EQUAL(busy, (N + 99) / 100);
	ref[0]->wb_inflight = 0;
	px_open_busy_sync(&l, ref[0]);
	CU_ASSERT_PTR_NULL(ref[0]->busy_pprev);
	CU_ASSERT(px_opens_sane(&l));
	/* out at random (busy, locked, head, tail, middle), some back in */
	for (i = 0; i < 3 * N; i++) {
		size_t k = (size_t)rand_r(&seed) % n;

		if (i % 3 == 2 && n < N) {
			ref[n] = idx_open(42, (uint64_t)N * 16 + i);
			CU_ASSERT_FATAL(ref[n] != NULL);
			CU_ASSERT_EQUAL(px_opens_link(&l, ref[n]), 0);
			n++;
			continue;
		}
		px_opens_unlink(&l, ref[k]);
		CU_ASSERT_PTR_NULL(px_opens_get(&l, &ref[k]->fid));
		CU_ASSERT_PTR_NULL(ref[k]->busy_pprev);
		px_opens_unlink(&l, ref[k]);    /* a second time: nothing */
		px_open_free(ref[k]);
		ref[k] = ref[--n];
		if (i % 500 == 0) {
			CU_ASSERT(px_opens_sane(&l));
		}
		if (n == 0)
			break;
	}
	CU_ASSERT(px_opens_sane(&l));
	CU_ASSERT_EQUAL(l.nopens, n);
	for (i = 0; i < n; i++)
		CU_ASSERT_PTR_EQUAL(px_opens_get(&l, &ref[i]->fid), ref[i]);
	CU_ASSERT(l.fid_cap <= 4 * (size_t)N);
	px_ledger_free(&l);     /* frees the rest (ASan: no leak) */
	CU_ASSERT_PTR_NULL(l.opens);
	CU_ASSERT_PTR_NULL(l.fid_tab);
}

void
ut_register_ledger(void)
{
	CU_pSuite s = CU_add_suite("ledger", NULL, NULL);

	CU_add_test(s, "pending table vs reference", test_pending_table);
	CU_add_test(s, "credit flow and inconsistencies", test_credit_flow);
	CU_add_test(s, "bank from proxy requests", test_bank_from_proxy_requests);
	CU_add_test(s, "async interim responses", test_async_interim);
	CU_add_test(s, "tree/open/break lifecycle", test_tree_open_lifecycle);
	CU_add_test(s, "tree path not decoded: no gate", test_tree_path_undecoded);
	CU_add_test(s, "related LOCK of a compound's CREATE", test_related_lock);
	CU_add_test(s, "READ answered compressed", test_read_compressed);
	CU_add_test(s, "async CREATE answer: the request's tree", test_async_create_tree);
	CU_add_test(s, "related elements: the previous element's ids", test_related_ids);
	CU_add_test(s, "per-share totals", test_share_stats);
	CU_add_test(s, "smbaccel's writes in flight: overlap", test_writes_overlap);
	CU_add_test(s, "names shown escaped", test_str_safe);
	CU_add_test(s, "a log line stays one line", test_log_one_line);
	CU_add_test(s, "log lines of a flood: bounded, counted", test_lograte);
	CU_add_test(s, "log lines under journald: priority prefixes", test_log_journal);
	CU_add_test(s, "per-share totals: names escaped", test_share_stats_names);
	CU_add_test(s, "access and caching rules", test_access_rules);
	CU_add_test(s, "path hash as strcasecmp compares", test_name_hash);
	CU_add_test(s, "changes of a file in flight", test_changing);
	CU_add_test(s, "SMB1 negotiate answered in SMB2", test_smb1_negotiate);
	CU_add_test(s, "opens indexed: FileId, busy, locked", test_open_index);
}
