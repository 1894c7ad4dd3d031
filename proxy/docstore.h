/*
 * docstore.h - docstore.c, the document cache's on-disk store
 * (read_cache_dir, bounded by read_cache_disk; DESIGN.md section 5a):
 * whole files written as their chunks arrive, read back one chunk at a
 * time, every chunk and every header checksummed.  Called by the relay
 * layer's doccache.c; below the relay layer (it knows no connection).
 */
#ifndef SMBACCEL_DOCSTORE_H
#define SMBACCEL_DOCSTORE_H

#include "proxy/proxy.h"

/* Open the store in dir (created 0700 if missing; "" = no store) for the
 * entries of dc, at most limit bytes on disk: leftovers of an interrupted
 * write are removed, copies over the limit too, least recently used
 * first.  -1 when dir cannot be used (logged; no store): not a directory,
 * a symbolic link, owned by another user than root (or the one smbaccel
 * runs as), or writable by its group or others. */
int px_ds_open(const char *dir, uint64_t limit, struct co_dcache *dc)
    PX_MUSTCHECK;
void px_ds_close(void);
bool px_ds_enabled(void);
/*
 * The store's copy of key as a new entry of dc (every chunk DISK), or NULL
 * when there is none, or it is unreadable or corrupt (then logged and
 * removed).  The caller validates it like any other entry.
 */
struct co_dc_entry *px_ds_load(struct co_dcache *dc, const char *key);
/*
 * Chunks [first, first+n) of e arrived: write them to e's copy being
 * built; once e is complete its header goes on and the copy takes its
 * place (the least recently used others go when over the limit).  -1 on
 * an I/O error (logged once; e is then not stored).
 */
int px_ds_put(struct co_dc_entry *e, uint32_t first, uint32_t n);
/* Read chunk idx of e (DISK) into buf (CO_DC_CHUNK bytes) and verify its
 * checksum.  -1 when unreadable or corrupt: logged, the copy removed and
 * e's DISK chunks forgotten. */
int px_ds_read(struct co_dc_entry *e, uint32_t idx, uint8_t *buf);
/* The copy of key, if any, is stale: removed. */
void px_ds_remove_key(const char *key);
/* Every copy whose key starts with prefix (a directory's, renamed or
 * deleted: key and '\\') is stale, also those not in memory: removed
 * (with those whose key could not be read).  How many. */
size_t px_ds_drop_prefix(const char *prefix);
/* Where e's copy is and where its data starts (tests). */
void px_ds_path(const struct co_dc_entry *e, char *buf, size_t len);
uint64_t px_ds_data_offset(const struct co_dc_entry *e);

#endif
