/*
 * keytab.c - the server keys smbaccel holds for Kerberos sessions, and the
 * Kerberos cryptography, both through MIT krb5 (DESIGN.md section 7).
 *
 * A keytab holds the long-term keys of the file server's account: whoever
 * has it can decrypt every ticket issued to that server and impersonate
 * the server to clients.  So it gets the rules of the secrets file
 * (px_secret_file_open): a regular file, not a symbolic link, owned by
 * root with no group or other permission bits, checked on the opened
 * descriptor, bounded in size.  The file is read
 * once into memory and walked record by record (MIT's keytab reader stops
 * quietly at a truncated record, which would drop keys without a word);
 * the bytes walked are then handed to krb5's keytab API through a memfd,
 * so krb5 reads exactly what was checked, and every entry krb5 returns is
 * copied into a flat table.  The library context is made from an empty
 * profile: no krb5.conf is read, none is needed for the crypto.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <krb5.h>
#include <profile.h>

#include <openssl/crypto.h>

#include "proxy/auth/auth.h"
#include "proxy/auth/der.h"

struct kt_entry {
	char principal[PX_KRB_NAME_MAX];
	uint32_t kvno;
	struct px_krb_key key;
};

struct px_keytab {
	size_t n;
	struct kt_entry *e;
};

static krb5_context kctx;

int
px_krb_init(char *err, size_t errlen)
{
	profile_t prof = NULL;
	long prc;
	krb5_error_code rc;

	if (kctx != NULL)
		return 0;
	if ((prc = profile_init(NULL, &prof)) != 0) {
		snprintf(err, errlen, "cannot set up the krb5 library: "
		    "profile_init: error %ld", prc);
		return -1;
	}
	rc = krb5_init_context_profile(prof, KRB5_INIT_CONTEXT_SECURE, &kctx);
	profile_release(prof);
	if (rc != 0) {
		snprintf(err, errlen, "cannot set up the krb5 library: "
		    "error %ld", (long)rc);
		kctx = NULL;
		return -1;
	}
	return 0;
}

static bool
ready(void)
{
	char err[128];

	return px_krb_init(err, sizeof(err)) == 0;
}

const char *
px_krb_enctype_name(int32_t enctype)
{
	static char buf[32];

	switch (enctype) {
	case PX_ENCTYPE_AES128_SHA1: return "aes128-cts-hmac-sha1-96";
	case PX_ENCTYPE_AES256_SHA1: return "aes256-cts-hmac-sha1-96";
	case PX_ENCTYPE_RC4_HMAC: return "rc4-hmac";
	case 19: return "aes128-cts-hmac-sha256-128";
	case 20: return "aes256-cts-hmac-sha384-192";
	}
	snprintf(buf, sizeof(buf), "enctype-%ld", (long)enctype);
	return buf;
}

/* ---- crypto ---------------------------------------------------------------- */

static void
keyblock(const struct px_krb_key *key, krb5_keyblock *kb)
{
	memset(kb, 0, sizeof(*kb));
	kb->magic = KV5M_KEYBLOCK;
	kb->enctype = key->enctype;
	kb->length = (unsigned)key->len;
	kb->contents = (krb5_octet *)(uintptr_t)key->bytes;
}

int
px_krb_decrypt(const struct px_krb_key *key, int32_t usage,
    const uint8_t *in, size_t inlen, uint8_t *out, size_t *outlen)
{
	krb5_keyblock kb;
	krb5_enc_data ed;
	krb5_data od;

	if (!ready() || key->len == 0 || key->len > PX_KRB_KEY_MAX ||
	    inlen == 0 || inlen > PX_KRB_CIPHER_MAX || *outlen < inlen ||
	    !krb5_c_valid_enctype(key->enctype))
		return -1;
	keyblock(key, &kb);
	memset(&ed, 0, sizeof(ed));
	ed.magic = KV5M_ENC_DATA;
	ed.enctype = key->enctype;
	ed.ciphertext.magic = KV5M_DATA;
	ed.ciphertext.length = (unsigned)inlen;
	ed.ciphertext.data = (char *)(uintptr_t)in;
	memset(&od, 0, sizeof(od));
	od.magic = KV5M_DATA;
	od.length = (unsigned)inlen;
	od.data = (char *)out;
	if (krb5_c_decrypt(kctx, &kb, usage, NULL, &ed, &od) != 0)
		return -1;
	if (od.length > inlen)
		return -1;
	*outlen = od.length;
	return 0;
}

