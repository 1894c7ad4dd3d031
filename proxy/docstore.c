/*
 * docstore.c - the document cache's on-disk store (DESIGN.md section 5a;
 * read_cache_dir, read_cache_disk in smbaccel.conf(5)).
 *
 * One file per cached document, named by the 64-bit hash of its key
 * (server, share, path): NNNNNNNNNNNNNNNN.dc, built as .tmp while its
 * chunks arrive and renamed into place once it is whole.  Layout, all
 * little-endian:
 *
 *   0   "SMBACDC1"             8   version (1)      12  chunk size
 *   16  EndOfFile             24  CreationTime     32  LastWriteTime
 *   40  ChangeTime            48  has disk id (1 byte, 7 reserved)
 *   56  on-disk file id (32)  88  key length        92  chunks
 *   96  header checksum       104 data offset       112 reserved (16)
 *   128 key, padded to 8; then one checksum per chunk (8 bytes each)
 *   data offset (4 KiB aligned): the file's bytes, chunk i at i * chunk.
 *
 * The header checksum covers the header (its own field zero), the key and
 * the chunk checksums; every chunk is checked when it is read back.  A
 * copy that fails either check is logged, removed, and never served.
 *
 * The directory: owned by root (or by the user smbaccel runs as) and
 * writable by nobody else, or the store is refused; it is opened once
 * (not through a symbolic link) and every file is reached relative to
 * that descriptor, never through a symbolic link, and a copy being built
 * is created anew (O_EXCL, a leftover removed first).  Copies being built
 * count against read_cache_disk from their start, at their full size.
 * The index keeps every copy's key (read from its header at startup), so
 * that a directory renamed or deleted takes the copies below it even when
 * none of them is in memory (px_ds_drop_prefix).
 *
 * All of it is synchronous file I/O on the event loop, and bounded per
 * step: a header read at an open (at most 128 bytes plus the key and 8
 * bytes per 64 KiB of file), one 64 KiB chunk read per cached read that
 * needs it, one pwrite per arriving fetch (at most 1 MiB), and at
 * startup one readdir and a stat per file.  Nothing is fsync'd: the
 * store is a cache, and a torn copy is caught by its checksums.  Writes
 * go to the page cache, so a slow disk delays the loop only when the
 * kernel throttles dirty pages.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy/docstore.h"

#define DS_MAGIC    "SMBACDC1"
#define DS_VERSION  1
#define DS_FIXED    128
#define DS_KEY_MAX  4096
#define DS_ALIGN    4096

struct ds_file {
	struct ds_file *hnext;      /* hash chain */
	struct ds_file *lprev;      /* LRU, head = most recent */
	struct ds_file *lnext;
	uint64_t hash;
	uint64_t bytes;
	char *key;                  /* NULL: its header could not be read */
};

static struct {
	bool on;
	int dfd;                    /* the directory, opened once */
	char dir[POL_PATH_MAX + 1];
	uint64_t limit;
	uint64_t tmp_bytes;         /* copies being built (full size) */
	bool idx_said;              /* the index budget's line was logged */
	struct co_dcache *dc;
	struct ds_file **tab;
	size_t nb;
	struct ds_file *head, *tail;
} ds;

/* ---- little-endian fields ------------------------------------------------------ */

static void
put64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint64_t
header_len(size_t keylen, uint32_t nchunks)
{
	return DS_FIXED + ((keylen + 7) & ~(size_t)7) + 8 * (uint64_t)nchunks;
}

static uint64_t
data_offset(size_t keylen, uint32_t nchunks)
{
	uint64_t h = header_len(keylen, nchunks);

	return (h + DS_ALIGN - 1) / DS_ALIGN * DS_ALIGN;
}

uint64_t
px_ds_data_offset(const struct co_dc_entry *e)
{
	return data_offset(strlen(e->key), e->nchunks);
}

