/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"

int log_max_level = LOG_LVL_INFO;
static bool log_to_journal;

static const char *const level_names[] = {
	[LOG_LVL_ERROR] = "error", [LOG_LVL_WARNING] = "warning", [LOG_LVL_NOTICE] = "notice",
	[LOG_LVL_INFO] = "info",   [LOG_LVL_DEBUG] = "debug",
};

int log_parse_level(const char *s)
{
	for (int l = LOG_LVL_ERROR; l <= LOG_LVL_DEBUG; l++)
		if (strcasecmp(s, level_names[l]) == 0)
			return l;
	return -EINVAL;
}

/* JOURNAL_STREAM is "dev:ino" of the stream systemd connected; it only counts when
 * stderr is still that stream (a child may have redirected it). */
void log_setup(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	log_to_journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
			 st.st_dev == dev && st.st_ino == ino;
}

int log_internal(int level, int err, const char *fmt, ...)
{
	char msg[1024], stamp[40] = "";
	int saved = errno;
	va_list ap;

	if (err < 0)
		errno = -err;
	else if (err > 0)
		errno = err;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap); /* %m expands to strerror(errno) */
	va_end(ap);
	errno = saved;

	if (log_to_journal) {
		fprintf(stderr, "<%d>%s\n", level, msg);
	} else {
		struct timespec ts;
		struct tm tm;

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld %s: %s\n", stamp, ts.tv_nsec / 1000000,
			level_names[level], msg);
	}
	return err < 0 ? err : -err;
}