int
px_krb_encrypt(const struct px_krb_key *key, int32_t usage,
    const uint8_t *in, size_t inlen, uint8_t *out, size_t *outlen)
{
	krb5_keyblock kb;
	krb5_enc_data ed;
	krb5_data id;
	size_t need;

	if (!ready() || key->len == 0 || key->len > PX_KRB_KEY_MAX ||
	    inlen > PX_KRB_CIPHER_MAX || !krb5_c_valid_enctype(key->enctype) ||
	    krb5_c_encrypt_length(kctx, key->enctype, inlen, &need) != 0 ||
	    need > *outlen)
		return -1;
	keyblock(key, &kb);
	memset(&id, 0, sizeof(id));
	id.magic = KV5M_DATA;
	id.length = (unsigned)inlen;
	id.data = (char *)(uintptr_t)in;
	memset(&ed, 0, sizeof(ed));
	ed.magic = KV5M_ENC_DATA;
	ed.ciphertext.magic = KV5M_DATA;
	ed.ciphertext.length = (unsigned)need;
	ed.ciphertext.data = (char *)out;
	if (krb5_c_encrypt(kctx, &kb, usage, NULL, &id, &ed) != 0)
		return -1;
	*outlen = ed.ciphertext.length;
	return 0;
}

int
px_krb_string_to_key(int32_t enctype, const char *password, const char *salt,
    uint32_t iterations, struct px_krb_key *out)
{
	krb5_data pw, sl, params, *pp = NULL;
	krb5_keyblock kb;
	uint8_t it[4];
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!ready() || !krb5_c_valid_enctype(enctype))
		return -1;
	memset(&pw, 0, sizeof(pw));
	pw.magic = KV5M_DATA;
	pw.length = (unsigned)strlen(password);
	pw.data = (char *)(uintptr_t)password;
	memset(&sl, 0, sizeof(sl));
	sl.magic = KV5M_DATA;
	sl.length = (unsigned)strlen(salt);
	sl.data = (char *)(uintptr_t)salt;
	if (iterations != 0) {
		/* RFC 3962 4: s2kparams = the iteration count, 4 bytes BE */
		it[0] = (uint8_t)(iterations >> 24);
		it[1] = (uint8_t)(iterations >> 16);
		it[2] = (uint8_t)(iterations >> 8);
		it[3] = (uint8_t)iterations;
		memset(&params, 0, sizeof(params));
		params.magic = KV5M_DATA;
		params.length = 4;
		params.data = (char *)it;
		pp = &params;
	}
	memset(&kb, 0, sizeof(kb));
	if (krb5_c_string_to_key_with_params(kctx, enctype, &pw, &sl, pp,
	    &kb) != 0)
		return -1;
	if (kb.length > 0 && kb.length <= PX_KRB_KEY_MAX) {
		out->enctype = kb.enctype;
		out->len = kb.length;
		memcpy(out->bytes, kb.contents, kb.length);
		rc = 0;
	}
	krb5_free_keyblock_contents(kctx, &kb);
	return rc;
}

/* ---- the keytab file ------------------------------------------------------- */

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* 16-bit value of a record field, in the file's byte order. */
static uint16_t
ktu16(const uint8_t *p, bool be)
{
	uint16_t v;

	if (be)
		return (uint16_t)(p[0] << 8 | p[1]);
	memcpy(&v, p, 2);
	return v;
}

/*
 * One entry's fields must fit in its record (format page, "entry"):
 * num_components (counting the realm in version 1), counted realm and
 * components, name_type (version 2), timestamp, vno8, keyblock (type,
 * counted contents), then an optional 32-bit vno.  MIT's reader trusts
 * these counts further than it should (it leaks, and may read the next
 * record, on a lying one), so it only ever sees records that pass.  The
 * counts and lengths are 16-bit, and MIT reads them as krb5_int16: one
 * above INT16_MAX is negative to it, and it stops at that entry (leaking
 * the principal it has started) where this walk would have gone on, so
 * such a length is refused here, by name.  0, or -1 with the field and
 * what is wrong with it in why.
 */
