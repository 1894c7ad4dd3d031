/*
 * policy.h - the smbaccel policy file: parse, validate, look up, diff.
 *
 * Pure logic: no sockets, no libev, no global state.  A file is parsed
 * into a fresh struct pol_config that is either complete and valid or not
 * returned at all (reload parses a new config and swaps only on success,
 * DESIGN.md section 8).  Every setting is one row of a table in policy.c
 * (name, type, default, range, scope, reloadable); that table drives
 * parsing, validation, defaults, pol_dump() and pol_diff_reloadable().
 * The file format is documented in docs/smbaccel.conf.5.
 *
 * Errors are collected, all of them up to POL_ERRORS_MAX, as
 * "FILE:LINE: message"; LINE 0 means the file as a whole (unreadable).
 */
#ifndef SMBACCEL_POLICY_H
#define SMBACCEL_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define POL_MUSTCHECK __attribute__((warn_unused_result))

#define POL_LISTEN_MAX     16   /* addresses in one listen list */
#define POL_HOST_MAX       255  /* host name or literal, without brackets */
#define POL_SOCKPATH_MAX   107  /* sizeof(sun_path) - 1 */
#define POL_PATH_MAX       4095
#define POL_ERRORS_MAX     100  /* messages kept before "too many errors" */
#define POL_FILE_MAX       (1024 * 1024) /* larger policy files are refused */
#define POL_SECTIONS_MAX   4096

enum pol_mode {
	POL_MODE_FORWARD = 0,   /* listen -> one configured upstream */
	POL_MODE_TRANSPARENT,   /* REDIRECT, SO_ORIGINAL_DST */
	POL_MODE_TPROXY,        /* TPROXY, IP_TRANSPARENT + fwmark routing */
};

/* Gate of write_behind and read_ahead (DESIGN.md sections 4 and 5). */
enum pol_gate {
	POL_GATE_OFF = 0,
	POL_GATE_LEASED,        /* only while the client holds a caching right */
	POL_GATE_ALWAYS,        /* regardless of oplocks/leases */
};

enum pol_multichannel {
	POL_MC_HIDE = 0,        /* answer the interface query: one channel */
	POL_MC_RELAY,           /* forward it: the client may bind more */
};

enum pol_log_level {
	POL_LOG_ERROR = 0,
	POL_LOG_WARN,
	POL_LOG_INFO,
	POL_LOG_DEBUG,
};

enum pol_addr_kind {
	POL_ADDR_NAME = 0,      /* a host name, resolved by the daemon */
	POL_ADDR_IPV4,
	POL_ADDR_IPV6,          /* host holds no brackets; may end in %zone */
};

struct pol_addr {
	char host[POL_HOST_MAX + 1];  /* "" when the setting is absent */
	uint16_t port;                /* 1..65535 when host is set */
	enum pol_addr_kind kind;
};

/* Global-only settings, typed; durations in milliseconds, sizes in bytes. */
struct pol_global {
	struct pol_addr listen[POL_LISTEN_MAX];
	size_t n_listen;                  /* >= 1 in a loaded config */
	struct pol_addr upstream;         /* set whenever mode is forward */
	enum pol_mode mode;
	char control_socket[POL_SOCKPATH_MAX + 1];
	uint32_t connect_timeout_ms;
	uint32_t idle_timeout_ms;         /* 0: no idle timeout */
	uint32_t server_timeout_ms;       /* 0: never give up on a server */
	uint32_t client_keepalive_ms;     /* silence before a client's TCP is
	                                   * probed; 0: never (side.c) */
	uint32_t max_connections;
	uint32_t max_connecting;          /* per server; 0: no limit */
	uint64_t queue_limit;             /* per side of a connection */
	uint64_t write_behind_memory;
	uint64_t read_ahead_memory;
	uint64_t read_cache_memory;       /* document cache, in memory */
	char read_cache_dir[POL_PATH_MAX + 1]; /* its store; "" = none */
	char state_dir[POL_PATH_MAX + 1];  /* lost-open records kept across
	                                    * a restart; "" = none */
	uint64_t read_cache_disk;         /* ... bounded to this */
	char secrets[POL_PATH_MAX + 1];   /* "" when none */
	enum pol_log_level log_level;
	uint32_t tproxy_mark;
	uint32_t tproxy_table;
	uint32_t drain_timeout_ms;
	uint32_t kerberos_expiry_margin_ms; /* stop acting on a Kerberos-keyed
	                                     * session this long before its
	                                     * ticket ends */
	enum pol_multichannel multichannel;
};

/* Effective per-share settings, as returned by pol_share_lookup(). */
struct pol_share {
	enum pol_gate write_behind;
	enum pol_gate read_ahead;
	uint64_t coalesce_size;
	uint64_t write_behind_per_open;
	uint64_t read_ahead_max;
	bool read_cache;                  /* the document cache (section 5a) */
	uint64_t read_cache_file_max;     /* largest file it fetches whole */
	uint32_t flush_idle_ms;
	uint32_t flush_max_age_ms;
	bool close_compound;       /* a CLOSE goes up with its flush as one
	                            * related compound */
	bool proxy_lease;          /* ask leases for clients that ask none
	                            * (DESIGN.md section 6) */
};

