/*
 * smbaccelctl - talk to a running smbaccel over its control socket.
 *
 *   smbaccelctl [-s SOCKET] stats|conns|shares|keytabs|reload [--json]
 *   smbaccelctl [-s SOCKET] metrics [-o FILE]
 *
 * With -o the answer goes to FILE, replaced whole (written beside it,
 * then renamed), for a reader such as the node exporter's textfile
 * collector that may read it at any moment; if smbaccel cannot be asked,
 * FILE is removed, so that stale figures do not pass for current ones.
 * smbaccel not running at all (no socket, or nobody listening on it) is
 * exit status 3, said once: only when that removes FILE (a timer that
 * runs this every few seconds logs the stop, not every run after it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: smbaccelctl [-s SOCKET] "
	    "stats|conns|shares|keytabs|reload [--json]\n"
	    "       smbaccelctl [-s SOCKET] metrics [-o FILE]\n"
	    "  -s SOCKET  control socket (default $SMBACCEL_CONTROL or "
	    "/run/smbaccel/control.sock)\n"
	    "  -o FILE    write the answer to FILE, replaced whole; FILE is "
	    "removed\n"
	    "             if smbaccel cannot be asked\n");
}

static char tmp_path[4096];

static int
write_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* -o FILE: smbaccel could not be asked, or the answer not written. */
static int
out_failed(const char *out)
{
	if (out != NULL) {
		if (tmp_path[0])
			(void)unlink(tmp_path);
		if (unlink(out) == 0)
			fprintf(stderr, "smbaccelctl: removed %s\n", out);
	}
	return 1;
}

int
main(int argc, char **argv)
{
	const char *sock = getenv("SMBACCEL_CONTROL");
	const char *cmd = NULL, *out = NULL;
	struct sockaddr_un sun;
	bool json = false;
	char line[128], buf[65536];
	ssize_t n;
	size_t got = 0;
	int fd, ofd = STDOUT_FILENO, i, rc = 0;
	struct timeval tv = { 30, 0 };

	if (sock == NULL)
		sock = "/run/smbaccel/control.sock";
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
			sock = argv[++i];
		else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strcmp(argv[i], "--json") == 0 ||
		    strcmp(argv[i], "-j") == 0)
			json = true;
		else if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (cmd == NULL && argv[i][0] != '-')
			cmd = argv[i];
		else {
			usage(stderr);
			return 2;
		}
	}
	if (cmd == NULL || (strcmp(cmd, "stats") && strcmp(cmd, "conns") &&
	    strcmp(cmd, "shares") && strcmp(cmd, "keytabs") &&
	    strcmp(cmd, "reload") && strcmp(cmd, "metrics"))) {
		usage(stderr);
		return 2;
	}
	if (json && strcmp(cmd, "metrics") == 0) {
		fprintf(stderr, "smbaccelctl: metrics is Prometheus text, "
		    "there is no --json form (use stats --json)\n");
		return 2;
	}
	if (out != NULL && (snprintf(tmp_path, sizeof(tmp_path), "%s.tmp.%ld",
	    out, (long)getpid()) >= (int)sizeof(tmp_path) || !*out)) {
		fprintf(stderr, "smbaccelctl: bad -o path: %s\n", out);
		return 2;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(sock) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "smbaccelctl: socket path too long: %s\n", sock);
		return out_failed(out);
	}
	strcpy(sun.sun_path, sock);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		if (out != NULL && (errno == ENOENT || errno == ECONNREFUSED)) {
			if (unlink(out) == 0)
				fprintf(stderr, "smbaccelctl: smbaccel is not "
				    "running (%s: %s): removed %s\n", sock,
				    strerror(errno), out);
			return 3;
		}
		fprintf(stderr, "smbaccelctl: cannot connect to %s: %s "
		    "(is smbaccel running? see -s)\n", sock, strerror(errno));
		return out_failed(out);
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(line, sizeof(line), "%s%s\n", cmd, json ? " json" : "");
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
		fprintf(stderr, "smbaccelctl: write: %s\n", strerror(errno));
		return out_failed(out);
	}
	/* The file is readable by all: a monitoring agent runs as its own
	 * user, and the figures name no file and no user (servers and
	 * shares only, as smbaccelctl stats does). */
	if (out != NULL && ((ofd = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL |
	    O_CLOEXEC, 0644)) == -1 || fchmod(ofd, 0644) == -1)) {
		fprintf(stderr, "smbaccelctl: %s: %s\n", tmp_path,
		    strerror(errno));
		if (ofd == -1)
			tmp_path[0] = '\0';
		return out_failed(out);
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		got += (size_t)n;
		if (write_all(ofd, buf, (size_t)n) == -1) {
			fprintf(stderr, "smbaccelctl: write %s: %s\n",
			    out ? tmp_path : "standard output", strerror(errno));
			return out_failed(out);
		}
		if (strncmp(buf, "error:", 6) == 0)
			rc = 1;
	}
	if (n == -1) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			/* the command may still take effect (a reload held by
			 * a slow name server): say what is known */
			fprintf(stderr, "smbaccelctl: no answer from smbaccel "
			    "within %ld s (%s; it may still be busy with "
			    "the command: see its log)\n", (long)tv.tv_sec,
			    cmd);
		else
			fprintf(stderr, "smbaccelctl: read: %s\n",
			    strerror(errno));
		return out_failed(out);
	}
	if (got == 0) {
		/* every command answers something */
		fprintf(stderr, "smbaccelctl: no answer from smbaccel\n");
		return out_failed(out);
	}
	close(fd);
	if (out != NULL) {
		if (rc != 0 || close(ofd) == -1 || rename(tmp_path, out) == -1) {
			if (rc == 0)
				fprintf(stderr, "smbaccelctl: %s: %s\n", out,
				    strerror(errno));
			return out_failed(out);
		}
	}
	return rc;
}
