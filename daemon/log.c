/* SPDX-License-Identifier: MIT */
/*
 * log — the lines to stderr (log.h; with the journal's <N> prefixes when stderr
 * is the journal's stream): level check, formatting into a buffer of its own,
 * escaping, the per-text rate limit and the "Suppressed N" line, and the last
 * error kept for sd_notify's STATUS=.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/escape.h"
#include "daemon/log.h"

/* Distinct texts and keys tracked at once; beyond, the oldest is reported and
 * evicted. */
#define RL_SLOTS    64
#define RL_TEXT_LEN 256	 /* the head of a text, repeated in its summary line */
#define LOG_MSG_MAX 1024 /* a message, formatted, before it is escaped */

int log_max_level = LOG_LVL_INFO;
static bool log_to_journal;

static const char *const level_names[] = {
	[LOG_LVL_ERROR] = "error", [LOG_LVL_WARNING] = "warning", [LOG_LVL_NOTICE] = "notice",
	[LOG_LVL_INFO] = "info",   [LOG_LVL_DEBUG] = "debug",
};

/* One rate-limited text, or one key's state changes: how often it was printed and
 * dropped in its window. */
struct rl_slot {
	uint64_t hash;		/* FNV-1a of the text or key; 0: slot free */
	bool keyed;		/* state changes of a key (log_internal() with a key) */
	uint64_t window_ns;	/* CLOCK_MONOTONIC start of the current interval */
	unsigned shown;		/* lines printed in this interval */
	unsigned suppressed;	/* lines dropped in this interval */
	int level;		/* of the text (keyed: of the last line dropped), for the summary */
	char text[RL_TEXT_LEN]; /* the text (keyed: the last line dropped), for the summary */
};

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER; /* guards everything below */
static struct rl_slot rl_slots[RL_SLOTS];
static unsigned rl_burst = LOG_RATELIMIT_BURST;
static uint64_t rl_interval_ns = LOG_RATELIMIT_INTERVAL_NS;
static uint64_t (*rl_now_ns)(void) = eng_now_ns; /* what the intervals run on */
static char last_error[RL_TEXT_LEN];
static int notify_fd = -1; /* eventfd of log_set_notify_fd() */

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

void log_set_ratelimit(unsigned burst, uint64_t interval_ns)
{
	pthread_mutex_lock(&log_mu);
	rl_burst = burst;
	rl_interval_ns = interval_ns;
	memset(rl_slots, 0, sizeof(rl_slots));
	pthread_mutex_unlock(&log_mu);
}

void log_set_ratelimit_clock(uint64_t (*now_ns)(void))
{
	pthread_mutex_lock(&log_mu);
	rl_now_ns = now_ns ? now_ns : eng_now_ns;
	pthread_mutex_unlock(&log_mu);
}

/* Copy @src into @dst of @n bytes, cut short if it must be (on purpose: these are
 * heads of messages). */
static void copy_head(char *dst, size_t n, const char *src)
{
	size_t len = strnlen(src, n - 1);

	memcpy(dst, src, len);
	dst[len] = '\0';
}

void log_set_notify_fd(int fd)
{
	pthread_mutex_lock(&log_mu);
	notify_fd = fd;
	pthread_mutex_unlock(&log_mu);
}

/* Caller holds log_mu. */
static void notify(void)
{
	uint64_t one = 1;

	if (notify_fd >= 0) {
		ssize_t w = write(notify_fd, &one, sizeof(one));

		(void)w; /* only fails with the counter full: it is drained at each wake-up */
	}
}

uint64_t log_next_flush_ns(void)
{
	uint64_t next = 0;

	pthread_mutex_lock(&log_mu);
	for (unsigned i = 0; i < RL_SLOTS; i++) {
		const struct rl_slot *slot = &rl_slots[i];
		uint64_t end = slot->window_ns + rl_interval_ns;

		/* A slot that dropped nothing has nothing to say when it ends. */
		if (slot->hash && slot->suppressed && (!next || end < next))
			next = end;
	}
	pthread_mutex_unlock(&log_mu);
	return next;
}

void log_last_error(char *buf, size_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&log_mu);
	copy_head(buf, n, last_error);
	pthread_mutex_unlock(&log_mu);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h ? h : 1; /* 0 marks a free slot */
}

/* Caller holds log_mu. */
static void emit(int level, const char *msg)
{
	char stamp[40];

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
}

