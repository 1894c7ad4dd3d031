/*
 * auth.h - keyed sessions: the secrets file, NTLMv2 session keys from the
 * relayed SPNEGO/NTLMSSP exchange, SMB 2/3 key derivation, signing,
 * TRANSFORM_HEADER encryption and the nonces smbaccel itself uses
 * (DESIGN.md section 7), and the Kerberos acceptor side that gets the
 * session key of a Kerberos session from the server's keytab.
 *
 * Everything here is pure: byte buffers in, byte buffers out, no sockets.
 * All cryptography goes through OpenSSL 3 (EVP, EVP_MAC, EVP_KDF; AES-CMAC
 * is composed in smbcrypto.c from OpenSSL's AES-128-CBC); MD4 and RC4 come
 * from the legacy provider.  px_crypto_init() loads the providers
 * once; every other function calls it on first use, but the daemon should
 * call it at start-up to fail early with a readable message.  The module
 * keeps process-wide state (fetched algorithms) and is not thread-safe
 * before px_crypto_init() has returned; after that it is.
 */
#ifndef SMBACCEL_KEYS_H
#define SMBACCEL_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/smb2/smb2.h"

/*
 * Load the "legacy" and "default" OpenSSL providers into the default
 * library context and fetch every algorithm used here.  Idempotent.
 * Returns 0, or -1 with a sentence in err (e.g. when the legacy provider,
 * needed for MD4 and RC4, is not installed).
 */
int px_crypto_init(char *err, size_t errlen) PX_MUSTCHECK;

/* ---- secrets file --------------------------------------------------------- */

/*
 * One entry a line, '#' at the start of a line (after blanks) is a comment,
 * blank lines are ignored:
 *     [DOMAIN\]user:nthash:<32 hex digits>
 *     [DOMAIN\]user:password:<text to the end of the line>
 * Blanks around the principal, the type and the hash are ignored; a
 * password is taken verbatim (only a trailing '\r' is removed).  The file
 * must be a regular file owned by root with no group/other permission
 * bits, and the path must not be a symbolic link (O_NOFOLLOW; links in
 * the directories above it are followed).  A FIFO or device at the path
 * is refused without blocking on its open.
 */
#define PX_SECRETS_MAX_ENTRIES 10000
#define PX_SECRETS_MAX_LINE    1024          /* bytes, without the newline */
#define PX_SECRETS_MAX_SIZE    (4u << 20)    /* whole file */
#define PX_SECRETS_NAME_MAX    256           /* user or domain, UTF-8 bytes */

struct px_secrets;

/*
 * Parse the file.  Returns NULL and a sentence in err naming the reason
 * (ownership, permissions, "not a regular file", "a symbolic link, not
 * followed", size, "line N: ...") on any problem: a file with one bad
 * line is refused whole.
 */
struct px_secrets *px_secrets_load(const char *path, char *err,
    size_t errlen);
/*
 * NT hash for (domain, user), compared ASCII-case-insensitively.  An entry
 * with the same domain wins over one without a domain; an entry without a
 * domain matches any domain.  domain may be NULL or "".  NULL if unknown.
 */
const uint8_t *px_secrets_nthash(const struct px_secrets *s,
    const char *domain, const char *user);
size_t px_secrets_count(const struct px_secrets *s);
void px_secrets_free(struct px_secrets *s);   /* wipes the hashes; NULL ok */

/* NT hash = MD4(UTF-16LE(password)); password is UTF-8.  0 or -1. */
int px_nt_hash(const char *password, size_t len, uint8_t out[16])
    PX_MUSTCHECK;

/* ---- SPNEGO / NTLMSSP (RFC 4178, MS-SPNG, MS-NLMP) ------------------------- */

#define PX_NTLMSSP_NEGOTIATE_UNICODE      0x00000001u
#define PX_NTLMSSP_NEGOTIATE_SIGN         0x00000010u
#define PX_NTLMSSP_NEGOTIATE_SEAL         0x00000020u
#define PX_NTLMSSP_NEGOTIATE_NTLM         0x00000200u
#define PX_NTLMSSP_NEGOTIATE_ANONYMOUS    0x00000800u
#define PX_NTLMSSP_NEGOTIATE_EXTENDED_SESSIONSECURITY 0x00080000u
#define PX_NTLMSSP_NEGOTIATE_TARGET_INFO  0x00800000u
#define PX_NTLMSSP_NEGOTIATE_VERSION      0x02000000u
#define PX_NTLMSSP_NEGOTIATE_128          0x20000000u
#define PX_NTLMSSP_NEGOTIATE_KEY_EXCH     0x40000000u

