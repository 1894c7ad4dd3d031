/*
 * cryptofloor.c - the cryptography a keyed smbaccel cannot avoid, timed on
 * this machine with plain OpenSSL (no smbaccel code), for tests/bench/crypto.
 *
 *   cryptofloor ALG BLOCK [COALESCE] [--mib N] [--reps R]
 *
 *   ALG       hmac-sha256 | aes-cmac | aes-gmac (signing), aes128-ccm |
 *             aes128-gcm | aes256-ccm | aes256-gcm (sealing), or relay |
 *             relay-splice | relay-tee (no crypto: see below)
 *   BLOCK     the client's write size (bytes, K/M suffixes)
 *   COALESCE  the size of smbaccel's upstream WRITEs (default 1M)
 *
 * For every GiB of payload written in BLOCK-byte WRITEs, smbaccel must at
 * least (MS-SMB2 3.1.4.1, 3.1.4.3):
 *   signing:  verify each client WRITE (64 + 48 + BLOCK bytes), sign the
 *             answer it synthesizes (a WRITE response, 64 + 17 bytes), and
 *             sign each upstream WRITE (64 + 48 + COALESCE bytes);
 *   sealing:  decrypt each client WRITE, encrypt its answer, encrypt each
 *             upstream WRITE and decrypt the server's answer to it.
 * That work is done here with the cheapest OpenSSL use there is (one
 * context per key, reset per message; AES-CMAC as the one AES-128-CBC
 * pass it consists of, never reset; AES-GMAC through OpenSSL's GCM mode
 * interface, openssl/modes.h, without EVP's per-message parameter
 * layer), for --mib MiB of payload (default 256), --reps times (default
 * 3); the smallest CPU time (the least disturbed by other work on the
 * machine) is printed, scaled to one GiB:
 *
 *   alg=aes-cmac block=1024 coalesce=1048576 floor_s_per_gib=1.234
 *   mac_bytes_per_gib=...  (bytes through the MAC or cipher per GiB)
 *
 * ALG relay times what any relaying proxy pays before any crypto: moving
 * the bytes.  A source process writes --mib MiB in BLOCK-byte write()s
 * over loopback TCP to this process, which reads them into one 1 MiB
 * buffer and writes each read out whole over loopback TCP to a sink
 * process (the plainest read/write relay, as smbaccel must do to see the
 * bytes it verifies or decrypts; splice() would spare a copy only where
 * nothing looks at the data).  Only this process's CPU counts, including
 * the kernel's loopback delivery done on its behalf, as it is for
 * smbaccel:
 *
 *   alg=relay block=1048576 relay_s_per_gib=0.345
 *
 * relay-splice moves the bytes with splice(2) through a pipe instead (no
 * copy through user memory: possible only where nothing looks at them);
 * relay-tee does that and also tee(2)s each piece into a second pipe and
 * read(2)s it into the buffer, which is what a zero-copy relay would pay
 * to see the bytes it must verify or decrypt.
 *
 * CPU time is CLOCK_PROCESS_CPUTIME_ID: what this process used, not wall
 * time.  Not a test: it asserts nothing about the result.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/modes.h>
#include <openssl/params.h>

#define HDR 64
#define WRITE_REQ (HDR + 48)
#define WRITE_RSP (HDR + 17)
#define TF 52

enum kind { K_HMAC, K_CMAC, K_GMAC, K_AEAD };

static enum kind kind;
static EVP_MAC_CTX *mac;
static EVP_CIPHER_CTX *cbc;      /* AES-CMAC: its AES-128-CBC pass */
static EVP_CIPHER_CTX *ecb;      /* AES-GMAC: its AES blocks */
static GCM128_CONTEXT *gcm;      /* AES-GMAC: GHASH */
static EVP_CIPHER_CTX *enc, *dec;
static bool ccm;
static uint8_t key[32];
static uint64_t counter;

static void
die(const char *what)
{
	fprintf(stderr, "cryptofloor: %s failed\n", what);
	exit(1);
}

static size_t
parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end != '\0' || v == 0 || v > (16u << 20)) {
		fprintf(stderr, "cryptofloor: bad size %s\n", s);
		exit(2);
	}
	return (size_t)v;
}

