/* SPDX-License-Identifier: MIT */
/* log: every message is one line, its control characters escaped (escape.h,
 * whose forms are tested here too). Identical errors and warnings are
 * rate-limited with a count of what was dropped; other levels and other texts
 * pass; the last error is kept. State changes are limited per key, whatever
 * their text and level, and their summary says the state left in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/testutil.h"

#include "lib/buf.h"
#include "lib/escape.h"
#include "daemon/log.h"

#define INTERVAL_NS 200000000ULL /* 200 ms */

/* The rate limit runs on this clock: "within the interval" holds however slow
 * the machine, and "past it" needs no sleep. */
static uint64_t fake_now_ns = 1000000000ULL;

static uint64_t fake_clock(void)
{
	return fake_now_ns;
}

static void pass_interval(void)
{
	fake_now_ns += INTERVAL_NS + 1;
}

/* What log_flush_suppressed() says once the interval has ended; caller frees. */
static char *flush_after_interval(void)
{
	pass_interval();
	tu_capture_begin();
	log_flush_suppressed();
	return tu_capture_end();
}

static void test_identical_errors_limited(void **state)
{
	char last[256];
	char *text;

	(void)state;
	log_set_ratelimit(3, INTERVAL_NS);
	tu_capture_begin();
	for (int i = 0; i < 10; i++)
		log_error("Target %s is down: %s", "t1", "gone");
	log_error("Target %s is down: %s", "t2", "gone"); /* another text: its own count */
	for (int i = 0; i < 5; i++)
		log_info("Started %d", 1); /* info is never limited */
	log_flush_suppressed();		   /* the interval has not ended: nothing to report yet */
	text = tu_capture_end();
	assert_int_equal(tu_count(text, "Target t1 is down: gone\n"), 3);
	assert_int_equal(tu_count(text, "Target t2 is down: gone\n"), 1);
	assert_int_equal(tu_count(text, "Started 1\n"), 5);
	assert_null(strstr(text, "Suppressed"));
	free(text);

	/* After the interval: one summary with the count, at the text's level. */
	text = flush_after_interval();
	assert_int_equal(tu_count(text, "Suppressed"), 1);
	assert_non_null(
		strstr(text, "error: Suppressed 7 similar messages: Target t1 is down: gone\n"));
	free(text);

	/* A new interval admits the text again. */
	tu_capture_begin();
	log_error("Target %s is down: %s", "t1", "gone");
	text = tu_capture_end();
	assert_int_equal(tu_count(text, "Target t1 is down: gone\n"), 1);
	free(text);

	log_last_error(last, sizeof(last));
	assert_string_equal(last, "Target t1 is down: gone");
}

/* A text that comes back after its interval reports the dropped count itself,
 * without waiting for the housekeeping flush. */
static void test_warning_summary_on_return(void **state)
{
	char *text;

	(void)state;
	log_set_ratelimit(2, INTERVAL_NS);
	tu_capture_begin();
	for (int i = 0; i < 4; i++)
		log_warning("Target %s: %s, re-opening", "t1", "stale");
	text = tu_capture_end();
	assert_int_equal(tu_count(text, "re-opening\n"), 2);
	free(text);

	pass_interval();
	tu_capture_begin();
	log_warning("Target %s: %s, re-opening", "t1", "stale");
	text = tu_capture_end();
	assert_non_null(strstr(
		text, "warning: Suppressed 2 similar messages: Target t1: stale, re-opening\n"));
	assert_int_equal(tu_count(text, "re-opening\n"), 2); /* the summary and the line */
	free(text);
}

static void test_disabled(void **state)
{
	char *text;

	(void)state;
	log_set_ratelimit(0, INTERVAL_NS);
	tu_capture_begin();
	for (int i = 0; i < 20; i++)
		log_error("Same %d", 0);
	text = tu_capture_end();
	assert_int_equal(tu_count(text, "Same 0\n"), 20);
	free(text);
}

/* A flapping probe: its failure and recovery lines alternate (no two identical in
 * a row) at two levels; the limit per key holds them all, and the summary names
 * the last state. Another key and plain lines are not affected. */