/* Caller holds log_mu. Reports what @slot dropped and frees it. */
static void rl_report(struct rl_slot *slot)
{
	char line[RL_TEXT_LEN + 64];

	if (slot->suppressed && slot->keyed) {
		snprintf(line, sizeof(line), "Suppressed %u state change%s, the last: %s",
			 slot->suppressed, slot->suppressed == 1 ? "" : "s", slot->text);
		emit(slot->level, line);
	} else if (slot->suppressed) {
		snprintf(line, sizeof(line), "Suppressed %u similar message%s: %s",
			 slot->suppressed, slot->suppressed == 1 ? "" : "s", slot->text);
		emit(slot->level, line);
	}
	slot->hash = 0;
}

/* Caller holds log_mu. The slot of hash @h (@keyed or not), reset if its interval
 * ended; a fresh one (reporting what it held before) if there is none. All slots
 * are searched (a few dozen compares per line that passes the level): two
 * flapping things must not keep evicting each other and restarting their
 * windows. */
static struct rl_slot *rl_slot(uint64_t h, bool keyed, uint64_t now)
{
	struct rl_slot *slot = NULL, *oldest = NULL;

	for (unsigned i = 0; i < RL_SLOTS; i++) {
		struct rl_slot *s = &rl_slots[(h + i) % RL_SLOTS];

		if (s->hash && now - s->window_ns >= rl_interval_ns)
			rl_report(s); /* ended: report it, the slot is free again */
		if (s->hash == h && s->keyed == keyed)
			return s;
		if (!s->hash && !slot)
			slot = s;
		if (s->hash && (!oldest || s->window_ns < oldest->window_ns))
			oldest = s;
	}
	if (!slot) {
		slot = oldest;
		rl_report(slot);
	}
	slot->hash = h;
	slot->keyed = keyed;
	slot->window_ns = now;
	slot->shown = slot->suppressed = 0;
	return slot;
}

/* Caller holds log_mu. True if @msg may be printed now; @key: a state change of
 * @key (limited per key), NULL: limited per identical text. */
static bool rl_admit(int level, const char *msg, const char *key)
{
	struct rl_slot *slot = rl_slot(fnv1a(key ? key : msg), key != NULL, rl_now_ns());

	if (slot->shown == 0 && slot->suppressed == 0) {
		slot->level = level;
		copy_head(slot->text, sizeof(slot->text), msg);
	}
	if (slot->shown >= rl_burst) {
		if (slot->suppressed++ == 0)
			notify(); /* its summary falls due when the interval ends */
		if (key) {	  /* the summary tells the state it was left in */
			slot->level = level;
			copy_head(slot->text, sizeof(slot->text), msg);
		}
		return false;
	}
	slot->shown++;
	return true;
}

void log_flush_suppressed(void)
{
	uint64_t now;

	pthread_mutex_lock(&log_mu);
	now = rl_now_ns(); /* the clock is set under log_mu */
	for (unsigned i = 0; i < RL_SLOTS; i++)
		if (rl_slots[i].hash && now - rl_slots[i].window_ns >= rl_interval_ns)
			rl_report(&rl_slots[i]);
	pthread_mutex_unlock(&log_mu);
}

/* Formats @fmt with errno set from @err (for %m), then prints it unless the rate
 * limit (per @key, or per text when @key is NULL) holds it back. */
static int log_va(const char *key, int level, int err, const char *fmt, va_list ap)
{
	char raw[LOG_MSG_MAX], msg[ESC_SIZE(LOG_MSG_MAX)];
	int saved = errno;

	if (err < 0)
		errno = -err;
	else if (err > 0)
		errno = err;
	vsnprintf(raw, sizeof(raw), fmt, ap); /* %m expands to strerror(errno) */
	errno = saved;
	/* Paths and messages from the system may hold a newline (which would forge
	 * a line of its own) or terminal controls: every line is one line. */
	esc_str(msg, sizeof(msg), raw);

	pthread_mutex_lock(&log_mu);
	if (level == LOG_LVL_ERROR) {
		/* Escaped anew from the raw text into its 256 bytes, not a head of
		 * msg's: that would cut a \xNN or a UTF-8 character in two. */
		esc_str(last_error, sizeof(last_error), raw);
		notify(); /* STATUS= carries it */
	}
	if (rl_burst == 0 || level == LOG_LVL_DEBUG || (!key && level > LOG_LVL_WARNING) ||
	    rl_admit(level, msg, key))
		emit(level, msg);
	pthread_mutex_unlock(&log_mu);
	return err < 0 ? err : -err;
}

int log_internal(const char *key, int level, int err, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = log_va(key, level, err, fmt, ap);
	va_end(ap);
	return r;
}
