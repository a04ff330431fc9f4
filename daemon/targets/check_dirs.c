/* SPDX-License-Identifier: MIT */
/*
 * check_dirs — see check_dirs.h. Nothing is written: what run refuses of a
 * target is asked of target_check_ro(), run's own checks without a write, a
 * lock or a probe file created. Whether a directory can take a probe file is
 * asked of the kernel with faccessat(2) and AT_EACCESS (the effective ids, as
 * open(2) would use), which also reports a read-only file system. It cannot see
 * a systemd sandbox (ProtectSystem=strict without ReadWritePaths=): that is the
 * unit's business, see iopulse(8) FILES.
 *
 * Every call that reaches a target (the path walk, stat, open, statfs, the
 * mount checks, the probe file's header, faccessat) can wait for ever on a hung
 * filesystem, so each target is looked at on a helper thread of its own
 * (lib/within.h), all at once, and waited for until one deadline: a target
 * that hangs holds up no other, and the check waits the deadline once however
 * many hang. A helper that does not answer is abandoned, in the kernel, and the
 * process exits with it there (exit_group(2) ends it once its wait is killable,
 * as a FUSE or NFS request's is).
 */
#include "daemon/targets/check_dirs.h"
#include "lib/clock.h"
#include "lib/escape.h"
#include "lib/within.h"
#include "daemon/probes/probe.h"
#include "daemon/targets/target.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One helper a target, so never more abandoned than targets; the default stack
 * (a one-shot command: target_check_ro() as deep as in a lane). */
static struct within_limit check_limit = {.max = CFG_MAX_TARGETS};

/*
 * One target's look, everything it touches its own: a helper that hangs may
 * outlive the configuration (and is released by the helper when its call
 * returns at last).
 */
struct check_call {
	struct cfg_target cfg; /* a copy, with its own path and mount_path */
	struct target tg;
	int r;		/* target_check_ro() */
	int access_err; /* a directory: faccessat()'s errno, 0 when writable */
	unsigned n_files;
	const char *files[CFG_MAX_PROBES + 1];
	char names[][NAME_MAX + 1]; /* one for each probe on the target */
};

/* The name of the effective user, for the message; the uid when it has none. */
static const char *user_name(char *buf, size_t len)
{
	const struct passwd *pw = getpwuid(geteuid());

	if (pw)
		return pw->pw_name;
	snprintf(buf, len, "uid %u", (unsigned)geteuid());
	return buf;
}

/*
 * The probe-file names run would open in the directory target @ti: the
 * daemon's when a probe on it uses it (else the lane keeps none, and leaves a
 * file there alone), and each own file of a probe that has one (a verify
 * probe's: its row's own_file_name). Into @names (one for each probe on the
 * target), pointed to by @files (one more); how many.
 */
static unsigned probe_files(const struct config *cfg, unsigned ti, char (*names)[NAME_MAX + 1],
			    const char **files)
{
	bool daemon_file = false;
	unsigned n = 0;

	for (unsigned i = 0; i < cfg->n_probes && n < CFG_MAX_PROBES; i++) {
		const struct cfg_probe *p = &cfg->probes[i];
		const struct probe_ops *ops = probe_ops_of(p->kind);

		if (p->target != ti)
			continue;
		if (ops && ops->own_file_name) {
			ops->own_file_name(names[n], sizeof(names[n]), p->name);
			files[n] = names[n];
			n++;
		}
		daemon_file = daemon_file || probe_uses_probe_file(p);
	}
	if (daemon_file)
		files[n++] = TARGET_PROBE_FILE;
	return n;
}

/* Whether some probe on target @ti writes (as the lane sets want_write). */
static bool target_written(const struct config *cfg, unsigned ti)
{
	for (unsigned i = 0; i < cfg->n_probes; i++)
		if (cfg->probes[i].target == ti && cfg_probe_writes(&cfg->probes[i]))
			return true;
	return false;
}

static void check_call_free(void *arg)
{
	struct check_call *c = arg;

	free(c->cfg.path);
	free(c->cfg.mount_path);
	free(c);
}

/* Target @ti's look, ready to run: NULL out of memory. */
static struct check_call *check_call_new(const struct config *cfg, unsigned ti)
{
	const struct cfg_target *t = &cfg->targets[ti];
	struct check_call *c;
	unsigned n = 0;

	for (unsigned i = 0; i < cfg->n_probes; i++)
		n += cfg->probes[i].target == ti;
	c = calloc(1, sizeof(*c) + n * sizeof(c->names[0]));
	if (!c)
		return NULL;
	c->cfg = *t;
	c->cfg.path = strdup(t->path);
	c->cfg.mount_path = t->mount_path ? strdup(t->mount_path) : NULL;
	if (!c->cfg.path || (t->mount_path && !c->cfg.mount_path)) {
		check_call_free(c);
		return NULL;
	}
	target_init(&c->tg, &c->cfg);
	c->tg.want_write = target_written(cfg, ti);
	c->n_files = probe_files(cfg, ti, c->names, c->files);
	return c;
}

