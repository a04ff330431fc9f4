/* SPDX-License-Identifier: MIT */
/*
 * check_dirs — see check_dirs.h. Nothing is written: what run refuses of a
 * target is asked of target_check_ro(), run's own checks without a write, a
 * lock or a probe file created. Whether a directory can take a probe file is
 * asked of the kernel with faccessat(2) and AT_EACCESS (the effective ids, as
 * open(2) would use), which also reports a read-only file system. It cannot see
 * a systemd sandbox (ProtectSystem=strict without ReadWritePaths=): that is the
 * unit's business, see iopulse(8) FILES.
 */
#include "daemon/targets/check_dirs.h"
#include "lib/escape.h"
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
 * probe's: its row's own_file_name). Into @names (CFG_MAX_PROBES + 1 of them,
 * pointed to by @files); how many.
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

/*
 * One target: EX_OK, or the exit status of its problem (said on stderr). What
 * run would refuse when it opens the target is asked of target_check_ro(), the
 * code run itself uses, so both say the same thing: missing or not a directory
 * on the way (CHECK_EX_MISSING); anything else run refuses: a symlink it does
 * not follow, tmpfs, require_mount, a probe file there that is not ours, a file
 * or device of the wrong type or size (CHECK_EX_NOT_WRITABLE).
 */
static int check_target(const struct config *cfg, unsigned ti, char (*names)[NAME_MAX + 1],
			const char **files)
{
	const struct cfg_target *t = &cfg->targets[ti];
	char who[32], path[ESC_SIZE(PATH_MAX)], esc_source[ESC_SIZE(PATH_MAX)];
	struct target *tg = malloc(sizeof(*tg));
	char *esc_err = malloc(ESC_SIZE(sizeof(tg->error)));
	int r, ex = EX_OK;

	/* Nor one in the configuration file's name. */
	esc_str(esc_source, sizeof(esc_source), cfg->source);
	if (!tg || !esc_err) {
		fprintf(stderr, "%s:%u:%u: target '%s': out of memory\n", esc_source, t->pos.line,
			t->pos.col, t->name);
		ex = EX_OSERR;
		goto out;
	}
	target_init(tg, t);
	tg->want_write = target_written(cfg, ti);
	r = target_check_ro(tg, files, probe_files(cfg, ti, names, files));
	esc_str(path, sizeof(path), t->path); /* a newline in it must not start a line */
	if (r == -ENOENT) {
		fprintf(stderr, "%s:%u:%u: target '%s': %s '%s' does not exist%s\n", esc_source,
			t->pos.line, t->pos.col, t->name, cfg_target_kind_name(t->kind), path,
			t->kind == CFG_TARGET_DIRECTORY ? " (iopulse never creates it)" : "");
		ex = CHECK_EX_MISSING;
	} else if (r < 0) {
		fprintf(stderr, "%s:%u:%u: target '%s': %s\n", esc_source, t->pos.line, t->pos.col,
			t->name, esc_str(esc_err, ESC_SIZE(sizeof(tg->error)), tg->error));
		ex = r == -ENOTDIR ? CHECK_EX_MISSING : CHECK_EX_NOT_WRITABLE;
	} else if (t->kind == CFG_TARGET_DIRECTORY &&
		   faccessat(AT_FDCWD, t->path, W_OK | X_OK, AT_EACCESS) < 0) {
		/* W_OK to create the probe file, X_OK to reach it. */
		r = errno;
		fprintf(stderr,
			"%s:%u:%u: target '%s': directory '%s' is not writable by %s: %s%s\n",
			esc_source, t->pos.line, t->pos.col, t->name, path,
			user_name(who, sizeof(who)), strerror(r),
			r == EROFS ? TARGET_EROFS_HINT : "");
		ex = CHECK_EX_NOT_WRITABLE;
	}
out:
	free(esc_err);
	free(tg);
	return ex;
}

int check_dirs(const struct config *cfg)
{
	char(*names)[NAME_MAX + 1] = calloc(CFG_MAX_PROBES, sizeof(*names));
	const char **files = calloc(CFG_MAX_PROBES + 1, sizeof(*files));
	int worst = EX_OK;

	if (!names || !files) {
		free(names);
		free(files);
		fprintf(stderr, "%s: out of memory\n", cfg->source);
		return EX_OSERR;
	}
	for (unsigned i = 0; i < cfg->n_targets; i++) {
		int r = check_target(cfg, i, names, files);

		/* A missing target says more than a refused one: it wins. */
		if (r == CHECK_EX_MISSING || (r != EX_OK && worst == EX_OK))
			worst = r;
	}
	free(names);
	free(files);
	return worst;
}
