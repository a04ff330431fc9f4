/* SPDX-License-Identifier: MIT */
/*
 * log — the daemon's only way to speak. Library code (config/, engines/, hist,
 * expose) never logs; daemon/ logs once, where it decides what to do.
 * Lines go to stderr: with "<N>" priority prefixes when JOURNAL_STREAM says
 * stderr is the journal, with a timestamp otherwise. The level is checked
 * before anything is formatted. The formatted message is escaped (escape.h:
 * control characters as \n, \x1b...), so a path with a newline in it cannot
 * forge a line, and so is what log_last_error() keeps.
 *
 * Errors and warnings are rate-limited per identical text: at most
 * LOG_RATELIMIT_BURST lines of one text per LOG_RATELIMIT_INTERVAL_NS; the rest
 * are counted and reported in one "Suppressed N similar messages: ..." line when
 * the interval ends (a target that fails the same way on every ping must not
 * flood the journal, and the count says how often it happened).
 *
 * Lines that report a change of state (a target down or up again, a probe failing
 * or succeeding again) are limited per thing instead, whatever their text: see
 * log_internal() with a key.
 */
#ifndef IOPULSE_LOG_H
#define IOPULSE_LOG_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define LOG_RATELIMIT_BURST	  5		 /* lines of one text per interval */
#define LOG_RATELIMIT_INTERVAL_NS 30000000000ULL /* 30 s */

enum log_level {
	LOG_LVL_ERROR = 3,
	LOG_LVL_WARNING = 4,
	LOG_LVL_NOTICE = 5,
	LOG_LVL_INFO = 6,
	LOG_LVL_DEBUG = 7,
};

extern int log_max_level;

/* Parse "error|warning|notice|info|debug"; the level or -EINVAL. */
int log_parse_level(const char *s);
/* Decide the output style from the environment (JOURNAL_STREAM vs stderr). */
void log_setup(void);

/* Replace the rate limit (tests use a short interval); @burst 0 turns it off.
 * Call before any thread logs. */
void log_set_ratelimit(unsigned burst, uint64_t interval_ns);
/* Tests: the clock the rate limit's intervals run on; NULL: CLOCK_MONOTONIC. */
void log_set_ratelimit_clock(uint64_t (*now_ns)(void));

/* Report rate-limited texts whose interval ended (one summary line each), so a
 * count is not held back until the same text comes again. Called from the
 * scheduler's housekeeping; thread-safe. */
void log_flush_suppressed(void);
/* When log_flush_suppressed() has something to report next (on the rate limit's
 * clock), 0 when nothing is held back. Thread-safe. */
uint64_t log_next_flush_ns(void);
/* Add 1 to the eventfd @fd (-1: none) whenever that answer may have changed (a
 * text's first line dropped in its interval) and at each error-level message
 * (log_last_error() changed): the scheduler sleeps until then. */
void log_set_notify_fd(int fd);

/* Copy the last error-level message (suppressed or not) into @buf, "" if none.
 * Thread-safe; for the service manager's STATUS= line. */
void log_last_error(char *buf, size_t n);

/*
 * Logs and returns @err (a negative errno); %m prints strerror(-err).
 *
 * @key NULL: a plain line; identical error and warning lines are limited.
 * @key set: a change of state of one thing so named ("Target t1", "Probe p1"):
 * it went down, came back, started or stopped failing. When the thing flaps, such
 * lines alternate and no two in a row are identical, so the identical-text limit
 * cannot hold them: each key may log at most LOG_RATELIMIT_BURST lines per
 * LOG_RATELIMIT_INTERVAL_NS, whatever their text or level. The rest are counted,
 * and when the interval ends one line, at the level of the last of them, says
 * "Suppressed N state changes, the last: TEXT": how often it flapped and the state
 * it was left in.
 */
int log_internal(const char *key, int level, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define log_state_full_errno(key, level, err, ...)                                                 \
	({                                                                                         \
		int _l = (level), _e = (err);                                                      \
		_l <= log_max_level ? log_internal((key), _l, _e, __VA_ARGS__)                     \
				    : (_e < 0 ? _e : -_e);                                         \
	})

#define log_full_errno(level, err, ...) log_state_full_errno(NULL, level, err, __VA_ARGS__)

#define log_error(...)	 ((void)log_full_errno(LOG_LVL_ERROR, 0, __VA_ARGS__))
#define log_warning(...) ((void)log_full_errno(LOG_LVL_WARNING, 0, __VA_ARGS__))
#define log_notice(...)	 ((void)log_full_errno(LOG_LVL_NOTICE, 0, __VA_ARGS__))
#define log_info(...)	 ((void)log_full_errno(LOG_LVL_INFO, 0, __VA_ARGS__))
#define log_debug(...)	 ((void)log_full_errno(LOG_LVL_DEBUG, 0, __VA_ARGS__))

#define log_error_errno(err, ...)   log_full_errno(LOG_LVL_ERROR, (err), __VA_ARGS__)
#define log_warning_errno(err, ...) log_full_errno(LOG_LVL_WARNING, (err), __VA_ARGS__)

#define log_state_error_errno(key, err, ...)                                                       \
	log_state_full_errno(key, LOG_LVL_ERROR, err, __VA_ARGS__)
#define log_state_error(key, ...) ((void)log_state_full_errno(key, LOG_LVL_ERROR, 0, __VA_ARGS__))
#define log_state_warning(key, ...)                                                                \
	((void)log_state_full_errno(key, LOG_LVL_WARNING, 0, __VA_ARGS__))
#define log_state_notice(key, ...) ((void)log_state_full_errno(key, LOG_LVL_NOTICE, 0, __VA_ARGS__))

#endif
