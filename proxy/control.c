/*
 * control.c - the control socket behind smbaccelctl.
 *
 * A client connects to the unix socket, writes one line ("stats",
 * "conns json", "shares", "reload", ...), and reads the answer until EOF.
 * Answers are rendered here, human tables or JSON, so smbaccelctl stays a
 * thin client.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proxy/alter.h"
#include "proxy/doccache.h"
#include "proxy/lease.h"
#include "proxy/conn.h"
#include "proxy/control.h"
#include "proxy/keyed.h"
#include "proxy/auth/auth.h"

struct ctl_client {
	ev_io io;
	int fd;
	char line[256];
	size_t llen;
	char *out;
	size_t olen;
	size_t opos;
	ev_timer timeout;
};

static ev_io ctl_io;
static ev_timer ctl_pause;      /* accepts paused: out of descriptors */
static int ctl_fd = -1;
static int (*reload_fn)(void);
static char ctl_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static dev_t ctl_dev;       /* the socket file this process bound: unlinked */
static ino_t ctl_ino;       /* at stop only if the path still names it */

/* ---- rendering ------------------------------------------------------------- */

/*
 * The scalar counters of `smbaccelctl stats --json`, by name, and how
 * `smbaccelctl metrics` shows them: C a counter (only grows while the
 * process lives; smbaccel_NAME_total), G a gauge (smbaccel_NAME), with
 * the HELP line's text.
 */
