/*
 * daemon.c - start-up, signals, reload and the drain on shutdown.
 *
 * SIGHUP: parse the policy file into a fresh config, validate it, and swap
 * only on success (OpenBSD unwind main_reload); a bad file keeps the old
 * policy and every error is logged with its line.
 * SIGTERM/SIGINT: stop accepting, flush every write-behind buffer, close
 * each connection once it is quiet, exit; drain_timeout bounds the wait.
 * A second signal closes every connection at once.  Either way what was
 * acknowledged to clients and never written is logged by range as each
 * connection closes, and the exit status says it (PX_EXIT_LOST).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "proxy/coherence.h"
#include "proxy/conn.h"
#include "proxy/control.h"
#include "proxy/daemon.h"
#include "proxy/doccache.h"
#include "proxy/keyed.h"
#include "proxy/keyfiles.h"
#include "proxy/listener.h"
#include "proxy/side.h"
#include "proxy/tproxy.h"

static ev_signal sig_term, sig_int, sig_hup, sig_usr1, sig_usr2;
static ev_timer drain_timer, status_timer, watchdog_timer;
static double drain_deadline;
static uint64_t lost_at_stop;     /* px_stats.lost_bytes at the first signal */
#define PX_EXIT_LOST 3            /* stopped; acknowledged writes were lost */
/* what conn.c calls up for: out of descriptors pauses accepting; a
 * failed connect moves a forward upstream to its next address */
static const struct px_conn_hooks conn_hooks = {
	.out_of_fds = px_listen_pause,
	.connect_failed = px_listen_upstream_failed,
};

/*
 * transparent and tproxy: smbaccel's upstream sockets carry tproxy_mark
 * (SO_MARK, which needs CAP_NET_ADMIN, or CAP_NET_RAW since Linux 5.17),
 * by which the interception rules leave them alone.  Unmarked, a REDIRECT rule would catch smbaccel's own
 * connection to the server and hand it back to the listener, which would
 * connect again, and so on: refuse to start instead.
 */
static int
mark_usable(const struct pol_global *g)
{
	int fd, rc = 0;

	if (g->mode == POL_MODE_FORWARD)
		return 0;
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_MARK, &g->tproxy_mark,
	    sizeof(g->tproxy_mark)) == -1) {
		log_warn("mode = %s: cannot set SO_MARK 0x%x (tproxy_mark) on "
		    "upstream sockets (needs CAP_NET_ADMIN or CAP_NET_RAW); "
		    "unmarked, smbaccel's own connections could be diverted "
		    "back to it (a loop)", pol_mode_name(g->mode), g->tproxy_mark);
		rc = -1;
	}
	if (fd != -1)
		close(fd);
	return rc;
}

static void
log_errors(const struct pol_errors *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		log_warnx("policy: %s", e->msg[i]);
}

/* Reload the policy file; 0 on success (new policy in force). */
static int
reload_policy(void)
{
	struct pol_errors errs = { 0 };
	struct pol_config *ncfg, *old = px_rt.cfg;
	struct px_conn *c;

	log_info("reloading policy %s", px_rt.cfg_path);
	if ((ncfg = pol_load_file(px_rt.cfg_path, &errs)) == NULL) {
		log_errors(&errs);
		log_warnx("reload failed: old policy kept");
		pol_errors_free(&errs);
		return -1;
	}
	if (pol_diff_reloadable(old, ncfg, &errs) != 0) {
		log_errors(&errs);
		log_warnx("reload refused: settings above need a restart; old "
		    "policy kept");
		pol_errors_free(&errs);
		pol_free(ncfg);
		return -1;
	}
	pol_errors_free(&errs);
	/* the new keys are read, and put in force only with the policy:
	 * a refused reload leaves the ones in use as they are */
	switch (px_keyfiles_stage(ncfg)) {
	case -1:
		log_warnx("reload failed: secrets file refused; old policy "
		    "kept");
		pol_free(ncfg);
		return -1;
	case -2:
		log_warnx("reload failed: keytab refused; old policy kept");
		pol_free(ncfg);
		return -1;
	}
	if (px_listen_reload(pol_global(old), pol_global(ncfg)) == -1) {
		log_warnx("reload failed: upstream does not resolve; old policy "
		    "kept");
		px_keyfiles_discard();
		pol_free(ncfg);
		return -1;
	}
	px_keyfiles_commit(ncfg);
	px_rt.cfg = ncfg;
	for (c = px_conn_first(); c; c = c->next)
		c->led.cfg = ncfg;
	if (!px_rt.force_debug)
		log_set_level((int)pol_global(ncfg)->log_level);
	pol_free(old);
	px_conn_reloaded();
	log_info("policy reloaded: share settings for new tree connects, "
	    "connection timeouts and limits for open connections too");
	return 0;
}

