/* SPDX-License-Identifier: MIT */
/*
 * kinds — the table of probe kinds, above the kinds: the one place that names
 * them all. A new kind is one file with its struct probe_ops and one row below.
 */
#include <stddef.h>

#include "daemon/probes/probe.h"

static const struct probe_ops *const kinds[] = {
	&ping_probe_ops,
	&burst_probe_ops,
	&verify_probe_ops,
};

const struct probe_ops *probe_ops_of(enum cfg_probe_kind kind)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i]->kind == kind)
			return kinds[i];
	return NULL;
}
