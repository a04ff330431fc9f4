/* SPDX-License-Identifier: MIT */
/*
 * check_dirs — see check_dirs.h. Nothing is written: a probe file is created only
 * by the daemon, so writability is asked of the kernel with faccessat(2) and
 * AT_EACCESS (the effective ids, as open(2) would use), which also reports a
 * read-only file system. It cannot see a systemd sandbox (ProtectSystem=strict
 * without ReadWritePaths=): that is the unit's business, see iopulse(8) FILES.
 */
#include "check_dirs.h"
#include "escape.h"
#include "target.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
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
 * One directory target: EX_OK, or the exit status of its problem (said on
 * stderr). What run would refuse when it opens the directory is asked of
 * target_check_dir(), the code run itself uses, so both say the same thing:
 * missing or not a directory (CHECK_EX_MISSING), a symlink it does not follow,
 * tmpfs, require_mount (CHECK_EX_NOT_WRITABLE: there, but not for a probe file).
 */
static int check_dir(const struct config *cfg, const struct cfg_target *t)
{
	char who[32], err[sizeof(((struct target *)0)->error)];
	char path[ESC_SIZE(PATH_MAX)], esc_err[ESC_SIZE(sizeof(err))];
	char esc_source[ESC_SIZE(PATH_MAX)];
	int r = target_check_dir(t, err, sizeof(err));

	esc_str(path, sizeof(path), t->path); /* a newline in it must not start a line */
	/* Nor one in the configuration file's name. */
	esc_str(esc_source, sizeof(esc_source), cfg->source);
	if (r == -ENOENT) {
		fprintf(stderr,
			"%s:%u:%u: target '%s': directory '%s' does not exist (iopulse never "
			"creates it)\n",
			esc_source, t->pos.line, t->pos.col, t->name, path);
		return CHECK_EX_MISSING;
	}
	if (r < 0) {
		fprintf(stderr, "%s:%u:%u: target '%s': %s\n", esc_source, t->pos.line, t->pos.col,
			t->name, esc_str(esc_err, sizeof(esc_err), err));
		return r == -ENOTDIR ? CHECK_EX_MISSING : CHECK_EX_NOT_WRITABLE;
	}
	/* W_OK to create the probe file, X_OK to reach it. */
	if (faccessat(AT_FDCWD, t->path, W_OK | X_OK, AT_EACCESS) < 0) {
		r = errno;
		fprintf(stderr,
			"%s:%u:%u: target '%s': directory '%s' is not writable by %s: %s%s\n",
			esc_source, t->pos.line, t->pos.col, t->name, path,
			user_name(who, sizeof(who)), strerror(r),
			r == EROFS ? TARGET_EROFS_HINT : "");
		return CHECK_EX_NOT_WRITABLE;
	}
	return EX_OK;
}

int check_dirs(const struct config *cfg)
{
	int worst = EX_OK;

	for (unsigned i = 0; i < cfg->n_targets; i++) {
		int r;

		if (cfg->targets[i].kind != CFG_TARGET_DIRECTORY)
			continue;
		r = check_dir(cfg, &cfg->targets[i]);
		/* A missing directory says more than an unwritable one: it wins. */
		if (r == CHECK_EX_MISSING || (r != EX_OK && worst == EX_OK))
			worst = r;
	}
	return worst;
}
