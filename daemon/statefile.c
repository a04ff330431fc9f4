/* SPDX-License-Identifier: MIT */
/*
 * statefile — see statefile.h. Every look at the state directory runs on a
 * helper thread (lib/within.h) that owns a copy of what it needs, and is
 * waited for only so long: a state directory on a hung filesystem delays the
 * start by READ_WAIT_MS at most and never stops a save of a later minute from
 * being tried (and said to fail).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/escape.h"
#include "lib/within.h"
#include "daemon/log.h"
#include "daemon/statefile.h"
#include "daemon/status/status_persist.h"
#include "daemon/targets/statefile.h"
#include "daemon/targets/target.h"

#define READ_WAIT_NS  (5 * NSEC_PER_SEC)  /* the file at start: a healthy disk takes ms */
#define IDENT_WAIT_MS 2000		  /* the targets' identities at start, all at once */
#define WRITE_WAIT_NS (10 * NSEC_PER_SEC) /* a save */
#define SAVE_EVERY_NS (60 * NSEC_PER_SEC) /* of the ticks' clock: a minute of figures */
#define STOP_WAIT_NS  (200 * 1000000ULL)  /* a save in progress at shutdown */

/* One helper at most left waiting in a hung state directory: the next save
 * finds it there and says so. Its stack holds a path walk (target.h). */
static struct within_limit io_limit = {.max = 1, .stack = 256 * 1024};

struct statefile {
	struct status *st;
	char *dir;		   /* the state directory, as configured */
	char path[PATH_MAX + 32];  /* the file's, for messages */
	struct target_state_dir d; /* the reader's at start, then the writer's */
	pthread_mutex_t mu;	   /* guards the four below */
	pthread_cond_t cv;	   /* a minute was reached, or stop */
	uint64_t due_ns;	   /* a minute of ticks went by: the tick's time; 0: not */
	bool stop;		   /* shutdown: touch the status no more */
	bool exited;		   /* the writer returned */
	bool started;		   /* the writer thread exists */
	pthread_t thread;
	uint64_t saved_ns; /* writer: the ticks' time of the last save tried */
	bool saved_once;   /* writer: a save succeeded */
	char failed[512];  /* writer: why the last save failed, as logged; "" */
};

/* ---------------------------------------------------------------- I/O with a deadline */

/* A read or a write of the state file, everything it touches its own. */
struct io_call {
	struct target_state_dir d; /* a copy, d.path pointing into path below */
	bool write;
	void *data; /* write: the bytes; read: what was read */
	size_t len;
	int access_err; /* read: faccessat(W_OK) of the directory, as errno */
	char path[];
};

static int io_run(void *arg)
{
	struct io_call *c = arg;
	int r;

	if (c->write)
		return target_state_write(&c->d, c->data, c->len);
	r = target_state_read(&c->d, STATUS_STATE_MAX_BYTES, &c->data, &c->len);
	if (r == 0 || r == -ENOENT)
		c->access_err = faccessat(AT_FDCWD, c->path, W_OK, AT_EACCESS) < 0 ? errno : 0;
	return r;
}

static void io_release(void *arg)
{
	struct io_call *c = arg;

	free(c->data);
	free(c);
}

/*
 * Reads (@data NULL on entry) or writes (@data, @len: the bytes, taken) the
 * file of @d on a helper, waited for @wait_ns: the call's 0 or -errno, a
 * read's bytes in *@data (free() them) and *@len; -ETIMEDOUT when it did not
 * answer (left to finish), -EBUSY when the last one still has not. @d takes
 * what the call learnt (the pin, the sweep, the error) when it answered.
 * *@access_err (may be NULL): a read's faccessat() of the directory.
 */
static int io_within(struct target_state_dir *d, bool write, void **data, size_t *len,
		     uint64_t wait_ns, int *access_err)
{
	size_t n = strlen(d->path) + 1;
	struct io_call *c = malloc(sizeof(*c) + n);
	struct within_job *j;
	int r, res;

	if (!c) {
		free(write ? *data : NULL);
		*data = NULL;
		return -ENOMEM;
	}
	*c = (struct io_call){.d = *d, .write = write, .data = write ? *data : NULL, .len = *len};
	memcpy(c->path, d->path, n);
	c->d.path = c->path;
	*data = NULL;
	r = within_start(&j, &io_limit, io_run, c, io_release);
	if (r < 0)
		return r;
	r = within_wait(j, eng_mono_ns() + wait_ns, &res);
	if (r == 0) {
		const char *path = d->path;

		*d = c->d;
		d->path = path;
		if (!write) {
			*data = c->data;
			*len = c->len;
			c->data = NULL;
			if (access_err)
				*access_err = c->access_err;
		}
		r = res;
	}
	within_put(j);
	return r;
}

