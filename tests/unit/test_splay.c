/* SPDX-License-Identifier: MIT */
/* splay: FNV-1a known answers; first due times from an injected host id and
 * clock: per-host burst phases within 'every', stable across restarts, pings
 * unmoved, and the old start-within-a-second with 'splay: false'. */
#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/sched/splay.h"
#include "lib/clock.h"

#define MIN (60 * NSEC_PER_SEC)

/* Two targets; a and c share one. Intervals 1s, 15m, 1h and 250ms. */
static const char yaml[] = "targets:\n"
			   "  - {name: t1, directory: /srv/a}\n"
			   "  - {name: t2, directory: /srv/b}\n"
			   "probes:\n"
			   "  - {name: a, type: ping, target: t1}\n"
			   "  - {name: b, type: burst, target: t2, every: 15m}\n"
			   "  - {name: c, type: burst, target: t1, every: 1h}\n"
			   "  - {name: d, type: ping, target: t2, interval: 250ms}\n";

static struct config *load(const char *extra)
{
	char text[1024];
	struct cfg_error err;
	struct config *c = NULL;

	snprintf(text, sizeof(text), "%s%s", extra, yaml);
	if (cfg_load_string("t.yaml", text, strlen(text), &c, &err) < 0)
		fail_msg("%s", err.msg);
	return c;
}

static void test_fnv1a_known_answers(void **state)
{
	/* From the FNV reference test vectors (Fowler, Noll, Vo). */
	(void)state;
	assert_int_equal(splay_fnv1a(SPLAY_FNV_OFFSET, "", 0), 0xcbf29ce484222325ULL);
	assert_int_equal(splay_fnv1a(SPLAY_FNV_OFFSET, "a", 1), 0xaf63dc4c8601ec8cULL);
	assert_int_equal(splay_fnv1a(SPLAY_FNV_OFFSET, "foobar", 6), 0x85944171f73967e8ULL);
	/* The NUL between host id and name counts. */
	assert_int_equal(splay_offset("ab", "c", UINT64_MAX),
			 splay_fnv1a(SPLAY_FNV_OFFSET, "ab\0c", 4) % UINT64_MAX);
	assert_int_not_equal(splay_offset("ab", "c", UINT64_MAX),
			     splay_offset("a", "bc", UINT64_MAX));
}

/* Each burst's first run is within one 'every' of start, and falls on its phase
 * of the wall clock; pings keep their place of 'splay: false'. */
static void check_phases(const struct config *c, const char *host, uint64_t mono, uint64_t real)
{
	uint64_t due[4];

	splay_first_due(c, host, mono, real, due);
	assert_int_equal(due[0], mono);			   /* a: first of t1 */
	assert_int_equal(due[3], mono + 250000000ULL / 2); /* d: second of t2 */
	for (unsigned i = 1; i < 3; i++) {
		uint64_t iv = c->probes[i].interval_ns;

		assert_true(due[i] >= mono);
		assert_true(due[i] - mono < iv);
		assert_int_equal((real + (due[i] - mono)) % iv,
				 splay_offset(host, c->probes[i].name, iv));
	}
}

static void test_hosts_differ(void **state)
{
	static const char *const hosts[] = {"0123456789abcdef0123456789abcdef",
					    "fedcba9876543210fedcba9876543210",
					    "5c1e0d3f9a2b47c6a1b2c3d4e5f60718", "db01", "db02"};
	struct config *c = load("");
	uint64_t b[5];

	(void)state;
	assert_true(c->splay);
	for (unsigned h = 0; h < 5; h++) {
		uint64_t due[4];

		check_phases(c, hosts[h], 1000, 1764600000ULL * NSEC_PER_SEC);
		splay_first_due(c, hosts[h], 1000, 1764600000ULL * NSEC_PER_SEC, due);
		b[h] = due[1];
	}
	/* The 15m bursts of five hosts all start at different times. */
	for (unsigned i = 0; i < 5; i++)
		for (unsigned j = i + 1; j < 5; j++)
			assert_int_not_equal(b[i], b[j]);
	cfg_free(c);
}

static void test_stable_across_restarts(void **state)
{
	static const char host[] = "0123456789abcdef0123456789abcdef";
	struct config *c = load("");
	uint64_t first[4], again[4];
	/* A restart 3h7m11.5s later, the monotonic clock reset. */
	uint64_t real0 = 1764600000ULL * NSEC_PER_SEC, real1 = real0 + 187 * MIN + 11500000000ULL;

	(void)state;
	splay_first_due(c, host, 5 * NSEC_PER_SEC, real0, first);
	splay_first_due(c, host, 77, real1, again);
	for (unsigned i = 1; i < 3; i++) {
		uint64_t iv = c->probes[i].interval_ns;

		assert_int_equal((real0 + first[i] - 5 * NSEC_PER_SEC) % iv,
				 (real1 + again[i] - 77) % iv);
	}
	check_phases(c, host, 77, real1);
	cfg_free(c);
}

static void test_splay_false(void **state)
{
	struct config *c = load("splay: false\n");
	uint64_t due[4];

	(void)state;
	assert_false(c->splay);
	splay_first_due(c, "any", 1000, 1764600000ULL * NSEC_PER_SEC, due);
	/* t1 (a 1s, c 1h): over a second; t2 (b 15m, d 250ms): over 250ms. */
	assert_int_equal(due[0], 1000);
	assert_int_equal(due[2], 1000 + NSEC_PER_SEC / 2);
	assert_int_equal(due[1], 1000);
	assert_int_equal(due[3], 1000 + 250000000ULL / 2);
	/* The same on any host and at any wall-clock time. */
	uint64_t other[4];

	splay_first_due(c, "else", 1000, 5, other);
	assert_memory_equal(due, other, sizeof(due));
	cfg_free(c);
}

static void test_host_id(void **state)
{
	char buf[SPLAY_HOST_ID_MAX], tiny[8];
	bool from_hostname;

	(void)state;
	assert_int_equal(splay_host_id(buf, sizeof(buf), &from_hostname), 0);
	assert_true(buf[0] != '\0');
	if (!from_hostname)
		assert_int_equal(strlen(buf), 32);
	assert_int_equal(splay_host_id(tiny, sizeof(tiny), &from_hostname), -ENOBUFS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv1a_known_answers),
		cmocka_unit_test(test_hosts_differ),
		cmocka_unit_test(test_stable_across_restarts),
		cmocka_unit_test(test_splay_false),
		cmocka_unit_test(test_host_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