/* A file's name in the directory (relative to ds.dfd). */
static void
name_of(uint64_t hash, const char *ext, char *buf, size_t len)
{
	snprintf(buf, len, "%016llx.%s", (unsigned long long)hash, ext);
}

/* Its path, for log lines. */
static void
path_of(uint64_t hash, const char *ext, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%016llx.%s", ds.dir, (unsigned long long)hash,
	    ext);
}

void
px_ds_path(const struct co_dc_entry *e, char *buf, size_t len)
{
	path_of(e->khash, "dc", buf, len);
}

/* What a file of size n takes on disk, in whole 4 KiB blocks (a copy of
 * a small file counted at its length took twice that). */
static uint64_t
on_disk(uint64_t n)
{
	return (n + 4095) & ~(uint64_t)4095;
}

/* A copy's size on disk (what its .tmp is made, and counted, at). */
static uint64_t
copy_bytes(const struct co_dc_entry *e)
{
	return on_disk(data_offset(strlen(e->key), e->nchunks) + e->v.eof);
}

/* Memory the index takes for a copy: its record, its key, and what the
 * allocator and the hash table add (an estimate). */
static uint64_t
idx_cost(const struct ds_file *f)
{
	return sizeof(*f) + (f->key ? strlen(f->key) + 1 : 0) + 48;
}

/* The .tmp of e (being built) is gone: it no longer counts. */
static void
tmp_gone(struct co_dc_entry *e)
{
	uint64_t n = copy_bytes(e);

	if (!e->persisting)
		return;
	e->persisting = false;
	ds.tmp_bytes = ds.tmp_bytes > n ? ds.tmp_bytes - n : 0;
}

bool
px_ds_enabled(void)
{
	return ds.on;
}

/* ---- the index of copies (for the disk bound) ------------------------------------ */

static struct ds_file *
idx_find(uint64_t hash)
{
	struct ds_file *f;

	if (ds.nb == 0)
		return NULL;
	for (f = ds.tab[hash & (ds.nb - 1)]; f; f = f->hnext)
		if (f->hash == hash)
			return f;
	return NULL;
}

static void
lru_unlink(struct ds_file *f)
{
	if (f->lprev)
		f->lprev->lnext = f->lnext;
	else
		ds.head = f->lnext;
	if (f->lnext)
		f->lnext->lprev = f->lprev;
	else
		ds.tail = f->lprev;
	f->lprev = f->lnext = NULL;
}

static void
lru_front(struct ds_file *f)
{
	f->lprev = NULL;
	f->lnext = ds.head;
	if (ds.head)
		ds.head->lprev = f;
	else
		ds.tail = f;
	ds.head = f;
}

static void
idx_touch(struct ds_file *f)
{
	if (ds.head != f) {
		lru_unlink(f);
		lru_front(f);
	}
}

static void
idx_grow(void)
{
	size_t nb = ds.nb ? ds.nb * 2 : 1024;
	struct ds_file **t = calloc(nb, sizeof(*t)), *f;

	if (t == NULL)
		return;
	for (f = ds.head; f; f = f->lnext) {
		f->hnext = t[f->hash & (nb - 1)];
		t[f->hash & (nb - 1)] = f;
	}
	free(ds.tab);
	ds.tab = t;
	ds.nb = nb;
}

/* Record a copy (key: its key, or NULL; copied); at the LRU's tail when
 * old (startup order), else head. */