/* AES-GMAC's block cipher, for CRYPTO_gcm128 */
static void
aes_block(const unsigned char in[16], unsigned char out[16], const void *c)
{
	int n;

	if (EVP_EncryptUpdate((EVP_CIPHER_CTX *)(uintptr_t)c, out, &n, in,
	    16) != 1)
		die("AES block");
}

static void
setup(const char *alg)
{
	OSSL_PARAM p[2];
	EVP_MAC *m = NULL;
	EVP_CIPHER *c = NULL;
	const char *cname = NULL;

	memset(key, 0x5a, sizeof(key));
	if (strcmp(alg, "hmac-sha256") == 0) {
		kind = K_HMAC;
		m = EVP_MAC_fetch(NULL, "HMAC", NULL);
		p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
		    (char *)(uintptr_t)"SHA256", 0);
	} else if (strcmp(alg, "aes-cmac") == 0) {
		/* CMAC is one AES-128-CBC pass (RFC 4493); OpenSSL 3.0's CMAC
		 * is slower than that (a cipher call per block), so the floor
		 * is the CBC pass itself */
		static const uint8_t zero[16];

		kind = K_CMAC;
		if ((c = EVP_CIPHER_fetch(NULL, "AES-128-CBC", NULL)) == NULL ||
		    (cbc = EVP_CIPHER_CTX_new()) == NULL ||
		    EVP_EncryptInit_ex2(cbc, c, key, zero, NULL) != 1 ||
		    EVP_CIPHER_CTX_set_padding(cbc, 0) != 1)
			die("AES-128-CBC");
		EVP_CIPHER_free(c);
		return;
	} else if (strcmp(alg, "aes-gmac") == 0) {
		kind = K_GMAC;
		if ((c = EVP_CIPHER_fetch(NULL, "AES-128-ECB", NULL)) == NULL ||
		    (ecb = EVP_CIPHER_CTX_new()) == NULL ||
		    EVP_EncryptInit_ex2(ecb, c, key, NULL, NULL) != 1 ||
		    EVP_CIPHER_CTX_set_padding(ecb, 0) != 1 ||
		    (gcm = CRYPTO_gcm128_new(ecb, aes_block)) == NULL)
			die("AES-GMAC");
		EVP_CIPHER_free(c);
		return;
	} else {
		kind = K_AEAD;
		if (strcmp(alg, "aes128-ccm") == 0)
			cname = "AES-128-CCM";
		else if (strcmp(alg, "aes128-gcm") == 0)
			cname = "AES-128-GCM";
		else if (strcmp(alg, "aes256-ccm") == 0)
			cname = "AES-256-CCM";
		else if (strcmp(alg, "aes256-gcm") == 0)
			cname = "AES-256-GCM";
		else {
			fprintf(stderr, "cryptofloor: unknown algorithm %s\n", alg);
			exit(2);
		}
		ccm = strstr(cname, "CCM") != NULL;
	}
	if (kind != K_AEAD) {
		p[1] = OSSL_PARAM_construct_end();
		if (m == NULL || (mac = EVP_MAC_CTX_new(m)) == NULL)
			die("EVP_MAC_CTX_new");
		if (EVP_MAC_init(mac, key, 16, p) != 1)
			die("EVP_MAC_init");
		EVP_MAC_free(m);
		return;
	}
	if ((c = EVP_CIPHER_fetch(NULL, cname, NULL)) == NULL ||
	    (enc = EVP_CIPHER_CTX_new()) == NULL ||
	    (dec = EVP_CIPHER_CTX_new()) == NULL)
		die("EVP_CIPHER_CTX_new");
	if (EVP_CipherInit_ex2(enc, c, NULL, NULL, 1, NULL) != 1 ||
	    EVP_CipherInit_ex2(dec, c, NULL, NULL, 0, NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(enc, EVP_CTRL_AEAD_SET_IVLEN, ccm ? 11 : 12,
	    NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(dec, EVP_CTRL_AEAD_SET_IVLEN, ccm ? 11 : 12,
	    NULL) != 1)
		die("cipher set-up");
	/* CCM fixes the tag length with the key */
	if (ccm && (EVP_CIPHER_CTX_ctrl(enc, EVP_CTRL_AEAD_SET_TAG, 16,
	    NULL) != 1 || EVP_CIPHER_CTX_ctrl(dec, EVP_CTRL_AEAD_SET_TAG, 16,
	    NULL) != 1))
		die("CCM tag length");
	if (EVP_CipherInit_ex2(enc, NULL, key, NULL, -1, NULL) != 1 ||
	    EVP_CipherInit_ex2(dec, NULL, key, NULL, -1, NULL) != 1)
		die("cipher key");
	EVP_CIPHER_free(c);
}

/* One MAC over msg[0..len): the work of signing or verifying it. */
static void
do_mac(const uint8_t *msg, size_t len, uint8_t tag[16])
{
	static uint8_t scratch[16384 + 16];
	uint8_t out[EVP_MAX_MD_SIZE];
	size_t n = 0;
	int outl;

	if (kind == K_CMAC) {
		/* every whole block through the cipher, the last one too; the
		 * context is not reset: the state the last message left (its
		 * last block out) is XORed into this one's first block, as
		 * smbaccel does */
		static uint8_t chain[16];
		uint8_t first[16];
		int i;

		memcpy(first, msg, 16);
		for (i = 0; i < 16; i++)
			first[i] ^= chain[i];
		if (EVP_EncryptUpdate(cbc, scratch, &outl, first, 16) != 1)
			die("CBC");
		msg += 16;
		len -= 16;
		while (len > 0) {
			size_t k = len < 16384 ? (len + 15) / 16 * 16 : 16384;

			if (EVP_EncryptUpdate(cbc, scratch, &outl, msg, (int)k) != 1)
				die("CBC");
			msg += k < len ? k : len;
			len -= k < len ? k : len;
		}
		memcpy(tag, scratch + (outl - 16), 16);
		memcpy(chain, tag, 16);
		return;
	}
	if (kind == K_GMAC) {
		uint8_t iv[12];

		memcpy(iv, &counter, 8);
		memset(iv + 8, 0, 4);
		counter++;
		CRYPTO_gcm128_setiv(gcm, iv, sizeof(iv));
		if (CRYPTO_gcm128_aad(gcm, msg, len) != 0)
			die("GMAC");
		CRYPTO_gcm128_tag(gcm, tag, 16);
		return;
	}
	if (EVP_MAC_init(mac, NULL, 0, NULL) != 1)
		die("MAC init");
	if (EVP_MAC_update(mac, msg, len) != 1 ||
	    EVP_MAC_final(mac, out, &n, sizeof(out)) != 1 || n < 16)
		die("MAC");
	memcpy(tag, out, 16);
}

/*
 * One AEAD pass over a TRANSFORM message: t = its 52-byte header (nonce
 * and AAD from byte 20, tag at 4), in[0..len) into out.  Encryption takes
 * the next nonce; decryption checks the tag the matching encryption made.
 */
static void
do_aead(bool encrypt, uint8_t *t, const uint8_t *in, uint8_t *out, size_t len)
{
	EVP_CIPHER_CTX *c = encrypt ? enc : dec;
	int n;

	if (encrypt) {
		counter++;
		memcpy(t + 20, &counter, 8);
	}
	if (ccm && !encrypt &&
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, 16, t + 4) != 1)
		die("CCM tag");
	if (EVP_CipherInit_ex2(c, NULL, NULL, t + 20, -1, NULL) != 1)
		die("AEAD nonce");
	if (ccm && EVP_CipherUpdate(c, NULL, &n, NULL, (int)len) != 1)
		die("CCM length");
	if (EVP_CipherUpdate(c, NULL, &n, t + 20, 32) != 1 ||
	    EVP_CipherUpdate(c, out, &n, in, (int)len) != 1)
		die(encrypt ? "encrypt" : "decrypt");
	if (!ccm) {
		if (!encrypt &&
		    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, 16, t + 4) != 1)
			die("GCM tag");
		if (EVP_CipherFinal_ex(c, out + len, &n) != 1)
			die(encrypt ? "GCM final" : "GCM tag check");
	}
	if (encrypt &&
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, t + 4) != 1)
		die("get tag");
}

