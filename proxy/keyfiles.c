/*
 * keyfiles.c - the key files smbaccel holds (DESIGN.md section 7): the
 * secrets file (users' NT hashes, for NTLM sessions) and the keytabs the
 * policy names (servers' keys, for Kerberos sessions).  Read at start and
 * at reload, where they are read first and put in force only with the
 * policy (stage, commit, discard); keyed.c looks keys up here.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/keyfiles.h"
#include "proxy/proxy.h"
#include "proxy/auth/auth.h"

static struct px_secrets *secrets;
static bool crypto_ready;

/* The keytabs the policy names ([global] and per server), by path. */
struct kt_slot {
	char *path;
	struct px_keytab *kt;
	time_t loaded;
};
static struct kt_slot *keytabs;
static size_t nkeytabs;

static bool
crypto_up(const char *what)
{
	char err[512];

	if (crypto_ready)
		return true;
	if (px_crypto_init(err, sizeof(err)) == -1) {
		log_warnx("%s: %s", what, err);
		return false;
	}
	crypto_ready = true;
	return true;
}

/* The secrets file at path read into *out (NULL: none configured). */
static int
secrets_read(const char *path, struct px_secrets **out)
{
	char err[512];

	*out = NULL;
	if (path == NULL || *path == '\0')
		return 0;
	if (!crypto_up("secrets"))
		return -1;
	if ((*out = px_secrets_load(path, err, sizeof(err))) == NULL) {
		log_warnx("secrets: %s", err);
		return -1;
	}
	return 0;
}

/*
 * A loader's error err about the file path, printed to f as smbaccel -t
 * prints the policy's: "PATH:LINE: why", or "PATH: why".  The loaders say
 * "WHAT PATH: line N: why" (secrets.c) or "WHAT PATH: why" (both).
 */
static void
print_file_error(FILE *f, const char *what, const char *path,
    const char *err)
{
	size_t wl = strlen(what), pl = strlen(path);
	unsigned line;
	int n = 0;

	if (strncmp(err, what, wl) == 0 && err[wl] == ' ' &&
	    strncmp(err + wl + 1, path, pl) == 0 &&
	    strncmp(err + wl + 1 + pl, ": ", 2) == 0)
		err += wl + 1 + pl + 2;
	if (sscanf(err, "line %u: %n", &line, &n) == 1 && n > 0)
		fprintf(f, "%s:%u: %s\n", path, line, err + n);
	else
		fprintf(f, "%s: %s\n", path, err);
}

int
px_keyfiles_check(const struct pol_config *cfg, FILE *f)
{
	struct px_secrets *sec;
	struct px_keytab *kt;
	const char *path = pol_global(cfg)->secrets;
	char err[512];
	size_t i;
	int bad = 0;

	if (*path != '\0') {
		if ((sec = px_secrets_load(path, err, sizeof(err))) == NULL) {
			print_file_error(f, "secrets file", path, err);
			bad++;
		}
		px_secrets_free(sec);
	}
	for (i = 0; (path = pol_keytab_path(cfg, i)) != NULL; i++) {
		if (px_crypto_init(err, sizeof(err)) == -1)
			kt = NULL;
		else
			kt = px_keytab_load(path, err, sizeof(err));
		if (kt == NULL) {
			print_file_error(f, "keytab", path, err);
			bad++;
		}
		px_keytab_free(kt);
	}
	return bad;
}

static void
secrets_install(struct px_secrets *n, const char *path)
{
	px_secrets_free(secrets);
	secrets = n;
	if (n != NULL)
		log_info("secrets: %zu entries from %s", px_secrets_count(n),
		    path);
}

int
px_keyfiles_load_secrets(const char *path)
{
	struct px_secrets *n;

	if (secrets_read(path, &n) == -1)
		return -1;
	secrets_install(n, path);
	return 0;
}

static void
keytabs_free(struct kt_slot *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		px_keytab_free(t[i].kt);
		free(t[i].path);
	}
	free(t);
}

