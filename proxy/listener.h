/*
 * listener.h - the listening sockets (listener.c): forward, transparent
 * (REDIRECT, SO_ORIGINAL_DST) and tproxy listeners, each accepted client
 * handed to conn.c with the server it is for.
 */
#ifndef SMBACCEL_LISTENER_H
#define SMBACCEL_LISTENER_H

#include "proxy/proxy.h"

int px_listen_start(const struct pol_global *g) PX_MUSTCHECK;
void px_listen_stop(void);
/* Stop accepting for a while: the process is out of descriptors (what
 * names the call that failed). */
void px_listen_pause(const char *what);
/* Forward mode: re-resolve the upstream after a reload. */
int px_listen_reload(const struct pol_global *g) PX_MUSTCHECK;

#endif