#define C(name, field, help) { name, offsetof(struct px_stats, field), true, help }
#define G(name, field, help) { name, offsetof(struct px_stats, field), false, help }
static const struct {
	const char *name;
	size_t off;
	bool counter;
	const char *help;
} scalars[] = {
	C("connections_total", conns_total,
	    "Client connections accepted"),
	G("connections_active", conns_active,
	    "Client connections open now"),
	C("connections_queued", conns_queued,
	    "Connections that waited for max_connecting"),
	G("connect_queue", conns_queue_now,
	    "Connections waiting for max_connecting now"),
	C("connections_refused", conns_refused,
	    "Connections refused at max_connections"),
	C("connections_not_redirected", conns_unredirected,
	    "Connections refused as not redirected (transparent modes)"),
	C("reloads", reloads, "Policy reloads that took effect"),
	C("reloads_failed", reloads_failed,
	    "Policy reloads refused (the old policy kept)"),
	G("reload_ok", reload_ok,
	    "1 if the last reload took effect or none was tried, 0 if it was "
	    "refused"),
	G("policy_loaded_time_seconds", policy_loaded,
	    "When the policy in force was read, seconds since the epoch"),
	C("bytes_c2s", bytes_c2s,
	    "Bytes relayed from clients to servers"),
	C("bytes_s2c", bytes_s2c,
	    "Bytes relayed from servers to clients"),
	C("writes_absorbed", writes_absorbed,
	    "Client writes acknowledged by smbaccel (write-behind)"),
	C("bytes_absorbed", bytes_absorbed,
	    "Bytes of the writes acknowledged by smbaccel"),
	C("writes_forwarded", writes_forwarded,
	    "Client writes passed to the server as they were"),
	C("write_overlap_waits", wb_overlap_waits,
	    "Client writes that waited for a write in flight they overlap"),
	C("upstream_writes", upstream_writes,
	    "Writes sent upstream with absorbed data"),
	C("upstream_write_bytes", upstream_write_bytes,
	    "Bytes of the writes sent upstream with absorbed data"),
	C("upstream_echoes", upstream_echoes,
	    "ECHO requests sent to return unused message ids"),
	C("upstream_pace_refreshes", upstream_pace_refreshes,
	    "Times bbr was re-initialised on an upstream socket"),
	G("buffered_bytes", wb_bytes_now,
	    "Absorbed bytes not yet acknowledged by a server"),
	G("buffered_peak", wb_bytes_peak,
	    "Peak of buffered_bytes since start"),
	G("pool_ids", pool_ids_now,
	    "Message ids pooled for smbaccel's own requests"),
	C("deferred_errors", deferred_errors,
	    "Upstream write failures reported to a client after acknowledging"),
	C("deferred_unreported", deferred_unreported,
	    "Deferred write errors a CLOSE could not carry (logged)"),
	C("lost_bytes", lost_bytes,
	    "Acknowledged bytes the server never confirmed written (logged)"),
	C("closes_compounded", cmp_closes,
	    "CLOSEs sent upstream compounded with their flush"),
	C("requests_compounded", cmp_others,
	    "FLUSH, READ, SET_INFO and QUERY_INFO requests sent compounded with "
	    "their file's flush"),
	C("compound_writes", cmp_writes,
	    "WRITEs carried in those compounds"),
	C("compound_write_errors", cmp_write_errors,
	    "Compounded requests whose write failed"),
	C("compound_handles_closed", cmp_proxy_closes,
	    "Handles smbaccel closed after the server failed a compound's CLOSE"),
	C("compound_handles_waited", cmp_handles_left,
	    "Of those, handles that waited for a message id"),
	C("delayed_responses", delayed_responses,
	    "Responses held back for lack of credits or memory"),
	C("ledger_errors", ledger_errors,
	    "Inconsistencies seen in the message id and credit ledger"),
	C("ra_hits", ra_hits,
	    "Reads served from read-ahead"),
	C("ra_served_bytes", ra_served_bytes,
	    "Bytes served from read-ahead"),
	C("ra_waits", ra_waits,
	    "Reads that waited for a read-ahead fetch"),
	C("ra_widened", ra_widened,
	    "Small reads widened upstream"),
	C("ra_fetches", ra_fetches,
	    "Read-ahead READs sent upstream"),
	C("ra_fetch_bytes", ra_fetch_bytes,
	    "Bytes asked by read-ahead READs"),
	G("ra_bytes_now", ra_bytes_now,
	    "Bytes held by read-ahead now"),
	G("ra_window_max", ra_window_max,
	    "Largest read-ahead window since start"),
	C("dc_hits", dc_hits,
	    "Reads served from the document cache"),
	C("dc_served_bytes", dc_served_bytes,
	    "Bytes served from the document cache"),
	C("dc_waits", dc_waits,
	    "Reads that waited for a document cache fetch"),
	C("dc_widened", dc_widened,
	    "Reads of a cached file widened to whole 64 KiB chunks"),
	C("dc_misses", dc_misses,
	    "Document cache misses forwarded as they came"),
	C("dc_fetches", dc_fetches,
	    "Document cache READs sent upstream"),
	C("dc_fetch_bytes", dc_fetch_bytes,
	    "Bytes asked by document cache READs"),
	C("dc_fetch_ids", dc_fetch_ids,
	    "Pooled message ids spent by document cache READs"),
	C("dc_kept_ids", dc_kept_ids,
	    "Of those, ids kept from before the open's first read"),
	C("dc_stored_bytes", dc_stored_bytes,
	    "Bytes that arrived into the document cache"),
	C("dc_started", dc_started,
	    "Document copies started for random readers"),
	C("dc_no_room", dc_no_room,
	    "Document copies not started: memory busy"),
	C("dc_attached", dc_attached,
	    "Opens served by an existing document copy"),
	C("dc_valid_ok", dc_valid_ok,
	    "CREATE answers that matched a document copy"),
	G("dc_bytes_now", dc_bytes_now,
	    "Memory held by the document cache"),
	G("dc_entries_now", dc_entries_now,
	    "Documents held in memory"),
	C("dc_evicted", dc_evicted,
	    "Document copies dropped for memory"),
	G("ds_files", ds_files,
	    "Documents in the on-disk store"),
	G("ds_bytes", ds_bytes,
	    "Bytes in the on-disk store"),
	G("ds_index_bytes", ds_index_bytes,
	    "Memory of the on-disk store's index"),
	C("ds_writes", ds_writes,
	    "Document copies written to the on-disk store"),
	C("ds_loads", ds_loads,
	    "Document copies read back from the on-disk store"),
	C("ds_chunk_reads", ds_chunk_reads,
	    "Chunks read from the on-disk store"),
	C("ds_corrupt", ds_corrupt,
	    "On-disk copies found corrupt and discarded"),
	C("ds_evicted", ds_evicted,
	    "On-disk copies removed for read_cache_disk"),
	C("ds_errors", ds_errors,
	    "On-disk store I/O errors"),
	C("sessions_keyed", sessions_keyed,
	    "Signed or sealed sessions smbaccel holds the keys of"),
	C("sessions_unkeyed", sessions_unkeyed,
	    "Signed or sealed sessions relayed without a key"),
	C("signed_out", signed_out,
	    "Messages smbaccel signed"),
	C("encrypted_out", encrypted_out,
	    "Messages smbaccel encrypted"),
	C("decrypted_in", decrypted_in,
	    "Messages smbaccel decrypted"),
	C("decrypted_head_only", decrypted_head_only,
	    "Sealed large WRITEs authenticated and passed on as sealed"),
	C("decrypt_skipped_bytes", decrypt_skipped_bytes,
	    "Bytes of those not decrypted"),
	C("bad_signatures", bad_signatures,
	    "Client requests whose signature did not verify"),
	C("server_not_authentic", server_not_authentic,
	    "Server answers smbaccel would act on that failed their "
	    "session's signing or sealing (connection closed)"),
	C("sessions_server_signs_all", sessions_server_signs_all,
	    "Unkeyed sessions whose server signs every answer"),
	C("sessions_expiring", sessions_expiring,
	    "Kerberos-keyed sessions left alone before their ticket ended"),
	C("sessions_server_expired", sessions_server_expired,
	    "Sessions the server said had expired"),
	C("bad_message_ids", bad_message_ids,
	    "Client frames with a message id in use or too many in flight (closed)"),
	C("sessions_reauth_refused", sessions_reauth_refused,
	    "Established sessions whose re-authentication the server refused"),
	C("expiry_kept_bytes", expiry_kept_bytes,
	    "Flushed bytes refused for an expired session, kept"),
	C("expiry_resent_bytes", expiry_resent_bytes,
	    "Kept bytes written after re-authentication"),
	C("expiry_answered", expiry_answered,
	    "CLOSEs or LOCKs answered with the session's expiry"),
	C("sessions_multichannel", sessions_multichannel,
	    "Sessions left alone after a second channel bound"),
	C("lost_reconnected", lost_reconnected,
	    "Reconnected durable opens told of data lost with the old one"),
	C("clients_timed_out", clients_timed_out,
	    "Client connections whose machine stopped answering (keepalive)"),
	C("servers_timed_out", servers_timed_out,
	    "Server connections whose server or path stopped answering (keepalive)"),
	C("client_requests_dropped", client_requests_dropped,
	    "Unhandled requests of a gone client dropped as it reconnected"),
	C("reopen_waits", reopen_waits,
	    "Durable reconnects that waited for the previous connection's close"),
	C("interface_queries_hidden", interface_queries_hidden,
	    "Network interface queries answered NOT_SUPPORTED"),
	C("creates_rewritten", creates_rewritten,
	    "CREATEs rewritten by smbaccel"),
	C("proxy_leases_asked", pl_asked,
	    "CREATEs sent with smbaccel's own lease request"),
	C("proxy_leases_granted", pl_granted,
	    "Of those, answered with read caching"),
	C("proxy_leases_write", pl_granted_write,
	    "Of those, answered with write caching"),
	C("proxy_lease_create_failed", pl_create_failed,
	    "Of those, answered with an error"),
	C("proxy_lease_breaks", pl_breaks,
	    "Breaks of smbaccel's leases handled"),
	C("proxy_lease_breaks_acked", pl_breaks_acked,
	    "Break acknowledgements sent"),
	C("breaks_unacked", breaks_unacked,
	    "Breaks left to the server's timeout (no message id)"),
	C("proxy_lease_acks_refused", pl_ack_refused,
	    "Break acknowledgements the server refused"),
	G("proxy_lease_ack_ms_max", pl_ack_ms_max,
	    "Longest break to acknowledgement, milliseconds"),
	C("proxy_lease_locked", pl_locked,
	    "Opens of a locked file for which no lease was asked"),
	C("proxy_lease_joined", pl_joined,
	    "Opens (locked file, no data access) that joined smbaccel's "
	    "lease with W"),
	C("lock_conflicts", lock_conflicts,
	    "Lock conflicts answered by smbaccel"),
	C("locks_unchecked", locks_unchecked,
	    "Lock checks smbaccel could not answer (forwarded)"),
	C("locks_overflow", locks_overflow,
	    "Opens past the byte-range lock bound"),
	C("breaks_unacked_stopped", pl_starve_ended,
	    "Unacknowledged breaks whose opens stopped absorbing"),
	C("ack_reserve_aged", reserve_aged,
	    "Message id reserves given back unused"),
};
#undef C
#undef G

static const char *flush_name(int i) { return co_flush_cause_name(i); }
static const char *cmp_name(int i) { return px_cmp_decline_name(i); }
static const char *ra_name(int i) { return px_ra_cause_name(i); }
static const char *dc_name(int i) { return px_dc_cause_name(i); }
static const char *valid_name(int i) { return co_dc_cause_name(i); }
static const char *opaque_name(int i) { return px_opaque_reason_name(i); }
static const char *close_name(int i) { return px_close_reason_name(i); }
static const char *
cmd_name(int i)
{
	return i < SMB2_NCMDS ? px_smb2_cmd_name((uint16_t)i) : "other";
}