#define PX_NTLM_NAME_MAX  (PX_SECRETS_NAME_MAX + 1)  /* with the NUL */
#define PX_NTLM_BLOB_MAX  8192   /* NTLMv2 client challenge ("temp") */

/* The mechanism a security buffer carries. */
enum px_gss_mech {
	PX_MECH_NONE = 0,    /* no token (e.g. final negTokenResp, mech list) */
	PX_MECH_NTLMSSP,
	PX_MECH_KERBEROS,    /* krb5, MS krb5, IAKERB, user-to-user */
	PX_MECH_OTHER,       /* NEGOEX, unknown OID, token of unknown form */
};
const char *px_gss_mech_name(enum px_gss_mech m);

/* Return values of the two parsers. */
enum px_ntlm_rc {
	PX_NTLM_BAD = -1,    /* malformed: a length, offset or tag is wrong */
	PX_NTLM_OK = 0,      /* an NTLMSSP message of the wanted type, parsed */
	PX_NTLM_OTHER = 1,   /* well formed, but not that message: see .mech
	                      * and .ntlm_type (Kerberos, NTLM NEGOTIATE, ...) */
};

/* From the server's CHALLENGE_MESSAGE (MS-NLMP 2.2.1.2). */
struct px_ntlm_challenge {
	enum px_gss_mech mech;
	uint32_t ntlm_type;          /* NTLMSSP MessageType seen, 0 if none */
	uint32_t flags;              /* NegotiateFlags */
	uint8_t server_challenge[8];
};

/*
 * From the client's AUTHENTICATE_MESSAGE (MS-NLMP 2.2.1.3).  Self-contained
 * (no pointers into the parsed buffer), so it can be kept until the
 * response arrives.
 */
struct px_ntlm_auth {
	enum px_gss_mech mech;
	uint32_t ntlm_type;
	uint32_t flags;              /* NegotiateFlags */
	bool anonymous;              /* empty user and empty NT response, or
	                              * the ANONYMOUS flag */
	char domain[PX_NTLM_NAME_MAX];   /* UTF-8, NUL-terminated */
	char user[PX_NTLM_NAME_MAX];
	size_t nt_response_len;      /* 24: NTLMv1; > 24: NTLMv2 */
	uint8_t nt_proof[16];        /* NTLMv2: first 16 bytes of the response */
	size_t blob_len;             /* NTLMv2: the rest of the response */
	uint8_t blob[PX_NTLM_BLOB_MAX];
	bool has_enc_key;            /* EncryptedRandomSessionKey is 16 bytes */
	uint8_t enc_session_key[16];
};

/*
 * Find the NTLMSSP message in a SESSION_SETUP security buffer: a GSS
 * InitialContextToken with SPNEGO's NegTokenInit, a bare NegTokenResp, or
 * raw NTLMSSP.  Every DER length and every NTLMSSP offset is checked
 * against its enclosing buffer.  On anything but PX_NTLM_OK the fields
 * other than mech and ntlm_type are zero.
 */
int px_ntlm_parse_challenge(const uint8_t *buf, size_t len,
    struct px_ntlm_challenge *out) PX_MUSTCHECK;
int px_ntlm_parse_authenticate(const uint8_t *buf, size_t len,
    struct px_ntlm_auth *out) PX_MUSTCHECK;
/*
 * Wipe what an AUTHENTICATE gave that is secret: NTProofStr and the rest
 * of the NTLMv2 response (with the server challenge, a password guess can
 * be checked against them offline) and the EncryptedRandomSessionKey
 * (with the NT hash, the session key).  mech, ntlm_type, flags, anonymous,
 * domain and user stay for the log; px_ntlm_session_key refuses what is
 * left (PX_KEY_UNSUPPORTED).  Call it when the exchange is done with, and
 * on every path that frees a struct holding one.  NULL ok; idempotent.
 */
void px_ntlm_auth_wipe(struct px_ntlm_auth *a);

