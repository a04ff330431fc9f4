/* SPDX-License-Identifier: MIT */
/*
 * The probe kinds' table on the configuration side (config/kinds.c): a row for
 * every kind, each with what config/ asks of it, and none past the last kind.
 * That a kind without a case in cfg_kind() does not compile is the compiler's
 * (-Wswitch, -Werror); this checks the rows' contents, which it cannot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "config/config_int.h"

static void test_every_kind_has_a_full_row(void **state)
{
	(void)state;
	for (int k = 0; k < CFG_PROBE_KINDS; k++) {
		const struct cfg_kind *row = cfg_kind((enum cfg_probe_kind)k);

		assert_non_null(row);
		assert_non_null(row->section);
		assert_non_null(strstr(row->section, " PROBES"));
		assert_non_null(row->writes_key);
		assert_non_null(row->check);
		assert_non_null(row->writes);
		assert_non_null(row->cost);
		/* Its section is named after its 'type', as iopulse.yaml(5) has it. */
		assert_int_equal(strncasecmp(row->section,
					     cfg_probe_kind_name((enum cfg_probe_kind)k),
					     strlen(cfg_probe_kind_name((enum cfg_probe_kind)k))),
				 0);
	}
	assert_null(cfg_kind(CFG_PROBE_KINDS));
	assert_null(cfg_kind((enum cfg_probe_kind) - 1));
}

/* What decides whether a probe writes: its row's key, read the row's way. */
static void test_writes_follow_the_row(void **state)
{
	struct cfg_probe p;

	(void)state;
	memset(&p, 0, sizeof(p));
	p.kind = CFG_PROBE_PING;
	p.op = IO_READ;
	assert_false(cfg_probe_writes(&p));
	p.op = IO_WRITE;
	assert_true(cfg_probe_writes(&p));
	p.kind = CFG_PROBE_BURST;
	p.rw = CFG_RW_RANDREAD;
	assert_false(cfg_probe_writes(&p));
	p.rw = CFG_RW_RANDRW;
	assert_true(cfg_probe_writes(&p));
	p.rw = CFG_RW_WRITE;
	assert_true(cfg_probe_writes(&p));
	p.kind = CFG_PROBE_VERIFY;
	p.rw = CFG_RW_READ;
	assert_true(cfg_probe_writes(&p));
	assert_false(cfg_probe_writes(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind_has_a_full_row),
		cmocka_unit_test(test_writes_follow_the_row),
	};

	return cmocka_run_group_tests_name("kinds", tests, NULL, NULL);
}