/* "key":{"name":n,...}, for counters [from, to) of an enumeration. */
static void
json_counts(FILE *f, const char *key, const char *(*name)(int),
    const uint64_t *v, int from, int to)
{
	int i;

	fprintf(f, "\"%s\":{", key);
	for (i = from; i < to; i++)
		fprintf(f, "%s\"%s\":%llu", i > from ? "," : "", name(i),
		    (unsigned long long)v[i]);
	fprintf(f, "},");
}

/* Opens holding smbaccel's lease on a client's behalf now (and of them
 * with write caching), over every connection. */
static unsigned int
lease_opens(unsigned int *write)
{
	struct px_conn *c;
	unsigned int n = 0, w = 0, cw;

	for (c = px_conn_first(); c; c = c->next) {
		n += px_lease_opens(c, &cw);
		w += cw;
	}
	*write = w;
	return n;
}

/* The per-share totals (struct px_share_stats), by name, with their
 * column in the table of `smbaccelctl stats`. */
#define SH(name, field, col, w, help) \
	{ name, offsetof(struct px_share_stats, field), col, w, help }
static const struct {
	const char *name;
	size_t off;
	const char *col;
	int width;
	const char *help;
} share_fields[] = {
	SH("tree_connects", tree_connects, "TREES", 8,
	    "Tree connects to the share"),
	SH("writes_absorbed", writes_absorbed, "ABSORBED", 10,
	    "Client writes to the share acknowledged by smbaccel"),
	SH("bytes_absorbed", bytes_absorbed, "ABSORBED BYTES", 14,
	    "Bytes of the writes to the share acknowledged by smbaccel"),
	SH("ra_served_bytes", ra_served_bytes, "READ-AHEAD", 14,
	    "Bytes of the share served from read-ahead"),
	SH("dc_served_bytes", dc_served_bytes, "DOC CACHE", 14,
	    "Bytes of the share served from the document cache"),
	SH("deferred_errors", deferred_errors, "ERRORS", 8,
	    "Upstream write failures on the share reported after acknowledging"),
	SH("lost_bytes", lost_bytes, "LOST BYTES", 12,
	    "Acknowledged bytes of the share never confirmed written"),
};
#undef SH
#define NSHARE_FIELDS (sizeof(share_fields) / sizeof(share_fields[0]))

static uint64_t
share_field(const struct px_share_stats *ss, size_t i)
{
	return *(const uint64_t *)((const char *)ss + share_fields[i].off);
}

static void
share_table(FILE *f)
{
	const struct px_share_stats *ss = px_share_stats_first();
	char name[520];
	size_t i;

	if (ss == NULL)
		return;
	fprintf(f, "\n%-32s", "SHARE");
	for (i = 0; i < NSHARE_FIELDS; i++)
		fprintf(f, " %*s", share_fields[i].width, share_fields[i].col);
	fprintf(f, "\n");
	for (; ss; ss = ss->next) {
		snprintf(name, sizeof(name), "//%s/%s", ss->server, ss->share);
		fprintf(f, "%-32s", name);
		for (i = 0; i < NSHARE_FIELDS; i++)
			fprintf(f, " %*llu", share_fields[i].width,
			    (unsigned long long)share_field(ss, i));
		fprintf(f, "\n");
	}
}

/* "shares":[{"server":..,"share":..,FIELD:N,...},...], */
static void
share_json(FILE *f)
{
	const struct px_share_stats *ss;
	size_t i;

	fprintf(f, "\"shares\":[");
	for (ss = px_share_stats_first(); ss; ss = ss->next) {
		fprintf(f, "%s{\"server\":", ss == px_share_stats_first() ?
		    "" : ",");
		px_ctl_json_str(f, ss->server);
		fprintf(f, ",\"share\":");
		px_ctl_json_str(f, ss->share);
		for (i = 0; i < NSHARE_FIELDS; i++)
			fprintf(f, ",\"%s\":%llu", share_fields[i].name,
			    (unsigned long long)share_field(ss, i));
		fprintf(f, "}");
	}
	fprintf(f, "],");
}

/* The two means of stats and metrics: upstream write size, break to
 * acknowledgement. */
static double
write_mean(const struct px_stats *s)
{
	return s->upstream_writes ?
	    (double)s->upstream_write_bytes / (double)s->upstream_writes : 0;
}

static double
ack_ms_mean(const struct px_stats *s)
{
	return s->pl_breaks_acked ?
	    (double)s->pl_ack_ms_sum / (double)s->pl_breaks_acked : 0;
}

/*
 * The table's " name=N" for each counter of [from, to) that is not 0,
 * after heading; nothing at all, heading included, when all are 0 (a
 * heading with nothing under it reads as if something were missing).
 * Whether anything was printed.
 */
static bool
table_counts(FILE *f, const char *heading, const char *(*name)(int),
    const uint64_t *v, int from, int to)
{
	bool any = false;
	int i;

	for (i = from; i < to; i++) {
		if (v[i] == 0)
			continue;
		if (!any)
			fputs(heading, f);
		any = true;
		fprintf(f, " %s=%llu", name(i), (unsigned long long)v[i]);
	}
	return any;
}

