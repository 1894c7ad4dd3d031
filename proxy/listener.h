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
/* A connect to dst failed: forward mode moves to the upstream's next
 * address, if its name has several. */
void px_listen_upstream_failed(const struct sockaddr_storage *dst);
/* smbaccel -t: does a forward-mode upstream resolve (0), or not (-1,
 * logged with the resolver's reason)? */
int px_listen_check(const struct pol_global *g) PX_MUSTCHECK;
/* Forward mode: resolve the upstream of a reloaded policy g (old: the one
 * in force); -1 when it does not resolve, but an unchanged name that does
 * not resolve now keeps the address in use (logged). */
int px_listen_reload(const struct pol_global *old,
    const struct pol_global *g) PX_MUSTCHECK;

#endif