enum px_key_result {
	PX_KEY_OK = 0,
	PX_KEY_MISMATCH,     /* NTProofStr does not verify: wrong secret */
	PX_KEY_ANONYMOUS,
	PX_KEY_UNSUPPORTED,  /* NTLMv1/LM, Kerberos, KEY_EXCH without a key */
	PX_KEY_ERROR,        /* OpenSSL failed */
};
const char *px_key_result_name(enum px_key_result r); /* "key-mismatch"... */

/*
 * MS-NLMP 3.3.2: verify NTProofStr (constant time) with nthash, then
 * derive the exported session key: SessionBaseKey, or with KEY_EXCH
 * negotiated in both the challenge and the authenticate flags (and SIGN
 * or SEAL) RC4(SessionBaseKey, EncryptedRandomSessionKey).
 * session_key is written only on PX_KEY_OK.
 */
enum px_key_result px_ntlm_session_key(const struct px_ntlm_challenge *c,
    const struct px_ntlm_auth *a, const uint8_t nthash[16],
    uint8_t session_key[16]);

/* ---- SMB2/3 keys, signing, encryption (MS-SMB2 3.1.4) ---------------------- */

#define PX_PREAUTH_LEN 64

/* preauth = SHA-512(preauth || msg); start from 64 zero bytes.  0 / -1. */
int px_preauth_update(uint8_t hash[PX_PREAUTH_LEN], const uint8_t *msg,
    size_t len) PX_MUSTCHECK;

/*
 * A stable 128-bit name for a list of byte strings: the first 16 bytes of
 * SHA-512 over each part preceded by its length (4 bytes, little endian),
 * so that different splits of the same bytes differ.  Used for the lease
 * keys smbaccel asks for on a client's behalf.  0 / -1.
 */
int px_digest16(const void *const *parts, const size_t *lens, unsigned int n,
    uint8_t out[16]) PX_MUSTCHECK;

#define PX_CIPHER_NONE        0
#define PX_CIPHER_AES128_CCM  1
#define PX_CIPHER_AES128_GCM  2
#define PX_CIPHER_AES256_CCM  3
#define PX_CIPHER_AES256_GCM  4

#define PX_SIGN_HMAC_SHA256   0
#define PX_SIGN_AES_CMAC      1
#define PX_SIGN_AES_GMAC      2

/* Which cipher key: the one the client encrypts with, or the server. */
enum px_key_dir {
	PX_C2S = 0,   /* 3.0.x "ServerIn ", 3.1.1 "SMBC2SCipherKey" */
	PX_S2C = 1,   /* 3.0.x "ServerOut", 3.1.1 "SMBS2CCipherKey" */
};

struct px_smb_keys {
	uint16_t dialect;
	uint16_t cipher;          /* PX_CIPHER_*, NONE: no cipher keys */
	size_t cipher_key_len;    /* 0, 16 or 32 */
	uint8_t signing[16];
	uint8_t c2s[32];
	uint8_t s2c[32];
};

/*
 * Derive the session's keys (MS-SMB2 3.2.5.3.1 / 3.3.5.5.3):
 *  - 2.0.2, 2.1: signing key = the session key; no cipher keys.
 *  - 3.0, 3.0.2: SP800-108 (HMAC-SHA256, counter, r = 32) with
 *    "SMB2AESCMAC\0"/"SmbSign\0", "SMB2AESCCM\0"/"ServerIn \0" and
 *    "ServerOut\0"; the cipher is always AES-128-CCM (cipher must be NONE
 *    or AES128_CCM).
 *  - 3.1.1: "SMBSigningKey\0", "SMBC2SCipherKey\0", "SMBS2CCipherKey\0",
 *    context = the session's preauth hash.
 * session_key is the GSS key (16 bytes for NTLM, may be 32 for Kerberos).
 * Session.SessionKey is its first 16 bytes (zero padded if shorter): it
 * keys the signing key and the 128-bit cipher keys.  For AES-256 ciphers
 * the cipher keys are derived from the full key (Session.FullSessionKey)
 * with L = 256; the signing key keeps L = 128, as Samba and Windows do.
 * Returns 0, or -1 for an unknown dialect/cipher or a crypto failure.
 */
int px_smb_keys_derive(uint16_t dialect, const uint8_t *session_key,
    size_t session_key_len, const uint8_t preauth[PX_PREAUTH_LEN],
    uint16_t cipher, struct px_smb_keys *out) PX_MUSTCHECK;