static void
stats_dump(FILE *f, bool json)
{
	const struct px_stats *s = &px_stats;
	double mean = write_mean(s), ack_mean = ack_ms_mean(s);
	unsigned int pl_now, pl_w;
	int i, n;

	pl_now = lease_opens(&pl_w);
	if (!json) {
		fprintf(f, "connections        %llu active, %llu total; %llu "
		    "queued to open (max_connecting), %llu waiting now; "
		    "refused %llu (max_connections), %llu not redirected\n",
		    (unsigned long long)s->conns_active,
		    (unsigned long long)s->conns_total,
		    (unsigned long long)s->conns_queued,
		    (unsigned long long)s->conns_queue_now,
		    (unsigned long long)s->conns_refused,
		    (unsigned long long)s->conns_unredirected);
		fprintf(f, "policy             %s; %llu reloads took effect, "
		    "%llu refused\n", s->reload_ok ? "the last reload took "
		    "effect (or none was tried)" : "THE LAST RELOAD WAS REFUSED, "
		    "the old policy is in force", (unsigned long long)s->reloads,
		    (unsigned long long)s->reloads_failed);
		fprintf(f, "bytes              %llu client->server, %llu "
		    "server->client\n", (unsigned long long)s->bytes_c2s,
		    (unsigned long long)s->bytes_s2c);
		fprintf(f, "writes absorbed    %llu (%llu bytes), forwarded %llu\n",
		    (unsigned long long)s->writes_absorbed,
		    (unsigned long long)s->bytes_absorbed,
		    (unsigned long long)s->writes_forwarded);
		fprintf(f, "upstream writes    %llu, mean size %.0f bytes, "
		    "echoes %llu, bbr pacing refreshed %llu\n",
		    (unsigned long long)s->upstream_writes, mean,
		    (unsigned long long)s->upstream_echoes,
		    (unsigned long long)s->upstream_pace_refreshes);
		fprintf(f, "buffered now       %llu bytes (peak %llu), ids pooled "
		    "%llu\n", (unsigned long long)s->wb_bytes_now,
		    (unsigned long long)s->wb_bytes_peak,
		    (unsigned long long)s->pool_ids_now);
		fprintf(f, "deferred errors    %llu (%llu acknowledged bytes not "
		    "written), delayed responses %llu, ledger errors %llu\n",
		    (unsigned long long)s->deferred_errors,
		    (unsigned long long)s->lost_bytes,
		    (unsigned long long)s->delayed_responses,
		    (unsigned long long)s->ledger_errors);
		fprintf(f, "closes compounded  %llu with their flush, and %llu "
		    "FLUSH/READ/SET_INFO/QUERY_INFO (%llu "
		    "writes); %llu with a failed write, %llu handles closed by "
		    "smbaccel (%llu waited for an id)",
		    (unsigned long long)s->cmp_closes,
		    (unsigned long long)s->cmp_others,
		    (unsigned long long)s->cmp_writes,
		    (unsigned long long)s->cmp_write_errors,
		    (unsigned long long)s->cmp_proxy_closes,
		    (unsigned long long)s->cmp_handles_left);
		(void)table_counts(f, "; closes not compounded:", cmp_name,
		    s->cmp_declined, 0, PX_CMP_NDECLINES);
		fprintf(f, "\n");
		fprintf(f, "read-ahead         %llu reads served from cache (%llu "
		    "bytes), %llu waited, %llu widened; %llu fetches (%llu "
		    "bytes); cached now %llu bytes, window max %llu\n",
		    (unsigned long long)s->ra_hits,
		    (unsigned long long)s->ra_served_bytes,
		    (unsigned long long)s->ra_waits,
		    (unsigned long long)s->ra_widened,
		    (unsigned long long)s->ra_fetches,
		    (unsigned long long)s->ra_fetch_bytes,
		    (unsigned long long)s->ra_bytes_now,
		    (unsigned long long)s->ra_window_max);
		fprintf(f, "document cache     %llu reads served (%llu bytes), "
		    "%llu waited, %llu misses widened, %llu forwarded; %llu "
		    "fetches (%llu bytes asked, %llu ids, %llu of them kept "
		    "from earlier requests), %llu bytes stored\n",
		    (unsigned long long)s->dc_hits,
		    (unsigned long long)s->dc_served_bytes,
		    (unsigned long long)s->dc_waits,
		    (unsigned long long)s->dc_widened,
		    (unsigned long long)s->dc_misses,
		    (unsigned long long)s->dc_fetches,
		    (unsigned long long)s->dc_fetch_bytes,
		    (unsigned long long)s->dc_fetch_ids,
		    (unsigned long long)s->dc_kept_ids,
		    (unsigned long long)s->dc_stored_bytes);
		fprintf(f, "                   %llu files started (%llu not: "
		    "memory busy), %llu opens served by a copy; in memory %llu "
		    "bytes in %llu files, %llu evicted\n",
		    (unsigned long long)s->dc_started,
		    (unsigned long long)s->dc_no_room,
		    (unsigned long long)s->dc_attached,
		    (unsigned long long)s->dc_bytes_now,
		    (unsigned long long)s->dc_entries_now,
		    (unsigned long long)s->dc_evicted);
		fprintf(f, "validations        %llu passed",
		    (unsigned long long)s->dc_valid_ok);
		(void)table_counts(f, ", failed:", valid_name,
		    s->dc_valid_failed, 1, CO_DC_NCAUSES);
		fprintf(f, "\n");
		if (table_counts(f, "copies dropped    ", dc_name, s->dc_drops,
		    0, PX_DC_NCAUSES))
			fprintf(f, "\n");
		fprintf(f, "disk store         %llu files, %llu bytes; %llu "
		    "written, %llu read back (%llu chunks), %llu corrupt, %llu "
		    "evicted, %llu I/O errors\n",
		    (unsigned long long)s->ds_files,
		    (unsigned long long)s->ds_bytes,
		    (unsigned long long)s->ds_writes,
		    (unsigned long long)s->ds_loads,
		    (unsigned long long)s->ds_chunk_reads,
		    (unsigned long long)s->ds_corrupt,
		    (unsigned long long)s->ds_evicted,
		    (unsigned long long)s->ds_errors);
		fprintf(f, "proxy leases       %u opens hold one now (%u with write "
		    "caching); %llu asked, %llu granted (%llu with write), %llu "
		    "CREATEs failed; breaks %llu, acknowledged %llu (mean %.0f "
		    "ms, max %llu ms), unacknowledged %llu, refused %llu; "
		    "reserves aged %llu; unacknowledged breaks that stopped "
		    "absorbing %llu\n", pl_now, pl_w,
		    (unsigned long long)s->pl_asked,
		    (unsigned long long)s->pl_granted,
		    (unsigned long long)s->pl_granted_write,
		    (unsigned long long)s->pl_create_failed,
		    (unsigned long long)s->pl_breaks,
		    (unsigned long long)s->pl_breaks_acked, ack_mean,
		    (unsigned long long)s->pl_ack_ms_max,
		    (unsigned long long)s->breaks_unacked,
		    (unsigned long long)s->pl_ack_refused,
		    (unsigned long long)s->reserve_aged,
		    (unsigned long long)s->pl_starve_ended);
		fprintf(f, "byte-range locks   %llu opens of a locked file not "
		    "leased; %llu opens joined a lease with W; %llu conflicts "
		    "answered by smbaccel, %llu it could not answer; %llu "
		    "handles past the lock bound\n",
		    (unsigned long long)s->pl_locked,
		    (unsigned long long)s->pl_joined,
		    (unsigned long long)s->lock_conflicts,
		    (unsigned long long)s->locks_unchecked,
		    (unsigned long long)s->locks_overflow);
		if (table_counts(f, "invalidations     ", ra_name,
		    s->ra_invalidations, 0, PX_RA_NCAUSES))
			fprintf(f, "\n");
		if (table_counts(f, "flush causes      ", flush_name, s->flushes,
		    0, CO_FLUSH_NCAUSES))
			fprintf(f, "\n");
		if (table_counts(f, "opaque relays     ", opaque_name, s->opaque,
		    1, PX_OPAQUE_NREASONS))
			fprintf(f, "\n");
		for (i = 0, n = 0; i < PX_UNKEYED_MAX; i++)
			if (s->unkeyed_by[i].n)
				fprintf(f, "%s %s=%llu", n++ ? "" :
				    "unkeyed sessions  ", s->unkeyed_by[i].why,
				    (unsigned long long)s->unkeyed_by[i].n);
		if (n > 0)
			fprintf(f, "\n");
		if (table_counts(f, "closed by proxy   ", close_name, s->closed,
		    1, PX_CLOSE_NREASONS))
			fprintf(f, "\n");
		share_table(f);
		fprintf(f, "\n%-16s %12s\n", "COMMAND", "REQUESTS");
		for (i = 0; i <= SMB2_NCMDS; i++)
			if (s->requests[i])
				fprintf(f, "%-16s %12llu\n", i < SMB2_NCMDS ?
				    px_smb2_cmd_name((uint16_t)i) : "other",
				    (unsigned long long)s->requests[i]);
		return;
	}
	fprintf(f, "{");
	for (i = 0; i < (int)(sizeof(scalars) / sizeof(scalars[0])); i++)
		fprintf(f, "\"%s\":%llu,", scalars[i].name, (unsigned long long)
		    *(const uint64_t *)((const char *)s + scalars[i].off));
	fprintf(f, "\"upstream_write_mean\":%.0f,", mean);
	fprintf(f, "\"proxy_lease_opens\":%u,\"proxy_lease_write_opens\":%u,"
	    "\"proxy_lease_ack_ms_mean\":%.1f,", pl_now, pl_w, ack_mean);
	json_counts(f, "ra_invalidations", ra_name, s->ra_invalidations,
	    0, PX_RA_NCAUSES);
	json_counts(f, "dc_valid_failed", valid_name, s->dc_valid_failed, 1,
	    CO_DC_NCAUSES);
	json_counts(f, "dc_drops", dc_name, s->dc_drops, 0, PX_DC_NCAUSES);
	json_counts(f, "flush_causes", flush_name, s->flushes, 0,
	    CO_FLUSH_NCAUSES);
	json_counts(f, "closes_not_compounded", cmp_name, s->cmp_declined, 0,
	    PX_CMP_NDECLINES);
	json_counts(f, "opaque", opaque_name, s->opaque, 1, PX_OPAQUE_NREASONS);
	json_counts(f, "closed", close_name, s->closed, 1, PX_CLOSE_NREASONS);
	fprintf(f, "\"unkeyed_by\":{");
	for (i = 0, n = 0; i < PX_UNKEYED_MAX; i++)
		if (s->unkeyed_by[i].n)
			fprintf(f, "%s\"%s\":%llu", n++ ? "," : "",
			    s->unkeyed_by[i].why,
			    (unsigned long long)s->unkeyed_by[i].n);
	fprintf(f, "},");
	json_counts(f, "commands", cmd_name, s->requests, 0, SMB2_NCMDS + 1);
	share_json(f);
	fprintf(f, "\"version\":1}\n");
}