static int
check_record(const uint8_t *r, size_t n, bool v2, char *why, size_t whysz)
{
	size_t off = 2, i, nc, l;
	char field[32];

	if (n < 2) {
		snprintf(why, whysz, "no room for its component count");
		return -1;
	}
	nc = ktu16(r, v2);
	if (nc < (v2 ? 1u : 2u) || nc > (v2 ? 16u : 17u)) {
		snprintf(why, whysz, "component count %zu, must be %s", nc,
		    v2 ? "1 to 16" : "2 to 17 with the realm (version 1)");
		return -1;
	}
	if (!v2)
		nc--;           /* version 1 counts the realm */
	for (i = 0; i <= nc; i++) {     /* realm, then the components */
		if (i == 0)
			snprintf(field, sizeof(field), "the realm");
		else
			snprintf(field, sizeof(field), "component %zu", i);
		if (n - off < 2) {
			snprintf(why, whysz, "%s's length runs past its "
			    "record", field);
			return -1;
		}
		l = ktu16(r + off, v2);
		off += 2;
		if (l == 0 || l > INT16_MAX) {
			snprintf(why, whysz, "%s's length is %zu, must be 1 to "
			    "%d", field, l, INT16_MAX);
			return -1;
		}
		if (l > n - off) {
			snprintf(why, whysz, "%s (%zu bytes) runs past its "
			    "record", field, l);
			return -1;
		}
		off += l;
	}
	l = (v2 ? 4 : 0) + 4 + 1 + 2;   /* name_type, timestamp, vno8, type */
	if (n - off < l + 2) {
		snprintf(why, whysz, "the fields after the principal run past "
		    "its record");
		return -1;
	}
	off += l;
	l = ktu16(r + off, v2);         /* key length */
	off += 2;
	if (l == 0 || l > INT16_MAX) {
		snprintf(why, whysz, "the key's length is %zu, must be 1 to %d",
		    l, INT16_MAX);
		return -1;
	}
	if (l > n - off) {
		snprintf(why, whysz, "the key (%zu bytes) runs past its record",
		    l);
		return -1;
	}
	return 0;
}

/*
 * Walk the records of a keytab image: version 0x0502 (big-endian) or
 * 0x0501 (host order), then 32-bit record sizes, negative for a hole, a
 * zero size (or the end of the file) ending the list.  Every record must
 * lie inside the file and hold a well-formed entry (check_record).
 * *nrec gets the number of entries.  0, or -1 with a reason in why.
 */
static int
walk(const uint8_t *b, size_t n, size_t *nrec, char *why, size_t whysz)
{
	size_t off = 2, cnt = 0;
	uint32_t raw;
	int64_t size;
	char what[128];

	*nrec = 0;
	if (n < 2 || b[0] != 0x05 || (b[1] != 0x01 && b[1] != 0x02)) {
		snprintf(why, whysz, "not a keytab (no 0x0502 or 0x0501 "
		    "version at its start)");
		return -1;
	}
	while (off < n) {
		if (n - off < 4) {
			snprintf(why, whysz, "truncated at byte %zu (a record "
			    "size cut short)", off);
			return -1;
		}
		if (b[1] == 0x02)
			raw = be32(b + off);
		else
			memcpy(&raw, b + off, 4);
		size = (int32_t)raw;
		off += 4;
		if (size == 0)
			break;
		if (size < 0)
			size = -size;
		if ((uint64_t)size > n - off) {
			snprintf(why, whysz, "truncated: the record at byte "
			    "%zu says %lld bytes, %zu are left", off - 4,
			    (long long)size, n - off);
			return -1;
		}
		if ((int32_t)raw > 0) {
			if (++cnt > PX_KEYTAB_MAX_ENTRIES) {
				snprintf(why, whysz, "more than %d entries",
				    PX_KEYTAB_MAX_ENTRIES);
				return -1;
			}
			if (check_record(b + off, (size_t)size,
			    b[1] == 0x02, what, sizeof(what)) == -1) {
				snprintf(why, whysz, "entry %zu at byte %zu: "
				    "malformed (%s)", cnt, off - 4, what);
				return -1;
			}
		}
		off += (size_t)size;
	}
	*nrec = cnt;
	return 0;
}