/*
 * Wipe k whole (keys, dialect, cipher): keys derived but not accepted
 * (the server's signature did not verify), and every px_smb_keys before
 * it is freed.  A wiped k signs, verifies, encrypts and decrypts nothing
 * (its dialect, 0, matches none).  NULL ok.
 */
void px_smb_keys_wipe(struct px_smb_keys *k);

/*
 * Sign one compound element in place (msg = its header, len = its length
 * including padding up to NextCommand): set SMB2_FLAGS_SIGNED, zero the
 * signature, MAC the element, write 16 bytes at offset 48.  Algorithm:
 * 2.0.2/2.1 HMAC-SHA256; 3.0/3.0.2 AES-128-CMAC; 3.1.1 signing_alg
 * (PX_SIGN_*; pass PX_SIGN_AES_CMAC when no SIGNING_CAPABILITIES context
 * was negotiated).  GMAC nonce: MessageId (LE) and a 32-bit word with bit 0
 * for from_server and bit 1 for is_cancel.  dialect must equal k->dialect.
 * Returns 0 or -1.
 */
int px_smb2_sign(const struct px_smb_keys *k, uint16_t dialect,
    uint16_t signing_alg, uint8_t *msg, size_t len, bool from_server,
    bool is_cancel) PX_MUSTCHECK;
/* 0 if the element's signature is right (constant-time compare), -1 if
 * not; msg is not modified. */
int px_smb2_verify(const struct px_smb_keys *k, uint16_t dialect,
    uint16_t signing_alg, const uint8_t *msg, size_t len, bool from_server,
    bool is_cancel) PX_MUSTCHECK;

#define PX_TRANSFORM_HDR_LEN 52
#define PX_TRANSFORM_MAX_MSG 0x00FFFFFFu  /* an NBSS frame holds no more */

/*
 * Encrypt msg[0..len) into out[0..52 + len): TRANSFORM_HEADER (MS-SMB2
 * 2.2.41) with ProtocolId 0xFD 'SMB', the 16-byte tag as Signature, the 16
 * nonce bytes as given (the cipher uses the first 11 for CCM, 12 for GCM;
 * the rest must be zero per the spec and is authenticated either way),
 * OriginalMessageSize = len, Flags = 1, SessionId; AAD = header bytes
 * 20..51.  dir picks the key (PX_S2C for what smbaccel sends the client,
 * PX_C2S for what it sends the server).  cipher must equal k->cipher.
 * out + 52 may equal msg (in place); otherwise they must not overlap.
 */
int px_smb2_encrypt(const struct px_smb_keys *k, uint16_t cipher,
    enum px_key_dir dir, uint64_t session_id, const uint8_t nonce[16],
    const uint8_t *msg, size_t len, uint8_t *out) PX_MUSTCHECK;
/*
 * Check and decrypt a TRANSFORM message in[0..len) into out (len - 52
 * bytes; out may equal in + 52).  Refuses a wrong ProtocolId, Flags != 1,
 * OriginalMessageSize != len - 52 and an empty payload before writing
 * anything, and a bad tag after, wiping out.  The caller checks SessionId
 * (px_get_u64(in + 44)).
 */
int px_smb2_decrypt(const struct px_smb_keys *k, uint16_t cipher,
    enum px_key_dir dir, const uint8_t *in, size_t len, uint8_t *out,
    size_t *outlen) PX_MUSTCHECK;

/*
 * The same four operations with a context kept across messages: one
 * OpenSSL context per key (the signing key; each cipher key for each of
 * encrypting and decrypting), set up on first use and reset per message,
 * instead of one set up and torn down per message as above.  x holds no
 * key of its own: each call names the keys, and a slot whose key or
 * algorithm differs from the one it was set up with is set up again, so a
 * session whose keys are re-derived may keep its context.  A failed
 * operation drops the slot it used.  x NULL behaves as the calls above.
 * One context per session (it is not safe to share between threads).
 */
struct px_smb_ctx;
struct px_smb_ctx *px_smb_ctx_new(void);      /* NULL when out of memory */
void px_smb_ctx_free(struct px_smb_ctx *x);   /* wipes it; NULL ok */
int px_smb2_sign_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t dialect, uint16_t signing_alg, uint8_t *msg, size_t len,
    bool from_server, bool is_cancel) PX_MUSTCHECK;