static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- relay: moving the bytes ------------------------------------------------- */

#define RELAY_BUF (1u << 20)

/* a listening socket on 127.0.0.1, on a port the kernel picks */
static int
listen_lo(struct sockaddr_in *sa)
{
	socklen_t sl = sizeof(*sa);
	int fd;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)sa, sizeof(*sa)) == -1 ||
	    listen(fd, 1) == -1 ||
	    getsockname(fd, (struct sockaddr *)sa, &sl) == -1)
		die("loopback listen");
	return fd;
}

static int
connect_lo(const struct sockaddr_in *sa)
{
	int fd;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == -1)
		die("loopback connect");
	return fd;
}

/* write all of buf, or exit */
static void
put_all(int fd, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write");
		buf += n;
		len -= (size_t)n;
	}
}

enum relay_mode { RELAY_RW, RELAY_SPLICE, RELAY_TEE };

/* splice what is in pipe p (n bytes) to fd, or exit */
static void
splice_out(int p, int fd, size_t n)
{
	while (n > 0) {
		ssize_t k = splice(p, NULL, fd, NULL, n, SPLICE_F_MOVE);

		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0)
			die("splice out");
		n -= (size_t)k;
	}
}

/* relay cin to cout with splice (and, RELAY_TEE, a copy read out through
 * a second pipe) until EOF */