/*
 * Effective per-server settings (pol_server_lookup): the keytab that keys
 * its Kerberos sessions and the upstream TCP socket smbaccel opens to it.
 * Given in [global] (every server) or in a [//server/share] section, where
 * they belong to the server, not the share (they are needed before any
 * share is named: a session is set up before its first TREE_CONNECT).
 */
#define POL_CC_MAX 15           /* TCP_CA_NAME_MAX - 1 */
struct pol_server {
	char keytab[POL_PATH_MAX + 1];    /* Kerberos keys; "" when none */
	char upstream_congestion[POL_CC_MAX + 1];  /* "auto", "system" or an
	                                            * algorithm name */
	uint64_t upstream_sndbuf;   /* bytes; 0: the kernel's autotuning */
	uint64_t upstream_rcvbuf;
	uint32_t upstream_keepalive_ms;  /* TCP keepalive idle time, 0: none */
};

/*
 * A bounded list of malloc'd messages.  Zero-initialise before first use
 * ({0}); it may collect messages from several calls.  Once POL_ERRORS_MAX
 * messages are held, one final "too many errors" message is added, the
 * parser stops reading, and later messages are only counted in dropped.
 */
struct pol_errors {
	char *msg[POL_ERRORS_MAX + 1];
	size_t n;
	size_t dropped;   /* not stored: over the cap or lost to ENOMEM */
};

struct pol_config;

/*
 * Parse and validate a policy file or text.  NULL on any error, with every
 * error appended to errs (errs may be NULL).  name is used in messages.
 */
struct pol_config *pol_load_file(const char *path, struct pol_errors *errs)
    POL_MUSTCHECK;
struct pol_config *pol_load_string(const char *text, const char *name,
    struct pol_errors *errs) POL_MUSTCHECK;
void pol_free(struct pol_config *cfg);

void pol_errors_free(struct pol_errors *errs);
void pol_errors_print(const struct pol_errors *errs, FILE *fp);
/* The same with prefix before each line (journald's "<3>"). */
void pol_errors_print_prefixed(const struct pol_errors *errs, FILE *fp,
    const char *prefix);

const struct pol_global *pol_global(const struct pol_config *cfg);
const char *pol_name(const struct pol_config *cfg);

/*
 * Effective settings of share `share` on server `server` (the names the
 * client used in its TREE_CONNECT path; ASCII case-insensitive; server may
 * be NULL).  Per setting, the most specific wins: [//server/share], then
 * [share NAME], then [global], then the built-in default.
 */
void pol_share_lookup(const struct pol_config *cfg, const char *server,
    const char *share, struct pol_share *out);

/*
 * Effective per-server settings for upstream connections to `server`: an
 * IP literal (any notation) or a host name, compared ASCII
 * case-insensitively with the server of every [//server/share] section;
 * NULL: [global] and built-in defaults only.  True when some
 * [//server/share] section of that server gave one of them.  The sections
 * of one server never disagree (checked at load).
 */
bool pol_server_lookup(const struct pol_config *cfg, const char *server,
    struct pol_server *out);

/*
 * The i-th server setting given in the file (i from 0; false past the
 * end), for checks against the kernel (smbaccel -t): the setting's name,
 * the label of its section ("global", "//nas1/data"), its line, and the
 * section's values (only the named field is meaningful).
 */
/* The distinct keytab paths of cfg ([global] first, then the server
 * sections in file order): i = 0, 1, ... until NULL.  For loading them all
 * at start and reload. */
const char *pol_keytab_path(const struct pol_config *cfg, size_t i);
bool pol_server_setting_at(const struct pol_config *cfg, size_t i,
    const char **name, const char **section, int *line,
    struct pol_server *vals);

/*
 * Compare two configs before a reload swaps them.  Every global setting
 * that differs but is not reloadable is reported (with new's file and
 * line) and counted; 0 means the new config can be swapped in.
 */
int pol_diff_reloadable(const struct pol_config *old_cfg,
    const struct pol_config *new_cfg, struct pol_errors *errs) POL_MUSTCHECK;

/* Effective settings as a policy file that parses back to the same config. */
void pol_dump(const struct pol_config *cfg, FILE *fp);

/* Name of the i-th setting of the table, NULL past the end. */
const char *pol_setting_name(size_t i);

const char *pol_mode_name(enum pol_mode mode);
const char *pol_gate_name(enum pol_gate gate);
const char *pol_log_level_name(enum pol_log_level level);

/*
 * The value syntaxes of the policy file, for other tools: sizes are a
 * number with an optional K, M, G or T suffix (powers of 1024); durations
 * a number with ms, s, m or h (0 needs none); booleans yes/no, true/false,
 * on/off, 1/0.  0 on success; -1 with errno EINVAL on a malformed value,
 * ERANGE on a well-formed size or duration past 2^64 - 1.
 */
int pol_parse_size(const char *s, uint64_t *bytes) POL_MUSTCHECK;
int pol_parse_duration(const char *s, uint64_t *ms) POL_MUSTCHECK;
int pol_parse_bool(const char *s, bool *b) POL_MUSTCHECK;

#endif
