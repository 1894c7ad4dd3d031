/*
 * control.h - the control socket (control.c): smbaccelctl's stats, conns,
 * shares and reload.
 */
#ifndef SMBACCEL_CONTROL_H
#define SMBACCEL_CONTROL_H

#include <stdbool.h>
#include <stdio.h>

#include "proxy/proxy.h"

/* Listen on path; `reload` is what a reload request runs (0: the new
 * policy is in force). */
int px_control_start(const char *path, int (*reload)(void)) PX_MUSTCHECK;
/* -t: 0, or -1 (logged) when the path exists and is not a socket. */
int px_control_check(const char *path);
void px_control_stop(void);

/* ctlout.c: a JSON string (escaped, valid UTF-8: a byte that starts no
 * well-formed character becomes U+FFFD), and the keytabs answer. */
void px_ctl_json_str(FILE *f, const char *s);
void px_ctl_keytabs(FILE *f, bool json);
/* Prometheus text: a metric's suffix ("_total" for a counter unless the
 * name ends so), its HELP and TYPE lines, a quoted label value. */
const char *px_ctl_prom_sfx(const char *name, bool counter);
void px_ctl_prom_head(FILE *f, const char *name, bool counter,
    const char *help);
void px_ctl_prom_label(FILE *f, const char *s);

#endif