/* reload_policy, counted: a refused reload shows in the counters and
 * metrics (reload_ok 0), not only in the log */
static int
reload(void)
{
	if (reload_policy() == -1) {
		px_stats.reloads_failed++;
		px_stats.reload_ok = 0;
		return -1;
	}
	px_stats.reloads++;
	px_stats.reload_ok = 1;
	px_stats.policy_loaded = (uint64_t)time(NULL);
	return 0;
}

static void
notify_status(void)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "STATUS=%llu connections, %llu buffered "
	    "bytes", (unsigned long long)px_stats.conns_active,
	    (unsigned long long)px_stats.wb_bytes_now);
	(void)sd_notify(0, buf);
}

static void
status_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	notify_status();
	px_side_trim_idle(px_now_ms());
}

/* systemd's watchdog (WatchdogSec=): a sign of life from the event loop
 * itself, so a loop that stops turning gets smbaccel restarted. */
static void
watchdog_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	(void)sd_notify(0, "WATCHDOG=1");
}

/* Close every connection now: each logs what it loses (px_relay_free). */
static void
close_all(void)
{
	struct px_conn *c;

	while ((c = px_conn_first()) != NULL)
		px_conn_close(c, PX_CLOSE_SHUTDOWN);
}

static void
drain_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	px_conn_shutdown_all();
	if (px_rt.conns == NULL) {
		log_info("all connections closed, exiting");
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	if (px_now_ms() >= drain_deadline) {
		log_warnx("drain_timeout reached with %zu connections; closing",
		    px_conn_count());
		close_all();
		ev_break(loop, EVBREAK_ALL);
	}
}

static void
stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	const struct pol_global *g = pol_global(px_rt.cfg);

	(void)revents;
	if (px_rt.stopping) {
		log_warnx("second signal %d: closing %zu connections now, with "
		    "%llu buffered bytes not written", w->signum,
		    px_conn_count(), (unsigned long long)px_stats.wb_bytes_now);
		close_all();
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	log_info("signal %d: stopping (no new connections, draining %llu "
	    "buffered bytes on %zu connections)", w->signum,
	    (unsigned long long)px_stats.wb_bytes_now, px_conn_count());
	px_rt.stopping = true;
	lost_at_stop = px_stats.lost_bytes;
	(void)sd_notify(0, "STOPPING=1");
	px_listen_stop();
	px_control_stop();
	drain_deadline = px_now_ms() + (double)g->drain_timeout_ms;
	ev_timer_init(&drain_timer, drain_cb, 0., 0.05);
	ev_timer_start(loop, &drain_timer);
}

/* SIGUSR1 and SIGUSR2 mean nothing here; by default they would end the
 * process at once, without the drain of acknowledged writes */
static void
usr_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	log_warnx("signal %s ignored (SIGTERM stops, SIGHUP reloads; "
	    "smbaccelctl stats shows the counters)",
	    w->signum == SIGUSR1 ? "USR1" : "USR2");
}

static void
hup_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	(void)reload();
	(void)sd_notify(0, "READY=1");
}

/*
 * libev aborts when its allocator returns NULL.  A transient failure
 * (memory pressure, or a failed allocation injected by the fault tests)
 * should not take every connection down: retry a few times, as ev.pod
 * suggests, before letting libev give up.
 */
static void *
ev_alloc_retry(void *ptr, long size)
{
	int i;

	if (size == 0) {
		free(ptr);
		return NULL;
	}
	for (i = 0; i < 50; i++) {
		void *n = realloc(ptr, (size_t)size);

		if (n != NULL)
			return n;
		if (i == 0)
			log_warnx("event loop: cannot allocate %ld bytes, "
			    "retrying", size);
		usleep(10000);
	}
	return NULL;
}