/* On the helper: what run would refuse, then whether a directory is writable. */
static int check_call_run(void *arg)
{
	struct check_call *c = arg;

	c->r = target_check_ro(&c->tg, c->files, c->n_files);
	/* W_OK to create the probe file, X_OK to reach it. */
	if (c->r == 0 && c->cfg.kind == CFG_TARGET_DIRECTORY &&
	    faccessat(AT_FDCWD, c->cfg.path, W_OK | X_OK, AT_EACCESS) < 0)
		c->access_err = errno;
	return 0;
}

/*
 * What the look at target @t found (@c), said on stderr (@src: the escaped
 * file name): EX_OK, or the exit status of its problem. What run would refuse
 * when it opens the target comes from target_check_ro(), the code run itself
 * uses, so both say the same thing: missing or not a directory on the way
 * (CHECK_EX_MISSING); anything else run refuses: a symlink it does not follow,
 * tmpfs, require_mount, a probe file there that is not ours, a file or device
 * of the wrong type or size (CHECK_EX_NOT_WRITABLE).
 */
static int report_answer(const char *src, const struct cfg_target *t, const struct check_call *c)
{
	char who[32], path[ESC_SIZE(PATH_MAX)], err[ESC_SIZE(sizeof(c->tg.error))];

	esc_str(path, sizeof(path), t->path); /* a newline in it must not start a line */
	if (c->r == -ENOENT) {
		fprintf(stderr, "%s:%u:%u: target '%s': %s '%s' does not exist%s\n", src,
			t->pos.line, t->pos.col, t->name, cfg_target_kind_name(t->kind), path,
			t->kind == CFG_TARGET_DIRECTORY ? " (iopulse never creates it)" : "");
		return CHECK_EX_MISSING;
	}
	if (c->r < 0) {
		fprintf(stderr, "%s:%u:%u: target '%s': %s\n", src, t->pos.line, t->pos.col,
			t->name, esc_str(err, sizeof(err), c->tg.error));
		return c->r == -ENOTDIR ? CHECK_EX_MISSING : CHECK_EX_NOT_WRITABLE;
	}
	if (c->access_err) {
		fprintf(stderr,
			"%s:%u:%u: target '%s': directory '%s' is not writable by %s: %s%s\n", src,
			t->pos.line, t->pos.col, t->name, path, user_name(who, sizeof(who)),
			strerror(c->access_err), c->access_err == EROFS ? TARGET_EROFS_HINT : "");
		return CHECK_EX_NOT_WRITABLE;
	}
	return EX_OK;
}

/*
 * Target @t's look ended with @r: 0 it answered (@c), -ETIMEDOUT it did not
 * within @timeout_ns, else it could not start. Said on stderr (@src: the
 * escaped file name) unless all is well; its exit status.
 */
static int report(const char *src, const struct cfg_target *t, int r, const struct check_call *c,
		  uint64_t timeout_ns)
{
	char path[ESC_SIZE(PATH_MAX)], within[32];

	if (r == 0)
		return report_answer(src, t, c);
	esc_str(path, sizeof(path), t->path);
	if (r == -ETIMEDOUT) {
		cfg_format_duration(timeout_ns, within, sizeof(within));
		fprintf(stderr,
			"%s:%u:%u: target '%s' (%s): stuck: the %s did not answer within %s (a "
			"hung filesystem or disk?)\n",
			src, t->pos.line, t->pos.col, t->name, path, cfg_target_kind_name(t->kind),
			within);
		return CHECK_EX_STUCK;
	}
	fprintf(stderr, "%s:%u:%u: target '%s' (%s): not checked: %s\n", src, t->pos.line,
		t->pos.col, t->name, path, strerror(-r));
	return EX_OSERR;
}

/*
 * The exit status that says most of two: a stuck target (the check could not
 * finish: try again once the storage answers), then a missing one, then the
 * first other problem.
 */
static int worse(int a, int b)
{
	if (a == EX_OK || b == CHECK_EX_STUCK || (b == CHECK_EX_MISSING && a != CHECK_EX_STUCK))
		return b;
	return a;
}

int check_dirs(const struct config *cfg, uint64_t timeout_ns)
{
	struct within_job *jobs[CFG_MAX_TARGETS] = {0};
	struct check_call *calls[CFG_MAX_TARGETS] = {0};
	int started[CFG_MAX_TARGETS];
	char src[ESC_SIZE(PATH_MAX)];
	int worst = EX_OK;
	uint64_t deadline;

	esc_str(src, sizeof(src), cfg->source); /* nor one in the file's name */
	for (unsigned i = 0; i < cfg->n_targets; i++) {
		calls[i] = check_call_new(cfg, i);
		started[i] = calls[i] ? within_start(&jobs[i], &check_limit, check_call_run,
						     calls[i], check_call_free)
				      : -ENOMEM;
		if (started[i] < 0)
			calls[i] = NULL; /* released */
	}
	/* Every target has the whole time, counted once all have started. */
	deadline = eng_mono_ns() + timeout_ns;
	for (unsigned i = 0; i < cfg->n_targets; i++) {
		int r = started[i], ignored;

		if (r == 0)
			r = within_wait(jobs[i], deadline, &ignored);
		worst = worse(worst, report(src, &cfg->targets[i], r, calls[i], timeout_ns));
		within_put(jobs[i]);
	}
	return worst;
}
