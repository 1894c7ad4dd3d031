/*
 * main.c - command line of the smbaccel daemon.
 *
 *   smbaccel -c FILE [-f] [-d]     run (foreground with -f; -d: debug log)
 *   smbaccel -t -c FILE [-v]       check FILE; -v prints effective settings
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proxy/proxy.h"
#include "proxy/daemon.h"
#include "proxy/upstream.h"
#include "proxy/keyfiles.h"
#include "proxy/listener.h"
#include "proxy/control.h"

#define SMBACCEL_VERSION "0.1.0"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: smbaccel [-f] [-d] [-c FILE]\n"
	    "       smbaccel -t [-v] [-c FILE]\n"
	    "  -c FILE  policy file (default /etc/smbaccel/smbaccel.conf)\n"
	    "  -f       foreground, log to stderr\n"
	    "  -d       debug logging\n"
	    "  -t       check the policy file and exit (errors with line numbers)\n"
	    "  -v       with -t: print the effective settings\n"
	    "  -V       print the version\n");
}

int
main(int argc, char **argv)
{
	const char *cfg = "/etc/smbaccel/smbaccel.conf";
	bool check = false, verbose = false, foreground = false, debug = false;
	int ch, i;

	/* the GNU long forms a user tries first */
	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("smbaccel %s\n", SMBACCEL_VERSION);
			return 0;
		}
	}
	while ((ch = getopt(argc, argv, "c:dfhtvV")) != -1) {
		switch (ch) {
		case 'c': cfg = optarg; break;
		case 'd': debug = true; break;
		case 'f': foreground = true; break;
		case 't': check = true; break;
		case 'v': verbose = true; break;
		case 'V': printf("smbaccel %s\n", SMBACCEL_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (check) {
		struct pol_errors errs = { 0 };
		struct pol_config *c = pol_load_file(cfg, &errs);

		if (c == NULL) {
			log_policy_errors(&errs);
			pol_errors_free(&errs);
			return 1;
		}
		/* against the kernel, and what the daemon reads or resolves
		 * at start, every check whatever the others found: each
		 * refusal as FILE: why (the checks' log lines too), an error
		 * of the secrets file or a keytab as FILE[:LINE]: why */
		int bad = 0, warned;

		log_set_prefix(cfg);
		bad += px_upstream_check(c, stderr) > 0;
		bad += px_keyfiles_check(c, stderr) > 0;
		bad += px_listen_check(pol_global(c)) == -1;
		bad += px_control_check(pol_global(c)->control_socket) == -1;
		/* not refusals (the daemon runs without them), but said now */
		warned = (pol_global(c)->read_cache_dir[0] != '\0' &&
		    px_private_dir(pol_global(c)->read_cache_dir,
		    "read_cache_dir", "the document cache runs without its "
		    "store", true) == -1) +
		    (pol_global(c)->state_dir[0] != '\0' &&
		    px_private_dir(pol_global(c)->state_dir, "state_dir",
		    "records of lost data not kept across a restart", true) ==
		    -1);
		if (bad > 0) {
			fprintf(stderr, "%s: refused (reasons above)\n", cfg);
			pol_errors_free(&errs);
			pol_free(c);
			return 1;
		}
		if (verbose)
			pol_dump(c, stdout);
		else
			printf("%s: ok%s\n", cfg, warned ? " (with the warnings "
			    "above)" : "");
		pol_errors_free(&errs);
		pol_free(c);
		return 0;
	}
	if (debug) {
		log_init(PX_LOG_DEBUG, true);
		px_rt.force_debug = true;
	}
	ch = px_daemon_run(cfg, foreground);
	return ch;
}