/* @d for the state file in @dir. */
static void dir_init(struct target_state_dir *d, const char *dir)
{
	*d = (struct target_state_dir){.path = dir,
				       .name = STATUS_STATE_FILE,
				       .tmp_prefix = STATUS_STATE_TMP_PREFIX,
				       .magic = STATUS_STATE_MAGIC,
				       .magic_len = sizeof(STATUS_STATE_MAGIC)}; /* with its NUL */
}

static double wall_s(void)
{
	struct timespec ts = {0};

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* "3m20s" for @s seconds, whole seconds. */
static const char *ago(double s, char *buf, size_t len)
{
	cfg_format_duration(s > 0 ? (uint64_t)s * NSEC_PER_SEC : 0, buf, len);
	return buf;
}

/* ---------------------------------------------------------------- restoring */

/* Whether saved target @t is the one configured as @c now (name, path, kind). */
static bool same_target(const struct status_saved_target *t, const struct cfg_target *c)
{
	char path[STATUS_STATE_PATH_MAX];

	snprintf(path, sizeof(path), "%s", c->path);
	return strcmp(t->path, path) == 0 && t->id.kind == (uint8_t)c->kind;
}

/*
 * Which saved targets may be restored: configured still, at the same path, and
 * the same device and filesystem now (all looked at at once, within
 * IDENT_WAIT_MS). @ok[ti] (configured target ti): the index of its saved state,
 * or -1. Each one not restored is logged.
 */
static void match_targets(const struct config *cfg, const struct status_saved *s, int *ok)
{
	struct target_identity *ids = calloc(cfg->n_targets ? cfg->n_targets : 1, sizeof(*ids));
	unsigned n = 0;

	for (unsigned ti = 0; ti < cfg->n_targets; ti++) {
		const struct cfg_target *c = &cfg->targets[ti];

		ok[ti] = -1;
		for (unsigned i = 0; i < s->n_targets && ok[ti] < 0; i++)
			if (strcmp(s->targets[i].name, c->name) == 0)
				ok[ti] = (int)i;
		if (ok[ti] >= 0 && !same_target(&s->targets[ok[ti]], c)) {
			log_info("Target %s: its saved state is of another path or kind (%s), not "
				 "restored",
				 c->name, s->targets[ok[ti]].path);
			ok[ti] = -1;
		}
		if (ok[ti] >= 0 && ids)
			ids[n++] = (struct target_identity){.path = c->path, .kind = c->kind};
	}
	if (ids)
		target_identify_within(ids, n, IDENT_WAIT_MS);
	n = 0;
	for (unsigned ti = 0; ti < cfg->n_targets; ti++) {
		const struct status_saved_target *t = ok[ti] >= 0 ? &s->targets[ok[ti]] : NULL;
		struct status_identity now;

		if (!t)
			continue;
		if (!ids) {
			ok[ti] = -1;
			continue;
		}
		now = (struct status_identity){ids[n].r == 0, t->id.kind, ids[n].dev,
					       ids[n].fs_type};
		if (ids[n].r == -ETIMEDOUT)
			log_warning("Target %s: %s did not answer within %d ms: its saved state is "
				    "not restored",
				    cfg->targets[ti].name, t->path, IDENT_WAIT_MS);
		else if (ids[n].r < 0)
			log_info("Target %s: %s: %s: its saved state is not restored",
				 cfg->targets[ti].name, t->path, strerror(-ids[n].r));
		else if (!status_identity_same(&t->id, &now))
			log_warning(
				"Target %s: %s is on another device or filesystem than when its "
				"state was saved (device %#jx, type %#jx; now %#jx, %#jx): not "
				"restored",
				cfg->targets[ti].name, t->path, (uintmax_t)t->id.dev,
				(uintmax_t)t->id.fs_type, (uintmax_t)now.dev,
				(uintmax_t)now.fs_type);
		if (ids[n++].r != 0 || !status_identity_same(&t->id, &now))
			ok[ti] = -1;
	}
	free(ids);
}

/* The judgement saved for target @t, when there is one and it is recent enough
 * (@age: since it was saved); 1 when restored. */
static unsigned restore_judgement(struct status *st, const struct status_saved_target *t,
				  double age, double now)
{
	char a[32], b[32];

	if (t->j.state == STATUS_STARTING) /* saved before any request judged it */
		return 0;
	if (age > STATUS_JUDGEMENT_MAX_AGE_S) {
		log_info("Target %s: its state was saved %s ago, too long to hold still; its "
			 "baselines are restored",
			 t->name, ago(age, a, sizeof(a)));
		return 0;
	}
	if (status_restore_judgement(st, t, now) < 0) {
		log_warning("Target %s: out of memory restoring its state, ignoring", t->name);
		return 0;
	}
	if (t->j.state != STATUS_UP)
		log_notice("Target %s was %s (%s) for %s before the restart: it stays so until "
			   "judged again",
			   t->name, status_state_name(t->j.state), t->j.reason_code,
			   ago(now - t->j.since_s, b, sizeof(b)));
	return 1;
}

/* The rings of the targets @ok says may be restored, for the probes that
 * measure as they did. How many. */
static unsigned restore_rings(const struct config *cfg, struct status *st,
			      const struct status_saved *s, const int *ok)
{
	bool *said = calloc(cfg->n_probes ? cfg->n_probes : 1, sizeof(*said));
	unsigned n = 0;

	for (unsigned i = 0; i < s->n_series; i++) {
		const struct status_saved_series *e = &s->series[i];
		int ti = cfg_target_index(cfg, e->target), pi = cfg_probe_index(cfg, e->probe);
		const struct cfg_probe *p = pi >= 0 ? &cfg->probes[pi] : NULL;

		if (ti < 0 || ok[ti] < 0 || !p || p->target != (unsigned)ti)
			continue;
		if (cfg_probe_fingerprint(cfg, p) != e->fingerprint) {
			if (said && !said[pi])
				log_info("Probe %s: measures otherwise than when its baseline was "
					 "saved (its settings or its target's changed): learned "
					 "again",
					 p->name);
			if (said)
				said[pi] = true;
			continue;
		}
		if (status_restore_series(st, e, s->written_s) == 0)
			n++;
	}
	free(said);
	return n;
}

static void restore(struct statefile *sf, const struct config *cfg, const struct status_saved *s,
		    double now)
{
	int *ok = calloc(cfg->n_targets ? cfg->n_targets : 1, sizeof(*ok));
	unsigned states = 0, rings;
	char a[32];

	if (!ok) {
		log_warning("State file %s: out of memory restoring it, ignoring", sf->path);
		return;
	}
	match_targets(cfg, s, ok);
	for (unsigned ti = 0; ti < cfg->n_targets; ti++)
		if (ok[ti] >= 0)
			states += restore_judgement(sf->st, &s->targets[ok[ti]], now - s->written_s,
						    now);
	rings = restore_rings(cfg, sf->st, s, ok);
	log_info("State file %s: restored the baselines of %u probe op%s and the states of %u "
		 "target%s, saved %s ago",
		 sf->path, rings, rings == 1 ? "" : "s", states, states == 1 ? "" : "s",
		 ago(now - s->written_s, a, sizeof(a)));
	free(ok);
}

/* Start-up: the file read and judged, what matches restored; all of it logged. */
static void read_at_start(struct statefile *sf, const struct config *cfg)
{
	enum status_state_refusal why;
	struct status_saved s;
	char msg[256];
	void *data = NULL;
	size_t len = 0;
	double now;
	int r = io_within(&sf->d, false, &data, &len, READ_WAIT_NS, NULL);

	if (r == -ENOENT && !sf->d.error[0]) {
		log_info("State file %s: none yet; it is written a minute after start", sf->path);
		return;
	}
	if (r == -ETIMEDOUT || r == -EBUSY) {
		log_warning("State directory %s did not answer within %llus (a hung filesystem?): "
			    "starting without the saved state, ignoring",
			    sf->dir, (unsigned long long)(READ_WAIT_NS / NSEC_PER_SEC));
		return;
	}
	if (r < 0) {
		log_warning("State file: %s; starting without the saved state", sf->d.error);
		return;
	}
	now = wall_s();
	r = status_state_decode(data, len, now, &s, &why, msg, sizeof(msg));
	free(data);
	if (r == -EBADMSG)
		log_warning("State file %s ignored: %s; it is left as it is%s", sf->path, msg,
			    why == STATUS_STATE_E_FOREIGN
				    ? ", and never replaced: nothing is saved until it is removed"
				    : ", until the next save replaces it");
	else if (r < 0)
		log_warning("State file %s: out of memory reading it, ignoring", sf->path);
	else
		restore(sf, cfg, &s, now);
	if (r == 0)
		status_saved_free(&s);
}

/* ---------------------------------------------------------------- saving */

/* After a save that returned @r: the first success, a failure that is new
 * (each failure once, not every minute) or the end of one, logged. */
static void report(struct statefile *sf, int r, const struct status_saved *s)
{
	char why[sizeof(sf->failed)];

	if (sf->d.stale_removed) {
		log_info("State directory %s: removed %u temporary file%s a killed iopulse left",
			 sf->dir, sf->d.stale_removed, sf->d.stale_removed == 1 ? "" : "s");
		sf->d.stale_removed = 0;
	}
	if (r == 0) {
		if (!sf->saved_once)
			log_info("State file %s saved (%u target states, %u probe ops); again at "
				 "most once a minute",
				 sf->path, s->n_targets, s->n_series);
		else if (sf->failed[0])
			log_notice("State file %s saved again", sf->path);
		else
			log_debug("State file %s saved (%u target states, %u probe ops)", sf->path,
				  s->n_targets, s->n_series);
		sf->saved_once = true;
		sf->failed[0] = '\0';
		return;
	}
	if (r == -ETIMEDOUT)
		snprintf(why, sizeof(why),
			 "state directory %.400s did not answer within %llus (a hung filesystem?): "
			 "not saved",
			 sf->dir, (unsigned long long)(WRITE_WAIT_NS / NSEC_PER_SEC));
	else if (r == -EBUSY)
		snprintf(why, sizeof(why),
			 "the last save to %.400s still waits on its filesystem: not saved",
			 sf->dir);
	else if (sf->d.error[0])
		snprintf(why, sizeof(why), "%s", sf->d.error);
	else
		snprintf(why, sizeof(why), "%.400s: %s", sf->path, strerror(-r));
	if (strcmp(why, sf->failed) != 0)
		log_warning("State file: %s; trying again each minute", why);
	snprintf(sf->failed, sizeof(sf->failed), "%s", why);
}

/* One save of what the status keeps now (collected by the caller). */
static void save(struct statefile *sf, struct status_saved *s)
{
	struct buf b;
	void *data;
	size_t len;
	int r;

	buf_init(&b);
	r = status_state_encode(s, &b);
	if (r < 0) {
		buf_free(&b);
		report(sf, r, s);
		return;
	}
	data = buf_steal(&b, &len);
	r = data ? io_within(&sf->d, true, &data, &len, WRITE_WAIT_NS, NULL) : -ENOMEM;
	report(sf, r, s);
}

static void *writer_main(void *arg)
{
	struct statefile *sf = arg;

	pthread_mutex_lock(&sf->mu);
	for (;;) {
		struct status_saved s;
		int r;

		uint64_t due;

		while (!sf->stop && !sf->due_ns)
			pthread_cond_wait(&sf->cv, &sf->mu);
		if (sf->stop)
			break;
		due = sf->due_ns;
		sf->due_ns = 0;
		/* At most once a minute of figures, on the ticks' own clock. */
		if (due < sf->saved_ns + SAVE_EVERY_NS)
			continue;
		sf->saved_ns = due;
		/* Under mu: a stop waits for it, and then no status is touched. */
		r = status_save_collect(sf->st, wall_s(), &s);
		pthread_mutex_unlock(&sf->mu);
		if (r == 0)
			save(sf, &s);
		else
			report(sf, r, &s);
		status_saved_free(&s);
		pthread_mutex_lock(&sf->mu);
	}
	sf->exited = true;
	pthread_mutex_unlock(&sf->mu);
	return NULL;
}

/* A minute of ticks went by (the tick's thread: no blocking). */
static void minute_due(void *arg, uint64_t tick_ns)
{
	struct statefile *sf = arg;

	pthread_mutex_lock(&sf->mu);
	sf->due_ns = tick_ns ? tick_ns : 1;
	pthread_cond_signal(&sf->cv);
	pthread_mutex_unlock(&sf->mu);
}

/* ---------------------------------------------------------------- lifetime */

static void statefile_free(struct statefile *sf)
{
	pthread_cond_destroy(&sf->cv);
	pthread_mutex_destroy(&sf->mu);
	free(sf->dir);
	free(sf);
}

struct statefile *statefile_open(const struct config *cfg, struct status *st)
{
	struct statefile *sf;

	if (!cfg->state_directory || !cfg->state_directory[0]) {
		log_info("No state_directory: baselines and target states start afresh at each "
			 "restart");
		return NULL;
	}
	sf = calloc(1, sizeof(*sf));
	if (!sf || !(sf->dir = strdup(cfg->state_directory))) {
		free(sf);
		log_warning("Out of memory for the state file: none is kept, ignoring");
		return NULL;
	}
	pthread_mutex_init(&sf->mu, NULL);
	pthread_cond_init(&sf->cv, NULL);
	sf->st = st;
	snprintf(sf->path, sizeof(sf->path), "%s/%s", sf->dir, STATUS_STATE_FILE);
	dir_init(&sf->d, sf->dir);
	/* The first save a minute after start at the earliest (the ticks take
	 * eng_now_ns()). */
	sf->saved_ns = eng_now_ns();
	read_at_start(sf, cfg);
	return sf;
}

int statefile_start(struct statefile *sf)
{
	int r;

	if (!sf)
		return 0;
	r = -pthread_create(&sf->thread, NULL, writer_main, sf);
	if (r < 0)
		return log_warning_errno(r, "Cannot start the state file's writer: %m; nothing is "
					    "saved, ignoring");
	sf->started = true;
	status_on_minute(sf->st, minute_due, sf);
	return 0;
}

void statefile_stop(struct statefile *sf)
{
	struct timespec until;
	bool exited = true;

	if (!sf)
		return;
	status_on_minute(sf->st, NULL, NULL);
	pthread_mutex_lock(&sf->mu);
	sf->stop = true;
	pthread_cond_signal(&sf->cv);
	pthread_mutex_unlock(&sf->mu);
	if (sf->started) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (long)STOP_WAIT_NS;
		until.tv_sec += until.tv_nsec / (long)NSEC_PER_SEC;
		until.tv_nsec %= (long)NSEC_PER_SEC;
		exited = pthread_timedjoin_np(sf->thread, NULL, &until) == 0;
	}
	/* A writer still waiting on its save touches sf when it returns: it is
	 * left to the end of the process. */
	if (exited)
		statefile_free(sf);
	else
		log_debug("The state file's writer still waits on %s, leaving it", sf->dir);
}