/* ---- metrics (Prometheus text format 0.0.4) ---------------------------------- */

static time_t ctl_started;     /* when the control socket came up */

/* One counter family with a label, a sample per name of [from, to). */
static void
prom_counts(FILE *f, const char *family, const char *label,
    const char *help, const char *(*name)(int), const uint64_t *v, int from,
    int to)
{
	int i;

	px_ctl_prom_head(f, family, true, help);
	for (i = from; i < to; i++) {
		fprintf(f, "smbaccel_%s_total{%s=", family, label);
		px_ctl_prom_label(f, name(i));
		fprintf(f, "} %llu\n", (unsigned long long)v[i]);
	}
}

/* smbaccel_share_FIELD_total{server=..,share=..}, one family a field. */
static void
share_metrics(FILE *f)
{
	const struct px_share_stats *ss;
	char fam[64];
	size_t i;

	for (i = 0; i < NSHARE_FIELDS; i++) {
		snprintf(fam, sizeof(fam), "share_%s", share_fields[i].name);
		px_ctl_prom_head(f, fam, true, share_fields[i].help);
		for (ss = px_share_stats_first(); ss; ss = ss->next) {
			fprintf(f, "smbaccel_%s_total{server=", fam);
			px_ctl_prom_label(f, ss->server);
			fprintf(f, ",share=");
			px_ctl_prom_label(f, ss->share);
			fprintf(f, "} %llu\n", (unsigned long long)
			    share_field(ss, i));
		}
	}
}

static void
metrics_dump(FILE *f)
{
	const struct px_stats *s = &px_stats;
	unsigned int pl_now, pl_w;
	int i;

	pl_now = lease_opens(&pl_w);
	for (i = 0; i < (int)(sizeof(scalars) / sizeof(scalars[0])); i++) {
		px_ctl_prom_head(f, scalars[i].name, scalars[i].counter,
		    scalars[i].help);
		fprintf(f, "smbaccel_%s%s %llu\n", scalars[i].name,
		    px_ctl_prom_sfx(scalars[i].name, scalars[i].counter),
		    (unsigned long long)
		    *(const uint64_t *)((const char *)s + scalars[i].off));
	}
	px_ctl_prom_head(f, "upstream_write_mean", false,
	    "Mean size of the writes sent upstream with absorbed data, bytes");
	fprintf(f, "smbaccel_upstream_write_mean %.0f\n", write_mean(s));
	px_ctl_prom_head(f, "proxy_lease_opens", false,
	    "Opens holding smbaccel's lease on a client's behalf now");
	fprintf(f, "smbaccel_proxy_lease_opens %u\n", pl_now);
	px_ctl_prom_head(f, "proxy_lease_write_opens", false,
	    "Of those, opens whose lease caches writes");
	fprintf(f, "smbaccel_proxy_lease_write_opens %u\n", pl_w);
	px_ctl_prom_head(f, "proxy_lease_ack_ms_mean", false,
	    "Mean time from break to acknowledgement, milliseconds");
	fprintf(f, "smbaccel_proxy_lease_ack_ms_mean %.1f\n", ack_ms_mean(s));
	prom_counts(f, "ra_invalidations", "cause",
	    "Read-ahead caches dropped, by cause", ra_name,
	    s->ra_invalidations, 0, PX_RA_NCAUSES);
	prom_counts(f, "dc_valid_failed", "cause",
	    "CREATE answers that did not match a document copy, by cause",
	    valid_name, s->dc_valid_failed, 1, CO_DC_NCAUSES);
	prom_counts(f, "dc_drops", "cause", "Document copies dropped, by cause",
	    dc_name, s->dc_drops, 0, PX_DC_NCAUSES);
	prom_counts(f, "flush_causes", "cause",
	    "Write-behind flushes, by cause", flush_name, s->flushes, 0,
	    CO_FLUSH_NCAUSES);
	prom_counts(f, "closes_not_compounded", "reason",
	    "CLOSEs with buffered data not compounded with their flush, by "
	    "reason", cmp_name, s->cmp_declined, 0, PX_CMP_NDECLINES);
	prom_counts(f, "opaque", "reason",
	    "Connections relayed without interpretation, by reason",
	    opaque_name, s->opaque, 1, PX_OPAQUE_NREASONS);
	prom_counts(f, "closed", "reason",
	    "Connections closed by smbaccel, by reason", close_name,
	    s->closed, 1, PX_CLOSE_NREASONS);
	px_ctl_prom_head(f, "unkeyed_by", true,
	    "Signed or sealed sessions relayed without a key, by reason");
	for (i = 0; i < PX_UNKEYED_MAX; i++) {
		if (!s->unkeyed_by[i].n)
			continue;
		fprintf(f, "smbaccel_unkeyed_by_total{reason=");
		px_ctl_prom_label(f, s->unkeyed_by[i].why);
		fprintf(f, "} %llu\n", (unsigned long long)s->unkeyed_by[i].n);
	}
	prom_counts(f, "commands", "command", "Client requests, by SMB2 command",
	    cmd_name, s->requests, 0, SMB2_NCMDS + 1);
	share_metrics(f);
	px_ctl_prom_head(f, "start_time_seconds", false,
	    "When smbaccel started, seconds since the epoch");
	fprintf(f, "smbaccel_start_time_seconds %lld\n", (long long)ctl_started);
}

