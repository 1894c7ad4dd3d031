/*
 * keyfiles.h - keyfiles.c, the secrets file and keytabs smbaccel holds
 * (DESIGN.md section 7), loaded at start and swapped whole at reload.
 */
#ifndef SMBACCEL_KEYFILES_H
#define SMBACCEL_KEYFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "policy/policy.h"
#include "proxy/auth/auth.h"

/* Start: the secrets file at path (none when empty) and every keytab cfg
 * names, each all or nothing; -1 (logged) leaves what was in use. */
int px_keyfiles_load_secrets(const char *path) PX_MUSTCHECK;
int px_keyfiles_load_keytabs(const struct pol_config *cfg) PX_MUSTCHECK;
/*
 * A reload in two steps: the secrets file and keytabs cfg names are read
 * (px_keyfiles_stage: 0; -1 the secrets file refused, -2 a keytab;
 * logged), then put in force once every other check passed
 * (px_keyfiles_commit), or dropped (px_keyfiles_discard).  The keys in use
 * never change on a refused reload, also when the file at the same path
 * was edited.
 */
int px_keyfiles_stage(const struct pol_config *cfg) PX_MUSTCHECK;
void px_keyfiles_commit(const struct pol_config *cfg);
void px_keyfiles_discard(void);
/*
 * smbaccel -t: the secrets file and every keytab cfg names read as a start
 * reads them, each error printed once to f, as the policy's are:
 * "PATH:LINE: why" (a line of the secrets file) or "PATH: why".  The
 * number of files refused; nothing is kept, nothing logged.
 */
int px_keyfiles_check(const struct pol_config *cfg, FILE *f) PX_MUSTCHECK;
/* For `smbaccelctl keytabs`: keytab i in use (NULL past the last), with
 * its path and when it was read (wall clock). */
const struct px_keytab *px_keyfiles_keytab(size_t i, const char **path,
    time_t *loaded);
/* The secrets in use (NULL: none), the keytab in use read from path. */
const struct px_secrets *px_keyfiles_secrets(void);
const struct px_keytab *px_keyfiles_keytab_at(const char *path);
/* Everything dropped (shutdown). */
void px_keyfiles_free(void);

#endif