/* Every keytab cfg names read into *out, *cnt of them; all or nothing. */
static int
keytabs_read(const struct pol_config *cfg, struct kt_slot **out, size_t *cnt)
{
	struct kt_slot *n = NULL;
	size_t i;
	const char *path;
	char err[512];

	*out = NULL;
	*cnt = 0;
	while (pol_keytab_path(cfg, *cnt) != NULL)
		(*cnt)++;
	if (*cnt == 0)
		return 0;
	if (!crypto_up("keytab"))
		return -1;
	if ((n = calloc(*cnt, sizeof(*n))) == NULL) {
		log_warnx("keytab: out of memory");
		return -1;
	}
	for (i = 0; i < *cnt; i++) {
		path = pol_keytab_path(cfg, i);
		if ((n[i].path = strdup(path)) == NULL) {
			log_warnx("keytab: out of memory");
			keytabs_free(n, *cnt);
			return -1;
		}
		if ((n[i].kt = px_keytab_load(path, err, sizeof(err))) == NULL) {
			log_warnx("%s", err);   /* "keytab PATH: why" */
			keytabs_free(n, *cnt);
			return -1;
		}
		n[i].loaded = time(NULL);
	}
	*out = n;
	return 0;
}

static void
keytabs_install(struct kt_slot *n, size_t cnt)
{
	char desc[768];
	size_t i;

	keytabs_free(keytabs, nkeytabs);
	keytabs = n;
	nkeytabs = cnt;
	for (i = 0; i < cnt; i++) {
		px_keytab_describe(n[i].kt, desc, sizeof(desc));
		log_info("keytab: %s: %s", n[i].path, desc);
	}
}

/*
 * Load every keytab cfg names.  All or nothing: on any error the ones in
 * use stay, and -1 (start and reload refuse the policy).
 */
int
px_keyfiles_load_keytabs(const struct pol_config *cfg)
{
	struct kt_slot *n;
	size_t cnt;

	if (keytabs_read(cfg, &n, &cnt) == -1)
		return -1;
	keytabs_install(n, cnt);
	return 0;
}

/* A policy's keys read, not yet in force (px_keyfiles_stage). */
static struct {
	bool set;
	struct px_secrets *secrets;
	struct kt_slot *kt;
	size_t nkt;
} staged;

void
px_keyfiles_discard(void)
{
	if (!staged.set)
		return;
	px_secrets_free(staged.secrets);
	keytabs_free(staged.kt, staged.nkt);
	memset(&staged, 0, sizeof(staged));
}

int
px_keyfiles_stage(const struct pol_config *cfg)
{
	px_keyfiles_discard();
	if (secrets_read(pol_global(cfg)->secrets, &staged.secrets) == -1)
		return -1;
	if (keytabs_read(cfg, &staged.kt, &staged.nkt) == -1) {
		px_secrets_free(staged.secrets);
		staged.secrets = NULL;
		return -2;
	}
	staged.set = true;
	return 0;
}

void
px_keyfiles_commit(const struct pol_config *cfg)
{
	if (!staged.set)
		return;
	secrets_install(staged.secrets, pol_global(cfg)->secrets);
	keytabs_install(staged.kt, staged.nkt);
	memset(&staged, 0, sizeof(staged));
}

const struct px_keytab *
px_keyfiles_keytab(size_t i, const char **path, time_t *loaded)
{
	if (i >= nkeytabs)
		return NULL;
	*path = keytabs[i].path;
	*loaded = keytabs[i].loaded;
	return keytabs[i].kt;
}

const struct px_secrets *
px_keyfiles_secrets(void)
{
	return secrets;
}

const struct px_keytab *
px_keyfiles_keytab_at(const char *path)
{
	size_t i;

	for (i = 0; i < nkeytabs; i++)
		if (strcmp(keytabs[i].path, path) == 0)
			return keytabs[i].kt;
	return NULL;
}

void
px_keyfiles_free(void)
{
	px_keyfiles_discard();
	px_secrets_free(secrets);
	secrets = NULL;
	keytabs_free(keytabs, nkeytabs);
	keytabs = NULL;
	nkeytabs = 0;
}
