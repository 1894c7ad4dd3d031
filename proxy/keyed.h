/*
 * keyed.h - keyed.c, a session's keys applied to messages (DESIGN.md
 * section 7): the NTLM exchange followed to derive them, signatures
 * verified and made, messages sealed and opened.  The key files it
 * uses are keyfiles.c's.
 */
#ifndef SMBACCEL_KEYED_H
#define SMBACCEL_KEYED_H

#include <stdbool.h>
#include <time.h>

#include "proxy/conn_state.h"

/*
 * For `smbaccelctl keytabs` (with px_keyfiles_keytab): the last ticket no
 * keytab had a key for (false if none since start), with the sessions
 * relayed unkeyed for that reason since start.
 */
struct px_keyed_miss {
	char service[256];
	int32_t enctype;
	unsigned long kvno;
	time_t at;
	unsigned long long sessions;    /* unkeyed_by's no-matching-key */
};
bool px_keyed_last_miss(struct px_keyed_miss *m);
void px_keyed_shutdown(void);
void px_keyed_negotiate_req(struct px_conn *c, const uint8_t *msg, size_t len);
void px_keyed_negotiate_rsp(struct px_conn *c, const uint8_t *msg, size_t len);
/* The server's clock minus this host's now, in ms, from the SystemTime of
 * c's NEGOTIATE answer; only when c->led.server_clock_known. */
int64_t px_keyed_server_clock_off(const struct px_conn *c);
void px_keyed_setup_req(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t len, struct px_pending *p);
/* sealed_id: the session the answer came sealed under, or 0 (plain). */
void px_keyed_setup_rsp(struct px_conn *c, const struct smb2_hdr *h,
    const uint8_t *msg, size_t len, struct px_pending *p,
    uint64_t sealed_id);
/*
 * A Kerberos-keyed session whose ticket ends within kerberos_expiry_margin
 * (by the server's clock where its NEGOTIATE answer gave it): the server will answer STATUS_NETWORK_SESSION_EXPIRED
 * from the ticket's end until the client re-authenticates, so smbaccel
 * must not act on it (nothing absorbed that a flush could no longer
 * deliver).  Logged once, when the margin is entered; a re-authentication
 * with a ticket smbaccel can read ends it.
 */
bool px_keyed_expiring(struct px_conn *c, struct px_session *s);
/* When (px_now_ms() clock) s enters that margin; 0: never (no ticket). */
double px_keyed_expiry_ms(const struct px_conn *c,
    const struct px_session *s, double now_ms);
/* A request of s came signed though signing is not required: counted
 * once, keyed or (smbaccel holding no key: its requests are relayed as
 * they come) unkeyed and logged, as a session that requires signing is
 * at its setup. */
void px_keyed_client_signs(struct px_conn *c, struct px_session *s);
bool px_keyed_verify(struct px_conn *c, struct px_session *s,
    const uint8_t *msg, size_t len, uint16_t command);
/* The server's message msg (plaintext; sealed_id: the session it came
 * sealed under, 0: plain): does every answer in it that smbaccel acts on
 * rather than passing on whole (its own requests', widened READs', what it
 * rewrites or learns from) carry the protection its request went with?  A
 * client checks the same before it believes an answer (MS-SMB2 3.2.5.1.3).
 * Answers passed on whole (the client's READs) are left to the client.
 * -1: logged and counted; the connection must close. */
int px_keyed_answers_authentic(struct px_conn *c, const uint8_t *msg,
    size_t mlen, uint64_t sealed_id) PX_MUSTCHECK;
int px_keyed_sign(struct px_conn *c, uint64_t session_id, uint8_t *msg,
    size_t len, bool from_server) PX_MUSTCHECK;
/* The plaintext of a sealed message and its session, or NULL; hand the
 * plaintext back with px_keyed_release() (a kept buffer, not malloc'd).
 * head > 0: only the first head bytes are wanted; with AES-GCM the
 * message is then authenticated whole but only those are decrypted
 * (*partial set; px_smb2_open_head_ctx), otherwise all of it is. */
uint8_t *px_keyed_decrypt(struct px_conn *c, const uint8_t *msg, size_t len,
    bool from_server, size_t head, size_t *outlen, struct px_session **sp,
    bool *partial);
/* Does the sealed message msg name a session smbaccel holds the keys of? */
bool px_keyed_sealed_by_keyed(struct px_conn *c, const uint8_t *msg,
    size_t len);
/* The first n bytes of the client's sealed message msg decrypted into
 * out, NOT authenticated (AES-GCM only, px_smb2_peek_ctx): to choose how
 * to open it, never to act on it.  0, or -1. */
int px_keyed_peek(struct px_conn *c, const uint8_t *msg, size_t len,
    uint8_t *out, size_t n) PX_MUSTCHECK;
void px_keyed_release(uint8_t *plain);   /* NULL ok */
/* msg sealed for `to` (client: S2C key, server: C2S key) under session
 * session_id into out[0..52 + len): a TRANSFORM message; out + 52 may be
 * msg (in place).  0, or -1: no key, nonces used up, or OpenSSL failed. */
int px_keyed_seal(struct px_conn *c, enum px_end to, uint64_t session_id,
    const uint8_t *msg, size_t len, uint8_t *out) PX_MUSTCHECK;

#endif
