/*
 * upstream.h - the upstream socket (upstream.c): the per-server settings
 * upstream_congestion, upstream_sndbuf, upstream_rcvbuf and
 * upstream_keepalive applied before
 * the connect and checked once connected (what the kernel gave is logged
 * and kept), TCP_INFO for smbaccelctl conns, and the kernel check of
 * smbaccel -t.  For conn.c and the layers above it; no libev.
 */
#ifndef SMBACCEL_UPSTREAM_H
#define SMBACCEL_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "proxy/proxy.h"

/*
 * What one upstream socket was asked for (server settings of the policy)
 * and what the kernel gave it.  Filled by px_upstream_prepare() before the
 * connect and px_upstream_connected() after it; shown by px_upstream_dump().
 */
#define PX_CC_LEN 16                /* TCP_CA_NAME_MAX */
struct px_upstream {
	char setting[PX_CC_LEN];    /* upstream_congestion as configured */
	char want[PX_CC_LEN];       /* algorithm asked for, "" = none */
	char got[PX_CC_LEN];        /* what the socket has once connected */
	bool fallback;              /* want refused: got is something else */
	int cc_errno;
	uint64_t sndbuf_want, rcvbuf_want;  /* 0: autotuning */
	int sndbuf_got, rcvbuf_got;         /* SO_SNDBUF/SO_RCVBUF read back */
	int sndbuf_errno, rcvbuf_errno;
	bool pace_watch;            /* bbr: refresh its start-up pacing rate
	                             * (px_upstream_pace) */
	unsigned int mss;           /* from the last TCP_INFO read, 0: none */
	uint64_t pace_rate;         /* pacing rate bbr started at (connect or
	                             * the last refresh): any other means bbr
	                             * has set it from its measurements */
	unsigned int pace_refreshes;
	uint32_t keepalive_ms;      /* upstream_keepalive in force */
	bool quiet;                 /* the connection's routine lines are not
	                             * logged (px_conn.quiet) */
};
/* TCP keepalive probes after ms of silence on fd, 0: none (-1 with errno
 * if the socket refuses an option); patient: 127 unanswered probes before
 * the kernel gives up, else 4; px_keepalive_gone_ms: when 4 end it. */
int px_tcp_keepalive(int fd, uint32_t ms, bool patient);
uint32_t px_keepalive_gone_ms(uint32_t ms);
void px_upstream_prepare(struct px_upstream *u, int fd,
    const struct sockaddr_storage *dst, uint64_t conn_id);
void px_upstream_connected(struct px_upstream *u, int fd, uint64_t conn_id);
/* A reload: the server's upstream_keepalive applied to the open socket. */
void px_upstream_reloaded(struct px_upstream *u, int fd,
    const struct sockaddr_storage *dst, uint64_t conn_id);
/*
 * Called before len bytes are written to the upstream socket fd while
 * nothing is queued in user space: on a bbr socket that is idle, still in
 * start-up and paced at a rate its window has outgrown, re-initialise bbr
 * so that it paces at high gain x window / RTT (upstream.c says why).
 */
void px_upstream_pace(struct px_upstream *u, int fd, size_t len,
    uint64_t conn_id);
/* Congestion control, RTT, cwnd, retransmits (TCP_INFO) of fd: text
 * columns (PX_UPSTREAM_HDR) or a JSON member ",\"upstream_tcp\":{...}". */
#define PX_UPSTREAM_HDR " CC       RTT(ms)   CWND RETRANS"
void px_upstream_dump(FILE *f, const struct px_upstream *u, int fd,
    bool json);
/* smbaccel -t: every server setting of cfg against this kernel; problems
 * as "FILE:LINE: ..." lines on f; returns the number of errors. */
int px_upstream_check(const struct pol_config *cfg, FILE *f);

#endif