static void test_state_changes_limited_per_key(void **state)
{
	char *text;

	(void)state;
	log_set_ratelimit(3, INTERVAL_NS);
	tu_capture_begin();
	for (int i = 0; i < 10; i++) {
		log_state_error_errno("Probe w1", -EIO, "Probe %s: %s: %m", "w1", "write");
		log_state_notice("Probe w1", "Probe %s: %s succeeds again", "w1", "write");
	}
	log_state_error_errno("Probe w1", -EIO, "Probe %s: %s: %m", "w1", "fdatasync"); /* last */
	log_state_notice("Target t1", "Target %s is up again", "t1"); /* its own key */
	log_error_errno(-EIO, "Probe %s: %s: %m", "w1", "write");     /* not a state line */
	log_state_full_errno("Probe w1", LOG_LVL_DEBUG, 0, "Probe w1: debug %d", 1); /* never */
	log_flush_suppressed(); /* the interval has not ended: nothing to report yet */
	text = tu_capture_end();
	/* E, N, E of the key's 21 lines, and the plain line */
	assert_int_equal(tu_count(text, "Probe w1: write: Input/output error\n"), 2 + 1);
	assert_int_equal(tu_count(text, "Probe w1: write succeeds again\n"), 1);
	assert_int_equal(tu_count(text, "Probe w1: fdatasync"), 0);
	assert_int_equal(tu_count(text, "Target t1 is up again\n"), 1);
	assert_int_equal(tu_count(text, "Probe w1: debug 1\n"), 0);
	assert_null(strstr(text, "Suppressed"));
	assert_int_equal(tu_count(text, "\n"), 3 + 1 + 1);
	free(text);

	/* After the interval: one summary, at the level of the last line dropped. */
	text = flush_after_interval();
	assert_int_equal(tu_count(text, "Suppressed"), 1);
	assert_non_null(strstr(text, "error: Suppressed 18 state changes, the last: Probe w1: "
				     "fdatasync: Input/output error\n"));
	free(text);

	/* ... and the key logs again. */
	tu_capture_begin();
	log_state_notice("Probe w1", "Probe %s: %s succeeds again", "w1", "fdatasync");
	text = tu_capture_end();
	assert_non_null(strstr(text, "notice: Probe w1: fdatasync succeeds again\n"));
	free(text);
}

/* Many keys at once, each flapping: every one keeps its own count (none pushes
 * another out and resets its window). */
static void test_many_keys(void **state)
{
	char key[32], *text;

	(void)state;
	log_set_ratelimit(2, 10 * INTERVAL_NS);
	tu_capture_begin();
	for (int round = 0; round < 6; round++)
		for (int k = 0; k < 20; k++) {
			snprintf(key, sizeof(key), "Probe p%d", k);
			if (round % 2)
				log_state_notice(key, "%s: read succeeds again", key);
			else
				log_state_error(key, "%s: read: failed", key);
		}
	text = tu_capture_end();
	assert_int_equal(tu_count(text, "\n"), 20 * 2);
	free(text);
	log_set_ratelimit(LOG_RATELIMIT_BURST, LOG_RATELIMIT_INTERVAL_NS);
}

/* The scheduler sleeps until the next summary is due, and is woken when that may
 * have changed (a text's first line dropped) or an error is logged (STATUS=). */
static void test_next_flush_and_notify(void **state)
{
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	uint64_t n = 0, start;
	char *text;

	(void)state;
	assert_true(fd >= 0);
	log_set_ratelimit(2, INTERVAL_NS);
	log_set_notify_fd(fd);
	start = fake_now_ns;
	tu_capture_begin();
	log_warning("Target %s: %s", "t1", "slow");
	log_warning("Target %s: %s", "t1", "slow");
	assert_int_equal(log_next_flush_ns(), 0);      /* nothing dropped: nothing to report */
	assert_int_equal(read(fd, &n, sizeof(n)), -1); /* warnings shown: no news */
	log_warning("Target %s: %s", "t1", "slow");
	log_warning("Target %s: %s", "t1", "slow");
	assert_int_equal(log_next_flush_ns(), start + INTERVAL_NS);
	assert_int_equal(read(fd, &n, sizeof(n)), sizeof(n));
	assert_int_equal(n, 1); /* once per interval, at the first line dropped */
	log_error("Target %s is down", "t2");
	assert_int_equal(read(fd, &n, sizeof(n)), sizeof(n));
	assert_int_equal(n, 1);
	free(tu_capture_end());

	text = flush_after_interval();
	assert_int_equal(tu_count(text, "Suppressed 2 similar messages"), 1);
	free(text);
	assert_int_equal(log_next_flush_ns(), 0);
	log_set_notify_fd(-1);
	close(fd);
	log_set_ratelimit(LOG_RATELIMIT_BURST, LOG_RATELIMIT_INTERVAL_NS);
}