/*
 * What smbaccel may alter in session s (docs/design.md "What may be
 * altered"): "all" with its key; without one, nothing while the server is
 * not known or the session needs signing, answers only ("answers") where
 * the server signs answers it need not sign, else "all".
 */
static const char *
session_alters(struct px_conn *c, const struct px_session *s)
{
	if (s->keyed)
		return "all";
	if (s->signing_required || s->encrypt ||
	    !co_may_alter(CO_ALTER_SYNTH, s->srv_signs, false))
		return "nothing";
	return px_may_rewrite(c, s) ? "all" : "answers";
}

/* A note for the human table: why a connection is not accelerated fully. */
static const char *
conn_note(struct px_conn *c)
{
	const struct px_session *s;

	for (s = c->led.sessions; s; s = s->next)
		if (!s->keyed && s->srv_signs == CO_SIGNS_ALL)
			return "server-signs-all";
	for (s = c->led.sessions; s; s = s->next)
		if (s->keyed && s->expiring)
			return "ticket-ending";
	for (s = c->led.sessions; s; s = s->next)
		if (s->srv_expired)
			return "session-expired";
	for (s = c->led.sessions; s; s = s->next)
		if (s->multichannel)
			return "multichannel";
	return "-";
}

static void
conns_dump(FILE *f, bool json)
{
	struct px_conn *c;
	char a[64], b[64];
	bool first = true;
	double now = px_now_ms();

	if (json)
		fprintf(f, "{\"conns\":[");
	else
		fprintf(f, "%-5s %-22s %-22s %-10s %-6s %-16s %12s %12s %9s %7s "
		    "%8s %8s%s %s\n", "ID", "CLIENT", "SERVER", "STATE",
		    "DIALECT", "OPAQUE", "C2S", "S2C", "ABSORBED", "PXLEASE",
		    "AGE(s)", "IDLE(s)", PX_UPSTREAM_HDR, "NOTE");
	for (c = px_conn_first(); c; c = c->next) {
		/* a connection waiting for max_connecting says so */
		const char *st = px_conn_queued(c) ? "queued" :
		    px_conn_state_name(c->state);
		unsigned int plw, pln = px_lease_opens(c, &plw);
		char plbuf[24];

		px_addr_str(&c->peer_addr, a, sizeof(a));
		px_addr_str(&c->dst_addr, b, sizeof(b));
		if (!json) {
			/* opens with smbaccel's lease: all/with write caching */
			snprintf(plbuf, sizeof(plbuf), "%u/%u", pln, plw);
			fprintf(f, "%-5llu %-22s %-22s %-10s %-6s %-16s %12llu "
			    "%12llu %9llu %7s %8.0f %8.0f",
			    (unsigned long long)c->id,
			    a, b, st, px_dialect_name(c->led.dialect),
			    c->opaque ? px_opaque_reason_name(c->opaque) : "-",
			    (unsigned long long)px_link_of(c)->cli.bytes_in,
			    (unsigned long long)px_link_of(c)->srv.bytes_in,
			    (unsigned long long)c->absorbed, plbuf,
			    (now - px_link_of(c)->started_ms) / 1e3,
			    (now - px_link_of(c)->last_ms) / 1e3);
			px_upstream_dump(f, &px_link_of(c)->up,
			    px_link_of(c)->srv.fd, false);
			fprintf(f, " %s\n", conn_note(c));
			continue;
		}
		fprintf(f, "%s{\"id\":%llu,\"client\":", first ? "" : ",",
		    (unsigned long long)c->id);
		px_ctl_json_str(f, a);
		fprintf(f, ",\"server\":");
		px_ctl_json_str(f, b);
		fprintf(f, ",\"state\":\"%s\",\"dialect\":\"%s\",\"opaque_reason\":",
		    st, px_dialect_name(c->led.dialect));
		if (c->opaque)
			px_ctl_json_str(f, px_opaque_reason_name(c->opaque));
		else
			fprintf(f, "null");
		fprintf(f, ",\"age_s\":%.0f,\"idle_s\":%.0f",
		    (now - px_link_of(c)->started_ms) / 1e3,
		    (now - px_link_of(c)->last_ms) / 1e3);
		fprintf(f, ",\"bytes_c2s\":%llu,\"bytes_s2c\":%llu,"
		    "\"writes_absorbed\":%llu,\"upstream_writes\":%llu,"
		    "\"upstream_write_bytes\":%llu,\"buffered_bytes\":%llu,"
		    "\"pool_ids\":%llu,\"credits_server\":%llu,"
		    "\"credits_client\":%llu,\"opens\":%zu,\"ledger_errors\":%llu,"
		    "\"proxy_lease_opens\":%u,\"proxy_lease_write_opens\":%u,"
		    "\"proxy_lease_breaks\":%llu,\"ack_reserve\":%s,"
		    "\"server_clock_offset_ms\":",
		    (unsigned long long)px_link_of(c)->cli.bytes_in,
		    (unsigned long long)px_link_of(c)->srv.bytes_in,
		    (unsigned long long)c->absorbed,
		    (unsigned long long)c->up_writes,
		    (unsigned long long)c->up_write_bytes,
		    (unsigned long long)c->wb_bytes,
		    (unsigned long long)c->led.pool.count,
		    (unsigned long long)c->led.cr.S,
		    (unsigned long long)c->led.cr.C, c->led.nopens,
		    (unsigned long long)c->led.errors, pln, plw,
		    (unsigned long long)c->pl_breaks,
		    c->led.rsv.held ? "true" : "false");
		if (c->led.server_clock_known)
			fprintf(f, "%lld",
			    (long long)px_keyed_server_clock_off(c));
		else
			fprintf(f, "null");
		fprintf(f, ",\"sessions\":[");
		{
			struct px_session *s;
			bool sf = true;

			for (s = c->led.sessions; s; s = s->next, sf = false)
				fprintf(f, "%s{\"id\":\"0x%llx\",\"signing_required\":"
				    "%s,\"encrypt\":%s,\"guest\":%s,\"keyed\":%s,"
				    "\"why_not_keyed\":\"%s\",\"auth\":\"%s\","
				    "\"server_signs\":\"%s\",\"alters\":\"%s\","
				    "\"ticket_end\":%lld,\"expiring\":%s,"
				    "\"server_expired\":%s,\"multichannel\":%s}",
				    sf ? "" : ",",
				    (unsigned long long)s->id,
				    s->signing_required ? "true" : "false",
				    s->encrypt ? "true" : "false",
				    s->guest ? "true" : "false",
				    s->keyed ? "true" : "false",
				    s->keyed ? "" : s->why_not ? s->why_not :
				    "not-needed", s->auth ? s->auth : "",
				    co_signs_name(s->srv_signs),
				    session_alters(c, s), (long long)(s->kx ?
				    s->kx->tkt_end : 0), s->expiring ? "true" :
				    "false", s->srv_expired ? "true" : "false",
				    s->multichannel ? "true" : "false");
		}
		fprintf(f, "]");
		px_upstream_dump(f, &px_link_of(c)->up, px_link_of(c)->srv.fd,
		    true);
		fprintf(f, ",\"trees\":[");
		{
			struct px_tree *t;
			bool tf = true;

			for (t = c->led.trees; t; t = t->next, tf = false) {
				fprintf(f, "%s{\"share\":", tf ? "" : ",");
				px_ctl_json_str(f, t->share);
				fprintf(f, ",\"server\":");
				px_ctl_json_str(f, t->server);
				fprintf(f, ",\"write_behind\":\"%s\","
				    "\"read_ahead\":\"%s\",\"proxy_lease\":%s}",
				    pol_gate_name(t->policy.write_behind),
				    pol_gate_name(t->policy.read_ahead),
				    t->policy.proxy_lease ? "true" : "false");
			}
		}
		fprintf(f, "]}");
		first = false;
	}
	if (json)
		fprintf(f, "]}\n");
}

