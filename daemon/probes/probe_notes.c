/* SPDX-License-Identifier: MIT */
/*
 * probe_notes — a run's lines for the log (probe_notes.h), and their saying by
 * the run's consumer: the one place where what a probe found reaches the log.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "daemon/log.h"
#include "daemon/probes/probe_notes.h"

void probe_notes_add(struct probe_notes *n, int level, const char *key, const char *fmt, ...)
{
	va_list ap;
	char *text;
	int len;

	if (!n->say && (n->bytes >= PROBE_NOTES_MAX_BYTES ||
			mem_grow(&n->v, &n->cap, n->n + 1, sizeof(*n->v))))
		return;
	va_start(ap, fmt);
	len = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if (n->say) {
		n->say(&(struct probe_note){.level = level, .key = key, .text = text});
		free(text);
		return;
	}
	n->v[n->n++] = (struct probe_note){.level = level, .key = key, .text = text};
	n->bytes += (size_t)len;
}

void probe_notes_out(const struct probe_notes *n, struct probe_outcome *out)
{
	out->notes = n->v;
	out->n_notes = (unsigned)n->n;
}

void probe_notes_clear(struct probe_notes *n)
{
	for (size_t i = 0; i < n->n; i++)
		free((char *)n->v[i].text);
	n->n = 0;
	n->bytes = 0;
}

void probe_notes_free(struct probe_notes *n)
{
	probe_notes_clear(n);
	free(n->v);
	*n = (struct probe_notes){0};
}

void probe_note_log(const struct probe_note *n)
{
	(void)log_state_full_errno(n->key, n->level, 0, "%s", n->text);
}
