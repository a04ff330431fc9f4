/* SPDX-License-Identifier: MIT */
/*
 * path: path_lexical() gives one spelling per path, without a system call.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lib/path.h"

static void expect(const char *in, const char *want)
{
	char out[64];

	assert_int_equal(path_lexical(in, out, sizeof(out)), 0);
	assert_string_equal(out, want);
}

static void test_spellings(void **state)
{
	(void)state;
	expect("/srv/data", "/srv/data");
	expect("/srv/data/", "/srv/data");
	expect("//srv///data//", "/srv/data");
	expect("/srv/./data/.", "/srv/data");
	expect("/./", "/");
	expect("/", "/");
	expect("", ".");
	expect(".", ".");
	expect("./", ".");
	expect("./data", "data");
	expect("data/./x/", "data/x");
	/* Left alone: resolving them would ask the filesystem. */
	expect("/srv/../data", "/srv/../data");
	expect("/srv/.hidden/..x", "/srv/.hidden/..x");
	expect("/srv/.../", "/srv/...");
}

static void test_too_long(void **state)
{
	char out[8];

	(void)state;
	assert_int_equal(path_lexical("/1234567", out, sizeof(out)), -ENAMETOOLONG);
	assert_true(strlen(out) < sizeof(out));
	assert_int_equal(path_lexical("/123456", out, sizeof(out)), 0);
	assert_string_equal(out, "/123456");
	assert_int_equal(path_lexical("", out, 1), -ENAMETOOLONG);
	assert_string_equal(out, "");
	assert_int_equal(path_lexical("/a", out, 0), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spellings),
		cmocka_unit_test(test_too_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