int px_smb2_verify_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t dialect, uint16_t signing_alg, const uint8_t *msg, size_t len,
    bool from_server, bool is_cancel) PX_MUSTCHECK;
int px_smb2_encrypt_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t cipher, enum px_key_dir dir, uint64_t session_id,
    const uint8_t nonce[16], const uint8_t *msg, size_t len, uint8_t *out)
    PX_MUSTCHECK;
int px_smb2_decrypt_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t cipher, enum px_key_dir dir, const uint8_t *in, size_t len,
    uint8_t *out, size_t *outlen) PX_MUSTCHECK;

/*
 * AES-GCM only (-1 for CCM, whose tag covers the plaintext), and only with
 * a context (x not NULL):
 *
 * px_smb2_open_head_ctx authenticates the TRANSFORM message in[0..len)
 * whole, as px_smb2_decrypt_ctx does, but decrypts only its first head
 * bytes into out: the tag is GHASH over the ciphertext, so the rest need
 * not go through the cipher.  out has room for len - 52 bytes; beyond
 * head it holds no plaintext (at most a last partial block's is written).
 * *outlen = len - 52.  A bad tag wipes out[0..head) and returns -1.
 *
 * px_smb2_peek_ctx decrypts the first head bytes into out WITHOUT
 * authenticating anything: for choosing how to open the message, never
 * for acting on it.
 */
int px_smb2_open_head_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t cipher, enum px_key_dir dir, const uint8_t *in, size_t len,
    size_t head, uint8_t *out, size_t *outlen) PX_MUSTCHECK;
int px_smb2_peek_ctx(struct px_smb_ctx *x, const struct px_smb_keys *k,
    uint16_t cipher, enum px_key_dir dir, const uint8_t *in, size_t len,
    uint8_t *out, size_t head) PX_MUSTCHECK;

/*
 * Nonces for the messages smbaccel encrypts itself.  Use one generator per
 * (session, direction) key, shared by every connection bound to that
 * session.  See smbcrypto.c for why these do not collide with the nonces
 * of the client and the server under the same key (never, against a
 * counter-based peer; with a stated bound against a random one).
 */
struct px_nonce_gen {
	uint16_t cipher;
	uint64_t next;        /* low 63 bits of the next nonce's first 8 bytes */
	uint64_t left;        /* nonces left before the generator refuses */
	uint8_t salt[4];      /* bytes 8..10 (CCM) or 8..11 (GCM) */
};
int px_nonce_gen_init(struct px_nonce_gen *g, uint16_t cipher) PX_MUSTCHECK;
/* Next nonce (16 bytes, unused tail zero); -1 when exhausted (2^62). */
int px_nonce_next(struct px_nonce_gen *g, uint8_t nonce[16]) PX_MUSTCHECK;

/* ---- Kerberos: AP-REQ / AP-REP from a keytab (RFC 4120, RFC 4121) -------- */

/*
 * smbaccel holds the server's long-term keys (a keytab) and follows the
 * relayed exchange the way the server's acceptor does, without being one:
 * it decrypts the ticket (key usage 2) with the service key, then the
 * authenticator (usage 11) and the AP-REP enc-part (usage 12) with the
 * ticket's session key.  The SMB session key is the AP-REP subkey, else
 * the authenticator subkey, else the ticket session key (MS-SMB2
 * 3.3.5.5.3; MIT gss_krb5int_inq_session_key).  It checks no ticket time,
 * replay cache, checksum or PAC: the server does, and answers with an
 * error the client sees.  The ASN.1 is parsed here with the DER reader of
 * der.c; the cryptography is MIT krb5's (krb5_c_decrypt), in keytab.c.
 */
#define PX_KRB_KEY_MAX      32        /* aes256 */
#define PX_KRB_NAME_MAX     256       /* a principal as text, with NUL */
#define PX_KRB_CIPHER_MAX   (64u << 10)   /* one EncryptedData's cipher */

#define PX_ENCTYPE_AES128_SHA1  17    /* aes128-cts-hmac-sha1-96 */
#define PX_ENCTYPE_AES256_SHA1  18    /* aes256-cts-hmac-sha1-96 */
#define PX_ENCTYPE_RC4_HMAC     23    /* rc4-hmac (RFC 4757) */