static struct ds_file *
idx_add(uint64_t hash, uint64_t bytes, const char *key, bool old)
{
	struct ds_file *f;

	if (ds.nb == 0 || px_stats.ds_files >= ds.nb)
		idx_grow();
	if (ds.nb == 0 || (f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->hash = hash;
	f->bytes = on_disk(bytes);
	f->key = key ? strdup(key) : NULL;      /* NULL: as unreadable */
	f->hnext = ds.tab[hash & (ds.nb - 1)];
	ds.tab[hash & (ds.nb - 1)] = f;
	if (old) {
		f->lprev = ds.tail;
		if (ds.tail)
			ds.tail->lnext = f;
		else
			ds.head = f;
		ds.tail = f;
	} else
		lru_front(f);
	px_stats.ds_files++;
	px_stats.ds_bytes += f->bytes;
	px_stats.ds_index_bytes += idx_cost(f);
	return f;
}

static void
idx_del(struct ds_file *f)
{
	struct ds_file **pp;

	for (pp = &ds.tab[f->hash & (ds.nb - 1)]; *pp; pp = &(*pp)->hnext)
		if (*pp == f) {
			*pp = f->hnext;
			break;
		}
	lru_unlink(f);
	px_stats.ds_files--;
	px_stats.ds_bytes -= f->bytes;
	px_stats.ds_index_bytes -= idx_cost(f);
	free(f->key);
	free(f);
}

/* The memory entry whose copy this is, if one is loaded. */
static struct co_dc_entry *
entry_of(uint64_t hash)
{
	struct co_dc_entry *e;

	if (ds.dc == NULL || ds.dc->nb == 0)
		return NULL;
	for (e = ds.dc->kb[hash & (ds.dc->nb - 1)]; e; e = e->knext)
		if (e->khash == hash && e->on_disk)
			return e;
	return NULL;
}

/* Remove copy f (file and index); an entry serving from it forgets it. */
static void
remove_copy(struct ds_file *f)
{
	char name[32], path[POL_PATH_MAX + 32];
	struct co_dc_entry *e = entry_of(f->hash);

	name_of(f->hash, "dc", name, sizeof(name));
	if (unlinkat(ds.dfd, name, 0) == -1 && errno != ENOENT) {
		path_of(f->hash, "dc", path, sizeof(path));
		log_warn("document store: cannot remove %s", path);
	}
	if (e)
		co_dc_forget_disk(ds.dc, e);
	idx_del(f);
}

/* Is the index over its budget?  It takes read_cache_memory at most, on
 * top of the copies in memory: a store of many small copies (1 GiB of
 * 4 KiB files: 260,000 records, keys up to 1,600 bytes) is otherwise
 * bounded in memory by nothing. */
static bool
idx_over(void)
{
	if (ds.dc == NULL || ds.dc->limit == 0 ||
	    px_stats.ds_index_bytes <= ds.dc->limit)
		return false;
	if (!ds.idx_said)
		log_warnx("document store %s: its index takes %llu bytes, "
		    "read_cache_memory: least recently used copies go "
		    "(%llu copies kept; logged once)", ds.dir,
		    (unsigned long long)px_stats.ds_index_bytes,
		    (unsigned long long)px_stats.ds_files);
	ds.idx_said = true;
	return true;
}

/* Keep the store (its copies and those being built) within its limit
 * with room for `more` bytes, and its index within its budget: least
 * recently used copies go. */
static void
enforce(const struct ds_file *keep, uint64_t more)
{
	while ((px_stats.ds_bytes + ds.tmp_bytes + more > ds.limit ||
	    idx_over()) && ds.tail) {
		struct ds_file *v = ds.tail;

		if (v == keep && (v = v->lprev) == NULL)
			break;
		remove_copy(v);
		px_stats.ds_evicted++;
	}
}

/* ---- opening, closing ------------------------------------------------------------ */

/* A file name of the store: 16 hex digits, then ext. */
static bool
store_name(const char *name, const char *ext, uint64_t *hash)
{
	char *end;

	if (strlen(name) != 17 + strlen(ext) || name[16] != '.' ||
	    strcmp(name + 17, ext) != 0)
		return false;
	errno = 0;
	*hash = strtoull(name, &end, 16);
	return errno == 0 && end == name + 16;
}

struct found {
	uint64_t hash;
	uint64_t bytes;
	struct timespec mtime;
	char *key;
};

/* The key in the header of copy `name` (malloc'd), or NULL: a copy whose
 * header cannot be read is found corrupt at its load, and goes with any
 * directory change meanwhile (px_ds_drop_prefix). */
static char *
key_of(const char *name)
{
	uint8_t fixed[DS_FIXED];
	uint32_t klen;
	char *key = NULL;
	int fd;

	if ((fd = openat(ds.dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return NULL;
	if (pread(fd, fixed, sizeof(fixed), 0) == (ssize_t)sizeof(fixed) &&
	    memcmp(fixed, DS_MAGIC, 8) == 0 &&
	    (klen = get32(fixed + 88)) > 0 && klen <= DS_KEY_MAX &&
	    (key = malloc(klen + 1)) != NULL) {
		if (pread(fd, key, klen, DS_FIXED) == (ssize_t)klen &&
		    memchr(key, '\0', klen) == NULL)
			key[klen] = '\0';
		else {
			free(key);
			key = NULL;
		}
	}
	close(fd);
	return key;
}

static int
by_mtime_desc(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec > y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec > y->mtime.tv_nsec ? -1 : 1;
	return 0;
}

static void
on_drop(void *arg, struct co_dc_entry *e, bool evicted)
{
	char path[POL_PATH_MAX + 32];
	struct ds_file *f;

	(void)arg;
	if (!ds.on)
		return;
	if (e->persisting) {
		name_of(e->khash, "tmp", path, sizeof(path));
		(void)unlinkat(ds.dfd, path, 0);
		tmp_gone(e);
	}
	/* stale: its copy is stale too; evicted: the copy stays */
	if (!evicted && e->on_disk && (f = idx_find(e->khash)) != NULL) {
		e->on_disk = false;
		remove_copy(f);
	}
}

int
px_ds_open(const char *dir, uint64_t limit, struct co_dcache *dc)
{
	struct found *fv = NULL, *nf;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int dfd, rfd;

	px_ds_close();
	if (dir == NULL || dir[0] == '\0')
		return 0;
	if (strlen(dir) >= sizeof(ds.dir)) {
		log_warnx("document store: path too long: no store");
		return -1;
	}
	if ((dfd = px_private_dir(dir, "document store", "no store",
	    false)) == -1)
		return -1;
	if ((rfd = dup(dfd)) == -1 || (d = fdopendir(rfd)) == NULL) {
		log_warn("document store: cannot read %s: no store", dir);
		if (rfd != -1)
			close(rfd);
		close(dfd);
		return -1;
	}
	ds.dfd = dfd;
	snprintf(ds.dir, sizeof(ds.dir), "%s", dir);
	ds.limit = limit;
	ds.dc = dc;
	while ((de = readdir(d)) != NULL) {
		uint64_t h;

		if (store_name(de->d_name, "tmp", &h)) {
			/* an interrupted write */
			(void)unlinkat(dfd, de->d_name, 0);
			continue;
		}
		if (!store_name(de->d_name, "dc", &h) ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((nf = realloc(fv, cap * sizeof(*fv))) == NULL)
				break;
			fv = nf;
		}
		fv[n].hash = h;
		fv[n].bytes = (uint64_t)st.st_size;     /* on_disk: idx_add */
		fv[n].mtime = st.st_mtim;
		fv[n].key = key_of(de->d_name);
		n++;
	}
	closedir(d);
	/* least recently written last: the first to go */
	if (n)
		qsort(fv, n, sizeof(*fv), by_mtime_desc);
	ds.on = true;
	for (i = 0; i < n; i++) {
		if (idx_find(fv[i].hash) == NULL)
			(void)idx_add(fv[i].hash, fv[i].bytes, fv[i].key, true);
		free(fv[i].key);
	}
	free(fv);
	enforce(NULL, 0);
	dc->on_drop = on_drop;
	dc->on_drop_arg = NULL;
	log_info("document store %s: %llu copies, %llu bytes (limit %llu)",
	    ds.dir, (unsigned long long)px_stats.ds_files,
	    (unsigned long long)px_stats.ds_bytes, (unsigned long long)limit);
	return 0;
}

void
px_ds_close(void)
{
	while (ds.head)
		idx_del(ds.head);
	free(ds.tab);
	if (ds.dc && ds.dc->on_drop == on_drop)
		ds.dc->on_drop = NULL;
	if (ds.on)
		close(ds.dfd);
	memset(&ds, 0, sizeof(ds));
	ds.dfd = -1;
	px_stats.ds_files = 0;
	px_stats.ds_bytes = 0;
	px_stats.ds_index_bytes = 0;
}

/* ---- reading back ----------------------------------------------------------------- */

static void
corrupt(struct ds_file *f, const char *path, const char *why)
{
	log_warnx("document store: %s is corrupt (%s): discarded, never "
	    "served", path, why);
	px_stats.ds_corrupt++;
	remove_copy(f);
}

struct co_dc_entry *
px_ds_load(struct co_dcache *dc, const char *key)
{
	char name[32], path[POL_PATH_MAX + 32];
	uint64_t hash = co_sum64(key, strlen(key)), sum, hlen, eof;
	uint8_t fixed[DS_FIXED], *hdr = NULL;
	struct co_dc_valid v;
	struct co_dc_entry *e = NULL;
	uint64_t *sums = NULL;
	uint32_t klen, nch, i;
	struct ds_file *f;
	struct stat st;
	const char *why = NULL;
	int fd;

	if (!ds.on || (f = idx_find(hash)) == NULL)
		return NULL;
	name_of(hash, "dc", name, sizeof(name));
	path_of(hash, "dc", path, sizeof(path));
	if ((fd = openat(ds.dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1) {
		if (errno != ENOENT)
			log_warn("document store: cannot open %s", path);
		remove_copy(f);
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    pread(fd, fixed, sizeof(fixed), 0) != (ssize_t)sizeof(fixed)) {
		why = "short header";
		goto bad;
	}
	klen = get32(fixed + 88);
	nch = get32(fixed + 92);
	eof = get64(fixed + 16);
	if (memcmp(fixed, DS_MAGIC, 8) != 0 || get32(fixed + 8) != DS_VERSION ||
	    get32(fixed + 12) != CO_DC_CHUNK) {
		why = "not a store file of this version";
		goto bad;
	}
	if (klen == 0 || klen > DS_KEY_MAX || eof == 0 ||
	    nch != (eof - 1) / CO_DC_CHUNK + 1 ||
	    get64(fixed + 104) != data_offset(klen, nch) ||
	    (uint64_t)st.st_size != data_offset(klen, nch) + eof) {
		why = "inconsistent sizes";
		goto bad;
	}
	hlen = header_len(klen, nch);
	if ((hdr = malloc(hlen)) == NULL || (sums = malloc(8 *
	    (size_t)nch)) == NULL) {
		close(fd);
		free(hdr);
		return NULL;
	}
	if (pread(fd, hdr, hlen, 0) != (ssize_t)hlen) {
		why = "short header";
		goto bad;
	}
	sum = get64(hdr + 96);
	put64(hdr + 96, 0);
	if (co_sum64(hdr, hlen) != sum) {
		why = "header checksum";
		goto bad;
	}
	close(fd);
	fd = -1;
	if (memcmp(hdr + DS_FIXED, key, klen) != 0 || strlen(key) != klen) {
		/* another key of the same hash: not ours (and not corrupt) */
		free(hdr);
		free(sums);
		return NULL;
	}
	memset(&v, 0, sizeof(v));
	v.eof = eof;
	v.creation = get64(fixed + 24);
	v.last_write = get64(fixed + 32);
	v.change = get64(fixed + 40);
	v.has_disk_id = fixed[48] != 0;
	memcpy(v.disk_id, fixed + 56, sizeof(v.disk_id));
	for (i = 0; i < nch; i++)
		sums[i] = get64(hdr + DS_FIXED + ((klen + 7) & ~7u) + 8 *
		    (size_t)i);
	if ((e = co_dc_create(dc, key, &v, sums)) != NULL) {
		idx_touch(f);
		px_stats.ds_loads++;
	}
	free(hdr);
	free(sums);
	return e;
bad:
	if (fd != -1)
		close(fd);
	free(hdr);
	free(sums);
	corrupt(f, path, why);
	return NULL;
}

int
px_ds_read(struct co_dc_entry *e, uint32_t idx, uint8_t *buf)
{
	char name[32], path[POL_PATH_MAX + 32];
	uint32_t len = co_dc_chunk_len(e, idx);
	struct ds_file *f;
	ssize_t got;
	int fd;

	if (!ds.on || !e->on_disk || len == 0 ||
	    (f = idx_find(e->khash)) == NULL) {
		co_dc_forget_disk(ds.dc, e);
		return -1;
	}
	name_of(e->khash, "dc", name, sizeof(name));
	path_of(e->khash, "dc", path, sizeof(path));
	if ((fd = openat(ds.dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1) {
		log_warn("document store: cannot open %s", path);
		px_stats.ds_errors++;
		remove_copy(f);
		return -1;
	}
	got = pread(fd, buf, len, (off_t)(px_ds_data_offset(e) +
	    (uint64_t)idx * CO_DC_CHUNK));
	close(fd);
	if (got != (ssize_t)len) {
		corrupt(f, path, "short data");
		return -1;
	}
	if (!co_dc_verify(e, idx, buf, len)) {
		char why[64];

		snprintf(why, sizeof(why), "checksum of chunk %u", idx);
		corrupt(f, path, why);
		return -1;
	}
	idx_touch(f);
	px_stats.ds_chunk_reads++;
	return 0;
}

/* ---- writing ------------------------------------------------------------------------ */

/* Writing e's .tmp (name) failed: it goes, e is not stored. */
static void
put_failed(struct co_dc_entry *e, const char *name, int err)
{
	static struct px_lograte put_rate;     /* a full disk: every copy */
	char path[POL_PATH_MAX + 32];

	path_of(e->khash, "tmp", path, sizeof(path));
	PX_WARN_RATED(&put_rate, "document store: cannot write %s: %s; %s is "
	    "not stored", path, strerror(err), e->key);
	px_stats.ds_errors++;
	(void)unlinkat(ds.dfd, name, 0);
	tmp_gone(e);
	e->persist_failed = true;
}

/* e is whole: its header, then the copy in place. */
static int
finish(struct co_dc_entry *e, const char *tmp)
{
	char name[32];
	size_t klen = strlen(e->key);
	uint64_t hlen = header_len(klen, e->nchunks);
	uint64_t bytes = data_offset(klen, e->nchunks) + e->v.eof;
	uint8_t *h = calloc(1, hlen);
	struct ds_file *f;
	uint32_t i;
	int fd, err;

	if (h == NULL) {
		put_failed(e, tmp, ENOMEM);
		return -1;
	}
	memcpy(h, DS_MAGIC, 8);
	put32(h + 8, DS_VERSION);
	put32(h + 12, CO_DC_CHUNK);
	put64(h + 16, e->v.eof);
	put64(h + 24, e->v.creation);
	put64(h + 32, e->v.last_write);
	put64(h + 40, e->v.change);
	h[48] = e->v.has_disk_id;
	memcpy(h + 56, e->v.disk_id, sizeof(e->v.disk_id));
	put32(h + 88, (uint32_t)klen);
	put32(h + 92, e->nchunks);
	put64(h + 104, data_offset(klen, e->nchunks));
	memcpy(h + DS_FIXED, e->key, klen);
	for (i = 0; i < e->nchunks; i++)
		put64(h + DS_FIXED + ((klen + 7) & ~(size_t)7) + 8 * (size_t)i,
		    e->sum[i]);
	put64(h + 96, co_sum64(h, hlen));
	if ((fd = openat(ds.dfd, tmp, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1 || pwrite(fd, h, hlen, 0) != (ssize_t)hlen) {
		err = errno ? errno : EIO;
		if (fd != -1)
			close(fd);
		free(h);
		put_failed(e, tmp, err);
		return -1;
	}
	free(h);
	if (close(fd) == -1) {
		put_failed(e, tmp, errno);
		return -1;
	}
	name_of(e->khash, "dc", name, sizeof(name));
	if ((f = idx_find(e->khash)) != NULL)
		idx_del(f);     /* replaced (the stale copy of a changed file) */
	if (renameat(ds.dfd, tmp, ds.dfd, name) == -1) {
		put_failed(e, tmp, errno);
		return -1;
	}
	tmp_gone(e);
	e->on_disk = true;
	f = idx_add(e->khash, bytes, e->key, false);
	px_stats.ds_writes++;
	enforce(f, 0);
	return 0;
}

int
px_ds_put(struct co_dc_entry *e, uint32_t first, uint32_t n)
{
	char tmp[32];
	size_t klen;
	uint64_t doff;
	uint32_t i;
	int fd;

	if (!ds.on || e->on_disk || e->persist_failed || n == 0)
		return 0;
	klen = strlen(e->key);
	doff = data_offset(klen, e->nchunks);
	if (klen > DS_KEY_MAX || on_disk(doff + e->v.eof) > ds.limit) {
		e->persist_failed = true;       /* larger than the store */
		return 0;
	}
	name_of(e->khash, "tmp", tmp, sizeof(tmp));
	if (e->persisting)
		fd = openat(ds.dfd, tmp, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	else {
		/* a new copy counts at its full size from now on: room is
		 * made for it, and copies being built keep theirs (if they
		 * hold it all, this one is not stored) */
		enforce(NULL, on_disk(doff + e->v.eof));
		if (px_stats.ds_bytes + ds.tmp_bytes + on_disk(doff +
		    e->v.eof) > ds.limit) {
			e->persist_failed = true;
			return 0;
		}
		/* created anew: whatever lies at its name goes first */
		(void)unlinkat(ds.dfd, tmp, 0);
		fd = openat(ds.dfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd == -1) {
		put_failed(e, tmp, errno);
		return -1;
	}
	if (!e->persisting) {
		if (ftruncate(fd, (off_t)(doff + e->v.eof)) == -1) {
			int err = errno;

			close(fd);
			put_failed(e, tmp, err);
			return -1;
		}
		e->persisting = true;
		ds.tmp_bytes += on_disk(doff + e->v.eof);
	}
	for (i = first; i < first + n && i < e->nchunks; i++) {
		uint32_t len = co_dc_chunk_len(e, i);

		if (e->state[i] != CO_DC_MEM)
			continue;
		if (pwrite(fd, e->data[i], len, (off_t)(doff + (uint64_t)i *
		    CO_DC_CHUNK)) != (ssize_t)len) {
			int err = errno ? errno : ENOSPC;

			close(fd);
			put_failed(e, tmp, err);
			return -1;
		}
	}
	if (close(fd) == -1) {
		put_failed(e, tmp, errno);
		return -1;
	}
	if (co_dc_complete(e))
		return finish(e, tmp);
	return 0;
}

void
px_ds_remove_key(const char *key)
{
	struct ds_file *f;

	if (ds.on && (f = idx_find(co_sum64(key, strlen(key)))) != NULL)
		remove_copy(f);
}

size_t
px_ds_drop_prefix(const char *prefix)
{
	struct ds_file *f, *next;
	size_t n = strlen(prefix), k = 0;

	if (!ds.on)
		return 0;
	for (f = ds.head; f; f = next) {
		next = f->lnext;
		if (f->key == NULL || strncmp(f->key, prefix, n) == 0) {
			remove_copy(f);
			k++;
		}
	}
	return k;
}