/* Read the whole file from fd (already checked), at most max bytes. */
static uint8_t *
slurp(int fd, size_t size, char *why, size_t whysz)
{
	uint8_t *b;
	size_t got = 0;
	ssize_t r;

	if ((b = malloc(size + 1)) == NULL) {
		snprintf(why, whysz, "out of memory");
		return NULL;
	}
	while (got <= size) {
		r = read(fd, b + got, size + 1 - got);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(why, whysz, "%s", strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got != size) {
		snprintf(why, whysz, "changed size while being read");
		goto fail;
	}
	return b;
fail:
	OPENSSL_cleanse(b, size + 1);
	free(b);
	return NULL;
}

void
px_keytab_free(struct px_keytab *kt)
{
	if (kt == NULL)
		return;
	if (kt->e != NULL)
		OPENSSL_cleanse(kt->e, kt->n * sizeof(*kt->e));
	free(kt->e); kt->e = NULL;
	free(kt);
}

size_t
px_keytab_count(const struct px_keytab *kt)
{
	return kt ? kt->n : 0;
}

void
px_keytab_entry(const struct px_keytab *kt, size_t i, const char **principal,
    uint32_t *kvno, int32_t *enctype)
{
	*principal = kt->e[i].principal;
	*kvno = kt->e[i].kvno;
	*enctype = kt->e[i].key.enctype;
}

/*
 * Hand the image to krb5 (a memfd, so it reads what was walked; where
 * memfd_create is not allowed, the checked file's own descriptor ffd) and
 * copy every entry.  NULL with a reason in why.
 */
static struct px_keytab *
read_entries(const uint8_t *img, size_t n, size_t nrec, int ffd, char *why,
    size_t whysz)
{
	struct px_keytab *kt = NULL;
	krb5_keytab k = NULL;
	krb5_kt_cursor cur;
	krb5_keytab_entry ent;
	krb5_error_code rc;
	char name[64], *pname = NULL;
	size_t seen = 0, skipped = 0, off = 0;
	ssize_t w;
	int mfd;
	bool started = false;

	if ((mfd = memfd_create("smbaccel-keytab", MFD_CLOEXEC)) == -1) {
		/* a seccomp filter without memfd_create: krb5 reads the file
		 * again; the entry count check below still catches a change */
		if ((mfd = dup(ffd)) == -1) {
			snprintf(why, whysz, "memfd_create: %s",
			    strerror(errno));
			return NULL;
		}
		off = n;
	}
	while (off < n) {
		if ((w = write(mfd, img + off, n - off)) == -1) {
			if (errno == EINTR)
				continue;
			snprintf(why, whysz, "memfd: %s", strerror(errno));
			goto fail;
		}
		off += (size_t)w;
	}
	if ((kt = calloc(1, sizeof(*kt))) == NULL ||
	    (nrec > 0 && (kt->e = calloc(nrec, sizeof(*kt->e))) == NULL)) {
		snprintf(why, whysz, "out of memory");
		goto fail;
	}
	snprintf(name, sizeof(name), "FILE:/proc/self/fd/%d", mfd);
	if ((rc = krb5_kt_resolve(kctx, name, &k)) != 0 ||
	    (rc = krb5_kt_start_seq_get(kctx, k, &cur)) != 0) {
		const char *m = krb5_get_error_message(kctx, rc);

		snprintf(why, whysz, "krb5 cannot read it: %s", m);
		krb5_free_error_message(kctx, m);
		goto fail;
	}
	started = true;
	while ((rc = krb5_kt_next_entry(kctx, k, &ent, &cur)) == 0) {
		struct kt_entry *e;

		if (seen++ >= nrec) {
			krb5_free_keytab_entry_contents(kctx, &ent);
			break;
		}
		if (ent.key.length == 0 || ent.key.length > PX_KRB_KEY_MAX ||
		    !krb5_c_valid_enctype(ent.key.enctype)) {
			skipped++;
			krb5_free_keytab_entry_contents(kctx, &ent);
			continue;
		}
		e = &kt->e[kt->n++];
		if (krb5_unparse_name(kctx, ent.principal, &pname) == 0) {
			snprintf(e->principal, sizeof(e->principal), "%s",
			    pname);
			krb5_free_unparsed_name(kctx, pname);
			pname = NULL;
		}
		e->kvno = ent.vno;
		e->key.enctype = ent.key.enctype;
		e->key.len = ent.key.length;
		memcpy(e->key.bytes, ent.key.contents, ent.key.length);
		krb5_free_keytab_entry_contents(kctx, &ent);
	}
	if (rc != 0 && rc != KRB5_KT_END) {
		const char *m = krb5_get_error_message(kctx, rc);

		snprintf(why, whysz, "krb5 cannot read entry %zu: %s",
		    seen + 1, m);
		krb5_free_error_message(kctx, m);
		goto fail;
	}
	if (seen != nrec) {
		snprintf(why, whysz, "krb5 read %zu of its %zu entries", seen,
		    nrec);
		goto fail;
	}
	if (kt->n == 0) {
		snprintf(why, whysz, "no key smbaccel can use (%zu entries, "
		    "%zu of an enctype this krb5 does not know)", nrec,
		    skipped);
		goto fail;
	}
	krb5_kt_end_seq_get(kctx, k, &cur);
	krb5_kt_close(kctx, k);
	close(mfd);
	return kt;
fail:
	if (started)
		krb5_kt_end_seq_get(kctx, k, &cur);
	if (k != NULL)
		krb5_kt_close(kctx, k);
	close(mfd);
	px_keytab_free(kt);
	return NULL;
}

struct px_keytab *
px_keytab_load(const char *path, char *err, size_t errlen)
{
	struct px_keytab *kt = NULL;
	struct stat st;
	uint8_t *img = NULL;
	char why[256];
	size_t nrec;
	int fd;

	if (px_krb_init(err, errlen) == -1)
		return NULL;
	if ((fd = px_secret_file_open("keytab", path, &st, err, errlen)) == -1)
		return NULL;
	if (st.st_size > (off_t)PX_KEYTAB_MAX_SIZE) {
		snprintf(err, errlen, "keytab %s: larger than %u bytes", path,
		    PX_KEYTAB_MAX_SIZE);
		goto out;
	}
	if ((img = slurp(fd, (size_t)st.st_size, why, sizeof(why))) == NULL) {
		snprintf(err, errlen, "keytab %s: %s", path, why);
		goto out;
	}
	if (walk(img, (size_t)st.st_size, &nrec, why, sizeof(why)) == -1 ||
	    (kt = read_entries(img, (size_t)st.st_size, nrec, fd, why,
	    sizeof(why))) == NULL)
		snprintf(err, errlen, "keytab %s: %s", path, why);
out:
	if (img != NULL) {
		OPENSSL_cleanse(img, (size_t)st.st_size);
		free(img);
	}
	close(fd);
	return kt;
}

struct px_keytab *
px_keytab_from_keys(const struct px_krb_key *keys, const uint32_t *kvnos,
    const char *const *names, size_t n)
{
	struct px_keytab *kt;
	size_t i;

	if ((kt = calloc(1, sizeof(*kt))) == NULL ||
	    (n > 0 && (kt->e = calloc(n, sizeof(*kt->e))) == NULL)) {
		free(kt);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		kt->e[i].key = keys[i];
		kt->e[i].kvno = kvnos ? kvnos[i] : 1;
		snprintf(kt->e[i].principal, sizeof(kt->e[i].principal), "%s",
		    names && names[i] ? names[i] : "test");
	}
	kt->n = n;
	return kt;
}

void
px_keytab_describe(const struct px_keytab *kt, char *buf, size_t len)
{
	size_t i, used;

	if (len == 0)
		return;
	used = (size_t)snprintf(buf, len, "%zu key%s", kt->n,
	    kt->n == 1 ? "" : "s");
	for (i = 0; i < kt->n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s kvno "
		    "%lu %s", i ? ", " : ": ", kt->e[i].principal,
		    (unsigned long)kt->e[i].kvno,
		    px_krb_enctype_name(kt->e[i].key.enctype));
	if (used >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
}

int
px_keytab_try_ticket(const struct px_keytab *kt,
    const struct px_krb_enc_data *enc, uint8_t *out, size_t *outlen,
    bool *had_enctype, bool *had_kvno)
{
	size_t i, cap = *outlen;

	*had_enctype = *had_kvno = false;
	for (i = 0; i < kt->n; i++) {
		if (kt->e[i].key.enctype != enc->etype)
			continue;
		*had_enctype = true;
		if (enc->has_kvno && kt->e[i].kvno == enc->kvno)
			*had_kvno = true;
		*outlen = cap;
		if (px_krb_decrypt(&kt->e[i].key, PX_KRB_USAGE_TICKET,
		    enc->cipher, enc->len, out, outlen) == 0)
			return 0;
	}
	*outlen = 0;
	return -1;
}