#define PX_KRB_USAGE_TICKET        2   /* RFC 4120 7.5.1 */
#define PX_KRB_USAGE_AUTHENTICATOR 11
#define PX_KRB_USAGE_AP_REP        12

#define PX_KRB_AP_USE_SESSION_KEY  0x40000000u   /* APOptions bit 1 */
#define PX_KRB_AP_MUTUAL_REQUIRED  0x20000000u   /* APOptions bit 2 */

/* A key: enctype and bytes (Kerberos EncryptionKey). */
struct px_krb_key {
	int32_t enctype;
	size_t len;                   /* 0 < len <= PX_KRB_KEY_MAX */
	uint8_t bytes[PX_KRB_KEY_MAX];
};

/* EncryptedData; cipher points into the buffer that was parsed. */
struct px_krb_enc_data {
	int32_t etype;
	bool has_kvno;
	uint32_t kvno;
	const uint8_t *cipher;
	size_t len;                   /* 0 < len <= PX_KRB_CIPHER_MAX */
};

enum px_krb_msg_type {
	PX_KRB_MSG_NONE = 0,
	PX_KRB_MSG_AP_REQ,            /* TOK_ID 01 00, [APPLICATION 14] */
	PX_KRB_MSG_AP_REP,            /* 02 00, [APPLICATION 15] */
	PX_KRB_MSG_ERROR,             /* 03 00, [APPLICATION 30] */
	PX_KRB_MSG_TGT_REQ,           /* 04 00: user-to-user (RFC 4121 4.1
	                               * and draft-ietf-cat-user2user) */
};

/* One Kerberos token of a SESSION_SETUP security buffer, parsed. */
struct px_krb_msg {
	enum px_gss_mech mech;        /* what SPNEGO/GSS said it is */
	bool negoex;                  /* a NEGOEX message (MS-NEGOEX) */
	bool unsupported;             /* Kerberos (mech), but in a form not
	                               * followed: IAKERB (OID 1.3.6.1.5.2.5,
	                               * its own framing), or GSS framing with
	                               * another mechanism's OID under a
	                               * Kerberos label */
	enum px_krb_msg_type type;
	bool user_to_user;            /* U2U OID, TGT-REQ, or use-session-key */
	/* AP-REQ */
	uint32_t ap_options;          /* APOptions, bit 0 as the MSB */
	char realm[PX_KRB_NAME_MAX];  /* the ticket's realm */
	char sname[PX_KRB_NAME_MAX];  /* "cifs/host.example" */
	char sname_host[PX_KRB_NAME_MAX];  /* second component, "" if none */
	struct px_krb_enc_data ticket;
	struct px_krb_enc_data authenticator;
	/* AP-REP */
	struct px_krb_enc_data enc_part;
	/* KRB-ERROR */
	int32_t error_code;
};

/*
 * Find and parse the Kerberos token of a security buffer: SPNEGO
 * NegTokenInit/NegTokenResp or a bare GSS token, then RFC 4121's framing
 * (0x60, krb5 OID 1.2.840.113554.1.2.2 or MS 1.2.840.48018.1.2.2, TOK_ID)
 * or a bare message, then the message.  Every length is checked against
 * its enclosing element; the EncryptedData windows point into buf.
 * Returns PX_NTLM_OK with m->type set, PX_NTLM_OTHER when the buffer is
 * well formed but carries no Kerberos message (m->mech, m->negoex say
 * what), or PX_NTLM_BAD.  PX_NTLM_OTHER with m->mech PX_MECH_KERBEROS
 * always has m->unsupported set: a Kerberos exchange smbaccel cannot key
 * (the session's reason is px_krb_accept_req's PX_KRB_R_UNSUPPORTED).
 */
int px_krb_parse(const uint8_t *buf, size_t len, struct px_krb_msg *m)
    PX_MUSTCHECK;

/*
 * The decrypted parts.  Each returns 0 or -1 (malformed); bytes after the
 * outer element are ignored.  EncTicketPart gives the ticket session key,
 * the client name ("user@REALM") and, endtime not NULL, when the ticket
 * ends (Unix time); Authenticator and EncAPRepPart their optional subkey
 * (*has_subkey false when absent).
 */
int px_krb_parse_enc_ticket(const uint8_t *p, size_t n, struct px_krb_key *key,
    char *cname, size_t cnamelen, int64_t *endtime) PX_MUSTCHECK;