/* ---------------------------------------------------------------- iopulse check */

/* What is at the state file's name, said for `iopulse check` (@path escaped). */
static void check_contents(const void *data, size_t len, const char *path, bool quiet, FILE *out)
{
	enum status_state_refusal why;
	struct status_saved s;
	char msg[256], e[ESC_SIZE(sizeof(msg))], a[32];
	double now = wall_s();
	int r = status_state_decode(data, len, now, &s, &why, msg, sizeof(msg));

	if (r < 0) {
		fprintf(stderr, "warning: %s: %s: run would ignore it and leave it as it is\n",
			path, r == -EBADMSG ? esc_str(e, sizeof(e), msg) : strerror(-r));
		return;
	}
	if (!quiet)
		fprintf(out, "#   saved %s ago: %u target state%s, %u probe op%s\n",
			ago(now - s.written_s, a, sizeof(a)), s.n_targets,
			s.n_targets == 1 ? "" : "s", s.n_series, s.n_series == 1 ? "" : "s");
	status_saved_free(&s);
}

void statefile_check(const struct config *cfg, uint64_t timeout_ns, bool quiet, bool file_only,
		     FILE *out)
{
	char path[PATH_MAX + 32], ep[ESC_SIZE(sizeof(path))], ee[ESC_SIZE(512)];
	struct target_state_dir d;
	int r, access_err = 0;
	void *data = NULL;
	size_t len = 0;

	if (!cfg->state_directory || !cfg->state_directory[0]) {
		if (!quiet)
			fprintf(out, "# state file: none (state_directory is empty): baselines and "
				     "states start afresh at each restart\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", cfg->state_directory, STATUS_STATE_FILE);
	esc_str(ep, sizeof(ep), path);
	if (!quiet)
		fprintf(out, "# state file: %s\n", ep);
	if (file_only)
		return;
	dir_init(&d, cfg->state_directory);
	r = io_within(&d, false, &data, &len, timeout_ns, &access_err);
	esc_str(ee, sizeof(ee), d.error);
	if (r == 0)
		check_contents(data, len, ep, quiet, out);
	else if (r == -ENOENT && !d.error[0]) {
		if (!quiet)
			fprintf(out, "#   not there yet: run writes it a minute after it starts\n");
	} else if (r == -ETIMEDOUT || r == -EBUSY)
		fprintf(stderr,
			"warning: state_directory %s did not answer in time (a hung filesystem?): "
			"run would start without the saved state\n",
			ep);
	else if (r < 0)
		fprintf(stderr, "warning: %s: run would keep no state file\n",
			d.error[0] ? ee : strerror(-r));
	if ((r == 0 || r == -ENOENT) && !d.error[0] && access_err)
		fprintf(stderr,
			"warning: state_directory %s: %s for this user: run as it would "
			"save no state\n",
			ep, strerror(access_err));
	free(data);
}
