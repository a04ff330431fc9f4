/* SPDX-License-Identifier: MIT */
/*
 * gzpage: every gzip member inflates (header, CRC and length checked by zlib) to
 * exactly the page given, over a series of pages where some families stay, some
 * change in place or in length, some appear or go, empty, small and past the
 * window; whether most of the page changed (one piece) or little (kept pieces
 * and new ones, a short one stored as it is); and the same page twice gives the
 * same member twice.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/buf.h"
#include "daemon/expose/gzpage.h"
#include "tests/unit/testutil.h"

#define MAX_PIECES 40

struct page {
	size_t len[MAX_PIECES]; /* piece lengths */
	uint32_t seed[MAX_PIECES];
	unsigned n;
};

static uint32_t next(uint32_t *x)
{
	*x = *x * 1103515245u + 12345u;
	return *x >> 8;
}

/* Piece bytes from its seed: metric-like lines with a little noise, so that
 * pieces compress, and look alike (the context matters). */
static void fill(struct buf *b, const struct page *p, size_t *ends)
{
	static const char line[] = "iopulse_probe_latency_seconds_bucket{probe=\"p1\",le=\"0.5\"} ";
	unsigned i;

	b->len = 0;
	for (i = 0; i < p->n; i++) {
		uint32_t x = p->seed[i];
		size_t j;

		for (j = 0; j < p->len[i]; j++) {
			char c = line[j % (sizeof(line) - 1)];

			if (j % (sizeof(line) - 1) == sizeof(line) - 2)
				c = (char)('0' + next(&x) % 10);
			else if (next(&x) % 64 == 0)
				c = (char)next(&x);
			buf_append(b, &c, 1);
		}
		ends[i] = b->len;
	}
	assert_false(b->oom);
}

/* Compress @p with @g, check it inflates to the page, and that the same page
 * again gives the same member (every piece kept); returns the body's size. */
static size_t check(struct gzpage *g, const struct page *p)
{
	struct buf page, copy, z, fz;
	size_t ends[MAX_PIECES], back_len, zlen;
	char *back;

	buf_init(&page);
	buf_init(&copy);
	buf_init(&z);
	buf_init(&fz);
	fill(&page, p, ends);
	fill(&copy, p, ends);
	assert_int_equal(gzpage_compress(g, &page, ends, p->n, &z), 0);
	back = tu_gunzip(z.data, z.len, &back_len);
	assert_int_equal(back_len, copy.len);
	if (copy.len)
		assert_memory_equal(back, copy.data, copy.len);
	free(back);
	assert_int_equal(gzpage_compress(g, &copy, ends, p->n, &fz), 0);
	assert_int_equal(z.len, fz.len);
	assert_memory_equal(z.data, fz.data, z.len);
	zlen = z.len;
	buf_free(&page);
	buf_free(&copy);
	buf_free(&z);
	buf_free(&fz);
	return zlen;
}

static void test_round_trip(void **state)
{
	struct gzpage *g = gzpage_new();
	struct page p = {.n = 0};
	uint32_t x = 7;
	unsigned round, i, k;

	(void)state;
	assert_non_null(g);
	check(g, &p); /* an empty page */
	p.n = 30;
	for (i = 0; i < p.n; i++) {
		/* around the context (512) and the window (4 KiB), and empty ones */
		static const size_t sizes[] = {0, 1, 200, 511, 512, 513, 3000, 5000, 70000};

		p.len[i] = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
		p.seed[i] = next(&x);
	}
	for (round = 0; round < 60; round++) {
		/* 0: the same page again; mostly a few families, now and then most */
		unsigned changes = round % 13 == 12 ? p.n : round % 5;

		for (k = 0; k < changes; k++) {
			i = next(&x) % p.n;
			p.seed[i] = next(&x); /* new bytes */
			if (next(&x) % 2)
				p.len[i] = next(&x) % 2000; /* and another length */
		}
		if (round % 7 == 6 && p.n < MAX_PIECES)
			p.len[p.n] = 100, p.seed[p.n++] = next(&x); /* a family appears */
		if (round % 11 == 10)
			p.n--; /* one goes */
		check(g, &p);
	}
	gzpage_free(g);
}

/* The previous page's buffer comes back; a malformed split is refused and keeps
 * nothing; everything still round-trips after it. */
static void test_hand_back_and_errors(void **state)
{
	struct gzpage *g = gzpage_new();
	struct page p = {.n = 2, .len = {1000, 1000}, .seed = {1, 2}};
	size_t ends[MAX_PIECES], bad[3];
	struct buf page, z;
	char *first;

	(void)state;
	assert_non_null(g);
	buf_init(&page);
	buf_init(&z);
	fill(&page, &p, ends);
	first = page.data;
	assert_int_equal(gzpage_compress(g, &page, ends, p.n, &z), 0);
	assert_null(page.data); /* no previous page: an empty buffer back */
	fill(&page, &p, ends);
	assert_int_equal(gzpage_compress(g, &page, ends, p.n, &z), 0);
	assert_ptr_equal(page.data, first); /* the first page's buffer */
	assert_int_equal(page.len, 0);

	fill(&page, &p, ends);
	bad[0] = 1500, bad[1] = 1000, bad[2] = 2000; /* decreasing */
	assert_int_equal(gzpage_compress(g, &page, bad, 3, &z), -EINVAL);
	bad[0] = 1000, bad[1] = 1999; /* short of the page */
	assert_int_equal(gzpage_compress(g, &page, bad, 2, &z), -EINVAL);
	assert_int_equal(gzpage_compress(g, &page, ends, 0, &z), -EINVAL);
	assert_int_equal(page.len, 2000); /* untouched */
	buf_free(&page);
	buf_free(&z);
	check(g, &p);
	gzpage_free(g);
}

/* Whether the member for @p, after the page before it, holds family @i's bytes
 * as they are (stored, not deflated); it inflates to the page all the same. */
static bool stored_verbatim(struct gzpage *g, const struct page *p, unsigned i)
{
	size_t ends[MAX_PIECES], back_len, start;
	struct buf page, z;
	char *back;
	bool found;

	buf_init(&page);
	buf_init(&z);
	fill(&page, p, ends);
	start = i ? ends[i - 1] : 0;
	assert_int_equal(gzpage_compress(g, &page, ends, p->n, &z), 0);
	/* @page now holds the previous page's buffer: the new one is kept. */
	fill(&page, p, ends);
	back = tu_gunzip(z.data, z.len, &back_len);
	assert_int_equal(back_len, page.len);
	assert_memory_equal(back, page.data, page.len);
	found = memmem(z.data, z.len, page.data + start, ends[i] - start) != NULL;
	free(back);
	buf_free(&page);
	buf_free(&z);
	return found;
}

/* A short family that changed alone is stored (deflating it would cost more
 * than the bytes it saves); a long one is deflated. */
static void test_short_family_stored(void **state)
{
	struct gzpage *g = gzpage_new();
	struct page p = {.n = 4, .len = {3000, 300, 3000, 3000}, .seed = {1, 2, 3, 4}};

	(void)state;
	assert_non_null(g);
	check(g, &p);
	p.seed[1] = 5;
	assert_true(stored_verbatim(g, &p, 1));
	p.seed[2] = 6;
	assert_false(stored_verbatim(g, &p, 2));
	check(g, &p);
	gzpage_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_hand_back_and_errors),
		cmocka_unit_test(test_short_family_stored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