/* Trees of every connection with their effective settings. */
static void
shares_dump(FILE *f, bool json)
{
	struct px_conn *c;
	bool first = true;

	if (json)
		fprintf(f, "{\"shares\":[");
	else
		fprintf(f, "%-5s %-20s %-20s %-8s %-8s %-8s %10s\n", "CONN",
		    "SERVER", "SHARE", "WB", "RA", "PXLEASE", "COALESCE");
	for (c = px_conn_first(); c; c = c->next) {
		struct px_tree *t;

		for (t = c->led.trees; t; t = t->next) {
			if (!json) {
				char sv[sizeof(t->server)], sh[sizeof(t->share)];

				/* the client chose the server name */
				fprintf(f, "%-5llu %-20s %-20s %-8s %-8s %-8s "
				    "%10llu\n", (unsigned long long)c->id,
				    px_str_safe(t->server, sv, sizeof(sv)),
				    px_str_safe(t->share, sh, sizeof(sh)),
				    pol_gate_name(t->policy.write_behind),
				    pol_gate_name(t->policy.read_ahead),
				    t->policy.proxy_lease ? "on" : "off",
				    (unsigned long long)t->policy.coalesce_size);
				continue;
			}
			fprintf(f, "%s{\"conn\":%llu,\"server\":", first ? "" : ",",
			    (unsigned long long)c->id);
			px_ctl_json_str(f, t->server);
			fprintf(f, ",\"share\":");
			px_ctl_json_str(f, t->share);
			fprintf(f, ",\"write_behind\":\"%s\",\"read_ahead\":\"%s\","
			    "\"proxy_lease\":%s,\"coalesce_size\":%llu}",
			    pol_gate_name(t->policy.write_behind),
			    pol_gate_name(t->policy.read_ahead),
			    t->policy.proxy_lease ? "true" : "false",
			    (unsigned long long)t->policy.coalesce_size);
			first = false;
		}
	}
	if (json)
		fprintf(f, "]}\n");
}

/* ---- socket ------------------------------------------------------------------ */

static void
client_free(struct ctl_client *cl)
{
	ev_io_stop(px_rt.loop, &cl->io);
	ev_timer_stop(px_rt.loop, &cl->timeout);
	close(cl->fd);
	free(cl->out);
	free(cl);
}

static void
client_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_client *cl = w->data;
	ssize_t n;

	(void)loop;
	(void)revents;
	while (cl->opos < cl->olen) {
		n = write(cl->fd, cl->out + cl->opos, cl->olen - cl->opos);
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			break;
		}
		cl->opos += (size_t)n;
	}
	client_free(cl);
}

static void
run_command(struct ctl_client *cl)
{
	FILE *f = open_memstream(&cl->out, &cl->olen);
	char *cmd = cl->line, *arg;
	size_t nul = strlen(cmd);
	bool json, bad = nul < cl->llen && memchr(cmd, '\n', nul) == NULL;

	if (f == NULL) {
		client_free(cl);
		return;
	}
	cmd[strcspn(cmd, "\r\n")] = '\0';
	arg = cmd + strcspn(cmd, " ");
	if (*arg)
		*arg++ = '\0';
	json = strstr(arg, "json") != NULL;
	if (bad)        /* a NUL before the newline */
		fprintf(f, "error: bad command (a NUL byte in it)\n");
	else if (strcmp(cmd, "stats") == 0)
		stats_dump(f, json);
	else if (strcmp(cmd, "conns") == 0)
		conns_dump(f, json);
	else if (strcmp(cmd, "shares") == 0)
		shares_dump(f, json);
	else if (strcmp(cmd, "keytabs") == 0)
		px_ctl_keytabs(f, json);
	else if (strcmp(cmd, "metrics") == 0)
		metrics_dump(f);
	else if (strcmp(cmd, "reload") == 0)
		fprintf(f, reload_fn() == 0 ? "reloaded\n" :
		    "error: reload failed, old policy kept (see the log)\n");
	else
		fprintf(f, "error: unknown command '%s' (stats, conns, shares, "
		    "keytabs, metrics, reload)\n", cmd);
	fclose(f);
	/* the answer gets its own time to be read (a reload may have taken
	 * the first's): then a reset, never an answer cut short silently */
	ev_timer_stop(px_rt.loop, &cl->timeout);
	ev_timer_set(&cl->timeout, 60., 0.);
	ev_timer_start(px_rt.loop, &cl->timeout);
	ev_io_stop(px_rt.loop, &cl->io);
	ev_io_init(&cl->io, client_write_cb, cl->fd, EV_WRITE);
	cl->io.data = cl;
	ev_io_start(px_rt.loop, &cl->io);
}

