/* SPDX-License-Identifier: MIT */
/*
 * kinds — the kinds of probe as the configuration knows them, one row each
 * (config_int.h, struct cfg_kind): the section of the man page, what makes a
 * probe write, its checks and what a run costs. A kind is added to enum
 * cfg_probe_kind, to probe_kind_names[] (schema.c, asserted there) and here;
 * cfg_kind()'s switch has no default, so a kind without a case does not
 * compile (-Wswitch, an error with -Werror), and the table's length is
 * asserted below.
 */
#include <stdbool.h>
#include <stddef.h>

#include "config/config_int.h"

static bool ping_writes(const struct cfg_probe *p)
{
	return p->op == IO_WRITE;
}

static bool burst_writes(const struct cfg_probe *p)
{
	return p->rw == CFG_RW_RANDWRITE || p->rw == CFG_RW_RANDRW || p->rw == CFG_RW_WRITE;
}

static bool verify_writes(const struct cfg_probe *p)
{
	(void)p; /* its blocks and its state, at every run */
	return true;
}

static const struct cfg_kind kinds[] = {
	[CFG_PROBE_PING] =
		{
			.section = "PING PROBES",
			.writes_key = "op",
			.check = cfg_check_ping,
			.writes = ping_writes,
			.cost = cfg_ping_cost,
		},
	[CFG_PROBE_BURST] =
		{
			.section = "BURST PROBES",
			.writes_key = "rw",
			.block_range = true,
			.check = cfg_check_burst,
			.writes = burst_writes,
			.cost = cfg_burst_cost,
		},
	[CFG_PROBE_VERIFY] =
		{
			.section = "VERIFY PROBES",
			.writes_key = "type",
			.foreign_why = "a verify probe reads and writes blocks of its own in a "
				       "file of its own, one at a time",
			.check = cfg_check_verify,
			.check_target = cfg_check_verify_target,
			.writes = verify_writes,
			.cost = cfg_verify_cost,
		},
};
_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == CFG_PROBE_KINDS, "a row for each kind of probe");

const struct cfg_kind *cfg_kind(enum cfg_probe_kind k)
{
	switch (k) {
	case CFG_PROBE_PING:
	case CFG_PROBE_BURST:
	case CFG_PROBE_VERIFY:
		return &kinds[k];
	case CFG_PROBE_KINDS:
		break;
	}
	return NULL;
}
