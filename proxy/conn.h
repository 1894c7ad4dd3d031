/*
 * conn.h - the transport of a connection (conn.c): two sockets with their
 * buffers, watchers and timers, the connection lifecycle, and what the
 * listener, the daemon and the control socket ask of it.
 *
 * A connection is a struct px_link (side.h), which embeds the relay's
 * struct px_conn (conn_state.h) as its first member: conn.c hands the
 * relay that part only, and the relay reaches the sockets only through the
 * px_conn_ops conn.c registers at px_conn_init().  Included by conn.c and
 * the layers above it (listener, control, daemon), never by the relay
 * layer.
 */
#ifndef SMBACCEL_CONN_H
#define SMBACCEL_CONN_H

#include "proxy/proxy.h"
#include "proxy/relay.h"
#include "proxy/side.h"

/* ---- conn.c --------------------------------------------------------------- */

/*
 * What conn.c needs from the layers above it, registered at start:
 *   out_of_fds  the process ran out of descriptors (or memory for a
 *               socket) opening an upstream socket; the listener pauses
 *               accepting for a while (what names the call that failed)
 */
struct px_conn_hooks {
	void (*out_of_fds)(const char *what);
	/* a connect to the server failed or timed out */
	void (*connect_failed)(const struct sockaddr_storage *dst);
};
/* Register the hooks (NULL: none) and conn.c's services with the relay. */
void px_conn_init(const struct px_conn_hooks *hooks);

/* Accept a client socket; dst is where to connect upstream. */
void px_conn_new(int cfd, const struct sockaddr_storage *peer,
    const struct sockaddr_storage *dst);
/* Close every connection (graceful: drain write-behind first). */
void px_conn_shutdown_all(void);
static inline size_t px_conn_count(void)
{
	return (size_t)px_stats.conns_active;
}

static inline struct px_conn *px_conn_first(void)
{
	return px_rt.conns;
}
/* The policy changed (max_connecting may have grown). */
void px_conn_reloaded(void);
void px_conn_close(struct px_conn *c, enum px_close_reason r);

#endif