/* The escape form (escape.h): every control character, the backslash and each
 * byte that is not UTF-8 become a visible escape; text passes as it is. */
static void test_escape_forms(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"/srv/data", "/srv/data"},
		{"a\nb", "a\\nb"},
		{"a\r\tb", "a\\r\\tb"},
		{"a\\nb", "a\\\\nb"}, /* a backslash cannot pass for an escape */
		{"\x1b[31mred", "\\x1b[31mred"},
		{"\x01\x7f", "\\x01\\x7f"},
		{"caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"}, /* valid UTF-8 passes */
		{"\xc2\x9b"
		 "2J",
		 "\\u009b2J"},			     /* C1 CSI */
		{"\xff\xc3", "\\xff\\xc3"},	     /* not UTF-8, truncated sequence */
		{"\xe0\x80\x80", "\\xe0\\x80\\x80"}, /* overlong */
		{"", ""},
	};
	char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf b;

		assert_string_equal(esc_str(out, sizeof(out), cases[i].in), cases[i].out);
		buf_init(&b);
		esc_buf(&b, cases[i].in);
		buf_append(&b, "", 1);
		assert_false(b.oom);
		assert_string_equal(b.data, cases[i].out);
		buf_free(&b);
	}
}

/* A buffer too small cuts before an escape, never inside one. */
static void test_escape_cut(void **state)
{
	char out[6];

	(void)state;
	assert_string_equal(esc_str(out, sizeof(out), "ab\ncd"), "ab\\nc");
	assert_string_equal(esc_str(out, sizeof(out), "abcd\x1b"), "abcd");
	assert_string_equal(esc_str(out, sizeof(out), "a\xc2\x85"), "a");
	assert_string_equal(esc_str(out, 1, "abc"), "");
}

/* A message quoting a path with a newline and an ESC is one line, escaped; so
 * is what STATUS= gets (log_last_error()). */
static void test_log_escapes_message(void **state)
{
	char last[256];
	char *text;

	(void)state;
	tu_capture_begin();
	log_error("Failed to open %s: %s", "/srv/a\nerror: forged\x1b[2J", "gone");
	text = tu_capture_end();
	assert_int_equal(tu_count(text, "\n"), 1);
	assert_null(strchr(text, '\x1b'));
	assert_non_null(
		strstr(text, "error: Failed to open /srv/a\\nerror: forged\\x1b[2J: gone\n"));
	free(text);
	log_last_error(last, sizeof(last));
	assert_string_equal(last, "Failed to open /srv/a\\nerror: forged\\x1b[2J: gone");
}

/* The last error STATUS= gets is cut at its 256 bytes before an escape or a
 * UTF-8 character that does not fit, never inside one. */
static void test_last_error_cut(void **state)
{
	static const struct {
		size_t keep;	  /* bytes of 'a' before @tail, all kept */
		const char *tail; /* what does not fit whole */
	} cases[] = {
		{253, "\x1b[31m"}, /* "\x1b" would take bytes 253..256 of 256 */
		{254, "\xc3\xa9"}, /* U+00E9 would leave no room for the NUL */
	};
	char last[512], head[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(head, 'a', cases[i].keep);
		head[cases[i].keep] = '\0';
		tu_capture_begin();
		log_error("%s%s", head, cases[i].tail);
		free(tu_capture_end());
		log_last_error(last, sizeof(last));
		assert_string_equal(last, head);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identical_errors_limited),
		cmocka_unit_test(test_warning_summary_on_return),
		cmocka_unit_test(test_disabled),
		cmocka_unit_test(test_state_changes_limited_per_key),
		cmocka_unit_test(test_many_keys),
		cmocka_unit_test(test_next_flush_and_notify),
		cmocka_unit_test(test_escape_forms),
		cmocka_unit_test(test_escape_cut),
		cmocka_unit_test(test_log_escapes_message),
		cmocka_unit_test(test_last_error_cut),
	};

	unsetenv("JOURNAL_STREAM");
	log_setup();
	log_set_ratelimit_clock(fake_clock);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