static void
relay_splice(int cin, int cout, uint8_t *buf, bool look)
{
	int p[2], q[2];
	ssize_t n;

	if (pipe(p) == -1 || pipe(q) == -1 ||
	    fcntl(p[1], F_SETPIPE_SZ, RELAY_BUF) == -1 ||
	    fcntl(q[1], F_SETPIPE_SZ, RELAY_BUF) == -1)
		die("pipe");
	while ((n = splice(cin, NULL, p[1], NULL, RELAY_BUF,
	    SPLICE_F_MOVE)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			die("splice in");
		if (look) {
			ssize_t t = tee(p[0], q[1], (size_t)n, 0), got = 0, k;

			if (t != n)
				die("tee");
			while (got < t) {
				if ((k = read(q[0], buf, (size_t)(t - got))) <= 0)
					die("read of the tee");
				got += k;
			}
		}
		splice_out(p[0], cout, (size_t)n);
	}
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

/* One relay of `total` bytes sent in `block`-byte writes: this process's
 * CPU seconds.  Exits if the sink did not get every byte. */
static double
relay_once(enum relay_mode mode, size_t block, size_t total, uint8_t *buf)
{
	struct sockaddr_in in_sa, out_sa;
	int lin = listen_lo(&in_sa), lout = listen_lo(&out_sa), cin, cout;
	int st_src, st_sink;
	pid_t src, sink;
	double t0, dt;
	ssize_t n;

	if ((sink = fork()) == -1)
		die("fork");
	if (sink == 0) {
		size_t got = 0;
		int fd = accept(lout, NULL, NULL);

		while (fd != -1 && (n = read(fd, buf, RELAY_BUF)) != 0) {
			if (n == -1 && errno == EINTR)
				continue;
			if (n == -1)
				_exit(1);
			got += (size_t)n;
		}
		_exit(fd != -1 && got == total ? 0 : 1);
	}
	if ((src = fork()) == -1)
		die("fork");
	if (src == 0) {
		size_t sent;
		int fd = connect_lo(&in_sa);

		memset(buf, 0xa5, block);
		for (sent = 0; sent < total; sent += block)
			put_all(fd, buf, total - sent < block ? total - sent :
			    block);
		_exit(close(fd) == 0 ? 0 : 1);
	}
	if ((cin = accept(lin, NULL, NULL)) == -1)
		die("accept");
	cout = connect_lo(&out_sa);
	t0 = cpu_now();
	if (mode != RELAY_RW)
		relay_splice(cin, cout, buf, mode == RELAY_TEE);
	else while ((n = read(cin, buf, RELAY_BUF)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			die("read");
		put_all(cout, buf, (size_t)n);
	}
	dt = cpu_now() - t0;
	close(cout);
	close(cin);
	close(lin);
	close(lout);
	if (waitpid(src, &st_src, 0) == -1 || waitpid(sink, &st_sink, 0) == -1 ||
	    !WIFEXITED(st_src) || WEXITSTATUS(st_src) != 0 ||
	    !WIFEXITED(st_sink) || WEXITSTATUS(st_sink) != 0)
		die("relay (source or sink)");
	return dt;
}

static int
relay_main(const char *alg, size_t block, size_t total, int reps)
{
	enum relay_mode mode = strcmp(alg, "relay-splice") == 0 ? RELAY_SPLICE :
	    strcmp(alg, "relay-tee") == 0 ? RELAY_TEE : RELAY_RW;
	uint8_t *buf = malloc(RELAY_BUF > block ? RELAY_BUF : block);
	double best = 0, dt;
	int r;

	if (buf == NULL)
		die("malloc");
	for (r = 0; r < reps; r++) {
		dt = relay_once(mode, block, total, buf);
		if (r == 0 || dt < best)
			best = dt;
	}
	printf("alg=%s block=%zu relay_s_per_gib=%.3f\n", alg, block,
	    best * (double)(1u << 30) / (double)total);
	free(buf);
	return 0;
}

int
main(int argc, char **argv)
{
	size_t block, coalesce = 1 << 20, total = 256u << 20, done, since;
	size_t cbytes = 0;
	int reps = 3, r, i, pos = 0;
	const char *a[3] = { NULL, NULL, NULL };
	uint8_t *req, *up, *sealed_req = NULL, rsp[WRITE_RSP + 16];
	uint8_t sealed_rsp[WRITE_RSP + 16], t_req[TF], t_rsp[TF], t[TF];
	uint8_t tag[16];
	double best = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
			total = (size_t)atoi(argv[++i]) << 20;
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (pos < 3)
			a[pos++] = argv[i];
	}
	if (a[0] == NULL || a[1] == NULL || total == 0 || reps < 1) {
		fprintf(stderr, "usage: cryptofloor ALG BLOCK [COALESCE] "
		    "[--mib N] [--reps R]\n");
		return 2;
	}
	block = parse_size(a[1]);
	if (strcmp(a[0], "relay") == 0 || strcmp(a[0], "relay-splice") == 0 ||
	    strcmp(a[0], "relay-tee") == 0)
		return relay_main(a[0], block, total, reps);
	if (a[2] != NULL)
		coalesce = parse_size(a[2]);
	if (coalesce < block)
		coalesce = block;
	setup(a[0]);
	if ((req = calloc(1, WRITE_REQ + block + 16)) == NULL ||
	    (up = calloc(1, WRITE_REQ + coalesce + 16)) == NULL ||
	    (sealed_req = calloc(1, WRITE_REQ + block + 16)) == NULL)
		die("malloc");
	memset(rsp, 0, sizeof(rsp));
	if (kind == K_AEAD) {
		/* what the peers send, sealed once here (untimed) so that the
		 * timed decryptions check real tags */
		memset(t_req, 0, TF);
		memset(t_rsp, 0, TF);
		do_aead(true, t_req, req, sealed_req, WRITE_REQ + block);
		do_aead(true, t_rsp, rsp, sealed_rsp, WRITE_RSP);
	}
	for (r = 0; r < reps; r++) {
		double t0 = cpu_now(), dt;

		cbytes = 0;
		for (done = 0, since = 0; done < total; done += block) {
			/* the client's WRITE in, its answer out */
			if (kind != K_AEAD) {
				do_mac(req, WRITE_REQ + block, tag);
				do_mac(rsp, WRITE_RSP, tag);
			} else {
				memcpy(t, t_req, TF);
				do_aead(false, t, sealed_req, req,
				    WRITE_REQ + block);
				do_aead(true, t, rsp, rsp, WRITE_RSP);
			}
			cbytes += WRITE_REQ + block + WRITE_RSP;
			since += block;
			if (since < coalesce && done + block < total)
				continue;
			/* an upstream WRITE (and, sealed, its answer) */
			if (kind != K_AEAD) {
				do_mac(up, WRITE_REQ + since, tag);
				cbytes += WRITE_REQ + since;
			} else {
				do_aead(true, t, up, up, WRITE_REQ + since);
				memcpy(t, t_rsp, TF);
				do_aead(false, t, sealed_rsp, rsp, WRITE_RSP);
				cbytes += WRITE_REQ + since + WRITE_RSP;
			}
			since = 0;
		}
		dt = cpu_now() - t0;
		if (r == 0 || dt < best)
			best = dt;
	}
	printf("alg=%s block=%zu coalesce=%zu floor_s_per_gib=%.3f "
	    "crypto_bytes_per_gib=%.0f\n", a[0], block, coalesce,
	    best * (double)(1u << 30) / (double)total,
	    (double)cbytes * (double)(1u << 30) / (double)total);
	free(req);
	free(up);
	free(sealed_req);
	EVP_MAC_CTX_free(mac);
	EVP_CIPHER_CTX_free(cbc);
	EVP_CIPHER_CTX_free(enc);
	EVP_CIPHER_CTX_free(dec);
	return 0;
}