static void
client_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_client *cl = w->data;
	ssize_t n;

	(void)loop;
	(void)revents;
	n = read(cl->fd, cl->line + cl->llen, sizeof(cl->line) - 1 - cl->llen);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -1 || (n == 0 && cl->llen == 0)) {
		client_free(cl);
		return;
	}
	/* a command ends at its newline, at EOF (printf stats | socat) or
	 * at a NUL, answered at once as a bad command */
	cl->llen += (size_t)n;
	cl->line[cl->llen] = '\0';
	if (n == 0 || strcspn(cl->line, "\n") < cl->llen ||
	    cl->llen == sizeof(cl->line) - 1)
		run_command(cl);
}

static void
client_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ctl_client *cl = w->data;

	(void)loop;
	(void)revents;
	if (cl->out != NULL) {
		/* part of the answer unread: the reader sees a reset */
		struct linger lg = { 1, 0 };

		(void)setsockopt(cl->fd, SOL_SOCKET, SO_LINGER, &lg,
		    sizeof(lg));
		log_warnx("control socket: a client did not read its answer "
		    "within 60 s (%zu of %zu bytes): reset",
		    cl->opos, cl->olen);
	} else
		log_debug("control socket: a client sent no command within 10 s "
		    "(%zu bytes, no newline): closed", cl->llen);
	client_free(cl);
}

static void
ctl_resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	if (ctl_fd != -1)
		ev_io_start(loop, &ctl_io);
}

static void
ctl_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_client *cl;
	int fd;

	(void)w;
	(void)revents;
	fd = accept4(ctl_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd == -1) {
		/* the connection stays queued and the watcher would fire
		 * again at once: wait a second, as the listener does */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM) {
			log_warn("control socket: accept (paused 1 s)");
			ev_io_stop(loop, &ctl_io);
			ev_timer_init(&ctl_pause, ctl_resume_cb, 1., 0.);
			ev_timer_start(loop, &ctl_pause);
		}
		return;
	}
	if ((cl = calloc(1, sizeof(*cl))) == NULL) {
		close(fd);
		return;
	}
	cl->fd = fd;
	ev_io_init(&cl->io, client_read_cb, fd, EV_READ);
	cl->io.data = cl;
	ev_io_start(px_rt.loop, &cl->io);
	ev_timer_init(&cl->timeout, client_timeout_cb, 10., 0.);
	cl->timeout.data = cl;
	ev_timer_start(px_rt.loop, &cl->timeout);
}

/*
 * Make the directory the control socket goes in, if it is missing: one
 * level only (mkdir, not mkdir -p), mode 0750 less the umask.  Under
 * systemd RuntimeDirectory= makes /run/smbaccel, but only while the
 * service runs, so `smbaccel -f` started by hand would find none.  A
 * name that exists but is not a directory is refused, with the reason.
 */
static int
ctl_make_dir(const char *path)
{
	char dir[sizeof(ctl_path)];
	char *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) == NULL)
		return 0;       /* in the working directory */
	while (slash > dir && slash[-1] == '/')
		slash--;
	if (slash == dir)
		return 0;       /* in / */
	*slash = '\0';
	if (stat(dir, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		log_warnx("control_socket %s: %s exists and is not a "
		    "directory", path, dir);
		return -1;
	}
	if (errno != ENOENT) {
		log_warn("control_socket %s: %s", path, dir);
		return -1;
	}
	if (mkdir(dir, 0750) == 0) {
		log_info("control socket: made the directory %s", dir);
		return 0;
	}
	if (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;       /* made by someone else meanwhile */
	log_warn("control_socket %s: cannot make the directory %s (only "
	    "its last level is made)", path, dir);
	return -1;
}

int
px_control_check(const char *path)
{
	struct stat st;

	if (path == NULL || *path == '\0' || lstat(path, &st) == -1 ||
	    S_ISSOCK(st.st_mode))
		return 0;
	log_warnx("control_socket %s exists and is not a socket", path);
	return -1;
}

/* Does a running process answer on the control socket path (another
 * smbaccel with this configuration)? */
static bool
control_in_use(const char *path)
{
	struct sockaddr_un sun;
	bool used;
	int fd;

	if (path == NULL || *path == '\0' || strlen(path) >= sizeof(sun.sun_path))
		return false;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1)
		return false;
	/* accepted, or a full backlog (EAGAIN): someone listens there; a
	 * stale file left by a daemon that died refuses (ECONNREFUSED) */
	used = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 ||
	    errno == EAGAIN;
	close(fd);
	return used;
}

int
px_control_start(const char *path, int (*reload)(void))
{
	struct sockaddr_un sun;
	struct stat st;
	mode_t old;

	reload_fn = reload;
	if (ctl_started == 0)
		ctl_started = time(NULL);
	if (path == NULL || *path == '\0')
		return 0;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx("control_socket %s: path too long", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	if (ctl_make_dir(path) == -1)
		return -1;
	if ((ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		log_warn("control socket");
		return -1;
	}
	/* only a socket nobody answers on (a daemon that died) is replaced:
	 * never a file of another kind, never a live daemon's socket */
	if (px_control_check(path) == -1) {
		close(ctl_fd);
		ctl_fd = -1;
		return -1;
	}
	if (control_in_use(path)) {
		log_warnx("another smbaccel is running: its control socket %s "
		    "answers; not starting (smbaccelctl -s %s stats)", path,
		    path);
		close(ctl_fd);
		ctl_fd = -1;
		return -1;
	}
	(void)unlink(path);
	old = umask(0077);
	if (bind(ctl_fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(ctl_fd, 16) == -1) {
		umask(old);
		log_warn("control socket %s", path);
		close(ctl_fd);
		ctl_fd = -1;
		return -1;
	}
	umask(old);
	snprintf(ctl_path, sizeof(ctl_path), "%s", path);
	if (stat(path, &st) == 0) {
		ctl_dev = st.st_dev;
		ctl_ino = st.st_ino;
	}
	ev_io_init(&ctl_io, ctl_accept_cb, ctl_fd, EV_READ);
	ev_io_start(px_rt.loop, &ctl_io);
	log_info("control socket %s", path);
	return 0;
}

void
px_control_stop(void)
{
	struct stat st;

	if (ctl_fd == -1)
		return;
	ev_io_stop(px_rt.loop, &ctl_io);
	ev_timer_stop(px_rt.loop, &ctl_pause);
	close(ctl_fd);
	ctl_fd = -1;
	if (lstat(ctl_path, &st) == 0 && st.st_dev == ctl_dev &&
	    st.st_ino == ctl_ino)
		(void)unlink(ctl_path);
}
