/*
 * tproxy.h - policy routing for mode = tproxy (libnl-route).
 *
 * A TPROXY firewall rule marks the packets it diverts; they reach the
 * transparent listener only if routing calls them local.  px_tproxy_setup()
 * installs that routing for IPv4 and IPv6, and px_tproxy_teardown() removes
 * exactly what setup added (see tproxy.c for the entries and the rules
 * about entries that were already there).
 */
#ifndef SMBACCEL_TPROXY_H
#define SMBACCEL_TPROXY_H

#include <stdint.h>

/* Rule priorities and the protocol tag of what smbaccel installs. */
#define PX_TPROXY_PREF_SELF   32000   /* iif lo fwmark MARK lookup main */
#define PX_TPROXY_PREF_DIVERT 32001   /* fwmark MARK lookup TABLE */
#define PX_TPROXY_PROTO       177     /* "proto 177" in ip rule / ip route */

/*
 * Install the routing for TPROXY'd packets carrying mark in table.
 * 0 on success (everything needed is in place, added or found); -1 with
 * the reason logged (e.g. no CAP_NET_ADMIN), in which case whatever was
 * added has been removed again.  The daemon refuses to start on -1.
 */
int px_tproxy_setup(uint32_t mark, uint32_t table)
    __attribute__((warn_unused_result));

/* Remove what px_tproxy_setup() added.  Safe to call when nothing was. */
void px_tproxy_teardown(void);

#endif
