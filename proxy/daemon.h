/*
 * daemon.h - the daemon (daemon.c): start-up, signals, reload, drain on
 * SIGTERM, sd_notify.  The top layer: it starts the listener, the control
 * socket and conn.c, and is called by none of them.
 */
#ifndef SMBACCEL_DAEMON_H
#define SMBACCEL_DAEMON_H

#include <stdbool.h>

int px_daemon_run(const char *cfg_path, bool foreground);

#endif