int px_krb_parse_authenticator(const uint8_t *p, size_t n, bool *has_subkey,
    struct px_krb_key *subkey) PX_MUSTCHECK;
int px_krb_parse_enc_ap_rep(const uint8_t *p, size_t n, bool *has_subkey,
    struct px_krb_key *subkey) PX_MUSTCHECK;

/* ---- who a session is (ntlm.c) ------------------------------------------ */

/*
 * A stable 128-bit name of a session's user, for the lease keys smbaccel
 * asks on a client's behalf (lease.c): px_digest16 over the domain and the
 * user name, each upper-cased as NTOWFv2 upper-cases a user name (ASCII,
 * Latin-1, Latin Extended-A, Greek, Cyrillic), so that SMBACCEL\Bob and
 * smbaccel\bob are one user.  px_user_id_principal splits a Kerberos
 * client principal "name@REALM" at its last '@' and names (REALM, name).
 * An empty user, invalid UTF-8, a principal without both parts or a name
 * too long: -1 (the user is unknown).
 */
int px_user_id(const char *domain, const char *user, uint8_t id[16])
    PX_MUSTCHECK;
int px_user_id_principal(const char *principal, uint8_t id[16]) PX_MUSTCHECK;

/* ---- keytab and Kerberos cryptography (keytab.c, MIT krb5) ---------------- */

#define PX_KEYTAB_MAX_SIZE    (4u << 20)   /* bytes */
#define PX_KEYTAB_MAX_ENTRIES 10000

/*
 * A keytab (MIT format: https://web.mit.edu/kerberos/krb5-latest/doc/
 * formats/keytab_file_format.html), read with MIT krb5's keytab API.  The
 * same rules as the secrets file: a regular file, not a symbolic link,
 * owned by root with no group or other permission bits (checked on the
 * opened descriptor, which is also what krb5 reads, through /proc/self/fd),
 * bounded in size; a file
 * that does not walk cleanly to its end (truncated, a record running past
 * the end), that krb5 cannot read whole, or that holds no key smbaccel can
 * use is refused with a sentence in err.  Keys are wiped when freed.
 */
struct px_keytab;
struct px_keytab *px_keytab_load(const char *path, char *err, size_t errlen);
/* A keytab built from keys (tests, fuzzing); names may be NULL. */
struct px_keytab *px_keytab_from_keys(const struct px_krb_key *keys,
    const uint32_t *kvnos, const char *const *names, size_t n);
size_t px_keytab_count(const struct px_keytab *kt);
/* Entry i (< px_keytab_count) without its key: principal, kvno, enctype. */
void px_keytab_entry(const struct px_keytab *kt, size_t i,
    const char **principal, uint32_t *kvno, int32_t *enctype);
/* "3 keys: DC1$@REALM kvno 1 aes256-cts-hmac-sha1-96, ..." (truncated) */
void px_keytab_describe(const struct px_keytab *kt, char *buf, size_t len);
void px_keytab_free(struct px_keytab *kt);    /* NULL ok */

/* "aes256-cts-hmac-sha1-96", ... or "enctype-N". */
const char *px_krb_enctype_name(int32_t enctype);

/*
 * Set up the krb5 library context (no configuration file is read: the
 * crypto needs none).  Idempotent; every function below calls it.  0 or
 * -1 with a sentence in err.  Not thread-safe (one worker thread).
 */
int px_krb_init(char *err, size_t errlen) PX_MUSTCHECK;

/*
 * krb5_c_decrypt / krb5_c_encrypt with key and usage.  decrypt: out has
 * room for inlen bytes; *outlen gets the plaintext length; 0, or -1 when
 * the integrity check fails or the enctype is unknown.  encrypt: *outlen
 * holds out's size on entry.
 */
int px_krb_decrypt(const struct px_krb_key *key, int32_t usage,
    const uint8_t *in, size_t inlen, uint8_t *out, size_t *outlen)
    PX_MUSTCHECK;
int px_krb_encrypt(const struct px_krb_key *key, int32_t usage,
    const uint8_t *in, size_t inlen, uint8_t *out, size_t *outlen)
    PX_MUSTCHECK;
/* RFC 3961 string-to-key; iterations 0: the enctype's default. */
int px_krb_string_to_key(int32_t enctype, const char *password,
    const char *salt, uint32_t iterations, struct px_krb_key *out)
    PX_MUSTCHECK;

