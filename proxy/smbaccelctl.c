/*
 * smbaccelctl - talk to a running smbaccel over its control socket.
 *
 *   smbaccelctl [-s SOCKET] stats|conns|shares|keytabs|reload [--json]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: smbaccelctl [-s SOCKET] "
	    "stats|conns|shares|keytabs|reload [--json]\n"
	    "  -s SOCKET  control socket (default $SMBACCEL_CONTROL or "
	    "/run/smbaccel/control.sock)\n");
}

int
main(int argc, char **argv)
{
	const char *sock = getenv("SMBACCEL_CONTROL");
	const char *cmd = NULL;
	struct sockaddr_un sun;
	bool json = false;
	char line[128], buf[65536];
	ssize_t n;
	int fd, i, rc = 0;
	struct timeval tv = { 30, 0 };

	if (sock == NULL)
		sock = "/run/smbaccel/control.sock";
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
			sock = argv[++i];
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
	    strcmp(cmd, "reload"))) {
		usage(stderr);
		return 2;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(sock) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "smbaccelctl: socket path too long: %s\n", sock);
		return 1;
	}
	strcpy(sun.sun_path, sock);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		fprintf(stderr, "smbaccelctl: cannot connect to %s: %s "
		    "(is smbaccel running? see -s)\n", sock, strerror(errno));
		return 1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(line, sizeof(line), "%s%s\n", cmd, json ? " json" : "");
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
		fprintf(stderr, "smbaccelctl: write: %s\n", strerror(errno));
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return 1;
		if (strncmp(buf, "error:", 6) == 0)
			rc = 1;
	}
	if (n == -1) {
		fprintf(stderr, "smbaccelctl: read: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	return rc;
}
