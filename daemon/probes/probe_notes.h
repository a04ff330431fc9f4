/* SPDX-License-Identifier: MIT */
/*
 * probe_notes — the lines a run has for the log, kept by the kind that found
 * them (struct probe_note, probe.h) and handed to its consumer through the
 * outcome, which says them: a probe never logs itself. Lines are rare events
 * (a verify probe's mismatches), so each is allocated as it comes.
 */
#ifndef IOPULSE_PROBE_NOTES_H
#define IOPULSE_PROBE_NOTES_H

#include <stddef.h>

#include "daemon/probes/probe.h"

/* Text one run may keep for the log: past it, further lines are dropped. Only
 * a run that finds thousands of blocks wrong gets there, and the log would
 * hold all but the first few back (log.h): the metrics count them all. */
#define PROBE_NOTES_MAX_BYTES (1u << 20)

struct probe_notes {
	void (*say)(const struct probe_note *note); /* set: said at once, not kept */
	struct probe_note *v;
	size_t n, cap;
	size_t bytes; /* of text in v[0..n) */
};

/* Adds a line at @level (LOG_LVL_*), limited per @key (NULL: per text; the
 * caller's, to outlive the notes): said at once through n->say if set, else
 * kept. Without memory, or past the limit of kept text, the line is dropped. */
__attribute__((format(printf, 4, 5))) void probe_notes_add(struct probe_notes *n, int level,
							   const char *key, const char *fmt, ...);

/* The lines so far, as @out's notes, valid until the next probe_notes_clear(). */
void probe_notes_out(const struct probe_notes *n, struct probe_outcome *out);

/* Drops every line (for the next run), or frees it all. */
void probe_notes_clear(struct probe_notes *n);
void probe_notes_free(struct probe_notes *n);

#endif