int
px_daemon_run(const char *cfg_path, bool foreground)
{
	struct pol_errors errs = { 0 };
	const struct pol_global *g;
	uint64_t wd_usec = 0, lost;
	int rc = 0;

	px_rt.cfg_path = cfg_path;
	if ((px_rt.cfg = pol_load_file(cfg_path, &errs)) == NULL) {
		log_policy_errors(&errs);
		pol_errors_free(&errs);
		fprintf(stderr, "%ssmbaccel: %s: policy has errors, not "
		    "starting\n", log_to_journal() ? SD_ERR : "", cfg_path);
		return 1;
	}
	pol_errors_free(&errs);
	g = pol_global(px_rt.cfg);
	px_stats.reload_ok = 1;
	px_stats.policy_loaded = (uint64_t)time(NULL);
	log_init(px_rt.force_debug ? PX_LOG_DEBUG : (int)g->log_level,
	    foreground || getenv("JOURNAL_STREAM") || getenv("INVOCATION_ID") ||
	    isatty(2));
	signal(SIGPIPE, SIG_IGN);
	if (px_keyfiles_load_secrets(g->secrets) == -1) {
		log_warnx("cannot use the secrets file %s, exiting", g->secrets);
		return 1;
	}
	if (px_keyfiles_load_keytabs(px_rt.cfg) == -1) {
		log_warnx("cannot use the keytab, exiting");
		return 1;
	}
	if (mark_usable(g) == -1) {
		log_warnx("cannot mark upstream connections, exiting");
		return 1;
	}
	ev_set_allocator(ev_alloc_retry);
	px_rt.loop = EV_DEFAULT;
	px_conn_init(&conn_hooks);
	/* the control socket before the rest: px_control_start refuses a
	 * path a running smbaccel answers on, so a second start with this
	 * configuration touches nothing the first runs on (its document
	 * store, its policy routing, taken for a dead instance's leftovers
	 * and removed); after the checks of the files, whose errors say
	 * more */
	if (px_control_start(g->control_socket, reload) == -1) {
		log_warnx("cannot start the control socket, exiting");
		return 1;
	}
	px_dc_start(g);
	/* the listeners first: one whose port is taken (another instance)
	 * fails before any routing is touched */
	if (px_listen_start(g) == -1) {
		log_warnx("cannot start listening%s (see above), exiting",
		    g->mode == POL_MODE_FORWARD ? " or resolve the upstream" :
		    "");
		px_control_stop();
		return 1;
	}
	if (g->mode == POL_MODE_TPROXY &&
	    px_tproxy_setup(g->tproxy_mark, g->tproxy_table) == -1) {
		log_warnx("cannot install the policy routing of mode = tproxy, "
		    "exiting");
		px_listen_stop();
		px_control_stop();
		return 1;
	}
	/* once nothing can refuse the start: the file is removed as read */
	px_coh_lost_load(g->state_dir);
	ev_signal_init(&sig_term, stop_cb, SIGTERM);
	ev_signal_init(&sig_int, stop_cb, SIGINT);
	ev_signal_init(&sig_hup, hup_cb, SIGHUP);
	ev_signal_start(px_rt.loop, &sig_term);
	ev_signal_start(px_rt.loop, &sig_int);
	ev_signal_start(px_rt.loop, &sig_hup);
	ev_signal_init(&sig_usr1, usr_cb, SIGUSR1);
	ev_signal_init(&sig_usr2, usr_cb, SIGUSR2);
	ev_signal_start(px_rt.loop, &sig_usr1);
	ev_signal_start(px_rt.loop, &sig_usr2);
	ev_timer_init(&status_timer, status_cb, 5., 5.);
	ev_timer_start(px_rt.loop, &status_timer);
	ev_unref(px_rt.loop);   /* the status timer alone keeps nothing alive */
	if (sd_watchdog_enabled(0, &wd_usec) > 0 && wd_usec > 0) {
		double every = (double)wd_usec / 2e6;

		ev_timer_init(&watchdog_timer, watchdog_cb, every, every);
		ev_timer_start(px_rt.loop, &watchdog_timer);
		ev_unref(px_rt.loop);
		log_info("systemd watchdog: a sign of life every %.2f s", every);
	}
	log_info("smbaccel started, policy %s", cfg_path);
	(void)sd_notify(0, "READY=1");
	notify_status();
	ev_run(px_rt.loop, 0);
	/* writes the clients were told had succeeded, lost while stopping
	 * (a second signal, drain_timeout, a server gone in the drain) */
	if (px_rt.stopping &&
	    (lost = px_stats.lost_bytes - lost_at_stop) > 0) {
		log_warnx("%llu bytes acknowledged to clients were not written "
		    "while stopping (ranges logged above)",
		    (unsigned long long)lost);
		rc = PX_EXIT_LOST;
	}
	px_coh_lost_save(pol_global(px_rt.cfg)->state_dir);
	px_control_stop();
	px_tproxy_teardown();
	px_dc_stop();
	px_share_stats_free();
	log_info("smbaccel stopped");
	pol_free(px_rt.cfg);
	px_rt.cfg = NULL;
	px_keyed_shutdown();
	return rc;
}