/* ---- the acceptor's view of one exchange (krb5.c) --------------------------- */

enum px_krb_result {
	PX_KRB_R_OK = 0,
	PX_KRB_R_NO_KEYTAB,        /* "no-keytab" */
	PX_KRB_R_NO_MATCHING_KEY,  /* "no-matching-key": no key of the
	                            * ticket's enctype, or none of its kvno */
	PX_KRB_R_DECRYPT_FAILED,   /* "decrypt-failed" */
	PX_KRB_R_USER_TO_USER,     /* "user-to-user" */
	PX_KRB_R_MALFORMED,        /* "kerberos-malformed" */
	PX_KRB_R_UNSUPPORTED,      /* "kerberos-unsupported": a Kerberos token
	                            * in a form not followed (IAKERB; see
	                            * px_krb_msg.unsupported), or, from
	                            * px_krb_session_key, a px_krb_accept
	                            * holding no key */
	PX_KRB_R_ERROR,            /* "kerberos-error": out of memory, krb5 */
};
const char *px_krb_result_name(enum px_krb_result r);

/*
 * What the AP-REQ yielded, kept until the server's answer.  Flat (no
 * pointers), so it can be freed with free(); wipe it with
 * px_krb_accept_wipe() first, on every path that frees it (a request
 * whose answer never comes too).
 */
struct px_krb_accept {
	enum px_krb_result result;
	int32_t ticket_etype;
	bool ticket_has_kvno;
	uint32_t ticket_kvno;
	bool mutual;                       /* mutual-required: an AP-REP comes */
	char client[PX_KRB_NAME_MAX];      /* cname@crealm */
	char service[PX_KRB_NAME_MAX];     /* sname@realm */
	int64_t ticket_end;                /* the ticket's endtime (Unix time) */
	struct px_krb_key ticket_key;      /* the ticket session key */
	int32_t session_etype;             /* its enctype (kept after a wipe) */
	bool has_auth_subkey;
	struct px_krb_key auth_subkey;
};

/*
 * Decrypt the AP-REQ's ticket with every key of kt of the ticket's enctype,
 * whatever its principal or kvno (one machine key serves cifs/, host/ and
 * the account name), then its authenticator.  kt NULL: no keytab.  The
 * result is also left in a->result.  req may be any parsed token: one
 * that is not an AP-REQ gives PX_KRB_R_USER_TO_USER (TGT-REQ),
 * PX_KRB_R_UNSUPPORTED (req->unsupported: IAKERB) or PX_KRB_R_MALFORMED.
 *
 * A px_krb_accept that this function never filled is all zero, and its
 * result, 0, reads as PX_KRB_R_OK: a caller that keeps one for a token it
 * did not pass here (px_krb_parse's PX_NTLM_OTHER) sets result itself
 * (PX_KRB_R_UNSUPPORTED when m->unsupported).
 */
enum px_krb_result px_krb_accept_req(const struct px_krb_msg *req,
    const struct px_keytab *kt, struct px_krb_accept *a);
/*
 * The SMB session key once the server has answered: rep is the AP-REP of
 * the final response, or NULL when it carried none.  key gets the whole
 * key (*keylen bytes: 16 for aes128 and rc4, 32 for aes256).  PX_KRB_R_OK
 * only with a key (*keylen > 0): a that holds none (never filled by
 * px_krb_accept_req, or wiped) gives PX_KRB_R_UNSUPPORTED, else
 * a->result when that is not PX_KRB_R_OK.
 */
enum px_krb_result px_krb_session_key(const struct px_krb_accept *a,
    const struct px_krb_msg *rep, uint8_t key[PX_KRB_KEY_MAX],
    size_t *keylen);
/*
 * Wipe the keys of a (ticket key, authenticator subkey; has_auth_subkey
 * cleared).  result, the names, the enctypes, kvno and ticket_end stay
 * for the log; px_krb_session_key gives no key from a wiped a.  NULL ok;
 * idempotent.  Every struct of this module that holds key material has
 * its wipe: px_ntlm_auth_wipe, px_smb_keys_wipe, px_krb_accept_wipe, and
 * the frees of px_secrets, px_keytab and px_smb_ctx; a px_krb_key alone
 * is wiped with OPENSSL_cleanse().
 */
void px_krb_accept_wipe(struct px_krb_accept *a);

#endif
